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
"""

from __future__ import annotations

import base64
import binascii
import os
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
