"""The engine against what a user would write: the same ResNet-9 as plain PyTorch, and both timed
the same way. Shared by ``benchmarks/engine_vs_pytorch.py`` (CPU) and ``benchmarks/device_check.py``
(its peer rows on the GPU). Needs only torch and numpy (and the library, for the engine's side).

- Peer: ``nn.Conv2d`` (bias, padding 1), ``nn.BatchNorm2d`` (eps 1e-3, momentum 0.01: Keras'
  0.99), ReLU, ``nn.MaxPool2d``, the Page/Myrtle layout the engine's ResNet-9 has, and
  ``torch.optim`` with its multi-tensor kernels (``foreach``; Adam ``fused`` on CUDA); one step is
  batch indexing, forward, cross-entropy, ``zero_grad``, backward, ``step``.
- Engine: ``initmem.engine.train.train_run`` (single runs) or ``initmem.engine.packed.train_packed``
  (packs) on random data, timed from outside: two trainings of the same shape, one of ``warm + steps``
  steps, then one of ``warm``, whose difference is the time of ``steps`` steps (model building and
  evaluation cancel; first-use costs fall on the long one, so a rate errs low).
- Timed windows (the device check's every rate): :class:`StepWindow` times consecutive steps by its
  own clock, the device synchronised at both ends, after untimed warm-up steps, and stretches a
  window found shorter than :data:`MIN_WINDOW_S`; :func:`engine_window` runs the engine's own loop
  (its trainee wrapped, :class:`TimedTrainee`) and stops it once the window closes, :func:`peer_window`
  the plain-PyTorch steps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

LR = {"sgd": 0.01, "sgd_momentum": 0.01, "adam": 1e-3, "adamw": 1e-3, "muon": 1e-3, "muon_full": 1e-3}


def sync(device: torch.device) -> None:
    """Wait for the device (a timer must not stop before the kernels do)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def steady_rate(step, warm: int, steps: int, batch_size: int, device: torch.device) -> float:
    """Images per second of ``step(i)`` over ``steps`` calls after ``warm`` untimed ones."""
    for i in range(warm):
        step(i)
    sync(device)
    start = time.perf_counter()
    for i in range(warm, warm + steps):
        step(i)
    sync(device)
    return steps * batch_size / (time.perf_counter() - start)


def _block(c_in: int, c_out: int, pool: bool = False) -> nn.Sequential:
    layers = [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.01), nn.ReLU(inplace=True)]
    return nn.Sequential(*layers, *([nn.MaxPool2d(2)] if pool else []))


class PeerResNet9(nn.Module):
    """Page/Myrtle ResNet-9 in plain PyTorch: prep w, [2w + pool + res], [4w + pool], [8w + pool + res], max pool, dense."""

    def __init__(self, width: int = 64, classes: int = 10):
        super().__init__()
        w = width
        self.prep, self.layer1 = _block(3, w), _block(w, 2 * w, pool=True)
        self.res1 = nn.Sequential(_block(2 * w, 2 * w), _block(2 * w, 2 * w))
        self.layer2, self.layer3 = _block(2 * w, 4 * w, pool=True), _block(4 * w, 8 * w, pool=True)
        self.res3 = nn.Sequential(_block(8 * w, 8 * w), _block(8 * w, 8 * w))
        self.dense = nn.Linear(8 * w, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.layer1(self.prep(x))
        h = h + self.res1(h)
        h = self.layer3(self.layer2(h))
        h = h + self.res3(h)
        return self.dense(h.amax((2, 3)))


def peer_optimizer(name: str, params, device: torch.device) -> torch.optim.Optimizer:
    """torch.optim's counterpart of the engine's ``name`` (sgd, sgd_momentum, adam) with its fast kernels."""
    if name in ("sgd", "sgd_momentum"):
        return torch.optim.SGD(params, lr=LR[name], momentum=0.9 if name == "sgd_momentum" else 0.0, foreach=True)
    if name == "adam":
        fast = {"fused": True} if device.type == "cuda" else {"foreach": True}
        return torch.optim.Adam(params, lr=LR[name], eps=1e-7, **fast)
    raise ValueError(f"no plain-PyTorch peer for optimizer {name!r}; choose sgd, sgd_momentum or adam")


def random_data(n: int, device: torch.device, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` random CIFAR-sized images in [0, 1) and labels on ``device``."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, 32, 32, generator=g).to(device), torch.randint(0, 10, (n,), generator=g).to(device)


def peer_images_per_second(width: int, batch_size: int, optimizer: str, device: torch.device, steps: int,
                           warm: int = 2) -> float:
    """Training images/s of the plain-PyTorch ResNet-9 (float32 or whatever TF32 flags are set)."""
    torch.manual_seed(0)
    model = PeerResNet9(width).to(device).train()
    opt = peer_optimizer(optimizer, model.parameters(), device)
    x, y = random_data(batch_size * (warm + steps), device)
    order = torch.randperm(len(x), device=device)

    def step(i: int) -> None:
        idx = order[i * batch_size:(i + 1) * batch_size]
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return steady_rate(step, warm, steps, batch_size, device)


def engine_step_images_per_second(width: int, batch_size: int, optimizer: str, device: torch.device, steps: int,
                                  warm: int = 2) -> float:
    """Training images/s of the engine's step alone (:class:`initmem.engine.train.SingleRun`: the Keras
    model, loss, on-device sums and optimizer), timed in process on batches drawn as the peer draws
    them: what the step's Keras semantics cost, without the loop around it."""
    from initmem.engine.train import SingleRun

    run = SingleRun(engine_spec("resnet9", width, batch_size, optimizer), torch.Generator().manual_seed(0), device,
                    "float32", False)
    run.train()
    run.lr.fill_(LR[optimizer])
    x, y = random_data(batch_size * (warm + steps), device)
    order = torch.randperm(len(x), device=device)

    def step(i: int) -> None:
        idx = order[i * batch_size:(i + 1) * batch_size]
        run.step(x[idx][None], y[idx][None])  # a single run is member 0 of the loop's batches
    return steady_rate(step, warm, steps, batch_size, device)


def engine_spec(arch: str, width: int, batch_size: int, optimizer: str, *, seed: int = 0, augment: bool = False) -> dict:
    """A resolved run spec of the paper's recipe (cosine schedule, no L2) for a throughput measurement."""
    from initmem.spec import resolve_spec

    return resolve_spec(dict(arch=arch, width=width, norm="batchnorm", pool="max", optimizer=optimizer, lr=LR[optimizer],
                             schedule="cosine", alpha=0.01, epochs=1, batch_size=batch_size, l2=0.0, weight_decay=None,
                             momentum=None, augment=augment, patience=None, sigma_w=1.0, seed=seed))


def engine_data(n_train: int, n_eval: int, device: torch.device, pool: tuple[torch.Tensor, torch.Tensor] | None = None):
    """An :class:`initmem.engine.streams.Tensors` of random images: ``n_train`` to train on, ``n_eval``
    each for validation and test (views of ``pool``, random data, when it is large enough)."""
    from initmem.engine.streams import Tensors

    need = n_train + 2 * n_eval
    x, y = pool if pool is not None and len(pool[0]) >= need else random_data(need, device)
    return Tensors(x[:n_train], y[:n_train], x[n_train:n_train + n_eval], y[n_train:n_train + n_eval],
                   x[n_train + n_eval:need], y[n_train + n_eval:need])


def engine_train_seconds(arch: str, width: int, batch_size: int, optimizer: str, pack: int, steps: int,
                         device: torch.device, *, precision: str = "float32", compile: bool | str = False,
                         pool: tuple[torch.Tensor, torch.Tensor] | None = None, n_eval: int | None = None,
                         epochs: int = 1, memory_format: str = "contiguous", log=None) -> float:
    """Wall seconds of ``epochs`` epochs of ``steps`` steps of a job training ``pack`` runs with the
    engine (``train_run`` for one, ``train_packed`` for more), model building and evaluation included."""
    from initmem.engine.packed import train_packed
    from initmem.engine.settings import TrainSettings
    from initmem.engine.train import train_run

    data = engine_data(steps * batch_size, batch_size if n_eval is None else n_eval, device, pool)
    runs = [{"run_id": f"m{i}", "spec": {**engine_spec(arch, width, batch_size, optimizer, seed=i), "epochs": epochs}}
            for i in range(pack)]
    settings = TrainSettings(precision=precision, compile=compile, memory_format=memory_format)
    sync(device)
    start = time.perf_counter()
    if pack == 1:
        train_run(runs[0]["spec"], data, settings=settings, device=device, log=log)
    else:
        train_packed(runs, data, settings=settings, device=device, log=log)
    sync(device)
    return time.perf_counter() - start


MIN_WINDOW_S = 1.0  # the shortest timed window a rate may come from
EXTEND = 1.25  # a window found short is extended to this many times the steps it needs at the rate seen so far


@dataclass(frozen=True)
class Window:
    """A timed window: ``steps`` consecutive training steps that took ``seconds`` by the timer's clock."""

    steps: int
    seconds: float


class StepWindow:
    """Times consecutive steps by ``clock`` (the device synchronised at both ends): ``warm`` untimed
    steps first (first-use costs, compilation, autotuning), then a window of at least ``steps`` steps
    that goes on, where it came out under ``min_seconds``, until it has lasted that long or reaches
    ``most`` steps in all. Call :meth:`before` and :meth:`after` around every step; :meth:`after`
    returns the window once it is closed. :meth:`pause` leaves what happens until the next step (an
    epoch's evaluation) out of the window."""

    def __init__(self, warm: int, steps: int, most: int, device: torch.device, *, min_seconds: float = MIN_WINDOW_S,
                 clock: Callable[[], float] = time.perf_counter):
        if most < warm + 1:
            raise ValueError(f"a window needs room for at least one timed step after {warm} warm-up steps, not {most} steps")
        self.warm, self.most, self.device, self.min_seconds, self.clock = warm, most, device, min_seconds, clock
        self.target = max(1, min(steps, most - warm))
        self.done, self.start, self.banked, self.paused = 0, 0.0, 0.0, False

    def before(self) -> None:
        if self.done == self.warm or self.paused:
            sync(self.device)
            self.start, self.paused = self.clock(), False

    def pause(self) -> None:
        """Bank the window's time so far; it goes on at the next :meth:`before`."""
        if self.done > self.warm and not self.paused:
            sync(self.device)
            self.banked += self.clock() - self.start
            self.paused = True

    def after(self) -> Window | None:
        self.done += 1
        timed = self.done - self.warm
        if timed < self.target:
            return None
        sync(self.device)
        seconds = self.banked + self.clock() - self.start
        if seconds >= self.min_seconds or self.done >= self.most:
            return Window(timed, seconds)
        needed = math.ceil(timed * EXTEND * self.min_seconds / seconds) if seconds > 0 else self.most
        self.target = min(self.most - self.warm, max(timed + 1, needed))
        return None


class WindowClosed(Exception):
    """Raised from inside a training when its timed window is closed: the rest is not trained."""

    def __init__(self, window: Window):
        super().__init__(f"{window.steps} steps in {window.seconds:.3f} s")
        self.window = window


class TimedTrainee:
    """The loop's trainee, its steps timed by a :class:`StepWindow` (everything else is the trainee's own)."""

    def __init__(self, trainee, timer: StepWindow):
        self._trainee, self._timer = trainee, timer

    def __getattr__(self, name: str):
        return getattr(self._trainee, name)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self._timer.before()
        self._trainee.step(x, y)
        if (window := self._timer.after()) is not None:
            raise WindowClosed(window)

    def end_epoch(self, data, seen: int) -> list[list[float]]:
        self._timer.pause()  # the evaluation is not a training step
        return self._trainee.end_epoch(data, seen)


def engine_window(arch: str, width: int, batch_size: int, optimizer: str, pack: int, steps: int, device: torch.device, *,
                  warm: int, most: int, precision: str = "float32", compile: bool | str = False,
                  pool: tuple[torch.Tensor, torch.Tensor] | None = None, memory_format: str = "contiguous",
                  min_seconds: float = MIN_WINDOW_S, clock: Callable[[], float] = time.perf_counter) -> Window:
    """A timed window of the engine's own training loop (``train_run``'s trainee for one run, ``train_packed``'s
    for more) on random data: one training of ``most`` steps, its steps timed by a :class:`StepWindow`
    and stopped when the window closes. Where ``pool`` holds fewer than ``most`` batches (one each
    kept for validation and test), its epochs go over the pool again and again, and each epoch's
    evaluation is left out of the window."""
    from initmem.engine.compute import check_compile
    from initmem.engine.loop import train_loop
    from initmem.engine.packed import Pack, check_packable
    from initmem.engine.settings import TrainSettings
    from initmem.engine.train import SingleRun

    check_compile(compile)
    per_epoch = most if pool is None else max(1, min(most, len(pool[0]) // batch_size - 2))
    data = engine_data(per_epoch * batch_size, batch_size, device, pool)
    epochs = math.ceil(most / per_epoch)
    runs = [{"run_id": f"m{i}", "spec": {**engine_spec(arch, width, batch_size, optimizer, seed=i), "epochs": epochs}}
            for i in range(pack)]
    check_packable(runs)
    specs = [r["spec"] for r in runs]
    timer = StepWindow(warm, steps, most, device, min_seconds=min_seconds, clock=clock)

    def make(gens: list[torch.Generator]) -> TimedTrainee:
        if pack == 1:
            return TimedTrainee(SingleRun(specs[0], gens[0], device, precision, compile, data.classes, memory_format), timer)
        return TimedTrainee(Pack(specs, gens, device, precision, compile, None, data.classes, memory_format), timer)
    try:
        train_loop(runs, data, make, settings=TrainSettings(precision=precision, compile=compile, memory_format=memory_format),
                   engine="loop" if pack == 1 else "vmap", device=device, name="timed", checkpoint=None, log=None)
    except WindowClosed as closed:
        return closed.window
    raise RuntimeError(f"the training ended after {timer.done} steps without closing its timed window")


def peer_window(width: int, batch_size: int, optimizer: str, device: torch.device, steps: int, *, warm: int, most: int,
                min_seconds: float = MIN_WINDOW_S, clock: Callable[[], float] = time.perf_counter) -> Window:
    """A timed window (:class:`StepWindow`) of the plain-PyTorch ResNet-9's training steps."""
    torch.manual_seed(0)
    model = PeerResNet9(width).to(device).train()
    opt = peer_optimizer(optimizer, model.parameters(), device)
    x, y = random_data(batch_size * most, device)
    order = torch.randperm(len(x), device=device)
    timer = StepWindow(warm, steps, most, device, min_seconds=min_seconds, clock=clock)
    for i in range(most):
        timer.before()
        idx = order[i * batch_size:(i + 1) * batch_size]
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (window := timer.after()) is not None:
            return window
    raise RuntimeError(f"{most} steps without closing the timed window")


def engine_images_per_second(arch: str, width: int, batch_size: int, optimizer: str, pack: int, steps: int,
                             device: torch.device, *, warm: int = 2, prime: bool = False, **kwargs) -> tuple[float, float]:
    """(training images/s of the job, wall seconds spent measuring): ``steps`` steps' time as the
    difference of a ``warm + steps`` and a ``warm``-step training of the same shape. The long one
    runs first, so first-use costs (cuDNN plans, allocations) land on it and the rate can only come
    out low; ``prime`` runs one more short training before both (compilation, autotuning)."""
    total = engine_train_seconds(arch, width, batch_size, optimizer, pack, warm, device, **kwargs) if prime else 0.0
    long = engine_train_seconds(arch, width, batch_size, optimizer, pack, warm + steps, device, **kwargs)
    short = engine_train_seconds(arch, width, batch_size, optimizer, pack, warm, device, **kwargs)
    return pack * batch_size * steps / max(long - short, 1e-9), total + short + long
