"""The one training loop behind single runs and packs: epochs, steps, evaluation, checkpoints,
resume, preemption, early stopping, divergence and masking.

A *trainee* (:class:`Trainee`) is what the loop trains: one plain model (:mod:`initmem.engine.train`)
or a vectorised pack of models (:mod:`initmem.engine.packed`). It owns the models, the optimizer,
the compiled step and the evaluation; the loop owns everything else, for every member alike: each
member's own data order and augmentation streams (:mod:`initmem.engine.streams`), the schedule and
clocks, its history, early stopping (Keras ``EarlyStopping(monitor="val_loss", min_delta=0)``,
schedule unchanged) and divergence (a non-finite loss ends it as ``diverged``, read once per epoch),
and the checkpoint. A member that stops is masked, not removed (:meth:`Trainee.mask`).

Checkpoints: saved every ``checkpoint_every`` epochs, at the first step ``checkpoint_minutes`` after
the last save (both of the job's :class:`initmem.engine.settings.TrainSettings`; in the middle of
an epoch too), at a stop request (SIGTERM or SIGINT,
:func:`install_stop_handlers`: then :class:`Preempted` is raised) and once more, without the models, when training ends, so that a run
or pack that finished is never trained again, whatever happens before its metrics are written.
Resuming is bit-identical, also in the middle of an epoch, on whichever device: every restored
tensor goes to the device its consumer needs (generator states are bytes, the CPU's; model,
optimizer, draws and running sums go to the training device).

The selected network, evaluated once (``final_test: N`` in the spec, 0 = off): each member's weights and
BatchNorm buffers at its least validation loss so far are kept (:func:`_keep_best`, in every
checkpoint), and after training they are evaluated once on the first N test images
(:func:`_evaluate_final`), as the epochs' test evaluation evaluates: the summary's ``test_acc_final``
and ``test_loss_final`` (NaN for a member without a finished epoch).
"""

from __future__ import annotations

import math
import platform
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO

import numpy as np
import torch

from initmem import __version__
from initmem.engine.checkpoint import (
    CheckpointError,
    CheckpointSchedule,
    generator_state,
    load_checkpoint,
    save_checkpoint,
    set_generator_state,
)
from initmem.engine.clocks import schedule_clocks
from initmem.engine.metrics import METRICS_FORMAT
from initmem.engine.optim import lr_schedule
from initmem.engine.settings import TrainSettings
from initmem.engine.streams import Tensors, batch_of, draw_epoch, seed_streams

# The paper's interpolation threshold (initmem.paper.INTERP_TRAIN_ACC, as a fraction), restated here
# because a run's key holds the engine's code only: an edit to the paper's sentences retrains nothing.
# tests/test_train.py holds the two equal.
INTERP_ACC = 0.995
HISTORY_KEYS = ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc",
                "kernel_norm", "lr", "T_sgd", "T_l2", "T_wd", "T_adapt")
# Recorded only where the spec asks (``train_eval: true``): the eval-mode accuracy on the training set of
# the network as it is at the epoch's end, the predictor a checkpoint returns (train_acc is Keras'
# running train-mode mean over the epoch's steps).
TRAIN_EVAL_KEYS = ("train_acc_eval",)
COLUMNS = ("train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc", "kernel_norm", "train_acc_eval", "finite")


class Preempted(RuntimeError):
    """A stop was requested (SIGTERM, SIGINT): the checkpoint is saved and training stopped; a restart resumes it."""


class StopRequest:
    """Set by SIGTERM (what Slurm sends before a time limit or preemption) or SIGINT (Ctrl-C); the
    loop checkpoints after the current step and raises :class:`Preempted`."""

    requested = False
    reason = "stop requested"


class EpochsFinished:
    """Epochs this process has finished, over every training it ran: what a job stopped at its time
    limit made of its attempt (one that finished none would end the same way again)."""

    count = 0


def install_stop_handlers() -> None:
    """Make SIGTERM and SIGINT request a checkpoint-and-exit at the next step instead of killing the
    process (a second SIGINT interrupts at once, as Ctrl-C does by default)."""
    def handler(signum, frame):
        if signum == signal.SIGINT and StopRequest.requested:
            raise KeyboardInterrupt
        StopRequest.requested, StopRequest.reason = True, signal.Signals(signum).name
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


@dataclass
class RunState:
    """One member's record so far: its finished epochs, history, early stopping and status."""

    epoch: int = 0                    # finished epochs
    history: dict = field(default_factory=lambda: {k: [] for k in HISTORY_KEYS})
    best_val: float = math.inf
    wait: int = 0
    stopped_early: bool = False
    status: str = "ok"
    kernel_norm_init: float = 0.0
    final: list[float] | None = None  # test loss and accuracy of the kept best network (final_test > 0)

    def record_epoch(self, row: dict, patience: int | None) -> None:
        """Append a finished epoch's row and apply Keras EarlyStopping(monitor="val_loss", min_delta=0)."""
        for key, values in self.history.items():
            values.append(row[key])
        if row["val_loss"] < self.best_val:
            self.best_val, self.wait = row["val_loss"], 0
        else:
            self.wait += 1
            if patience is not None and self.wait >= patience:
                self.stopped_early = True


@dataclass
class LoopState:
    """Everything needed to resume bit-identically, also in the middle of an epoch: the shared
    progress (all members still training are at the same step) and each member's record."""

    members: list[RunState]
    active: list[int]                 # members still training (row i of the trainee is member i; the others are masked)
    epoch: int = 0
    step: int = 0
    clocks: dict = field(default_factory=lambda: {"T_sgd": 0.0, "T_l2": 0.0, "T_wd": 0.0, "T_adapt": 0.0})
    draws: dict | None = None         # this epoch's order and augmentation, a row per member
    sums: dict | None = None          # this epoch's running loss/correct/finite, a row per member
    seen: int = 0
    finished_at: dict = field(default_factory=dict)  # member -> wall seconds when it left
    wall_seconds: float = 0.0


class Trainee(Protocol):
    """What the loop trains: ``size`` members as rows (a plain model is one row)."""

    weight_decay: float               # the optimizer's resolved decay (for the clocks)
    kernel_norms_init: list[float]
    lr: torch.Tensor                  # 0-d, filled before every step
    sums: dict[str, torch.Tensor]     # running loss x images, correct, finite: a row per member

    def step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """One training step on every member's batch (``x`` (members, b, C, H, W), ``y`` (members, b))."""

    def train(self) -> None:
        """Training mode (BatchNorm batch statistics)."""

    def end_epoch(self, data: Tensors, seen: int) -> list[list[float]]:
        """Per member row, the values of :data:`COLUMNS` (running train loss/acc over ``seen`` images,
        eval-mode val/test loss/acc, kernel norm, finiteness of every step's loss), in one host read."""

    def mask(self, active: list[int]) -> None:
        """Freeze every member not in ``active`` (its parameters, statistics and optimizer state)."""

    def state_dict(self) -> dict:
        """Models and optimizer for a checkpoint."""

    def load_state_dict(self, sd: dict) -> None:
        """Restore :meth:`state_dict` output onto the trainee's device."""

    def keep(self, kept: dict | None, members: list[int]) -> dict:
        """``kept`` (None: nothing kept yet) with the ``members``' current weights and BatchNorm buffers
        copied in (a copy of every member's the first time); the trainee's own tensors are untouched."""

    def evaluate_kept(self, kept: dict, data: Tensors, x: torch.Tensor, y: torch.Tensor) -> list[list[float]]:
        """Per member row, eval-mode loss and accuracy on ``x``, ``y`` of the network ``kept`` holds, loaded
        into the trainee (training is over) and evaluated as :meth:`end_epoch` evaluates (BatchNorm statistics included)."""


def history_keys(spec: dict) -> tuple[str, ...]:
    """The per-epoch columns a run's history records: :data:`HISTORY_KEYS`, and
    :data:`TRAIN_EVAL_KEYS` where the spec says ``train_eval: true``."""
    return HISTORY_KEYS + (TRAIN_EVAL_KEYS if spec.get("train_eval", False) else ())


def summarize(history: dict, kernel_norm_init: float, final: list[float] | None = None) -> dict:
    """tau_best (first epoch of minimal val loss), metrics there, tau_interp and the repair gap (and,
    where the history has it, the selected network's own eval-mode training accuracy; where ``final`` is
    given (``final_test`` > 0), the selected network's one evaluation on the final test images, NaN
    without one)."""
    out = {"tau_best": None, "tau_interp": None, "val_loss_best": None, "val_acc_best": None,
           "test_acc_best": None, "train_acc_best": None, "kernel_norm_init": kernel_norm_init,
           "kernel_norm_best": None, "repair_gap": None}
    if final is not None:
        out.update(test_loss_final=final[0], test_acc_final=final[1])
    if not history["epoch"]:
        return out
    i = int(np.argmin(history["val_loss"]))  # argmin returns the first minimum
    out.update(tau_best=history["epoch"][i], val_loss_best=history["val_loss"][i], val_acc_best=history["val_acc"][i],
               test_acc_best=history["test_acc"][i], train_acc_best=history["train_acc"][i],
               kernel_norm_best=history["kernel_norm"][i])
    if "train_acc_eval" in history:
        out["train_acc_eval_best"] = history["train_acc_eval"][i]
    interp = [j for j, a in enumerate(history["train_acc"]) if a >= INTERP_ACC]
    if interp:
        j = interp[0]
        out.update(tau_interp=history["epoch"][j], repair_gap=history["val_acc"][i] - history["val_acc"][j])
    return out


def environment(device: torch.device, precision: str = "float32", engine: str = "loop", pack_size: int = 1,
                compile: bool | str = False, memory_format: str = "contiguous") -> dict:
    """Versions, device, precision, compilation, memory layout and pack engine recorded in every metrics file."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    return {"initmem": __version__, "torch": torch.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0], "device": f"{device.type}:{name}", "precision": precision,
            "threads": torch.get_num_threads(), "engine": engine, "pack_size": pack_size, "compile": compile,
            "memory_format": memory_format}


def train_loop(runs: list[dict], data: Tensors, make_trainee: Callable[[list[torch.Generator]], Trainee], *,
               settings: TrainSettings, engine: str, device: torch.device, name: str, checkpoint: Path | None,
               log: TextIO | None) -> list[dict]:
    """Train ``runs`` (dicts with ``run_id`` and ``spec``, sharing everything but sigma_w and seed) as
    the trainee ``make_trainee(init generators)`` returns; one metrics record per run, in order.
    ``settings`` give the checkpoints' cadence and what the records' env says of precision, compile
    and memory format; ``engine`` is recorded in each record's env (the trainee's kind: "loop" one
    plain model, "vmap" a pack), ``name`` labels the log lines; checkpoints as the module says."""
    say = _sayer(name, log)
    key = {"runs": [r["run_id"] for r in runs], "specs": [r["spec"] for r in runs]}
    env = lambda: environment(device, settings.precision, engine, len(runs), settings.compile, settings.memory_format)
    resumed = _resume(checkpoint, key, say, device)
    if resumed is not None and resumed.get("finished", False):
        say("finished before the interruption: its record is kept, nothing is trained again")
        return _records(runs, resumed["state"], resumed["state"].wall_seconds, env())
    run = _start(runs, make_trainee, resumed, device, say)
    run.saves = _Saves(checkpoint, key, time.perf_counter() - run.state.wall_seconds,
                       CheckpointSchedule(settings.checkpoint_every, settings.checkpoint_minutes))
    plan = _Plan.of(runs[0]["spec"], len(data.x_train))
    while run.state.epoch < plan.epochs and run.state.active:
        _train_epoch(run, data, plan, device, name, say)
        _close_epoch(run, data, plan, say)
    _evaluate_final(run, data, plan, say)
    if checkpoint is not None:
        run.saves.save(run.state, {"finished": True})  # the records only: nothing here trains again
    _say_diverged(runs, run.state, say)
    return _records(runs, run.state, time.perf_counter() - run.saves.started, env())


def _sayer(name: str, log: TextIO | None) -> Callable[[str], None]:
    """One log line labelled ``[name]`` (nothing without a log)."""
    def say(msg: str) -> None:
        if log:
            print(f"[{name}] {msg}", file=log, flush=True)
    return say


@dataclass(frozen=True)
class _Plan:
    """What the spec fixes of the loop: the steps, the rate at each, early stopping's patience."""

    n: int                            # training images
    b: int                            # batch size
    epochs: int
    steps: int                        # per epoch
    lr_at: Callable[[int], float]     # the rate of step k (0-based, over the whole training)
    patience: int | None
    augment: bool
    spec: dict
    final_test: int = 0               # test images the kept best network is evaluated on after training (0: none kept)

    @classmethod
    def of(cls, spec: dict, n: int) -> _Plan:
        b, epochs = int(spec["batch_size"]), int(spec["epochs"])
        steps = math.ceil(n / b)
        return cls(n, b, epochs, steps, lr_schedule(spec, epochs * steps), spec.get("patience"), bool(spec["augment"]), spec,
                   int(spec.get("final_test", 0)))


@dataclass
class _Saves:
    """Where the loop saves (``path`` None: never), its key, the wall clock the records read
    (``started``: resumed runs go on from the time they had) and when to save (``schedule``)."""

    path: Path | None
    key: dict
    started: float
    schedule: CheckpointSchedule

    def save(self, state: LoopState, payload: dict) -> None:
        state.wall_seconds = time.perf_counter() - self.started
        save_checkpoint(self.path, self.key, {"state": state, **payload})


@dataclass
class _Run:
    """One training in progress: the trainee, each member's data order and augmentation streams, the
    loop's state and its checkpoints."""

    trainee: Trainee
    order_rngs: list[np.random.Generator]
    aug_gens: list[torch.Generator]
    state: LoopState
    saves: _Saves | None = None
    kept: dict | None = None          # each member's network at its least validation loss so far (final_test > 0)

    def save_training(self) -> None:
        """A checkpoint to resume from: the state, the trainee, the streams and the kept networks."""
        self.saves.save(self.state, {"trainee": self.trainee.state_dict(),
                                     "order_rngs": [r.bit_generator.state for r in self.order_rngs],
                                     "aug_gens": [generator_state(g) for g in self.aug_gens],
                                     **({"kept": self.kept} if self.kept is not None else {})})


def _start(runs: list[dict], make_trainee: Callable[[list[torch.Generator]], Trainee], resumed: dict | None,
           device: torch.device, say: Callable[[str], None]) -> _Run:
    """The members' streams and the trainee, fresh or as the checkpoint ``resumed`` left them."""
    size = len(runs)
    streams = [seed_streams(int(r["spec"]["seed"])) for r in runs]
    order_rngs, aug_gens = [s[1] for s in streams], [s[2] for s in streams]
    trainee = make_trainee([s[0] for s in streams])
    state = LoopState(members=[RunState(history={k: [] for k in history_keys(runs[0]["spec"])}, kernel_norm_init=k)
                               for k in trainee.kernel_norms_init], active=list(range(size)))
    run = _Run(trainee, order_rngs, aug_gens, state)
    if resumed is not None:
        _restore(run, resumed, device)
        say(f"resumed at epoch {run.state.epoch} step {run.state.step}"
            + (f" with {len(run.state.active)} of {size} runs" if size > 1 else ""))
    return run


def _restore(run: _Run, resumed: dict, device: torch.device) -> None:
    """Resume from a checkpoint's payload: the state, the trainee, the streams, this epoch's draws and
    running sums (in the middle of an epoch) and the masks of the members that stopped."""
    run.state = state = resumed["state"]
    run.trainee.load_state_dict(resumed["trainee"])
    run.kept = resumed.get("kept")  # saved from the training device, loaded onto it (map_location)
    for rng, saved in zip(run.order_rngs, resumed["order_rngs"], strict=True):
        rng.bit_generator.state = saved
    for gen, saved in zip(run.aug_gens, resumed["aug_gens"], strict=True):
        set_generator_state(gen, saved)
    state.draws = {k: v.to(device) for k, v in state.draws.items()} if state.draws else None
    if state.sums is not None:  # resumed in the middle of an epoch
        for k, v in state.sums.items():
            run.trainee.sums[k].copy_(v)
        state.sums = run.trainee.sums
    if len(state.active) < len(state.members):
        run.trainee.mask(state.active)


def _train_epoch(run: _Run, data: Tensors, plan: _Plan, device: torch.device, name: str, say: Callable[[str], None]) -> None:
    """The epoch's steps from where the state stands (its draws made first, unless resumed in its
    middle), each followed by :func:`_stop_or_save`."""
    state, trainee = run.state, run.trainee
    if state.draws is None:
        state.draws = draw_epoch(run.order_rngs, run.aug_gens, state.active, plan.n, plan.b, plan.augment, device)
        state.step, state.seen = 0, 0
        trainee.sums["loss"].zero_()
        trainee.sums["correct"].zero_()
        trainee.sums["finite"].fill_(True)
        state.sums = trainee.sums
    trainee.train()
    while state.step < plan.steps:
        trainee.lr.fill_(plan.lr_at(state.epoch * plan.steps + state.step))
        x, y = batch_of(data, state.draws, slice(state.step * plan.b, (state.step + 1) * plan.b))
        trainee.step(x, y)
        state.seen += y.shape[1]
        state.step += 1
        _stop_or_save(run, name, say)


def _stop_or_save(run: _Run, name: str, say: Callable[[str], None]) -> None:
    """After a step: a stop request saves (with a checkpoint path) and raises :class:`Preempted`; else a
    save is made when ``checkpoint_minutes`` have passed since the last."""
    state, saves = run.state, run.saves
    if StopRequest.requested:
        if saves.path is None:
            raise Preempted(f"[{name}] {StopRequest.reason}: stopped at epoch {state.epoch} step {state.step} "
                            "with no checkpoint configured: a restart trains from scratch")
        run.save_training()
        raise Preempted(f"[{name}] {StopRequest.reason}: checkpoint saved at epoch {state.epoch} step {state.step}")
    if saves.path is not None and saves.schedule.due_by_time():
        took = time.perf_counter()
        run.save_training()
        saves.schedule.saved()
        say(f"checkpoint saved at epoch {state.epoch} step {state.step} ({time.perf_counter() - took:.1f} s)")


def _close_epoch(run: _Run, data: Tensors, plan: _Plan, say: Callable[[str], None]) -> None:
    """The end of an epoch: each member's record (clocks, evaluation, divergence, early stopping), the
    masks of those that stopped, the epoch's log line and, when due, the epochs' checkpoint."""
    state, trainee, total = run.state, run.trainee, plan.epochs * plan.steps
    last_lr = plan.lr_at(state.epoch * plan.steps + plan.steps - 1)  # the rate of the epoch's last step
    state.clocks = schedule_clocks(plan.spec, total, (state.epoch + 1) * plan.steps, trainee.weight_decay)  # closed form, as the calculator
    recorded = _end_epoch(state, trainee.end_epoch(data, state.seen), last_lr, plan.patience, run.saves.started)
    _keep_best(run, recorded, plan)
    state.epoch += 1
    EpochsFinished.count += 1
    state.draws = state.sums = None
    keep = [m for m in state.active if state.members[m].status == "ok" and not state.members[m].stopped_early]
    if len(keep) < len(state.active):
        state.active = keep
        trainee.mask(keep)
    _log_epoch(say, state, recorded, plan.epochs, len(state.members), time.perf_counter() - run.saves.started)
    if run.saves.path is not None and state.active and run.saves.schedule.due(state.epoch, plan.epochs):
        run.save_training()
        run.saves.schedule.saved()


def _keep_best(run: _Run, recorded: list[int], plan: _Plan) -> None:
    """With ``final_test`` > 0: keep the network of every member whose validation loss fell below its
    least so far this epoch (strictly, as tau_best takes the first minimum; such a member's patience
    count is back at 0), i.e. its network at tau_best once training ends."""
    improved = [m for m in recorded if run.state.members[m].wait == 0]
    if plan.final_test and improved:
        run.kept = run.trainee.keep(run.kept, improved)


def final_test_set(data: Tensors, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n`` images of the data's test split: the per-epoch test images where they are enough
    (they are the split's first ``n_test``), else the job's larger final set (``data.x_final``)."""
    for x, y in ((data.x_test, data.y_test), (data.x_final, data.y_final)):
        if x is not None and n <= len(x):
            return x[:n], y[:n]
    have = max(len(data.x_test), 0 if data.x_final is None else len(data.x_final))
    raise ValueError(f"final_test = {n} but this job has {have} test images; prepare the final test images "
                     "(data.source torchvision or archive) or lower final_test")


def _evaluate_final(run: _Run, data: Tensors, plan: _Plan, say: Callable[[str], None]) -> None:
    """With ``final_test`` > 0: each member's kept network evaluated once on the first ``final_test``
    test images, recorded for every member with a finished epoch (the others keep None: NaN)."""
    if not plan.final_test or run.kept is None:
        return
    took = time.perf_counter()
    x, y = final_test_set(data, plan.final_test)
    rows = run.trainee.evaluate_kept(run.kept, data, x, y)
    for member, st in enumerate(run.state.members):
        if st.history["epoch"]:
            st.final = rows[member]
    say(f"the selected networks evaluated on {len(x)} test images ({time.perf_counter() - took:.1f} s)")


def _say_diverged(runs: list[dict], state: LoopState, say: Callable[[str], None]) -> None:
    """One line per member that diverged."""
    for member, r in enumerate(runs):
        if state.members[member].status == "diverged":
            say(f"{r['run_id']} diverged (non-finite loss) after {state.members[member].epoch} finished epochs")


def _records(runs: list[dict], state: LoopState, wall: float, env: dict) -> list[dict]:
    """The metrics record of every member (docs/outputs.md), in order."""
    return [{"format": METRICS_FORMAT, "run_id": r["run_id"], "spec": dict(r["spec"]), "status": st.status,
             "stopped_early": st.stopped_early, "history": st.history,
             "summary": summarize(st.history, st.kernel_norm_init, _final_of(r["spec"], st)),
             "env": env, "wall_seconds": state.finished_at.get(member, wall)}
            for member, (r, st) in enumerate(zip(runs, state.members, strict=True))]


def _final_of(spec: dict, st: RunState) -> list[float] | None:
    """What the summary records of the final evaluation: None where the spec asks none (no keys), NaN
    where the member has none (no finished epoch)."""
    if not int(spec.get("final_test", 0)):
        return None
    return list(st.final) if st.final is not None else [math.nan, math.nan]


def _resume(checkpoint: Path | None, key: dict, say: Callable[[str], None], device: torch.device) -> dict | None:
    """The checkpoint's payload, or None (none there, or none usable: said, and training starts over)."""
    if checkpoint is None:
        return None
    try:
        return load_checkpoint(checkpoint, key, report=say, map_location=device)
    except CheckpointError as exc:
        say(f"{exc}; starting from scratch")
        return None


def _end_epoch(state: LoopState, columns: list[list[float]], last_lr: float, patience: int | None, started: float) -> list[int]:
    """Append each active member's history row and apply divergence and early stopping; returns the members that recorded."""
    recorded = []
    for member in state.active:
        row = dict(zip(COLUMNS, columns[member], strict=True))
        st = state.members[member]
        if not (row["finite"] and math.isfinite(row["val_loss"]) and math.isfinite(row["test_loss"])):
            st.status = "diverged"
            state.finished_at[member] = time.perf_counter() - started
            continue
        st.epoch = state.epoch + 1
        values = {"epoch": st.epoch, **{k: row[k] for k in COLUMNS[:-1]}, "lr": last_lr, **state.clocks}
        st.record_epoch(values, patience)
        recorded.append(member)
        if st.stopped_early:
            state.finished_at[member] = time.perf_counter() - started
    return recorded


def _log_epoch(say: Callable[[str], None], state: LoopState, recorded: list[int], epochs: int, size: int, seconds: float) -> None:
    """One line per epoch: a single run's losses, or how many of a pack's runs still train."""
    if size == 1 and recorded:
        h = state.members[0].history
        say(f"epoch {state.epoch}/{epochs} loss {h['train_loss'][-1]:.4f} acc {h['train_acc'][-1]:.3f} "
            f"val {h['val_loss'][-1]:.4f}/{h['val_acc'][-1]:.3f} test {h['test_acc'][-1]:.3f} {seconds:.1f}s")
    elif size > 1 and state.active:
        val = [state.members[i].history["val_loss"][-1] for i in state.active]
        say(f"epoch {state.epoch}/{epochs}: {len(state.active)} of {size} runs training, val loss "
            f"{min(val):.4f}..{max(val):.4f}, {seconds:.1f}s")
