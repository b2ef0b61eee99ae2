"""Every adaptive optimizer the registry holds is read as Adam is: a new file with CLOCK = "T_adapt"
gets the ``sgd_gt_<name>_b<b>`` rows with Adam's section, regime rule, verdict and interval, and no
claim lists optimizers by hand."""

import json
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from initmem.claims.catalogue import lookup
from initmem.paper import Q_ADAM
from initmem.spec import ADAPTIVE

REGIME = ROOT / "evidence/jpeg-cifar10-regime/tables"


@pytest.mark.parametrize("opt", ADAPTIVE)
def test_each_adaptive_optimizers_row_is_the_adam_claim_with_its_regime_rule(opt):
    claim = lookup(f"sgd_gt_{opt}_b16")
    assert claim is not None and claim.quote == Q_ADAM and claim.section == "Sec. 3.1"
    assert "99.5% train accuracy" in claim.regime_text()


def test_lion_is_adaptive_and_its_rows_carry_the_regime_rule():
    assert "lion" in ADAPTIVE
    assert lookup("sgd_gt_lion_b128").regime_text() == lookup("sgd_gt_adam_b128").regime_text()


_SCRIPT = """
import json, sys
import pandas as pd
from initmem.claims.table import claims
runs = pd.read_csv(sys.argv[1]); history = pd.read_csv(sys.argv[2])
for df in (runs, history):
    if "optimizer" in df: df["optimizer"] = df["optimizer"].replace("adam", "adam_renamed")
    df["run_id"] = df["run_id"].str.replace("adam_", "adam_renamed_", regex=False)
table = claims(runs, history).set_index("id")
print(json.dumps({k: table.loc[k].astype(str).to_dict() for k in table.index if k.startswith("sgd_gt_")}))
"""


@pytest.mark.slow
def test_a_renamed_copy_of_adams_file_reads_as_adam_on_the_regime_tier(tmp_path):
    """A copy of adam.py under a new name, with the regime tier's Adam runs relabelled to it, gives the
    row ``sgd_gt_adam_renamed_b16`` with the committed Adam row's section, regime, verdict and interval."""
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow", ignore=shutil.ignore_patterns("__pycache__"))
    optimizers = tmp_path / "workflow/initmem/engine/optimizers"
    shutil.copy(optimizers / "adam.py", optimizers / "adam_renamed.py")
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(REGIME / "runs.csv"), str(REGIME / "history.csv.gz")],
                         capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "workflow"), "PATH": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    import pandas as pd

    committed = pd.read_csv(REGIME / "claims.csv", dtype=str, keep_default_na=False).set_index("id")
    adam = committed.loc["sgd_gt_adam_b16"]
    renamed = rows["sgd_gt_adam_renamed_b16"]
    assert renamed["section"] == "Sec. 3.1" and renamed["regime"] == adam["regime"] != ""
    assert renamed["verdict"] == adam["verdict"] and renamed["statistic_verdict"] == adam["statistic_verdict"]
    for col in ("reproduced", "ci_low", "ci_high", "p_decision"):
        assert float(renamed[col]) == pytest.approx(float(adam[col]), rel=1e-9), col


def test_every_committed_direction_row_resolves_to_a_claim_with_section_and_regime():
    import pandas as pd

    ids = {i for p in ROOT.glob("evidence/*/tables/claims.csv") for i in pd.read_csv(p).query("kind == 'direction'")["id"]}
    assert ids
    unresolved = sorted(i for i in ids if (c := lookup(i)) is None or not c.section or not c.regime_text())
    assert unresolved == []


def test_the_selected_tiers_claim_b_names_what_held_and_what_did_not():
    """Adam keeps 77% of SGD's spread there, selected at T_adapt ~0.1: the direction holds, the size and the clock do not."""
    import pandas as pd

    row = pd.read_csv(ROOT / "evidence/jpeg-cifar10-selected/tables/claims.csv").set_index("id").loc["sgd_gt_adam_b16"]
    assert row["statistic_verdict"] == "direction only" and row["verdict"] == "outside the paper's regime"
    assert "direction (SGD's spread above Adam's): reproduced" in row["note"] and "Adam keeps 77% of SGD's" in row["note"]
    assert "by clock at the selected checkpoint" in row["note"]
