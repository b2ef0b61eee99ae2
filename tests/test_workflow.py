"""Workflow tests: dry runs of the shipped configs, mistakes caught at dry-run time, the real DAG end to end."""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ROOT, job_counts, snakemake, workdir_copy

from initmem.pipeline.configfiles import load_config

# each test starts Snakemake (seconds each, more at paper scale): the full suite's, not the edit-test loop's
pytestmark = [pytest.mark.slow, pytest.mark.workflow]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A clean copy of the workflow for dry runs (nothing trained in it)."""
    return workdir_copy(tmp_path_factory.mktemp("project"))


def test_default_dry_run_lists_every_study_and_figure(project):
    out = snakemake("-n", "--cores", "2", "--quiet", "rules", cwd=project).stdout
    counts = job_counts(out)
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    from initmem.pipeline.grid import expand_studies
    from initmem.pipeline.planning import make_packs

    runs = expand_studies(config)
    assert counts["run_metrics"] == sum(len(r) for r in runs.values())
    assert counts["train"] == counts["plan_pack"] == sum(
        len(make_packs(r, config["pack"]["max_models"], config["pack"]["max_images"])) for r in runs.values())
    assert counts["figure"] == 8 and counts["collect_study"] == 6


def test_paper_dry_run_has_8200_runs_in_memory_bounded_packs(project):
    out = snakemake("runs", "-n", "--configfile", "config/paper.yaml", "--quiet", "rules", cwd=project).stdout
    counts = job_counts(out)
    assert counts["run_metrics"] == 8200
    # main: 25 configurations of 250 runs, in packs sized by the rate model (docs/packs.md): within
    # max_images 2048 (models x batch size) and the 1,440-minute cap at the stated H200 rates
    from initmem.pipeline.grid import expand_studies
    from initmem.pipeline.planning import make_packs

    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    pack = config["pack"]
    main = make_packs(expand_studies(config)["main"], pack["max_models"], pack["max_images"], config["compute"])
    # packs grow past the old 8 where the rate model lets them (every pack's runtime fits: test_rates)
    assert 8 < max(len(p) for p in main.values()) <= pack["max_models"] and sum(len(p) for p in main.values()) == 6250
    assert max(len(p) * p[0].spec["batch_size"] for p in main.values()) <= 2048
    assert counts["train"] == counts["plan_pack"] == sum(len(make_packs(r, pack["max_models"], pack["max_images"], config["compute"]))
                                                         for r in expand_studies(config).values())


def test_config_files_layer_over_the_default_and_studies_replace_it(tmp_path):
    # what the workflow resolves is what initmem.pipeline.configfiles says: a full config (paper.yaml) gets
    # nothing from the default, a settings-only file changes only its keys
    work = workdir_copy(tmp_path)
    snakemake("results/config.resolved.yaml", "--cores", "1", "--configfile", "config/paper.yaml", cwd=work)
    resolved = yaml.safe_load((work / "results/config.resolved.yaml").read_text())
    assert resolved == yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    (work / "data").mkdir()
    (work / "data/cifar-10-python.tar.gz").write_bytes(b"stand-in")  # not the official archive: a copy
    proc = snakemake("-n", "--configfile", "config/archive.yaml", cwd=work, check=False)
    assert proc.returncode != 0 and "is not the official CIFAR-10 archive's" in proc.stdout + proc.stderr
    assert "add config/jpeg-copy.yaml to the --configfile files" in proc.stdout + proc.stderr  # the config that accepts a copy
    snakemake("results/config.resolved.yaml", "--cores", "1", "--configfile", "config/archive.yaml", "config/jpeg-copy.yaml", cwd=work)
    resolved = yaml.safe_load((work / "results/config.resolved.yaml").read_text())
    default = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert resolved["studies"] == default["studies"] and resolved["data"]["source"] == "archive"
    assert resolved["data"]["n_train"] == default["data"]["n_train"]
    assert resolved == load_config([ROOT / "config/archive.yaml", ROOT / "config/jpeg-copy.yaml"])


def test_provenance_is_written_only_by_an_invocation_that_ran(tmp_path):
    # a dry run, an invocation refused because another Snakemake holds the lock, and a failed one
    # leave the record of which config wrote the folder's tables and figures as it was
    work = workdir_copy(tmp_path)
    resolved = work / "results/config.resolved.yaml"
    snakemake("-n", "results/config.resolved.yaml", cwd=work)
    assert not resolved.exists()
    (work / ".snakemake/locks").mkdir(parents=True, exist_ok=True)
    (work / ".snakemake/locks/0.output.lock").write_text("results/config.resolved.yaml\n")  # another Snakemake's
    proc = snakemake("results/config.resolved.yaml", "--cores", "1", cwd=work, check=False)
    assert proc.returncode != 0 and "LockException" in proc.stdout + proc.stderr
    assert not resolved.exists()
    (work / ".snakemake/locks/0.output.lock").unlink()
    (work / "copy.tar.gz").write_bytes(b"not an archive")
    (work / "bad.yaml").write_text("data: {source: archive, archive: copy.tar.gz, verify_md5: false}\n")
    proc = snakemake("--cores", "1", "--configfile", "bad.yaml", cwd=work, check=False)
    assert proc.returncode != 0  # prepare_data fails on the archive; its resolved_config job may have run
    assert not resolved.exists()
    snakemake("results/tiny/config.resolved.yaml", "--cores", "1", "--configfile", "config/tiny.yaml", cwd=work)  # name: tiny
    assert (work / "results/tiny/config.resolved.yaml").read_text().splitlines()[0] == "# configfiles: config/tiny.yaml"  # which files to give again
    assert not resolved.exists()  # the default's record is the default's


def test_one_figure_in_a_checkout_of_other_data_says_which_configfile_to_add(tmp_path):
    from initmem.pipeline.invocation import record_provenance

    work = workdir_copy(tmp_path)
    record_provenance(work / "results/config.resolved.yaml", load_config([ROOT / "config/tiny.yaml"]), ["config/tiny.yaml"])
    proc = snakemake("figures/fig6.pdf", "-n", "--quiet", "rules", cwd=work)  # the default config: a download
    note = [line for line in proc.stderr.splitlines() if "--configfile" in line]
    assert len(note) == 1 and note[0].endswith("add --configfile config/tiny.yaml"), proc.stderr[-2000:]
    assert proc.stderr.index(note[0]) < proc.stderr.index("Job stats") if "Job stats" in proc.stderr else True
    assert "written by a config with other" not in proc.stderr  # one line, not two


def test_the_tiny_first_try_after_the_default_files_its_outputs_apart_and_says_so_not_to_add_its_files(tmp_path):
    from initmem.pipeline.invocation import record_provenance

    work = workdir_copy(tmp_path)
    record_provenance(work / "results/config.resolved.yaml", load_config([ROOT / "config/archive.yaml", ROOT / "config/jpeg-copy.yaml"]),
                      ["config/archive.yaml", "config/jpeg-copy.yaml"])
    proc = snakemake("-n", "--configfile", "config/tiny.yaml", cwd=work)
    notes = [line for line in proc.stderr.splitlines() if line.startswith("NOTE")]
    assert len(notes) == 1 and "--configfile" not in notes[0], proc.stderr[-2000:]
    assert notes[0].endswith("prepares its own data and writes its tables and figures under results/tiny/ and figures/tiny/, "
                             "apart from theirs")
    assert "results/tiny/tables/runs.csv" in proc.stdout and "results/tables/runs.csv" not in proc.stdout


def test_diverged_runs_are_summarised_in_one_line(tmp_path):
    from initmem.pipeline.invocation import diverged_summary

    for name, status in (("a", "ok"), ("b", "diverged"), ("c", "diverged")):
        (tmp_path / f"{name}.json").write_text(json.dumps({"status": status}))
    files = [str(tmp_path / f"{n}.json") for n in "abc"]
    assert diverged_summary(files[:1]) is None
    line = diverged_summary(files)
    assert line.startswith("NOTE: 2 run(s) of this invocation diverged") and files[1] in line and files[0] not in line


def test_single_figure_runs_only_its_studies(project):
    out = snakemake("figures/fig8.pdf", "-n", "--configfile", "config/paper.yaml", "--quiet", "rules", cwd=project).stdout
    counts = job_counts(out)
    # norm_aug's 200 runs plus main's 6,250 (Figure 8's no-augmentation baseline); not lr_l2, long, depth, ...
    assert counts["run_metrics"] == 200 + 6250 and counts["collect_study"] == 2 and counts["figure"] == 1


def test_a_schema_error_is_one_line_naming_the_key_and_its_file(project, tmp_path):
    """Snakemake shows the config's schema error as initmem.pipeline.configfiles words it: one line
    naming the key and the file that set it, not a dump of the schema. The messages of every key are
    checked in-process (tests/test_config.py::test_a_bad_key_is_one_line_naming_it_and_its_file)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults:\n  epochs: -3\n")
    proc = snakemake("-n", "--configfile", str(bad), cwd=project, check=False)
    assert proc.returncode != 0
    assert "epochs" in proc.stdout + proc.stderr and f"(set in {bad})" in proc.stdout + proc.stderr
    assert "Failed validating" not in proc.stdout + proc.stderr  # one line, not a dump of the schema


def test_dry_run_stops_on_a_missing_archive(tmp_path):
    work = workdir_copy(tmp_path)
    proc = snakemake("-n", "--configfile", "config/archive.yaml", cwd=work, check=False)
    assert proc.returncode != 0
    assert "data.archive data/cifar-10-python.tar.gz does not exist: put cifar-10-python.tar.gz there" in proc.stdout + proc.stderr


def test_dry_run_warns_when_a_study_feeds_no_figure(project, tmp_path):
    # a renamed study silently dropped four figures; numbers written as 1e-3 are numbers
    studies = tmp_path / "studies.yaml"
    studies.write_text("defaults:\n  lr: 1e-3\nstudies:\n  mainn:\n    grid: {optimizer: [sgd, adam], sigma_w: [0.5, 2.0], seed: [0]}\n")
    proc = snakemake("-n", "--quiet", "rules", "--configfile", str(studies), cwd=project)
    assert "WARNING: study mainn is read by no figure or table" in proc.stderr
    assert "figures not built: fig1 (needs main), fig2 (needs main), fig3 (needs main)" in proc.stderr and "rename mainn -> main?" in proc.stderr
    assert job_counts(proc.stdout)["run_metrics"] == 4 and "figure" not in job_counts(proc.stdout)


def test_lint_is_clean(project):
    proc = snakemake("--lint", cwd=project, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


TINY = load_config([ROOT / "config/tiny.yaml"])  # the shipped first try (README), layered over the default


def _e2e_overlay() -> dict:
    """What the end-to-end test adds to config/tiny.yaml: vectorised packs of 4, a checkpoint every
    epoch, and ``sgd_copy`` (a copy of SGD's file under a new name) in SGD's place in every study that
    names SGD (main, long, norm_aug, depth; lr_l2 keeps the default's SGD), beside Adam."""
    studies = copy.deepcopy(TINY["studies"])
    for study in ("main", "norm_aug", "depth"):
        grid = studies[study]["grid"]
        grid["optimizer"] = ["sgd_copy" if o == "sgd" else o for o in grid["optimizer"]]
    studies["long"].setdefault("set", {})["optimizer"] = "sgd_copy"
    return {"pack": {"engine": "vmap", "max_models": 4}, "checkpoint": {"every_epochs": 1}, "compute": {"device": "cpu"},
            "studies": studies}


def test_end_to_end_tiny_synthetic_dag_with_a_new_optimizer_file(tmp_path, monkeypatch):
    """config/tiny.yaml end to end, in vectorised packs, with one edit to the checkout: a copy of
    SGD's file under a new name (``sgd_copy``), used in SGD's place beside Adam. Every run, table and
    figure, the report, nothing to do the second time, a deleted run file cut again from its pack, and
    the GPU-hour estimate of the same config files (the new optimizer needs no other edit: docs/extending.md)."""
    import shutil

    import initmem.spec as spec
    from initmem.pipeline.grid import expand_studies

    work = workdir_copy(tmp_path)
    shutil.copytree(ROOT / "slurm", work / "slurm")  # estimate reads the Slurm profile's concurrency
    optimizers = work / "workflow/initmem/engine/optimizers"
    shutil.copy(optimizers / "sgd.py", optimizers / "sgd_copy.py")  # the only edit to the checkout
    (work / "e2e.yaml").write_text(yaml.safe_dump(_e2e_overlay(), sort_keys=False))
    configs = ("--configfile", "config/tiny.yaml", "e2e.yaml")
    snakemake("--cores", "2", *configs, cwd=work)

    real = spec.registry_folder  # this process reads the copy's optimizers too (sgd_copy is a known name there)
    monkeypatch.setattr(spec, "registry_folder", lambda kind: optimizers if kind == "optimizer" else real(kind))
    runs = expand_studies(load_config([ROOT / "config/tiny.yaml", work / "e2e.yaml"]))
    for study, rs in runs.items():
        for r in rs:
            assert (work / "results/runs" / study / f"{r.run_id}.json").is_file()
    table = pd.read_csv(work / "results/tiny/tables/runs.csv")  # name: tiny
    assert len(table) == sum(len(r) for r in runs.values()) == len(set(table["run_id"] + table["study"]))
    assert "sgd_copy" in (work / "results/tiny/tables/runs.csv").read_text()
    for name in ("runs.csv", "history.csv.gz", "spreads.csv", "beta.csv", "claims.csv", "claims.md", "paper_tables.md",
                 "clocks.csv", "linear_check.csv"):
        assert (work / "results/tiny/tables" / name).stat().st_size > 0, name
    figures = work / "figures/tiny"
    assert sorted(p.stem for p in figures.glob("*.pdf")) == [f"fig{i}" for i in range(1, 10)]  # every figure of the paper, and Figure 9
    for i in range(1, 10):
        for ext in ("pdf", "png"):
            assert (figures / f"fig{i}.{ext}").stat().st_size > 1000
    assert not list((work / "results").rglob("*.ckpt*"))  # checkpoints removed once metrics are written
    record = json.loads((work / "results/runs/main" / f"{runs['main'][0].run_id}.json").read_text())
    assert (record["env"]["engine"], record["env"]["pack_size"]) == ("vmap", 4)  # trained in a vectorised pack
    assert record["env"]["compile"] is False  # compute.compile reached the trainer
    assert record["env"]["memory_format"] == "contiguous"  # and compute.memory_format
    beta = pd.read_csv(work / "results/tiny/tables/beta.csv")
    assert {"beta", "se", "ci_low", "ci_high", "n", "T_sgd", "T_l2", "T_adapt", "epoch"} <= set(beta.columns)
    # the self-contained HTML report carries every figure with its caption
    snakemake("--report", "report.html", *configs, cwd=work)
    html = (work / "report.html").read_text(errors="replace")
    assert all(f"Figure {i}" in html for i in range(1, 10)) and "claims.csv" in html
    assert "ERROR/" not in html and "Undefined substitution" not in html  # the captions render cleanly
    # second invocation: nothing to do
    again = snakemake("-n", "--cores", "2", *configs, cwd=work)
    assert "Nothing to be done" in again.stdout + again.stderr
    # a deleted run file is cut again from its pack file (nothing retrains): the next invocation plans
    # that alone; asked for that file only, it writes the same bytes
    run_file = work / "results/runs/main" / f"{runs['main'][0].run_id}.json"
    kept = run_file.read_bytes()
    run_file.unlink()
    counts = job_counts(snakemake("-n", "--quiet", "rules", *configs, cwd=work).stdout)
    assert counts["run_metrics"] == 1 and "train" not in counts
    snakemake(str(run_file.relative_to(work)), "--cores", "2", *configs, cwd=work)
    assert run_file.read_bytes() == kept
    # the GPU-hour estimate of the same config files, in the copy (its optimizers folder has sgd_copy)
    estimate = subprocess.run([sys.executable, "-m", "initmem", "estimate", "config/tiny.yaml", "e2e.yaml"], cwd=work,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(work / "workflow")})
    assert estimate.returncode == 0, estimate.stderr
    assert "main" in estimate.stdout


def test_end_to_end_real_archive_slice(tmp_path, cifar_archive):
    work = workdir_copy(tmp_path)
    cfg = copy.deepcopy(TINY)
    cfg.pop("name")  # the default folders
    cfg["pack"]["engine"] = "vmap"
    cfg["data"] = {"source": "archive", "archive": str(cifar_archive), "verify_md5": False,
                   "n_train": 2000, "n_val": 500, "n_test": 500}
    cfg["defaults"].update(width=8, epochs=5, batch_size=16, optimizer="adam", lr=2e-3)  # 625 steps
    cfg["studies"] = {"main": {"grid": {"sigma_w": [1.0], "seed": [0]}}}
    (work / "real.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    # one sigma_w: its run and history tables (spreads and |beta| need two sigma_w, and refuse one)
    snakemake("results/tables/studies/main.runs.csv", "--cores", "2", "--configfile", "real.yaml", cwd=work)
    runs = pd.read_csv(work / "results/tables/studies/main.runs.csv")
    history = pd.read_csv(work / "results/tables/studies/main.history.csv.gz")
    assert len(runs) == 1 and len(history) == 5
    assert history["train_acc"].iloc[-1] > 0.4  # it learns real CIFAR-10 images
    # and beats chance (0.1) on held-out images once Keras' BN moving statistics have settled
    assert history["test_acc"].iloc[-1] > 0.3
