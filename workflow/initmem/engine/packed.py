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
"""

from __future__ import annotations

import contextlib
import copy
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

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
from initmem.engine.models import build_model, init_weights, kernel_layers, kernel_norm
from initmem.engine.optim import KerasOptimizer, flatten_, lr_schedule, mask_rows
from initmem.engine.train import (
    EVAL_BATCH,
    Preempted,
    RunState,
    Tensors,
    _StopFlag,
    apply_augment,
    check_compile,
    compile_forward,
    compile_step,
    draw_epoch_augment,
    environment,
    seed_streams,
    set_precision,
    static_inputs,
    step_inputs,
    summarize,
)

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

    def __init__(self, models: list[nn.Module]):
        params, buffers = stack_module_state(models)
        self.params: dict[str, torch.Tensor] = params
        self.buffers: dict[str, torch.Tensor] = buffers
        self.buffer_flat = flatten_(list(buffers.values()))  # one buffer: masked members are restored in one operation
        self._keep_buffers: torch.Tensor | None = None  # per element of buffer_flat (eager steps)
        self._keep_models: torch.Tensor | None = None   # per model (compiled steps)
        self.base = copy.deepcopy(models[0]).to("meta")  # structure only; tensors come from the stacks
        names = {id(m): n for n, m in models[0].named_modules()}
        self.kernel_names = [f"{names[id(m)]}.weight" for m in kernel_layers(models[0])]
        self._own = vmap(self._call, in_dims=(0, 0, 0))       # every model its own images
        self._shared = vmap(self._call, in_dims=(0, 0, None))  # every model the same images

    def compile(self, training: bool = True) -> None:
        """Run the vectorised forward passes through :func:`initmem.engine.train.compile_forward`; ``training``
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
        return (self._shared if shared else self._own)(self.params, self.buffers, x)

    def train(self, mode: bool = True) -> None:
        self.base.train(mode)

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


@dataclass
class PackState:
    """Shared progress of a pack (all members still in it are at the same step) and per-member states."""

    members: list[RunState]
    active: list[int]                 # members still training (row i of the stacked model is member i; the others are masked)
    epoch: int = 0
    step: int = 0
    clocks: dict = field(default_factory=lambda: {"T_sgd": 0.0, "T_l2": 0.0, "T_wd": 0.0, "T_adapt": 0.0})
    draws: dict | None = None         # this epoch's order and augmentation, a row per member
    sums: dict | None = None          # this epoch's running loss/correct/finite, a row per member
    seen: int = 0
    finished_at: dict = field(default_factory=dict)  # member -> wall seconds when it left the pack
    wall_seconds: float = 0.0


def _draw_epoch(rngs: list[np.random.Generator], gens: list[torch.Generator], active: list[int], n: int, b: int,
                augment: bool, device: torch.device) -> dict:
    """One epoch of data order (and augmentation) per member, drawn in exactly the order a single
    run draws them (a permutation per epoch, then flips and offsets batch by batch). Only members
    still training draw; a masked member's row repeats the first active member's draws."""
    rows = [active.index(i) if i in active else 0 for i in range(len(rngs))]
    perms = np.stack([rngs[i].permutation(n) for i in active])[rows]
    draws = {"perm": torch.from_numpy(perms).to(device)}
    if augment:
        flips, offsets = zip(*(draw_epoch_augment(gens[i], n, b) for i in active), strict=True)
        draws.update(flip=torch.stack(flips)[rows].to(device), offsets=torch.stack(offsets)[rows].to(device))
    return draws


def pack_step(model: PackedModel, opt: KerasOptimizer, x: torch.Tensor, y: torch.Tensor, lr: float | torch.Tensor, l2: float,
              sums: dict[str, torch.Tensor], autocast: contextlib.AbstractContextManager | None = None) -> None:
    """One training step of a pack (every model its own batch ``x`` (models, images, ...)): forward,
    per-model loss (+ L2), backward and the optimizer's update; masked models change nothing. Each
    model's loss x images, correct count and finiteness go into ``sums`` on the device."""
    rows = model.size
    with autocast or contextlib.nullcontext():
        logits = model.forward_masked(x)
    loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none").view(rows, -1).mean(1)
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
            logits = model(x[i:i + chunk], shared=True).float()
        ce = F.cross_entropy(logits.flatten(0, 1), target.repeat(model.size), reduction="none")
        loss_sum += ce.view(model.size, -1).sum(1).double()
        correct += (logits.argmax(-1) == target).sum(1).double()
    return loss_sum / len(x) + (model.kernel_l2() * l2).double(), correct / len(x)


def train_packed(runs: list[dict], data: Tensors, *, device: torch.device | None = None, precision: str = "float32",
                 compile: bool | str = False, max_images: int | None = None, checkpoint: Path | None = None, checkpoint_every: int = 0,
                 log: TextIO | None = sys.stderr, checkpoint_minutes: float = 0) -> list[dict]:
    """Train ``runs`` (dicts with ``run_id`` and ``spec``, differing only in sigma_w and seed) as one
    vectorised pack; one metrics record per run, in order, as :func:`initmem.engine.train.train_run` returns.

    ``max_images`` bounds models x images of an evaluation chunk (memory); checkpoints and ``compile`` as ``train_run``.
    """
    check_packable(runs)
    check_compile(compile)
    device = device or data.x_train.device
    autocast = set_precision(precision)
    specs = [r["spec"] for r in runs]
    spec, n_models = specs[0], len(runs)
    streams = [seed_streams(int(s["seed"])) for s in specs]
    models = []
    for s, (init_gen, _, _) in zip(specs, streams, strict=True):
        m = build_model(s["arch"], int(s["width"]), s["norm"], s["pool"])
        init_weights(m, float(s["sigma_w"]), init_gen)
        models.append(m.to(device))
    model = PackedModel(models)
    if compile:
        model.compile(training=compile != "step")
    state = PackState(members=[RunState(kernel_norm_init=kernel_norm(m)) for m in models], active=list(range(n_models)))
    del models
    order_rngs, aug_gens = [s[1] for s in streams], [s[2] for s in streams]
    n, b, epochs = len(data.x_train), int(spec["batch_size"]), int(spec["epochs"])
    steps = math.ceil(n / b)
    lr_at = lr_schedule(spec, epochs * steps)
    l2, patience = float(spec["l2"]), spec.get("patience")
    eval_chunk = EVAL_BATCH if max_images is None else max(1, min(EVAL_BATCH, max_images // n_models))
    name = f"pack {runs[0]['run_id']} (+{n_models - 1})"

    def say(msg: str) -> None:
        if log:
            print(f"[{name}] {msg}", file=log, flush=True)

    ckpt_key = {"runs": [r["run_id"] for r in runs], "specs": specs}
    resumed = None
    if checkpoint is not None:
        try:
            resumed = load_checkpoint(checkpoint, ckpt_key, report=say, map_location=device)
        except CheckpointError as exc:
            say(f"{exc}; starting from scratch")
            resumed = None
        if resumed is not None:
            state = resumed["state"]
            model.load_state_dict(resumed["model"])
            for rng, st in zip(order_rngs, resumed["order_rngs"], strict=True):
                rng.bit_generator.state = st
            for gen, st in zip(aug_gens, resumed["aug_gens"], strict=True):
                set_generator_state(gen, st)
            state.draws = {k: v.to(device) for k, v in state.draws.items()} if state.draws else None
            state.sums = {k: v.to(device) for k, v in state.sums.items()} if state.sums else None
            say(f"resumed at epoch {state.epoch} step {state.step} with {len(state.active)} of {n_models} runs")
    # built after a resume, over the tensors the pack trains now
    opt = KerasOptimizer(spec["optimizer"], list(model.params.values()), spec["weight_decay"], spec["momentum"], stacked=True,
                         weight_decay_mode=spec.get("weight_decay_mode", "decoupled"))
    if resumed is not None:
        opt.load_state_dict(resumed["optimizer"])
    lr, sums = step_inputs(n_models, device)
    if state.sums is not None:  # resumed in the middle of an epoch
        for k, v in state.sums.items():
            sums[k].copy_(v)
        state.sums = sums
    _mask(state, model, opt, n_models, device, always=compile == "step")
    if compile == "step":
        static_inputs(device, opt.buffers() + list(model.params.values()) + list(model.buffers.values()) + model.mask_buffers()
                      + [lr, *sums.values()])
    step = compile_step(lambda x, y: pack_step(model, opt, x, y, lr, l2, sums, autocast(device)), compile, device)
    wd = opt.weight_decay

    def save() -> None:
        state.wall_seconds = time.perf_counter() - started
        save_checkpoint(checkpoint, ckpt_key, {"state": state, "model": model.state_dict(), "optimizer": opt.state_dict(),
                                               "order_rngs": [r.bit_generator.state for r in order_rngs],
                                               "aug_gens": [generator_state(g) for g in aug_gens]})

    schedule = CheckpointSchedule(checkpoint_every, checkpoint_minutes)
    started = time.perf_counter() - state.wall_seconds
    while state.epoch < epochs and state.active:
        if state.draws is None:
            state.draws = _draw_epoch(order_rngs, aug_gens, state.active, n, b, bool(spec["augment"]), device)
            state.step, state.seen = 0, 0
            sums["loss"].zero_()
            sums["correct"].zero_()
            sums["finite"].fill_(True)
            state.sums = sums
        model.train()
        while state.step < steps:
            lr.fill_(lr_at(state.epoch * steps + state.step))
            batch = slice(state.step * b, (state.step + 1) * b)
            idx = state.draws["perm"][:, batch]
            x, y = data.x_train[idx], data.y_train[idx]
            if spec["augment"]:
                x = apply_augment(x, state.draws["flip"][:, batch], state.draws["offsets"][:, batch])
            step(x, y)
            state.seen += y.shape[1]
            state.step += 1
            if _StopFlag.requested and checkpoint is not None:
                save()
                raise Preempted(f"[{name}] SIGTERM: checkpoint saved at epoch {state.epoch} step {state.step}")
        last_lr = lr_at(state.epoch * steps + steps - 1)  # the rate of the epoch's last step
        state.clocks = schedule_clocks(spec, epochs * steps, (state.epoch + 1) * steps, wd)  # closed form, as the calculator
        _end_epoch(state, model, data, l2, eval_chunk, autocast(device), last_lr, patience, started)
        state.epoch += 1
        state.draws = state.sums = None
        keep = [member for member in state.active if state.members[member].status == "ok" and not state.members[member].stopped_early]
        if len(keep) < len(state.active):
            state.active = keep
            _mask(state, model, opt, n_models, device, always=compile == "step")
        if state.active:
            val = [state.members[i].history["val_loss"][-1] for i in state.active]
            say(f"epoch {state.epoch}/{epochs}: {len(state.active)} of {n_models} runs training, val loss "
                f"{min(val):.4f}..{max(val):.4f}, {time.perf_counter() - started:.1f}s")
        if checkpoint is not None and state.active and schedule.due(state.epoch, epochs):
            save()
            schedule.saved()
    wall = time.perf_counter() - started
    env = environment(device, precision, "vmap", n_models, compile)
    for member, r in enumerate(runs):
        st = state.members[member]
        if st.status == "diverged":
            say(f"{r['run_id']} diverged (non-finite loss) after {st.epoch} finished epochs")
    return [{"format": METRICS_FORMAT, "run_id": r["run_id"], "spec": dict(r["spec"]), "status": st.status,
             "stopped_early": st.stopped_early, "history": st.history, "summary": summarize(st.history, st.kernel_norm_init),
             "env": env, "wall_seconds": state.finished_at.get(member, wall)}
            for member, (r, st) in enumerate(zip(runs, state.members, strict=True))]


def _mask(state: PackState, model: PackedModel, opt: KerasOptimizer, n_models: int, device: torch.device, always: bool = False) -> None:
    """Mask the members that no longer train (kept in the stacked model, frozen); ``always``: keep the
    masks as tensors also while every member trains (a compiled step's graph never changes)."""
    keep = None
    if len(state.active) < n_models:
        keep = torch.zeros(n_models, dtype=torch.bool)
        keep[state.active] = True
        keep = keep.to(device)
    model.set_active(keep, always)
    opt.set_active(keep, always)


def _end_epoch(state: PackState, model: PackedModel, data: Tensors, l2: float, eval_chunk: int, autocast,
               last_lr: float, patience: int | None, started: float) -> None:
    """Evaluate, append each member's history row, and apply divergence and early stopping (one host read)."""
    val_loss, val_acc = evaluate_packed(model, data.x_val, data.y_val, l2, eval_chunk, autocast)
    test_loss, test_acc = evaluate_packed(model, data.x_test, data.y_test, l2, eval_chunk, autocast)
    columns = torch.stack([state.sums["loss"] / state.seen, state.sums["correct"] / state.seen, val_loss, val_acc,
                           test_loss, test_acc, model.kernel_norms(), state.sums["finite"].double()]).tolist()
    for member in state.active:
        row, st = member, state.members[member]
        train_loss, train_acc, v_loss, v_acc, t_loss, t_acc, norm, finite = (c[row] for c in columns)
        if not (finite and math.isfinite(v_loss) and math.isfinite(t_loss)):
            st.status = "diverged"
            state.finished_at[member] = time.perf_counter() - started
            continue
        st.epoch = state.epoch + 1
        values = {"epoch": st.epoch, "train_loss": train_loss, "train_acc": train_acc, "val_loss": v_loss, "val_acc": v_acc,
                  "test_loss": t_loss, "test_acc": t_acc, "kernel_norm": norm, "lr": last_lr, **state.clocks}
        st.record_epoch(values, patience)
        if st.stopped_early:
            state.finished_at[member] = time.perf_counter() - started
