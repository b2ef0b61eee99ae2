"""A pack that failed for its size (the GPU out of memory, or a time limit reached without finishing an
epoch) can be shrunk: its trainer removes the started marker that binds its plan and says so in one
line, so that a lower ``pack.max_images`` regroups its runs. Any other stop keeps the plan bound."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from conftest import tiny_spec

from initmem.engine.data import build_splits, save_prepared
from initmem.engine.loop import EpochsFinished, Preempted, StopRequest
from initmem.engine.settings import TrainSettings
from initmem.pipeline import jobs
from initmem.pipeline.interrupted import PREEMPTED_EXIT
from initmem.pipeline.planning import read_trained_plans, started_path, write_plan

SETTINGS = TrainSettings.from_json('{"device": "cpu", "engine": "vmap", "precision": "float32", "compile": false, "attempts": 3}')


def _pack(tmp_path: Path) -> tuple[Path, Path]:
    """A two-run pack plan of study ``main`` and its prepared data, laid out as the workflow keeps them."""
    data = tmp_path / "data.npz"
    save_prepared(build_splits({"source": "synthetic", "n_train": 96, "n_val": 48, "n_test": 48}), data)
    plan = tmp_path / "plans" / "main" / "p1.json"
    write_plan(plan, [{"run_id": f"r{s}", "spec": tiny_spec(seed=s), "key": f"k{s}"} for s in (0, 1)], data_id={"test": 1})
    return plan, data


def _bound(tmp_path: Path) -> list[str]:
    """The plans of study ``main`` that bind their members (started or trained)."""
    return [p.name for p in read_trained_plans(tmp_path / "plans", tmp_path / "packs", "main")]


def _train(tmp_path: Path, plan: Path, data: Path, failure: BaseException, monkeypatch) -> list[list[str]]:
    """Run the job's ``train-plan`` with a training that ends in ``failure``; the returned list receives
    the bound plans as they were while it trained."""
    while_training: list[list[str]] = []

    def failing_train_pack(*args, **kwargs):
        while_training.append(_bound(tmp_path))
        raise failure

    monkeypatch.setattr(jobs, "train_pack", failing_train_pack)
    monkeypatch.setattr(jobs, "install_stop_handlers", lambda: None)  # the test process keeps its own handlers
    with pytest.raises(type(failure) if not isinstance(failure, Preempted) else SystemExit) as ended:
        jobs.train_plan_file(plan, data, tmp_path / "packs" / "main" / "p1.json", SETTINGS, threads=torch.get_num_threads(),
                             checkpoint_dir=tmp_path / "ckpt")
    if isinstance(failure, Preempted):
        assert ended.value.code == PREEMPTED_EXIT
    assert while_training == [["p1"]]  # bound while it trained


def _slurm_stop(monkeypatch, seconds_left: float, epochs_finished: int) -> None:
    """A SIGTERM to a Slurm job ``seconds_left`` before its time limit, after ``epochs_finished`` epochs of this attempt."""
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_JOB_END_TIME", str(int(time.time() + seconds_left)))
    monkeypatch.setattr(StopRequest, "reason", "SIGTERM")
    monkeypatch.setattr(EpochsFinished, "count", epochs_finished)


def test_a_pack_out_of_gpu_memory_is_unbound_so_a_smaller_pack_can_be_planned(tmp_path, monkeypatch, capsys):
    plan, data = _pack(tmp_path)
    _train(tmp_path, plan, data, torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), monkeypatch)
    assert not started_path(plan).exists()
    assert _bound(tmp_path) == []  # its runs are planned afresh
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("pack p1 failed for its size (the GPU ran out of memory): removed its started marker")
    assert str(started_path(plan)) in line and "lower pack.max_images or pack.max_models" in line
    assert str(tmp_path / "ckpt") in line  # the checkpoints a regrouping leaves unused


def test_a_pack_bound_while_it_trains_is_unbound_when_its_time_limit_ends_an_attempt_without_an_epoch(tmp_path, monkeypatch, capsys):
    plan, data = _pack(tmp_path)
    _slurm_stop(monkeypatch, seconds_left=298, epochs_finished=0)
    _train(tmp_path, plan, data, Preempted("stopped at epoch 1 step 7, checkpoint saved"), monkeypatch)
    assert not started_path(plan).exists() and _bound(tmp_path) == []
    err = capsys.readouterr().err
    assert "time limit reached without finishing an epoch in this attempt: not requeued" in err
    assert "pack p1 failed for its size (it reached its time limit without finishing an epoch): removed its started marker" in err


@pytest.mark.parametrize("failure, seconds_left, epochs", [
    (Preempted("stopped at epoch 1 step 7, checkpoint saved"), 298, 1),     # the time limit after an epoch: a continuation
    (Preempted("stopped at epoch 1 step 7, checkpoint saved"), 3600, 0),    # scancel --signal=TERM, a preemption
    (ValueError("a bug"), 298, 0),                                          # any other failure
])
def test_any_other_stop_keeps_the_started_pack_bound(tmp_path, monkeypatch, capsys, failure, seconds_left, epochs):
    plan, data = _pack(tmp_path)
    _slurm_stop(monkeypatch, seconds_left=seconds_left, epochs_finished=epochs)
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol: a continuation says it could not requeue, and the retry resumes
    _train(tmp_path, plan, data, failure, monkeypatch)
    assert started_path(plan).is_file() and _bound(tmp_path) == ["p1"]
    assert "failed for its size" not in capsys.readouterr().err
