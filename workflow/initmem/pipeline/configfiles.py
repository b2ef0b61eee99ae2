"""Read, layer and check config files as the workflow and ``python -m initmem`` use them (torch-free).

Layering: the embedded default (config/config.yaml) first, then each config file in order, merged
key by key as Snakemake merges ``--configfile``s, except ``studies``: a file that defines studies
replaces the studies so far as a whole, so the default's demo studies never leak into a paper run.
Numbers are read as YAML 1.2 reads them (``1e-3`` is a number, where PyYAML's YAML 1.1 makes it a
string). Every error is one line naming the file (and line) or the config key.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from initmem import paths
from initmem.spec import ConfigError, schema_with_registries

REPLACED_WHOLE = ("studies",)
DEFAULT_CONFIG = paths.ROOT / "config" / "config.yaml"  # the repository root
SCHEMA = DEFAULT_CONFIG.with_name("schema.yaml")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 floats: ``1e-3`` and ``1E5`` are numbers, not strings."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def read_yaml(path: str | Path) -> dict:
    """One config file as a mapping; a malformed or unreadable file is one line with its name and line."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror})") from None
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        text = " ".join(str(getattr(exc, "problem", None) or exc).split())
        if getattr(exc, "context", None):
            text += f" ({exc.context}" + (f" at line {context_mark.line + 1}" if context_mark else "") + ")"
        raise ConfigError(f"{where}: not valid YAML: {text}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of sections (data, defaults, studies, ...), "
                          f"got {type(data).__name__}")
    return data


TARGET_WORDS = ("all", "runs", "tables", "figures", "data")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def check_configfile_arg(path: str | Path) -> None:
    """One ``--configfile`` value of a Snakemake command line, before Snakemake reads it (it names
    neither file nor cause): a target given after ``--configfile`` (Snakemake reads every value up to
    the next option as a config file), an unreadable, non-text, non-YAML or empty file is one line."""
    path = Path(path)
    target = (str(path) in TARGET_WORDS or path.suffix in (".pdf", ".png", ".csv", ".md", ".gz")
              or (not path.exists() and path.suffix not in CONFIG_SUFFIXES))
    if target:
        raise ConfigError(f"{path}: given after --configfile, where Snakemake reads it as a config file; put targets before "
                          f"--configfile (snakemake {path} --configfile FILE ...)")
    try:
        data = read_yaml(path)
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file, so not a config file (a target after --configfile? put it before)") from None
    if not data:
        raise ConfigError(f"{path}: an empty config file (it changes nothing: give a file with data, defaults, studies, ... or none)")


def layer(base: Mapping, override: Mapping) -> dict:
    """``override`` merged over ``base`` key by key; the sections in :data:`REPLACED_WHOLE` are replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if key in REPLACED_WHOLE or not isinstance(value, Mapping) or not isinstance(merged.get(key), Mapping):
            merged[key] = copy.deepcopy(value)
        else:
            merged[key] = _merge(merged[key], value)
    return merged


def _merge(base: Mapping, override: Mapping) -> dict:
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else copy.deepcopy(value)
    return out


def load_config(files: Iterable[str | Path], overrides: Mapping | None = None, default: str | Path = DEFAULT_CONFIG,
                schema: str | Path | None = SCHEMA) -> dict:
    """The default, each file of ``files`` and ``overrides`` (Snakemake's ``--config``) layered, then
    checked against ``schema``; a :class:`ConfigError` names the file that set a bad key."""
    layers = [(str(default), read_yaml(default))] + [(str(f), read_yaml(f)) for f in files]
    if overrides:
        layers.append(("--config", dict(overrides)))
    config: dict = {}
    for _, data in layers:
        config = layer(config, data)
    if schema is not None:
        check_schema(config, schema, layers)
        _check_batch_sizes(config, layers)
    return config


def _check_batch_sizes(config: dict, layers: list[tuple[str, dict]]) -> None:
    """A batch size larger than data.n_train, named with the files that set it and n_train (the
    grid's other errors name no file: they are raised again, unchanged, where the workflow expands it)."""
    from initmem.pipeline.grid import OversizedBatch, expand_studies

    try:
        expand_studies(config)
    except OversizedBatch as exc:
        raise ConfigError(f"{exc} (batch_size set in {_source(exc.keys, layers)}, "
                          f"n_train in {_source(['data', 'n_train'], layers)})") from None
    except (ConfigError, KeyError, TypeError):
        return  # another error, raised as it is where the workflow expands the studies


def check_schema(config: dict, schema: str | Path, layers: list[tuple[str, dict]] = ()) -> None:
    """Validate against the JSON schema; the error is one line naming the key (and the file that set it)."""
    import jsonschema

    schema_doc = schema_with_registries(read_yaml(schema))  # the registries' names as enums
    validator = jsonschema.Draft202012Validator(schema_doc)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    keys = list(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
        keys.append(extra[0] if extra else "?")
        known = ", ".join(error.schema.get("properties", {}))
        message = f"unknown key{f'; known keys: {known}' if known else ''}"
    elif error.validator == "required":
        message = error.message.replace("'", "") + " (give it in a config file)"
    else:
        message = " ".join(error.message.split())
        if len(message) > 200:
            message = message[:200] + " ..."
    name = ".".join(str(k) for k in keys) or "(top level)"
    source = _source(keys, layers)
    raise ConfigError(f"{name}: {message}" + (f" (set in {source})" if source else ""))


def _source(keys: list, layers: list[tuple[str, dict]]) -> str | None:
    """The last layer that sets the key path ``keys`` (the one whose value counts)."""
    for name, data in reversed(layers):
        node: Any = data
        for key in keys:
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and key < len(node):
                node = node[key]
            else:
                break
        else:
            return name
    return None


# What makes two configs' tables and figures different (not bookkeeping such as compute or pack).
SCIENCE_SECTIONS = ("data", "defaults", "studies")


def outputs_of_another_config(resolved: str | Path, config: Mapping) -> str | None:
    """A note when ``resolved`` (the resolved config that last wrote this config's output folder) is
    another config's, whose tables and figures this invocation would mix with its own; None when
    it is the same (or there is none), and for a config with a ``name:``: its folder is its own, and
    an earlier version of the same config is no other config."""
    if config.get("name"):
        return None
    try:
        previous = yaml.safe_load(Path(resolved).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    changed = [k for k in SCIENCE_SECTIONS if previous.get(k) != _plain(config.get(k))]
    if not changed or not isinstance(previous, dict):
        return None
    return (f"NOTE: {resolved} was written by a config with other {', '.join(changed)}: the tables and figures this "
            "invocation writes replace that config's in the same folders (the runs of both are kept). To keep them apart, "
            "give each config its own `name:` (outputs under results/<name>/ and figures/<name>/; docs/outputs.md).")


def _plain(value: Any) -> Any:
    """``value`` as it reads back from YAML (tuples as lists, numbers as numbers)."""
    import json

    return json.loads(json.dumps(value))
