"""One tier registry (initmem.tiers), read from the evidence/*/ folders: every list of tiers reads it, the
lists equal the hand-written ones they replace (the committed outputs that print them stay as they are),
and a new tier folder joins every list without an edit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, script

from initmem import tiers
from initmem.planner import calibration as Cal
from initmem.planner import collapse_calibration as CC
from initmem.planner import design_check as K
from initmem.planner import familywise as F

EVIDENCE = ROOT / "evidence"


def _verdict_calibration():
    return script("benchmarks/verdict_calibration.py")


def test_the_registry_yields_exactly_the_lists_that_were_written_by_hand():
    """The dicts and their order as the modules held them before the registry: the calibration's designs
    (benchmarks/verdict_calibration*.md), the planner check's tiers and committed designs
    (benchmarks/planner_check.csv/md), the collapse calibration's tiers and the familywise tier
    (benchmarks/familywise_error.md)."""
    assert [t.folder for t in tiers.tiers()] == ["jpeg-cifar10-small", "jpeg-cifar10-clocks", "jpeg-cifar10-decisive",
                                                "jpeg-cifar10-regime", "jpeg-cifar10-selected", "jpeg-cifar10-recipe",
                                                "jpeg-cifar10-gone"]   # not the pilot
    calibration = {"small-tier": "jpeg-cifar10-small", "clocks-tier": "jpeg-cifar10-clocks", "decisive-tier": "jpeg-cifar10-decisive",
                   "regime-tier": "jpeg-cifar10-regime", "selected-tier": "jpeg-cifar10-selected", "recipe-tier": "jpeg-cifar10-recipe",
                   "gone-tier": "jpeg-cifar10-gone"}
    assert list(Cal.TIERS.items()) == list(calibration.items())
    planner = {"jpeg-cifar10-small": "config/evidence.yaml", "jpeg-cifar10-decisive": "config/evidence-decisive.yaml",
               "jpeg-cifar10-regime": "config/evidence-regime.yaml", "jpeg-cifar10-clocks": "config/evidence-clocks.yaml",
               "jpeg-cifar10-selected": "config/evidence-selected.yaml", "jpeg-cifar10-recipe": "config/evidence-recipe.yaml",
               "jpeg-cifar10-gone": "config/evidence-gone.yaml"}
    assert list(K.TIERS.items()) == list(planner.items())
    collapse = {"clocks-tier": EVIDENCE / "jpeg-cifar10-clocks", "decisive-tier": EVIDENCE / "jpeg-cifar10-decisive"}
    assert list(CC.TIERS.items()) == list(collapse.items())
    benchmark = _verdict_calibration()
    assert benchmark.RULES["initmem.planner.collapse_calibration:calibration_rows"] == (("clocks-tier", "decisive-tier", "paper"), 200)
    assert F.TIER == "jpeg-cifar10-regime" and tiers.by_folder(F.TIER).name == "regime-tier"   # run_noise's design
    # the committed designs, now read from each tier's design_plan.md: the regime tier's as they were written by hand (its
    # other rows are |beta| plans, which the check skips); the selected tier's equal today's --cheapest, so they add no
    # row (tests/test_design_check.py regenerates its committed rows)
    regime = {"sgd_keeps_spread_b16": (3, (0.1, 2.5)), "sgd_gt_adam_b16": (5, (0.1, 2.5)), "lr_reduces_sgd_b16_0.001_to_0.1": (5, (0.1, 2.5))}
    assert sorted(K.COMMITTED) == ["jpeg-cifar10-gone", "jpeg-cifar10-recipe", "jpeg-cifar10-regime", "jpeg-cifar10-selected"]
    assert {c: d for c, d in K.COMMITTED["jpeg-cifar10-regime"].items() if c in regime} == regime
    assert all(c.startswith("beta_") for c in set(K.COMMITTED["jpeg-cifar10-regime"]) - set(regime))


def _tier_folder(folder, runs_from: str, config: str | None = None, name: str | None = None, tier_yaml: str | None = None):
    """A trained tier's folder as the registry reads it: tables/runs.csv (and history) and config.resolved.yaml (and tier.yaml)."""
    (folder / "tables").mkdir(parents=True)
    for table in ("runs.csv", "history.csv.gz"):   # a committed tier's tables, linked
        (folder / "tables" / table).symlink_to(EVIDENCE / runs_from / "tables" / table)
    head = f"# configfiles: {config} config/jpeg-copy.yaml\n" if config else ""
    (folder / "config.resolved.yaml").write_text(head + (f"name: {name}\n" if name else "") + "data:\n  source: archive\n")
    if tier_yaml is not None:
        (folder / "tier.yaml").write_text(tier_yaml)


def test_a_new_tier_folder_joins_every_list_without_an_edit(tmp_path):
    """A copy of the checkout's evidence/ (each folder linked) with two throwaway tiers, read by a fresh
    interpreter whose INITMEM_ROOT is the copy: every list finds them, the calibration reads the new tier's
    design from its runs, and a role in a tier.yaml puts a tier in the list that selects by it."""
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    for folder in sorted(EVIDENCE.iterdir()):
        (evidence / folder.name).symlink_to(folder)
    _tier_folder(evidence / "jpeg-cifar10-extra", "jpeg-cifar10-selected", config="config/evidence-extra.yaml", name="extra")
    _tier_folder(evidence / "other-data-wide", "jpeg-cifar10-clocks", tier_yaml="config: config/wide.yaml\nroles: [collapse-calibration]\n")
    (evidence / "not-a-tier" / "tables").mkdir(parents=True)   # a pilot's folder: no runs.csv, no resolved config
    probe = ("import json\nimport runpy\n"
             "from initmem.planner import design_check as K\n"
             "from initmem.planner import calibration as Cal, collapse_calibration as CC, familywise as F\n"
             "print(json.dumps({'calibration': list(Cal.TIERS.items()), 'planner': list(K.TIERS.items()),\n"
             "                  'collapse': [(k, v.name) for k, v in CC.TIERS.items()], 'familywise': F.TIER,\n"
             "                  'designs': [d.name for d in Cal.designs('extra-tier')],\n"
             "                  'collapse_designs': [d.name for d in CC.designs('wide-tier')],\n"
             f"                  'benchmark': runpy.run_path({str(ROOT / 'benchmarks' / 'verdict_calibration.py')!r})['RULES']\n"
             "                                 ['initmem.planner.collapse_calibration:calibration_rows'][0]}))\n")
    env = {**os.environ, "INITMEM_ROOT": str(tmp_path), "PYTHONPATH": str(ROOT / "workflow")}
    proc = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    assert got["calibration"][-2:] == [["extra-tier", "jpeg-cifar10-extra"], ["wide-tier", "other-data-wide"]]
    assert [k for k, _ in got["calibration"][:5]] == ["small-tier", "clocks-tier", "decisive-tier", "regime-tier", "selected-tier"]
    assert got["planner"][-2:] == [["jpeg-cifar10-extra", "config/evidence-extra.yaml"], ["other-data-wide", "config/wide.yaml"]]
    assert got["collapse"] == [["clocks-tier", "jpeg-cifar10-clocks"], ["decisive-tier", "jpeg-cifar10-decisive"],
                               ["wide-tier", "other-data-wide"]]
    assert got["benchmark"] == ["clocks-tier", "decisive-tier", "wide-tier", "paper"]   # benchmarks/verdict_calibration.py's collapse entry
    assert got["familywise"] == "jpeg-cifar10-regime"
    assert got["designs"] and all(d.startswith("extra-tier: ") for d in got["designs"])   # read from its runs.csv
    assert got["collapse_designs"] == ["wide-tier adam", "wide-tier sgd"]


def test_a_tier_the_folder_cannot_name_says_what_to_write(tmp_path):
    _tier_folder(tmp_path / "jpeg-cifar10-bare", "jpeg-cifar10-selected")   # no '# configfiles:' line, no tier.yaml
    with pytest.raises(ValueError, match="no config named.*tier.yaml"):
        tiers.tiers(tmp_path)
    (tmp_path / "jpeg-cifar10-bare" / "tier.yaml").write_text("config: config/bare.yaml\nroles: [familywise]\n")
    (bare,) = tiers.tiers(tmp_path)
    assert (bare.name, bare.config, bare.roles) == ("bare-tier", "config/bare.yaml", ("familywise",))
    assert tiers.the_one("familywise", tmp_path) == bare
    _tier_folder(tmp_path / "jpeg-cifar10-twin", "jpeg-cifar10-selected", tier_yaml="config: c.yaml\nroles: [familywise]\n")
    with pytest.raises(ValueError, match="expected one tier with role 'familywise'.*found 2"):
        tiers.the_one("familywise", tmp_path)
    (tmp_path / "jpeg-cifar10-twin" / "tier.yaml").write_text("config: c.yaml\nroles: [familywize]\n")
    with pytest.raises(ValueError, match="unknown roles"):
        tiers.tiers(tmp_path)
    (tmp_path / "jpeg-cifar10-twin" / "tier.yaml").write_text("config: c.yaml\nrole: [familywise]\n")
    with pytest.raises(ValueError, match="unknown keys"):
        tiers.tiers(tmp_path)
    assert tiers.tiers(tmp_path / "nowhere") == ()
