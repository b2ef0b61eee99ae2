"""The job layer: one training job = one pack of runs. It picks the trainer (the reference
single-run trainer in :mod:`initmem.engine.train`, or the vectorised one in :mod:`initmem.engine.packed`), names
checkpoints, stamps each record with its run's identity key and writes the pack file.

Data flows one way: cli -> jobs -> trainers (train, packed) -> models/optim -> spec.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from initmem.cluster.packlock import BUSY_EXIT, PackBusy, hold_pack
from initmem.engine.allocator import keep_freed_host_memory
from initmem.engine.checkpoint import pack_checkpoint_name, remove_checkpoints
from initmem.engine.data import Splits, load_prepared
from initmem.engine.device import device_environment, pick_device
from initmem.engine.loop import EpochsFinished, Preempted, StopRequest, install_stop_handlers
from initmem.engine.settings import DEFAULTS, TrainSettings
from initmem.engine.streams import Tensors
from initmem.engine.train import train_run
from initmem.io import write_json
from initmem.pipeline.continuation import continue_after_stop, job_end_time, outgrew_time_limit
from initmem.pipeline.finished import declare, keep_written, place, same_runs
from initmem.pipeline.interrupted import PREEMPTED_EXIT, stop_line
from initmem.pipeline.planning import FINAL_TEST_ENV, finished_path, read_plan, started_path
from initmem.pipeline.records import write_pack
from initmem.pipeline.stops import KEPT, kept_line, training_line

ENGINES = ("vmap", "loop")


def final_test_splits(runs: list[dict], splits: Splits, environ: dict | None = None) -> Splits | None:
    """The final test images the runs need beyond the prepared data's test images (their ``final_test``
    larger than ``n_test``), read from the file :data:`FINAL_TEST_ENV` names; None when they need none."""
    need = max(int(r["spec"].get("final_test", 0)) for r in runs)
    if need <= len(splits.x_test):
        return None
    path = (os.environ if environ is None else environ).get(FINAL_TEST_ENV)
    if not path:
        raise ValueError(f"final_test = {need} but the prepared data has {len(splits.x_test)} test images and no file of "
                         f"final test images is named ({FINAL_TEST_ENV}); the workflow prepares it (prepare_final_test)")
    final = load_prepared(path)
    if len(final.x_test) < need:
        raise ValueError(f"final_test = {need} but {path} holds {len(final.x_test)} test images")
    return final


def train_pack(runs: list[dict], splits: Splits, settings: TrainSettings = DEFAULTS, *, checkpoint_dir: Path | None = None,
               log: TextIO | None = sys.stderr, final: Splits | None = None) -> list[dict]:
    """Train runs that differ only in sigma_w and seed; ``runs`` are dicts with ``run_id`` and ``spec``.

    Returns one metrics record per run, in order. ``settings.engine`` "vmap" trains a pack of two or more as
    one vectorised model (:mod:`initmem.engine.packed`); "loop" trains the runs one after another with the
    reference trainer. Either way a run's result does not depend on its pack up to float rounding.
    ``settings.device`` goes through :func:`initmem.engine.device.pick_device` (no silent CPU, one GPU per job) and
    every record's ``env`` gets :func:`initmem.engine.device.device_environment`. ``settings.memory_format``
    (``compute.memory_format``) changes the layout, not the values: it is no part of a run's key.
    ``final``: the test images of the runs' final evaluation beyond ``splits``' (:func:`final_test_splits`).
    """
    if settings.engine not in ENGINES:
        raise ValueError(f"unknown pack engine {settings.engine!r}; choose one of {ENGINES}")
    dev = pick_device(settings.device, log)
    if dev.type == "cpu":  # the steps' tensors live in host memory
        keep_freed_host_memory()
    data = Tensors.from_splits(splits, dev, final)
    for r in runs:
        if r["spec"]["n_train"] != len(splits.x_train):
            raise ValueError(f"{r['run_id']}: spec n_train {r['spec']['n_train']} but prepared data has {len(splits.x_train)}")
    if settings.engine == "vmap" and len(runs) > 1:
        from initmem.engine.packed import train_packed

        ckpt = checkpoint_dir / pack_checkpoint_name(runs) if checkpoint_dir is not None else None
        return _with_device_env(train_packed(runs, data, settings=settings, device=dev, checkpoint=ckpt, log=log), dev)
    records = []
    for r in runs:
        ckpt = checkpoint_dir / f"{r['run_id']}.ckpt" if checkpoint_dir is not None else None
        records.append(train_run(r["spec"], data, r["run_id"], settings=settings, device=dev, checkpoint=ckpt, log=log))
    return _with_device_env(records, dev)


def _with_device_env(records: list[dict], device) -> list[dict]:
    env = device_environment(device)
    for record in records:
        record["env"] = {**record["env"], **env}
    return records


def finish_pack(runs: list[dict], checkpoint_dir: Path | None, keep_checkpoints: bool) -> None:
    """Remove the runs' (and the vectorised pack's) checkpoints once their metrics are safely written (unless kept)."""
    if checkpoint_dir is not None and not keep_checkpoints:
        for name in [f"{r['run_id']}.ckpt" for r in runs] + [pack_checkpoint_name(runs)]:
            remove_checkpoints(checkpoint_dir / name)


def train_plan_file(plan: str | Path, data: str | Path, out: str | Path, settings: TrainSettings, threads: int = 1,
                    checkpoint_dir: str | Path | None = None) -> None:
    """Train the runs of a pack plan and write its pack file atomically, each record stamped with
    its run's identity ``key``; checkpoints are removed once the pack is kept.

    ``settings`` (:class:`initmem.engine.settings.TrainSettings`, the job's ``--settings``) are the bookkeeping
    choices that do not define a run (device, engine, compile, memory_format, max_images, checkpoint_every,
    checkpoint_minutes, keep_checkpoints, attempts) and ``precision``, which is part of the key.
    The finished pack is kept first beside the plan (:mod:`initmem.pipeline.finished`), where
    Snakemake's cleanup of a failed job never reaches it, and the pack file ``out`` is placed from
    it last; a job that finds the plan's members kept there under their keys trains nothing and
    only places ``out`` (one line says so), whatever deleted it.
    With a ``checkpoint_dir`` the job holds the pack's checkpoint folder for its whole length
    (:mod:`initmem.cluster.packlock`): a second job on the same pack exits with :data:`BUSY_EXIT`
    and one line naming the first, having trained and deleted nothing (unless the first one has
    finished the pack: then it places ``out`` from the store and succeeds); one that gets the pack
    after its holder finished it finds it done. While it trains, a started marker beside the plan
    (:func:`initmem.pipeline.planning.started_path`) keeps the pack's members planned together; a job
    that fails for the pack's size (:func:`release_outgrown`) removes it, so that a smaller pack may be planned.
    Exits with :data:`PREEMPTED_EXIT` after a SIGTERM or SIGINT (a checkpoint was saved: rerun to resume);
    a Slurm job stopped at its time limit first requeues itself (:mod:`initmem.pipeline.continuation`,
    up to ``attempts`` - 1 times, and only after an attempt that finished an epoch; its end time is read as it starts).
    """
    members = read_plan(plan)
    # checkpoints under the members' identity keys: a pack of the same runs on other data (another
    # config) or from other trainer code never resumes from this one's state
    ckpt_dir = Path(checkpoint_dir) / keys_folder(members) if checkpoint_dir else None
    if ckpt_dir is None:
        if not _declared(plan, out, members):
            _train_plan_members(plan, members, data, out, settings, threads, None)
        return
    try:
        with hold_pack(ckpt_dir, Path(out).stem) as lease:
            if _declared(plan, out, members):
                finish_pack(members, ckpt_dir, settings.keep_checkpoints)  # what a job stopped after keeping the pack left
                started_path(plan).unlink(missing_ok=True)
            elif same_runs(out, members):  # written before finished packs were kept: keep it now
                store = keep_written(plan, out)
                print(f"{out}: already written under the plan's keys, now also {KEPT}{store}; nothing to train", file=sys.stderr, flush=True)
            else:
                started = started_path(plan)
                write_json(started, lease)
                _train_plan_members(plan, members, data, out, settings, threads, ckpt_dir)
                started.unlink(missing_ok=True)  # the kept pack binds the plan from now on
    except PackBusy as exc:
        if _declared(plan, out, members, holder=True):  # the holder has finished the pack and is ending
            return
        print(str(exc), file=sys.stderr, flush=True)
        sys.exit(BUSY_EXIT)
    if ckpt_dir.is_dir() and not any(ckpt_dir.iterdir()):
        ckpt_dir.rmdir()


def _declared(plan: str | Path, out: str | Path, members: list[dict], holder: bool = False) -> bool:
    """Whether the plan's pack was found finished and kept (:func:`initmem.pipeline.finished.declare`): then
    ``out`` is that pack, and one line says so."""
    store = declare(plan, out, members)
    if store is None:
        return False
    who = "by the job that holds the pack" if holder else "before"
    print(f"{out}: finished {who}, {KEPT}{store} under the plan's keys: declared it, nothing to train", file=sys.stderr, flush=True)
    return True


def _train_plan_members(plan: str | Path, members: list[dict], data: str | Path, out: str | Path, settings: TrainSettings, threads: int,
                        ckpt_dir: Path | None) -> None:
    """Train a plan's members, keep their pack, remove their checkpoints and place their pack file (see :func:`train_plan_file`)."""
    import torch

    torch.set_num_threads(int(threads))
    install_stop_handlers()
    end_time = job_end_time(os.environ) if os.environ.get("SLURM_JOB_ID") else None  # once, not at the signal
    splits = load_prepared(data)
    final = final_test_splits(members, splits)  # the runs' final test images beyond the prepared data's, if any
    print(training_line([m["run_id"] for m in members]), file=sys.stderr, flush=True)
    try:
        records = train_pack(members, splits, settings, checkpoint_dir=ckpt_dir, log=sys.stderr, final=final)  # read now: the job's log may have replaced it
    except Preempted as exc:  # one line (the last of the log), and on Slurm what became of the job
        print(stop_line(str(exc)), file=sys.stderr, flush=True)
        if os.environ.get("SLURM_JOB_ID"):
            said = continue_after_stop(StopRequest.reason, settings.attempts, os.environ, end_time=end_time,
                                       epochs_finished=EpochsFinished.count)
            print(said, file=sys.stderr, flush=True)
            if outgrew_time_limit(said) and ckpt_dir is not None:
                release_outgrown(plan, ckpt_dir, "it reached its time limit without finishing an epoch")
        sys.exit(PREEMPTED_EXIT)
    except torch.OutOfMemoryError:
        if ckpt_dir is not None:
            release_outgrown(plan, ckpt_dir, "the GPU ran out of memory")
        raise
    for member, record in zip(members, records, strict=True):
        record["key"] = member["key"]
    # first where Snakemake's cleanup of a failed job never reaches it, then the declared output:
    # whatever stops this job from now on, the next one finds the pack kept and trains nothing
    store = finished_path(plan)
    write_pack(store, records)
    print(kept_line(len(members), store), file=sys.stderr, flush=True)
    finish_pack(members, ckpt_dir, settings.keep_checkpoints)
    place(store, out)


def release_outgrown(plan: str | Path, ckpt_dir: Path, why: str) -> None:
    """Unbind a pack that failed for its size: remove its started marker and say so in one line.

    The marker keeps a started pack's members together whatever the config says later (no checkpoint is
    orphaned by a regrouping), which would also keep a pack that can never fit its GPU or its time limit
    as it is. Without it the next invocation plans the pack's runs afresh: a lower ``pack.max_images`` or
    ``pack.max_models`` (or a longer time limit, a measured rate) regroups them, while an unchanged config
    plans the same pack, which resumes from its checkpoint. No finished run is in such a pack: a pack's
    records are written only when all of its members have finished."""
    marker = started_path(plan)
    marker.unlink(missing_ok=True)
    print(f"pack {Path(plan).stem} failed for its size ({why}): removed its started marker {marker}, so its plan no longer "
          "binds; lower pack.max_images or pack.max_models (or raise the time limit) and run the same command to regroup its "
          f"runs into smaller packs (its checkpoints in {ckpt_dir} are then unused: delete them), or run it unchanged to "
          "resume the same pack", file=sys.stderr, flush=True)


def keys_folder(members: list[dict]) -> str:
    """A short name for the identity keys of a pack's members (its checkpoints' folder)."""
    return hashlib.sha256(json.dumps([m["key"] for m in members]).encode()).hexdigest()[:12]
