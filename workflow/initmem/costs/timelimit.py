"""The cluster partition's time limit, as the Slurm profile states it (slurm/config.yaml's
``partition_time_limit`` resource of ``train``, the rule that is submitted), capping every training job's time request the way
``compute.max_runtime_minutes`` does: a job asking for more than its partition allows is refused by sbatch.
Torch-free: the Snakefile reads it on every parse."""

from __future__ import annotations

import re
from typing import Any

RESOURCE = "partition_time_limit"
SUBMITTED_RULE = "train"  # the one rule sent to the cluster; every other rule is a localrule
# Slurm's time formats (sbatch --time, sinfo's %l): M, M:S, H:M:S, D-H, D-H:M, D-H:M:S
_SLURM_TIME = re.compile(r"^(?:(?P<d>\d+)-)?(?P<rest>\d+(?::\d+){0,2})$")
UNLIMITED = ("infinite", "unlimited")


def slurm_minutes(value: Any) -> int | None:
    """Whole minutes of a Slurm time (``1440``, ``"1-00:00:00"``, ``"12:00:00"``, ``"90"``); None for
    ``infinite``/``UNLIMITED``. Seconds round down: a request never exceeds the limit."""
    if isinstance(value, bool):
        raise ValueError(f"{RESOURCE} = {value!r}: give the partition's limit in minutes or as Slurm prints it")
    if isinstance(value, (int, float)):
        if value <= 0:
            raise ValueError(f"{RESOURCE} = {value!r} must be > 0 minutes")
        return int(value)
    text = str(value).strip().strip("'\"")
    if text.lower() in UNLIMITED:
        return None
    match = _SLURM_TIME.match(text)
    if not match:
        raise ValueError(f"{RESOURCE} = {value!r}: not a Slurm time (minutes, H:M:S or D-H:M:S, as `sinfo -o \"%P %l\"` prints it)")
    parts = [int(p) for p in match["rest"].split(":")]
    days = int(match["d"] or 0)
    if match["d"] is not None:  # D-H, D-H:M, D-H:M:S
        hours, minutes, seconds = (parts + [0, 0])[:3]
    else:  # M, M:S, H:M:S
        hours, minutes, seconds = {1: (0, *parts, 0), 2: (0, *parts), 3: tuple(parts)}[len(parts)]
    total = days * 1440 + hours * 60 + minutes + seconds // 60
    if total <= 0:
        raise ValueError(f"{RESOURCE} = {value!r} must be at least one minute")
    return total


def submitted_resources(train: list[str], default: list[str]) -> list[str]:
    """The ``name=value`` resources a ``train`` job is submitted with, its own ``--set-resources``
    first (they win over ``--default-resources``, as in Snakemake): where the profile states the
    cluster's keys (partition, account, time limit) and where a command line may still give them."""
    return [*train, *default]


def partition_time_limit(resources: list[str]) -> int | None:
    """The partition's limit in minutes from a ``train`` job's resources (``name=value`` strings,
    :func:`submitted_resources`: the first one stated wins); None where none is stated."""
    for item in resources:
        name, _, value = item.partition("=")
        if name.strip() == RESOURCE:
            return slurm_minutes(int(value) if value.strip().isdigit() else value)
    return None


def capped_compute(compute: dict, limit: int | None) -> dict:
    """``compute`` with ``max_runtime_minutes`` no more than the partition's ``limit`` (unchanged
    where there is no limit or the config's own cap is already lower): what each job asks for, how
    many runs a pack may hold and how many time-limit attempts a run needs all follow from it."""
    if limit is None:
        return compute
    own = compute.get("max_runtime_minutes")
    return {**compute, "max_runtime_minutes": limit if own is None else min(int(own), limit)}


def _items(resources: Any) -> list[str]:
    """A profile's resources (a mapping, or a list of ``name=value`` strings) as ``name=value`` strings."""
    if isinstance(resources, dict):
        return [f"{k}={v}" for k, v in resources.items()]
    return [str(r) for r in resources or ()]


def _rule_items(set_resources: Any, rule: str) -> list[str]:
    """One rule's ``set-resources`` of a profile: ``{rule: {name: value}}`` or ``["rule:name=value", ...]``."""
    if isinstance(set_resources, dict):
        return _items(set_resources.get(rule))
    prefix = f"{rule}:"
    return [str(r)[len(prefix):] for r in set_resources or () if str(r).startswith(prefix)]


def profile_time_limit(profile: dict) -> int | None:
    """The partition's limit a Snakemake profile (its parsed config.yaml) states for ``train``, in
    minutes (its set-resources, else its default-resources); None where none."""
    return partition_time_limit(submitted_resources(_rule_items(profile.get("set-resources"), SUBMITTED_RULE),
                                                    _items(profile.get("default-resources"))))
