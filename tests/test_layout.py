"""The library's architecture, as the folder listing shows it: subpackages by concern,
imports only go down, no import circle, and a run's identity reads what the trainer's code does,
not where its files live. And the test suite's own: no test module imports another."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from conftest import ROOT

from initmem.pipeline.identity import TRAINER_MODULES, code_version

LIBRARY = ROOT / "workflow" / "initmem"
TESTS = ROOT / "tests"
# Floors, bottom up: a module may import its own subpackage and anything on a lower floor.
FLOORS = {"spec": 0, "io": 0, "paper": 0, "paths": 0, "checkout": 0, "presentation": 1, "costs": 1, "cluster": 1, "tiers": 1, "engine": 1,
          "pipeline": 2, "theory": 2, "stats": 2, "claims": 3, "planner": 4, "reports": 4, "figures": 4,
          "evidence": 5, "scriptjobs": 6, "cli": 7, "__main__": 8, "__init__": 0}


def room(module: str) -> str:
    """``initmem.engine.train`` -> ``engine``; ``initmem.cli`` -> ``cli``; ``initmem`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports() -> dict[str, set[str]]:
    """Every initmem module -> the initmem modules it imports (at any depth: lazy imports count)."""
    graph = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        rel = path.relative_to(LIBRARY.parent).with_suffix("")
        name = ".".join(p for p in rel.parts if p != "__init__")
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("initmem"):
                for alias in node.names:  # "from initmem.claims import verdicts" imports a module
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if (LIBRARY.parent / sub.replace(".", "/")).with_suffix(".py").is_file() else node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("initmem")}
        graph[name] = found - {name}
    return graph


def test_the_folder_listing_shows_the_concerns():
    packages = sorted(p.name for p in LIBRARY.iterdir() if (p / "__init__.py").is_file())
    assert packages == ["claims", "cluster", "costs", "engine", "figures", "pipeline", "planner", "reports", "stats", "theory"]
    top = sorted(p.stem for p in LIBRARY.glob("*.py"))
    assert top == ["__init__", "__main__", "checkout", "cli", "evidence", "io", "paper", "paths", "presentation", "scriptjobs", "spec", "tiers"]
    for package in packages:  # each says what lives there and what it may import
        doc = ast.get_docstring(ast.parse((LIBRARY / package / "__init__.py").read_text()))
        assert doc and "import" in doc.lower(), package


def test_imports_only_go_down():
    wrong = []
    for module, targets in imports().items():
        for target in targets:
            same = room(module) == room(target)
            if not same and FLOORS[room(target)] >= FLOORS[room(module)]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_no_import_circle():
    graph = imports()
    state: dict[str, int] = {}
    circles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt in graph and not state.get(nxt):
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if not state.get(module):
            visit(module, [module])
    assert circles == []


def test_no_room_holds_more_than_a_fifth_of_the_library():
    """docs/architecture.md: each subpackage stays small enough to read as one concern."""
    lines = {path: len(path.read_text().splitlines()) for path in LIBRARY.rglob("*.py")}
    total = sum(lines.values())
    shares = {package.name: sum(n for path, n in lines.items() if package in path.parents) / total
              for package in LIBRARY.iterdir() if (package / "__init__.py").is_file()}
    assert {name: f"{share:.1%}" for name, share in shares.items() if share > 0.2} == {}


def test_a_pure_move_of_the_trainer_changes_no_run_key(tmp_path):
    """The trainer's modules laid out flat (as an older checkout had them) with their imports naming the old
    paths hash like today's: run keys read what the code does, not where its files live."""
    flat = []
    for name in TRAINER_MODULES:
        text = (LIBRARY / name).read_text()
        for package in ("engine", "pipeline", "claims", "figures", "theory"):
            text = text.replace(f"initmem.{package}.", "initmem.")
        (tmp_path / Path(name).name).write_text(text)
        flat.append(Path(name).name)
    assert code_version(flat, base=tmp_path) == code_version(TRAINER_MODULES)
    # ...while a change of what the code does still changes it
    clocks = tmp_path / "clocks.py"
    shutil.copy(clocks, tmp_path / "orig")
    clocks.write_text(clocks.read_text().replace("math.ceil(n / b)", "math.floor(n / b)"))
    assert code_version(flat, base=tmp_path) != code_version(TRAINER_MODULES)


def test_the_papers_numbers_are_written_in_one_library_file():
    """The paper's headline spread and clock values appear in initmem/paper.py only: the registry,
    the tables, the calculator and the figures read them from there."""
    found = {number: sorted(str(p.relative_to(LIBRARY)) for p in LIBRARY.rglob("*.py") if number in p.read_text())
             for number in ("26.5", "22.8", "7.3e-4", "1.2e-2", "0.94")}
    assert found == {number: ["paper.py"] for number in found}


def test_no_library_module_builds_a_repository_path_from_its_own_location():
    """The committed folders are found in one place (initmem.paths: a checkout, INITMEM_ROOT or the
    current directory), so an installed copy reads a checkout's evidence instead of breaking."""
    found = [str(p.relative_to(LIBRARY)) for p in LIBRARY.rglob("*.py")
             if p.name != "paths.py" and re.search(r"__file__\)\.resolve\(\)\.parents\[[2-9]\]", p.read_text())]
    assert found == []


def test_an_installed_copy_reads_the_checkout_that_initmem_root_names(tmp_path):
    """A copy of the package outside any checkout: INITMEM_ROOT names where evidence/ is; without it,
    the current directory when it holds evidence/."""
    import subprocess
    import sys

    shutil.copytree(LIBRARY, tmp_path / "site" / "initmem", ignore=shutil.ignore_patterns("__pycache__"))
    probe = "from initmem import paths; print(paths.EVIDENCE)"
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    named = subprocess.run([sys.executable, "-c", probe], env={**env, "INITMEM_ROOT": str(ROOT)}, cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()
    here = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert named == here == str(ROOT / "evidence")


def imports_of_test_modules(tests: Path) -> list[str]:
    """``file:line: module`` for every import of a test module (a ``test_*.py`` of ``tests``) by any file
    under ``tests`` (test modules, conftest.py, helpers/), at any depth (lazy imports count), also by
    ``__import__`` or ``importlib.import_module`` with the name written out."""
    test_modules = {p.stem for p in tests.glob("test_*.py")}
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("__import__", "import_module")
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]
            else:
                continue
            found += [f"{path.relative_to(tests)}:{node.lineno}: {name}" for name in names if name.split(".")[0] in test_modules]
    return found


def test_no_test_module_imports_another():
    """What several test files share lives in tests/helpers/ (or conftest.py), never in a test module: importing
    one runs its module-level code in another file's collection, and its private helpers become another file's API."""
    assert imports_of_test_modules(TESTS) == []
