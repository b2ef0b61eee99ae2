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
from helpers.train_jobs import one_run_plan, wait_for_line

from initmem.engine.settings import TrainSettings
from initmem.pipeline.interrupted import PREEMPTED_EXIT
from initmem.pipeline.jobs import train_pack

LOOP, VMAP = TrainSettings(device="cpu", engine="loop"), TrainSettings(device="cpu", engine="vmap")


class StopAt(io.StringIO):
    """A trainer's log that calls ``request`` (a stop request) when a line matching ``pattern`` is written."""

    def __init__(self, pattern: str, request):
        super().__init__()
        self.pattern, self.request = pattern, request

    def write(self, text: str) -> int:
        if re.search(self.pattern, text):
            self.request()
        return super().write(text)


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in records]


def _epoch_lines(log: str, run_id: str) -> int:
    return len(re.findall(rf"^\[{re.escape(run_id)}\] epoch \d+/", log, re.M))


def test_a_loop_pack_member_that_finished_is_never_trained_again(tmp_path, tiny_splits, stop_request):
    """Loop engine, no periodic checkpoints: stopped during its second member, the pack resumes
    with the first member's record as it was (zero epochs trained again) and the second's from its checkpoint."""
    runs = [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=s, seed=i, epochs=3)} for i, s in enumerate((1.0, 2.0))]
    reference = train_pack(runs, tiny_splits, LOOP, log=None)
    with stop_request.stops("checkpoint saved at epoch 1 step 1"):
        train_pack(runs, tiny_splits, LOOP, checkpoint_dir=tmp_path,
                   log=StopAt(r"^\[r1\] epoch 1/", stop_request.request))
    log = io.StringIO()
    resumed = train_pack(runs, tiny_splits, LOOP, checkpoint_dir=tmp_path, log=log)
    assert (_epoch_lines(log.getvalue(), "r0"), _epoch_lines(log.getvalue(), "r1")) == (0, 2)
    assert "[r0] finished before the interruption" in log.getvalue()
    assert _strip(resumed) == _strip(reference)


def test_a_vmap_pack_member_that_finished_stays_finished(tmp_path, tiny_splits, stop_request):
    """vmap engine: a member that diverged in epoch 1 is masked; stopped in epoch 2, the pack resumes
    training only the other two, and every record equals an uninterrupted pack's."""
    runs = [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=s, seed=i, epochs=3, lr=0.01)} for i, s in enumerate((1.0, 1e30, 0.5))]
    reference = train_pack(runs, tiny_splits, VMAP, log=None)
    with stop_request.stops("checkpoint saved at epoch 1 step 1"):
        train_pack(runs, tiny_splits, VMAP, checkpoint_dir=tmp_path, log=StopAt(r"epoch 1/3", stop_request.request))
    log = io.StringIO()
    resumed = train_pack(runs, tiny_splits, VMAP, checkpoint_dir=tmp_path, log=log)
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


def _train_plan(tmp_path: Path, plan: Path, data: Path, log: Path) -> subprocess.Popen:
    settings = {"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "checkpoint_every": 0}
    return subprocess.Popen([sys.executable, "-m", "initmem", "train-plan", str(plan), str(data), str(tmp_path / "pack.json"),
                             "--settings", json.dumps(settings), "--checkpoint-dir", str(tmp_path / "ckpt"), "--log", str(log)],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


STOP_LINE = r"stopped at epoch \d+ step \d+, checkpoint saved: run the same command to resume"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
def test_a_stop_checkpoints_says_so_in_one_line_and_the_rerun_resumes(tmp_path, sig):
    """SIGINT (Ctrl-C) or SIGTERM to the trainer: a checkpoint at the next step, one line after the
    last epoch line of its log (no traceback, no exit-status noise) and the stopped-job status;
    the rerun resumes from it and finishes the run."""
    plan, data = one_run_plan(tmp_path, epochs=6)
    log = tmp_path / "train.log"
    proc = _train_plan(tmp_path, plan, data, log)
    wait_for_line(proc, log, "epoch 1/")
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == PREEMPTED_EXIT, out
    after_epochs = log.read_text().split("\n[r] epoch ")[-1].splitlines()[1:]
    assert len(after_epochs) == 1 and re.fullmatch(STOP_LINE, after_epochs[0]), log.read_text()
    assert list((tmp_path / "ckpt").rglob("r.ckpt")) and not (tmp_path / "pack.json").exists()
    rerun = _train_plan(tmp_path, plan, data, log)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert re.search(r"resumed at epoch 1 step \d+", log.read_text())
    assert [len(r["history"]["epoch"]) for r in json.loads((tmp_path / "pack.json").read_text())["runs"]] == [6]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_the_trainer_starts_is_one_line(capsys, sig):
    """Ctrl-C during `import torch` (before the training loop's handlers): one line and status 75, no traceback."""
    from initmem.pipeline.interrupted import STOPPED_BEFORE_TRAINING, stoppable_start

    previous = signal.getsignal(sig)
    with pytest.raises(SystemExit) as stopped, stoppable_start():
        os.kill(os.getpid(), sig)  # its handler runs before the next statement
        raise AssertionError("not stopped")
    assert stopped.value.code == PREEMPTED_EXIT
    assert capsys.readouterr().err == STOPPED_BEFORE_TRAINING + "\n"
    assert signal.getsignal(sig) is previous


def test_the_invocation_line_names_every_stopped_job(tmp_path):
    from initmem.pipeline.interrupted import STOPPED_BEFORE_TRAINING, stop_line, stopped_jobs, stopped_summary

    one, two, done = tmp_path / "main-a.log", tmp_path / "main-b.log", tmp_path / "main-c.log"
    one.write_text("[r] epoch 1/4 ...\n" + stop_line("[r] SIGINT: checkpoint saved at epoch 1 step 3") + "\n")
    two.write_text(STOPPED_BEFORE_TRAINING + "\n")
    done.write_text("[r] epoch 4/4 ...\n")
    assert stopped_summary(stopped_jobs([one, done])) == "stopped at epoch 1 step 3, checkpoint saved: run the same command to resume"
    # each job with its own state: no checkpoint is claimed for a job stopped before it trained
    assert stopped_summary(stopped_jobs([one, two, done])) == (
        "2 training jobs stopped (main-a at epoch 1 step 3, checkpoint saved; main-b before training started, nothing lost): "
        "run the same command to resume")
    three = tmp_path / "main-d.log"
    three.write_text(STOPPED_BEFORE_TRAINING + "\n")
    early = stopped_summary(stopped_jobs([two, three]))  # Ctrl-C while both were starting (under make, say)
    assert early == ("2 training jobs stopped (main-b before training started, nothing lost; main-d before training started, "
                     "nothing lost): run the same command to resume") and "checkpoint" not in early
    assert stopped_summary(stopped_jobs([done])) is None


def test_shipped_configs_checkpoint_on_a_time_basis():
    """Every shipped config saves on a time basis (mid-epoch too), so a hard kill loses at most that: the CPU configs at
    least every 15 minutes; the paper config at Young's interval for its largest pack (its save time measured, its
    stops assumed rare: ``tests/test_checkpoint_cost.py`` holds it to what ``estimate`` prints)."""
    from initmem.pipeline.configfiles import load_config

    for path in sorted((ROOT / "config").glob("*.yaml")):
        if path.name == "schema.yaml":
            continue
        minutes = load_config([path])["checkpoint"].get("every_minutes", 0)
        assert 0 < minutes <= (165 if path.name == "paper.yaml" else 15), f"{path.name}: checkpoint.every_minutes = {minutes}"
