"""Nothing finished is trained twice after an interruption: a pack's finished members are kept
whatever the engine, Ctrl-C (SIGINT) checkpoints as SIGTERM does, and the shipped configs also
checkpoint on a time basis. Interruptions are triggered from inside (a log line), never by timing."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, tiny_spec

from initmem.engine.train import Preempted, _StopFlag
from initmem.pipeline.jobs import PREEMPTED_EXIT, train_pack


class StopAt(io.StringIO):
    """A trainer's log that requests a stop when a line matching ``pattern`` is written."""

    def __init__(self, pattern: str):
        super().__init__()
        self.pattern = pattern

    def write(self, text: str) -> int:
        if re.search(self.pattern, text):
            _StopFlag.requested = True
        return super().write(text)


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in records]


def _epoch_lines(log: str, run_id: str) -> int:
    return len(re.findall(rf"^\[{re.escape(run_id)}\] epoch \d+/", log, re.M))


def test_a_loop_pack_member_that_finished_is_never_trained_again(tmp_path, tiny_splits):
    """Loop engine, no periodic checkpoints: stopped during its second member, the pack resumes
    with the first member's record as it was (zero epochs trained again) and the second's from its checkpoint."""
    runs = [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=s, seed=i, epochs=3)} for i, s in enumerate((1.0, 2.0))]
    reference = train_pack(runs, tiny_splits, device="cpu", engine="loop", log=None)
    try:
        with pytest.raises(Preempted, match="checkpoint saved at epoch 1 step 1"):
            train_pack(runs, tiny_splits, device="cpu", engine="loop", checkpoint_dir=tmp_path, log=StopAt(r"^\[r1\] epoch 1/"))
    finally:
        _StopFlag.requested = False
    log = io.StringIO()
    resumed = train_pack(runs, tiny_splits, device="cpu", engine="loop", checkpoint_dir=tmp_path, log=log)
    assert (_epoch_lines(log.getvalue(), "r0"), _epoch_lines(log.getvalue(), "r1")) == (0, 2)
    assert "[r0] finished before the interruption" in log.getvalue()
    assert _strip(resumed) == _strip(reference)


def test_a_vmap_pack_member_that_finished_stays_finished(tmp_path, tiny_splits):
    """vmap engine: a member that diverged in epoch 1 is masked; stopped in epoch 2, the pack resumes
    training only the other two, and every record equals an uninterrupted pack's."""
    runs = [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=s, seed=i, epochs=3, lr=0.01)} for i, s in enumerate((1.0, 1e30, 0.5))]
    reference = train_pack(runs, tiny_splits, device="cpu", engine="vmap", log=None)
    try:
        with pytest.raises(Preempted, match="checkpoint saved at epoch 1 step 1"):
            train_pack(runs, tiny_splits, device="cpu", engine="vmap", checkpoint_dir=tmp_path, log=StopAt(r"epoch 1/3"))
    finally:
        _StopFlag.requested = False
    log = io.StringIO()
    resumed = train_pack(runs, tiny_splits, device="cpu", engine="vmap", checkpoint_dir=tmp_path, log=log)
    assert "resumed at epoch 1 step 1 with 2 of 3 runs" in log.getvalue()
    assert [len(r["history"]["epoch"]) for r in resumed] == [3, 0, 3]
    assert _strip(resumed) == _strip(reference)


def test_a_finished_run_resumes_to_its_record_without_training(tmp_path, tiny_tensors):
    """A job stopped after training ended (before its metrics file was written) trains nothing again."""
    from initmem.engine.train import train_run

    spec = tiny_spec(epochs=2)
    first = train_run(spec, tiny_tensors, "r", checkpoint=tmp_path / "r.ckpt", log=None)
    log = io.StringIO()
    again = train_run(spec, tiny_tensors, "r", checkpoint=tmp_path / "r.ckpt", log=log)
    assert _epoch_lines(log.getvalue(), "r") == 0
    assert _strip([again]) == _strip([first])


def _plan(tmp_path: Path, epochs: int) -> tuple[Path, Path]:
    """A one-run pack plan and its prepared data, as the workflow's train job gets them."""
    from initmem.engine.data import build_splits, save_prepared
    from initmem.pipeline.planning import write_plan

    data = tmp_path / "data.npz"
    save_prepared(build_splits({"source": "synthetic", "n_train": 600, "n_val": 32, "n_test": 32}), data)
    spec = tiny_spec(epochs=epochs, batch_size=16, n_train=600, n_val=32, n_test=32)
    write_plan(tmp_path / "plan.json", [{"run_id": "r", "spec": spec, "key": "k"}], data_id={"test": 1})
    return tmp_path / "plan.json", data


def _train_plan(tmp_path: Path, plan: Path, data: Path, log: Path) -> subprocess.Popen:
    settings = {"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "checkpoint_every": 0}
    return subprocess.Popen([sys.executable, "-m", "initmem", "train-plan", str(plan), str(data), str(tmp_path / "pack.json"),
                             "--settings", json.dumps(settings), "--checkpoint-dir", str(tmp_path / "ckpt"), "--log", str(log)],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_for_line(proc: subprocess.Popen, log: Path, text: str) -> None:
    """Block until ``text`` appears in ``log`` (the trainer flushes each line), or fail if the process ends first."""
    import time

    while text not in (log.read_text() if log.exists() else ""):
        assert proc.poll() is None, f"the trainer ended before logging {text!r}:\n{proc.stdout.read()}"
        time.sleep(0.02)  # polling for the event, not waiting for a duration


def test_ctrl_c_checkpoints_and_exits_for_a_resume(tmp_path):
    """SIGINT (Ctrl-C) to the trainer: a checkpoint at the next step and the requeue status, as SIGTERM;
    the rerun resumes from it and finishes the run."""
    plan, data = _plan(tmp_path, epochs=6)
    log = tmp_path / "train.log"
    proc = _train_plan(tmp_path, plan, data, log)
    _wait_for_line(proc, log, "epoch 1/")
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == PREEMPTED_EXIT, out
    assert re.search(r"SIGINT: checkpoint saved at epoch \d+ step \d+", log.read_text())
    assert list((tmp_path / "ckpt").rglob("r.ckpt")) and not (tmp_path / "pack.json").exists()
    rerun = _train_plan(tmp_path, plan, data, log)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert re.search(r"resumed at epoch 1 step \d+", log.read_text())
    assert [len(r["history"]["epoch"]) for r in json.loads((tmp_path / "pack.json").read_text())["runs"]] == [6]


def test_shipped_configs_checkpoint_on_a_time_basis():
    """Every shipped config saves at least every 15 minutes (mid-epoch too), so a hard kill loses at most that."""
    from initmem.pipeline.configfiles import load_config

    for path in sorted((ROOT / "config").glob("*.yaml")):
        if path.name == "schema.yaml":
            continue
        minutes = load_config([path])["checkpoint"].get("every_minutes", 0)
        assert 0 < minutes <= 15, f"{path.name}: checkpoint.every_minutes = {minutes}"
