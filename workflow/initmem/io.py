"""Atomic file writes: a reader (or Snakemake) never sees a half-written result."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.

    The file gets the permissions the umask gives a new file (mkstemp alone would leave 0600, and
    collaborators on a shared filesystem could not read the results).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as JSON atomically (NaN/inf are refused: they are not JSON)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=1, allow_nan=False)
            fh.flush()
            os.fsync(fh.fileno())


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file."""
    with open(path) as fh:
        return json.load(fh)

