"""Run specifications: the names the library knows, resolution of optimizer defaults, validation.

Optimizers, architectures and data sources are registries: one file per entry under
``engine/optimizers/``, ``engine/architectures/`` and ``engine/datasources/``, named by the config
value that selects it. Their names, and the facts about an entry that a config needs (an optimizer's
default decay and momentum, its clock), are read here from the files themselves, without importing
them: the module-level ``UPPER_CASE = <literal>`` assignments of each file (:func:`entry_info`).

Torch-free on purpose: the Snakefile imports this (through :mod:`initmem.pipeline.grid`) on every parse.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent  # the initmem package
# config key -> the folder (under the package) holding one file per value it accepts
REGISTRIES = {"optimizer": "engine/optimizers", "arch": "engine/architectures", "source": "engine/datasources"}


def registry_folder(kind: str) -> Path:
    """The folder of the registry ``kind`` (a key of :data:`REGISTRIES`)."""
    return PACKAGE / REGISTRIES[kind]


def entry_names(kind: str) -> tuple[str, ...]:
    """The entries of a registry: the names of its ``<name>.py`` files (``_private.py`` ones are helpers)."""
    folder = registry_folder(kind)
    try:
        listed = folder.stat().st_mtime_ns  # a file added or removed changes the folder's mtime
    except OSError:
        listed = None
    return _entry_names(folder, listed)


@functools.cache
def _entry_names(folder: Path, listed: int | None) -> tuple[str, ...]:
    """:func:`entry_names` of a folder as it was listed at ``listed`` (its mtime): every spec of a
    paper-scale config checks its optimizer and architecture against these."""
    return tuple(sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")))


@functools.cache
def _literals(path: Path) -> dict[str, Any]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id.isupper():
            try:
                found[targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue  # not a literal: a value the entry computes, not one a config reads
    return found


def entry_info(kind: str, name: str) -> dict[str, Any]:
    """The literal constants of one registry entry's file (read, not imported: no torch)."""
    path = registry_folder(kind) / f"{name}.py"
    if name not in entry_names(kind):
        raise ValueError(f"unknown {kind} {name!r}; choose one of {list(entry_names(kind))}")
    return _literals(path)


ARCHS = entry_names("arch")
NORMS = ("batchnorm", "layernorm")
POOLS = ("max", "avg")
SCHEDULES = ("cosine", "constant")
OPTIMIZERS = entry_names("optimizer")
DATA_SOURCES = entry_names("source")
# Decoupled decay each optimizer applies when the spec says null (its file's WEIGHT_DECAY): the
# paper's 1e-4 for AdamW and Muon (Keras' own default is 0.004), none for the SGD family, Adam and Lion.
DEFAULT_WEIGHT_DECAY = {n: float(w) for n in OPTIMIZERS if (w := entry_info("optimizer", n).get("WEIGHT_DECAY", 0.0))}
DEFAULT_MOMENTUM = {n: float(entry_info("optimizer", n)["MOMENTUM"]) for n in OPTIMIZERS if "MOMENTUM" in entry_info("optimizer", n)}
# The optimizers whose update has a fixed size per coordinate (their file says CLOCK = "T_adapt"): the
# paper's argument gives them the adaptive clock T_adapt = sum eta_k; the others follow T_sgd.
ADAPTIVE = tuple(n for n in OPTIMIZERS if entry_info("optimizer", n).get("CLOCK") == "T_adapt")


def schema_with_registries(schema: Any) -> Any:
    """A JSON schema with every ``{registry: <kind>}`` node given the registry's names as its enum, so
    the schema lists no name by hand: a new entry file is a valid config value at once."""
    if isinstance(schema, dict):
        out = {k: schema_with_registries(v) for k, v in schema.items() if k != "registry"}
        if isinstance(schema.get("registry"), str):
            out["enum"] = list(entry_names(schema["registry"]))
        return out
    if isinstance(schema, list):
        return [schema_with_registries(v) for v in schema]
    return schema

# Keys a run spec has; studies may override any of them ("set", "variants", "grid").
SPEC_KEYS = ("arch", "width", "norm", "pool", "optimizer", "lr", "schedule", "alpha", "epochs",
             "batch_size", "l2", "weight_decay", "momentum", "augment", "patience", "sigma_w", "seed")
# Keys a config may leave out, with the value that applies then. A spec holds them only where they
# differ from it, so adding one changes no existing run's spec (nor, hence, its id or its reruns).
OPTIONAL_SPEC_KEYS = {"weight_decay_mode": "decoupled", "bn_eval": "moving", "train_eval": False, "final_test": 0}
KNOWN_KEYS = SPEC_KEYS + tuple(OPTIONAL_SPEC_KEYS)
# decoupled: Keras' p <- p - eta_k wd p before the update; coupled: g <- g + wd p (PyTorch's
# ``weight_decay``), which momentum and Adam's moments then carry
WEIGHT_DECAY_MODES = ("decoupled", "coupled")
# The BatchNorm statistics every evaluation reads: moving (Keras: the momentum-0.99 averages training
# keeps, which need ~460 steps to forget their start) or precise (recomputed on the training set under
# the weights being evaluated, then the moving ones restored: training itself is unchanged)
BN_EVALS = ("moving", "precise")
# Keras' Adam-family defaults (Adam, AdamW and Muon's AdamW branch)
ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-7


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the study and key."""


def resolve_weight_decay(optimizer: str, weight_decay: float | None) -> float:
    """Decoupled decay actually applied: the spec's value, or the optimizer's own default."""
    return float(DEFAULT_WEIGHT_DECAY.get(optimizer, 0.0) if weight_decay is None else weight_decay)


def resolve_momentum(optimizer: str, momentum: float | None) -> float:
    """Momentum actually used: the spec's value, or the optimizer's own default (0 where it has none)."""
    return float(DEFAULT_MOMENTUM.get(optimizer, 0.0) if momentum is None else momentum)


def resolve_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``spec`` with a null weight_decay or momentum replaced by the value the optimizer
    applies, and optional keys at their default value left out (:data:`OPTIONAL_SPEC_KEYS`)."""
    out = {**spec, "weight_decay": resolve_weight_decay(spec["optimizer"], spec["weight_decay"]),
           "momentum": resolve_momentum(spec["optimizer"], spec["momentum"])}
    for key, default in OPTIONAL_SPEC_KEYS.items():
        if out.get(key, default) == default:
            out.pop(key, None)
    return out


def _choice(spec: dict, key: str, allowed: tuple[str, ...], where: str) -> None:
    if spec[key] not in allowed:
        raise ConfigError(f"{where}: {key} = {spec[key]!r} is unknown; choose one of {list(allowed)}")


def validate_spec(spec: dict[str, Any], where: str) -> None:
    """Check one resolved run spec; ``where`` names the study for the message."""
    missing = [k for k in SPEC_KEYS if k not in spec]
    if missing:
        raise ConfigError(f"{where}: keys {missing} are missing (set them in defaults or the study)")
    _choice(spec, "arch", entry_names("arch"), where)
    _choice(spec, "norm", NORMS, where)
    _choice(spec, "pool", POOLS, where)
    _choice(spec, "schedule", SCHEDULES, where)
    _choice(spec, "optimizer", entry_names("optimizer"), where)
    if spec.get("weight_decay_mode", "decoupled") not in WEIGHT_DECAY_MODES:
        raise ConfigError(f"{where}: weight_decay_mode = {spec['weight_decay_mode']!r} is unknown; "
                          f"choose one of {list(WEIGHT_DECAY_MODES)}")
    if spec.get("bn_eval", "moving") not in BN_EVALS:
        raise ConfigError(f"{where}: bn_eval = {spec['bn_eval']!r} is unknown; choose one of {list(BN_EVALS)}")
    if not isinstance(spec.get("train_eval", False), bool):
        raise ConfigError(f"{where}: train_eval = {spec['train_eval']!r} must be true or false")
    final_test = spec.get("final_test", 0)
    if isinstance(final_test, bool) or not isinstance(final_test, int) or final_test < 0:
        raise ConfigError(f"{where}: final_test = {final_test!r} must be an integer >= 0 (test images the selected "
                          "network is evaluated on once after training; 0: off)")
    positive = {"width": int, "epochs": int, "batch_size": int, "lr": float, "sigma_w": float}
    for key, kind in positive.items():
        value = spec[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or (kind is int and int(value) != value):
            raise ConfigError(f"{where}: {key} = {value!r} must be a positive {kind.__name__}")
    for key in ("l2", "alpha"):
        if not isinstance(spec[key], (int, float)) or spec[key] < 0:
            raise ConfigError(f"{where}: {key} = {spec[key]!r} must be a number >= 0")
    for key in ("weight_decay", "momentum", "patience"):
        if spec[key] is not None and (not isinstance(spec[key], (int, float)) or spec[key] < 0):
            raise ConfigError(f"{where}: {key} = {spec[key]!r} must be null or a number >= 0")
    if not isinstance(spec["seed"], int) or isinstance(spec["seed"], bool):
        raise ConfigError(f"{where}: seed = {spec['seed']!r} must be an integer")
    if not isinstance(spec["augment"], bool):
        raise ConfigError(f"{where}: augment = {spec['augment']!r} must be true or false")
