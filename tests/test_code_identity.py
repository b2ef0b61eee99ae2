"""Each output keyed by exactly the code it uses, driven through one finished tiny pipeline (SGD,
Adam and Lion packs on 16x16 synthetic images) and dry runs of edited copies of it: adding an
optimizer file plans nothing; editing Adam's file plans Adam's pack only; editing the theory plans
the clock table and Figure 9; editing the figures' style plans the figures. The same pipeline shows
that a study with ``optimizer: [lion]`` and ``data.resolution: 16`` trains."""

import json
import re
import shutil

import numpy as np
import pytest
from conftest import TINY_TARGETS, job_counts, snakemake

TARGETS = TINY_TARGETS


@pytest.fixture
def finished(tiny_pipeline):
    """The finished tiny pipeline (read only: each test edits its own copy)."""
    return tiny_pipeline


def _edited(finished, tmp_path, path: str, edit) -> "Path":  # noqa: F821
    """A copy of the finished project (mtimes and Snakemake's metadata kept) with one library file edited."""
    work = tmp_path / "project"
    shutil.copytree(finished, work, symlinks=True)
    edit(work / "workflow/initmem" / path)
    return work


def _append(text: str):
    return lambda f: f.write_text(f.read_text() + text)


def _plan(work) -> tuple[dict, str]:
    """Job counts of a dry run of every target, and its output (which files it would make)."""
    out = snakemake(*TARGETS, "-n", "--configfile", "c.yaml", cwd=work)
    text = out.stdout + out.stderr
    return ({} if "Nothing to be done" in text else job_counts(text)), text


def _pack_optimizers(work) -> dict[str, str]:
    """pack name -> the optimizer of its runs (from the finished pipeline's plans)."""
    return {p.stem: {m["spec"]["optimizer"] for m in json.loads(p.read_text())["members"]}.pop()
            for p in (work / "results/plans/main").glob("*.json")}


@pytest.mark.slow
@pytest.mark.workflow
def test_lion_trains_at_16x16_in_a_study(finished):
    records = [json.loads(f.read_text()) for f in (finished / "results/runs/main").glob("*.json")]
    lion = [r for r in records if r["spec"]["optimizer"] == "lion"]
    assert len(records) == 12 and len(lion) == 4 and all(r["status"] == "ok" for r in lion)
    assert all(len(r["history"]["T_adapt"]) == 1 and r["history"]["train_loss"][-1] > 0 for r in lion)
    same_seed = [r for r in lion if r["spec"]["seed"] == 0]
    assert same_seed[0]["history"]["train_loss"] != same_seed[1]["history"]["train_loss"]  # sigma_w made a difference
    (data,) = (finished / "results/data").glob("*/cifar10.npz")
    assert "-16px-" in data.parent.name
    with np.load(data) as z:
        assert z["x_train"].shape == (64, 3, 16, 16)


@pytest.mark.slow
@pytest.mark.workflow
def test_adding_an_optimizer_file_plans_nothing(finished, tmp_path):
    lamb = (finished / "workflow/initmem/engine/optimizers/lion.py").read_text().replace("LION_BETA2 = 0.9, 0.99", "LION_BETA2 = 0.9, 0.9")
    work = _edited(finished, tmp_path, "engine/optimizers/lamb.py", lambda f: f.write_text(lamb))
    assert _plan(work)[0] == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_editing_adams_file_plans_adams_pack_and_no_other(finished, tmp_path):
    work = _edited(finished, tmp_path, "engine/optimizers/adam.py", _append("\n\nA_FIXED_BUG = True\n"))
    counts, text = _plan(work)
    assert counts.get("train") == 1 and counts.get("run_metrics") == 4, counts
    planned = set(re.findall(r"results/packs/main/([^/\s]+)\.json", text))
    assert {_pack_optimizers(work)[p] for p in planned} == {"adam"}
    assert "clocks_table" not in counts and "linear_check" not in counts


@pytest.mark.slow
@pytest.mark.workflow
@pytest.mark.parametrize("module, replans, stands", [("theory/calculator.py", "clocks_table", "linear_check"),
                                                      ("theory/linear.py", "linear_check", "clocks_table")])
def test_editing_the_theory_plans_what_imports_the_edited_module(finished, tmp_path, module, replans, stands):
    """The clock table imports the calculator, Figure 9 the deep linear networks: each edit plans its own output only."""
    work = _edited(finished, tmp_path, module, _append("\n\nA_FIXED_BUG = True\n"))
    counts, _ = _plan(work)
    assert counts.get(replans) == 1 and stands not in counts, counts
    assert not {"train", "run_metrics", "collect_study", "figure"} & set(counts)


@pytest.mark.slow
@pytest.mark.workflow
def test_editing_the_figures_style_plans_the_figures(finished, tmp_path):
    work = _edited(finished, tmp_path, "figures/style.py", _append("\n\nA_NEW_STYLE = True\n"))
    counts, _ = _plan(work)
    assert counts.get("figure") == 1 and counts.get("linear_check") == 1, counts
    assert not {"train", "run_metrics", "collect_study", "clocks_table"} & set(counts)


# What each analysis output's code does, as its Snakemake script does it, on a committed tier's tables.
_RUNS_ITS_CODE = {
    "tables": "from initmem.scriptjobs import log_to, write_tables\n"
              "write_tables([f'{T}/all.runs.csv'], [f'{T}/all.history.csv.gz'], {k: f'{OUT}/{k}' for k in "
              "('runs', 'history', 'spreads', 'beta', 'claims', 'claims_md', 'paper_tables_md')})",
    "figures": "from initmem.scriptjobs import figure_file, log_to\n"
               "for name in ('fig1', 'fig2', 'fig3', 'fig4', 'fig6'):\n"
               "    figure_file(name, [f'{T}/all.runs.csv', f'{T}/all.history.csv.gz'], f'{OUT}/{name}.pdf', f'{OUT}/{name}.png')",
    "clocks": "import yaml\nfrom initmem.scriptjobs import log_to\nfrom initmem.pipeline.grid import expand_studies\n"
              "from initmem.theory.calculator import write_clocks_table\n"
              "write_clocks_table(expand_studies(yaml.safe_load(open(f'{TIER}/config.resolved.yaml'))), f'{OUT}/clocks.csv')",
    "linear_check": "import initmem.figures.style\nfrom initmem.scriptjobs import log_to\nfrom initmem.figures.linear import write_linear_check\n"
                    "write_linear_check(f'{OUT}/fig9.pdf', f'{OUT}/fig9.png', f'{OUT}/linear_check.csv')",
}


@pytest.mark.parametrize("output", ["tables", "figures", "clocks", pytest.param("linear_check", marks=pytest.mark.slow)])
@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
def test_an_analysis_outputs_key_holds_every_module_its_code_imports(output, tmp_path):
    """Run an output's code (what its script calls) and list the package modules it imported: each
    is one its key holds (:func:`initmem.pipeline.identity.analysis_files`, derived from its
    scripts' imports), so no edit that changes the output leaves it standing."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    from initmem.pipeline.identity import ANALYSIS_SCRIPTS, analysis_files

    tier = ROOT / "evidence" / "jpeg-cifar10-small"
    shutil.copy(tier / "tables" / "runs.csv", tmp_path / "all.runs.csv")
    shutil.copy(tier / "tables" / "history.csv.gz", tmp_path / "all.history.csv.gz")
    (tmp_path / "out").mkdir()
    code = (f"T, OUT, TIER = {str(tmp_path)!r}, {str(tmp_path / 'out')!r}, {str(tier)!r}\n{_RUNS_ITS_CODE[output]}\n"
            "import sys\nfrom pathlib import Path\nimport initmem\nbase = Path(initmem.__file__).parent\n"
            "print('\\n'.join(sorted(str(Path(m.__file__).relative_to(base)) for n, m in list(sys.modules.items())"
            " if n.split('.')[0] == 'initmem' and getattr(m, '__file__', None))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = set(proc.stdout.split())
    assert imported and imported <= set(analysis_files(output)), (
        f"{output} ({', '.join(ANALYSIS_SCRIPTS[output])}) imports {sorted(imported - set(analysis_files(output)))}, "
        "which its key does not hold")


def test_an_analysis_outputs_code_is_what_its_scripts_import():
    """The derived sets on the shipped code (docs/reruns.md's table): every analysis output holds the
    scripts' entry points and the package's ``__init__``; none holds the command line (an edit to it
    reruns no analysis) nor the training engine."""
    from initmem.pipeline.identity import ANALYSIS_SCRIPTS, analysis_files, imported_files

    for output in ANALYSIS_SCRIPTS:
        files = analysis_files(output)
        assert {"scriptjobs.py", "__init__.py", "io.py", "spec.py"} <= set(files), output
        assert not {"cli.py", "engine/train.py", "engine/loop.py", "engine/packed.py", "pipeline/jobs.py"} & set(files), output
    assert "claims/table.py" in analysis_files("tables") and "figures/paper.py" in analysis_files("figures")
    assert "theory/calculator.py" in analysis_files("clocks") and "theory/linear.py" in analysis_files("linear_check")
    assert "figures/linear.py" not in analysis_files("figures") and "theory/linear.py" not in analysis_files("clocks")
    from conftest import ROOT

    scripts = ROOT / "workflow" / "scripts"
    assert set(imported_files([scripts / "figure.py"])) == set(analysis_files("figures"))


def test_a_package_that_lists_its_folder_brings_every_module_once(tmp_path):
    """A package whose ``__init__`` imports its folder by listing it (the claim catalogue) brings
    each module of the folder, whose own imports lead back to the package: the walk ends, with each
    file once."""
    from initmem.pipeline.identity import analysis_files, imported_files

    (tmp_path / "initmem" / "family").mkdir(parents=True)
    (tmp_path / "initmem" / "__init__.py").write_text("")
    (tmp_path / "initmem" / "family" / "__init__.py").write_text(
        "import importlib\nimport pkgutil\n\nMEMBERS = [importlib.import_module(f'{__name__}.{m.name}') for m in pkgutil.iter_modules(__path__)]\n")
    (tmp_path / "initmem" / "family" / "one.py").write_text("from initmem.family import two\n\nX = two.Y\n")
    (tmp_path / "initmem" / "family" / "two.py").write_text("from initmem.family import one  # noqa\n\nY = 1\n")
    (tmp_path / "initmem" / "lone.py").write_text("Z = 0\n")
    script = tmp_path / "script.py"
    script.write_text("from initmem.family import MEMBERS\n")
    assert imported_files([script], base=tmp_path / "initmem") == ("__init__.py", "family/__init__.py", "family/one.py", "family/two.py")
    from conftest import ROOT

    catalogue = sorted(f"claims/catalogue/{p.name}" for p in (ROOT / "workflow" / "initmem" / "claims" / "catalogue").glob("*.py"))
    assert set(catalogue) <= set(analysis_files("tables"))


def test_every_rule_keyed_by_an_analysis_version_runs_one_of_its_scripts():
    """A rule's ``analysis=ANALYSIS["x"]`` param is the version of what its ``script:`` imports."""
    from conftest import ROOT

    from initmem.pipeline.identity import ANALYSIS_SCRIPTS

    found = 0
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"^rule ", smk.read_text(), flags=re.M)[1:]:
            if (version := re.search(r'ANALYSIS\["(\w+)"\]', block)) is not None:
                script = re.search(r'script:\s*"\.\./scripts/([\w.]+)"', block)
                assert script is not None and script.group(1) in ANALYSIS_SCRIPTS[version.group(1)], block.splitlines()[0]
                found += 1
    assert found >= 4


@pytest.mark.slow
@pytest.mark.workflow
def test_a_figure_job_says_what_data_its_runs_trained_on(finished):
    """The figure job reads the workflow's data config (INITMEM_DATA_CONFIG, set when the workflow is
    parsed): the tiny pipeline's Figure 1, on synthetic images, says so in its footnote and its log."""
    logs = list((finished / "results/logs").rglob("fig1.log"))
    assert logs and "fig1: data.source synthetic: synthetic images, not CIFAR-10" in logs[0].read_text()
