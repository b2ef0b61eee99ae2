"""A Slurm job stopped at its time limit requeues itself instead of failing (so it uses none of
Snakemake's failure retries), at most ``compute.attempts`` - 1 times and only after an attempt that
finished an epoch; any other stop does not. Its end time is read once, as it starts."""

from __future__ import annotations

import subprocess

import pytest

from initmem.pipeline.continuation import continue_after_stop, job_end_time, slurm_seconds


class FakeSlurm:
    """squeue and scontrol as a job sees them: ``left`` (what squeue's %L prints) and whether requeue is allowed."""

    def __init__(self, left: str = "00:04:58", requeue_ok: bool = True, squeue_ok: bool = True):
        self.left, self.requeue_ok, self.squeue_ok, self.calls = left, requeue_ok, squeue_ok, []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess:
        self.calls.append(args)
        if args[0] == "squeue":
            if not self.squeue_ok:  # a controller too busy to answer
                return subprocess.CompletedProcess(args, 1, "", "slurm_load_jobs error: Socket timed out on send/recv operation\n")
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


def test_an_attempt_that_finished_no_epoch_is_not_requeued_and_says_what_to_change():
    """A pack whose attempt ended at the time limit without one more finished epoch would end the
    same way every time: no continuation, and the line names both ways out."""
    slurm = FakeSlurm()
    said = continue_after_stop("SIGTERM", 3, JOB, slurm, epochs_finished=0)
    assert slurm.requeued == [] and "\n" not in said
    assert "without finishing an epoch in this attempt: not requeued" in said
    assert "raise the time limit" in said and "shrink the pack" in said
    continue_after_stop("SIGTERM", 3, JOB, slurm, epochs_finished=1)
    assert slurm.requeued == ["4242"]


def test_the_end_time_read_at_the_start_spares_squeue_at_the_signal():
    """squeue fails at the signal (a busy controller): the end time read when the job started still
    tells the time limit's signal from a scancel, so the job requeues and no failure retry is spent."""
    clock = [1_000_000.0]
    started = FakeSlurm("00:30:00")
    end = job_end_time(JOB, started, now=lambda: clock[0])
    assert end == 1_000_000.0 + 1800 and len(started.calls) == 1
    clock[0] = end - 298  # the early signal
    busy = FakeSlurm(squeue_ok=False)
    said = continue_after_stop("SIGTERM", 3, JOB, busy, end_time=end, epochs_finished=2, now=lambda: clock[0])
    assert busy.requeued == ["4242"] and "(no Snakemake retry used)" in said
    assert [c for c in busy.calls if c[0] == "squeue"] == []  # read once, at the start
    clock[0] = end - 3600  # a scancel an hour before the limit
    assert "SIGTERM with 3600 s left" in continue_after_stop("SIGTERM", 3, JOB, busy, end_time=end, now=lambda: clock[0])


def test_the_job_end_time_comes_from_slurm_s_environment_before_squeue():
    slurm = FakeSlurm()
    assert job_end_time(JOB | {"SLURM_JOB_END_TIME": "1767225600"}, slurm) == 1767225600.0 and slurm.calls == []
    assert job_end_time({}, slurm) is None and slurm.calls == []  # not a Slurm job
    assert job_end_time(JOB, FakeSlurm(squeue_ok=False)) is None
    assert job_end_time(JOB, FakeSlurm("UNLIMITED")) is None


def test_the_loop_counts_the_epochs_it_finishes(tiny_tensors):
    """What a stopped job reports as its attempt's progress: every epoch the process finished."""
    from conftest import tiny_spec

    from initmem.engine.loop import EpochsFinished
    from initmem.engine.train import train_run

    before = EpochsFinished.count
    train_run(tiny_spec(epochs=2), tiny_tensors, log=None)
    assert EpochsFinished.count == before + 2


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
    from helpers.train_jobs import one_run_plan, wait_for_line

    from initmem.pipeline.interrupted import PREEMPTED_EXIT

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("squeue", f'echo "$@" >> {tmp_path / "squeue.calls"}; echo "4:58"'),
                       ("scontrol", f'echo "$@" >> {tmp_path / "scontrol.calls"}')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(stat.S_IRWXU)
    plan, data = one_run_plan(tmp_path, epochs=6)
    log = tmp_path / "train.log"
    settings = {"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "checkpoint_every": 0, "attempts": 3}
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1", "SLURM_JOB_ID": "4242",
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("SLURM_JOB_END_TIME", None)  # the fake squeue says when this job ends, not a Slurm job the tests may run in
    proc = subprocess.Popen([sys.executable, "-m", "initmem", "train-plan", str(plan), str(data), str(tmp_path / "pack.json"),
                             "--settings", json.dumps(settings), "--checkpoint-dir", str(tmp_path / "ckpt"), "--log", str(log)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_line(proc, log, "epoch 1/")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == PREEMPTED_EXIT, out
    text = log.read_text()
    assert re.search(r"stopped at epoch \d+ step \d+, checkpoint saved: run the same command to resume\n"
                     r"time limit: Slurm job 4242 requeued", text)
    assert "time limit: Slurm job 4242 requeued, continuation 1 of 2 (no Snakemake retry used)" in text
    assert (tmp_path / "scontrol.calls").read_text() == "requeue 4242\n"
    assert (tmp_path / "squeue.calls").read_text().count("\n") == 1  # the end time, read once as the job started
