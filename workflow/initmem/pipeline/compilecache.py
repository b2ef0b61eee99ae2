"""Where training jobs keep what ``torch.compile`` builds: on shared storage, not the node's /tmp.

TorchInductor and Triton cache their compiled graphs and GPU kernels under /tmp by default, the
node's own disk, so every job of a cluster compiles its step cold (the device check's quick compile
row took 101-143 s) even when another job compiled the same shapes minutes before. A job of the
workflow is given one shared cache root instead: ``results/compile_cache/`` (beside the checkpoints,
on the file system the project already shares with the nodes), or the folder
``INITMEM_COMPILE_CACHE`` names (exported before Snakemake starts, or by the Slurm profile). A
``TORCHINDUCTOR_CACHE_DIR`` or ``TRITON_CACHE_DIR`` the environment already sets is kept. Both
caches key their entries by torch version, GPU architecture and the graph, and write them by
atomic rename, so jobs on different nodes can share one folder.

Torch-free: the Snakefile applies it on every parse (:func:`compile_cache_environment`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT_VARIABLE = "INITMEM_COMPILE_CACHE"
DEFAULT_ROOT = Path("results") / "compile_cache"
FOLDERS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}  # variable -> folder under the root


def compile_cache_root(env: Mapping[str, str], workdir: Path) -> Path:
    """The shared cache root: ``INITMEM_COMPILE_CACHE`` where set (relative to ``workdir`` if not absolute),
    else ``results/compile_cache`` under ``workdir``; always absolute, so a job on another node finds it."""
    stated = env.get(ROOT_VARIABLE, "").strip()
    root = Path(stated).expanduser() if stated else DEFAULT_ROOT
    return root if root.is_absolute() else Path(os.path.abspath(workdir / root))


def compile_cache_environment(env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """The cache variables to set for the training jobs: each of :data:`FOLDERS` the environment does
    not set already, as its folder under :func:`compile_cache_root`."""
    root = compile_cache_root(env, workdir)
    return {name: str(root / folder) for name, folder in FOLDERS.items() if not env.get(name, "").strip()}
