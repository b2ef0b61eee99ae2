"""One trainer per pack: an exclusive lock on the pack's checkpoint folder, held for the whole job,
and a lease beside it that says who holds it.

Two jobs can be handed the same pack, e.g. when the main Snakemake is restarted while its Slurm
jobs still run (the executor cannot re-attach to jobs it did not submit). Both would resume from
the same checkpoint, and one's resume would delete the other's in-flight save. The first trainer
holds a POSIX record lock (``fcntl.lockf``) on ``trainer.lock`` in the checkpoint folder and writes
a *lease* beside it: its host, pid, user, Slurm job (if any), pack and start time.

A lock alone is not enough: on BeeGFS (by default), Lustre mounted ``localflock`` and NFS mounted
``local_lock``/``nolock`` a POSIX lock is node-local, so a second trainer on another node takes it
too, and Lustre mounted ``noflock`` refuses ``lockf`` (ENOSYS). So a trainer that took the lock (or
found none to take: one line says so) reads the lease as well: one naming a live holder (a Slurm
job still queued or running, other than this job, by one ``squeue`` call; or a live pid on this
host) refuses with one line, before anything in the folder is opened or deleted. A stale lease (its
pid gone from this host, its Slurm job no longer queued, an earlier attempt of this very job) is
taken over, with a line saying so. :func:`live_packs` is the same check for the main Snakemake,
which leaves out the packs that live jobs still train instead of submitting them again.
Torch-free.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from initmem.io import read_json, write_json

LOCK_NAME = "trainer.lock"
LEASE_NAME = "trainer.lease"
BUSY_EXIT = 16  # EBUSY: another job trains this pack; this one trained and deleted nothing
# lockf's errors on a file system without POSIX locks (Lustre `noflock`: ENOSYS; NFS without a
# reachable lock manager: ENOLCK; some FUSE file systems: EOPNOTSUPP): the lease alone decides there
NO_LOCKS = (errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP)
# squeue lists queued, running, suspended and completing jobs; these it may show too (with --states)
# and are ended
ENDED_STATES = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                          "PREEMPTED", "TIMEOUT"})
SQUEUE_SECONDS = 60  # a controller that does not answer in a minute counts as not answering

ALIVE, GONE, UNKNOWN = "alive", "gone", "unknown"


class PackBusy(RuntimeError):
    """Another live trainer holds the pack; the message is one line naming it."""


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container)
        return str(os.getuid())


def _own_job() -> str | None:
    """This process's Slurm job as a lease names it (an array task as ``ARRAYJOB_TASK``)."""
    job = os.environ.get("SLURM_JOB_ID")
    if job and os.environ.get("SLURM_ARRAY_TASK_ID"):
        job = f"{os.environ.get('SLURM_ARRAY_JOB_ID', job)}_{os.environ['SLURM_ARRAY_TASK_ID']}"
    return job


def lease_here() -> dict:
    """Who this trainer is: host, pid, user, Slurm job (if any) and when it took the pack."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "user": _user(), "slurm_job_id": _own_job(),
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


@dataclass(frozen=True)
class SlurmQueue:
    """What one ``squeue`` call said: the ids of the jobs it lists (``jobs``), or None with ``error``
    saying why it could not be asked; None with no error where no ``squeue`` is installed."""

    jobs: frozenset[str] | None
    error: str | None = None


def slurm_queue(users: Iterable[str]) -> SlurmQueue:
    """The users' jobs that Slurm still holds (queued, running, suspended, completing), by one call
    ``squeue -h -o '%i %A %T' -u USERS``: each job by its id and, for an array task, ``ARRAY_TASK`` too."""
    command = ["squeue", "-h", "-o", "%i %A %T", "-u", ",".join(sorted(set(users)))]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=SQUEUE_SECONDS, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return SlurmQueue(None)
    except (OSError, subprocess.SubprocessError) as exc:
        return SlurmQueue(None, f"squeue did not answer ({exc})")
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [""])[-1]
        return SlurmQueue(None, f"squeue failed (exit {proc.returncode}{': ' + said if said else ''})")
    jobs = set()
    for line in proc.stdout.splitlines():
        *ids, state = line.split() or ["", ""]
        if state.split("+")[0] not in ENDED_STATES:
            jobs.update(ids)
    return SlurmQueue(frozenset(jobs))


def pid_alive(pid: object) -> bool:
    """Whether ``pid`` is a live process on this host other than this one (a zombie is not)."""
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def needs_squeue(lease: dict, own_job: str | None) -> bool:
    """Whether :func:`judge` needs Slurm's word on ``lease`` (a Slurm job on another host, not this job)."""
    job = lease.get("slurm_job_id")
    return bool(job) and lease.get("host") != socket.gethostname() and str(job) != str(own_job)


def judge(lease: dict, queue: SlurmQueue | None, own_job: str | None = None) -> tuple[str, str]:
    """Whether the trainer that wrote ``lease`` may still train: (:data:`ALIVE`, :data:`GONE` or
    :data:`UNKNOWN`, why in words). On this host its pid decides; elsewhere its Slurm job, as
    ``queue`` (:func:`slurm_queue`) lists it; a lease of ``own_job`` is an earlier attempt of this job."""
    job, pid = lease.get("slurm_job_id"), lease.get("pid")
    if lease.get("host") == socket.gethostname():
        return (ALIVE, f"pid {pid} is alive on this host") if pid_alive(pid) else (GONE, f"pid {pid} is gone from this host")
    if job and own_job and str(job) == str(own_job):
        return GONE, f"it is an earlier attempt of this Slurm job ({job})"
    if job and queue is not None and queue.jobs is not None:
        return (ALIVE, f"Slurm job {job} is still queued or running") if str(job) in queue.jobs \
            else (GONE, f"Slurm job {job} is no longer queued or running")
    if job and (queue is None or queue.error is None):
        return GONE, f"no squeue on this host to ask about Slurm job {job}, and its pid runs elsewhere"
    if job:
        return UNKNOWN, f"{queue.error}, so whether Slurm job {job} still runs is unknown"
    return UNKNOWN, f"pid {pid} runs on {lease.get('host')}, outside Slurm, and cannot be checked from {socket.gethostname()}"


def _take(path: Path) -> int:
    """Open ``path`` and lock it without waiting; the descriptor, or :class:`BlockingIOError`; an
    :class:`OSError` with an errno of :data:`NO_LOCKS` where the file system has no POSIX locks.
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


def _busy(pack: str, folder: Path, holder: str) -> PackBusy:
    return PackBusy(f"pack {pack} is being trained by {holder}: this job trains nothing and deletes nothing "
                    f"(checkpoints in {folder}); rerun the workflow once that job has ended")


@contextlib.contextmanager
def hold_pack(folder: str | Path, pack: str, log=None) -> Iterator[dict]:
    """Hold ``folder`` (a pack's checkpoint folder) for this process; yields the lease written.

    Raises :class:`PackBusy` (one line naming the holder) when another live process holds its lock
    or its lease (:func:`judge`; an unknown holder counts as live, and the line says how to free
    the pack). A stale lease is taken over with a line on ``log`` (default stderr), and so is said a
    file system without POSIX locks. On leaving, the lease and the lock file go, then the lock is
    released, so an emptied folder can be removed by the caller.
    """
    folder = Path(folder)
    log = log or sys.stderr
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd: int | None = _take(folder / LOCK_NAME)
    except BlockingIOError:
        raise _busy(pack, folder, describe(read_lease(folder))) from None
    except OSError as exc:
        if exc.errno not in NO_LOCKS:
            raise
        fd = None
        print(f"pack {pack}: the file system of {folder} has no POSIX locks (lockf: {exc.strerror}): its lease "
              "alone keeps a second trainer out", file=log, flush=True)
    try:
        if (old := read_lease(folder)) is not None:
            own = _own_job()
            verdict, why = judge(old, slurm_queue([old.get("user") or _user()]) if needs_squeue(old, own) else None, own)
            if verdict != GONE:
                free = "" if verdict == ALIVE else f"; delete {folder / LEASE_NAME} if it has ended"
                raise _busy(pack, folder, f"{describe(old)}; {why}{free}")
            print(f"pack {pack}: taking over the lease of {describe(old)}: {why}", file=log, flush=True)
    except BaseException:
        if fd is not None:
            os.close(fd)  # the holder's lease and lock file stay
        raise
    try:
        lease = {**lease_here(), "pack": pack}
        write_json(folder / LEASE_NAME, lease)
        yield lease
    finally:
        for name in (LEASE_NAME, LOCK_NAME):
            (folder / name).unlink(missing_ok=True)
        if fd is not None:
            os.close(fd)


@dataclass(frozen=True)
class LivePack:
    """A pack whose lease names a live (or unknown) trainer: its study, name, folder, lease and why (:func:`judge`)."""

    study: str
    pack: str
    folder: Path
    lease: dict
    why: str

    def __str__(self) -> str:
        return f"{self.study}/{self.pack}: {describe(self.lease)}, {self.why}"


def _pack_of(folder: Path, lease: dict, plans: Path) -> str | None:
    """The pack a lease is for: named in it, or (a lease of an older trainer) by the started marker
    that trainer wrote beside the plan with the same content."""
    if lease.get("pack"):
        return str(lease["pack"])
    for marker in sorted((plans / folder.parent.name).glob("*.started")):
        with contextlib.suppress(OSError, ValueError):
            if read_json(marker) == lease:
                return marker.name[: -len(".started")]
    return None


def live_packs(checkpoints: str | Path, plans: str | Path) -> list[LivePack]:
    """The packs under ``checkpoints`` (``<study>/<keys>/``) whose lease names a trainer that is
    alive or cannot be checked (:func:`judge`, with at most one ``squeue`` call for all of them):
    what a restarted main Snakemake must not submit again. Cheap where nothing trains: one glob."""
    leases = [(path.parent, lease) for path in sorted(Path(checkpoints).glob(f"*/*/{LEASE_NAME}"))
              if (lease := read_lease(path.parent)) is not None]
    if not leases:
        return []
    asked = [lease for _, lease in leases if needs_squeue(lease, None)]
    queue = slurm_queue({lease.get("user") or _user() for lease in asked}) if asked else None
    live = []
    for folder, lease in leases:
        verdict, why = judge(lease, queue)
        if verdict != GONE and (pack := _pack_of(folder, lease, Path(plans))):  # one not named: its trainer still refuses
            live.append(LivePack(folder.parent.name, pack, folder, lease, why))
    return live


def live_packs_line(live: list[LivePack], refused: str | None, shown: int = 5) -> str:
    """One line naming the packs that live jobs still train (the first ``shown`` of them, each with
    its holder): with ``refused`` (the command that leaves them out), the refusal of an invocation
    that would start them again; without, a dry run's note."""
    names = "; ".join(map(str, live[:shown])) + (f"; and {len(live) - shown} more" if len(live) > shown else "")
    if refused is None:
        return (f"NOTE: {len(live)} pack(s) of this dry run are still being trained by live jobs, so a run now would refuse to "
                f"start them again: {names}")
    lists = "squeue --me" if any(pack.lease.get("slurm_job_id") for pack in live) else "pgrep -af 'initmem train-plan'"
    return (f"{len(live)} pack(s) are still being trained by live jobs, so this invocation submits nothing: {names}. Run the "
            f"same command again once those jobs have ended ({lists} lists them), or leave those packs out now: {refused}")
