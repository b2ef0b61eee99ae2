"""Where the repository's committed folders are, for the commands that read them (``design``, the
calibration, the planner's check): ``evidence/`` and ``benchmarks/``.

A checkout runs the package from ``workflow/initmem``, two folders below its root. An installed copy
(site-packages) has no committed folders beside it: ``INITMEM_ROOT`` names the checkout to read, else the
current directory is taken when it holds ``evidence/``. Nothing here reads a file; a command that finds
no folder says which path it looked for.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_VARIABLE = "INITMEM_ROOT"


def repository() -> Path:
    """The checkout whose committed folders the library reads (see the module docstring)."""
    named = os.environ.get(ROOT_VARIABLE)
    if named:
        return Path(named).resolve()
    package = Path(__file__).resolve().parents[2]
    return package if (package / "evidence").is_dir() or not (Path.cwd() / "evidence").is_dir() else Path.cwd()


ROOT = repository()
EVIDENCE = ROOT / "evidence"
BENCHMARKS = ROOT / "benchmarks"
