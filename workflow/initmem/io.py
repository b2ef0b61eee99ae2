"""Atomic file writes: a reader (or Snakemake) never sees a half-written result, and a file whose
bytes would not change is left as it was (its timestamp too)."""

from __future__ import annotations

import errno
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


# Why a write fails that the user can fix: a full disk or quota, a read-only file system, no permission.
WRITE_ERRNOS = {errno.ENOSPC: "free space on its file system, then run the same command again",
                errno.EDQUOT: "free space within your quota, then run the same command again",
                errno.EFBIG: "the file system refuses a file this large",
                errno.EROFS: "its file system is mounted read-only: run where the results folder is writable",
                errno.EACCES: "no permission to write into its folder (chmod -R u+w on it, or run as its owner)",
                errno.EPERM: "no permission to write into its folder (chmod -R u+w on it, or run as its owner)"}
WRITE_ERROR_PREFIX = "cannot write "


class WriteError(OSError):
    """A file that could not be written for a reason of :data:`WRITE_ERRNOS`; its message is one
    line naming the file, the cause and what to do."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(cause.errno, cause.strerror)
        self.path, self.cause = str(path), cause

    def __str__(self) -> str:
        code = errno.errorcode.get(self.cause.errno or 0, self.cause.errno)
        return (f"{WRITE_ERROR_PREFIX}{self.path}: {self.cause.strerror or self.cause} (errno {code}); "
                f"{WRITE_ERRNOS[self.cause.errno]}")


def is_write_error(exc: OSError) -> bool:
    """Whether ``exc`` is a failed write the user can fix (:data:`WRITE_ERRNOS`) not yet named."""
    return not isinstance(exc, WriteError) and exc.errno in WRITE_ERRNOS


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.

    The file gets the permissions the umask gives a new file (mkstemp alone would leave 0600, and
    collaborators on a shared filesystem could not read the results). A full disk, a read-only
    folder or one without permission is a :class:`WriteError` naming ``path``; ``path`` is untouched.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        os.close(fd)
    except OSError as exc:
        if not is_write_error(exc):
            raise
        raise WriteError(path, exc) from exc
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, path)
    except OSError as exc:
        if not is_write_error(exc):
            raise
        raise WriteError(path, exc) from exc
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


def write_bytes(data: bytes, path: Path) -> bool:
    """Write ``data`` to ``path`` atomically unless the file already holds exactly these bytes (its
    timestamp then stays as it was); True when it changed."""
    if path.is_file() and path.read_bytes() == data:
        return False
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return True
