"""What a registry entry costs, as the cost model reads it: the family whose measured training rate an
optimizer shares, and an entry's cost-model numbers, from the entry's file or derived from it, so
that a new file needs no second list anywhere.

An entry file may declare, as module-level literals (read without importing it, :func:`initmem.spec.entry_info`):

- ``RATE_FAMILY``: the family whose measured training rate it shares, ``"sgd"``, ``"adam"`` or
  ``"muon"`` (optimizers; default: ``"muon"`` where it orthogonalises, ``"adam"`` on the adaptive
  clock, else ``"sgd"``);
- the cost-model numbers :mod:`initmem.costs.rates` and :mod:`initmem.pipeline.targets` name
  (architectures: ``PARAMS_AT_WIDTH_64``, ``ACTIVATION_MB_PER_IMAGE``, ...).

In no run's key: an edit here retrains nothing. Torch-free: the estimate and the planner read it.
"""

from __future__ import annotations

from typing import Any

from initmem.spec import REGISTRIES, ConfigError, entry_info

RATE_FAMILIES = ("sgd", "adam", "muon")


def entry_fact(kind: str, name: str, key: str, shipped: dict[str, Any]) -> Any:
    """``key`` of registry entry ``name`` (a cost-model number): its file's literal, else the value
    ``shipped`` holds for an entry the repository ships (kept beside the code that uses it, as
    :data:`PAPER_LOOK` is); an error naming the file and the constant to add where neither has it."""
    own = entry_info(kind, name).get(key)
    if own is not None:
        return own
    if name in shipped:
        return shipped[name]
    raise ConfigError(f"{REGISTRIES[kind]}/{name}.py: give {key} (a module-level literal; docs/extending.md says what it is)")


def rate_family(optimizer: str) -> str:
    """The family whose training rate ``optimizer`` shares (:mod:`initmem.costs.rates`): its file's
    RATE_FAMILY, else derived from what it does: an orthogonalising step costs Muon's, an adaptive one
    Adam's (Lion: one buffer and a sign, cheaper, so Adam's is the conservative stand-in), else SGD's."""
    info = entry_info("optimizer", optimizer)
    found = info.get("RATE_FAMILY") or ("muon" if info.get("ORTHOGONALISES") else "adam" if info.get("CLOCK") == "T_adapt" else "sgd")
    if found not in RATE_FAMILIES:
        raise ValueError(f"engine/optimizers/{optimizer}.py: RATE_FAMILY = {found!r}; choose one of {list(RATE_FAMILIES)}")
    return found
