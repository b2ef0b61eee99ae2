"""The conda environments (envs/*.yaml) that `--sdm conda` builds: each holds every package its rules'
code imports, pinned as requirements.txt pins them, and the shell rules call the environment's python.

No conda here to build them, so this checks statically what a build would need: the third-party
imports reachable from each rule's entry point (module- and function-level imports alike, so a
lazy import counts), against the packages each environment installs with their dependencies.
"""

import ast
import functools
import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest
import yaml

from initmem.spec import REGISTRIES

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "workflow" / "initmem"
SCRIPTS = ROOT / "workflow" / "scripts"

# rule -> (the initmem modules and cli functions its command runs). Scripts are read from their files.
SHELL_ENTRIES = {
    "prepare_data": (["initmem.cli", "initmem.engine.data"], ["main", "prepare_data", "_user_errors"]),
    "train": (["initmem.cli", "initmem.pipeline.jobs"], ["main", "_user_errors"]),
    "run_metrics": (["initmem.cli", "initmem.pipeline.records"], ["main", "_user_errors"]),
}
# The static walk over-approximates: run_metrics reaches initmem.engine.data and initmem.engine.device only for
# their exception classes (cli._user_errors), never the torchvision download or the torch calls
# inside their functions (test_the_device_errors_import_without_torch checks that at run time).
NOT_RUN = {"run_metrics": {"torchvision", "torch"}}


def _imports(tree: ast.AST) -> set[str]:
    """Absolute module names imported anywhere in ``tree`` (function bodies included)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            if node.module.split(".")[0] == "initmem":  # "from initmem.claims import verdicts" imports a module
                names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _cli_functions(names: list[str]) -> set[str]:
    tree = ast.parse((LIB / "cli.py").read_text())
    module_level = _imports(ast.Module([n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))], []))
    return module_level | set().union(*(_imports(n) for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names))


def third_party(modules: list[str], cli_functions: list[str]) -> set[str]:
    """Top-level third-party packages imported by ``modules`` and what they import from initmem."""
    todo, seen, found = list(modules), set(), set()
    todo += [m for m in _cli_functions(cli_functions)]
    while todo:
        name = todo.pop()
        if name in seen or name == "initmem.cli":
            continue
        seen.add(name)
        if name == "initmem" or name.startswith("initmem."):
            rel = LIB.joinpath(*name.split(".")[1:])  # a module file, or a package's __init__.py
            path = rel.with_name(rel.name + ".py") if rel.with_name(rel.name + ".py").is_file() else rel / "__init__.py"
            if path.is_file():
                todo += sorted(_imports(ast.parse(path.read_text())))
            if name == "initmem.engine.registry":  # it imports its entries by name: every file of every registry
                todo += [f"initmem.{folder.replace('/', '.')}.{p.stem}" for folder in REGISTRIES.values()
                         for p in sorted(LIB.joinpath(folder).glob("*.py")) if p.stem != "__init__"]
        elif name.split(".")[0] not in sys.stdlib_module_names and name != "_path":
            found.add(name.split(".")[0])
    return found


def script_entries(script: str) -> tuple[list[str], list[str]]:
    tree = ast.parse((SCRIPTS / script).read_text())
    cli = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "initmem.cli" for a in n.names]
    return sorted(_imports(tree) - {"initmem.cli"}), cli


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(pins: list[str]) -> set[str]:
    """The pinned distributions and everything they require (from this environment's metadata)."""
    todo, seen = [re.split(r"[=<>!~ ;\[]", p)[0] for p in pins], set()
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:  # a platform-only dependency (e.g. CUDA libraries) not installed here
            continue
        for req in requires:
            if "extra ==" not in req:
                todo.append(re.split(r"[=<>!~ ;\[(]", req)[0])
    return seen


@functools.cache
def rules() -> dict[str, tuple[str, set[str]]]:
    """rule -> (its envs/ file, the third-party packages its code imports)."""
    out = {}
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"\n(?=rule )", smk.read_text()):
            m = re.match(r"rule (\w+):", block)
            env = re.search(r'conda:\s*\n\s*"\.\./\.\./(envs/[\w.]+)"', block)
            if not (m and env):
                continue
            script = re.search(r'script:\s*\n\s*"\.\./scripts/([\w.]+)"', block)
            modules, funcs = script_entries(script.group(1)) if script else SHELL_ENTRIES[m.group(1)]
            out[m.group(1)] = (env.group(1), third_party(modules, funcs) - NOT_RUN.get(m.group(1), set()))
    return out


def test_every_rule_that_runs_code_names_an_environment():
    found = rules()
    assert {"prepare_data", "train", "run_metrics", "collect_study", "tables", "figure", "linear_check", "clocks_table"} <= set(found)
    assert found["train"][1] >= {"torch", "numpy", "yaml"} and "torchvision" in found["prepare_data"][1]
    assert {"matplotlib", "pandas", "statsmodels"} <= found["figure"][1] and "torch" not in found["figure"][1]


@pytest.mark.parametrize("rule", sorted(rules()))
def test_each_environment_installs_what_its_rules_import(rule):
    env_file, needed = rules()[rule]
    env = yaml.safe_load((ROOT / env_file).read_text())
    pins = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    installed = closure(pins)
    dists = md.packages_distributions()
    missing = {m for m in needed if not {_norm(d) for d in dists.get(m, [m])} & installed}
    assert not missing, f"{env_file} lacks what rule {rule} imports: {sorted(missing)}"


def test_environments_pin_what_requirements_txt_pins():
    required = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line)
    for env_file in (ROOT / "envs").glob("*.yaml"):
        env = yaml.safe_load(env_file.read_text())
        assert "python=3.11" in env["dependencies"]
        for pin in next(d["pip"] for d in env["dependencies"] if isinstance(d, dict)):
            name, version = pin.split("==")
            assert version == required.get(name, md.version(name)), f"{env_file.name}: {pin}"


def test_with_conda_the_shell_rules_call_the_environments_python():
    # Snakemake activates the rule's environment before a shell command: its python is the first on
    # PATH. Without --sdm conda the rules use Snakemake's own interpreter (a venv need not be active).
    from snakemake.settings.types import DeploymentMethod

    from initmem.pipeline.invocation import shell_python

    assert shell_python({DeploymentMethod.CONDA}, "/venv/bin/python") == "python"
    assert shell_python({DeploymentMethod.CONDA, DeploymentMethod.APPTAINER}, "/venv/bin/python") == "python"
    assert shell_python(set(), "/venv/bin/python") == "/venv/bin/python"
    assert shell_python({DeploymentMethod.APPTAINER}, "/venv/bin/python") == "/venv/bin/python"
    for smk in (ROOT / "workflow/rules").glob("*.smk"):
        for cmd in re.findall(r"shell:\n((?:\s+['\"].*\n)+)", smk.read_text()):
            assert "sys.executable" not in cmd and ("$INITMEM_PYTHON" in cmd or "python" not in cmd)


def test_the_device_errors_import_without_torch():
    """run_metrics' environment has no torch: cli._user_errors imports DeviceError from it all the same."""
    import subprocess

    code = "import sys; import initmem.engine.device, initmem.engine.data; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(LIB.parent)})
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr
