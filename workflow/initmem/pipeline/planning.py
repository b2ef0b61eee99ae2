"""Packs that never change under a finished run: which runs train together, decided once.

A pack's *plan* (``results/plans/<study>/<pack>.json``) lists its members (run id and spec).
Once its pack has started (its trainer writes a started marker, ``<pack>.started`` beside the plan,
before it trains) or finished (its pack file, or the finished pack kept beside the plan,
``<pack>.finished``, exists), the plan is binding: a configured run whose spec equals its entry there
stays in that pack for good, so adding a seed or a sigma_w value, changing ``pack.max_models`` or
``pack.max_images``, or removing runs never moves a finished run into another pack (which would
make Snakemake retrain it), and a measured rate table, ``compute.compile`` or a partition time
limit that would size packs otherwise never regroups a pack in flight (which would orphan its
checkpoints). A configured run whose spec a binding plan holds under another id (a run renamed, e.g.
by a default stated explicitly in a grid list) is reused from that pack too: its metrics file is
cut from the pack's record of that spec. Only the remaining runs are grouped, per configuration, in grid order,
into new packs named after their members. That grouping is also stable while packs finish: taking
whole packs out of a configuration's list leaves the others' boundaries where they were, so a
training job that re-reads the workflow on a cluster node finds its own pack again.

Plans belong to one data identity (the plan's ``data``): an invocation with other data (another
config in the same checkout) neither binds nor rewrites them, and its new packs get other names
(the data identity is part of the name's hash), so going back to the first config trains nothing.
Plans written before plans carried ``data`` bind under any data, as they always did.

Torch-free: the Snakefile calls it on every parse.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from initmem.io import read_json, write_json
from initmem.pipeline.grid import Run, pack_size
from initmem.pipeline.guards import snakemake_command
from initmem.pipeline.targets import fitting_pack_size
from initmem.spec import ConfigError

PLAN_FORMAT = 1


@dataclass(frozen=True)
class Pack:
    """One training job: its name and members as ``(run_id, spec)``; ``bound`` once started or trained."""

    name: str
    members: tuple[tuple[str, dict], ...]
    bound: bool = False


# How the workflow tells :func:`write_plan` the data identity of the plans it writes: the rule that
# writes plans must not change (its code is a rerun trigger), and the identity is no trigger of its
# own (it is already part of every member's key).
DATA_ENV = "INITMEM_DATA_IDENTITY"
# The prepared file of the config's final test images, where its runs' final_test exceeds data.n_test
# (workflow/rules/common.smk sets it; initmem.pipeline.jobs.final_test_splits reads it)
FINAL_TEST_ENV = "INITMEM_FINAL_TEST"


def pack_name(config_id: str, members: list[tuple[str, dict]], data_id: dict | None = None) -> str:
    """``<configuration>-<hash of the members (and the data identity)>``: the same members of the same
    data always give the same name; the same members of other data another one."""
    what = members if data_id is None else [members, data_id]
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:10]
    return f"{config_id}-{digest}"


def plan_path(plans_dir: str | Path, study: str, pack: str) -> Path:
    """Where a pack's plan lives."""
    return Path(plans_dir) / study / f"{pack}.json"


def started_path(plan: str | Path) -> Path:
    """The marker a pack's trainer writes beside its plan before it trains (removed once its pack file is written)."""
    return Path(plan).with_suffix(".started")


def finished_path(plan: str | Path) -> Path:
    """Where a pack's trainer keeps the finished pack beside its plan, out of Snakemake's reach
    (:mod:`initmem.pipeline.finished`)."""
    return Path(plan).with_suffix(".finished")


def read_trained_plans(plans_dir: str | Path, packs_dir: str | Path, study: str, data_id: dict | None = None) -> list[Pack]:
    """Plans of the study's packs that have started (a started marker) or been trained (their pack file, or the finished
    pack kept beside the plan, exists), of the data
    identity ``data_id`` (or of any, for plans that do not say). A damaged plan is skipped: its
    runs are simply planned again."""
    packs = []
    for name, plan in trained_plan_files(plans_dir, packs_dir, study):
        try:
            members = tuple((m["run_id"], m["spec"]) for m in plan["members"])
        except (KeyError, TypeError):
            continue
        if data_id is not None and plan.get("data") not in (None, data_id):
            continue  # another config's data: its packs are neither bound nor touched here
        packs.append(Pack(name, members, bound=True))
    return packs


def trained_plan_files(plans_dir: str | Path, packs_dir: str | Path, study: str) -> list[tuple[str, dict]]:
    """``(pack name, plan)`` of every plan of the study whose pack has started or been trained, of any
    data identity, by name; damaged plans are left out. The workflow reads them to bind packs and again to
    tell other configs' run files apart (:mod:`initmem.pipeline.runfiles`): a few hundred small files at
    paper scale."""
    folder = Path(plans_dir) / study
    if not folder.is_dir():
        return []
    plans = []
    for path in sorted(folder.glob("*.json")):
        name = path.name[: -len(".json")]
        if not (Path(packs_dir) / study / f"{name}.json").is_file() and not started_path(path).is_file() \
                and not finished_path(path).is_file():
            continue
        try:
            plan = read_json(path)
        except (OSError, ValueError):
            continue
        if isinstance(plan, dict):
            plans.append((name, plan))
    return plans


def plan_packs(runs: list[Run], trained: list[Pack], size_of: Callable[[list[Run]], int], data_id: dict | None = None
               ) -> tuple[dict[str, Pack], dict[str, str]]:
    """Every configured run's pack: the trained pack that holds it with the same spec (under its
    id, or else under another id: the same run renamed, reused rather than retrained), or a new
    one. New packs group the remaining runs of one configuration, in grid order, ``size_of(members
    of the configuration)`` at a time. Returns the packs that hold at least one configured run, and
    each configured run's pack name."""
    by_entry = {}
    by_spec = {}
    for pack in trained:
        for run_id, spec in pack.members:
            spec_text = json.dumps(spec, sort_keys=True)
            by_entry.setdefault((run_id, spec_text), pack)
            by_spec.setdefault(spec_text, pack)
    used: dict[str, Pack] = {}
    pack_of: dict[str, str] = {}
    pending: dict[str, list[Run]] = {}
    for run in runs:
        spec_text = json.dumps(run.spec, sort_keys=True)
        # a spec's identity key holds no run id: a spec trained under another id is this very run
        pack = by_entry.get((run.run_id, spec_text)) or by_spec.get(spec_text)
        if pack is not None:
            used[pack.name] = pack
            pack_of[run.run_id] = pack.name
        else:
            pending.setdefault(run.config_id, []).append(run)
    for config_id, members in pending.items():
        size = max(1, size_of(members))
        for i in range(0, len(members), size):
            chunk = [(r.run_id, r.spec) for r in members[i:i + size]]
            name = pack_name(config_id, chunk, data_id)
            used[name] = Pack(name, tuple(chunk))
            pack_of.update((run_id, name) for run_id, _ in chunk)
    return used, pack_of


def new_pack_size(members: list[Run], pack_cfg: dict, compute: dict | None = None) -> int:
    """Runs per new pack of one configuration: ``pack.max_models``, the memory budget
    ``pack.max_images`` (models x batch size) and, with ``compute``, the runtime cap."""
    b = int(members[0].spec["batch_size"])
    if pack_cfg["max_models"] < 1:
        raise ConfigError(f"pack.max_models = {pack_cfg['max_models']} must be >= 1")
    if b > pack_cfg["max_images"]:
        raise ConfigError(f"studies.{members[0].study}: batch_size {b} of {members[0].run_id} exceeds pack.max_images "
                          f"= {pack_cfg['max_images']} (the images one job may hold in a step); raise pack.max_images")
    size = pack_size(b, pack_cfg["max_models"], pack_cfg["max_images"])
    if compute is None:
        return size
    return fitting_pack_size([r.spec for r in members], size, compute, f"studies.{members[0].study}")


def plan_studies(config: dict, runs_by_study: dict[str, list[Run]], plans_dir: str | Path | None = None,
                 packs_dir: str | Path | None = None, data_id: dict | None = None) -> dict[str, tuple[dict[str, Pack], dict[str, str]]]:
    """:func:`plan_packs` for every study of ``config`` (without ``plans_dir``: as if nothing had
    been trained yet, e.g. for estimates and tests); with ``data_id``, only that data's plans bind
    and new packs are named for it."""
    def size_of(members: list[Run]) -> int:
        return new_pack_size(members, config["pack"], config["compute"])

    return {study: plan_packs(runs, read_trained_plans(plans_dir, packs_dir, study, data_id) if plans_dir else [], size_of, data_id)
            for study, runs in runs_by_study.items()}


def make_packs(runs: list[Run], max_models: int, max_images: int, compute: dict | None = None) -> dict[str, list[Run]]:
    """A fresh grouping of one study's runs (nothing trained yet): pack name -> its runs."""
    by_id = {r.run_id: r for r in runs}
    packs, _ = plan_packs(runs, [], lambda m: new_pack_size(m, {"max_models": max_models, "max_images": max_images}, compute))
    return {name: [by_id[run_id] for run_id, _ in pack.members] for name, pack in packs.items()}


def write_plan(path: str | Path, members: list[dict], data_id: dict | None = None) -> None:
    """Write a plan: ``members`` are ``{run_id, spec, key}`` (the key is each run's identity now) and
    ``data_id`` the data identity they train on (default: the workflow's, from :data:`DATA_ENV`)."""
    if data_id is None and os.environ.get(DATA_ENV):
        data_id = json.loads(os.environ[DATA_ENV])
    plan = {"format": PLAN_FORMAT, "members": members}
    if data_id is not None:
        plan["data"] = data_id
    write_json(path, plan)


def read_plan(path: str | Path) -> list[dict]:
    """A plan's members, with a message naming the file when it is damaged."""
    try:
        plan = read_json(path)
        members = plan["members"]
        if plan.get("format") != PLAN_FORMAT or not all({"run_id", "spec", "key"} <= set(m) for m in members):
            raise ValueError("unexpected layout")
        return members
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: damaged pack plan ({exc}); plan the pack anew (it retrains): "
                         f"rm {path} && {snakemake_command(keep_targets=True)}") from exc
