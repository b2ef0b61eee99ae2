"""The one-time move of an older checkout's prepared data into its data identity's folder (torch-free).

Older checkouts kept one prepared split, ``results/data/cifar10.npz``, which every config's
``prepare_data`` replaced. Prepared data now lives in ``results/data/<data identity>/`` (one folder
per identity, never replaced). The old file is moved there, without retraining anything, the first
time the workflow is parsed; which identity it holds is read from the one place that records it:
Snakemake's metadata of the old file (the ``params`` its ``prepare_data`` job ran with). The
training jobs' metadata lists the data file among their inputs, and Snakemake retrains a job whose
set of input paths changed, so those records get the new path too, and the old pack plans are
stamped with the identity (their modification times kept), so that another config's invocation
leaves them alone (``initmem.pipeline.planning``).

This is the only place that reads or writes Snakemake's own state, and it does so once: with no
old file it returns at the first ``stat``.
"""

from __future__ import annotations

import ast
import base64
import json
import os
from collections.abc import Callable
from pathlib import Path

from initmem.io import read_json, write_json

LEGACY_DATA = "results/data/cifar10.npz"
# Data-code versions that older checkouts recorded and that prepare the same split as today's code
# (the one-file data module before its sources became one file each; the two hashes are its
# syntax tree before and after the package's modules moved into subpackages). Kept until 2027-06-01.
FORMER_DATA_CODES = ("7335bfe079538bc7", "bc4cd20e713ffe59")
METADATA = ".snakemake/metadata"


def _record_file(root: Path, path: str) -> Path:
    """Where Snakemake's file backend keeps the metadata record of ``path`` (short paths only)."""
    return root / METADATA / base64.urlsafe_b64encode(path.encode()).decode()


def recorded_data_identity(root: Path) -> tuple[dict, str] | None:
    """The data identity and data-code version the old file was prepared with, from Snakemake's
    record of its ``prepare_data`` job; None when there is no readable record."""
    try:
        record = json.loads(_record_file(root, LEGACY_DATA).read_text())
        values = [ast.literal_eval(p) for p in record.get("params") or []]
    except (OSError, ValueError, SyntaxError):
        return None
    identity = [v for v in values if isinstance(v, dict) and "origin" in v]
    code = [v for v in values if isinstance(v, str)]
    if record.get("rule") != "prepare_data" or len(identity) != 1 or len(code) != 1:
        return None
    return identity[0], code[0]


def _rewrite_inputs(root: Path, old: str, new: str) -> int:
    """Replace ``old`` by ``new`` in the input lists of Snakemake's metadata records; how many changed."""
    changed = 0
    for path in (root / METADATA).rglob("*"):
        if not path.is_file():
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or old not in (record.get("input") or []):
            continue
        record["input"] = sorted(new if f == old else f for f in record["input"])
        if isinstance(record.get("input_checksums"), dict) and old in record["input_checksums"]:
            record["input_checksums"][new] = record["input_checksums"].pop(old)
        tmp = path.with_name(path.name + ".initmem-tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, path)
        changed += 1
    return changed


def _stamp_plans(root: Path, identity: dict) -> int:
    """Give every plan that names no data identity this one, keeping its modification time (a newer
    plan would retrain its pack); how many were stamped."""
    stamped = 0
    for path in (root / "results/plans").glob("*/*.json"):
        try:
            plan = read_json(path)
        except (OSError, ValueError):
            continue
        if not isinstance(plan, dict) or "data" in plan:
            continue
        times = path.stat()
        write_json(path, {**plan, "data": identity})
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
        stamped += 1
    return stamped


def migrate_legacy_data(root: str | Path, folder_of: Callable[[dict, str], str]) -> str | None:
    """Move an older checkout's ``results/data/cifar10.npz`` to ``results/data/<folder_of(identity,
    data code)>/cifar10.npz`` (see the module's docstring). Returns a line for the user, or None
    when there was nothing to move."""
    root = Path(root)
    legacy = root / LEGACY_DATA
    if not legacy.is_file():
        return None
    recorded = recorded_data_identity(root)
    if recorded is None:
        return (f"NOTE: {LEGACY_DATA} is from an older initmem and Snakemake has no record of which data it holds, so it "
                "is not used: prepared data now lives in results/data/<data identity>/. Delete it when you no longer need it.")
    identity, code = recorded
    new = f"results/data/{folder_of(identity, code)}/cifar10.npz"
    if not (root / new).exists():
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        os.rename(legacy, root / new)  # keeps the file's modification time
    # Snakemake's record of the old path goes: the moved file needs none (it is never rewritten)
    _record_file(root, LEGACY_DATA).unlink(missing_ok=True)
    jobs = _rewrite_inputs(root, LEGACY_DATA, new)
    plans = _stamp_plans(root, identity)
    kept = "" if not legacy.exists() else f" ({LEGACY_DATA} is left in place: {new} existed already; delete it)"
    return (f"moved {LEGACY_DATA} (prepared by an older initmem) to {new}: prepared data is now kept per data identity; "
            f"{jobs} job record(s) and {plans} pack plan(s) follow it, nothing retrains{kept}")
