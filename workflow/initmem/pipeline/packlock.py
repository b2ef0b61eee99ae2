"""One trainer per pack: an exclusive lock on the pack's checkpoint folder, held for the whole job.

Two jobs can be handed the same pack, e.g. when the main Snakemake is restarted while its Slurm
jobs still run (the executor cannot re-attach to jobs it did not submit, so it submits every running
pack again). Both would resume from the same checkpoint, and one's resume would delete the other's
in-flight save. The lock prevents that: the first trainer holds a POSIX record lock
(``fcntl.lockf``, which NFS passes to its lock manager and Lustre honours when mounted with
``flock``) on ``trainer.lock`` in the checkpoint folder, and writes a *lease* beside it naming its
host, pid and Slurm job. A second trainer cannot take the lock, reads the lease and exits with one
line naming the first job, before it opens (or deletes) anything in the folder.

The lock, not the lease, decides: the kernel (or the NFS lock manager) drops a lock when its
process dies, so a lease left by a killed job blocks no one. Torch-free.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from initmem.io import read_json, write_json

LOCK_NAME = "trainer.lock"
LEASE_NAME = "trainer.lease"
BUSY_EXIT = 16  # EBUSY: another job trains this pack; this one trained and deleted nothing


class PackBusy(RuntimeError):
    """Another live trainer holds the pack; the message is one line naming it."""


def lease_here() -> dict:
    """Who this trainer is: host, pid, Slurm job (if any) and when it took the pack."""
    job = os.environ.get("SLURM_JOB_ID")
    if job and os.environ.get("SLURM_ARRAY_TASK_ID"):
        job = f"{os.environ.get('SLURM_ARRAY_JOB_ID', job)}_{os.environ['SLURM_ARRAY_TASK_ID']}"
    return {"host": socket.gethostname(), "pid": os.getpid(), "slurm_job_id": job,
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def describe(lease: dict | None) -> str:
    """A lease in words: ``Slurm job 123 (pid 9 on node7, since ...)``, or what is known of it."""
    if not lease:
        return "another process (its lease is not written yet or unreadable)"
    where = f"pid {lease.get('pid')} on {lease.get('host')}, since {lease.get('since')}"
    job = lease.get("slurm_job_id")
    return f"Slurm job {job} ({where})" if job else f"a job outside Slurm ({where})"


def read_lease(folder: Path) -> dict | None:
    """The lease in ``folder``, or None when there is none or it cannot be read."""
    try:
        lease = read_json(folder / LEASE_NAME)
        return lease if isinstance(lease, dict) else None
    except (OSError, ValueError):
        return None


def _take(path: Path) -> int:
    """Open ``path`` and lock it without waiting; the descriptor, or :class:`BlockingIOError`.
    Retried when the file was replaced between open and lock (a finishing holder removes it), so
    the lock held is always on the file the path names now."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise BlockingIOError(str(exc)) from exc
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


@contextlib.contextmanager
def hold_pack(folder: str | Path, pack: str) -> Iterator[dict]:
    """Hold ``folder`` (a pack's checkpoint folder) for this process; yields the lease written.

    Raises :class:`PackBusy` (one line naming the holder) when another live process holds it. On
    leaving, the lease and the lock file go, then the lock is released, so an emptied folder can be
    removed by the caller.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = _take(folder / LOCK_NAME)
    except BlockingIOError:
        raise PackBusy(f"pack {pack} is being trained by {describe(read_lease(folder))}: this job trains nothing and "
                       f"deletes nothing (checkpoints in {folder}); rerun the workflow once that job has ended") from None
    try:
        lease = lease_here()
        write_json(folder / LEASE_NAME, lease)
        yield lease
    finally:
        for name in (LEASE_NAME, LOCK_NAME):
            (folder / name).unlink(missing_ok=True)
        os.close(fd)

