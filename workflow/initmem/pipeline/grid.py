"""Expand the config's studies into run specs with stable, readable ids, and group them into packs.

A study is ``set`` (overrides of ``defaults``), optional ``variants`` (named override sets, crossed
with the grid) and ``grid`` (a cartesian product). A run id names the variant, every grid value
other than sigma_w and seed, then ``sw<sigma_w>`` and ``s<seed>``: e.g. ``adam_b16_sw0.1_s42``.
Runs that differ only in sigma_w and seed share a *configuration* and may be trained in one pack.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from initmem.pipeline.guards import NAME
from initmem.spec import KNOWN_KEYS, ConfigError, resolve_spec, validate_spec

PACKED_AXES = ("sigma_w", "seed")
_ABBREV = {"batch_size": "b", "sigma_w": "sw", "seed": "s", "weight_decay": "wd", "momentum": "mom",
           "epochs": "e", "patience": "pat", "width": "w", "augment": "aug"}
_VALUE_ONLY = {"optimizer", "arch", "norm", "schedule", "weight_decay_mode"}


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _label(key: str, value: Any) -> str:
    text = _fmt(value) if key in _VALUE_ONLY else _ABBREV.get(key, key) + _fmt(value)
    if key == "pool":
        text = f"{value}pool"
    return re.sub(r"[^A-Za-z0-9.\-]", "-", text)


@dataclass(frozen=True)
class Run:
    """One training run: its study, id, configuration id (the id without sigma_w/seed) and full spec."""

    study: str
    run_id: str
    config_id: str
    spec: dict


class OversizedBatch(ConfigError):
    """A batch size larger than data.n_train; ``keys`` is the key path that set it (for the file's name)."""

    def __init__(self, message: str, keys: list):
        super().__init__(message)
        self.keys = keys


def _batch_size_keys(name: str, study: dict, variant: str, grid_index: int | None) -> list:
    """The key path whose value a run's batch_size is: its grid, its variant, the study's set, or defaults."""
    study_keys = ["studies", name]
    if grid_index is not None:
        return study_keys + ["grid"] + ([grid_index] if isinstance(study.get("grid"), list) else []) + ["batch_size"]
    if variant and "batch_size" in (study.get("variants") or {}).get(variant, {}):
        return study_keys + ["variants", variant, "batch_size"]
    if "batch_size" in study.get("set", {}):
        return study_keys + ["set", "batch_size"]
    return ["defaults", "batch_size"]


def _study_grids(name: str, study: dict) -> list[dict]:
    """A study's grid as a list of cartesian products (``grid`` may be one mapping or a list of them)."""
    grids = study.get("grid") or {}
    grids = grids if isinstance(grids, list) else [grids]
    if not grids or not all(grids):
        raise ConfigError(f"studies.{name}: the grid is empty; give at least sigma_w and seed")
    for i, grid in enumerate(grids):
        part = "grid" + (f"[{i}]" if len(grids) > 1 else "")
        where = f"studies.{name}.{part}"
        if not isinstance(grid, dict):
            raise ConfigError(f"{where}: must be a mapping of spec keys to lists, got {grid!r}")
        for key in PACKED_AXES:
            if key not in grid and key not in study.get("set", {}):
                raise ConfigError(f"studies.{name}: {part} needs {key!r} (a list)")
        for key, values in grid.items():
            if key not in KNOWN_KEYS:
                raise ConfigError(f"{where}: unknown key {key!r}; known keys: {list(KNOWN_KEYS)}")
            if not isinstance(values, list) or not values:
                raise ConfigError(f"{where}.{key}: must be a non-empty list, got {values!r}")
        if list(grid) != list(grids[0]):
            # run ids name the grid keys in order, so every part of a union must name the same keys
            raise ConfigError(f"{where}: keys {list(grid)} differ from grid[0]'s {list(grids[0])}; "
                              "every grid of a list must have the same keys in the same order")
    return grids


def expand_study(name: str, study: dict, defaults: dict, data: dict) -> list[Run]:
    """Every run of one study, in a stable order (variants, then each grid in key order).

    ``grid`` is a cartesian product, or a list of them with the same keys (their union: a run that
    two of them name is listed once).
    """
    grids = _study_grids(name, study)
    variants = study.get("variants") or {"": {}}
    keys = list(grids[0])
    label_keys = [k for k in keys if k not in PACKED_AXES]
    runs, seen = [], {}
    for variant, overrides in variants.items():
        for index, grid in enumerate(grids):
            for values in itertools.product(*(grid[k] for k in keys)):
                point = dict(zip(keys, values, strict=True))
                spec = {**defaults, **study.get("set", {}), **overrides, **point}
                where = f"studies.{name}" + (f".variants.{variant}" if variant else "")
                unknown = [k for k in spec if k not in KNOWN_KEYS]
                if unknown:
                    raise ConfigError(f"{where}: unknown keys {unknown}; known keys: {list(KNOWN_KEYS)}")
                validate_spec(spec, where)
                if spec["batch_size"] > data["n_train"]:
                    set_by = _batch_size_keys(name, study, variant, index if "batch_size" in point else None)
                    raise OversizedBatch(f"{'.'.join(map(str, set_by))}: {spec['batch_size']} (in {where}) exceeds data.n_train = "
                                         f"{data['n_train']} (every step would see the whole training set); lower it or raise "
                                         "n_train", set_by)
                spec = resolve_spec(spec)
                spec.update(variant=variant or None, n_train=data["n_train"], n_val=data["n_val"], n_test=data["n_test"])
                config_parts = ([variant] if variant else []) + [_label(k, point[k]) for k in label_keys]
                config_id = "_".join(config_parts) or name
                run_id = "_".join([config_id] + [_label(k, spec[k]) for k in PACKED_AXES])
                if run_id in seen:
                    if len(grids) > 1 and seen[run_id] == spec:
                        continue  # the same run named by two grids of a union
                    raise ConfigError(f"studies.{name}: duplicate run {run_id} (a grid list repeats a value)")
                seen[run_id] = spec
                runs.append(Run(name, run_id, config_id, spec))
    return runs


def expand_studies(config: dict) -> dict[str, list[Run]]:
    """All studies of the config, each a list of :class:`Run`."""
    studies = config.get("studies") or {}
    if not studies:
        raise ConfigError("config has no studies; add at least one under 'studies:'")
    for name, study in studies.items():
        for kind, label in [("study", name)] + [("variant", v) for v in (study or {}).get("variants") or {}]:
            if not isinstance(label, str) or not NAME.match(label):
                raise ConfigError(f"{kind} name {label!r} (studies.{name}): use letters, digits and '_', starting "
                                  "with a letter (names become paths and Snakemake wildcard patterns)")
    return {name: expand_study(name, study, config["defaults"], config["data"]) for name, study in studies.items()}


def pack_size(batch_size: int, max_models: int, max_images: int) -> int:
    """Models per pack: at most ``max_models``, and at most ``max_images`` training images per step
    (models x batch size), the memory budget of one job."""
    return max(1, min(max_models, max_images // batch_size))
