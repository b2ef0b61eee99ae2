"""Where training jobs keep what ``torch.compile`` builds: TorchInductor's graphs on shared storage,
warmed by one job per shape, and Triton's GPU kernels on the node's own disk, one folder per job.

TorchInductor caches its compiled graphs under /tmp by default, the node's own disk, so every job of a
cluster would compile its step cold (the device check's quick compile row took 101-143 s) even when
another job compiled the same shapes minutes before. The workflow names one shared root instead
(:func:`compile_cache_environment`, in ``INITMEM_COMPILE_CACHE``): ``results/compile_cache`` (beside the
checkpoints, on the file system the project already shares with the nodes), or the folder
``INITMEM_COMPILE_CACHE`` names where it is exported before Snakemake starts; Inductor's shared cache is its
``inductor`` folder. Inductor keys its entries by torch version, GPU architecture and graph, and writes
them by atomic rename. A job that finds no ``INITMEM_COMPILE_CACHE`` (``train-plan`` run by hand) keeps
Inductor's default, and a ``TORCHINDUCTOR_CACHE_DIR`` the environment sets is kept as it is: neither claims
anything.

**One writer per shape.** Two hundred jobs of the same shapes starting at once would all compile cold
into that one folder together on a network file system. So a job with ``compute.compile`` on first
claims its shape under the root's ``warm`` folder (:func:`inductor_cache`); the shape (:func:`shape_key`)
is what decides the graphs, split finely rather than coarsely (a split costs one more cold compile; a
merge would let more writers in): the pack's specs but the values that are only tensor contents
(:data:`CONTENT_KEYS`), its size, the plan's data identity (sizes, resolution), the
:data:`COMPILE_SETTINGS`, torch's version and the node's GPU models (:func:`gpu_models`). Where
``<shape>.done`` exists (and the ``inductor`` folder with it) the shape is warm and the job reads the
shared cache; else the job that creates ``<shape>.warming`` (``O_CREAT | O_EXCL``, holding its lease:
host, pid, user, Slurm job, time) is the shape's warmer and compiles into the shared cache; every other job
of that shape meanwhile compiles cold into a folder of its own on the node
(``$TMPDIR/initmem-inductor-<job>``, as without a shared cache), writes nothing shared, and says so in
one line.

**When a shape is warm.** The warmer writes ``<shape>.done`` (atomically) once it has finished its first
epoch (:class:`Warming`, watching :class:`initmem.engine.loop.EpochsFinished` from a thread of the job,
outside the trainer's modules): the training step, the epoch's evaluations and, with ``train_eval``, the
training-set one are compiled by then. What it costs: every job of the shape that starts before then
compiles cold on its node; the graphs built only later (the kept network's evaluation on the final test
images, ``final_test``) are compiled into the shared folder by the warmer and by whichever readers reach
their end before it, a few writers spread over time, not a wave. A warmer that ends before its first
epoch (failure, time limit, busy pack) gives its claim up (where it still holds it).

**Claims whose job is gone** (:func:`claim_is_gone`) are taken over by the next job of the shape: the
lease's pid on this host, else its Slurm job by one ``squeue`` call
(:func:`initmem.cluster.packlock.judge`). A claim from another host younger than
:data:`CLAIM_FRESH_SECONDS` counts as alive without asking (a wave starting together does not send
Slurm's controller one ``squeue`` per job; a warmer that died that young costs the jobs starting
meanwhile a cold compile); one older than :data:`CLAIM_STALE_SECONDS` is taken over whatever its job (one
that cannot be judged: another host outside Slurm, ``squeue`` failing, a claim left empty; a reused pid),
at worst letting a second writer in. Two jobs taking over one gone claim at the same moment may both
warm: never more writers than jobs racing. A shared root that cannot be read or written leaves the job
on its node's folder; a warmer's failure to write its mark is said in one line, never fails the job.
Not measured on a GPU cluster (no GPU was lent), nor the driver's GPU list read on a GPU node.

Triton's kernel cache stays node-local (:func:`job_compile_environment`): many processes compiling the
same kernels into one Triton cache on a network file system crash (``EBUSY`` from the cache's
``os.removedirs``, ``FileNotFoundError`` or a stale file handle reading back files another node has
just published: triton-lang/triton#11512), and Inductor would otherwise put Triton's cache inside its
own folder. A Slurm job gets ``$TMPDIR/initmem-triton-<job id>`` (the job's own scratch where
the site gives each job one), any other job the user's folder in the node's temporary directory. A
``TRITON_CACHE_DIR`` the environment already sets is kept.

Torch-free: the Snakefile applies :func:`compile_cache_environment` on every parse, and a training job
applies :func:`job_compile_environment` and :func:`inductor_cache` to itself before it imports torch.
"""

from __future__ import annotations

import calendar
import getpass
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from threading import Event, Thread

from initmem.cluster.packlock import GONE, SlurmQueue, judge, lease_here, needs_squeue, slurm_queue
from initmem.io import read_json, write_json

ROOT_VARIABLE = "INITMEM_COMPILE_CACHE"
DEFAULT_ROOT = Path("results") / "compile_cache"
INDUCTOR_VARIABLE, INDUCTOR_FOLDER = "TORCHINDUCTOR_CACHE_DIR", "inductor"  # shared, under the root
TRITON_VARIABLE = "TRITON_CACHE_DIR"  # node-local, per job
WARM_FOLDER = "warm"  # under the root: <shape>.warming (the warmer's claim), <shape>.done (warm)
CONTENT_KEYS = ("sigma_w", "seed")  # spec values that change only a tensor's contents, never a graph
# what else shapes the graphs (device: a CPU job warms nothing for the GPU jobs)
COMPILE_SETTINGS = ("precision", "compile", "memory_format", "engine", "max_images", "device")
GPU_INFO = Path("/proc/driver/nvidia/gpus")  # the NVIDIA driver's <bus id>/information files, one per GPU
WARM_POLL_SECONDS = 10.0  # how often the warmer looks whether its first epoch has finished
CLAIM_FRESH_SECONDS = 30 * 60  # a claim from another host this young is alive: no squeue asked
CLAIM_STALE_SECONDS = 12 * 3600  # a claim this old is taken over, whatever its job: no first epoch takes so long
STAMP = "%Y-%m-%dT%H:%M:%SZ"  # a lease's ``since`` (packlock.lease_here)


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


def gpu_models(folder: Path = GPU_INFO) -> list[str]:
    """The node's NVIDIA GPU models as the driver lists them (the ``Model:`` line of each GPU's ``information``
    file), torch-free; empty where it lists none (a CPU node, no NVIDIA driver)."""
    models = set()
    for info in folder.glob("*/information"):
        try:
            lines = info.read_text().splitlines()
        except OSError:
            continue
        models.update(value.strip() for name, _, value in (line.partition(":") for line in lines) if name.strip() == "Model")
    return sorted(models)


def shape_key(members: Sequence[dict], settings: Mapping, torch_version: str | None = None, data: object = None,
              gpus: Iterable[str] | None = None) -> str:
    """The shape a pack compiles, as a short hash: its members' specs without :data:`CONTENT_KEYS`, their number,
    the plan's ``data`` identity, the :data:`COMPILE_SETTINGS`, torch's version and ``gpus`` (default: this node's,
    :func:`gpu_models`). Jobs of one key compile the same graphs; splitting more finely than Inductor does only costs
    a cold compile."""
    specs = sorted(json.dumps({k: v for k, v in m["spec"].items() if k not in CONTENT_KEYS}, sort_keys=True) for m in members)
    version = torch_version if torch_version is not None else metadata.version("torch")
    gpus = gpu_models() if gpus is None else gpus
    shape = [specs, len(members), data, {k: settings.get(k) for k in COMPILE_SETTINGS}, version, sorted(gpus)]
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:16]


def claim_age(claim: dict, now: float | None = None) -> float | None:
    """Seconds since ``claim`` was made (its ``since``), None where it does not say."""
    try:
        made = calendar.timegm(time.strptime(str(claim["since"]), STAMP))
    except (KeyError, ValueError):
        return None
    return (time.time() if now is None else now) - made


def claim_is_gone(claim: dict, own_job: str | None = None, now: float | None = None,
                  queue: Callable[[list[str]], SlurmQueue] = slurm_queue) -> bool:
    """Whether the job that wrote ``claim`` (a lease: :func:`initmem.cluster.packlock.lease_here`) is gone, so its
    shape may be claimed anew: on this host its pid decides, elsewhere its Slurm job by one ``queue`` call
    (:func:`initmem.cluster.packlock.judge`; ``own_job``: this job's id, whose earlier attempt's claim is gone), but a
    claim from another host younger than :data:`CLAIM_FRESH_SECONDS` is alive without asking, and one older than
    :data:`CLAIM_STALE_SECONDS` is gone whatever its job (one that cannot be judged, a reused pid or job id)."""
    age, asks = claim_age(claim, now), needs_squeue(claim, own_job)
    if age is not None and (age >= CLAIM_STALE_SECONDS or asks and age < CLAIM_FRESH_SECONDS):
        return age >= CLAIM_STALE_SECONDS
    return judge(claim, queue([str(claim.get("user", ""))]) if asks else None, own_job)[0] == GONE


def read_claim(path: Path) -> dict:
    """A claim's lease; one being written or damaged gives only its file's time (``since``, from its mtime), so
    it grows stale too. FileNotFoundError where the claim is gone (given up, or its shape marked warm)."""
    try:
        holder = read_json(path)
    except FileNotFoundError:
        raise
    except (OSError, ValueError):
        holder = None
    holder = holder if isinstance(holder, dict) else {}
    if "since" not in holder:
        holder["since"] = time.strftime(STAMP, time.gmtime(path.stat().st_mtime))
    return holder


def _remove_claim(path: Path, lease: dict | None) -> None:
    """Remove the claim at ``path`` where it is still ``lease`` (a claim another job made meanwhile stays)."""
    try:
        if lease is None or read_claim(path) == lease:
            path.unlink(missing_ok=True)
    except FileNotFoundError:
        pass


@dataclass(frozen=True)
class Warming:
    """This job's claim to warm a shape: ``claim`` (``<shape>.warming``, holding ``lease``) and ``done``
    (``<shape>.done``)."""

    claim: Path
    done: Path
    lease: dict | None = None

    def mark_warm(self) -> None:
        """The shape is warm: ``done`` written (atomically), the claim removed."""
        write_json(self.done, self.lease or {})
        self.claim.unlink(missing_ok=True)

    def give_up(self) -> None:
        """The claim removed, where it is still this job's: the shape's next job warms it."""
        _remove_claim(self.claim, self.lease)

    @contextmanager
    def watching(self, epochs_finished: Callable[[], int], poll: float = WARM_POLL_SECONDS) -> Iterator[None]:
        """While the job trains: mark the shape warm as soon as ``epochs_finished()`` reaches 1 (looked at every
        ``poll`` seconds, and once more at the end); a job that ends before its first epoch gives the claim up.
        A file system error here is said in one line and never fails the job."""
        stop = Event()

        def settle(final: bool) -> bool:
            try:
                if epochs_finished() >= 1:
                    self.mark_warm()
                elif final:
                    self.give_up()
                else:
                    return False
            except OSError as exc:
                print(f"Inductor's cache: could not mark shape {self.done.stem} warm or give its claim up ({exc})",
                      file=sys.stderr, flush=True)
            return True

        def watch() -> None:
            while not stop.wait(poll):
                if settle(final=False):
                    return

        thread = Thread(target=watch, name="initmem-warm-watch", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            if not self.done.is_file():
                settle(final=True)


def inductor_cache(env: Mapping[str, str], shape: str, workdir: Path,
                   gone: Callable[[dict], bool] | None = None) -> tuple[dict[str, str], Warming | None, str]:
    """Where a job of ``shape`` with compile on keeps Inductor's graphs: (the variables to set, its
    :class:`Warming` where it is the shape's warmer, one line saying which). Kept as it is where the environment
    names ``TORCHINDUCTOR_CACHE_DIR`` itself or no shared root (``INITMEM_COMPILE_CACHE``); else the shared folder
    when the shape is warm or this job claims it, a node-local folder while another live job warms it
    (``gone(claim)`` judges a claim's job; default :func:`claim_is_gone`)."""
    if env.get(INDUCTOR_VARIABLE, "").strip():
        return {}, None, f"Inductor's cache: {env[INDUCTOR_VARIABLE]} (set by the environment)"
    if not env.get(ROOT_VARIABLE, "").strip():
        return {}, None, f"Inductor's cache: its default (no {ROOT_VARIABLE}: no shared cache)"
    if gone is None:
        own_job = env.get("SLURM_JOB_ID", "").strip() or None
        gone = lambda claim: claim_is_gone(claim, own_job)
    root = compile_cache_root(env, workdir)
    shared, local = root / INDUCTOR_FOLDER, node_local_folder(env, "inductor")
    try:
        state, warming = _claim(root / WARM_FOLDER, shape, shared, gone)
    except OSError as exc:  # the shared root cannot be read or written: no reason to fail the job
        state, warming = f"could not claim shape {shape} in {root / WARM_FOLDER}: {exc}", None
    if state == "warm":
        return {INDUCTOR_VARIABLE: str(shared)}, None, f"Inductor's cache: {shared} (shape {shape} is warm)"
    if state == "claimed":
        return {INDUCTOR_VARIABLE: str(shared)}, warming, f"Inductor's cache: {shared} (this job warms shape {shape})"
    if state == "busy":
        state = f"another job is warming shape {shape} in {shared}; this one compiles cold"
    return {INDUCTOR_VARIABLE: str(local)}, None, f"Inductor's cache: {local}, on this node ({state})"


def _claim(folder: Path, shape: str, shared: Path, gone: Callable[[dict], bool]) -> tuple[str, Warming | None]:
    """:func:`inductor_cache`'s look at ``shape`` in the ``warm`` ``folder``: ("warm", None) where the shape is
    warm, ("claimed", this job's :class:`Warming`) where this job claimed it, ("busy", None) where another live
    job warms it."""
    folder.mkdir(parents=True, exist_ok=True)
    claim, done = folder / f"{shape}.warming", folder / f"{shape}.done"
    for _ in range(3):  # looked at again after a claim is taken over, or vanishes as it is read
        if done.is_file() and shared.is_dir():
            return "warm", None
        if done.is_file():
            done.unlink(missing_ok=True)  # its graphs were deleted: the shape is warmed anew
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = read_claim(claim)
            except FileNotFoundError:
                continue
            if not gone(holder):
                return "busy", None
            _remove_claim(claim, holder)
            continue
        lease = lease_here()
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(lease, fh)
        except OSError:
            claim.unlink(missing_ok=True)
            raise
        return "claimed", Warming(claim, done, lease)
    return "busy", None
