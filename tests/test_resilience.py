"""Resilience: kills (SIGKILL, SIGTERM) mid-training, restarts through Snakemake, corrupt
checkpoints, and bad inputs that must leave no partial outputs."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import snakemake, tiny_config, workdir_copy

RESUME = yaml.safe_dump(tiny_config({"main": {"grid": {"sigma_w": [1.0], "seed": [3]}}},
                                    data={"source": "synthetic", "n_train": 1200, "n_val": 64, "n_test": 64},
                                    checkpoint_every=1, width=8, optimizer="adam", lr=0.001, epochs=4, batch_size=16,
                                    augment=True), sort_keys=False)
RUN = "results/runs/main/main_sw1_s3.json"
CKPT = "main_sw1_s3.ckpt"  # under results/checkpoints/main/<the pack's identity keys>/


def _ckpt(work: Path) -> Path:
    found = list((work / "results/checkpoints/main").glob(f"*/{CKPT}"))
    return found[0] if found else work / "results/checkpoints/main/none" / CKPT


def _metrics(path: Path) -> dict:
    record = json.loads(path.read_text())
    record.pop("wall_seconds")
    return record


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run."""
    work = workdir_copy(tmp_path_factory.mktemp("reference"))
    (work / "c.yaml").write_text(RESUME)
    snakemake(RUN, "--cores", "1", "--configfile", "c.yaml", cwd=work)
    return _metrics(work / RUN)


def _start(work: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "snakemake", RUN, "--cores", "1", "--configfile", "c.yaml"],
                            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _trainer_pid(work: Path) -> int | None:
    """The training process of this work folder (python -m initmem train-plan, run from ``work``)."""
    for pid in subprocess.run(["pgrep", "-f", "initmem train-plan"], capture_output=True, text=True).stdout.split():
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == work.resolve():
                return int(pid)
        except OSError:
            continue
    return None


def _wait_for(condition, timeout=120.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise TimeoutError("condition not reached")


def _epoch_saved(work: Path, epoch: int) -> bool:
    """Whether ``epoch`` is logged and the checkpoint and its ``.prev`` both exist (every epoch saves:
    from epoch 2's save on there are two, except between a save's two renames)."""
    ckpt = _ckpt(work)
    return f"epoch {epoch}/" in _log(work) and ckpt.with_name(ckpt.name + ".prev").exists() and ckpt.exists()


def _signal_with_both_checkpoints_in_place(work: Path, epoch: int, sig: int) -> None:
    """Send ``sig`` to the trainer once ``epoch`` is logged and the checkpoint and its ``.prev`` both
    exist. A save renames the newest to ``.prev`` before the new file takes its name, so a signal
    sent on sight could land between the two renames: the trainer is stopped while both files are
    checked, and let go to check again where it stopped in that gap."""
    while True:
        _wait_for(lambda: _epoch_saved(work, epoch))
        pid = _trainer_pid(work)
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        if _epoch_saved(work, epoch):
            os.kill(pid, sig)
            os.kill(pid, signal.SIGCONT)  # a caught signal is handled once the trainer runs again
            return
        os.kill(pid, signal.SIGCONT)


def _log(work: Path) -> str:
    paths = list((work / "results/logs/train/main").glob("*.log"))
    return paths[0].read_text() if paths else ""


@pytest.mark.slow
@pytest.mark.workflow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_training_resumes_to_identical_metrics(tmp_path, reference, sig):
    work = workdir_copy(tmp_path)
    (work / "c.yaml").write_text(RESUME)
    proc = _start(work)
    _signal_with_both_checkpoints_in_place(work, 2, sig)  # epoch 3 is under way
    proc.wait(timeout=120)
    assert proc.returncode != 0
    assert not (work / RUN).exists()  # no half-written metrics file
    assert _ckpt(work).exists()
    if sig == signal.SIGTERM:
        assert "stopped at epoch 2 step" in _log(work)  # saved mid-epoch
    snakemake(RUN, "--cores", "1", "--configfile", "c.yaml", "--rerun-incomplete", cwd=work)
    assert "resumed at epoch 2" in _log(work)
    assert _metrics(work / RUN) == reference  # bit-identical on CPU (timing aside)
    assert not _ckpt(work).exists()  # removed once the metrics file is written


@pytest.mark.slow
@pytest.mark.workflow
def test_ctrl_c_ends_the_invocation_with_where_it_stopped_and_the_same_command_resumes(tmp_path, reference):
    """Ctrl-C in the terminal (SIGINT to Snakemake's process group): the trainer checkpoints, and the
    invocation's last line is the trainer's, saying where it stopped and how to resume, not
    Snakemake's generic error; the same command resumes to the uninterrupted metrics."""
    work = workdir_copy(tmp_path)
    (work / "c.yaml").write_text(RESUME)
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", RUN, "--cores", "1", "--configfile", "c.yaml"], cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        _wait_for(lambda: "epoch 1/4" in _log(work), timeout=900)  # an epoch, at whatever share of the cores the test gets
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
    lines = [line for line in out.splitlines() if line.strip()]
    assert proc.returncode == 1
    assert re.fullmatch(r"training job \S+ stopped at epoch 1 step \d+, checkpoint saved: run the same command to resume", lines[-1]), out[-3000:]
    assert lines[-1].endswith(" " + _log(work).splitlines()[-1])  # the job's own line, named
    snakemake(RUN, "--cores", "1", "--configfile", "c.yaml", cwd=work)
    assert "resumed at epoch 1" in _log(work)
    assert _metrics(work / RUN) == reference


def _job_shell(snakemake_pid: int) -> int | None:
    """The training job's process that Snakemake started (its shell, or the trainer if the shell replaced itself)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid == snakemake_pid and b"train-plan" in (stat.parent / "cmdline").read_bytes():
                return int(stat.parent.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


@pytest.mark.slow
@pytest.mark.workflow
def test_sigterm_to_a_job_whose_shell_stays_its_parent_reaches_the_trainer(tmp_path):
    """A shell that does not replace itself with its last command (bash < 5.1; here a command after
    it): SIGTERM to the job still reaches the trainer, which checkpoints and exits with the requeue status."""
    work = workdir_copy(tmp_path)
    (work / "c.yaml").write_text(RESUME)
    with open(work / "Snakefile", "a") as fh:
        fh.write('\nshell.suffix("; true")  # bash stays the parent of every job command\n')
    proc = _start(work)
    try:
        _wait_for(lambda: "epoch 1/4" in _log(work))
        job = _job_shell(proc.pid)
        assert job is not None
        os.kill(job, signal.SIGTERM)
        proc.wait(timeout=120)
        log = _log(work)
        assert log.splitlines()[-1].startswith("stopped at epoch 1 step")
        assert _ckpt(work).exists() and not (work / RUN).exists()
    finally:
        proc.kill()
        orphan = _trainer_pid(work)  # a trainer whose shell died without passing the signal on
        if orphan is not None:
            os.kill(orphan, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.workflow
def test_truncated_checkpoint_is_reported_and_training_recovers(tmp_path, reference):
    work = workdir_copy(tmp_path)
    (work / "c.yaml").write_text(RESUME)
    proc = _start(work)
    _signal_with_both_checkpoints_in_place(work, 3, signal.SIGKILL)
    proc.wait(timeout=120)
    # the epoch the killed trainer last logged: 3, or 4 where it finished one more before the kill landed; an epoch
    # is logged before its checkpoint is saved, so the newest checkpoint is of that epoch or the one before
    last = max(int(m) for m in re.findall(r"\] epoch (\d+)/4", _log(work)))
    ckpt = _ckpt(work)
    ckpt.write_bytes(ckpt.read_bytes()[: len(ckpt.read_bytes()) // 2])  # e.g. a full disk
    snakemake(RUN, "--cores", "1", "--configfile", "c.yaml", "--rerun-incomplete", cwd=work)
    log = _log(work)
    assert "truncated or corrupt" in log  # reported
    resumed = re.search(r"resumed at epoch (\d+)", log)  # training fell back to the previous good checkpoint
    assert resumed is not None and int(resumed.group(1)) in (last - 2, last - 1), log
    assert _metrics(work / RUN) == reference


def test_checkpoint_corruption_is_detected(tmp_path, tiny_tensors):
    from conftest import tiny_spec

    from initmem.engine.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

    spec = tiny_spec()
    path = tmp_path / "r.ckpt"
    save_checkpoint(path, spec, {"x": 1})
    assert load_checkpoint(path, spec)["x"] == 1
    save_checkpoint(path, spec, {"x": 2})
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0xFF
    path.write_bytes(bytes(raw))
    assert load_checkpoint(path, spec)["x"] == 1  # the corrupt newest is skipped for the previous one
    path.with_name("r.ckpt.prev").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path, spec)
    with pytest.raises(CheckpointError, match="different spec"):
        save_checkpoint(path, spec, {"x": 3})
        load_checkpoint(path, tiny_spec(sigma_w=2.0))


@pytest.mark.slow
@pytest.mark.workflow
def test_bad_archive_leaves_no_prepared_file(tmp_path):
    work = workdir_copy(tmp_path)
    (work / "bad.tar.gz").write_bytes(b"not an archive")
    (work / "c.yaml").write_text("data:\n  source: archive\n  archive: bad.tar.gz\n  verify_md5: false\n")
    proc = snakemake("data", "--cores", "1", "--configfile", "c.yaml", cwd=work, check=False)
    assert proc.returncode != 0
    assert "not a readable tar.gz archive" in next((work / "results/logs/prepare_data").glob("*.log")).read_text()
    assert not list((work / "results/data").rglob("cifar10.npz"))
    assert not list((work / "results/data").glob("*.part"))


def test_old_format_metrics_file_is_refused_with_a_fix(tmp_path):
    from initmem.claims.analysis import collect
    from initmem.pipeline.records import RecordError

    old = tmp_path / "old.json"
    old.write_text(json.dumps({"run_id": "x", "history": {}}))
    with pytest.raises(RecordError, match="metrics format None.*delete the file"):
        collect([old], "main")


@pytest.mark.slow
@pytest.mark.workflow
def test_empty_study_is_a_config_error(tmp_path):
    work = workdir_copy(tmp_path)
    cfg = yaml.safe_load((work / "config/config.yaml").read_text())
    cfg["studies"] = {"empty": {"grid": {}}}
    (work / "c.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake("-n", "--configfile", "c.yaml", cwd=work, check=False)
    assert proc.returncode != 0 and "sigma_w" in proc.stdout + proc.stderr
