"""What a result depends on, as short stable hashes: the code each output uses, the prepared data,
and each run's identity key. Torch-free: the Snakefile calls these on every parse.

A run retrains exactly when its key changes: its resolved spec, the prepared data's content, the code
it runs (syntax trees: comments and docstrings do not count) or the arithmetic precision. Its code is
the engine's shared core (every module of ``engine/`` but the registries and :data:`NOT_IN_RUN_KEYS`,
plus ``spec.py``) and the files of its own optimizer, architecture and data source (with the sibling
entries they import). So adding an entry retrains nothing, editing one optimizer's file retrains its
runs only, and editing the core retrains every run. Never because of its neighbours in a pack,
resources, paths or bookkeeping settings (docs/reruns.md, "What makes a run retrain").

Each analysis output is keyed by the code its Snakemake scripts import (:data:`ANALYSIS_SCRIPTS`,
:func:`imported_files`): the package modules found by following their imports, so a module that
starts being used counts without anyone adding it to a list, and an edit to one it never imports
reruns nothing.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from initmem.spec import REGISTRIES, entry_info, entry_names

LIBRARY = Path(__file__).resolve().parents[1]  # the initmem package

# Engine modules that decide no run's numbers, so no key holds them (each with the reason).
NOT_IN_RUN_KEYS = {
    "engine/metrics.py": "the record's format number and key names",
    "engine/checkpoint.py": "saves and restores the training state exactly: a resumed run equals an uninterrupted one",
    "engine/device.py": "which device trains and what is recorded about it; a device choice is bookkeeping "
                        "(on a GPU it turns on cuDNN's deterministic mode, a difference at rounding level only)",
    "engine/allocator.py": "whether the process keeps the host memory it frees for reuse: speed, never the arithmetic",
}
# The Snakemake scripts behind each analysis output (workflow/scripts/; the rules that run them pass
# the output's version as a param): its code is what they import of the package (:func:`imported_files`).
ANALYSIS_SCRIPTS = {
    "tables": ("collect_study.py", "tables.py"),  # the per-study tables, runs.csv ... claims.md
    "figures": ("figure.py",),                    # Figures 1-8 and 10
    "clocks": ("clocks_table.py",),               # clocks.csv
    "linear_check": ("linear_check.py",),         # Figure 9 and linear_check.csv
}
SCRIPTS = LIBRARY.parent / "scripts"


def _trainer_core(base: Path = LIBRARY) -> tuple[str, ...]:
    """The engine's shared core: its top-level modules (the registries are folders) but
    :data:`NOT_IN_RUN_KEYS`, and ``spec.py``."""
    engine = sorted(str(f.relative_to(base)) for f in (base / "engine").glob("*.py"))
    return (*[f for f in engine if f not in NOT_IN_RUN_KEYS], "spec.py")


# Modules whose code decides every run's numbers: editing any of them (beyond comments and docstrings)
# changes every run's key. Where a module lives and the package paths its imports name do not count
# (:func:`code_version`): moving files retrains nothing.
TRAINER_MODULES = _trainer_core()



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


# What this process has hashed, by file state (path, mtime, size: an edited file is read again): each
# file's syntax tree, and each code version. The Snakefile asks for the same few versions once per
# run and pack of the DAG (tens of thousands of times at paper scale); a parse costs milliseconds.
_TREES: dict[tuple, str] = {}
_VERSIONS: dict[tuple, str] = {}


def _file_state(path: Path) -> tuple[str, int, int] | None:
    """What tells an edited file from the one hashed before: path, mtime (ns) and size; None when absent."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_mtime_ns, st.st_size) if path.is_file() else None


def _tree(path: Path, state: tuple, package_paths: bool) -> str:
    """The syntax tree of one file, without docstrings (and package paths), as text."""
    memo = (state, package_paths)
    if memo not in _TREES:
        tree = _strip_docstrings(ast.parse(path.read_text(), filename=str(path)))
        tree = tree if package_paths else _without_package_paths(tree)
        _TREES[memo] = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return _TREES[memo]


def _code_version(files: tuple[str, ...] | list[str], base: Path, package_paths: bool) -> str:
    states = [(name, _file_state(base / name)) for name in sorted(files, key=lambda f: Path(f).name)]
    memo = (package_paths, tuple(states))
    if memo not in _VERSIONS:
        _VERSIONS[memo] = _digest([[Path(name).name, _tree(base / name, state, package_paths)]
                                   for name, state in states if state is not None])
    return _VERSIONS[memo]


def code_version(files: tuple[str, ...] | list[str], base: Path = LIBRARY) -> str:
    """Hash of the syntax trees of ``files`` (paths under ``base``; absent ones are skipped), without
    comments, docstrings, formatting, the folder a module lives in or the package paths of its
    imports: a bug fix changes it; a reworded comment or a move of files into other subpackages does not."""
    return _code_version(files, base, package_paths=False)


def code_version_before_moves(files: tuple[str, ...] | list[str], base: Path = LIBRARY) -> str:
    """:func:`code_version` as older checkouts computed it (file names and imports as
    written): only to recognise a version an older checkout recorded (its prepared data's code,
    :mod:`initmem.pipeline.legacy`), never to key anything new. Kept with that migration, until 2027-06-01."""
    return _code_version(files, base, package_paths=True)


# Versions of the shared core whose code computes exactly the numbers of an earlier version, each
# with the edit and why it changes no number: runs keep that earlier version's keys, so a finished
# run stays finished. An entry holds for the exact code it names: any further edit of the core gives a
# version not listed here, and every run's key changes (tests/test_run_keys.py guards both; the
# numbers themselves: tests/test_golden_records.py, against the records pinned for the earlier version).
SAME_NUMBERS_AS = {
    "8cb43772315cf811": ("a6a2e72afa3b8440", "engine/train.py stopped re-exporting names: it binds them "
                                             "only, nothing read them, and the code each step runs is the same"),
    "22f5de7029221594": ("a6a2e72afa3b8440", "the optional spec keys bn_eval (precise BatchNorm statistics for "
                                             "evaluation) and train_eval (eval-mode training accuracy): a spec without "
                                             "them runs the same steps and evaluations and records the same history and "
                                             "summary; the loop counts the epochs a process finishes (bookkeeping for "
                                             "continuations, read by no number)"),
    "d4e92ff18c45ddc3": ("a6a2e72afa3b8440", "the trainer's bookkeeping settings travel as one frozen TrainSettings "
                                             "(engine/settings.py) from the job to the loop instead of loose arguments, "
                                             "with the same values and defaults, and train_loop's resume, epoch, "
                                             "end-of-epoch and stop/checkpoint code moved into named helpers in the "
                                             "same order: the same steps, draws, evaluations, records and checkpoints"),
    "77176b513701050e": ("a6a2e72afa3b8440", "the optional spec key final_test (the network at tau_best kept, in the "
                                             "checkpoints too, and evaluated once after training on the first final_test "
                                             "test images): a spec without it keeps nothing, evaluates nothing more and "
                                             "records the same history and summary"),
    "9b70a81224d002c3": ("a6a2e72afa3b8440", "TF32 set through both of PyTorch's APIs (engine/compute.py set_tf32): "
                                             "cuBLAS and cuDNN get the same flags as before in every precision; only "
                                             "TorchInductor's own Triton convolution templates, which read the new "
                                             "flag, now follow cuDNN's TF32 setting under compute.precision tf32 with "
                                             "compute.compile on, a rounding-level choice of the same kind as "
                                             "compile itself, which no run key holds"),
}


@functools.cache
def trainer_version() -> str:
    """The version of the engine's shared core (see :data:`TRAINER_MODULES`), or the earlier version
    whose numbers it computes (:data:`SAME_NUMBERS_AS`)."""
    version = code_version(TRAINER_MODULES)
    return SAME_NUMBERS_AS[version][0] if version in SAME_NUMBERS_AS else version


def _entry_imports(path: Path) -> set[tuple[str, str]]:
    """The registry entries (kind, name) that the module at ``path`` imports, at any depth."""
    folders = {REGISTRIES[kind].replace("/", "."): kind for kind in REGISTRIES}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        modules = [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 \
            else [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for module in modules:
            for folder, kind in folders.items():
                prefix = f"initmem.{folder}."
                if module.startswith(prefix) and "." not in module[len(prefix):]:
                    found.add((kind, module[len(prefix):]))
    return found


@functools.cache
def entry_files(kind: str, name: str) -> tuple[str, ...]:
    """The files a registry entry's code is: its own and those of the entries it imports (AdamW uses
    Adam's step, so an edit to Adam's file is an edit to AdamW's runs too)."""
    entry_info(kind, name)  # a clear error for an unknown name
    seen: set[tuple[str, str]] = set()
    todo = [(kind, name)]
    while todo:
        item = todo.pop()
        path = LIBRARY / REGISTRIES[item[0]] / f"{item[1]}.py"
        if item in seen or not path.is_file():
            continue
        seen.add(item)
        todo += sorted(_entry_imports(path))
    return tuple(sorted(f"{REGISTRIES[k]}/{n}.py" for k, n in seen))


@functools.cache
def _entry_version(kind: str, name: str) -> str:
    return code_version(entry_files(kind, name))


@functools.cache
def source_files(source: str) -> tuple[str, ...]:
    """The files of a data source's code: its own, or, where several sources give the same official
    pixels (one ``ORIGIN``: CIFAR-10 downloaded or from a verified archive), all of theirs, so that
    switching between them changes no key."""
    origin = entry_info("source", source).get("ORIGIN")
    same = [name for name in entry_names("source") if origin is not None and entry_info("source", name).get("ORIGIN") == origin]
    return tuple(sorted({f for name in same or [source] for f in entry_files("source", name)}))


def run_code_version(spec: dict, source: str) -> str:
    """The version of the code one run uses: the shared core, and its optimizer's, architecture's and
    data source's files (:func:`source_files`)."""
    return _digest({"core": trainer_version(), "optimizer": _entry_version("optimizer", spec["optimizer"]),
                    "arch": _entry_version("arch", spec["arch"]), "source": code_version(source_files(source))})


def data_code_version(source: str) -> str:
    """The version of the code that prepares a data source's split: the shared data core and the
    source's files (:func:`source_files`)."""
    return code_version(("engine/data.py", *source_files(source)))


def source_of(data_id: dict) -> str:
    """A data source that gives the data identity ``data_id`` (for the code version of data an older
    checkout prepared, whose record holds the identity and not the source)."""
    origin = data_id["origin"]
    for name in entry_names("source"):
        official = entry_info("source", name).get("ORIGIN")
        if official == origin or (official is None and origin.startswith(f"{name}:")):
            return name
    return "archive"  # an unverified CIFAR-10 copy: archive-md5:... or archive:<path>


@functools.cache
def analysis_version(output: str = "tables") -> str:
    """The version of the code behind one kind of analysis output (a key of :data:`ANALYSIS_SCRIPTS`)."""
    return code_version(analysis_files(output))


def analysis_files(output: str) -> tuple[str, ...]:
    """The package modules behind one kind of analysis output: what its scripts import, followed
    through the package (:func:`imported_files`)."""
    return imported_files([SCRIPTS / name for name in ANALYSIS_SCRIPTS[output]])


_ALL = "*"  # a whole module is used (``import initmem.x``, ``from initmem import x``), not some of its names


def _module_file(module: str, base: Path) -> Path | None:
    """The file of a dotted package module (``initmem.claims.table``), or None when it is none."""
    path = base.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if (path / "__init__.py").is_file() else path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def _is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":``."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)


@functools.cache
def _units(path: Path, state: tuple) -> tuple[dict, dict]:
    """A module's top-level units: each function or class by name, and ``None`` for every other
    top-level statement (run on import), each with the package imports (module, names) and the
    top-level names it references."""
    del state  # part of the cache key: an edited file is read again
    units: dict[str | None, tuple[set, set]] = {}
    for stmt in ast.parse(path.read_text(), filename=str(path)).body:
        if _is_main_guard(stmt):  # runs as a script only, never on import
            continue
        name = stmt.name if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
        imports, refs = units.setdefault(name, (set(), set()))
        for node in ast.walk(stmt):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "initmem":
                imports |= {(node.module, a.name) for a in node.names}
            elif isinstance(node, ast.Import):
                imports |= {(a.name, _ALL) for a in node.names if a.name.split(".")[0] == "initmem"}
            elif isinstance(node, ast.Name):
                refs.add(node.id)
    return units, {}


@functools.cache
def _lists_its_folder(path: Path, state: tuple) -> bool:
    """Whether a package's ``__init__.py`` imports the modules of its folder by listing it
    (``pkgutil.iter_modules``, as the claim catalogue does): then every one of them is used."""
    del state  # part of the cache key
    return any(isinstance(n, ast.Attribute) and n.attr == "iter_modules" and isinstance(n.value, ast.Name) and n.value.id == "pkgutil"
               for n in ast.walk(ast.parse(path.read_text(), filename=str(path))))


def imported_files(scripts: list[Path], base: Path = LIBRARY) -> tuple[str, ...]:
    """The package modules that ``scripts`` import, at any depth, as sorted paths under ``base``.

    Followed by name: ``from initmem.m import f`` brings in m's top-level statements and the units
    (functions, classes) that f and they reference, with what those import, and so on; the imports
    inside m's other functions are not followed (``cli.py`` imports the engine only in the
    functions that train). ``import initmem.m`` and ``from initmem import m`` use all of m. Every
    package module imported brings its packages' ``__init__.py``, and a package that imports its folder's
    modules by listing it (:func:`_lists_its_folder`) brings all of them."""
    todo: list[tuple[str, str | None]] = []  # (module, a name it defines, _ALL, or None: its top-level statements only)
    for script in scripts:
        tree = ast.parse(Path(script).read_text(), filename=str(script))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "initmem":
                todo += [(node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                todo += [(a.name, _ALL) for a in node.names if a.name.split(".")[0] == "initmem"]
    done: dict[str, set] = {}
    while todo:
        module, name = todo.pop()
        if name not in (_ALL, None) and _module_file(f"{module}.{name}", base) is not None:
            module, name = f"{module}.{name}", _ALL  # from initmem.figures import paper: the module paper
        path = _module_file(module, base)
        if path is None:
            continue
        units, _ = _units(path, _file_state(path))
        if module not in done:  # once a module: its packages, and the folder it lists (which list it back)
            parts = module.split(".")
            todo += [(".".join(parts[:i]), None) for i in range(1, len(parts))]  # the packages' __init__.py run first
            if path.name == "__init__.py" and _lists_its_folder(path, _file_state(path)):
                todo += [(f"{module}.{m.stem}", _ALL) for m in sorted(path.parent.glob("*.py")) if not m.name.startswith("_")]
        names = set(units) if name is _ALL else {None, name}
        seen = done.setdefault(module, set())
        while names - seen:
            unit = (names - seen).pop()
            seen.add(unit)
            imports, refs = units.get(unit, (set(), set()))
            todo += sorted(imports, key=str)
            names |= refs & set(units)
    return tuple(sorted(str(_module_file(m, base).relative_to(base)) for m in done))


@functools.cache
def _file_md5(path: str) -> str:
    with open(path, "rb") as fh:  # hashlib's own file digest: the analysis rules that read versions need no engine module
        return hashlib.file_digest(fh, "md5").hexdigest()


def data_identity(data_cfg: dict) -> dict:
    """What determines the prepared split's content, nothing else: not the archive's path (moving
    the project or the archive changes nothing), not keys left at their defaults (a 32x32 split's
    identity has no ``resolution``: it is what it always was).

    Sources with the same official pixels (the ``ORIGIN`` of their files: torchvision's md5-checked
    download and a local archive whose md5 was verified) give the same identity, so switching between
    them retrains nothing. An unverified local archive (a re-packed copy) is identified by its md5,
    computed here once per process; a missing one by its path, until it exists (``prepare_data``
    then reports it). Generated data (no ``ORIGIN``) by its source and seed.
    """
    source = data_cfg.get("source", "torchvision")
    archive = data_cfg.get("archive")
    official = entry_info("source", source).get("ORIGIN")
    if official is None:
        origin = f"{source}:{int(data_cfg.get('seed', 0))}"
    elif not archive or data_cfg.get("verify_md5", True):
        origin = official  # prepare_data refuses an archive whose md5 is not the official one
    elif Path(archive).is_file():
        origin = f"archive-md5:{_file_md5(str(Path(archive).resolve()))}"
    else:
        origin = f"archive:{archive}"  # an extracted folder or a missing file: the path is all we have
    identity = {"origin": origin, "n_train": int(data_cfg["n_train"]), "n_val": int(data_cfg["n_val"]),
                "n_test": int(data_cfg["n_test"])}
    if int(data_cfg.get("resolution", 32)) != 32:
        identity["resolution"] = int(data_cfg["resolution"])
    return identity


def data_folder(data_id: dict, data_code: str) -> str:
    """The folder name, under ``results/data/``, of the prepared split of one data identity made by one
    version of the data code: readable (origin and sizes) and unique (a hash of both).

    Each identity has its own file, so preparing another config's data never removes this one, and
    a file is written once and never replaced: ``prepare_data`` runs only when it is missing (which
    is also what keeps Snakemake from planning training in two invocations, docs/reruns.md).
    """
    origin = re.sub(r"[^A-Za-z0-9]+", "-", re.sub(r"^(cifar\d+)-official$", r"\1", data_id["origin"]))[:24].strip("-")
    digest = _digest({"data": data_id, "code": data_code}, 10)
    size = f"-{data_id['resolution']}px" if "resolution" in data_id else ""
    return f"{origin}-{data_id['n_train']}-{data_id['n_val']}-{data_id['n_test']}{size}-{digest}"


def final_test_file(data_id: dict, data_code: str, n: int) -> str:
    """The prepared file of a data identity's first ``n`` test images (the runs' ``final_test`` set where
    it exceeds ``n_test``): ``test.npz`` in the folder of the same identity with ``n_test`` = ``n``, whose
    test images they are (a config of that size prepares ``cifar10.npz`` beside it)."""
    return f"results/data/{data_folder({**data_id, 'n_test': int(n)}, data_code)}/test.npz"


def run_key(spec: dict, data_id: dict, trainer: str, precision: str) -> str:
    """A run's identity: it retrains exactly when this changes (``trainer``: :func:`run_code_version`)."""
    return _digest({"spec": spec, "data": data_id, "trainer": trainer, "precision": precision})
