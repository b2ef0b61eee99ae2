"""A one-run train job as the workflow starts it (its plan and prepared data) and waiting on a trainer
process's log: the interruption, requeue and pack-lock tests (tests/test_interruptions.py,
tests/test_continuation.py, tests/test_packlock.py) start ``python -m initmem train-plan`` on it."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from conftest import tiny_spec


def one_run_plan(tmp_path: Path, epochs: int) -> tuple[Path, Path]:
    """A one-run pack plan and its prepared data, as the workflow's train job gets them."""
    from initmem.engine.data import build_splits, save_prepared
    from initmem.pipeline.planning import write_plan

    data = tmp_path / "data.npz"
    save_prepared(build_splits({"source": "synthetic", "n_train": 600, "n_val": 32, "n_test": 32}), data)
    spec = tiny_spec(epochs=epochs, batch_size=16, n_train=600, n_val=32, n_test=32)
    write_plan(tmp_path / "plan.json", [{"run_id": "r", "spec": spec, "key": "k"}], data_id={"test": 1})
    return tmp_path / "plan.json", data


def wait_for_line(proc: subprocess.Popen, log: Path, text: str) -> None:
    """Block until ``text`` appears in ``log`` (the trainer flushes each line), or fail if the process ends first."""
    while text not in (log.read_text() if log.exists() else ""):
        assert proc.poll() is None, f"the trainer ended before logging {text!r}:\n{proc.stdout.read()}"
        time.sleep(0.02)  # polling for the event, not waiting for a duration
