"""A Slurm job stopped at its time limit requeues itself instead of failing (so it uses none of
Snakemake's failure retries), at most ``compute.attempts`` - 1 times; any other stop does not."""

from __future__ import annotations

import subprocess

import pytest

from initmem.pipeline.continuation import continue_after_stop, slurm_seconds


class FakeSlurm:
    """squeue and scontrol as a job sees them: ``left`` (what squeue's %L prints) and whether requeue is allowed."""

    def __init__(self, left: str = "00:04:58", requeue_ok: bool = True):
        self.left, self.requeue_ok, self.calls = left, requeue_ok, []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess:
        self.calls.append(args)
        if args[0] == "squeue":
            return subprocess.CompletedProcess(args, 0, self.left + "\n", "")
        if args[:2] == ["scontrol", "requeue"]:
            if self.requeue_ok:
                return subprocess.CompletedProcess(args, 0, "", "")
            return subprocess.CompletedProcess(args, 1, "", "scontrol: error: Requested operation is presently disabled\n")
        raise AssertionError(f"unexpected command {args}")

    @property
    def requeued(self) -> list[str]:
        return [a[2] for a in self.calls if a[:2] == ["scontrol", "requeue"]]


JOB = {"SLURM_JOB_ID": "4242"}


def test_a_stop_at_the_time_limit_requeues_the_job_until_its_attempts_are_used():
    slurm = FakeSlurm()
    said = continue_after_stop("SIGTERM", 3, JOB, slurm)
    assert slurm.requeued == ["4242"] and "requeued, continuation 1 of 2 (no Snakemake retry used)" in said
    said = continue_after_stop("SIGTERM", 3, JOB | {"SLURM_RESTART_COUNT": "1"}, slurm)
    assert slurm.requeued == ["4242", "4242"] and "continuation 2 of 2" in said
    said = continue_after_stop("SIGTERM", 3, JOB | {"SLURM_RESTART_COUNT": "2"}, slurm)
    assert slurm.requeued == ["4242", "4242"] and "after 2 continuation(s), the most compute.attempts = 3 allows" in said


@pytest.mark.parametrize("reason, env, left, why", [
    ("SIGTERM", JOB, "3:58:01", "SIGTERM with 14281 s left before the time limit"),  # scancel --signal=TERM
    ("SIGTERM", JOB, "UNLIMITED", "SIGTERM with unknown left"),
    ("SIGINT", JOB, "00:04:58", "not a Slurm time limit"),                            # Ctrl-C
    ("SIGTERM", {}, "00:04:58", "not a Slurm time limit"),                            # not on Slurm
])
def test_any_other_stop_is_no_continuation(reason, env, left, why):
    slurm = FakeSlurm(left)
    assert why in continue_after_stop(reason, 3, env, slurm) and slurm.requeued == []


def test_a_refused_requeue_says_the_retry_will_resume_it():
    said = continue_after_stop("SIGTERM", 3, JOB, FakeSlurm(requeue_ok=False))
    assert "refused (scontrol: error: Requested operation is presently disabled)" in said and "Snakemake's retry resumes it" in said


def test_slurm_durations():
    assert [slurm_seconds(t) for t in ("4:58", "01:02:03", "2-00:00:10", "UNLIMITED", "INVALID", "")] == [
        298, 3723, 172810, None, None, None]


def test_a_training_job_at_its_time_limit_requeues_itself(tmp_path):
    """The trainer in a Slurm job (fake squeue and scontrol first on PATH) gets SIGTERM with 4:58
    left: it saves its checkpoint, asks Slurm to requeue its own job id, says so, and exits 75."""
    import json
    import os
    import re
    import signal
    import stat
    import sys

    from conftest import ROOT
    from test_interruptions import _plan, _wait_for_line

    from initmem.pipeline.interrupted import PREEMPTED_EXIT

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("squeue", 'echo "4:58"'), ("scontrol", f'echo "$@" >> {tmp_path / "scontrol.calls"}')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(stat.S_IRWXU)
    plan, data = _plan(tmp_path, epochs=6)
    log = tmp_path / "train.log"
    settings = {"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "checkpoint_every": 0, "attempts": 3}
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1", "SLURM_JOB_ID": "4242",
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.Popen([sys.executable, "-m", "initmem", "train-plan", str(plan), str(data), str(tmp_path / "pack.json"),
                             "--settings", json.dumps(settings), "--checkpoint-dir", str(tmp_path / "ckpt"), "--log", str(log)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _wait_for_line(proc, log, "epoch 1/")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == PREEMPTED_EXIT, out
    text = log.read_text()
    assert re.search(r"stopped at epoch \d+ step \d+, checkpoint saved: run the same command to resume\n"
                     r"time limit: Slurm job 4242 requeued", text)
    assert "time limit: Slurm job 4242 requeued, continuation 1 of 2 (no Snakemake retry used)" in text
    assert (tmp_path / "scontrol.calls").read_text() == "requeue 4242\n"
