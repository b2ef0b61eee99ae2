"""Training jobs keep TorchInductor's graphs in a shared cache (results/compile_cache/ or
$INITMEM_COMPILE_CACHE), not the node's /tmp, written by one job per shape (the others compile on their
node until it is warm), and Triton's kernels on the node, one folder per job (a shared Triton cache on a
network file system crashes concurrent compiles); a cache folder the environment already names is kept."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from initmem.cluster import packlock
from initmem.cluster.compilecache import (
    STAMP,
    Warming,
    claim_is_gone,
    compile_cache_environment,
    gpu_models,
    inductor_cache,
    job_compile_environment,
    shape_key,
)


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
    kept = inductor_cache({"TORCHINDUCTOR_CACHE_DIR": "/site/inductor", "INITMEM_COMPILE_CACHE": str(tmp_path / "root")}, "s", tmp_path)
    assert kept[:2] == ({}, None) and not (tmp_path / "root").exists()  # nothing claimed
    by_hand = inductor_cache({}, "s", tmp_path)  # train-plan outside the workflow: Inductor's default, as before
    assert by_hand[:2] == ({}, None) and not (tmp_path / "results").exists()


def _members(seeds=(0, 1), batch_size=16) -> list[dict]:
    return [{"run_id": f"r{s}", "key": f"k{s}", "spec": {"arch": "resnet9", "batch_size": batch_size, "sigma_w": 0.1 * (s + 1), "seed": s}}
            for s in seeds]


def test_a_shape_is_what_shapes_the_graphs_not_sigma_w_or_the_seed():
    settings = {"precision": "tf32", "compile": "step", "memory_format": "contiguous", "engine": "vmap", "max_images": 2048,
                "device": "auto", "checkpoint_every": 1}
    data = {"origin": "o", "n_train": 256, "n_val": 500, "n_test": 500}
    key = shape_key(_members(), settings, "2.14.1", data, ["NVIDIA H100 80GB HBM3"])
    assert shape_key(_members(seeds=(5, 6)), {**settings, "checkpoint_every": 5}, "2.14.1", data, ["NVIDIA H100 80GB HBM3"]) == key
    assert shape_key(_members(batch_size=128), settings, "2.14.1", data, ["NVIDIA H100 80GB HBM3"]) != key
    assert shape_key(_members(seeds=(0, 1, 2)), settings, "2.14.1", data, ["NVIDIA H100 80GB HBM3"]) != key  # the pack's size
    assert shape_key(_members(), {**settings, "precision": "bf16"}, "2.14.1", data, ["NVIDIA H100 80GB HBM3"]) != key
    assert shape_key(_members(), {**settings, "device": "cpu"}, "2.14.1", data, ["NVIDIA H100 80GB HBM3"]) != key
    assert shape_key(_members(), settings, "2.15.0", data, ["NVIDIA H100 80GB HBM3"]) != key
    assert shape_key(_members(), settings, "2.14.1", {**data, "resolution": 64}, ["NVIDIA H100 80GB HBM3"]) != key  # the images' size
    assert shape_key(_members(), settings, "2.14.1", data, ["NVIDIA A100-SXM4-80GB"]) != key  # another GPU: Inductor's other entries


def test_the_node_s_gpu_models_are_read_from_the_driver_without_torch(tmp_path):
    for bus, model in (("0000:17:00.0", "NVIDIA H100 80GB HBM3"), ("0000:65:00.0", "NVIDIA H100 80GB HBM3")):
        (tmp_path / bus).mkdir()
        (tmp_path / bus / "information").write_text(f"Model: \t\t {model}\nIRQ:   \t\t 140\nGPU UUID: \t GPU-1\n")
    assert gpu_models(tmp_path) == ["NVIDIA H100 80GB HBM3"]
    assert gpu_models(tmp_path / "absent") == []  # a CPU node


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_one_job_per_shape_writes_the_shared_cache_the_others_compile_on_their_node(tmp_path):
    root = tmp_path / "root"
    shared, warm = root / "inductor", root / "warm"
    alive = lambda claim: False  # the claim's job is alive
    env = {"INITMEM_COMPILE_CACHE": str(root), "TMPDIR": str(tmp_path / "node"), "SLURM_JOB_ID": "7"}
    first, warming, line = inductor_cache(env, "shapeA", tmp_path, gone=alive)
    assert first == {"TORCHINDUCTOR_CACHE_DIR": str(shared)} and warming is not None and "warms shape shapeA" in line
    assert (warm / "shapeA.warming").is_file() and warming.lease["pid"] == os.getpid()
    before = _listing(root)
    second, none, line = inductor_cache({**env, "SLURM_JOB_ID": "8"}, "shapeA", tmp_path, gone=alive)
    assert second == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "node" / "initmem-inductor-8")} and none is None
    assert "another job is warming" in line and "compiles cold" in line
    assert _listing(root) == before  # the second job wrote nothing shared
    other = inductor_cache({**env, "SLURM_JOB_ID": "9"}, "shapeB", tmp_path, gone=alive)
    assert other[0] == first and other[1] is not None  # another shape has its own warmer
    shared.mkdir()  # what Inductor wrote while the warmer compiled
    warming.mark_warm()
    assert (warm / "shapeA.done").is_file() and not (warm / "shapeA.warming").exists()
    third, none, line = inductor_cache({**env, "SLURM_JOB_ID": "10"}, "shapeA", tmp_path, gone=alive)
    assert third == first and none is None and "is warm" in line
    assert not (warm / "shapeA.warming").exists()  # a reader claims nothing


def test_a_warm_mark_whose_graphs_were_deleted_is_warmed_anew(tmp_path):
    env = {"INITMEM_COMPILE_CACHE": str(tmp_path)}
    (tmp_path / "warm").mkdir()
    (tmp_path / "warm" / "s.done").write_text("{}")  # inductor/ deleted by hand, warm/ left
    variables, warming, line = inductor_cache(env, "s", tmp_path, gone=lambda claim: False)
    assert warming is not None and "warms shape s" in line and not (tmp_path / "warm" / "s.done").exists()


def test_a_claim_whose_job_is_gone_is_taken_over(tmp_path):
    env = {"INITMEM_COMPILE_CACHE": str(tmp_path)}
    inductor_cache(env, "s", tmp_path, gone=lambda claim: False)
    judged = []
    variables, warming, _ = inductor_cache(env, "s", tmp_path, gone=lambda claim: judged.append(claim) or True)
    assert warming is not None and variables["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")
    assert judged and judged[0]["pid"] == os.getpid()  # the claim names the job that wrote it
    assert json.loads((tmp_path / "warm" / "s.warming").read_text()) == warming.lease  # the claim is this job's now


def test_a_stale_claim_left_by_a_dead_job_on_this_host_is_taken_over_by_default(tmp_path, monkeypatch):
    """No fake judge: the lease's pid on this host decides (pids faked: none is started)."""
    (tmp_path / "warm").mkdir()
    stale = {"host": socket.gethostname(), "pid": 424242, "user": "me", "slurm_job_id": None, "since": "2026-01-01T00:00:00Z"}
    (tmp_path / "warm" / "s.warming").write_text(json.dumps(stale))
    monkeypatch.setattr(packlock, "pid_alive", lambda pid: pid != 424242)
    variables, warming, line = inductor_cache({"INITMEM_COMPILE_CACHE": str(tmp_path)}, "s", tmp_path)
    assert warming is not None and "warms shape s" in line and warming.lease["pid"] == os.getpid()
    monkeypatch.setattr(packlock, "pid_alive", lambda pid: True)  # now its pid is alive: the next job compiles on its node
    assert inductor_cache({"INITMEM_COMPILE_CACHE": str(tmp_path), "TMPDIR": str(tmp_path / "n")}, "s", tmp_path)[1] is None


def _stamp(seconds: float) -> str:
    return time.strftime(STAMP, time.gmtime(seconds))


def test_a_claim_s_job_is_judged_by_its_pid_here_by_squeue_elsewhere_and_a_fresh_one_asks_no_squeue(monkeypatch):
    now = 1_800_000_000.0
    asked = []

    def queue(jobs):
        def ask(users):
            asked.append(users)
            return packlock.SlurmQueue(frozenset(jobs))
        return ask

    other = {"host": "node-elsewhere", "pid": 1, "user": "me", "slurm_job_id": "77"}
    fresh, old = {**other, "since": _stamp(now - 60)}, {**other, "since": _stamp(now - 3600)}
    assert not claim_is_gone(fresh, "80", now, queue([])) and asked == []  # a wave starting together asks Slurm nothing
    assert claim_is_gone(old, "80", now, queue([])) and asked == [["me"]]  # no longer queued or running
    assert not claim_is_gone(old, "80", now, queue(["77"]))
    assert claim_is_gone(fresh, "77", now, queue(["77"]))  # an earlier attempt of this very job
    monkeypatch.setattr(packlock, "pid_alive", lambda pid: pid == 5)
    here = {"host": socket.gethostname(), "user": "me", "slurm_job_id": None, "since": _stamp(now - 5)}
    assert claim_is_gone({**here, "pid": 6}, None, now, queue([])) and not claim_is_gone({**here, "pid": 5}, None, now, queue([]))


def test_a_claim_whose_job_cannot_be_judged_is_taken_over_only_once_stale(tmp_path, monkeypatch):
    now = 1_800_000_000.0
    outside_slurm = {"host": "node-elsewhere", "pid": 1, "user": "me", "slurm_job_id": None}
    assert not claim_is_gone({**outside_slurm, "since": _stamp(now - 3 * 3600)}, None, now)
    assert claim_is_gone({**outside_slurm, "since": _stamp(now - 13 * 3600)}, None, now)
    failing = lambda users: packlock.SlurmQueue(None, "squeue did not answer")
    slurm = {**outside_slurm, "slurm_job_id": "77"}
    assert not claim_is_gone({**slurm, "since": _stamp(now - 3600)}, None, now, failing)
    assert claim_is_gone({**slurm, "since": _stamp(now - 13 * 3600)}, None, now, failing)
    from initmem.cluster.compilecache import read_claim

    empty = tmp_path / "s.warming"
    empty.write_text("")  # a job died between creating its claim and writing it: its file's time counts
    os.utime(empty, (now - 13 * 3600, now - 13 * 3600))
    assert claim_is_gone(read_claim(empty), None, now)
    os.utime(empty, (now - 60, now - 60))
    assert not claim_is_gone(read_claim(empty), None, now)
    monkeypatch.setattr(packlock, "pid_alive", lambda pid: True)  # a pid reused on this host
    here = {"host": socket.gethostname(), "pid": 5, "user": "me", "slurm_job_id": None}
    assert not claim_is_gone({**here, "since": _stamp(now - 3600)}, None, now)
    assert claim_is_gone({**here, "since": _stamp(now - 13 * 3600)}, None, now)


def test_a_warmer_gives_up_only_its_own_claim(tmp_path):
    env = {"INITMEM_COMPILE_CACHE": str(tmp_path)}
    _, warming, _ = inductor_cache(env, "s", tmp_path, gone=lambda claim: False)
    warming.claim.write_text(json.dumps({"host": "elsewhere", "pid": 9}))  # another job took it over meanwhile
    warming.give_up()
    assert warming.claim.is_file()


def test_a_shared_root_that_cannot_be_written_leaves_the_job_on_its_node(tmp_path):
    (tmp_path / "file").write_text("")
    env = {"INITMEM_COMPILE_CACHE": str(tmp_path / "file" / "root"), "TMPDIR": str(tmp_path / "node"), "SLURM_JOB_ID": "3"}
    variables, warming, line = inductor_cache(env, "s", tmp_path)
    assert variables == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "node" / "initmem-inductor-3")} and warming is None
    assert "could not claim shape s" in line


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


def test_a_warmer_that_cannot_write_its_mark_says_so_and_does_not_fail(tmp_path, capsys):
    import shutil

    _, warming, _ = inductor_cache({"INITMEM_COMPILE_CACHE": str(tmp_path / "root")}, "s", tmp_path, gone=lambda claim: False)
    (tmp_path / "root" / "warm").rename(tmp_path / "gone")  # the shared root vanished under the job
    (tmp_path / "root" / "warm").write_text("")  # and a file stands where its folder was
    with warming.watching(lambda: 1, poll=3600):
        pass
    assert "could not mark shape s warm" in capsys.readouterr().err
    shutil.rmtree(tmp_path / "gone")


def test_the_watch_marks_the_shape_warm_while_the_job_still_trains(tmp_path):
    import threading

    marked = threading.Event()

    class Watched(Warming):
        def mark_warm(self) -> None:
            super().mark_warm()
            marked.set()

    _, claimed, _ = inductor_cache({"INITMEM_COMPILE_CACHE": str(tmp_path)}, "s", tmp_path, gone=lambda claim: False)
    warming, looked, epochs = Watched(claimed.claim, claimed.done, claimed.lease), threading.Event(), [0]

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


def test_a_training_job_with_compile_off_claims_nothing(tmp_path, monkeypatch):
    from initmem import cli
    from initmem.io import write_json
    from initmem.pipeline import jobs

    write_json(tmp_path / "plan.json", {"format": 1, "members": _members(), "data": "d"})
    seen = {}
    monkeypatch.setattr(jobs, "train_plan_file", lambda *a, **k: seen.update(inductor=os.environ.get("TORCHINDUCTOR_CACHE_DIR")))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("INITMEM_COMPILE_CACHE", str(tmp_path / "root"))
    monkeypatch.chdir(tmp_path)
    cli.main(["train-plan", "plan.json", "data.npz", "pack.json", "--settings",
              '{"device": "cpu", "engine": "loop", "precision": "float32", "compile": false}'])
    assert seen == {"inductor": None} and not (tmp_path / "root").exists()


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
