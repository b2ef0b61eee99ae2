"""Train one run exactly as the paper's Appendix A specifies (Keras semantics), and packs of runs.

One run: fixed split, per-run generators (init, data order, augmentation) derived from the seed,
sigma_w init, cosine (or constant) per-step schedule, Keras optimizer, optional kernel L2 (a loss
term, included in every reported loss as Keras does), optional early stopping on val loss that
leaves the schedule unchanged. Per epoch: running train loss/acc (batch-size weighted), val/test
loss/acc in eval mode, kernel norm, the last step's lr and the cumulative clocks
T_sgd = sum eta_k^2 / b, T_l2 = sum eta_k l2, T_wd = sum eta_k wd, T_adapt = sum eta_k.
A NaN/inf loss ends the run as ``diverged`` with the history so far.
"""

from __future__ import annotations

import contextlib
import math
import platform
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import torch
import torch.nn.functional as F

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
from initmem.engine.data import Splits
from initmem.engine.metrics import METRICS_FORMAT
from initmem.engine.models import build_model, init_weights, kernel_norm, kernels
from initmem.engine.optim import KerasOptimizer, lr_schedule

EVAL_BATCH = 1000
INTERP_ACC = 0.995
HISTORY_KEYS = ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc",
                "kernel_norm", "lr", "T_sgd", "T_l2", "T_wd", "T_adapt")


class Preempted(RuntimeError):
    """SIGTERM arrived: the run saved a checkpoint and stopped; a restart resumes it."""


class _StopFlag:
    """Set by SIGTERM (what SLURM sends before a time limit or preemption)."""

    requested = False


def install_sigterm_handler() -> None:
    """Make SIGTERM request a checkpoint-and-exit at the next step instead of killing the process."""
    def handler(signum, frame):  # noqa: ARG001
        _StopFlag.requested = True
    signal.signal(signal.SIGTERM, handler)


def seed_streams(seed: int) -> tuple[torch.Generator, np.random.Generator, torch.Generator]:
    """Independent per-run generators for init, data order and augmentation (never the global RNG)."""
    init_seed, order_seed, aug_seed = np.random.SeedSequence(seed).generate_state(3, dtype=np.uint64)
    return (torch.Generator().manual_seed(int(init_seed)), np.random.default_rng(int(order_seed)),
            torch.Generator().manual_seed(int(aug_seed)))


def draw_augment(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch's augmentation draws from ``gen``: horizontal flips (n,) and crop offsets (n, 2)."""
    flip = torch.rand(n, generator=gen) < 0.5
    offsets = torch.randint(0, 9, (n, 2), generator=gen)
    return flip, offsets


def apply_augment(x: torch.Tensor, flip: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Flip, 4-px reflect pad and 32x32 crop at ``offsets``; leading axes of ``x`` (images or
    models x images) match those of ``flip`` and ``offsets[..., 0]``. Pure indexing: exact."""
    lead, (c, h, w) = x.shape[:-3], x.shape[-3:]
    x, flip, offsets = x.reshape(-1, c, h, w), flip.reshape(-1).to(x.device), offsets.reshape(-1, 2).to(x.device)
    n = len(x)
    x = torch.where(flip.view(n, 1, 1, 1), x.flip(3), x)
    padded = F.pad(x, (4, 4, 4, 4), mode="reflect")
    rows = offsets[:, 0:1] + torch.arange(h, device=x.device)
    cols = offsets[:, 1:2] + torch.arange(w, device=x.device)
    idx_n = torch.arange(n, device=x.device).view(n, 1, 1, 1)
    idx_c = torch.arange(c, device=x.device).view(1, -1, 1, 1)
    return padded[idx_n, idx_c, rows.view(n, 1, h, 1), cols.view(n, 1, 1, w)].reshape(*lead, c, h, w)


def augment_batch(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random horizontal flip + 4-px reflect pad + random 32x32 crop, drawn from ``gen``."""
    return apply_augment(x, *draw_augment(len(x), gen))


def draw_epoch_augment(gen: torch.Generator, n: int, b: int, first_step: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The augmentation draws of an epoch's batches ``first_step``.. (flips (m,), offsets (m, 2) for
    the m images they hold), made batch by batch: the same numbers as drawing at every step."""
    batches = [draw_augment(min(b, n - i), gen) for i in range(first_step * b, n, b)]
    return torch.cat([f for f, _ in batches]), torch.cat([o for _, o in batches])


PRECISIONS = ("float32", "tf32", "bf16")


def set_precision(precision: str) -> Callable[[torch.device], contextlib.AbstractContextManager]:
    """Apply ``compute.precision``; returns the autocast context factory for forward passes.

    float32 (default, fidelity): IEEE float32 matmuls and convolutions (TF32 off, also for cuDNN,
    where PyTorch allows it by default). tf32: TensorFloat-32 matmuls/convs on Ampere+ GPUs. bf16:
    bfloat16 autocast of forward passes (cross-entropy, moving statistics and optimizer state stay float32).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    if precision == "bf16":
        return lambda device: torch.autocast(device.type, dtype=torch.bfloat16)
    return lambda device: contextlib.nullcontext()


COMPILE_RECOMPILE_LIMIT = 64  # static shapes: train, last partial batch, evaluation


def check_compile(compile: bool | str) -> None:
    """Raise a clear error for a ``compute.compile`` value other than false, true or step."""
    if not (isinstance(compile, bool) or compile == "step"):
        raise ValueError(f"unknown compute.compile {compile!r}; choose false, true (the forward pass) or step (the whole training step)")


def _raise_recompile_limit() -> None:
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, COMPILE_RECOMPILE_LIMIT)


def compile_forward(fn: Callable, compile: bool) -> Callable:
    """``compute.compile``: the forward pass (a module, or a function of tensors) through
    ``torch.compile`` (TorchInductor fuses the normalisation and activation arithmetic; the backward
    pass is compiled with it). Off: ``fn`` itself.

    Shapes are static: every new shape (the last partial batch, evaluation; packs keep their size)
    compiles once more, which costs seconds to a minute each. Dynamic shapes would avoid that, but
    their symbolic shape analysis of the vectorised convolutions did not finish (torch 2.14, CPU).
    """
    if not compile:
        return fn
    _raise_recompile_limit()
    return torch.compile(fn, dynamic=False)


def compile_step(step: Callable[[torch.Tensor, torch.Tensor], None], compile: bool | str,
                 device: torch.device) -> Callable[[torch.Tensor, torch.Tensor], None]:
    """``compute.compile: step``: the whole training step ``step(x, y)`` (forward, loss, backward,
    optimizer update, running sums) through ``torch.compile``; on CUDA in mode ``reduce-overhead``,
    which replays each graph as a CUDA graph (one launch instead of hundreds of kernels). Any other
    setting: ``step`` itself.

    Everything that changes from step to step must reach the step as a tensor updated in place (the
    learning rate, the optimizer's step count, a pack's mask): a Python number would be a constant
    of the graph and recompile it every step. ``backward()`` is a graph break: Dynamo builds the
    forward and loss as one graph (AOTAutograd compiles its backward with it) and the update as
    another. Autocast (bf16) is resolved while tracing, so every precision is captured. Shapes are
    static as in :func:`compile_forward` (the last partial batch compiles once more).
    """
    if compile != "step":
        return step
    _raise_recompile_limit()
    if device.type != "cuda":
        return torch.compile(step, dynamic=False)
    compiled = torch.compile(step, dynamic=False, mode="reduce-overhead")

    def captured(x: torch.Tensor, y: torch.Tensor) -> None:
        torch.compiler.cudagraph_mark_step_begin()  # a new iteration: the last step's graph outputs are no longer read
        compiled(x, y)
    return captured


def static_inputs(device: torch.device, tensors: list[torch.Tensor]) -> None:
    """On CUDA, tell the compiler that ``tensors`` (what a step updates in place) keep their address,
    so CUDA graphs may mutate them instead of being skipped for mutated inputs."""
    if device.type == "cuda":
        for t in tensors:
            torch._dynamo.mark_static_address(t)


def step_inputs(n: int | None, device: torch.device) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The tensors a step reads besides its batch, kept for the whole run so their addresses stay fixed:
    the learning rate (0-d float64) and the running sums (loss x images, correct, finite; per model when ``n``)."""
    shape = () if n is None else (n,)
    return (torch.zeros((), dtype=torch.float64, device=device),
            {"loss": torch.zeros(shape, dtype=torch.float64, device=device),
             "correct": torch.zeros(shape, dtype=torch.float64, device=device),
             "finite": torch.ones(shape, dtype=torch.bool, device=device)})


def l2_penalty(model: torch.nn.Module, l2: float) -> torch.Tensor | float:
    """Keras kernel_regularizer L2: l2 * sum(W^2) over conv and dense kernels."""
    if not l2:
        return 0.0
    return l2 * sum(w.square().sum() for w in kernels(model))


@torch.no_grad()
def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, l2: float,
             autocast: contextlib.AbstractContextManager | None = None,
             net: Callable[[torch.Tensor], torch.Tensor] | None = None) -> tuple[float, float]:
    """Eval-mode mean loss (cross-entropy + the L2 term, as Keras' evaluate reports) and accuracy;
    ``net`` (default ``model``) is what computes the logits, e.g. the compiled model."""
    model.eval()
    net = model if net is None else net
    total_loss = torch.zeros((), dtype=torch.float64, device=x.device)
    correct = torch.zeros((), dtype=torch.int64, device=x.device)
    for i in range(0, len(x), EVAL_BATCH):
        with autocast or contextlib.nullcontext():
            logits = net(x[i:i + EVAL_BATCH])
        total_loss += F.cross_entropy(logits.float(), y[i:i + EVAL_BATCH], reduction="sum").double()
        correct += (logits.argmax(1) == y[i:i + EVAL_BATCH]).sum()
    return float(total_loss) / len(x) + float(l2_penalty(model, l2)), int(correct) / len(x)


def run_step(net: Callable[[torch.Tensor], torch.Tensor], model: torch.nn.Module, opt: KerasOptimizer, x: torch.Tensor,
             y: torch.Tensor, lr: float | torch.Tensor, l2: float, sums: dict[str, torch.Tensor],
             autocast: contextlib.AbstractContextManager | None = None) -> None:
    """One training step of a single run: forward (through ``net``, e.g. the compiled ``model``), loss
    (+ the L2 term), backward and the optimizer's update with rate ``lr`` (a 0-d tensor when the step is
    compiled); the batch's loss x images, correct count and finiteness go into ``sums`` on the device (no host read)."""
    with autocast or contextlib.nullcontext():
        logits = net(x)
    loss = F.cross_entropy(logits.float(), y) + l2_penalty(model, l2)
    sums["finite"] &= torch.isfinite(loss)
    for p in opt.params:
        p.grad = None
    loss.backward()
    opt.step(lr)
    sums["loss"] += loss.detach().double() * len(y)
    sums["correct"] += (logits.argmax(1) == y).sum().double()


@dataclass
class Tensors:
    """The prepared splits as float tensors in [0, 1] on the training device (shared by a pack)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @classmethod
    def from_splits(cls, s: Splits, device: torch.device) -> Tensors:
        f = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float32) / 255.0).to(device)  # noqa: E731
        i = lambda a: torch.from_numpy(np.asarray(a, dtype=np.int64)).to(device)  # noqa: E731
        return cls(f(s.x_train), i(s.y_train), f(s.x_val), i(s.y_val), f(s.x_test), i(s.y_test))


@dataclass
class RunState:
    """Everything needed to resume a run bit-identically, also in the middle of an epoch."""

    epoch: int = 0                    # finished epochs
    step: int = 0                     # steps taken in the current epoch
    perm: np.ndarray | None = None    # data order of the current epoch
    loss_sum: float = 0.0             # as of ``step`` (during an epoch the sums live on the device)
    correct: float = 0.0
    seen: int = 0
    augment: tuple | None = None      # the current epoch's flips and offsets from ``augment_from`` on
    augment_from: int = 0
    clocks: dict = field(default_factory=lambda: {"T_sgd": 0.0, "T_l2": 0.0, "T_wd": 0.0, "T_adapt": 0.0})
    history: dict = field(default_factory=lambda: {k: [] for k in HISTORY_KEYS})
    best_val: float = math.inf
    wait: int = 0
    stopped_early: bool = False
    status: str = "ok"
    kernel_norm_init: float = 0.0
    wall_seconds: float = 0.0

    def record_epoch(self, row: dict, patience: int | None) -> None:
        """Append a finished epoch's row and apply Keras EarlyStopping(monitor="val_loss", min_delta=0)."""
        for key in HISTORY_KEYS:
            self.history[key].append(row[key])
        if row["val_loss"] < self.best_val:
            self.best_val, self.wait = row["val_loss"], 0
        else:
            self.wait += 1
            if patience is not None and self.wait >= patience:
                self.stopped_early = True


def summarize(history: dict, kernel_norm_init: float) -> dict:
    """tau_best (first epoch of minimal val loss), metrics there, tau_interp and the repair gap."""
    out = {"tau_best": None, "tau_interp": None, "val_loss_best": None, "val_acc_best": None,
           "test_acc_best": None, "train_acc_best": None, "kernel_norm_init": kernel_norm_init,
           "kernel_norm_best": None, "repair_gap": None}
    if not history["epoch"]:
        return out
    i = int(np.argmin(history["val_loss"]))  # argmin returns the first minimum
    out.update(tau_best=history["epoch"][i], val_loss_best=history["val_loss"][i], val_acc_best=history["val_acc"][i],
               test_acc_best=history["test_acc"][i], train_acc_best=history["train_acc"][i],
               kernel_norm_best=history["kernel_norm"][i])
    interp = [j for j, a in enumerate(history["train_acc"]) if a >= INTERP_ACC]
    if interp:
        j = interp[0]
        out.update(tau_interp=history["epoch"][j], repair_gap=history["val_acc"][i] - history["val_acc"][j])
    return out


def environment(device: torch.device, precision: str = "float32", engine: str = "loop", pack_size: int = 1,
                compile: bool | str = False) -> dict:
    """Versions, device, precision, compilation and pack engine recorded in every metrics file."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    return {"initmem": __version__, "torch": torch.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0], "device": f"{device.type}:{name}", "precision": precision,
            "threads": torch.get_num_threads(), "engine": engine, "pack_size": pack_size, "compile": compile}


def train_run(spec: dict, data: Tensors, run_id: str = "run", *, device: torch.device | None = None,
              checkpoint: Path | None = None, checkpoint_every: int = 0, precision: str = "float32", checkpoint_minutes: float = 0,
              compile: bool | str = False, log: TextIO | None = sys.stderr) -> dict:
    """Train one run and return its metrics record (see DESIGN "Outputs"). This is the reference
    trainer; :func:`initmem.engine.packed.train_packed` trains many at once with the same semantics.

    With ``checkpoint`` set, resumes from it (on ``device``, whichever device wrote it) when present and
    saves it every ``checkpoint_every`` epochs, at the end of any epoch ``checkpoint_minutes`` after
    the last save, and on SIGTERM (then raises :class:`Preempted`). ``compile``: ``True`` compiles the
    forward pass (:func:`compile_forward`), ``"step"`` the whole training step (:func:`compile_step`) and the evaluation's forward.
    """
    check_compile(compile)
    device = device or data.x_train.device
    autocast = set_precision(precision)
    init_gen, order_rng, aug_gen = seed_streams(int(spec["seed"]))
    model = build_model(spec["arch"], int(spec["width"]), spec["norm"], spec["pool"]).to(device)
    init_weights(model, float(spec["sigma_w"]), init_gen)
    model.to(device)
    net = compile_forward(model, bool(compile))
    opt = KerasOptimizer(spec["optimizer"], list(model.parameters()), spec["weight_decay"], spec["momentum"],
                         weight_decay_mode=spec.get("weight_decay_mode", "decoupled"))
    n, b, epochs = len(data.x_train), int(spec["batch_size"]), int(spec["epochs"])
    steps = math.ceil(n / b)
    l2, wd = float(spec["l2"]), opt.weight_decay
    lr_at = lr_schedule(spec, epochs * steps)
    lr, sums = step_inputs(None, device)
    fwd = model if compile == "step" else net  # a compiled step traces the module itself
    if compile == "step":
        static_inputs(device, opt.buffers() + [lr, *sums.values()])
    step = compile_step(lambda x, y: run_step(fwd, model, opt, x, y, lr, l2, sums, autocast(device)), compile, device)

    state = RunState(kernel_norm_init=kernel_norm(model))
    if checkpoint is not None:
        try:
            report = (lambda msg: print(f"[{run_id}] {msg}", file=log, flush=True)) if log else None
            resumed = load_checkpoint(checkpoint, spec, report=report, map_location=device)
        except CheckpointError as exc:
            print(f"[{run_id}] {exc}; starting from scratch", file=log, flush=True)
            resumed = None
        if resumed is not None:
            state = resumed["state"]
            model.load_state_dict(resumed["model"])
            opt.load_state_dict(resumed["optimizer"])
            order_rng.bit_generator.state = resumed["order_rng"]
            set_generator_state(aug_gen, resumed["aug_gen"])
            if log:
                print(f"[{run_id}] resumed at epoch {state.epoch} step {state.step}", file=log, flush=True)

    def save() -> None:
        save_checkpoint(checkpoint, spec, {"state": state, "model": model.state_dict(), "optimizer": opt.state_dict(),
                                           "order_rng": order_rng.bit_generator.state, "aug_gen": generator_state(aug_gen)})

    patience = spec.get("patience")
    schedule = CheckpointSchedule(checkpoint_every, checkpoint_minutes)
    started = time.perf_counter() - state.wall_seconds
    while state.epoch < epochs and not state.stopped_early and state.status == "ok":
        if state.perm is None:
            state.perm, state.step, state.loss_sum, state.correct, state.seen = order_rng.permutation(n), 0, 0.0, 0.0, 0
            state.augment = None
        if spec["augment"] and state.augment is None:
            state.augment, state.augment_from = draw_epoch_augment(aug_gen, n, b, state.step), state.step
        # One copy to the device per epoch, sums and the divergence flag kept there: no host sync per step.
        perm = torch.from_numpy(state.perm).to(device)
        flips, offsets = (t.to(device) for t in state.augment) if spec["augment"] else (None, None)
        sums["loss"].fill_(state.loss_sum)
        sums["correct"].fill_(state.correct)
        sums["finite"].fill_(True)
        model.train()
        while state.step < steps:
            lr.fill_(lr_at(state.epoch * steps + state.step))
            batch = slice(state.step * b, (state.step + 1) * b)
            idx = perm[batch]
            x, y = data.x_train[idx], data.y_train[idx]
            if spec["augment"]:
                aug = slice(batch.start - state.augment_from * b, batch.stop - state.augment_from * b)
                x = apply_augment(x, flips[aug], offsets[aug])
            step(x, y)
            state.seen += len(y)
            state.step += 1
            if _StopFlag.requested and checkpoint is not None:
                state.loss_sum, state.correct = float(sums["loss"]), float(sums["correct"])
                if not sums["finite"]:
                    state.status = "diverged"
                state.wall_seconds = time.perf_counter() - started
                save()
                raise Preempted(f"[{run_id}] SIGTERM: checkpoint saved at epoch {state.epoch} step {state.step}")
        state.loss_sum, state.correct = float(sums["loss"]), float(sums["correct"])
        if not sums["finite"]:  # a non-finite loss anywhere in the epoch: Keras' TerminateOnNaN, read once per epoch
            state.status = "diverged"
        if state.status != "ok":
            break
        val_loss, val_acc = evaluate(model, data.x_val, data.y_val, l2, autocast(device), net)
        test_loss, test_acc = evaluate(model, data.x_test, data.y_test, l2, autocast(device), net)
        if not (math.isfinite(val_loss) and math.isfinite(test_loss)):
            state.status = "diverged"
            break
        last_lr = lr_at(state.epoch * steps + steps - 1)  # the rate of the epoch's last step
        state.epoch += 1
        state.clocks = schedule_clocks(spec, epochs * steps, state.epoch * steps, wd)  # closed form, as the calculator
        row = {"epoch": state.epoch, "train_loss": state.loss_sum / state.seen, "train_acc": state.correct / state.seen,
               "val_loss": val_loss, "val_acc": val_acc, "test_loss": test_loss, "test_acc": test_acc,
               "kernel_norm": kernel_norm(model), "lr": last_lr, **state.clocks}
        state.record_epoch(row, patience)
        state.perm = state.augment = None
        if log:
            print(f"[{run_id}] epoch {state.epoch}/{epochs} loss {row['train_loss']:.4f} acc {row['train_acc']:.3f} "
                  f"val {val_loss:.4f}/{val_acc:.3f} test {test_acc:.3f} {time.perf_counter() - started:.1f}s",
                  file=log, flush=True)
        if checkpoint is not None and schedule.due(state.epoch, epochs):
            state.wall_seconds = time.perf_counter() - started
            save()
            schedule.saved()
    if state.status == "diverged" and log:
        print(f"[{run_id}] diverged (non-finite loss) after {state.epoch} finished epochs", file=log, flush=True)
    return {"format": METRICS_FORMAT, "run_id": run_id, "spec": dict(spec), "status": state.status,
            "stopped_early": state.stopped_early, "history": state.history,
            "summary": summarize(state.history, state.kernel_norm_init), "env": environment(device, precision, compile=compile),
            "wall_seconds": time.perf_counter() - started}
