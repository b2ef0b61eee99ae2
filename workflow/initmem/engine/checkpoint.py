"""Resumable training state on disk: atomic, checksummed, streamed, with the previous good one kept.

File layout: 64 hex chars of sha256 over the payload, a newline, then the ``torch.save`` payload.
Saving rotates the current file to ``<name>.prev``; loading falls back to it when the newest one is
truncated or corrupt.

Host memory: a pack's state is hundreds of MiB to GiB, and a GPU job's host memory is a Slurm
request (docs/slurm.md), so nothing here holds a second copy of it. ``torch.save`` writes straight
into the temporary file through a hashing wrapper (tensors leave the device one storage at a time);
the digest goes into the 65-byte header afterwards. Loading checks the digest in 1 MiB chunks, then
``torch.load`` reads the payload through a window past the header, placing every storage on
``map_location`` (the CPU unless the trainer names its device): a checkpoint written on a GPU loads
where there is none, and one written on the CPU lands on the GPU directly. ``mmap`` is not used: it
needs the payload at offset 0 of its own file, and the windowed load already holds one copy only
(``benchmarks/checkpoint_memory.md`` measures both peaks).
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import torch

from initmem.io import atomic_path

HEADER = 65  # 64 hex digits of sha256 and a newline
CHUNK = 1 << 20


class CheckpointError(RuntimeError):
    """No usable checkpoint (all candidates corrupt or from another spec)."""


def _spec_key(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


class _HashingWriter(io.RawIOBase):
    """A write-only file that hashes what passes through it (``torch.save`` writes sequentially)."""

    def __init__(self, fh):
        self.fh, self.sha, self.sequential = fh, hashlib.sha256(), True

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.sha.update(data)
        return self.fh.write(data)

    def seekable(self) -> bool:
        return False

    def seek(self, *args):  # not expected; if torch ever seeks, the digest is recomputed from the file
        self.sequential = False
        return self.fh.seek(*args)

    def tell(self) -> int:
        return self.fh.tell() - HEADER

    def flush(self) -> None:
        self.fh.flush()


class _Window(io.RawIOBase):
    """A read-only view of ``fh`` from ``offset`` on: what ``torch.load`` sees of a checkpoint."""

    def __init__(self, fh, offset: int):
        self.fh, self.offset = fh, offset
        self.fh.seek(offset)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        return self.fh.readinto(buf)

    def read(self, size: int = -1) -> bytes:
        return self.fh.read(size)

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos += self.offset
        return self.fh.seek(pos, whence) - self.offset

    def tell(self) -> int:
        return self.fh.tell() - self.offset


def _file_digest(fh, offset: int) -> str:
    """sha256 of ``fh`` from ``offset`` to its end, read in chunks."""
    sha = hashlib.sha256()
    fh.seek(offset)
    while chunk := fh.read(CHUNK):
        sha.update(chunk)
    return sha.hexdigest()


def save_checkpoint(path: Path, spec: dict, payload: dict) -> None:
    """Write ``payload`` (plus the spec's hash) atomically; keep the previous checkpoint as ``.prev``."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "w+b") as fh:
            fh.write(b"0" * 64 + b"\n")
            writer = _HashingWriter(fh)
            torch.save({"spec_key": _spec_key(spec), **payload}, writer)
            digest = writer.sha.hexdigest() if writer.sequential else _file_digest(fh, HEADER)
            fh.seek(0)
            fh.write(digest.encode())
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.replace(path, path.with_name(path.name + ".prev"))


def _read(path: Path, spec: dict, map_location) -> dict:
    with open(path, "rb") as fh:
        digest = fh.read(HEADER)[:64].decode(errors="replace")
        size = os.fstat(fh.fileno()).st_size
        if size <= HEADER or _file_digest(fh, HEADER) != digest:
            raise CheckpointError(f"checkpoint {path} is truncated or corrupt (checksum mismatch)")
        obj = torch.load(_Window(fh, HEADER), map_location=map_location, weights_only=False)
    if obj.get("spec_key") != _spec_key(spec):
        raise CheckpointError(f"checkpoint {path} belongs to a different spec")
    return obj


def load_checkpoint(path: Path, spec: dict, report: Callable[[str], None] | None = None,
                    map_location: str | torch.device = "cpu") -> dict | None:
    """The newest good checkpoint for ``spec``, or None when there is none; raises only if all are bad.

    Every tensor is placed on ``map_location`` whatever device wrote it. A bad newest checkpoint
    that the previous one replaces, and the leftovers of an interrupted save (removed first), are
    passed to ``report``.
    """
    path = Path(path)
    freed = remove_partial_saves(path)
    if freed and report is not None:
        report(f"removed {freed / 2**20:,.0f} MiB that an interrupted save of {path.name} left")
    candidates = [p for p in (path, path.with_name(path.name + ".prev")) if p.exists()]
    errors = []
    for p in candidates:
        try:
            obj = _read(p, spec, map_location)
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


def generator_state(gen: torch.Generator) -> bytes:
    """A CPU generator's state for a checkpoint, as bytes: ``torch.load``'s ``map_location`` moves
    every tensor to the training device, and ``Generator.set_state`` takes only a CPU ByteTensor."""
    return gen.get_state().numpy().tobytes()


def set_generator_state(gen: torch.Generator, state: bytes) -> None:
    """Restore :func:`generator_state` output into ``gen`` (a CPU generator, whatever the training device)."""
    gen.set_state(torch.frombuffer(bytearray(state), dtype=torch.uint8))


class CheckpointSchedule:
    """When a trainer saves: at the end of every ``every_epochs``-th epoch and, with
    ``every_minutes``, at the first step that much wall time after the last save, in the middle of an
    epoch too (a node failure or a SIGKILL then loses at most that much of a long pack's work,
    however long its epochs)."""

    def __init__(self, every_epochs: int = 0, every_minutes: float = 0, clock: Callable[[], float] = time.monotonic):
        self.every_epochs, self.every_seconds, self.clock = int(every_epochs or 0), 60.0 * float(every_minutes or 0), clock
        self.last = clock()

    def due(self, epoch: int, epochs: int) -> bool:
        """Whether to save after finished epoch ``epoch`` of ``epochs`` (never after the last: the metrics follow)."""
        return epoch < epochs and bool(self.every_epochs) and epoch % self.every_epochs == 0

    def due_by_time(self) -> bool:
        """Whether ``every_minutes`` have passed since the last save (asked after every step)."""
        return bool(self.every_seconds) and self.clock() - self.last >= self.every_seconds

    def saved(self) -> None:
        """Restart the wall-time interval (call after each save)."""
        self.last = self.clock()


def pack_checkpoint_name(runs: list[dict]) -> str:
    """File name of a vectorised pack's checkpoint (its first run and how many follow)."""
    return f"{runs[0]['run_id']}+{len(runs) - 1}.pack.ckpt"


def partial_saves(path: Path) -> list[Path]:
    """The temporary files of saves of ``path`` that never finished (a hard kill mid-save leaves one,
    as large as the checkpoint; :func:`initmem.io.atomic_path` names them ``.<name>.<random>.part``)."""
    path = Path(path)
    return sorted(path.parent.glob(f".{glob.escape(path.name)}.*.part")) if path.parent.is_dir() else []


def remove_partial_saves(path: Path) -> int:
    """Delete :func:`partial_saves` of ``path`` (only one job trains a pack at a time, so none is being
    written); returns the bytes freed."""
    freed = 0
    for part in partial_saves(path):
        try:
            freed += part.stat().st_size
            part.unlink()
        except FileNotFoundError:
            pass
    return freed


def remove_checkpoints(path: Path) -> None:
    """Delete a run's checkpoint, its previous copy and what interrupted saves left."""
    for p in (Path(path), Path(path).with_name(Path(path).name + ".prev")):
        p.unlink(missing_ok=True)
    remove_partial_saves(path)
