"""What each training job of an interrupted invocation lost: the line the invocation ends with.

:func:`initmem.pipeline.interrupted.stopped_jobs` reads the stop line that a stopped job's log ends
with. This adds what that line cannot say: a job that kept its finished pack
(:mod:`initmem.pipeline.finished`) before it was stopped lost nothing, also when it ended without a
stop line (Snakemake counts it failed and deletes the pack file it wrote; the next job puts the
file back from the kept pack), and a job cut at once by a second Ctrl-C while it trained lost the
work since its last checkpoint. Every job is named, a lone one too, so that no job's line reads as
another's. Kept apart from :mod:`initmem.pipeline.interrupted`, whose code is part of the analysis
outputs' keys (the analysis scripts import it): the training jobs' lines are no analysis business.

Torch-free: the Snakefile's ``onerror:`` handler calls :func:`what_jobs_lost` and :func:`lost_summary`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from initmem.pipeline.interrupted import RESUME, stopped_jobs, stopped_summary

KEPT = "pack kept in "  # in a training job's line once its finished pack is kept (then the store's path)
CTRL_C_LINE = f"stopped by Ctrl-C before it finished, nothing half-written: {RESUME}"  # initmem.scriptjobs.log_to's, on a KeyboardInterrupt
_TRAINING = re.compile(r"training \d+ run\(s\): ")


def training_line(run_ids: list[str]) -> str:
    """The line a training job logs as it starts training its runs."""
    return f"training {len(run_ids)} run(s): {', '.join(run_ids)}"


def kept_line(n_runs: int, store: str | Path) -> str:
    """The line a training job logs once its finished pack is kept in ``store``."""
    return f"finished {n_runs} run(s): {KEPT}{store}"


def _attempt(lines: list[str]) -> list[str]:
    """The lines of a job's log written by its last attempt (after its ``=== attempt N`` header)."""
    starts = [i for i, line in enumerate(lines) if line.startswith("=== attempt ")]
    return lines[starts[-1] + 1:] if starts else lines


def what_jobs_lost(logs: Iterable[str | Path], failed: Iterable[str | Path] = ()) -> dict[str, str]:
    """The training jobs among ``logs`` that were stopped (:func:`initmem.pipeline.interrupted.stopped_jobs`)
    or that failed (their logs among ``failed``, Snakemake's failed jobs') after they kept their pack,
    each with the line that says what it lost: nothing, when its last attempt kept its pack, whatever
    stopped it after that; the work since its last checkpoint, when a second Ctrl-C cut it while it
    trained; otherwise what its stop line says."""
    logs = [str(log) for log in logs]
    failed = {str(log) for log in failed}
    lost = stopped_jobs(logs)
    for log in logs:
        if log not in lost and log not in failed:
            continue
        try:
            attempt = _attempt(Path(log).read_text().splitlines())
        except OSError:
            continue
        if any(KEPT in line for line in attempt):
            lost[log] = f"finished and kept its pack, nothing lost: {RESUME}"
        elif lost.get(log) == CTRL_C_LINE and any(_TRAINING.match(line) for line in attempt):
            lost[log] = f"stopped at once by a second Ctrl-C, the work since its last checkpoint lost: {RESUME}"
    return {log: lost[log] for log in logs if log in lost}


def lost_summary(lost: dict[str, str]) -> str | None:
    """The line an invocation ends with when training jobs of it were stopped (:func:`what_jobs_lost`),
    each job named with what it lost; None when none was."""
    if len(lost) == 1:
        log, line = next(iter(lost.items()))
        return f"training job {Path(log).stem} {line}"
    return stopped_summary(lost)
