"""The registries' entries, imported by name when a run is built (the names themselves are read
torch-free by :mod:`initmem.spec`): ``load_entry("optimizer", "lion")`` is
``initmem.engine.optimizers.lion``."""

from __future__ import annotations

import importlib
from types import ModuleType

from initmem.spec import REGISTRIES, entry_names


def load_entry(kind: str, name: str) -> ModuleType:
    """The module of the registry entry ``name`` of ``kind`` (optimizer, arch, source); a clear
    error naming the known entries when there is no such file."""
    known = entry_names(kind)
    if name not in known:
        raise ValueError(f"unknown {kind} {name!r}; choose one of {list(known)}")
    return importlib.import_module("initmem." + REGISTRIES[kind].replace("/", ".") + "." + name)
