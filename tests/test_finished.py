"""Nothing finished is ever deleted by Snakemake's failed-job cleanup: a training job keeps its
finished pack beside the plan (``<pack>.finished``) before it places the declared pack file, and a
job that finds the plan's runs kept there under the plan's keys trains nothing, whatever removed
the pack file (Ctrl-C as the job ended, a refused duplicate trainer, a failed post-step)."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, tiny_config, tiny_spec

from initmem.cluster.packlock import BUSY_EXIT
from initmem.engine.metrics import METRICS_FORMAT
from initmem.engine.settings import TrainSettings
from initmem.pipeline.finished import declare, same_runs, stored
from initmem.pipeline.interrupted import RESUME, STOPPED_BEFORE_TRAINING, stop_line
from initmem.pipeline.planning import finished_path, read_trained_plans, write_plan
from initmem.pipeline.records import write_pack
from initmem.pipeline.stops import CTRL_C_LINE, KEPT, lost_summary, what_jobs_lost


def _record(run_id: str, key: str) -> dict:
    return {"format": METRICS_FORMAT, "run_id": run_id, "spec": {}, "status": "ok", "history": {}, "summary": {}, "env": {},
            "wall_seconds": 1.0, "key": key}


def _members(**keys) -> list[dict]:
    return [{"run_id": run_id, "spec": {"seed": i}, "key": key} for i, (run_id, key) in enumerate(keys.items())]


def test_a_kept_pack_is_declared_only_when_every_members_key_equals_the_plans(tmp_path):
    plan = tmp_path / "plans/main/p.json"
    members = _members(a="ka", b="kb")
    write_plan(plan, members, data_id={"test": 1})
    out = tmp_path / "packs/main/p.json"
    assert stored(plan, members) is None and declare(plan, out, members) is None  # nothing kept yet
    write_pack(finished_path(plan), [_record("b", "kb"), _record("a", "ka")])
    store = finished_path(plan)
    assert stored(plan, members) == store
    # a member's key differs (its spec, the data, the trainer's code or the precision changed): train
    for changed in (_members(a="ka", b="kb2"), _members(a="ka"), _members(a="ka", b="kb", c="kc")):
        assert stored(plan, changed) is None and declare(plan, out, changed) is None
        assert not out.exists()
    # keys equal: the pack file is placed from the store, a hard link to it, newer than the plan
    assert declare(plan, out, members) == store
    assert same_runs(out, members) and out.stat().st_ino == store.stat().st_ino and out.stat().st_mtime >= plan.stat().st_mtime
    placed = out.stat().st_mtime_ns
    assert declare(plan, out, members) == store and out.stat().st_mtime_ns == placed  # a pack file that holds them stays
    store.write_text(store.read_text()[:40])  # a damaged store (the pack file too: one file)
    assert stored(plan, members) is None


def test_a_kept_pack_binds_its_plan_while_its_pack_file_is_missing(tmp_path):
    """Its runs stay in their pack (a new pack.max_models or a measured rate would otherwise regroup
    them, and a pack of another name would train them again)."""
    plan = tmp_path / "plans/main/p.json"
    write_plan(plan, _members(a="ka"), data_id={"test": 1})
    assert read_trained_plans(tmp_path / "plans", tmp_path / "packs", "main", {"test": 1}) == []
    write_pack(finished_path(plan), [_record("a", "ka")])
    [pack] = read_trained_plans(tmp_path / "plans", tmp_path / "packs", "main", {"test": 1})
    assert pack.name == "p" and pack.bound and [run_id for run_id, _ in pack.members] == ["a"]


def _tiny_plan(tmp_path: Path) -> tuple[Path, Path, list[dict]]:
    """A two-run pack plan on tiny synthetic data, as the workflow's train job gets it."""
    from initmem.engine.data import build_splits, save_prepared

    data = tmp_path / "data.npz"
    save_prepared(build_splits({"source": "synthetic", "n_train": 32, "n_val": 16, "n_test": 16}), data)
    members = [{"run_id": f"r{seed}", "spec": tiny_spec(epochs=2, seed=seed, n_train=32, n_val=16, n_test=16), "key": f"k{seed}"}
               for seed in (0, 1)]
    plan = tmp_path / "plans/main/p.json"
    write_plan(plan, members, data_id={"test": 1})
    return plan, data, members


SETTINGS = TrainSettings.from_dict({"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "checkpoint_every": 1})


@pytest.fixture
def own_signals(stop_request):
    """The trainer run in this process installs its SIGINT/SIGTERM handlers: put pytest's back after the test."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def test_a_pack_removed_after_it_was_written_is_declared_not_trained(tmp_path, capfd, own_signals):
    """What Snakemake's cleanup does to a training job stopped after it wrote its pack (Ctrl-C as it
    exited: `Removing output files of failed job train`): the pack file is deleted, its checkpoints
    are already gone. The next job trains nothing: it places the kept pack, and removes what a job
    stopped between keeping the pack and removing its checkpoints left."""
    from initmem.pipeline.jobs import keys_folder, train_plan_file

    plan, data, members = _tiny_plan(tmp_path)
    out = tmp_path / "packs/main/p.json"
    train_plan_file(plan, data, out, SETTINGS, checkpoint_dir=tmp_path / "ckpt")
    err = capfd.readouterr().err
    assert "training 2 run(s)" in err and f"{KEPT}{finished_path(plan)}" in err
    written = out.read_bytes()
    assert out.stat().st_ino == finished_path(plan).stat().st_ino  # one file on disk, two names
    out.unlink()  # Snakemake's cleanup of the failed job
    leftover = tmp_path / "ckpt" / keys_folder(members) / "r1.ckpt"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"a checkpoint its job had no time to remove")
    train_plan_file(plan, data, out, SETTINGS, checkpoint_dir=tmp_path / "ckpt")
    err = capfd.readouterr().err
    assert "training" not in err and "epoch" not in err, err  # not one run, not one epoch trained again
    assert err.splitlines() == [f"{out}: finished before, {KEPT}{finished_path(plan)} under the plan's keys: declared it, nothing to train"]
    assert out.read_bytes() == written and not (tmp_path / "ckpt" / keys_folder(members)).exists()
    # a pack file written before finished packs were kept: kept now (its time as it was), nothing trained
    finished_path(plan).unlink()
    placed = out.stat().st_mtime_ns
    train_plan_file(plan, data, out, SETTINGS, checkpoint_dir=tmp_path / "ckpt")
    err = capfd.readouterr().err
    assert "training" not in err and "already written under the plan's keys, now also pack kept in" in err, err
    assert finished_path(plan).stat().st_ino == out.stat().st_ino and out.stat().st_mtime_ns == placed
    # a member's key changed since (a new trainer, say): the kept pack is no longer its result
    write_plan(plan, [members[0], {**members[1], "key": "k1-new"}], data_id={"test": 1})
    train_plan_file(plan, data, out, SETTINGS, checkpoint_dir=tmp_path / "ckpt")
    assert "training 2 run(s)" in capfd.readouterr().err
    assert sorted(r["key"] for r in json.loads(finished_path(plan).read_text())["runs"]) == ["k0", "k1-new"]


def test_a_duplicate_trainer_refused_after_the_original_kept_the_pack_declares_it(tmp_path, capfd, own_signals):
    """A duplicate job (a restarted main Snakemake submits a running pack again) that meets the
    lock of an original which has already kept the pack places the pack file and succeeds: no
    failed job whose cleanup would delete the original's pack file. Before the original has kept
    it, the duplicate is refused as before."""
    from initmem.pipeline.jobs import keys_folder, train_plan_file

    plan, data, members = _tiny_plan(tmp_path)
    out = tmp_path / "packs/main/p.json"
    holder = subprocess.Popen(  # the original, still holding the pack (another process: the lock is per process)
        [sys.executable, "-c", "import sys; from initmem.cluster.packlock import hold_pack\n"
         f"with hold_pack({str(tmp_path / 'ckpt' / keys_folder(members))!r}, 'p'):\n    print('held', flush=True); sys.stdin.read()"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "SLURM_JOB_ID": "777"}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SystemExit) as refused:
            train_plan_file(plan, data, out, SETTINGS, checkpoint_dir=tmp_path / "ckpt")
        assert refused.value.code == BUSY_EXIT and "being trained by Slurm job 777" in capfd.readouterr().err
        write_pack(finished_path(plan), [_record("r0", "k0"), _record("r1", "k1")])  # the original has kept the pack
        train_plan_file(plan, data, out, SETTINGS, checkpoint_dir=tmp_path / "ckpt")
        err = capfd.readouterr().err
        assert err.splitlines() == [f"{out}: finished by the job that holds the pack, {KEPT}{finished_path(plan)} under the plan's keys: "
                                    "declared it, nothing to train"]
        assert same_runs(out, members)
    finally:
        holder.communicate("", timeout=60)


TWO_RUNS = tiny_config({"main": {"grid": {"sigma_w": [0.5, 2.0], "seed": [0]}}}, pack=2, epochs=1)


@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
@pytest.mark.workflow
def test_the_rerun_after_a_cleanup_of_a_written_pack_trains_nothing(tmp_path):
    """Through Snakemake's local executor: a finished pack file removed as Snakemake's cleanup of a
    failed job removes it (Ctrl-C as the job ended: the output gone, its marker left), with its run
    files not yet cut. The same command trains nothing, cuts the run files from the kept pack, and
    leaves nothing to do."""
    from conftest import mark_incomplete, snakemake, workdir_copy

    work = workdir_copy(tmp_path)
    (work / "c.yaml").write_text(yaml.safe_dump(copy.deepcopy(TWO_RUNS), sort_keys=False))
    snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    [pack] = (work / "results/packs/main").glob("*.json")
    runs = sorted((work / "results/runs/main").glob("*.json"))
    before = {r.name: r.read_bytes() for r in runs}
    written = pack.read_bytes()
    log = work / "results/logs/train/main" / pack.name.replace(".json", ".log")
    assert log.read_text().count("training 2 run(s)") == 1
    pack.unlink()  # `Removing output files of failed job train since they might be corrupted`
    mark_incomplete(work, pack)
    for run in runs:
        run.unlink()
    proc = snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    last_attempt = log.read_text().split("=== attempt ")[-1]
    assert "training" not in last_attempt and "epoch" not in last_attempt, last_attempt  # nothing trained again
    assert "declared it, nothing to train" in last_attempt
    assert log.read_text().count("training 2 run(s)") == 1, proc.stderr[-2000:]
    assert pack.read_bytes() == written and {r.name: r.read_bytes() for r in runs} == before
    again = snakemake("runs", "-n", "--configfile", "c.yaml", cwd=work)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_the_stop_summary_says_what_each_job_lost(tmp_path):
    """Ctrl-C reaching jobs in several states: each is named with its own (a job that kept its pack
    before it was stopped lost nothing, even one that Snakemake counts failed with no stop line)."""
    kept, before, cut, done = (tmp_path / f"main-{x}.log" for x in "abcd")
    kept.write_text("=== attempt 1: ... ===\ntraining 1 run(s): r\n[r] epoch 2/2 ...\n"
                    f"finished 1 run(s): {KEPT}results/plans/main/main-a.finished\n")  # then killed by SIGINT
    before.write_text("=== attempt 1: ... ===\n" + STOPPED_BEFORE_TRAINING + "\n")
    cut.write_text(f"=== attempt 1: ... ===\ntraining 1 run(s): r\n[r] epoch 1/4 ...\n{CTRL_C_LINE}\n")  # a second Ctrl-C
    done.write_text("=== attempt 1: ... ===\ntraining 1 run(s): r\n[r] epoch 2/2 ...\n"
                    f"finished 1 run(s): {KEPT}results/plans/main/main-d.finished\n")  # it succeeded
    logs = [kept, before, cut, done]
    assert lost_summary(what_jobs_lost(logs, failed=[str(kept)])) == (
        "3 training jobs stopped (main-a finished and kept its pack, nothing lost; main-b before training started, nothing lost; "
        "main-c at once by a second Ctrl-C, the work since its last checkpoint lost): run the same command to resume")
    assert lost_summary(what_jobs_lost(logs)) == (
        "2 training jobs stopped (main-b before training started, nothing lost; main-c at once by a second Ctrl-C, the work since its "
        "last checkpoint lost): run the same command to resume")
    # a lone stopped job is named too: its line is not read as another job's
    assert lost_summary(what_jobs_lost([before, done])) == "training job main-b stopped before training started, nothing lost: " + RESUME
    assert lost_summary(what_jobs_lost([kept], failed=[str(kept)])) == "training job main-a finished and kept its pack, nothing lost: " + RESUME
    # an earlier attempt's kept pack says nothing of this one's
    kept.write_text(kept.read_text() + "=== attempt 2: ... ===\ntraining 1 run(s): r\n"
                    + stop_line("[r] SIGINT: checkpoint saved at epoch 1 step 3") + "\n")
    assert lost_summary(what_jobs_lost([kept], failed=[str(kept)])) == "training job main-a stopped at epoch 1 step 3, checkpoint saved: " + RESUME
    assert lost_summary(what_jobs_lost([done])) is None


def test_the_second_ctrl_c_line_is_the_one_jobs_log(tmp_path, capsys):
    from initmem.scriptjobs import log_to

    with pytest.raises(SystemExit), log_to(tmp_path / "job.log"):
        raise KeyboardInterrupt
    assert (tmp_path / "job.log").read_text().splitlines()[-1] == CTRL_C_LINE
