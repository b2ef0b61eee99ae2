"""Where training jobs keep what ``torch.compile`` builds: TorchInductor's graphs on shared storage,
warmed by one job per shape, and Triton's GPU kernels on the node's own disk, one folder per job.

TorchInductor caches its compiled graphs under /tmp by default, the node's own disk, so every job of a
cluster would compile its step cold (the device check's quick compile row took 101-143 s) even when
another job compiled the same shapes minutes before. The workflow names one shared root instead:
``results/compile_cache`` (beside the checkpoints, on the file system the project already shares with
the nodes), or the folder ``INITMEM_COMPILE_CACHE`` names (exported before Snakemake starts, or by the
Slurm profile); Inductor's shared cache is its ``inductor`` folder. Inductor keys its entries by torch
version, GPU architecture and graph, and writes them by atomic rename.

**One writer per shape.** Two hundred jobs of the same shapes starting at once would all compile cold
into that one folder together on a network file system. So a job with ``compute.compile`` on first
claims its shape (:func:`shape_key`: the pack's specs but the values that are only tensor contents, its
size, the compile settings and torch's version) under the root's ``warm`` folder
(:func:`inductor_cache`): where ``<shape>.done`` exists the shape is warm and the job reads the shared
cache; else the job that creates ``<shape>.warming`` (exclusively, naming its lease) is the shape's warmer
and compiles into the shared cache; every other job of that shape meanwhile compiles cold into a folder
of its own on the node (``$TMPDIR/initmem-inductor-<job>``, as without a shared cache) and writes nothing
shared. The warmer marks the shape warm once its first epoch has finished (:class:`Warming`: every graph
of a training epoch and its evaluations is built by then); a warmer that ends before that gives its claim
up, and a claim whose job is gone (its pid on this host, its Slurm job by ``squeue``:
:func:`initmem.pipeline.packlock.judge`) is taken over by the next job of the shape. Two jobs taking over
one gone claim at the same moment may both warm: never more writers than jobs racing. Not measured on a
GPU cluster.

Triton's kernel cache stays node-local (:func:`job_compile_environment`): many processes compiling the
same kernels into one Triton cache on a network file system crash (``EBUSY`` from the cache's
``os.removedirs``, ``FileNotFoundError`` or a stale file handle reading back files another node has
just published: triton-lang/triton#11512), and Inductor would otherwise put Triton's cache inside its
own folder. A Slurm job gets ``$TMPDIR/initmem-triton-<job id>`` (the job's own scratch where
the site gives each job one), any other job the user's folder in the node's temporary directory. A
``TORCHINDUCTOR_CACHE_DIR`` or ``TRITON_CACHE_DIR`` the environment already sets is kept (no claim).

Torch-free: the Snakefile applies :func:`compile_cache_environment` on every parse, and a training job
applies :func:`job_compile_environment` and :func:`inductor_cache` to itself before it imports torch.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from threading import Event, Thread

from initmem.io import read_json, write_json
from initmem.pipeline.packlock import GONE, judge, lease_here, needs_squeue, slurm_queue

ROOT_VARIABLE = "INITMEM_COMPILE_CACHE"
DEFAULT_ROOT = Path("results") / "compile_cache"
INDUCTOR_VARIABLE, INDUCTOR_FOLDER = "TORCHINDUCTOR_CACHE_DIR", "inductor"  # shared, under the root
TRITON_VARIABLE = "TRITON_CACHE_DIR"  # node-local, per job
WARM_FOLDER = "warm"  # under the root: <shape>.warming (the warmer's claim), <shape>.done (warm)
CONTENT_KEYS = ("sigma_w", "seed")  # spec values that change only a tensor's contents, never a graph
COMPILE_SETTINGS = ("precision", "compile", "memory_format", "engine", "max_images")  # what else shapes the graphs
WARM_POLL_SECONDS = 10.0  # how often the warmer looks whether its first epoch has finished


def compile_cache_root(env: Mapping[str, str], workdir: Path) -> Path:
    """The shared cache root: ``INITMEM_COMPILE_CACHE`` where set (relative to ``workdir`` if not absolute),
    else ``results/compile_cache`` under ``workdir``; always absolute, so a job on another node finds it."""
    stated = env.get(ROOT_VARIABLE, "").strip()
    root = Path(stated).expanduser() if stated else DEFAULT_ROOT
    return root if root.is_absolute() else Path(os.path.abspath(workdir / root))


def compile_cache_environment(env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """What the Snakefile sets for the training jobs: the shared root (:func:`compile_cache_root`), absolute, unless
    the environment names Inductor's cache itself (then the jobs keep that, and claim nothing)."""
    if env.get(INDUCTOR_VARIABLE, "").strip():
        return {}
    return {ROOT_VARIABLE: str(compile_cache_root(env, workdir))}


def node_local_triton_cache(env: Mapping[str, str]) -> Path:
    """Triton's kernel cache for one training job, on the node's own disk (:func:`node_local_folder`)."""
    return node_local_folder(env, "triton")


def job_compile_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a training job sets for itself before it imports torch: Triton's cache node-local
    (:func:`node_local_triton_cache`), unless the environment names one already."""
    if env.get(TRITON_VARIABLE, "").strip():
        return {}
    return {TRITON_VARIABLE: str(node_local_triton_cache(env))}


def node_local_folder(env: Mapping[str, str], name: str) -> Path:
    """A cache folder of one training job on the node's own disk: ``$TMPDIR`` (else the system's temporary
    directory) / ``initmem-<name>-<Slurm job id>``, or ``initmem-<name>-<user>`` outside Slurm."""
    base = env.get("TMPDIR", "").strip() or tempfile.gettempdir()
    job = env.get("SLURM_JOB_ID", "").strip()
    return Path(base) / f"initmem-{name}-{job or getpass.getuser()}"


def shape_key(members: Sequence[dict], settings: Mapping, torch_version: str | None = None) -> str:
    """The shape a pack compiles: its members' specs without :data:`CONTENT_KEYS`, their number, the
    :data:`COMPILE_SETTINGS` and torch's version, as a short hash (jobs of one key compile the same graphs;
    splitting more finely than Inductor would only costs a cold compile)."""
    specs = sorted(json.dumps({k: v for k, v in m["spec"].items() if k not in CONTENT_KEYS}, sort_keys=True) for m in members)
    version = torch_version if torch_version is not None else metadata.version("torch")
    shape = [specs, len(members), {k: settings.get(k) for k in COMPILE_SETTINGS}, version]
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:16]


def claim_is_gone(claim: dict) -> bool:
    """Whether the job that wrote ``claim`` (a lease: :func:`initmem.pipeline.packlock.lease_here`) is gone."""
    own = os.environ.get("SLURM_JOB_ID")
    queue = slurm_queue([str(claim.get("user", ""))]) if needs_squeue(claim, own) else None
    return judge(claim, queue, own)[0] == GONE


@dataclass(frozen=True)
class Warming:
    """This job's claim to warm a shape: ``claim`` (``<shape>.warming``) and ``done`` (``<shape>.done``)."""

    claim: Path
    done: Path

    def mark_warm(self) -> None:
        """The shape is warm: ``done`` written (atomically), the claim removed."""
        write_json(self.done, read_json(self.claim) if self.claim.is_file() else {})
        self.claim.unlink(missing_ok=True)

    @contextmanager
    def watching(self, epochs_finished: Callable[[], int], poll: float = WARM_POLL_SECONDS) -> Iterator[None]:
        """While the job trains: mark the shape warm as soon as ``epochs_finished()`` reaches 1 (looked at every
        ``poll`` seconds, and once more at the end); a job that ends before its first epoch gives the claim up."""
        stop = Event()

        def watch() -> None:
            while not stop.wait(poll):
                if epochs_finished() >= 1:
                    self.mark_warm()
                    return

        thread = Thread(target=watch, name="initmem-warm-watch", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            if not self.done.is_file() and epochs_finished() >= 1:
                self.mark_warm()
            elif not self.done.is_file():
                self.claim.unlink(missing_ok=True)


def inductor_cache(env: Mapping[str, str], shape: str, workdir: Path,
                   gone: Callable[[dict], bool] = claim_is_gone) -> tuple[dict[str, str], Warming | None, str]:
    """Where a job of ``shape`` with compile on keeps Inductor's graphs: (the variables to set, its
    :class:`Warming` where it is the shape's warmer, one line saying which). Kept as it is where the environment
    names ``TORCHINDUCTOR_CACHE_DIR`` itself; else the shared folder when the shape is warm or this job claims it,
    a node-local folder while another live job warms it (``gone(claim)`` judges a claim's job)."""
    if env.get(INDUCTOR_VARIABLE, "").strip():
        return {}, None, f"Inductor's cache: {env[INDUCTOR_VARIABLE]} (set by the environment)"
    root = compile_cache_root(env, workdir)
    shared, folder = root / INDUCTOR_FOLDER, root / WARM_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    warming = Warming(folder / f"{shape}.warming", folder / f"{shape}.done")
    for _ in range(2):  # a second look after taking over a claim whose job is gone
        if warming.done.is_file():
            return {INDUCTOR_VARIABLE: str(shared)}, None, f"Inductor's cache: {shared} (shape {shape} is warm)"
        try:
            fd = os.open(warming.claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = read_json(warming.claim)
            except (OSError, ValueError):
                holder = None  # being written, or unreadable: its job counts as alive
            if not isinstance(holder, dict) or not gone(holder):
                break
            warming.claim.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as fh:
            json.dump(lease_here(), fh)
        return {INDUCTOR_VARIABLE: str(shared)}, warming, f"Inductor's cache: {shared} (this job warms shape {shape})"
    local = node_local_folder(env, "inductor")
    return ({INDUCTOR_VARIABLE: str(local)}, None,
            f"Inductor's cache: {local}, on this node (another job is warming shape {shape} in {shared}; this one compiles cold)")
