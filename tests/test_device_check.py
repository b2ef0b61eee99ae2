"""The device check's CPU quick mode runs in CI, so the script a GPU session relies on cannot rot."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

from conftest import ROOT


def test_device_check_quick_mode_writes_its_table_and_rates(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}  # finds initmem itself
    proc = subprocess.run([sys.executable, "benchmarks/device_check.py", "--quick", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = (tmp_path / "device_check.md").read_text()
    assert "| resnet9 | 4 | 16 | adam | 2 | float32 | off |" in table and "| resnet56 |" in table
    step_row = next(line for line in table.splitlines() if "| resnet9 | 4 | 16 | adam | 2 | float32 | step |" in line)
    assert float(step_row.split("|")[8].replace(",", "")) > 0  # compute.compile: step measured (the whole step compiled)
    assert "TF32 off works" in table and "bit-identical to an uninterrupted one" in table and "checkpoint host peak" in table
    rows = list(csv.DictReader(open(tmp_path / "rates.csv")))
    assert {(r["family"], r["pack"]) for r in rows if r["arch"] == "resnet9"} == {("sgd", "1"), ("sgd", "2"), ("adam", "1"), ("adam", "2")}
    assert all(float(r["images_per_s"]) > 0 for r in rows)
    from initmem.pipeline.rates import RateModel

    model = RateModel.from_csv(tmp_path / "rates.csv")  # what compute.rate_table reads
    assert "measured" in model.rate({"arch": "resnet9", "width": 4, "batch_size": 16, "optimizer": "adamw"}, 2, "float32").source
