"""A training job stopped at its Slurm time limit continues without spending a failure retry.

The profile asks Slurm for SIGTERM 5 minutes before a job's time limit (``--signal=TERM@300``); the
trainer saves a checkpoint and stops. Exiting would fail the job, and Snakemake would resubmit it
with one of the ``retries`` that node failures and real errors also need, so a slow node could run
a job that is making progress out of retries. Instead, when the stop came near the time limit, the
job asks Slurm to requeue itself (``scontrol requeue``, allowed by the profile's ``--requeue``): the
same job id goes back to the queue, Snakemake's status check sees it pending, not failed, and when
it runs again it resumes from the checkpoint. A bounded number of continuations per job
(``compute.attempts`` - 1, counted by Slurm's ``SLURM_RESTART_COUNT``) keeps a job that can never
finish from cycling forever, and an attempt that finished no epoch is not continued at all: the
next one would end the same way (its time goes to start-up and one unfinished epoch), so the job
says to raise the time limit or shrink the pack instead. A SIGTERM far from the limit (``scancel
--signal=TERM``, a preemption) is no time limit: the job stops as before.

The job's end time is read once, when it starts (:func:`job_end_time`: Slurm's ``SLURM_JOB_END_TIME``,
else ``squeue``), so a Slurm controller too busy to answer at the signal costs no failure retry;
only where the start could not read it is ``squeue`` asked again at the signal.

Torch-free; every Slurm command goes through ``run`` (tests pass a fake).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping

EARLY_SIGNAL_S = 300  # the profile's --signal=TERM@300
NEAR_LIMIT_S = 2 * EARLY_SIGNAL_S  # a SIGTERM with at most this much time left is the time limit's
NO_EPOCH = "time limit reached without finishing an epoch in this attempt"  # how the line of a pack too large for its limit starts
Runner = Callable[[list[str]], subprocess.CompletedProcess]


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def slurm_seconds(text: str) -> float | None:
    """Seconds of a Slurm duration (``squeue -o %L``: ``[D-]HH:MM:SS``, ``MM:SS``); None for
    ``UNLIMITED``, ``NOT_SET``, ``INVALID`` or anything else that is no duration."""
    text = text.strip()
    days, _, clock = text.rpartition("-")
    parts = clock.split(":")
    if not (1 <= len(parts) <= 3) or not all(p.isdigit() for p in parts) or (days and not days.isdigit()):
        return None
    seconds = 0
    for p in parts:
        seconds = 60 * seconds + int(p)
    return seconds + 86400 * int(days or 0)


def time_left(job_id: str, run: Runner = _run) -> float | None:
    """Seconds until the job's time limit, as ``squeue`` says (None when it cannot say)."""
    try:
        proc = run(["squeue", "--noheader", "--jobs", job_id, "--format", "%L"])
    except (OSError, subprocess.SubprocessError):
        return None
    return slurm_seconds(proc.stdout) if proc.returncode == 0 else None


def job_end_time(env: Mapping[str, str], run: Runner = _run, now: Callable[[], float] = time.time) -> float | None:
    """When this Slurm job's time limit ends (Unix seconds), read once as it starts: Slurm's
    ``SLURM_JOB_END_TIME`` where the job's environment has it (Slurm 22.05 and later), else now plus
    what ``squeue`` says is left; None outside Slurm or where neither can say."""
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        return None
    stated = env.get("SLURM_JOB_END_TIME", "").strip()
    if stated.isdigit() and int(stated) > 0:
        return float(stated)
    left = time_left(job_id, run)
    return None if left is None else now() + left


def continue_after_stop(reason: str, attempts: int, env: Mapping[str, str], run: Runner = _run, *, end_time: float | None = None,
                        epochs_finished: int | None = None, now: Callable[[], float] = time.time) -> str:
    """After a stop (``reason``: the signal's name), requeue this Slurm job when the stop was its
    time limit's early signal, the attempt finished at least one epoch (``epochs_finished``; None:
    not counted) and fewer than ``attempts`` - 1 continuations were used; returns what happened, for
    the job's log. ``end_time``: the job's end as :func:`job_end_time` read it at the start (None:
    ``squeue`` is asked now)."""
    job_id = env.get("SLURM_JOB_ID")
    if not job_id or reason != "SIGTERM":
        return "not a Slurm time limit: a rerun resumes from the checkpoint"
    left = end_time - now() if end_time is not None else time_left(job_id, run)
    if left is None or left > NEAR_LIMIT_S:
        where = "unknown" if left is None else f"{left:.0f} s"
        return f"SIGTERM with {where} left before the time limit (scancel or preemption, not the limit): no continuation"
    if epochs_finished == 0:
        return (f"{NO_EPOCH}: not requeued, as the next attempt would end the same way; raise the time limit "
                "(partition_time_limit, compute.max_runtime_minutes) or shrink the pack (pack.max_models, pack.max_images)")
    used = int(env.get("SLURM_RESTART_COUNT") or 0)
    if used >= attempts - 1:
        return (f"time limit reached after {used} continuation(s), the most compute.attempts = {attempts} allows: "
                "Snakemake's retry (a failure retry) resumes it, if one is left")
    try:
        proc = run(["scontrol", "requeue", job_id])
    except (OSError, subprocess.SubprocessError) as exc:
        return f"time limit: scontrol requeue {job_id} could not run ({exc}); Snakemake's retry resumes it"
    if proc.returncode != 0:
        why = (proc.stderr or proc.stdout).strip().splitlines()
        return (f"time limit: scontrol requeue {job_id} refused ({why[-1] if why else f'exit {proc.returncode}'}); "
                "Snakemake's retry resumes it (allow requeues: the profile's slurm-requeue, the cluster's JobRequeue)")
    return (f"time limit: Slurm job {job_id} requeued, continuation {used + 1} of {attempts - 1} "
            "(no Snakemake retry used); it resumes from the checkpoint")


def outgrew_time_limit(said: str) -> bool:
    """Whether :func:`continue_after_stop` said the pack is too large for its time limit (an attempt
    that finished no epoch): a failure for the pack's size, which a smaller pack or a longer limit cures."""
    return said.startswith(NO_EPOCH)
