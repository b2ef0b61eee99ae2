"""``python -m initmem`` refuses bad input with one line that names the value, exit status 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tiny_config

ROOT = Path(__file__).resolve().parents[1]


def initmem(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    return subprocess.run([sys.executable, "-m", "initmem", *args], cwd=cwd, capture_output=True, text=True, env=env)


def test_estimate_refuses_a_zero_throughput():
    proc = initmem("estimate", "config/paper.yaml", "--images-per-second", "0")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == "initmem estimate: error: --images-per-second 0 must be > 0 (a measured training throughput)"


@pytest.mark.parametrize("change, message", [
    (lambda spec: spec.pop("epochs"), "keys ['epochs'] are missing"),
    (lambda spec: spec.update(lr=-0.1), "lr = -0.1 must be a positive float"),
    (lambda spec: spec.update(optimizer="lamb"), "optimizer = 'lamb' is unknown"),
    (lambda spec: spec.pop("n_train"), "spec lacks ['n_train']"),
])
def test_train_refuses_partial_or_bad_specs_before_training(tmp_path, change, message):
    spec = {**tiny_config({})["defaults"], "sigma_w": 1.0, "seed": 0, "n_train": 64, "n_val": 32, "n_test": 32}
    change(spec)
    (tmp_path / "runs.json").write_text(json.dumps([{"run_id": "r", "spec": spec}]))
    proc = initmem("train", "missing.npz", str(tmp_path / "runs.json"), str(tmp_path / "out"))
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_make_run_names_the_line_of_a_malformed_config_file_before_snakemake_starts(tmp_path):
    # Snakemake reads --configfile files before the workflow and says only "Config file is not valid
    # JSON or YAML": `make run` checks them first, naming file, line and column
    import shutil

    for name in ("Makefile", "workflow"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, tmp_path / name)
    (tmp_path / "good.yaml").write_text("defaults:\n  epochs: 2\n")
    (tmp_path / "bad.yaml").write_text("defaults:\n  epochs: [2\n")
    venv = Path(sys.executable).parents[1]
    proc = subprocess.run(["make", "-o", f"{venv}/.installed", "run", f"VENV={venv}", "ARGS=--configfile good.yaml bad.yaml -n"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "initmem config: error: bad.yaml:3:1: not valid YAML: expected ',' or ']'" in proc.stderr
    assert f"{venv}/bin/snakemake --cores" not in proc.stdout  # stopped before Snakemake ran


def test_config_check_of_snakemake_args_is_silent_for_good_files_and_reads_every_configfile_option():
    from initmem.pipeline.guards import configfile_args

    assert configfile_args(["--cores", "2", "--configfile", "a.yaml", "b.yaml", "-n", "--configfile=c.yaml"]) == ["a.yaml", "b.yaml", "c.yaml"]
    proc = initmem("config", "--snakemake-args", "--cores", "2", "--configfile", "config/tiny.yaml", "config/archive.yaml")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


# `.venv/bin/python -m initmem` as the venv's editable install runs it: the package found on sys.path
# (not through PYTHONPATH), here this checkout's, whatever the folder it is started in.
_AS_INSTALLED = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'initmem'; "
                 "runpy.run_module('initmem', run_name='__main__', alter_sys=True)")


def installed_initmem(*args, cwd: Path, pythonpath: str | None = None):
    """``python -m initmem ARGS`` in ``cwd`` importing this checkout's package as an installed one."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | ({"PYTHONPATH": pythonpath} if pythonpath else {})
    return subprocess.run([sys.executable, "-c", _AS_INSTALLED, str(ROOT / "workflow"), *args], cwd=cwd, capture_output=True,
                          text=True, env=env)


def fake_checkout(folder: Path) -> Path:
    """A folder that looks like another initmem checkout (``workflow/initmem/__init__.py``)."""
    (folder / "workflow/initmem").mkdir(parents=True)
    (folder / "workflow/initmem/__init__.py").write_text("")
    return folder


def test_another_checkouts_code_is_refused_in_one_line_that_gives_the_fix(tmp_path):
    """Started in a checkout with the venv pointing at another one, nothing runs: one line names both
    paths and the command that runs this checkout's code, exit status 2."""
    work = fake_checkout(tmp_path).resolve()
    proc = installed_initmem("estimate", "config/paper.yaml", cwd=work)
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert f"this checkout is {work}, but python imported initmem from {ROOT.resolve() / 'workflow/initmem'}" in line
    assert line.endswith(f"run: PYTHONPATH=workflow {sys.executable} -m initmem estimate config/paper.yaml")


def test_the_checkouts_own_code_runs_from_its_root():
    proc = installed_initmem("--help", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "prepare" in proc.stdout and "this checkout is" not in proc.stderr


def test_a_job_that_names_its_library_runs_whatever_checkout_its_folder_is(tmp_path):
    """Snakemake's jobs start ``python -m initmem`` with PYTHONPATH naming the workflow's library
    (workflow/rules/*.smk), in whatever working folder: the guard never stops them."""
    proc = installed_initmem("--help", cwd=fake_checkout(tmp_path), pythonpath=str(ROOT / "workflow"))
    assert proc.returncode == 0, proc.stderr
    assert "prepare" in proc.stdout
