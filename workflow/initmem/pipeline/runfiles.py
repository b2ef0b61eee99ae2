"""Where each run's metrics file lives: ``results/runs/<study>/<run_id>.json``, unless that file
holds another configuration's run of the same id.

Run ids name a run within its config (``sgd_b16_sw0.5_s0``), so two configs in one checkout (the
embedded default and the paper, a config and its edited copy) can give one id to runs with other
specs or other data. Sharing one file, each config's invocation would cut its own record over the
other's, and Snakemake would report ``params have changed`` for it. Instead a configuration (a
run's spec and data identity) whose id's plain file holds another configuration's record keeps its
own beside it, ``<run_id>~<tag>.json``, the tag a hash of its spec and data identity: both records
stay, and each config's files are up to date for it.

Plain paths never move: a config alone in its checkout, or the one whose record the plain file
holds, keeps ``<run_id>.json``. Whose record it is, is read from the file only for ids that a
trained plan of another configuration also names (plans are read anyway to bind packs), so a parse
reads no run file where no ids collide. A run's code or precision is not its configuration: a
change of either retrains the run into the same file (docs/reruns.md).

Torch-free: the Snakefile calls it on every parse.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from initmem.io import read_json
from initmem.pipeline.grid import Run

# Between a run id and its configuration's tag in a file name; never part of a run id (ids are letters,
# digits, '.', '-' and '_': initmem.pipeline.grid).
TAG_SEPARATOR = "~"


def configuration_tag(spec: dict, data_id: dict | None) -> str:
    """A short hash of what tells two runs of one id apart across configs: the spec and the data identity."""
    return hashlib.sha256(json.dumps([spec, data_id], sort_keys=True).encode()).hexdigest()[:8]


def run_of_file(stem: str) -> str:
    """The run id of a metrics file's name (its stem, with or without a configuration's tag)."""
    return stem.split(TAG_SEPARATOR, 1)[0]


def _spec_text(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True)


def other_configurations(runs: Iterable[Run], pack_of: dict[str, str], plans: Iterable[tuple[str, dict]],
                         data_id: dict | None) -> dict[str, set[str]]:
    """For each configured run id that a plan of another configuration names (another spec, or other
    data: a plan without ``data`` is of any), the identity keys that plan gives it. The run's own pack
    is never another configuration's."""
    configured = {run.run_id: _spec_text(run.spec) for run in runs}
    others: dict[str, set[str]] = {}
    for name, plan in plans:
        other_data = plan.get("data") not in (None, data_id)
        for member in plan.get("members") or ():
            run_id = member.get("run_id") if isinstance(member, dict) else None
            if run_id not in configured or pack_of.get(run_id) == name:
                continue
            if other_data or _spec_text(member.get("spec")) != configured[run_id]:
                keys = others.setdefault(run_id, set())
                if isinstance(member.get("key"), str):
                    keys.add(member["key"])
    return others


def _recorded_key(path: Path) -> str | None:
    """The identity key a metrics file carries (None when it is missing or damaged: then it is nobody's)."""
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return None
    return record.get("key") if isinstance(record, dict) else None


def run_file_stems(runs: list[Run], pack_of: dict[str, str], plans: Iterable[tuple[str, dict]], data_id: dict | None,
                   folder: str | Path) -> dict[str, str]:
    """Each configured run's metrics file name (without ``.json``) in ``folder`` (``results/runs/<study>``):
    its run id, or ``<run_id>~<tag>`` where the run id's plain file holds another configuration's
    record, or where this configuration's tagged file exists already (it stays where it was cut).

    ``pack_of`` is each run's pack and ``plans`` the study's trained plans, ``(pack name, plan)``
    (:func:`initmem.pipeline.planning.trained_plan_files`)."""
    folder = Path(folder)
    others = other_configurations(runs, pack_of, plans, data_id)
    stems = {}
    for run in runs:
        stem = run.run_id
        if run.run_id in others:
            tagged = f"{run.run_id}{TAG_SEPARATOR}{configuration_tag(run.spec, data_id)}"
            if (folder / f"{tagged}.json").is_file() or _recorded_key(folder / f"{run.run_id}.json") in others[run.run_id]:
                stem = tagged
        stems[run.run_id] = stem
    return stems
