"""One trainer per pack: a second `train-plan` on a pack that another live job trains exits with
one line naming that job and touches nothing; once the first is gone the pack is its to train (or
already finished and kept). Every wait is for an event (a log line, a process's end), never for a duration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_interruptions import _plan, _wait_for_line

from initmem.pipeline.jobs import keys_folder
from initmem.pipeline.packlock import BUSY_EXIT, LEASE_NAME, LOCK_NAME, PackBusy, hold_pack
from initmem.pipeline.planning import read_plan, started_path


def _train_plan(tmp_path: Path, plan: Path, data: Path, log: Path, job: str) -> subprocess.Popen:
    """`train-plan` as the workflow's train job runs it, as Slurm job ``job``."""
    settings = {"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "checkpoint_every": 1}
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1", "SLURM_JOB_ID": job}
    env.pop("SLURM_ARRAY_TASK_ID", None)
    return subprocess.Popen([sys.executable, "-m", "initmem", "train-plan", str(plan), str(data), str(tmp_path / "pack.json"),
                             "--settings", json.dumps(settings), "--checkpoint-dir", str(tmp_path / "ckpt"), "--log", str(log)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    """The folder's files by name: (inode, size); an atomic write's temporary (``*.part``), renamed away
    while the folder is listed, is not part of its state."""
    return {p.name: (p.stat().st_ino, p.stat().st_size) for p in folder.iterdir() if not p.name.endswith(".part")}


@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
def test_a_second_trainer_on_a_pack_in_flight_exits_with_one_line_naming_the_first(tmp_path):
    plan, data = _plan(tmp_path, epochs=40)
    folder = tmp_path / "ckpt" / keys_folder(read_plan(plan))
    first = _train_plan(tmp_path, plan, data, tmp_path / "first.log", job="4242")
    _wait_for_line(first, tmp_path / "first.log", "epoch 2/")  # it has saved a checkpoint (every epoch)
    assert started_path(plan).is_file()  # the pack is marked started: its plan binds
    second = _train_plan(tmp_path, plan, data, tmp_path / "second.log", job="4343")
    before = _folder_state(folder)
    out, _ = second.communicate(timeout=120)
    assert second.returncode == BUSY_EXIT, out
    lines = [x for x in (tmp_path / "second.log").read_text().splitlines() if not x.startswith("=== attempt")]  # the log's header
    assert len(lines) == 1 and "being trained by Slurm job 4242" in lines[0] and f"pid {first.pid}" in lines[0], lines
    assert "trains nothing and deletes nothing" in lines[0]
    if first.poll() is None:  # the second job's refusal left the first one's files as they were
        assert set(before) <= set(_folder_state(folder)) | {"r.ckpt"}
    first.terminate()  # a checkpoint and exit 75, or it had already finished
    first.communicate(timeout=120)
    assert first.returncode in (0, 75)
    again = _train_plan(tmp_path, plan, data, tmp_path / "again.log", job="4343")
    out, _ = again.communicate(timeout=300)
    assert again.returncode == 0, out
    runs = json.loads((tmp_path / "pack.json").read_text())["runs"]
    assert [(r["run_id"], len(r["history"]["epoch"])) for r in runs] == [("r", 40)]
    assert not started_path(plan).exists() and not folder.exists()  # lock, lease and checkpoints gone


@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
def test_a_pack_written_while_waiting_is_not_trained_again(tmp_path):
    plan, data = _plan(tmp_path, epochs=2)
    first = _train_plan(tmp_path, plan, data, tmp_path / "first.log", job="1")
    assert first.wait(timeout=300) == 0, first.stdout.read()
    written = (tmp_path / "pack.json").stat().st_mtime_ns
    second = _train_plan(tmp_path, plan, data, tmp_path / "second.log", job="2")
    assert second.wait(timeout=300) == 0, second.stdout.read()
    assert (tmp_path / "pack.json").stat().st_mtime_ns == written
    assert "finished before, pack kept in" in (tmp_path / "second.log").read_text()  # found kept, the pack file left as it was
    assert "training" not in (tmp_path / "second.log").read_text()


def test_a_lease_left_by_a_dead_job_blocks_no_one(tmp_path):
    """The lock decides, not the lease: a killed job's lease and lock file do not stop the next."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / LOCK_NAME).write_text("")
    (folder / LEASE_NAME).write_text(json.dumps({"host": "gone", "pid": 1, "slurm_job_id": "99"}))
    with hold_pack(folder, "p") as lease:
        assert json.loads((folder / LEASE_NAME).read_text()) == lease and lease["pid"] == os.getpid()
    assert not (folder / LEASE_NAME).exists() and not (folder / LOCK_NAME).exists()


def test_a_pack_held_by_another_process_is_refused_in_one_line(tmp_path):
    """A holder in another process (the lock is per process): the refusal names its pid and job."""
    folder = tmp_path / "ckpt"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from initmem.pipeline.packlock import hold_pack\n"
         f"with hold_pack({str(folder)!r}, 'p'):\n    print('held', flush=True); sys.stdin.read()"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "SLURM_JOB_ID": "777"},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        try:
            with hold_pack(folder, "p"):
                raise AssertionError("a second holder got the pack")
        except PackBusy as exc:
            message = str(exc)
        assert "\n" not in message and "pack p is being trained by Slurm job 777" in message and f"pid {holder.pid}" in message
    finally:
        holder.communicate("", timeout=60)
    with hold_pack(folder, "p"):  # released with its holder
        pass
