"""Vectorised packs: runs that differ only in sigma_w and seed, trained as one stacked model.

Every member keeps what it would have alone (:func:`initmem.engine.train.train_run`): its own init, data
order and augmentation streams, BatchNorm statistics, optimizer state, early stopping, divergence
and record. The forward/backward pass is one ``torch.func.vmap`` over parameters and buffers
stacked along a leading *model* axis (a convolution with batched weights and inputs lowers to one
grouped convolution); the optimizer updates the stacked tensors in place (Muon's Newton-Schulz runs
batched over models). Only float summation order differs from single runs (tests/test_packed.py).

Device traffic: the data and one epoch of indices and augmentation draws are moved once per epoch;
divergence flags and running losses stay on the device, so a step never waits for the host. The host
reads them once per epoch. A member that diverged or stopped early is then masked, not removed: it
stays in the stacked model (every tensor keeps its shape, so compiled graphs are built once), but
its parameters, BatchNorm statistics and optimizer state no longer change and nothing more is
recorded for it.

This module is the pack's model, step and evaluation (:class:`Pack`); the epochs, checkpoints,
resume and stopping are the one loop's (:mod:`initmem.engine.loop`), which single runs share.
"""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

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
from initmem.engine.models import batch_norms, build_model, init_weights, kernel_layers, kernel_norm, precise_statistics
from initmem.engine.optim import KerasOptimizer, flatten_, mask_rows
from initmem.engine.settings import DEFAULTS, TrainSettings
from initmem.engine.streams import Tensors

PACKED_KEYS = ("sigma_w", "seed")  # the only spec keys members of a pack may differ in


def check_packable(runs: list[dict]) -> None:
    """Refuse a pack whose members differ in anything but sigma_w and seed (they share one schedule,
    batch size and optimizer), or that names a run twice."""
    ids = [r["run_id"] for r in runs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"a pack names a run twice: {ids}")
    first = runs[0]["spec"]
    for r in runs[1:]:
        differ = sorted(k for k in set(first) | set(r["spec"]) if k not in PACKED_KEYS and first.get(k) != r["spec"].get(k))
        if differ:
            raise ValueError(f"{r['run_id']} differs from {runs[0]['run_id']} in {differ}; a pack may differ only in {PACKED_KEYS}")


class PackedModel:
    """N models of one architecture as stacked parameters and buffers, called through ``vmap``."""

    def __init__(self, models: list[nn.Module], layout: Layout | None = None):
        params, buffers = stack_module_state(models)
        self.layout = layout or Layout()
        self.params: dict[str, torch.Tensor] = self.layout.stacked_kernels(params)
        self.buffers: dict[str, torch.Tensor] = buffers
        self.buffer_flat = flatten_(list(buffers.values()))  # one buffer: masked members are restored in one operation
        self._keep_buffers: torch.Tensor | None = None  # per element of buffer_flat (eager steps)
        self._keep_models: torch.Tensor | None = None   # per model (compiled steps)
        self.base = copy.deepcopy(models[0]).to("meta")  # structure only; tensors come from the stacks
        names = {id(m): n for n, m in models[0].named_modules()}
        self.kernel_names = [f"{names[id(m)]}.weight" for m in kernel_layers(models[0])]
        self._own = vmap(self._call, in_dims=(0, 0, 0))       # every model its own images
        self._shared = vmap(self._call, in_dims=(0, 0, None))  # every model the same images
        self._shared_eager = self._shared  # never compiled: precise statistics change the layers' momentum each batch

    def compile(self, training: bool = True) -> None:
        """Run the vectorised forward passes through :func:`initmem.engine.compute.compile_forward`; ``training``
        off: only the evaluation's (a compiled step traces the training forward itself)."""
        if training:
            self._own = compile_forward(self._own, True)
        self._shared = compile_forward(self._shared, True)

    def _call(self, params: dict, buffers: dict, x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.base, (params, buffers), (x,))

    @property
    def size(self) -> int:
        """Models in the pack now."""
        return next(iter(self.params.values())).shape[0]

    def __call__(self, x: torch.Tensor, shared: bool = False) -> torch.Tensor:
        """Logits (models, images, classes) of ``x``: (models, images, C, H, W), or (images, C, H, W) if ``shared``."""
        return (self._shared if shared else self._own)(self.params, self.buffers, self.layout.batch(x))

    def train(self, mode: bool = True) -> None:
        self.base.train(mode)

    def precise_statistics(self, x: torch.Tensor, batch: int,
                           autocast: Callable[[], contextlib.AbstractContextManager]) -> contextlib.AbstractContextManager:
        """Every model's BatchNorm statistics over the same images ``x`` (in batches of ``batch``, under
        ``autocast()``), within the block (:func:`initmem.engine.models.precise_statistics`); models
        without BatchNorm: nothing changes."""
        norms = batch_norms(self.base)
        if not norms:
            return contextlib.nullcontext()
        self.train()

        def forward(chunk: torch.Tensor) -> None:
            with autocast():
                self._shared_eager(self.params, self.buffers, self.layout.batch(chunk))
        return precise_statistics(norms, list(self.buffers.values()), forward, x, batch)

    def kernel_l2(self) -> torch.Tensor:
        """Per model: sum of squared conv and dense kernel entries (float32, as the single-run penalty)."""
        return sum(self.params[n].square().flatten(1).sum(1) for n in self.kernel_names)

    @torch.no_grad()
    def kernel_norms(self) -> torch.Tensor:
        """Per model: Frobenius norm of all kernels together (float64)."""
        return torch.sqrt(sum(self.params[n].double().square().flatten(1).sum(1) for n in self.kernel_names))

    def set_active(self, keep: torch.Tensor | None, always: bool = False) -> None:
        """Only the models whose flag in ``keep`` (models,) is set update their BatchNorm statistics (None: all;
        ``always``: as :meth:`initmem.engine.optim.KerasOptimizer.set_active`)."""
        if not always:
            self._keep_buffers = mask_rows(self._keep_buffers, keep, list(self.buffers.values()), always)
            return
        # a compiled step restores buffer by buffer: the flat buffer and its views may not both enter one
        # graph (AOTAutograd refuses mutated inputs that alias without being differentiable views)
        keep = torch.ones(self.size, dtype=torch.bool) if keep is None else keep
        if self._keep_models is None:
            self._keep_models = keep.to(self.buffer_flat.device, copy=True)
        else:
            self._keep_models.copy_(keep)

    def mask_buffers(self) -> list[torch.Tensor]:
        """The BatchNorm statistics' mask, if one is set (a step reads it)."""
        return [m for m in (self._keep_buffers, self._keep_models) if m is not None]

    def forward_masked(self, x: torch.Tensor) -> torch.Tensor:
        """Training-mode logits of ``x`` (models, images, ...); masked models' statistics stay as they were."""
        if self._keep_models is not None:
            saved_each = [b.clone() for b in self.buffers.values()]
            logits = self(x)
            for b, old in zip(self.buffers.values(), saved_each, strict=True):
                b.copy_(torch.where(self._keep_models.view(-1, *[1] * (b.dim() - 1)), b, old))
            return logits
        saved = self.buffer_flat.clone() if self._keep_buffers is not None else None
        logits = self(x)
        if saved is not None:
            self.buffer_flat.copy_(torch.where(self._keep_buffers, self.buffer_flat, saved))
        return logits

    def state_dict(self) -> dict:
        return {"params": {k: v.detach().clone() for k, v in self.params.items()},
                "buffers": {k: v.clone() for k, v in self.buffers.items()}}

    @torch.no_grad()
    def load_state_dict(self, sd: dict) -> None:
        """Copy :meth:`state_dict` output into the stacked tensors (in place: the optimizer's and the
        buffers' flat storage stays shared)."""
        for have, saved in ((self.params, sd["params"]), (self.buffers, sd["buffers"])):
            for k, v in saved.items():
                if v.shape != have[k].shape:
                    raise ValueError(f"pack checkpoint holds {k} of shape {tuple(v.shape)}, the pack has {tuple(have[k].shape)}: "
                                     "it was written by an older trainer; delete it to start the pack over")
                have[k].copy_(v)


def pack_step(model: PackedModel, opt: KerasOptimizer, x: torch.Tensor, y: torch.Tensor, lr: float | torch.Tensor, l2: float,
              sums: dict[str, torch.Tensor], autocast: contextlib.AbstractContextManager | None = None) -> None:
    """One training step of a pack (every model its own batch ``x`` (models, images, ...)): forward,
    per-model loss (+ L2), backward and the optimizer's update; masked models change nothing. Each
    model's loss x images, correct count and finiteness go into ``sums`` on the device."""
    rows = model.size
    with autocast or contextlib.nullcontext():
        logits = model.forward_masked(x)
    loss = F.cross_entropy(loss_dtype(logits).flatten(0, 1), y.flatten(), reduction="none").view(rows, -1).mean(1)
    if l2:
        loss = loss + model.kernel_l2() * l2
    sums["finite"] &= torch.isfinite(loss)  # read once per epoch: no host sync here
    for p in opt.params:
        p.grad = None
    loss.sum().backward()  # members share no parameter: each gets its own run's gradient
    opt.step(lr)
    sums["loss"] += loss.detach().double() * y.shape[1]
    sums["correct"] += (logits.argmax(-1) == y).sum(1).double()


@torch.no_grad()
def evaluate_packed(model: PackedModel, x: torch.Tensor, y: torch.Tensor, l2: float, chunk: int,
                    autocast) -> tuple[torch.Tensor, torch.Tensor]:
    """Per model: eval-mode mean loss (+ the L2 term) and accuracy, as :func:`initmem.engine.train.evaluate`."""
    model.train(False)
    loss_sum = torch.zeros(model.size, dtype=torch.float64, device=x.device)
    correct = torch.zeros(model.size, dtype=torch.float64, device=x.device)
    for i in range(0, len(x), chunk):
        target = y[i:i + chunk]
        with autocast:
            logits = loss_dtype(model(x[i:i + chunk], shared=True))
        ce = F.cross_entropy(logits.flatten(0, 1), target.repeat(model.size), reduction="none")
        loss_sum += ce.view(model.size, -1).sum(1).double()
        correct += (logits.argmax(-1) == target).sum(1).double()
    return loss_sum / len(x) + (model.kernel_l2() * l2).double(), correct / len(x)


class Pack:
    """A vectorised pack and its stacked Keras optimizer: the loop's trainee of many members (a row each)."""

    def __init__(self, specs: list[dict], init_gens: list[torch.Generator], device: torch.device, precision: str,
                 compile: bool | str, max_images: int | None, classes: int = 10, memory_format: str = "contiguous"):
        autocast = set_precision(precision)
        self.autocast = lambda: autocast(device)
        spec, self.size, self.device = specs[0], len(specs), device
        models = []
        for s, gen in zip(specs, init_gens, strict=True):
            m = build_model(s["arch"], int(s["width"]), s["norm"], s["pool"], classes)
            init_weights(m, float(s["sigma_w"]), gen)
            models.append(m.to(device))
        self.kernel_norms_init = [kernel_norm(m) for m in models]
        self.model = PackedModel(models, Layout(memory_format))
        del models
        if compile:
            self.model.compile(training=compile != "step")
        self.opt = KerasOptimizer(spec["optimizer"], list(self.model.params.values()), spec["weight_decay"], spec["momentum"],
                                  stacked=True, weight_decay_mode=spec.get("weight_decay_mode", "decoupled"))
        self.weight_decay, self.l2 = self.opt.weight_decay, float(spec["l2"])
        self.bn_eval, self.train_eval, self.batch = spec.get("bn_eval", "moving"), bool(spec.get("train_eval", False)), int(spec["batch_size"])
        self.eval_chunk = EVAL_BATCH if max_images is None else max(1, min(EVAL_BATCH, max_images // self.size))
        self.lr, self.sums = step_inputs(self.size, device)
        self.always = compile == "step"  # a compiled step's graph never changes: masks are tensors from the start
        self.mask(list(range(self.size)))
        if compile == "step":
            static_inputs(device, self.opt.buffers() + list(self.model.params.values()) + list(self.model.buffers.values())
                          + self.model.mask_buffers() + [self.lr, *self.sums.values()])
        self.step = compile_step(lambda x, y: pack_step(self.model, self.opt, x, y, self.lr, self.l2, self.sums,
                                                        self.autocast()), compile, device)

    def train(self) -> None:
        self.model.train()

    def end_epoch(self, data: Tensors, seen: int) -> list[list[float]]:
        precise = self.bn_eval == "precise"  # else Keras' moving statistics
        with self.model.precise_statistics(data.x_train, self.batch, self.autocast) if precise else contextlib.nullcontext():
            val_loss, val_acc = evaluate_packed(self.model, data.x_val, data.y_val, self.l2, self.eval_chunk, self.autocast())
            test_loss, test_acc = evaluate_packed(self.model, data.x_test, data.y_test, self.l2, self.eval_chunk, self.autocast())
            train_acc_eval = (evaluate_packed(self.model, data.x_train, data.y_train, self.l2, self.eval_chunk, self.autocast())[1]
                              if self.train_eval else torch.full_like(val_acc, float("nan")))
        columns = torch.stack([self.sums["loss"] / seen, self.sums["correct"] / seen, val_loss, val_acc, test_loss, test_acc,
                               self.model.kernel_norms(), train_acc_eval, self.sums["finite"].double()])
        return columns.T.tolist()  # one host read

    def mask(self, active: list[int]) -> None:
        """Mask the members not in ``active`` (kept in the stacked model, frozen)."""
        keep = None
        if len(active) < self.size:
            keep = torch.zeros(self.size, dtype=torch.bool)
            keep[active] = True
            keep = keep.to(self.device)
        self.model.set_active(keep, self.always)
        self.opt.set_active(keep, self.always)

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict(), "optimizer": self.opt.state_dict()}

    def load_state_dict(self, sd: dict) -> None:
        self.model.load_state_dict(sd["model"])  # in place, onto the pack's device
        self.opt.load_state_dict(sd["optimizer"])

    @torch.no_grad()
    def keep(self, kept: dict | None, members: list[int]) -> dict:
        """``kept`` with the rows of ``members`` of every stacked parameter and buffer copied in (every
        row the first time: :meth:`PackedModel.state_dict`)."""
        if kept is None:
            return self.model.state_dict()
        rows = torch.tensor(members, device=self.device)
        for part, live in (("params", self.model.params), ("buffers", self.model.buffers)):
            for k, v in live.items():
                kept[part][k].index_copy_(0, rows, v.index_select(0, rows))
        return kept

    def evaluate_kept(self, kept: dict, data: Tensors, x: torch.Tensor, y: torch.Tensor) -> list[list[float]]:
        """Per member [loss, accuracy] on ``x``, ``y`` of its kept network, loaded into the stacked model
        and evaluated as :meth:`end_epoch` evaluates the test images (the same BatchNorm statistics)."""
        self.model.load_state_dict(kept)
        precise = self.bn_eval == "precise"
        with self.model.precise_statistics(data.x_train, self.batch, self.autocast) if precise else contextlib.nullcontext():
            loss, acc = evaluate_packed(self.model, x, y, self.l2, self.eval_chunk, self.autocast())
        return torch.stack([loss, acc], 1).tolist()


def train_packed(runs: list[dict], data: Tensors, *, settings: TrainSettings = DEFAULTS, device: torch.device | None = None,
                 checkpoint: Path | None = None, log: TextIO | None = sys.stderr) -> list[dict]:
    """Train ``runs`` (dicts with ``run_id`` and ``spec``, differing only in sigma_w and seed) as one
    vectorised pack; one metrics record per run, in order, as :func:`initmem.engine.train.train_run` returns.

    ``settings.max_images`` bounds models x images of an evaluation chunk (memory); ``device``,
    checkpoints and the other ``settings`` as ``train_run``.
    """
    check_packable(runs)
    check_compile(settings.compile)
    device = device or data.x_train.device
    specs = [r["spec"] for r in runs]
    return train_loop(runs, data, lambda gens: Pack(specs, gens, device, settings.precision, settings.compile, settings.max_images,
                                                    data.classes, settings.memory_format),
                      settings=settings, engine="vmap", device=device, name=f"pack {runs[0]['run_id']} (+{len(runs) - 1})",
                      checkpoint=checkpoint, log=log)
