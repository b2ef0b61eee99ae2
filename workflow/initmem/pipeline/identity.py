"""What a result depends on, as short stable hashes: the trainer's code, the analysis code, the
prepared data, and each run's identity key. Torch-free: the Snakefile calls these on every parse.

A run retrains exactly when its key changes: its resolved spec, the prepared data's content, the
trainer's code (its syntax tree: comments and docstrings do not count) or the arithmetic precision.
Never because of its neighbours in a pack, resources, paths or bookkeeping settings (docs/reruns.md,
"What makes a run retrain").
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any

LIBRARY = Path(__file__).resolve().parents[1]  # the initmem package

# Modules whose code decides a run's numbers. Editing any of them (beyond comments and docstrings)
# changes every run's key, so every training job is planned again. Where a module lives and the
# package paths its imports name do not count (:func:`code_version`): moving files retrains nothing.
TRAINER_MODULES = ("engine/loop.py", "engine/train.py", "engine/packed.py", "engine/streams.py", "engine/compute.py",
                   "engine/models.py", "engine/optim.py", "spec.py", "engine/data.py", "engine/clocks.py")
# Modules whose code decides the tables and figures (never a reason to retrain).
ANALYSIS_MODULES = ("claims/analysis.py", "claims/verdicts.py", "claims/spreads.py", "claims/shapes.py", "claims/power.py",
                    "claims/collapse.py", "claims/collapse_calibration.py", "claims/calibration.py", "claims/table.py", "claims/rows.py", "claims/clock.py",
                    "claims/registry.py", "claims/report.py", "claims/paper_tables.py", "figures/common.py", "figures/paper.py",
                    "figures/clock.py", "figures/registry.py", "pipeline/records.py", "evidence.py")

# Sources whose prepared split is CIFAR-10 itself: torchvision's md5-checked download and a local
# archive whose md5 was verified give the same pixels, so switching between them retrains nothing.
OFFICIAL_CIFAR10 = "cifar10-official"


def _digest(obj: Any, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:n]


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _is_package_import(node: ast.AST) -> bool:
    return (isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "initmem") \
        or (isinstance(node, ast.Import) and all(a.name.split(".")[0] == "initmem" for a in node.names))


def _without_package_paths(tree: ast.AST) -> ast.AST:
    """The package's imports of one block read as one ``from initmem import a, b, ...`` at the first
    one's place: what a module imports counts, not where in the package it comes from nor the order
    of the lines (a pure move of files, and the import sorting it brings, changes nothing)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        found = [i for i, stmt in enumerate(body) if _is_package_import(stmt)]
        if not found:
            continue
        names = sorted({(a.name if isinstance(body[i], ast.ImportFrom) else "initmem", a.asname) for i in found for a in body[i].names},
                       key=lambda na: (na[0], na[1] or ""))
        merged = ast.ImportFrom(module="initmem", names=[ast.alias(name=n, asname=a) for n, a in names], level=0)
        node.body = [merged if i == found[0] else stmt for i, stmt in enumerate(body) if i == found[0] or i not in found]
    return tree


def _code_version(files: tuple[str, ...] | list[str], base: Path, package_paths: bool) -> str:
    parts = []
    for name in sorted(files, key=lambda f: Path(f).name):
        path = base / name
        if path.is_file():
            tree = _strip_docstrings(ast.parse(path.read_text(), filename=str(path)))
            tree = tree if package_paths else _without_package_paths(tree)
            parts.append([Path(name).name, ast.dump(tree, annotate_fields=False, include_attributes=False)])
    return _digest(parts)


def code_version(files: tuple[str, ...] | list[str], base: Path = LIBRARY) -> str:
    """Hash of the syntax trees of ``files`` (paths under ``base``; absent ones are skipped), without
    comments, docstrings, formatting, the folder a module lives in or the package paths of its
    imports: a bug fix changes it; a reworded comment or a move of files into other subpackages does not."""
    return _code_version(files, base, package_paths=False)


def code_version_before_moves(files: tuple[str, ...] | list[str], base: Path = LIBRARY) -> str:
    """:func:`code_version` as checkouts before issue 30 computed it (file names and imports as
    written): only to recognise a version an older checkout recorded (its prepared data's code,
    :mod:`initmem.pipeline.legacy`), never to key anything new."""
    return _code_version(files, base, package_paths=True)


@functools.cache
def trainer_version() -> str:
    """The training code's version (see :data:`TRAINER_MODULES`)."""
    return code_version(TRAINER_MODULES)


@functools.cache
def analysis_version() -> str:
    """The analysis code's version (see :data:`ANALYSIS_MODULES`)."""
    return code_version(ANALYSIS_MODULES)


@functools.cache
def _file_md5(path: str) -> str:
    from initmem.engine.data import md5sum  # numpy only, no torch

    return md5sum(Path(path))


def data_identity(data_cfg: dict) -> dict:
    """What determines the prepared split's content, nothing else: not the archive's path (moving
    the project or the archive changes nothing), not keys left at their defaults.

    An unverified local archive (a re-packed copy) is identified by its md5, computed here once per
    process; a missing one by its path, until it exists (``prepare_data`` then reports it).
    """
    source = data_cfg.get("source", "torchvision")
    archive = data_cfg.get("archive")
    if source == "synthetic":
        origin = f"synthetic:{int(data_cfg.get('seed', 0))}"
    elif source == "torchvision" and not archive:
        origin = OFFICIAL_CIFAR10
    elif data_cfg.get("verify_md5", True):
        origin = OFFICIAL_CIFAR10  # prepare_data refuses an archive whose md5 is not the official one
    elif archive and Path(archive).is_file():
        origin = f"archive-md5:{_file_md5(str(Path(archive).resolve()))}"
    else:
        origin = f"archive:{archive}"  # an extracted folder or a missing file: the path is all we have
    return {"origin": origin, "n_train": int(data_cfg["n_train"]), "n_val": int(data_cfg["n_val"]),
            "n_test": int(data_cfg["n_test"])}


def data_folder(data_id: dict, data_code: str) -> str:
    """The folder name, under ``results/data/``, of the prepared split of one data identity made by one
    version of the data code: readable (origin and sizes) and unique (a hash of both).

    Each identity has its own file, so preparing another config's data never removes this one, and
    a file is written once and never replaced: ``prepare_data`` runs only when it is missing (which
    is also what keeps Snakemake from planning training in two invocations, docs/reruns.md).
    """
    origin = re.sub(r"[^A-Za-z0-9]+", "-", data_id["origin"].replace("cifar10-official", "cifar10"))[:24].strip("-")
    digest = _digest({"data": data_id, "code": data_code}, 10)
    return f"{origin}-{data_id['n_train']}-{data_id['n_val']}-{data_id['n_test']}-{digest}"


def run_key(spec: dict, data_id: dict, trainer: str, precision: str) -> str:
    """A run's identity: it retrains exactly when this changes."""
    return _digest({"spec": spec, "data": data_id, "trainer": trainer, "precision": precision})
