"""A finished pack's durable copy, which Snakemake's failed-job cleanup never reaches.

Snakemake deletes the outputs of a job that fails, whatever made it fail: a training job whose pack
file was already written and that was then stopped (Ctrl-C reaching it as it exits), or a duplicate
trainer refused by the pack lock (:mod:`initmem.cluster.packlock`) whose failure Snakemake handles
after the original job wrote the file (a restarted main Snakemake on a cluster). The pack's
checkpoints are gone by then, so the next invocation trained the pack again from scratch.

So the trainer keeps every finished pack first in a *store* that no rule declares,
``<pack>.finished`` beside the pack's plan (``results/plans/<study>/<pack>.finished``, the pack
file's JSON), and places the declared output (``results/packs/<study>/<pack>.json``) last, as a hard
link to it (an atomic copy where the file system has no hard links). A training job that starts and
finds the store holding exactly its plan's members under the plan's identity keys trains nothing: it
places the output from the store and says so in one line (:func:`declare`). A store whose keys differ
(a member's key changed since: its spec, the data, the trainer's code or the precision) is ignored,
and the pack trains as before; its new store replaces the old one.

The store is kept for good, as the pack's one durable copy: hard-linked, it costs no disk beside the
pack file, and there is one per pack, replaced when the pack retrains, so it grows as
``results/packs/`` does. A store also binds its plan (:func:`initmem.pipeline.planning.read_trained_plans`),
as the pack file does, so its runs are not regrouped while the pack file is missing.

Torch-free.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from initmem.io import atomic_path, read_json
from initmem.pipeline.planning import finished_path
from initmem.pipeline.records import RecordError, check_record


def same_runs(pack: str | Path, members: list[dict]) -> bool:
    """Whether the pack file ``pack`` holds a record of every member and no other, each of the
    current metrics format and under the member's identity ``key``."""
    try:
        runs = read_json(pack)["runs"]
        for record in runs:
            check_record(record, str(pack))
        return sorted((r["run_id"], r["key"]) for r in runs) == sorted((m["run_id"], m["key"]) for m in members)
    except (OSError, ValueError, KeyError, TypeError, RecordError):
        return False


def stored(plan: str | Path, members: list[dict]) -> Path | None:
    """The store of ``plan`` when it holds exactly ``members`` (the plan's) under their keys now, else None."""
    store = finished_path(plan)
    return store if same_runs(store, members) else None


def place(source: Path, dest: str | Path, touch: bool = True) -> None:
    """Put ``source`` at ``dest`` atomically: a hard link (no second copy on disk), or a copy where
    the file system refuses one. With ``touch`` its modification time becomes now (a declared output
    must be newer than the plan it was made from, for Snakemake)."""
    with atomic_path(dest) as tmp:
        tmp.unlink()
        try:
            os.link(source, tmp)
        except OSError:  # another file system, or one without hard links
            shutil.copy2(source, tmp)
        if touch:
            os.utime(tmp)


def declare(plan: str | Path, out: str | Path, members: list[dict]) -> Path | None:
    """When the store of ``plan`` holds its ``members`` (:func:`stored`), make ``out`` that pack
    (left as it is when it already holds those runs under those keys) and return the store; else None."""
    store = stored(plan, members)
    if store is None:
        return None
    if not same_runs(out, members):
        place(store, out)
    return store


def keep_written(plan: str | Path, out: str | Path) -> Path:
    """Keep an existing pack file ``out`` (one written before packs were kept) in the store of ``plan``."""
    store = finished_path(plan)
    place(Path(out), store, touch=False)  # the pack file's time stays as it was
    return store
