"""Expand the config's studies into run specs with stable, readable ids, and group them into packs.

A study is ``set`` (overrides of ``defaults``), optional ``variants`` (named override sets, crossed
with the grid) and ``grid`` (a cartesian product, or a list of them). A run id names the variant,
every value of its own grid other than sigma_w and seed, then ``sw<sigma_w>`` and ``s<seed>``:
e.g. ``adam_b16_sw0.1_s42``.
Runs that differ only in sigma_w and seed share a *configuration* and may be trained in one pack.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from initmem.pipeline.guards import NAME
from initmem.spec import KNOWN_KEYS, ConfigError, entry_info, resolve_spec, validate_spec

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


def _grid_part(index: int, count: int) -> str:
    """How messages name a study's grid: ``grid``, or ``grid[i]`` in a list of them."""
    return "grid" + (f"[{index}]" if count > 1 else "")


def _check_grid(name: str, study: dict, grid: Any, part: str) -> None:
    """One cartesian product: a mapping of known spec keys to non-empty lists without a repeated value."""
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
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise ConfigError(f"{where}.{key}: the value {repeated[0]!r} is listed twice; list each value once")


def _study_grids(name: str, study: dict) -> list[dict]:
    """A study's grid as a list of cartesian products (``grid`` may be one mapping or a list of them)."""
    grids = study.get("grid") or {}
    grids = grids if isinstance(grids, list) else [grids]
    if not grids or not all(grids):
        raise ConfigError(f"studies.{name}: the grid is empty; give at least sigma_w and seed")
    for index, grid in enumerate(grids):
        _check_grid(name, study, grid, _grid_part(index, len(grids)))
    return grids


def _run_spec(name: str, study: dict, variant: str, point: dict, index: int, defaults: dict, data: dict) -> dict:
    """The resolved spec of one grid point of one variant, checked."""
    overrides = (study.get("variants") or {}).get(variant, {})
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
    source = data.get("source", "torchvision")
    if spec.get("final_test", 0) > data["n_test"] and entry_info("source", source).get("ORIGIN") is None:
        raise ConfigError(f"{where}: final_test = {spec['final_test']} exceeds data.n_test = {data['n_test']}, and data.source "
                          f"{source} draws its test images anew for each size (no fixed split to take the first of); "
                          "keep final_test <= n_test")
    spec = resolve_spec(spec)
    spec.update(variant=variant or None, n_train=data["n_train"], n_val=data["n_val"], n_test=data["n_test"])
    return spec


def final_test_size(runs: dict[str, list[Run]], data: dict) -> int:
    """How many of the test split's first images the config's runs evaluate their selected network on
    beyond the prepared data's ``n_test`` (the largest ``final_test``; 0 when none exceeds ``n_test``)."""
    most = max((int(r.spec.get("final_test", 0)) for study in runs.values() for r in study), default=0)
    return most if most > int(data["n_test"]) else 0


def _named_run(name: str, variant: str, point: dict, spec: dict) -> Run:
    """A run named by its variant and its own grid's values (in the grid's key order), then sigma_w and seed."""
    config_parts = ([variant] if variant else []) + [_label(k, v) for k, v in point.items() if k not in PACKED_AXES]
    config_id = "_".join(config_parts) or name
    run_id = "_".join([config_id] + [_label(k, spec[k]) for k in PACKED_AXES])
    return Run(name, run_id, config_id, spec)


def _configuration(spec: dict) -> tuple:
    """A spec without sigma_w and seed, comparable and hashable (what one configuration id must name)."""
    return tuple(sorted((k, v) for k, v in spec.items() if k not in PACKED_AXES))


class _Names:
    """The runs a study has named so far. A spec that an earlier grid of a list named is left out
    (listed once, under the first id); an id may name one spec only, and a configuration id one
    configuration."""

    def __init__(self, study: str):
        self.study = study
        self.part_of_spec: dict[tuple, str] = {}
        self.part_of_id: dict[str, str] = {}
        self.configuration_of: dict[str, tuple[tuple, str]] = {}

    def is_new(self, run: Run, part: str, one_grid: bool) -> bool:
        """Whether ``run`` is to be listed: False where an earlier grid named its spec. Within
        ``one_grid`` distinct values give distinct specs, and only ids need checking (fast: the
        paper's 6,250 runs of one grid are expanded on every parse)."""
        if not one_grid and not self._first_naming(run, part):
            return False
        if run.run_id in self.part_of_id:
            self._clash(run.run_id, part, self.part_of_id[run.run_id])
        self.part_of_id[run.run_id] = part
        return True

    def _first_naming(self, run: Run, part: str) -> bool:
        """Whether no earlier grid named ``run``'s spec; its configuration id must name one configuration."""
        spec_key = tuple(sorted(run.spec.items()))
        if self.part_of_spec.setdefault(spec_key, part) != part:
            return False
        configuration = _configuration(run.spec)
        earlier_configuration, earlier = self.configuration_of.setdefault(run.config_id, (configuration, part))
        if configuration != earlier_configuration:
            self._clash(run.config_id + "_...", part, earlier)
        return True

    def _clash(self, name: str, part: str, earlier: str) -> None:
        where = f"studies.{self.study}"
        if part == earlier:
            raise ConfigError(f"{where}.{part}: two different runs would be named {name}; give values that print "
                              "differently (ids show 6 significant digits)")
        raise ConfigError(f"{where}: {part} would name {name} as {earlier} does, for different specs; add the key "
                          "that tells them apart to one of the two grids")


def expand_study(name: str, study: dict, defaults: dict, data: dict) -> list[Run]:
    """Every run of one study, in a stable order (variants, then each grid in key order).

    ``grid`` is a cartesian product, or a list of them (their union). Each grid names its runs by
    its own keys, so appending a grid to a list renames no run of the grids before it; a spec that
    two grids name is listed once, under the id of the first.
    """
    grids = _study_grids(name, study)
    names = _Names(name)
    runs = []
    for variant in study.get("variants") or {"": {}}:
        for index, grid in enumerate(grids):
            part = _grid_part(index, len(grids))
            for values in itertools.product(*grid.values()):
                point = dict(zip(grid, values, strict=True))
                run = _named_run(name, variant, point, _run_spec(name, study, variant, point, index, defaults, data))
                if names.is_new(run, part, one_grid=len(grids) == 1):
                    runs.append(run)
    return runs


def check_two_sigmas(runs_by_study: dict[str, list[Run]]) -> None:
    """Every configuration needs two sigma_w values or more where spreads and |beta| are computed:
    a spread (max - min over sigma_w) and |beta| (the slope over sigma_w) compare runs across them.
    Training alone (the ``runs`` target) needs no such check."""
    for study, runs in runs_by_study.items():
        sigmas: dict[str, set] = {}
        for run in runs:
            sigmas.setdefault(run.config_id, set()).add(run.spec["sigma_w"])
        for config_id, values in sigmas.items():
            if len(values) < 2:
                raise ConfigError(f"studies.{study}: configuration {config_id} has one sigma_w ({next(iter(values))!r}); its "
                                  "spread and |beta| compare runs across sigma_w: list at least two values (or build only "
                                  "its runs: the target runs)")


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
