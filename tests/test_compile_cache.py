"""Training jobs keep TorchInductor's graphs in a shared cache (results/compile_cache/ or
$INITMEM_COMPILE_CACHE), not the node's /tmp, written by one job per shape (the others compile on their
node until it is warm), and Triton's kernels on the node, one folder per job (a shared Triton cache on a
network file system crashes concurrent compiles); a cache folder the environment already names is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from initmem.pipeline.compilecache import compile_cache_environment, inductor_cache, job_compile_environment, shape_key


def test_jobs_share_one_compile_cache_root_under_the_project_s_results_by_default(tmp_path):
    env = compile_cache_environment({}, tmp_path)
    assert env == {"INITMEM_COMPILE_CACHE": str(tmp_path / "results" / "compile_cache")}  # no shared Triton cache


def test_a_shared_root_or_a_cache_folder_the_environment_names_is_kept(tmp_path):
    shared = compile_cache_environment({"INITMEM_COMPILE_CACHE": "/scratch/me/torch"}, tmp_path)
    assert shared == {"INITMEM_COMPILE_CACHE": "/scratch/me/torch"}
    relative = compile_cache_environment({"INITMEM_COMPILE_CACHE": "cache"}, tmp_path)
    assert relative["INITMEM_COMPILE_CACHE"] == str(tmp_path / "cache")  # absolute: a job on another node finds it
    assert compile_cache_environment({"TORCHINDUCTOR_CACHE_DIR": "/site/inductor"}, tmp_path) == {}
    assert job_compile_environment({"TRITON_CACHE_DIR": "/site/triton", "SLURM_JOB_ID": "4242"}) == {}
    kept = inductor_cache({"TORCHINDUCTOR_CACHE_DIR": "/site/inductor"}, "s", tmp_path)
    assert kept[:2] == ({}, None) and not (tmp_path / "results").exists()  # nothing claimed


def _members(seeds=(0, 1), batch_size=16) -> list[dict]:
    return [{"run_id": f"r{s}", "key": f"k{s}", "spec": {"arch": "resnet9", "batch_size": batch_size, "sigma_w": 0.1 * (s + 1), "seed": s}}
            for s in seeds]


def test_a_shape_is_what_shapes_the_graphs_not_sigma_w_or_the_seed():
    settings = {"precision": "tf32", "compile": "step", "memory_format": "contiguous", "engine": "vmap", "max_images": 2048}
    key = shape_key(_members(), settings, "2.14.1")
    assert shape_key(_members(seeds=(5, 6)), settings, "2.14.1") == key
    assert shape_key(_members(batch_size=128), settings, "2.14.1") != key
    assert shape_key(_members(seeds=(0, 1, 2)), settings, "2.14.1") != key  # the pack's size
    assert shape_key(_members(), {**settings, "precision": "bf16"}, "2.14.1") != key
    assert shape_key(_members(), settings, "2.15.0") != key


def test_one_job_per_shape_writes_the_shared_cache_the_others_compile_on_their_node(tmp_path):
    shared, warm = tmp_path / "root" / "inductor", tmp_path / "root" / "warm"
    alive = lambda claim: False  # the claim's job is alive
    env = {"INITMEM_COMPILE_CACHE": str(tmp_path / "root"), "TMPDIR": str(tmp_path / "node"), "SLURM_JOB_ID": "7"}
    first, warming, line = inductor_cache(env, "shapeA", tmp_path, gone=alive)
    assert first == {"TORCHINDUCTOR_CACHE_DIR": str(shared)} and warming is not None and "warms shape shapeA" in line
    assert (warm / "shapeA.warming").is_file()
    second, none, line = inductor_cache({**env, "SLURM_JOB_ID": "8"}, "shapeA", tmp_path, gone=alive)
    assert second == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "node" / "initmem-inductor-8")} and none is None
    assert "another job is warming" in line
    other = inductor_cache({**env, "SLURM_JOB_ID": "9"}, "shapeB", tmp_path, gone=alive)
    assert other[0] == first and other[1] is not None  # another shape has its own warmer
    warming.mark_warm()
    assert (warm / "shapeA.done").is_file() and not (warm / "shapeA.warming").exists()
    third, none, line = inductor_cache({**env, "SLURM_JOB_ID": "10"}, "shapeA", tmp_path, gone=alive)
    assert third == first and none is None and "is warm" in line


def test_a_claim_whose_job_is_gone_is_taken_over(tmp_path):
    env = {"INITMEM_COMPILE_CACHE": str(tmp_path)}
    inductor_cache(env, "s", tmp_path, gone=lambda claim: False)
    judged = []
    variables, warming, _ = inductor_cache(env, "s", tmp_path, gone=lambda claim: judged.append(claim) or True)
    assert warming is not None and variables["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")
    assert judged and judged[0]["pid"] == os.getpid()  # the claim names the job that wrote it


def test_the_warmer_marks_its_shape_warm_after_its_first_epoch_and_gives_up_a_claim_it_never_used(tmp_path):
    env = {"INITMEM_COMPILE_CACHE": str(tmp_path)}
    _, warming, _ = inductor_cache(env, "s", tmp_path, gone=lambda claim: False)
    with warming.watching(lambda: 0, poll=3600):
        pass  # ended before its first epoch
    assert not warming.claim.exists() and not warming.done.exists()
    _, warming, _ = inductor_cache(env, "s", tmp_path, gone=lambda claim: False)
    epochs = [0]
    with warming.watching(lambda: epochs[0], poll=3600):
        assert not warming.done.exists()
        epochs[0] = 1  # its first epoch finished
    assert warming.done.is_file() and not warming.claim.exists()


def test_the_watch_marks_the_shape_warm_while_the_job_still_trains(tmp_path):
    import threading

    from initmem.pipeline.compilecache import Warming

    marked = threading.Event()

    class Watched(Warming):
        def mark_warm(self) -> None:
            super().mark_warm()
            marked.set()

    _, claimed, _ = inductor_cache({"INITMEM_COMPILE_CACHE": str(tmp_path)}, "s", tmp_path, gone=lambda claim: False)
    warming, looked, epochs = Watched(claimed.claim, claimed.done), threading.Event(), [0]

    def finished() -> int:
        looked.set()
        return epochs[0]

    with warming.watching(finished, poll=0.001):
        assert looked.wait(60) and not warming.done.exists()
        epochs[0] = 1
        assert marked.wait(60) and warming.done.is_file()  # marked before the job ended


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


def test_a_compiling_training_job_claims_its_shape_and_marks_it_warm_after_an_epoch(tmp_path, monkeypatch, capsys):
    from initmem import cli
    from initmem.engine.loop import EpochsFinished
    from initmem.io import write_json
    from initmem.pipeline import jobs

    write_json(tmp_path / "plan.json", {"format": 1, "members": _members(), "data": "d"})
    seen = {}

    def train(*args, **kwargs):
        seen["inductor"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        seen["claimed"] = sorted(p.name for p in (tmp_path / "root" / "warm").iterdir())
        EpochsFinished.count += 1

    monkeypatch.setattr(jobs, "train_plan_file", train)
    monkeypatch.setattr(EpochsFinished, "count", 0)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("INITMEM_COMPILE_CACHE", str(tmp_path / "root"))
    monkeypatch.chdir(tmp_path)
    cli.main(["train-plan", "plan.json", "data.npz", "pack.json", "--settings",
              '{"device": "cpu", "engine": "loop", "precision": "float32", "compile": "step"}'])
    assert seen["inductor"] == str(tmp_path / "root" / "inductor") and len(seen["claimed"]) == 1
    assert seen["claimed"][0].endswith(".warming")
    assert [p.suffix for p in (tmp_path / "root" / "warm").iterdir()] == [".done"]
    assert "this job warms shape" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.workflow
def test_torch_compile_writes_its_kernels_into_the_shared_cache(tmp_path):
    """The variables are the ones torch reads: a compiled function's kernels land in the folder, none in /tmp's default."""
    from conftest import ROOT

    variables = inductor_cache(compile_cache_environment({}, tmp_path), "s", tmp_path)[0]
    env = {**os.environ, **variables, "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1"}
    code = "import torch\nf = torch.compile(lambda x: (x * 2).relu().sum())\nprint(float(f(torch.ones(8))))\n"
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "16.0", proc.stderr[-2000:]
    written = [p for p in Path(env["TORCHINDUCTOR_CACHE_DIR"]).rglob("*") if p.is_file()]
    assert written, "torch.compile wrote nothing into TORCHINDUCTOR_CACHE_DIR"
