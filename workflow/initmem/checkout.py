"""Which checkout's code ``python -m initmem`` runs: the guard against the venv's editable install.

The venv's editable install points at the checkout that made the venv; ``.venv/bin/python -m initmem``
started in another checkout (a worktree sharing that venv) without ``PYTHONPATH=workflow`` would run the
other checkout's code and say nothing. Torch-free: it runs before any command is parsed.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _pythonpath(value: str | None) -> set[Path]:
    """The folders a ``PYTHONPATH`` value names, resolved (empty entries mean none)."""
    return {Path(p).resolve() for p in (value or "").split(os.pathsep) if p}


def _interpreter(cwd: Path) -> str:
    """This Python as the user would type it in ``cwd`` (``.venv/bin/python`` inside it)."""
    try:
        return str(Path(sys.executable).relative_to(cwd))
    except ValueError:
        return sys.executable


def foreign_checkout(cwd: Path, args: list[str], package: Path = PACKAGE, pythonpath: str | None = None) -> str | None:
    """One line when ``cwd`` is an initmem checkout (it holds ``workflow/initmem/__init__.py``) whose
    package is not the one imported, and ``PYTHONPATH`` did not name the imported one; else None.
    A Snakemake job names its library with ``PYTHONPATH`` (workflow/rules/*.smk), whatever its
    working folder, so the guard never stops one."""
    own = cwd / "workflow" / "initmem"
    if not (own / "__init__.py").is_file() or own.resolve() == package or package.parent in _pythonpath(pythonpath):
        return None
    command = shlex.join([_interpreter(cwd), "-m", "initmem", *args])
    return (f"initmem: this checkout is {cwd}, but python imported initmem from {package} (where the venv's editable "
            f"install points), which is not this checkout's code; run: PYTHONPATH=workflow {command}")


def check_checkout(args: list[str]) -> None:
    """Exit 2 with :func:`foreign_checkout`'s line when the code imported is another checkout's."""
    line = foreign_checkout(Path.cwd(), args, PACKAGE, os.environ.get("PYTHONPATH"))
    if line:
        print(line, file=sys.stderr)
        sys.exit(2)
