"""One trainer per pack: a second `train-plan` on a pack that another live job trains exits with
one line naming that job and touches nothing; once the first is gone the pack is its to train (or
already finished and kept). On a file system whose POSIX locks are node-local or missing the lease decides
(a live Slurm job by `squeue`, a live pid on this host), and a restarted main Snakemake starts no
pack that a live job trains. Every wait is for an event (a log line, a process's end), never for a
duration; Slurm is a fake `squeue` on PATH."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from helpers.train_jobs import one_run_plan, wait_for_line

from initmem.cluster.packlock import BUSY_EXIT, LEASE_NAME, LOCK_NAME, PackBusy, hold_pack
from initmem.pipeline.jobs import keys_folder
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
    plan, data = one_run_plan(tmp_path, epochs=40)
    folder = tmp_path / "ckpt" / keys_folder(read_plan(plan))
    first = _train_plan(tmp_path, plan, data, tmp_path / "first.log", job="4242")
    wait_for_line(first, tmp_path / "first.log", "epoch 2/")  # it has saved a checkpoint (every epoch)
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
    plan, data = one_run_plan(tmp_path, epochs=2)
    first = _train_plan(tmp_path, plan, data, tmp_path / "first.log", job="1")
    assert first.wait(timeout=300) == 0, first.stdout.read()
    written = (tmp_path / "pack.json").stat().st_mtime_ns
    second = _train_plan(tmp_path, plan, data, tmp_path / "second.log", job="2")
    assert second.wait(timeout=300) == 0, second.stdout.read()
    assert (tmp_path / "pack.json").stat().st_mtime_ns == written
    assert "finished before, pack kept in" in (tmp_path / "second.log").read_text()  # found kept, the pack file left as it was
    assert "training" not in (tmp_path / "second.log").read_text()


def test_a_lease_left_by_a_dead_job_blocks_no_one(tmp_path, monkeypatch, capsys):
    """A killed job's lease and lock file do not stop the next: its Slurm job is no longer queued."""
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    calls = _fake_squeue(tmp_path, monkeypatch, "")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / LOCK_NAME).write_text("")
    (folder / LEASE_NAME).write_text(json.dumps({"host": "gone", "pid": 1, "slurm_job_id": "99"}))
    with hold_pack(folder, "p") as lease:
        assert json.loads((folder / LEASE_NAME).read_text()) == lease and lease["pid"] == os.getpid()
    assert not (folder / LEASE_NAME).exists() and not (folder / LOCK_NAME).exists()
    assert capsys.readouterr().err == "pack p: taking over the lease of Slurm job 99 (pid 1 on gone, since None): Slurm job 99 is no " \
                                      "longer queued or running\n"
    assert len(calls.read_text().splitlines()) == 1


def test_a_pack_held_by_another_process_is_refused_in_one_line(tmp_path):
    """A holder in another process (the lock is per process): the refusal names its pid and job."""
    folder = tmp_path / "ckpt"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from initmem.cluster.packlock import hold_pack\n"
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


def _fake_squeue(tmp_path: Path, monkeypatch, listed: str) -> Path:
    """A fake ``squeue`` first on PATH that lists ``listed`` (lines of ``%i %A %T``) and records each call's
    arguments, one line a call, in the file returned."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "listed").write_text(listed)
    (bin_dir / "squeue").write_text(f'#!/bin/sh\necho "$@" >> {bin_dir}/calls\ncat {bin_dir}/listed\n')
    (bin_dir / "squeue").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir / "calls"


def _lease(folder: Path, **fields) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    lease = {"host": "node7", "pid": 4711, "user": "someone", "slurm_job_id": None, "since": "2026-01-01T00:00:00Z", **fields}
    (folder / LEASE_NAME).write_text(json.dumps(lease))
    return lease


@pytest.fixture
def node_local_lock(monkeypatch):
    """``lockf`` as on BeeGFS, Lustre ``localflock`` or NFS ``local_lock``: it always succeeds, whoever holds the pack on another node."""
    monkeypatch.setattr(fcntl, "lockf", lambda fd, op: None)


def test_a_node_local_lock_lets_no_second_trainer_in_while_the_lease_names_a_live_slurm_job(tmp_path, monkeypatch, capsys,
                                                                                          node_local_lock):
    calls = _fake_squeue(tmp_path, monkeypatch, "4242 4242 RUNNING\n")
    monkeypatch.setenv("SLURM_JOB_ID", "4343")
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    folder = tmp_path / "ckpt"
    lease = _lease(folder, slurm_job_id="4242")
    with pytest.raises(PackBusy) as refused:
        with hold_pack(folder, "p"):
            raise AssertionError("a second trainer got the pack")
    message = str(refused.value)
    assert "\n" not in message and message.startswith("pack p is being trained by Slurm job 4242 (pid 4711 on node7")
    assert "Slurm job 4242 is still queued or running: this job trains nothing and deletes nothing" in message
    assert json.loads((folder / LEASE_NAME).read_text()) == lease and (folder / LOCK_NAME).exists()  # the holder's, untouched
    assert calls.read_text().splitlines() == ["-h -o %i %A %T -u someone"]  # one call, for the lease's user
    (tmp_path / "bin/listed").write_text("5000 5000 PENDING\n")  # job 4242 has ended
    with hold_pack(folder, "p") as held:
        assert held["slurm_job_id"] == "4343" and json.loads((folder / LEASE_NAME).read_text()) == held
    assert capsys.readouterr().err.splitlines() == [
        "pack p: taking over the lease of Slurm job 4242 (pid 4711 on node7, since 2026-01-01T00:00:00Z): Slurm job 4242 is no "
        "longer queued or running"]
    _lease(folder, slurm_job_id="4343")  # an earlier attempt of this very job (requeued): no need to ask Slurm
    with hold_pack(folder, "p"):
        pass
    assert "an earlier attempt of this Slurm job (4343)" in capsys.readouterr().err
    assert len(calls.read_text().splitlines()) == 2


def test_a_node_local_lock_lets_no_second_trainer_in_while_the_lease_names_a_live_pid_here(tmp_path, monkeypatch, capsys, node_local_lock):
    """Outside Slurm (a local run) the holder's pid decides on its host: alive refuses, gone is taken over."""
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    folder = tmp_path / "ckpt"
    holder = subprocess.Popen(["sleep", "600"])
    try:
        _lease(folder, host=socket.gethostname(), pid=holder.pid)
        with pytest.raises(PackBusy, match=f"^pack p is being trained by a job outside Slurm \\(pid {holder.pid} on "
                                           f"{socket.gethostname()}, since .*\\); pid {holder.pid} is alive on this host: "):
            with hold_pack(folder, "p"):
                pass
        assert json.loads((folder / LEASE_NAME).read_text())["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()
    with hold_pack(folder, "p") as lease:
        assert lease["pid"] == os.getpid()
    assert capsys.readouterr().err.endswith(f"pid {holder.pid} is gone from this host\n")


def test_a_file_system_without_posix_locks_says_so_in_one_line_and_the_lease_decides(tmp_path, monkeypatch, capsys):
    """Lustre mounted noflock: lockf raises ENOSYS (a bare traceback before). The trainer says so in one
    line, refuses while the lease names a live holder, trains once it is gone, and exits 16 with no traceback."""
    from initmem.pipeline.jobs import train_plan_file

    def no_locks(fd, op):
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

    monkeypatch.setattr(fcntl, "lockf", no_locks)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    _fake_squeue(tmp_path, monkeypatch, "4242 4242 RUNNING\n")
    plan, data = one_run_plan(tmp_path, epochs=1)
    folder = tmp_path / "ckpt" / keys_folder(read_plan(plan))
    _lease(folder, slurm_job_id="4242")
    (folder / "r.ckpt").write_bytes(b"the holder's checkpoint")
    settings = {"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "checkpoint_every": 1}
    with pytest.raises(SystemExit) as refused:
        train_plan_file(plan, data, tmp_path / "pack.json", settings, checkpoint_dir=tmp_path / "ckpt")
    assert refused.value.code == BUSY_EXIT
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "Traceback" not in "".join(lines), lines
    assert lines[0] == f"pack pack: the file system of {folder} has no POSIX locks (lockf: Function not implemented): its lease " \
                       "alone keeps a second trainer out"
    assert lines[1].startswith("pack pack is being trained by Slurm job 4242") and "trains nothing and deletes nothing" in lines[1]
    assert (folder / "r.ckpt").read_bytes() == b"the holder's checkpoint" and not started_path(plan).exists()
    (folder / LEASE_NAME).unlink()  # the holder ended: the lease alone let it in, and it trains
    (folder / "r.ckpt").unlink()
    with hold_pack(folder, "pack") as lease:
        assert json.loads((folder / LEASE_NAME).read_text()) == lease
    assert capsys.readouterr().err.count("no POSIX locks") == 1
    assert not (folder / LEASE_NAME).exists()


@pytest.mark.slow  # starts Snakemake twice: 5.8-8.0 s measured on 2 shared cores
def test_a_restarted_main_snakemake_submits_nothing_for_a_pack_a_live_job_trains(tmp_path, monkeypatch):
    """The main Snakemake, restarted while a Slurm job (listed by squeue) and a local trainer (a live pid
    here: this test) still train two packs, refuses in one line naming them and their holders, before any
    job starts; a third pack's lease is stale (its job no longer queued) and named nowhere. The command
    it prints to leave them out plans the rest (a dry run of it trains the stale pack only)."""
    from conftest import snakemake, workdir_copy

    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.grid import expand_studies
    from initmem.pipeline.identity import data_identity
    from initmem.pipeline.planning import plan_studies

    (tmp_path / "work").mkdir()
    work = workdir_copy(tmp_path / "work")
    config_text = ("data: {source: synthetic, n_train: 64, n_val: 32, n_test: 32}\ndefaults: {width: 4, epochs: 1, batch_size: 16}\n"
                   "pack: {max_models: 1}\nstudies:\n  main:\n    grid: {sigma_w: [0.5, 1.0, 2.0], seed: [0]}\n")
    (work / "c.yaml").write_text(config_text)
    config = load_config([work / "c.yaml"], default=ROOT / "config/config.yaml", schema=ROOT / "config/schema.yaml")
    packs, _ = plan_studies(config, expand_studies(config), data_id=data_identity(config["data"]))["main"]
    slurm, local, stale = sorted(packs)
    calls = _fake_squeue(tmp_path, monkeypatch, "4242 4242 RUNNING\n")
    _lease(work / "results/checkpoints/main/a", slurm_job_id="4242", pack=slurm)
    _lease(work / "results/checkpoints/main/b", host=socket.gethostname(), pid=os.getpid(), pack=local)
    _lease(work / "results/checkpoints/main/c", slurm_job_id="999", pack=stale)
    targets = [f"results/packs/main/{name}.json" for name in (slurm, local, stale)]
    proc = snakemake(*targets, "--cores", "1", "--configfile", "c.yaml", cwd=work, check=False)
    assert proc.returncode == 1
    line = proc.stderr.splitlines()[-1]
    assert line.startswith("2 pack(s) are still being trained by live jobs, so this invocation submits nothing: "
                           f"main/{slurm}: Slurm job 4242 (pid 4711 on node7"), proc.stderr[-3000:]
    named = line.split(". Run the same command again", 1)[0]
    assert f"main/{local}: a job outside Slurm (pid {os.getpid()} on {socket.gethostname()}" in named and stale not in named
    assert not (work / "results/logs").exists() and not (work / "results/plans").exists()  # no job started, not even a local one
    assert len(calls.read_text().splitlines()) == 1  # one squeue for every lease
    command = shlex.split(line.split("leave those packs out now: ", 1)[1])
    assert command[-3:] == ["--omit-from", f"results/packs/main/{slurm}.json", f"results/packs/main/{local}.json"]
    done = subprocess.run([*command, "-n"], cwd=work, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr[-3000:]
    trains = re.findall(r"^rule train:\n(?:.*\n)*?\s+output: (\S+)", done.stdout, re.M)
    assert trains == [f"results/packs/main/{stale}.json"], done.stdout[-3000:]  # the stale lease's pack trains, the live ones wait


def test_the_restart_check_reads_every_lease_with_one_squeue_call(tmp_path, monkeypatch):
    """What the main Snakemake's check makes of leases: an array task that squeue lists is live (its pack
    named by the started marker an older trainer wrote, whose lease named none), an ended or unlisted job is
    not; when squeue cannot answer, every Slurm lease counts as live and says why."""
    from initmem.cluster.packlock import live_packs

    calls = _fake_squeue(tmp_path, monkeypatch, "77_3 78 RUNNING\n500 500 COMPLETED\n")
    checkpoints, plans = tmp_path / "results/checkpoints", tmp_path / "results/plans"
    older = _lease(checkpoints / "main/k1", slurm_job_id="77_3")
    (plans / "main").mkdir(parents=True)
    (plans / "main/p1.started").write_text(json.dumps(older))
    _lease(checkpoints / "main/k2", slurm_job_id="500", pack="p2")
    _lease(checkpoints / "depth/k3", slurm_job_id="501", pack="p3")
    live = live_packs(checkpoints, plans)
    assert [(p.study, p.pack, p.why) for p in live] == [("main", "p1", "Slurm job 77_3 is still queued or running")]
    (tmp_path / "bin/squeue").write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\necho 'slurm_load_jobs error: Unable to contact "
                                         "slurm controller' >&2\nexit 1\n")
    live = live_packs(checkpoints, plans)
    assert [p.pack for p in live] == ["p3", "p1", "p2"]  # by folder: depth/, then main/
    assert live[0].why == ("squeue failed (exit 1: slurm_load_jobs error: Unable to contact slurm controller), so whether "
                           "Slurm job 501 still runs is unknown")
    assert len(calls.read_text().splitlines()) == 2
