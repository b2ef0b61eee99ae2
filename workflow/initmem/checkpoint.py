"""Resumable training state on disk: atomic, checksummed, with the previous good one kept.

File layout: 64 hex chars of sha256 over the payload, a newline, then the ``torch.save`` payload.
Saving rotates the current file to ``<name>.prev``; loading falls back to it when the newest one is
truncated or corrupt.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import torch

from initmem.io import atomic_path


class CheckpointError(RuntimeError):
    """No usable checkpoint (all candidates corrupt or from another spec)."""


def _spec_key(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def save_checkpoint(path: Path, spec: dict, payload: dict) -> None:
    """Write ``payload`` (plus the spec's hash) atomically; keep the previous checkpoint as ``.prev``."""
    buf = io.BytesIO()
    torch.save({"spec_key": _spec_key(spec), **payload}, buf)
    raw = buf.getvalue()
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.replace(path, path.with_name(path.name + ".prev"))


def _read(path: Path, spec: dict) -> dict:
    blob = path.read_bytes()
    digest, raw = blob[:64].decode(errors="replace"), blob[65:]
    if len(blob) < 66 or hashlib.sha256(raw).hexdigest() != digest:
        raise CheckpointError(f"checkpoint {path} is truncated or corrupt (checksum mismatch)")
    obj = torch.load(io.BytesIO(raw), weights_only=False)
    if obj.get("spec_key") != _spec_key(spec):
        raise CheckpointError(f"checkpoint {path} belongs to a different spec")
    return obj


def load_checkpoint(path: Path, spec: dict, report: Callable[[str], None] | None = None) -> dict | None:
    """The newest good checkpoint for ``spec``, or None when there is none; raises only if all are bad.

    A bad newest checkpoint that the previous one replaces is passed to ``report``.
    """
    path = Path(path)
    candidates = [p for p in (path, path.with_name(path.name + ".prev")) if p.exists()]
    errors = []
    for p in candidates:
        try:
            obj = _read(p, spec)
            if errors and report is not None:
                report(f"{'; '.join(errors)}; resuming from the previous checkpoint {p}")
            return obj
        except CheckpointError as exc:
            errors.append(str(exc))
        except Exception as exc:  # unpickling garbage
            errors.append(f"checkpoint {p} is unreadable ({exc})")
    if errors:
        raise CheckpointError("; ".join(errors))
    return None


def pack_checkpoint_name(runs: list[dict]) -> str:
    """File name of a vectorised pack's checkpoint (its first run and how many follow)."""
    return f"{runs[0]['run_id']}+{len(runs) - 1}.pack.ckpt"


def remove_checkpoints(path: Path) -> None:
    """Delete a run's checkpoint and its previous copy."""
    for p in (Path(path), Path(path).with_name(Path(path).name + ".prev")):
        p.unlink(missing_ok=True)
