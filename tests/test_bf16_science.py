"""The bf16 decision's benchmark (benchmarks/bf16_science.py): its rule, stated before the bf16 runs,
reads the committed float32 tier against a second set of runs and says whether bf16 is within noise."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from conftest import ROOT, script

pytestmark = pytest.mark.slow  # the claims table read twice a test

SELECTED = ROOT / "evidence" / "jpeg-cifar10-selected" / "tables"


def _twins(tmp_path, shift_pp: float = 0.0):
    """The selected tier's committed runs as the "bf16" side, SGD at sigma_w 0.1 moved by ``shift_pp``."""
    runs = pd.read_csv(SELECTED / "runs.csv")
    runs.loc[(runs["optimizer"] == "sgd") & (runs["sigma_w"] == 0.1), "test_acc_best"] += shift_pp / 100
    runs.to_csv(tmp_path / "runs.csv", index=False)
    shutil.copy(SELECTED / "history.csv.gz", tmp_path / "history.csv.gz")
    return tmp_path


def _verdict(capsys, folder) -> list[str]:
    assert script("benchmarks/bf16_science.py").main(["--bf16", str(folder)]) == 0
    return capsys.readouterr().out.splitlines()


def test_runs_equal_to_the_float32_ones_are_within_noise(tmp_path, capsys):
    out = _verdict(capsys, _twins(tmp_path))
    assert any(line.startswith("**Verdict (the rule stated before the runs): bf16 is within noise**") for line in out)
    assert any("differ by 0.00 pp on average" in line for line in out)


def test_a_shift_beyond_the_seed_noise_is_not_within_noise_and_names_where(tmp_path, capsys):
    """SGD's sigma_w 0.1 runs 10 pp lower (the seeds' sd is ~2 pp): that cell's interval and SGD's spread
    no longer hold 0, and the rule says bf16 is not within noise."""
    out = _verdict(capsys, _twins(tmp_path, shift_pp=-10.0))
    assert any(line.startswith("**Verdict (the rule stated before the runs): bf16 is not within noise**") for line in out)
    cell = next(line for line in out if line.startswith("| sgd | 0.1 |"))
    assert cell.endswith("| **no** |") and cell.split("|")[5].strip().startswith("-10.00")
    spread = next(line for line in out if line.startswith("| sgd |") and line.count("|") == 6)
    assert spread.endswith("| **no** |")


def test_a_missing_twin_is_refused_with_what_to_do(tmp_path):
    runs = pd.read_csv(SELECTED / "runs.csv")
    runs.iloc[:-1].to_csv(tmp_path / "runs.csv", index=False)
    with pytest.raises(SystemExit, match="55 of the 56 float32 runs have a bf16 twin: train the rest first"):
        script("benchmarks/bf16_science.py").main(["--bf16", str(tmp_path)])
