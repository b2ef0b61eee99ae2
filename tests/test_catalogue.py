"""The claim catalogue: one file per claim family, found by listing its folder; every claim owns its
ids (templates), so each row id resolves to one claim, and a new family file needs no other edit."""

import json
import shutil
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from conftest import ROOT

from initmem.claims import catalogue
from initmem.claims.catalogue import REGISTRY, lookup
from initmem.spec import ADAPTIVE

CATALOGUE = ROOT / "workflow/initmem/claims/catalogue"


def test_every_module_of_the_folder_is_a_family_in_its_order():
    names = sorted(p.stem for p in CATALOGUE.glob("*.py") if not p.name.startswith("_"))
    assert sorted(m.__name__.rsplit(".", 1)[-1] for m in catalogue.FAMILIES) == names
    orders = [m.ORDER for m in catalogue.FAMILIES]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)


def test_each_claim_lives_in_one_family_file_only():
    assert len({id(c) for c in REGISTRY}) == len(REGISTRY)
    templates = [t for c in REGISTRY for t in c.ids]
    assert len(set(templates)) == len(templates)


@pytest.mark.parametrize("claim", REGISTRY, ids=lambda c: c.ids[0])
def test_every_id_a_claim_makes_resolves_to_that_claim_alone(claim):
    fields = dict(b=16, adaptive=ADAPTIVE[0], optimizer="sgd", lo="0.001", hi="0.01", lr="0.01", norm="layernorm",
                  arch="resnet56", what="beta", clock="T_sgd", configuration="sgd_b16_lr0.01_l2-0_e12")
    for form in range(len(claim.ids)):
        cid = claim.id(form, **fields)
        assert [c for c in REGISTRY if c.matches(cid)] == [claim], cid


@pytest.mark.parametrize("opt", ADAPTIVE)
def test_an_adaptive_optimizer_gets_adams_decay_claim_and_sgd_l2_its_own(opt):
    assert lookup(f"beta_decay_{opt}_b16") is lookup("beta_decay_adam_b16") is not lookup("beta_decay_sgd_l2_b16")


def test_every_committed_direction_row_resolves_to_exactly_one_claim():
    ids = {i for p in ROOT.glob("evidence/*/tables/claims.csv") for i in pd.read_csv(p).query("kind == 'direction'")["id"]}
    assert ids
    resolved = {i: [c for c in REGISTRY if c.matches(i)] for i in ids}
    assert sorted(i for i, cs in resolved.items() if len(cs) != 1) == []


_FAMILY = '''
"""A test family."""
from initmem.claims.claim import NO_FIT, Claim
from initmem.claims.rows import Reading, row

ORDER = 85
NEW = Claim(("new_claim_b{b}",), "a new family", "a sentence", "Sec. 9", "a statistic", "main", "> 0", fit=NO_FIT)
CLAIMS = [NEW]


def rows(runs, history):
    return [row(NEW.id(b=b), "direction", "a new quantity", float("nan"), "", Reading(missing="nothing to read"), NEW)
            for b in sorted(set(runs["batch_size"]))]
'''

_SCRIPT = """
import json, sys
import pandas as pd
from initmem.claims.table import claims
from initmem.claims.catalogue import lookup, registry_markdown
runs = pd.read_csv(sys.argv[1])
table = claims(runs, pd.DataFrame())
print(json.dumps({"rows": table[table["id"].str.startswith("new_claim")][["id", "section", "verdict"]].to_dict("records"),
                  "listed": "new_claim_b<b>" in registry_markdown(), "section": lookup("new_claim_b16").section}))
"""


def test_a_new_family_file_adds_its_rows_and_claims_with_no_other_edit(tmp_path):
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "workflow/initmem/claims/catalogue/new_family.py").write_text(textwrap.dedent(_FAMILY))
    runs = tmp_path / "runs.csv"
    pd.read_csv(ROOT / "evidence/jpeg-cifar10-regime/tables/runs.csv").to_csv(runs, index=False)
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(runs)], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(tmp_path / "workflow"), "PATH": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["listed"] and [r["id"] for r in got["rows"]] == ["new_claim_b16"]
    assert got["section"] == "Sec. 9" and {r["verdict"] for r in got["rows"]} == {"not measured"}


_PLANNED_FAMILY = '''
"""A test family the planner plans: one selection serves its rows and its plans."""
import math

from initmem.claims.claim import Claim
from initmem.claims.clock import RETAINED
from initmem.claims.rows import Reading, batches, row, select, to_cell
from initmem.claims.selection import SPREAD, Selection
from initmem.stats import spreads as Sp

ORDER = 86
ADAM_KEEPS = Claim(("adam_keeps_spread_b{b}",), "a new family", "Adam keeps a spread.", "Sec. 9", "the Adam spread (pp)",
                   "main grid, lr 1e-3", "> 1 pp")
CLAIMS = [ADAM_KEEPS]


def selections(read):
    main = select(read.table, "main", optimizer="adam", lr=1e-3)
    return [Selection(ADAM_KEEPS, ADAM_KEEPS.id(b=b), SPREAD, (select(main, None, batch_size=b),), RETAINED, "Adam spread (pp) > 1")
            for b in batches(main)]


def rows(runs, history):
    from initmem.claims.selection import RunsRead
    out = []
    for s in selections(RunsRead(runs)):
        cell = to_cell(s.parts[0])
        out.append(row(s.cid, "direction", "Adam spread (pp)", math.nan, "", Reading(Sp.spread_estimate(cell), side=s.side, cells=[cell]),
                       ADAM_KEEPS))
    return out
'''

_PLANNED_SCRIPT = """
import json, sys
import pandas as pd
from initmem.claims.table import claims
from initmem.pipeline.configfiles import load_config
from initmem.planner import design as D
runs = pd.read_csv(sys.argv[1])
table = claims(runs, pd.DataFrame())
plans = [p for p in D.plans(load_config([sys.argv[2]])) if p.cid.startswith("adam_keeps")]
print(json.dumps({"rows": table[table["id"].str.startswith("adam_keeps")][["id", "n_runs"]].to_dict("records"),
                  "plans": [{"id": p.cid, "reads": [r.label() for r in p.reads], "kind": p.kind, "rate": p.rate is not None,
                             "regime": p.regime} for p in plans]}))
"""


@pytest.mark.slow  # a subprocess that plans a config: over 8 s under load
def test_a_new_family_file_is_planned_from_the_same_selection_as_its_rows(tmp_path):
    """A family the planner plans is its file alone: its ``selections`` choose what its row reads in a runs table and what
    its plan reads among a config's planned configurations, and the planner plans it by its statistic with no other edit."""
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "workflow/initmem/claims/catalogue/adam_keeps.py").write_text(textwrap.dedent(_PLANNED_FAMILY))
    runs = tmp_path / "runs.csv"
    pd.read_csv(ROOT / "evidence/jpeg-cifar10-selected/tables/runs.csv").to_csv(runs, index=False)
    out = subprocess.run([sys.executable, "-c", _PLANNED_SCRIPT, str(runs), str(ROOT / "config/evidence-selected.yaml")], capture_output=True,
                         text=True, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "workflow"), "PATH": "", "INITMEM_ROOT": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rows"] == [{"id": "adam_keeps_spread_b16", "n_runs": 28}]   # the selected tier's Adam b=16: 4 sigma_w x 7 seeds
    assert [p["id"] for p in got["plans"]] == ["adam_keeps_spread_b16"]
    plan = got["plans"][0]
    assert plan["reads"] == ["main: Adam lr 0.001 b=16"] and plan["kind"] == "spread" and plan["rate"] and plan["regime"]


def test_a_family_file_without_its_contract_is_named(tmp_path, monkeypatch):
    (tmp_path / "broken_family.py").write_text('"""No ORDER, CLAIMS or rows."""\n')
    monkeypatch.setattr(catalogue, "__path__", [*catalogue.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, f"{catalogue.__name__}.broken_family", raising=False)
    try:
        with pytest.raises(ImportError, match="broken_family lack ORDER, CLAIMS or rows"):
            catalogue.families()
    finally:
        sys.modules.pop(f"{catalogue.__name__}.broken_family", None)


def test_the_planner_sizes_a_claim_by_what_its_claim_reads():
    """A plan's kind (which seed cap the cheapest design searches under) is its claim's ``reads``,
    never a guess from the id's prefix; an id no claim makes is an error naming the catalogue."""
    from initmem.claims.claim import CURVE_READ, SPREAD_READ
    from initmem.planner import design as D

    assert {c.reads for c in REGISTRY} == {SPREAD_READ, CURVE_READ}
    kinds = {cid: D.Plan(cid, "", [], None, None, "").kind for cid in
             ("sgd_keeps_spread_b16", "sgd_gt_lion_b32", "lr_reduces_sgd_b16_0.001_to_0.1", "beta_flat_sgd_b16",
              "beta_decay_adam_b16", "adapt_beta_falls_adam_lr0.001_b16", "collapse_beta_adam_T_adapt")}
    assert kinds == {"sgd_keeps_spread_b16": "spread", "sgd_gt_lion_b32": "spread", "lr_reduces_sgd_b16_0.001_to_0.1": "spread",
                     "beta_flat_sgd_b16": "curve", "beta_decay_adam_b16": "curve", "adapt_beta_falls_adam_lr0.001_b16": "curve",
                     "collapse_beta_adam_T_adapt": "curve"}
    with pytest.raises(ValueError, match="no claim of the catalogue"):
        _ = D.Plan("beta_of_something_else", "", [], None, None, "").kind
