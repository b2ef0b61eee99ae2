"""Training jobs keep TorchInductor's graphs in a shared cache (results/compile_cache/ or
$INITMEM_COMPILE_CACHE), not the node's /tmp, and Triton's kernels on the node, one folder per job (a
shared Triton cache on a network file system crashes concurrent compiles); a cache folder the
environment already names is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from initmem.pipeline.compilecache import compile_cache_environment, job_compile_environment


def test_jobs_share_inductor_s_cache_under_the_project_s_results_by_default(tmp_path):
    env = compile_cache_environment({}, tmp_path)
    assert env == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "results" / "compile_cache" / "inductor")}  # no shared Triton cache


def test_a_shared_root_or_a_cache_folder_the_environment_names_is_kept(tmp_path):
    shared = compile_cache_environment({"INITMEM_COMPILE_CACHE": "/scratch/me/torch"}, tmp_path)
    assert shared == {"TORCHINDUCTOR_CACHE_DIR": "/scratch/me/torch/inductor"}
    relative = compile_cache_environment({"INITMEM_COMPILE_CACHE": "cache"}, tmp_path)
    assert relative["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache" / "inductor")  # absolute: a job on another node finds it
    assert compile_cache_environment({"TORCHINDUCTOR_CACHE_DIR": "/site/inductor"}, tmp_path) == {}
    assert job_compile_environment({"TRITON_CACHE_DIR": "/site/triton", "SLURM_JOB_ID": "4242"}) == {}


def test_each_slurm_job_keeps_triton_s_kernels_in_its_own_node_local_folder():
    first = job_compile_environment({"SLURM_JOB_ID": "4242", "TMPDIR": "/local/job4242"})
    assert first == {"TRITON_CACHE_DIR": "/local/job4242/initmem-triton-4242"}
    second = job_compile_environment({"SLURM_JOB_ID": "4243", "TMPDIR": "/local/job4242"})
    assert second["TRITON_CACHE_DIR"] != first["TRITON_CACHE_DIR"]
    import tempfile

    no_tmpdir = job_compile_environment({"SLURM_JOB_ID": "4242"})
    assert no_tmpdir == {"TRITON_CACHE_DIR": str(Path(tempfile.gettempdir()) / "initmem-triton-4242")}


def test_the_training_job_sets_its_triton_cache_before_it_trains(tmp_path, monkeypatch):
    """What ``train-plan`` (the workflow's train job) has in its environment when it starts training."""
    from initmem import cli
    from initmem.pipeline import jobs

    seen = {}
    monkeypatch.setattr(jobs, "train_plan_file", lambda *a, **k: seen.update(triton=os.environ.get("TRITON_CACHE_DIR")))
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "node"))
    cli.main(["train-plan", "plan.json", "data.npz", "pack.json", "--settings",
              '{"device": "cpu", "engine": "loop", "precision": "float32", "compile": false}'])
    assert seen == {"triton": str(tmp_path / "node" / "initmem-triton-4242")}


@pytest.mark.slow
@pytest.mark.workflow
def test_torch_compile_writes_its_kernels_into_the_shared_cache(tmp_path):
    """The variables are the ones torch reads: a compiled function's kernels land in the folder, none in /tmp's default."""
    from conftest import ROOT

    env = {**os.environ, **compile_cache_environment({}, tmp_path), "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1"}
    code = "import torch\nf = torch.compile(lambda x: (x * 2).relu().sum())\nprint(float(f(torch.ones(8))))\n"
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "16.0", proc.stderr[-2000:]
    written = [p for p in Path(env["TORCHINDUCTOR_CACHE_DIR"]).rglob("*") if p.is_file()]
    assert written, "torch.compile wrote nothing into TORCHINDUCTOR_CACHE_DIR"
