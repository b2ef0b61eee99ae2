"""Checkpoints on time and what an interrupted save leaves: a timed save lands in the middle of an
epoch and resumes to the uninterrupted record; a save killed half-way (a node failure, an OOM kill)
leaves a partial file that the next resume and the pack's end remove."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys

import torch
from conftest import ROOT, tiny_spec

import initmem.engine.loop as loop
from initmem.engine.checkpoint import CheckpointSchedule, load_checkpoint, partial_saves, save_checkpoint
from initmem.engine.settings import TrainSettings
from initmem.engine.train import train_run
from initmem.pipeline.jobs import finish_pack


def _strip(record: dict) -> str:
    return json.dumps({k: v for k, v in record.items() if k != "wall_seconds"}, sort_keys=True)


def test_a_timed_save_lands_mid_epoch_and_resumes_to_the_same_record(tmp_path, tiny_tensors, monkeypatch):
    """every_minutes: the save comes at the first step past the interval, not at the epoch's end
    (a pack's epoch can be longer than the interval). A clock that moves a minute per reading and a
    3-minute interval save every third step; the first mid-epoch copy resumes to the same record."""
    spec = tiny_spec(epochs=2, batch_size=16)  # 6 steps per epoch
    reference = train_run(spec, tiny_tensors, "r", log=None)
    ticks = iter(range(0, 10**6, 60))
    monkeypatch.setattr(loop, "CheckpointSchedule", functools.partial(CheckpointSchedule, clock=lambda: next(ticks)))
    saves, original = [], loop.save_checkpoint
    ckpt, early = tmp_path / "r.ckpt", tmp_path / "early" / "r.ckpt"

    def spy(path, key, payload):
        original(path, key, payload)
        if not payload.get("finished"):
            saves.append((payload["state"].epoch, payload["state"].step))
            if len(saves) == 1:
                early.parent.mkdir()
                shutil.copy(path, early)
    monkeypatch.setattr(loop, "save_checkpoint", spy)
    timed = train_run(spec, tiny_tensors, "r", settings=TrainSettings(checkpoint_minutes=3), checkpoint=ckpt, log=None)
    assert saves and all(0 < step < 6 for _, step in saves[:1]), saves  # the first save is mid-epoch
    assert len(saves) >= 3 and {epoch for epoch, _ in saves} == {0, 1}
    monkeypatch.undo()
    resumed = train_run(spec, tiny_tensors, "r", checkpoint=early, log=None)
    assert _strip(timed) == _strip(reference) == _strip(resumed)


KILLED_SAVE = """
import os, signal, sys
import torch
import initmem.engine.checkpoint as ck
path = sys.argv[1]
ck.save_checkpoint(path, {"k": 1}, {"x": torch.zeros(1000)})  # a good one
written = {"n": 0}
write = ck._HashingWriter.write
def killing_write(self, data):
    n = write(self, data)
    written["n"] += n
    if written["n"] > 4 << 20:  # killed once 4 MiB of the second save are written
        os.kill(os.getpid(), signal.SIGKILL)
    return n
ck._HashingWriter.write = killing_write
ck.save_checkpoint(path, {"k": 1}, {"x": torch.ones(4 << 20)})
"""


def _killed_mid_save(path) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(path)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "workflow"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == -9, proc.stderr
    parts = partial_saves(path)
    assert len(parts) == 1 and parts[0].stat().st_size > 4 << 20


def test_a_save_killed_half_way_leaves_a_partial_file_that_the_resume_removes(tmp_path):
    path = tmp_path / "pack.ckpt"
    _killed_mid_save(path)
    said = []
    state = load_checkpoint(path, {"k": 1}, report=said.append)
    assert torch.equal(state["x"], torch.zeros(1000))  # the last good save
    assert partial_saves(path) == [] and [p.name for p in tmp_path.iterdir()] == ["pack.ckpt"]
    assert len(said) == 1 and "MiB that an interrupted save of pack.ckpt left" in said[0]


def test_the_packs_end_removes_partial_saves_with_its_checkpoints(tmp_path):
    runs = [{"run_id": "a"}, {"run_id": "b"}]
    path = tmp_path / "a+1.pack.ckpt"
    _killed_mid_save(path)
    save_checkpoint(tmp_path / "a.ckpt", {"k": 1}, {})
    (tmp_path / ".unrelated.json.x.part").write_text("another file's save")
    finish_pack(runs, tmp_path, keep_checkpoints=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".unrelated.json.x.part"]
