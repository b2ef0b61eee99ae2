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
from conftest import TINY_TARGETS
from test_workflow import job_counts, snakemake

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
def test_adding_an_optimizer_file_plans_nothing(finished, tmp_path):
    lamb = (finished / "workflow/initmem/engine/optimizers/lion.py").read_text().replace("LION_BETA2 = 0.9, 0.99", "LION_BETA2 = 0.9, 0.9")
    work = _edited(finished, tmp_path, "engine/optimizers/lamb.py", lambda f: f.write_text(lamb))
    assert _plan(work)[0] == {}


@pytest.mark.slow
def test_editing_adams_file_plans_adams_pack_and_no_other(finished, tmp_path):
    work = _edited(finished, tmp_path, "engine/optimizers/adam.py", _append("\n\nA_FIXED_BUG = True\n"))
    counts, text = _plan(work)
    assert counts.get("train") == 1 and counts.get("run_metrics") == 4, counts
    planned = set(re.findall(r"results/packs/main/([^/\s]+)\.json", text))
    assert {_pack_optimizers(work)[p] for p in planned} == {"adam"}
    assert "clocks_table" not in counts and "linear_check" not in counts


@pytest.mark.slow
def test_editing_the_theory_plans_the_clock_table_and_figure_9(finished, tmp_path):
    work = _edited(finished, tmp_path, "theory/calculator.py", _append("\n\nA_FIXED_BUG = True\n"))
    counts, _ = _plan(work)
    assert counts.get("clocks_table") == 1 and counts.get("linear_check") == 1, counts
    assert not {"train", "run_metrics", "collect_study", "figure"} & set(counts)


@pytest.mark.slow
def test_editing_the_figures_style_plans_the_figures(finished, tmp_path):
    work = _edited(finished, tmp_path, "figures/style.py", _append("\n\nA_NEW_STYLE = True\n"))
    counts, _ = _plan(work)
    assert counts.get("figure") == 1 and counts.get("linear_check") == 1, counts
    assert not {"train", "run_metrics", "collect_study", "clocks_table"} & set(counts)
