"""What makes a run retrain, driven through real Snakemake runs of a tiny config: only new runs are
planned when a seed or sigma_w is added; bookkeeping settings, moving the directory and editing
analysis code retrain nothing; editing the trainer retrains everything; a damaged pack or metrics
file costs no good file; outputs follow the umask; logs keep every attempt."""

import copy
import os
import shutil
import stat

import pytest
import yaml
from conftest import tiny_config
from test_workflow import job_counts, snakemake, workdir_copy

BASE = tiny_config({"main": {"grid": {"optimizer": ["sgd"], "batch_size": [16], "sigma_w": [0.5, 2.0], "seed": [0, 1]}}},
                   pack=4, epochs=1, width=4)
BASE["pack"]["engine"] = "loop"


def _write(work, cfg):
    (work / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _plan(work, *targets):
    """Job counts of a dry run (``{}`` when there is nothing to be done)."""
    out = snakemake(*(targets or ("runs",)), "-n", "--configfile", "c.yaml", "--quiet", "rules", cwd=work)
    text = out.stdout + out.stderr
    return {} if "Nothing to be done" in text else job_counts(text)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The tiny study trained once (4 runs in one pack), with its tables."""
    work = workdir_copy(tmp_path_factory.mktemp("trained"))
    _write(work, BASE)
    snakemake("runs", "results/tables/studies/main.runs.csv", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    return work


@pytest.fixture
def work(trained, tmp_path):
    """A copy of the trained project (mtimes and Snakemake's metadata kept) to change."""
    dest = tmp_path / "project"
    shutil.copytree(trained, dest, symlinks=True)
    return dest


@pytest.mark.slow
@pytest.mark.parametrize("axis, values", [("seed", [0, 1, 2]), ("sigma_w", [0.5, 1.0, 2.0])])
def test_adding_a_seed_or_sigma_trains_only_the_new_runs(work, axis, values):
    cfg = copy.deepcopy(BASE)
    cfg["studies"]["main"]["grid"][axis] = values
    _write(work, cfg)
    counts = _plan(work)
    assert counts["run_metrics"] == 2 and counts["train"] == 1  # the 2 new runs, in one new pack


BOOKKEEPING = [
    ("checkpoint", "every_epochs", 5), ("checkpoint", "keep", True), ("pack", "max_images", 64),
    ("pack", "max_models", 2), ("pack", "engine", "vmap"), ("compute", "device", "auto"), ("compute", "threads", 2),
    ("compute", "compile", True), ("compute", "images_per_second", 5.0), ("compute", "max_runtime_minutes", 600),
    ("compute", "rate_table", None), ("checkpoint", "every_minutes", 30), ("data", "seed", 0),
]


@pytest.mark.slow
def test_bookkeeping_settings_retrain_nothing(work):
    """All of them changed at once (one dry run: each Snakemake start costs seconds): nothing to do."""
    cfg = copy.deepcopy(BASE)
    for section, key, value in BOOKKEEPING:
        cfg[section][key] = value
    _write(work, cfg)
    assert _plan(work) == {}


@pytest.mark.slow
def test_precision_is_part_of_a_runs_identity(work):
    cfg = copy.deepcopy(BASE)
    cfg["compute"]["precision"] = "bf16"
    _write(work, cfg)
    counts = _plan(work)
    assert counts["train"] == 1 and counts["run_metrics"] == 4


@pytest.mark.slow
def test_moving_the_project_retrains_nothing(work, tmp_path):
    moved = tmp_path / "elsewhere" / "project"
    moved.parent.mkdir()
    shutil.move(work, moved)
    assert _plan(moved, "runs", "results/tables/studies/main.runs.csv") == {}


@pytest.mark.slow
def test_touching_data_or_scripts_retrains_nothing(work):
    for path in [work / "results/data/cifar10.npz", *(work / "workflow/scripts").glob("*.py")]:
        os.utime(path)
    assert _plan(work) == {}


@pytest.mark.slow
def test_editing_analysis_code_reruns_tables_not_training(work):
    with open(work / "workflow/initmem/analysis.py", "a") as fh:
        fh.write("\n\ndef _a_new_helper():\n    return 1\n")
    counts = _plan(work, "runs", "results/tables/studies/main.runs.csv")
    assert counts.get("collect_study") == 1 and "train" not in counts and "run_metrics" not in counts


@pytest.mark.slow
def test_editing_the_trainer_retrains_every_pack(work):
    with open(work / "workflow/initmem/train.py", "a") as fh:
        fh.write("\n\nA_FIXED_BUG = True\n")
    counts = _plan(work)
    assert counts["train"] == 1 and counts["run_metrics"] == 4
    # a comment or docstring is not code
    work2 = work.parent / "comment"
    shutil.copytree(work, work2, symlinks=True)
    text = (work2 / "workflow/initmem/train.py").read_text().replace("\n\nA_FIXED_BUG = True\n", "\n# a reworded comment\n")
    (work2 / "workflow/initmem/train.py").write_text(text)
    assert _plan(work2) == {}


@pytest.mark.slow
def test_truncated_pack_file_keeps_its_intact_run_files(work):
    pack = next((work / "results/packs/main").glob("*.json"))
    runs = sorted((work / "results/runs/main").glob("*.json"))
    pack.write_text(pack.read_text()[:200])  # truncated, and newer than the run files
    assert _plan(work) == {}
    assert all(r.stat().st_size > 1000 for r in runs)
    # a run file that must be cut from it again: the error names the pack and the repair command
    runs[0].unlink()
    proc = snakemake(str(runs[0].relative_to(work)), "--cores", "1", "--configfile", "c.yaml", cwd=work, check=False)
    log = (work / "results/logs/runs/main" / runs[0].name.replace(".json", ".log")).read_text()
    assert proc.returncode != 0 and f"{pack.relative_to(work)}: damaged pack file" in log and "rm " in log
    assert all(r.is_file() for r in runs[1:])


@pytest.mark.slow
def test_corrupt_metrics_file_is_named_and_the_advice_repairs_it(work):
    run = next((work / "results/runs/main").glob("*.json"))
    good = run.read_text()
    run.write_text(good[:100])
    proc = snakemake("results/tables/studies/main.runs.csv", "--cores", "1", "--configfile", "c.yaml", cwd=work, check=False)
    log = (work / "results/logs/collect/main.log").read_text()
    assert proc.returncode != 0 and str(run.relative_to(work)) in log
    # the advice: rm the file, make it again from its pack, then everything else
    run.unlink()
    snakemake(str(run.relative_to(work)), "--cores", "1", "--configfile", "c.yaml", cwd=work)
    assert run.read_text() == good
    snakemake("results/tables/studies/main.runs.csv", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    assert (work / "results/tables/studies/main.runs.csv").stat().st_size > 100


@pytest.mark.slow
def test_outputs_follow_the_umask_and_logs_keep_every_attempt(work):
    for path in [work / "results/data/cifar10.npz", *(work / "results/runs/main").glob("*.json"),
                 *(work / "results/packs/main").glob("*.json"), work / "results/tables/studies/main.runs.csv"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask(), path
    pack = next((work / "results/packs/main").glob("*.json"))
    snakemake(str(pack.relative_to(work)), "--cores", "1", "--configfile", "c.yaml", "--forcerun", "train", cwd=work)
    log = (work / "results/logs/train/main" / pack.name.replace(".json", ".log")).read_text()
    assert "=== attempt 1:" in log and "=== attempt 2:" in log and log.count("epoch 1/1") == 8


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_profile_refuses_a_configfile_that_drops_its_studies():
    proc = snakemake("-n", "--profile", "slurm", "--configfile", "config/archive.yaml", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "replaces the configfiles of profile" in text
    assert "--configfile config/paper.yaml config/archive.yaml" in text
