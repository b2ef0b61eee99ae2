"""Forgetting clocks: the one implementation of the learning-rate schedule and of the clock sums.

    T_sgd   = sum_k eta_k^2 / b   (minibatch leakage clock of the conserved imbalance)
    T_l2    = sum_k eta_k * l2    (explicit Keras L2: contracts the imbalance as exp(-4 T_l2))
    T_wd    = sum_k eta_k * wd    (decoupled/coupled decay: contracts it as exp(-2 T_wd))
    T_adapt = sum_k eta_k         (adaptive optimizers move it at first order in eta)

Every clock is one of two moments of the rates, S1 = sum eta_k and S2 = sum eta_k^2
(:func:`clocks_from_moments`). Under the trainer's schedules the moments after any number of steps
have closed forms (:func:`schedule_moments`), so a recipe of 10^8 steps costs the same as one of 10.
The trainer records :func:`schedule_clocks` at every epoch's end; the analysis, the claims, clocks.csv
and the calculator (:mod:`initmem.theory.calculator`) call the same functions, so they agree with every run's
record to float rounding. The paper's own arithmetic (constant lr, K = E n_train / b, Sec. 4.2) is the
separately named :func:`paper_constant_lr_clocks`. Torch-free: cheap to import.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from initmem.spec import SCHEDULES, resolve_weight_decay

CLOCK_KEYS = ("T_sgd", "T_l2", "T_wd", "T_adapt")


def learning_rate(k: int, lr0: float, total_steps: int, schedule: str, alpha: float) -> float:
    """eta_k for 0-based step k: Keras CosineDecay(lr0, K, alpha), or constant."""
    if schedule == "constant":
        return lr0
    if schedule != "cosine":
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {list(SCHEDULES)}")
    frac = min(k, total_steps) / total_steps
    return lr0 * (alpha + (1 - alpha) * 0.5 * (1 + math.cos(math.pi * frac)))


def lr_schedule(spec: dict, total_steps: int) -> Callable[[int], float]:
    """eta_k of a run spec's schedule (lr, schedule, alpha) over ``total_steps`` steps."""
    lr0, kind, alpha = float(spec["lr"]), spec["schedule"], float(spec["alpha"])
    return lambda k: learning_rate(k, lr0, total_steps, kind, alpha)


def _cos_sum(m: int, theta: float) -> float:
    """sum_{k=0}^{m-1} cos(k theta), in closed form (the Lagrange identity); theta in (0, 2 pi)."""
    if m <= 0:
        return 0.0
    return math.sin(m * theta / 2) * math.cos((m - 1) * theta / 2) / math.sin(theta / 2)


def schedule_moments(lr0: float, schedule: str, alpha: float, total_steps: int, steps_done: int) -> tuple[float, float]:
    """(S1, S2) = (sum eta_k, sum eta_k^2) over the first ``steps_done`` steps of a ``total_steps`` schedule.

    Cosine: eta_k = lr0 (a + c cos(pi k / K)) with a = (1 + alpha) / 2, c = (1 - alpha) / 2, so
    S1 = lr0 (a m + c C1(m)) and S2 = lr0^2 (a^2 m + 2 a c C1(m) + c^2 C2(m)), C1 and C2 the sums of
    cos and cos^2 over the first m steps. O(1) in time and memory for any K.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {list(SCHEDULES)}")
    if not 0 <= steps_done <= total_steps or total_steps < 1:
        raise ValueError(f"steps_done = {steps_done} must lie in [0, total_steps = {total_steps}], total_steps >= 1")
    m = int(steps_done)
    if schedule == "constant":
        return lr0 * m, lr0 * lr0 * m
    theta = math.pi / total_steps
    a, c = (1 + alpha) / 2, (1 - alpha) / 2
    c1 = _cos_sum(m, theta)
    # cos^2 x = (1 + cos 2x) / 2; at K = 1 the angle 2 theta = 2 pi has no closed form (every term is 1)
    c2 = m / 2 + (m / 2 if total_steps == 1 else _cos_sum(m, 2 * theta) / 2)
    return lr0 * (a * m + c * c1), lr0 * lr0 * (a * a * m + 2 * a * c * c1 + c * c * c2)


def clocks_from_moments(s1: float, s2: float, batch_size: float, l2: float, wd: float) -> dict[str, float]:
    """The four clocks from the rate moments S1 = sum eta, S2 = sum eta^2 (the definitions, in one place)."""
    return {"T_sgd": s2 / batch_size, "T_l2": s1 * l2, "T_wd": s1 * wd, "T_adapt": s1}


def schedule_clocks(spec: dict[str, Any], total_steps: int, steps_done: int, wd: float) -> dict[str, float]:
    """The clocks after ``steps_done`` of ``total_steps`` steps of a run spec (lr, schedule, alpha,
    batch_size, l2) with decay ``wd``: what the trainer records at each epoch's end."""
    s1, s2 = schedule_moments(float(spec["lr"]), spec["schedule"], float(spec["alpha"]), int(total_steps), int(steps_done))
    return clocks_from_moments(s1, s2, int(spec["batch_size"]), float(spec["l2"]), float(wd))


def run_clocks(spec: dict[str, Any]) -> dict[str, float | int]:
    """Final clocks of a run spec (lr, schedule, alpha, epochs, batch_size, l2, optimizer, weight_decay,
    n_train) with its step counts, K = E ceil(n_train / b) as in training (the last batch is kept).

    A null ``weight_decay`` is the optimizer's own (1e-4 for AdamW and Muon), as in training.
    """
    b, epochs, n = int(spec["batch_size"]), int(spec["epochs"]), int(spec["n_train"])
    steps = math.ceil(n / b)
    wd = resolve_weight_decay(spec["optimizer"], spec.get("weight_decay"))
    total = epochs * steps
    return {"steps_per_epoch": steps, "total_steps": total, "weight_decay": wd, **schedule_clocks(spec, total, total, wd)}


def paper_constant_lr_clocks(spec: dict[str, Any]) -> dict[str, float]:
    """The paper's arithmetic (Sec. 4.2: "Ignoring cosine decay and using K ~ E n_train/b"): every one
    of K = E n_train / b steps (not rounded up) at the peak rate. Not what a run records: compare it only
    with other constant-lr arithmetic."""
    k = int(spec["epochs"]) * int(spec["n_train"]) / int(spec["batch_size"])
    lr = float(spec["lr"])
    wd = resolve_weight_decay(spec["optimizer"], spec.get("weight_decay"))
    return {"K": k, **clocks_from_moments(k * lr, k * lr * lr, int(spec["batch_size"]), float(spec["l2"]), wd)}
