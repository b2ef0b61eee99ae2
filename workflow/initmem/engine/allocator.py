"""How a training process's host allocator treats the memory it frees: a training job keeps it for
its next step (:func:`keep_freed_host_memory`), where glibc would hand large blocks back to the
kernel and fault them in afresh every step (on CPU, a third of a width-64 Adam step:
benchmarks/engine_vs_pytorch.md).

Not trainer code (not part of a run's identity key): the arithmetic is untouched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4


def keep_freed_host_memory() -> bool:
    """Have this process's allocator keep what it frees for reuse: no heap trimming and no separate
    mappings for large blocks (glibc's ``mallopt``), so a training step's tensors reuse the pages the
    previous step freed instead of faulting fresh zeroed ones in. The process keeps its peak host
    memory until it exits (what its ``mem_mb`` request is sized for); the arithmetic is untouched.
    Returns whether it applied (False without glibc, e.g. macOS or musl)."""
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None) if name else None
    if mallopt is None:
        return False
    return bool(mallopt(M_TRIM_THRESHOLD, 2**31 - 1)) and bool(mallopt(M_MMAP_MAX, 0))
