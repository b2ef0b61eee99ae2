"""Outputs that finished just before an interruption (Ctrl-C, a killed Snakemake) but that Snakemake
still marks incomplete: its marker is written when a job starts and removed only after the job's
bookkeeping, so a job stopped between its last write and that bookkeeping leaves a whole file marked.

With ``--rerun-incomplete`` (the workflow profile's setting) Snakemake then deletes and remakes
such a file, which for a pack file means training it again; and a forced training job hides the
rest of the DAG from that invocation (Snakemake skips the jobs downstream of a job it must rerun in
its first pass, and the run files reach their pack only through an ``ancient()`` input, so the
second pass never reaches them): the same command plans that one job and stops. The files that the
project writes by an atomic rename (:func:`initmem.io.atomic_path`) are whole whenever they exist,
so their markers are stale: :func:`release_finished` removes them before Snakemake reads them.

A training job stopped by SIGINT (Ctrl-C) or SIGTERM says so in one line that ends its log
(:func:`stop_line`, :func:`stoppable_start` while it starts), and the invocation ends with that line
(:func:`stopped_summary`, from the Snakefile's ``onerror:``) instead of Snakemake's generic error.
Torch-free.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
import signal
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

INCOMPLETE = ".snakemake/incomplete"  # Snakemake's file backend (the default persistence)
# Outputs written only by an atomic rename: prepared data, pack files, run files.
ATOMIC_OUTPUTS = ("results/data/", "results/packs/", "results/runs/")


def _marked_path(marker: Path, folder: Path) -> str | None:
    """The output path a marker file stands for: its name (and, for a long path, the names of the
    folders ``@``-prefixed chunks were split into) base64-decoded; None for anything else."""
    parts = marker.relative_to(folder).parts
    if any(not p.startswith("@") for p in parts[:-1]) or parts[-1].startswith("@"):
        return None
    try:
        return base64.urlsafe_b64decode("".join(p.lstrip("@") for p in parts)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def release_finished(root: Path, prefixes: tuple[str, ...] = ATOMIC_OUTPUTS) -> list[str]:
    """Remove Snakemake's incomplete markers of outputs under ``prefixes`` (relative to ``root``)
    that exist: written atomically, they are whole. Returns their paths. Markers of missing files
    (a job that was cut off: Snakemake reruns it) and of other outputs are left alone."""
    folder = root / INCOMPLETE
    released = []
    for dirpath, _, names in os.walk(folder):
        for name in names:
            marker = Path(dirpath) / name
            path = _marked_path(marker, folder)
            if path is None or not path.startswith(prefixes) or not (root / path).is_file():
                continue
            marker.unlink(missing_ok=True)  # another Snakemake finishing that job may have removed it
            released.append(path)
    return sorted(released)


def released_note(paths: list[str]) -> str | None:
    """One line for the user about :func:`release_finished`'s outputs (None when there are none)."""
    if not paths:
        return None
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return (f"NOTE: {len(paths)} output(s) finished before an interruption kept (Snakemake had them marked "
            f"incomplete; they are written whole or not at all): {shown}")


# A training job stopped by SIGINT or SIGTERM ends its log with one of these lines (and exits with
# :data:`PREEMPTED_EXIT`); the invocation repeats it at its end (:func:`stopped_summary`).
RESUME = "run the same command to resume"
PREEMPTED_EXIT = 75  # EX_TEMPFAIL: stopped by SIGTERM or SIGINT with nothing lost (a checkpoint saved); rerun to resume
_PREEMPTED = re.compile(r"(checkpoint saved|stopped) at epoch (\d+) step (\d+)")  # the loop's Preempted message


def stop_line(preempted: str) -> str:
    """The one line a stopped training job logs, from the training loop's ``Preempted`` message
    (``[run] SIGINT: checkpoint saved at epoch 1 step 3``: epochs finished, steps into the next)."""
    found = _PREEMPTED.search(preempted)
    if found is None:
        return f"stopped ({preempted}): {RESUME}"
    epoch, step = found.group(2), found.group(3)
    if found.group(1) == "stopped":  # no checkpoint was configured (python -m initmem train without --checkpoint-dir)
        return f"stopped at epoch {epoch} step {step}, no checkpoint configured: a rerun trains from scratch"
    return f"stopped at epoch {epoch} step {step}, checkpoint saved: {RESUME}"


STOPPED_BEFORE_TRAINING = f"stopped before training started, nothing lost: {RESUME}"


class StoppedBeforeTraining(Exception):
    """SIGINT or SIGTERM while a training job imports its modules (``import torch``)."""


@contextlib.contextmanager
def stoppable_start() -> Iterator[None]:
    """While a training job starts, before the training loop's own stop handlers are installed:
    SIGINT or SIGTERM ends it with :data:`STOPPED_BEFORE_TRAINING` (one line, no traceback) and
    the stopped-job status 75 (EX_TEMPFAIL)."""
    def handler(signum, frame):
        raise StoppedBeforeTraining(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except StoppedBeforeTraining:
        print(STOPPED_BEFORE_TRAINING, file=sys.stderr, flush=True)
        raise SystemExit(PREEMPTED_EXIT) from None
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def logs_since(folder: str | Path, since: float) -> list[Path]:
    """The training jobs' logs (``folder/<study>/<pack>.log``) written since ``since`` (a time.time())."""
    found = []
    for log in sorted(Path(folder).glob("*/*.log")):
        with contextlib.suppress(OSError):
            if log.stat().st_mtime >= since:
                found.append(log)
    return found


def stopped_jobs(logs: Iterable[str | Path]) -> dict[str, str]:
    """The logs among ``logs`` of training jobs that were stopped (their last line is one of
    :func:`stop_line` or :data:`STOPPED_BEFORE_TRAINING`), each with that line."""
    stopped = {}
    for log in logs:
        try:
            lines = Path(log).read_text().splitlines()
        except OSError:
            continue
        if lines and lines[-1].endswith(RESUME):
            stopped[str(log)] = lines[-1]
    return stopped


def stopped_summary(stopped: dict[str, str]) -> str | None:
    """The line an invocation ends with when training jobs of it were stopped (:func:`stopped_jobs`),
    each job with its own state (a checkpoint saved, or stopped before training with nothing to
    save); None when none was."""
    if len(stopped) <= 1:
        return next(iter(stopped.values()), None)
    where = "; ".join(f"{Path(log).stem} {line.removesuffix(f': {RESUME}').removeprefix('stopped ')}" for log, line in stopped.items())
    return f"{len(stopped)} training jobs stopped ({where}): {RESUME}"
