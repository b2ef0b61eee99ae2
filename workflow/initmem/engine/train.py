"""Train one run exactly as the paper's Appendix A specifies (Keras semantics): the reference trainer.

One run: fixed split, per-run generators (init, data order, augmentation) derived from the seed,
sigma_w init, cosine (or constant) per-step schedule, Keras optimizer, optional kernel L2 (a loss
term, included in every reported loss as Keras does), optional early stopping on val loss that
leaves the schedule unchanged. Per epoch: running train loss/acc (batch-size weighted), val/test
loss/acc in eval mode, kernel norm, the last step's lr and the cumulative clocks
T_sgd = sum eta_k^2 / b, T_l2 = sum eta_k l2, T_wd = sum eta_k wd, T_adapt = sum eta_k.
A NaN/inf loss ends the run as ``diverged`` with the history so far.

This module is the single run's model, step and evaluation (:class:`SingleRun`); the epochs,
checkpoints, resume and stopping are the one loop's (:mod:`initmem.engine.loop`), which
:func:`initmem.engine.packed.train_packed` shares.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import torch
import torch.nn.functional as F

from initmem.engine.compute import (
    EVAL_BATCH,
    Layout,
    check_compile,
    compile_forward,
    compile_step,
    loss_dtype,
    set_precision,
    static_inputs,
    step_inputs,
)
from initmem.engine.loop import train_loop
from initmem.engine.models import batch_norms, build_model, init_weights, kernel_norm, kernels, precise_statistics
from initmem.engine.optim import KerasOptimizer
from initmem.engine.settings import DEFAULTS, TrainSettings
from initmem.engine.streams import Tensors


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
        total_loss += F.cross_entropy(loss_dtype(logits), y[i:i + EVAL_BATCH], reduction="sum").double()
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
    loss = F.cross_entropy(loss_dtype(logits), y) + l2_penalty(model, l2)
    sums["finite"] &= torch.isfinite(loss)
    for p in opt.params:
        p.grad = None
    loss.backward()
    opt.step(lr)
    sums["loss"] += loss.detach().double() * len(y)
    sums["correct"] += (logits.argmax(1) == y).sum().double()


class SingleRun:
    """One plain model and its Keras optimizer: the loop's trainee of one member (row 0)."""

    def __init__(self, spec: dict, init_gen: torch.Generator, device: torch.device, precision: str, compile: bool | str,
                 classes: int = 10, memory_format: str = "contiguous"):
        autocast = set_precision(precision)
        self.autocast = lambda: autocast(device)
        layout = Layout(memory_format)
        self.model = build_model(spec["arch"], int(spec["width"]), spec["norm"], spec["pool"], classes).to(device)
        init_weights(self.model, float(spec["sigma_w"]), init_gen)
        self.model.to(device)
        self.kernel_norms_init = [kernel_norm(self.model)]  # before the layout: the same sum whichever it is
        layout.module(self.model)
        forward = (lambda x: self.model(layout.batch(x))) if layout.channels_last else self.model
        self.forward = forward
        self.net = compile_forward(forward, bool(compile))
        self.bn_eval, self.train_eval, self.batch = spec.get("bn_eval", "moving"), bool(spec.get("train_eval", False)), int(spec["batch_size"])
        self.opt = KerasOptimizer(spec["optimizer"], list(self.model.parameters()), spec["weight_decay"], spec["momentum"],
                                  weight_decay_mode=spec.get("weight_decay_mode", "decoupled"))
        self.weight_decay, self.l2 = self.opt.weight_decay, float(spec["l2"])
        self.lr, self.sums = step_inputs(1, device)
        fwd = forward if compile == "step" else self.net  # a compiled step traces the module itself
        if compile == "step":
            static_inputs(device, self.opt.buffers() + [self.lr, *self.sums.values()])
        self._step = compile_step(lambda x, y: run_step(fwd, self.model, self.opt, x, y, self.lr, self.l2, self.sums,
                                                        self.autocast()), compile, device)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self._step(x[0], y[0])

    def train(self) -> None:
        self.model.train()

    def end_epoch(self, data: Tensors, seen: int) -> list[list[float]]:
        loss_sum, correct, finite = float(self.sums["loss"]), float(self.sums["correct"]), bool(self.sums["finite"])
        with self._statistics(data):
            val_loss, val_acc = evaluate(self.model, data.x_val, data.y_val, self.l2, self.autocast(), self.net)
            test_loss, test_acc = evaluate(self.model, data.x_test, data.y_test, self.l2, self.autocast(), self.net)
            train_acc_eval = (evaluate(self.model, data.x_train, data.y_train, self.l2, self.autocast(), self.net)[1]
                              if self.train_eval else math.nan)
        return [[loss_sum / seen, correct / seen, val_loss, val_acc, test_loss, test_acc, kernel_norm(self.model), train_acc_eval, finite]]

    def _statistics(self, data: Tensors) -> contextlib.AbstractContextManager:
        """The BatchNorm statistics the evaluation reads: Keras' moving ones, or (``bn_eval: precise``)
        those of the training set under the current weights (:func:`precise_statistics`)."""
        norms = batch_norms(self.model) if self.bn_eval == "precise" else []
        if not norms:
            return contextlib.nullcontext()
        self.model.train()

        def forward(x: torch.Tensor) -> None:
            with self.autocast():
                self.forward(x)
        return precise_statistics(norms, [b for m in norms for b in (m.moving_mean, m.moving_var)], forward,
                                  data.x_train, self.batch)

    def mask(self, active: list[int]) -> None:
        """A single run never trains on after it stops: nothing to freeze."""

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict(), "optimizer": self.opt.state_dict()}

    def load_state_dict(self, sd: dict) -> None:
        self.model.load_state_dict(sd["model"])  # copies onto the model's device
        self.opt.load_state_dict(sd["optimizer"])  # onto each parameter's device

    def keep(self, kept: dict | None, members: list[int]) -> dict:
        """A copy of the model's weights and BatchNorm buffers (the one member improved)."""
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def evaluate_kept(self, kept: dict, data: Tensors, x: torch.Tensor, y: torch.Tensor) -> list[list[float]]:
        """[[loss, accuracy]] on ``x``, ``y`` of the kept network, loaded into the model and evaluated as
        :meth:`end_epoch` evaluates the test images (the same BatchNorm statistics)."""
        self.model.load_state_dict(kept)
        with self._statistics(data):
            return [list(evaluate(self.model, x, y, self.l2, self.autocast(), self.net))]


def train_run(spec: dict, data: Tensors, run_id: str = "run", *, settings: TrainSettings = DEFAULTS,
              device: torch.device | None = None, checkpoint: Path | None = None, log: TextIO | None = sys.stderr) -> dict:
    """Train one run and return its metrics record (docs/outputs.md). This is the reference
    trainer; :func:`initmem.engine.packed.train_packed` trains many at once with the same semantics.

    ``settings`` (:class:`initmem.engine.settings.TrainSettings`): ``precision``; ``compile``: ``True``
    compiles the forward pass (:func:`compile_forward`), ``"step"`` the whole training step
    (:func:`compile_step`) and the evaluation's forward; ``memory_format``: the kernels' and images'
    layout (:class:`initmem.engine.compute.Layout`); ``checkpoint_every`` and ``checkpoint_minutes``
    as below. Its ``device`` choice is the job's (:func:`initmem.pipeline.jobs.train_pack`): the run
    trains on ``device``, the data's device by default.
    With ``checkpoint`` set, resumes from it (on ``device``, whichever device wrote it) when present and
    saves it every ``checkpoint_every`` epochs, at the first step ``checkpoint_minutes`` after the
    last save, on SIGTERM or SIGINT (then raises :class:`Preempted`) and when the run ends (a
    finished run is never trained again).
    """
    check_compile(settings.compile)
    device = device or data.x_train.device
    run = {"run_id": run_id, "spec": spec}
    return train_loop([run], data, lambda gens: SingleRun(spec, gens[0], device, settings.precision, settings.compile, data.classes,
                                                          settings.memory_format),
                      settings=settings, engine="loop", device=device, name=run_id, checkpoint=checkpoint, log=log)[0]
