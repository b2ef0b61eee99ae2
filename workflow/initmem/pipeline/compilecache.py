"""Where training jobs keep what ``torch.compile`` builds: TorchInductor's graphs on shared storage,
Triton's GPU kernels on the node's own disk, one folder per job.

TorchInductor caches its compiled graphs under /tmp by default, the node's own disk, so every job of a
cluster would compile its step cold (the device check's quick compile row took 101-143 s) even when
another job compiled the same shapes minutes before. A job of the workflow is given one shared
Inductor cache instead: ``results/compile_cache/inductor`` (beside the checkpoints, on the file system
the project already shares with the nodes), or ``inductor`` under the folder ``INITMEM_COMPILE_CACHE``
names (exported before Snakemake starts, or by the Slurm profile). Inductor keys its entries by torch
version, GPU architecture and graph, and writes them by atomic rename.

Triton's kernel cache stays node-local (:func:`job_compile_environment`): many processes compiling the
same kernels into one Triton cache on a network file system crash (``EBUSY`` from the cache's
``os.removedirs``, ``FileNotFoundError`` or a stale file handle reading back files another node has
just published: triton-lang/triton#11512), and Inductor would otherwise put Triton's cache inside its
own shared folder. A Slurm job gets ``$TMPDIR/initmem-triton-<job id>`` (the job's own scratch where
the site gives each job one), any other job the user's folder in the node's temporary directory. A
``TORCHINDUCTOR_CACHE_DIR`` or ``TRITON_CACHE_DIR`` the environment already sets is kept.

Torch-free: the Snakefile applies :func:`compile_cache_environment` on every parse, and a training job
applies :func:`job_compile_environment` to itself before it imports torch.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

ROOT_VARIABLE = "INITMEM_COMPILE_CACHE"
DEFAULT_ROOT = Path("results") / "compile_cache"
FOLDERS = {"TORCHINDUCTOR_CACHE_DIR": "inductor"}  # shared caches: variable -> folder under the root
TRITON_VARIABLE = "TRITON_CACHE_DIR"  # node-local, per job


def compile_cache_root(env: Mapping[str, str], workdir: Path) -> Path:
    """The shared cache root: ``INITMEM_COMPILE_CACHE`` where set (relative to ``workdir`` if not absolute),
    else ``results/compile_cache`` under ``workdir``; always absolute, so a job on another node finds it."""
    stated = env.get(ROOT_VARIABLE, "").strip()
    root = Path(stated).expanduser() if stated else DEFAULT_ROOT
    return root if root.is_absolute() else Path(os.path.abspath(workdir / root))


def compile_cache_environment(env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """The shared cache variables to set for the training jobs: each of :data:`FOLDERS` the environment
    does not set already, as its folder under :func:`compile_cache_root`."""
    root = compile_cache_root(env, workdir)
    return {name: str(root / folder) for name, folder in FOLDERS.items() if not env.get(name, "").strip()}


def node_local_triton_cache(env: Mapping[str, str]) -> Path:
    """Triton's kernel cache for one training job, on the node's own disk: ``$TMPDIR`` (else the system's
    temporary directory) / ``initmem-triton-<Slurm job id>``, or ``initmem-triton-<user>`` outside Slurm."""
    base = env.get("TMPDIR", "").strip() or tempfile.gettempdir()
    job = env.get("SLURM_JOB_ID", "").strip()
    return Path(base) / f"initmem-triton-{job or getpass.getuser()}"


def job_compile_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a training job sets for itself before it imports torch: Triton's cache node-local
    (:func:`node_local_triton_cache`), unless the environment names one already."""
    if env.get(TRITON_VARIABLE, "").strip():
        return {}
    return {TRITON_VARIABLE: str(node_local_triton_cache(env))}
