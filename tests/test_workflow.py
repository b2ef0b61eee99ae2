"""Workflow tests: dry runs of both configs, schema errors, the real DAG end to end."""

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import tiny_config

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
PAPER_COUNTS = {"main": 6250, "long": 10, "lr_l2": 120, "norm_aug": 200, "best_recipe": 120, "depth": 1500}


def snakemake(*args, cwd=ROOT, check=True):
    proc = subprocess.run([*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def job_counts(output: str) -> dict:
    table = output[output.index("Job stats:"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def workdir_copy(tmp_path: Path) -> Path:
    """A throwaway copy of the workflow (Snakefile, workflow/, config/, envs/) to run in."""
    import shutil

    for name in ("Snakefile", "workflow", "config", "envs"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    return tmp_path


def test_default_dry_run_lists_every_study_and_figure():
    out = snakemake("-n", "--cores", "2", "--quiet", "rules").stdout
    counts = job_counts(out)
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    from initmem.grid import expand_studies
    from initmem.planning import make_packs

    runs = expand_studies(config)
    assert counts["run_metrics"] == sum(len(r) for r in runs.values())
    assert counts["train"] == counts["plan_pack"] == sum(
        len(make_packs(r, config["pack"]["max_models"], config["pack"]["max_images"])) for r in runs.values())
    assert counts["figure"] == 8 and counts["collect_study"] == 6


def test_paper_dry_run_has_8200_runs_in_memory_bounded_packs():
    out = snakemake("runs", "-n", "--configfile", "config/paper.yaml", "--quiet", "rules").stdout
    counts = job_counts(out)
    assert counts["run_metrics"] == 8200
    # main: 25 configurations of 250 runs; max_images 2048 allows 16 models up to b=128, 8 at b=256
    # (4 batch sizes x 5 optimizers x 16 packs + 5 x 32); the other studies' counts follow the same rule
    from initmem.grid import expand_studies
    from initmem.planning import make_packs

    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    main = make_packs(expand_studies(config)["main"], 16, 2048, config["compute"])
    # 16 runs of 300 epochs would need ~47 h at the assumed 2,000 images/s, over the 1,440-minute
    # cap: packs of 8 (31 per configuration, and one of the remaining 2)
    assert len(main) == 25 * 32 and {len(p) for p in main.values()} == {8, 2}
    assert max(len(p) * p[0].spec["batch_size"] for p in main.values()) <= 2048
    assert counts["train"] == counts["plan_pack"] == sum(len(make_packs(r, 16, 2048, config["compute"]))
                                                         for r in expand_studies(config).values())


def test_paper_config_replaces_the_default_entirely(tmp_path):
    # Snakemake would merge a --configfile over the Snakefile's configfile key by key; the Snakefile
    # loads the default only when no config file defines studies, so nothing of it leaks in.
    work = workdir_copy(tmp_path)
    snakemake("results/config.resolved.yaml", "--cores", "1", "--configfile", "config/paper.yaml", cwd=work)
    resolved = yaml.safe_load((work / "results/config.resolved.yaml").read_text())
    assert resolved == yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    # a settings-only config file (no studies) layers over the default instead
    snakemake("results/config.resolved.yaml", "--cores", "1", "--configfile", "config/archive.yaml", cwd=work)
    resolved = yaml.safe_load((work / "results/config.resolved.yaml").read_text())
    default = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert resolved["studies"] == default["studies"] and resolved["data"]["source"] == "archive"
    assert resolved["data"]["n_train"] == default["data"]["n_train"]


def test_single_figure_runs_only_its_studies():
    out = snakemake("figures/fig8.pdf", "-n", "--configfile", "config/paper.yaml", "--quiet", "rules").stdout
    counts = job_counts(out)
    # norm_aug's 200 runs plus main's 6,250 (Figure 8's no-augmentation baseline); not lr_l2, long, depth, ...
    assert counts["run_metrics"] == 200 + 6250 and counts["collect_study"] == 2 and counts["figure"] == 1


@pytest.mark.parametrize("override,message", [
    ("defaults:\n  optimizer: lion\n", "lion"),
    ("defaults:\n  epochs: -3\n", "epochs"),
    ("pack:\n  max_models: 0\n", "max_models"),
    ("pack:\n  engine: jax\n", "engine"),
    ("compute:\n  precision: fp8\n", "precision"),
    ("compute:\n  compile: maybe\n", "compile"),
    ("data:\n  colour: red\n", "colour"),
])
def test_schema_errors_name_the_key(tmp_path, override, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(override)
    proc = snakemake("-n", "--configfile", str(bad), check=False)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr


def test_lint_is_clean():
    proc = snakemake("--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


TINY = tiny_config(
    studies={
        "main": {"grid": {"optimizer": ["sgd", "adam", "adamw", "muon"], "batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0, 1]}},
        "long": {"set": {"schedule": "constant", "epochs": 3}, "grid": {"batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0]}},
        "lr_l2": {"grid": {"lr": [0.01, 0.1], "l2": [0.0, 0.01], "batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0]}},
        "norm_aug": {"set": {"augment": True}, "grid": {"norm": ["batchnorm", "layernorm"], "optimizer": ["sgd", "adam"],
                                                        "batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0]}},
        "best_recipe": {"set": {"augment": True},
                        "variants": {"sgd_standard": {"optimizer": "sgd_momentum", "lr": 0.1, "weight_decay": 5.0e-4},
                                     "adam": {"optimizer": "adam", "lr": 0.001}},
                        "grid": {"batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0]}},
        "depth": {"variants": {"resnet56": {"arch": "resnet56", "patience": 30}, "r9avg": {"pool": "avg"}},
                  "grid": {"optimizer": ["sgd", "adam"], "batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0]}},
    },
    pack=4, checkpoint_every=1,
)


@pytest.mark.slow
def test_end_to_end_tiny_synthetic_dag(tmp_path):
    work = workdir_copy(tmp_path)
    (work / "tiny.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    snakemake("--cores", "2", "--configfile", "tiny.yaml", cwd=work)
    config = TINY
    from initmem.grid import expand_studies

    runs = expand_studies(config)
    for study, rs in runs.items():
        for r in rs:
            assert (work / "results/runs" / study / f"{r.run_id}.json").is_file()
    table = pd.read_csv(work / "results/tables/runs.csv")
    assert len(table) == sum(len(r) for r in runs.values()) == len(set(table["run_id"] + table["study"]))
    for name in ("spreads.csv", "beta.csv", "claims.csv", "claims.md", "paper_tables.md", "history.csv.gz"):
        assert (work / "results/tables" / name).stat().st_size > 0
    for i in range(1, 9):
        for ext in ("pdf", "png"):
            assert (work / f"figures/fig{i}.{ext}").stat().st_size > 1000
    assert not list((work / "results").rglob("*.ckpt*"))  # checkpoints removed once metrics are written
    record = json.loads((work / "results/runs/main" / f"{runs['main'][0].run_id}.json").read_text())
    assert (record["env"]["engine"], record["env"]["pack_size"]) == ("vmap", 4)  # trained in a vectorised pack
    assert record["env"]["compile"] is False  # compute.compile reached the trainer
    beta = pd.read_csv(work / "results/tables/beta.csv")
    assert {"beta", "se", "ci_low", "ci_high", "n", "T_sgd", "T_l2", "T_adapt", "epoch"} <= set(beta.columns)
    # the self-contained HTML report carries every figure with its caption
    snakemake("--report", "report.html", "--configfile", "tiny.yaml", cwd=work)
    html = (work / "report.html").read_text(errors="replace")
    assert all(f"Figure {i}" in html for i in range(1, 9)) and "claims.csv" in html
    # second invocation: nothing to do
    assert "Nothing to be done" in snakemake("-n", "--cores", "2", "--configfile", "tiny.yaml", cwd=work).stdout + \
        snakemake("-n", "--cores", "2", "--configfile", "tiny.yaml", cwd=work).stderr


@pytest.mark.slow
def test_end_to_end_real_archive_slice(tmp_path, cifar_archive):
    work = workdir_copy(tmp_path)
    cfg = copy.deepcopy(TINY)
    cfg["data"] = {"source": "archive", "archive": str(cifar_archive), "verify_md5": False,
                   "n_train": 2000, "n_val": 500, "n_test": 500}
    cfg["defaults"].update(width=8, epochs=5, batch_size=16, optimizer="adam", lr=2e-3)  # 625 steps
    cfg["studies"] = {"main": {"grid": {"sigma_w": [1.0], "seed": [0]}}}
    (work / "real.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake("tables", "--cores", "2", "--configfile", "real.yaml", cwd=work)
    runs = pd.read_csv(work / "results/tables/runs.csv")
    history = pd.read_csv(work / "results/tables/history.csv.gz")
    assert len(runs) == 1 and len(history) == 5
    assert history["train_acc"].iloc[-1] > 0.4  # it learns real CIFAR-10 images
    # and beats chance (0.1) on held-out images once Keras' BN moving statistics have settled
    assert history["test_acc"].iloc[-1] > 0.3
