"""The committed tiers, one registry: every folder under ``evidence/`` that holds ``tables/runs.csv`` and
``config.resolved.yaml`` is a trained tier (a pilot's folder holds neither). The lists of tiers elsewhere
(the calibration's designs, the planner's check, the collapse calibration, the familywise error) read
this one, so a new tier is a new folder, not edits (docs/extending.md, "A tier").

What each tier says, read from its folder:

- ``folder``: its folder's name under ``evidence/`` (``jpeg-cifar10-small``);
- ``name``: its short name, ``<config name>-tier`` (``small-tier``): the ``name:`` of its
  ``config.resolved.yaml``, else its folder's last ``-`` part;
- ``config``: the config it trained, the first file of the ``# configfiles:`` line that heads its
  ``config.resolved.yaml``;
- ``roles``: what else reads it beyond every tier's lists (:data:`ROLES`), none by default.

What the folder cannot say stands in an optional ``tier.yaml`` beside them (its keys: :data:`KEYS`):
``name`` or ``config`` (where the resolved config predates those lines), ``roles``, ``order`` (the tiers'
order: the order they were trained; a tier without one comes after those with one, by folder name)
and ``planner_check`` (its place in the planner check's table, whose rows predate this registry;
without one: after those with one, in the tiers' order). Reading is cheap (no table is opened).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from initmem import paths

TIER_FILE = "tier.yaml"
KEYS = ("name", "config", "roles", "order", "planner_check")
ROLES = {
    "collapse-calibration": "its plain configurations calibrate the collapse rule (initmem.planner.collapse_calibration)",
    "familywise": "the tier whose tested family the familywise error simulates (initmem.planner.familywise; one tier)",
}
CONFIGFILES = re.compile(r"^#\s*configfiles:\s*(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Tier:
    """One trained tier (see the module docstring)."""

    folder: str
    name: str
    config: str
    roles: tuple[str, ...]
    order: float
    planner_check: float
    path: Path


def is_tier(folder: Path) -> bool:
    """A trained tier's folder: its runs table and the config it resolved."""
    return (folder / "tables" / "runs.csv").is_file() and (folder / "config.resolved.yaml").is_file()


def read(folder: Path) -> Tier:
    """The tier in ``folder`` (:func:`is_tier`), from its ``config.resolved.yaml`` and its ``tier.yaml`` if any."""
    resolved_text = (folder / "config.resolved.yaml").read_text()
    resolved = yaml.safe_load(resolved_text) or {}
    own = (yaml.safe_load((folder / TIER_FILE).read_text()) or {}) if (folder / TIER_FILE).is_file() else {}
    if unknown := sorted(set(own) - set(KEYS)):
        raise ValueError(f"{folder / TIER_FILE}: unknown keys {unknown}; expected some of {list(KEYS)}")
    roles = tuple(own.get("roles") or ())
    if unknown := sorted(set(roles) - set(ROLES)):
        raise ValueError(f"{folder / TIER_FILE}: unknown roles {unknown}; expected some of {sorted(ROLES)}")
    listed = CONFIGFILES.search(resolved_text)
    config = own.get("config") or (listed and listed.group(1))
    if not config:
        raise ValueError(f"{folder}: no config named (its config.resolved.yaml has no '# configfiles:' line): "
                         f"say it in {TIER_FILE} ('config: config/<file>.yaml')")
    name = own.get("name") or f"{resolved.get('name') or folder.name.rsplit('-', 1)[-1]}-tier"
    return Tier(folder.name, str(name), str(config), roles, float(own.get("order", float("inf"))),
                float(own.get("planner_check", float("inf"))), folder)


def tiers(evidence: Path | None = None) -> tuple[Tier, ...]:
    """Every trained tier under ``evidence`` (default: the checkout's, :data:`initmem.paths.EVIDENCE`), in the tiers' order."""
    root = paths.EVIDENCE if evidence is None else Path(evidence)
    found = [read(p) for p in sorted(root.iterdir()) if p.is_dir() and is_tier(p)] if root.is_dir() else []
    return tuple(sorted(found, key=lambda t: (t.order, t.folder)))


def planner_order(evidence: Path | None = None) -> tuple[Tier, ...]:
    """The tiers in the planner check's order (``planner_check``, then the tiers' order)."""
    every = tiers(evidence)
    return tuple(sorted(every, key=lambda t: (t.planner_check, every.index(t))))


def with_role(role: str, evidence: Path | None = None) -> tuple[Tier, ...]:
    """The tiers with ``role`` (:data:`ROLES`), in the tiers' order."""
    if role not in ROLES:
        raise ValueError(f"unknown tier role {role!r}: expected one of {sorted(ROLES)}")
    return tuple(t for t in tiers(evidence) if role in t.roles)


def the_one(role: str, evidence: Path | None = None) -> Tier:
    """The single tier with ``role``; an error naming them where there is none or more than one."""
    found = with_role(role, evidence)
    if len(found) != 1:
        raise ValueError(f"expected one tier with role {role!r} in {TIER_FILE}, found {len(found)}: {[t.folder for t in found]}")
    return found[0]


def by_folder(folder: str, evidence: Path | None = None) -> Tier:
    """The tier whose folder under ``evidence/`` is ``folder``."""
    for t in tiers(evidence):
        if t.folder == folder:
            return t
    raise ValueError(f"no trained tier evidence/{folder} (a folder with tables/runs.csv and config.resolved.yaml)")
