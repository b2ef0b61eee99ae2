"""Forgetting clocks: the per-step learning rate and the cumulative clocks the trainer records.

    T_sgd = sum_k eta_k^2 / b     (minibatch leakage clock of the conserved imbalance)
    T_l2  = sum_k eta_k * l2      (explicit Keras L2: contracts the imbalance as exp(-4 T_l2))
    T_wd  = sum_k eta_k * wd      (decoupled/coupled decay: contracts it as exp(-2 T_wd))
    T_adapt = sum_k eta_k         (adaptive optimizers move it at first order in eta)

The trainer (:mod:`initmem.train`, :mod:`initmem.packed`) calls :func:`lr_schedule` and
:func:`advance_clocks` from here, so the calculator (``python -m initmem clocks``) and
``results/tables/clocks.csv`` sum exactly what a run records. Torch-free: cheap to import.
"""

from __future__ import annotations

import argparse
import csv
import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from initmem.spec import OPTIMIZERS, SCHEDULES, resolve_weight_decay

CLOCK_KEYS = ("T_sgd", "T_l2", "T_wd", "T_adapt")

# The paper's measured points: (clock, recipe, spread in pp of test accuracy over sigma_w, the clock
# value the paper quotes or None, where, the clock under the schedule the runs used). The paper's
# quoted clocks ignore the cosine decay (constant-lr arithmetic, K ~ E n_train / b). The last column is
# run_clocks() of the recipe (cosine, alpha 0.01, 300 epochs, n_train 40000 unless it says otherwise)
# to 4 digits, stored because summing the ~4 million steps takes seconds; tests/test_clocks.py recomputes it.
PAPER_POINTS = (
    ("T_sgd", dict(lr=1e-3, batch_size=256), "25.7", None, "Sec. 3.2", 6.946e-05),
    ("T_sgd", dict(lr=1e-3, batch_size=128), "26.5", 7.3e-4, "Sec. 3.1, 4.2", 2.770e-4),
    ("T_sgd", dict(lr=1e-3, batch_size=128, epochs=5000, schedule="constant"), "~26", 1.2e-2, "Sec. 4.2", 1.223e-2),
    ("T_sgd", dict(lr=1e-3, batch_size=16), "22.8", None, "Sec. 3.1", 1.770e-2),
    ("T_sgd", dict(lr=1e-2, batch_size=128), "23.8", None, "Sec. 3.2", 2.770e-2),
    ("T_sgd", dict(lr=1e-2, batch_size=16), "9.7", 4.7, "Sec. 3.2, 4.2", 1.770),
    ("T_sgd", dict(lr=1e-1, batch_size=128), "8.1", None, "Sec. 3.2", 2.770),
    ("T_sgd", dict(lr=1e-1, batch_size=16), "4.5", None, "Sec. 3.2", 177.0),
    ("T_l2", dict(lr=1e-2, batch_size=128, l2=1e-3), "17.4", 0.94, "Sec. 4.2", 0.4742),
    ("T_l2", dict(lr=1e-2, batch_size=128, l2=5e-3), "< 1", 4.7, "Sec. 4.2", 2.371),
    ("T_l2", dict(lr=1e-2, batch_size=128, l2=1e-2), "0.3", None, "Sec. 3.2", 4.742),
    ("T_l2", dict(lr=1e-2, batch_size=16, l2=1e-2), "0.3", None, "Sec. 3.2", 37.88),
    ("T_adapt", dict(optimizer="adam", batch_size=256), "5.3", None, "Sec. 3.2", 23.79),
    ("T_adapt", dict(optimizer="adam", batch_size=128), "4.3", None, "Sec. 3.1", 47.42),
    ("T_adapt", dict(optimizer="adam", batch_size=16), "1.6", None, "Sec. 3.1", 378.8),
)
RECIPE_DEFAULTS = dict(schedule="cosine", alpha=0.01, weight_decay=None, n_train=40000)


def learning_rate(k: int, lr0: float, total_steps: int, schedule: str, alpha: float) -> float:
    """eta_k for 0-based step k: Keras CosineDecay(lr0, K, alpha), or constant."""
    if schedule == "constant":
        return lr0
    if schedule != "cosine":
        raise ValueError(f"unknown schedule {schedule!r}; choose cosine or constant")
    frac = min(k, total_steps) / total_steps
    return lr0 * (alpha + (1 - alpha) * 0.5 * (1 + math.cos(math.pi * frac)))


def lr_schedule(spec: dict, total_steps: int) -> Callable[[int], float]:
    """eta_k of a run spec's schedule (lr, schedule, alpha) over ``total_steps`` steps."""
    lr0, kind, alpha = float(spec["lr"]), spec["schedule"], float(spec["alpha"])
    return lambda k: learning_rate(k, lr0, total_steps, kind, alpha)


def advance_clocks(clocks: dict, lr: float, batch_size: int, l2: float, wd: float) -> None:
    """Add one step with rate ``lr`` to T_sgd = sum eta^2/b, T_l2 = sum eta l2, T_wd = sum eta wd, T_adapt = sum eta."""
    clocks["T_sgd"] += lr * lr / batch_size
    clocks["T_l2"] += lr * l2
    clocks["T_wd"] += lr * wd
    clocks["T_adapt"] += lr


def check_recipe(spec: dict[str, Any]) -> None:
    """Raise ValueError naming the first bad value of a clock recipe."""
    if spec["optimizer"] not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {spec['optimizer']!r}; choose one of {list(OPTIMIZERS)}")
    if spec["schedule"] not in SCHEDULES:
        raise ValueError(f"unknown schedule {spec['schedule']!r}; choose one of {list(SCHEDULES)}")
    for key in ("lr", "batch_size", "epochs", "n_train"):
        value = spec[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
            raise ValueError(f"{key} = {value!r} must be a positive number")
    for key in ("batch_size", "epochs", "n_train"):
        if int(spec[key]) != spec[key]:
            raise ValueError(f"{key} = {spec[key]!r} must be an integer")
    for key in ("l2", "alpha", "weight_decay"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or not math.isfinite(value)):
            raise ValueError(f"{key} = {value!r} must be a number >= 0")


@functools.lru_cache(maxsize=256)
def _step_sums(lr0: float, schedule: str, alpha: float, total_steps: int, batch_size: int, l2: float, wd: float) -> tuple[float, ...]:
    rates = _rates(lr0, schedule, alpha, total_steps)
    # advance_clocks' four increments, summed in step order: add.accumulate adds sequentially (np.sum
    # would add pairwise), so every total is bit for bit what the trainer records (tests/test_clocks.py)
    terms = (rates * rates / batch_size, rates * l2, rates * wd, rates)
    return tuple(float(np.add.accumulate(t)[-1]) for t in terms)


@functools.lru_cache(maxsize=2)
def _rates(lr0: float, schedule: str, alpha: float, total_steps: int) -> np.ndarray:
    """eta_k for every step, from the trainer's own schedule function (about 1 s per million steps)."""
    lr_at = lr_schedule({"lr": lr0, "schedule": schedule, "alpha": alpha}, total_steps)
    return np.fromiter(map(lr_at, range(total_steps)), dtype=float, count=total_steps)


def run_clocks(spec: dict[str, Any]) -> dict[str, float | int]:
    """Final clocks of a run spec (lr, schedule, alpha, epochs, batch_size, l2, optimizer,
    weight_decay, n_train), summed step by step exactly as the trainer does; also the step counts.

    A null ``weight_decay`` is the optimizer's own (1e-4 for AdamW and Muon), as in training.
    """
    check_recipe(spec)
    b, epochs, n = int(spec["batch_size"]), int(spec["epochs"]), int(spec["n_train"])
    steps = math.ceil(n / b)
    wd = resolve_weight_decay(spec["optimizer"], spec.get("weight_decay"))
    sums = _step_sums(float(spec["lr"]), spec["schedule"], float(spec["alpha"]), epochs * steps, b, float(spec["l2"]), wd)
    return {"steps_per_epoch": steps, "total_steps": epochs * steps, "weight_decay": wd, **dict(zip(CLOCK_KEYS, sums, strict=True))}


def recipe(**overrides: Any) -> dict[str, Any]:
    """A clock recipe: the paper's defaults (cosine, alpha 0.01, n_train 40000, no L2) with ``overrides``."""
    return {"optimizer": "sgd", "lr": 1e-3, "batch_size": 128, "epochs": 300, "l2": 0.0, **RECIPE_DEFAULTS, **overrides}


def constant_lr_clocks(spec: dict[str, Any]) -> dict[str, float]:
    """The paper's arithmetic (Sec. 4.2): every one of the K = E ceil(n/b) steps at the peak rate."""
    k = int(spec["epochs"]) * math.ceil(int(spec["n_train"]) / int(spec["batch_size"]))
    lr, wd = float(spec["lr"]), resolve_weight_decay(spec["optimizer"], spec.get("weight_decay"))
    return {"T_sgd": k * lr * lr / int(spec["batch_size"]), "T_l2": k * lr * float(spec["l2"]), "T_wd": k * lr * wd, "T_adapt": k * lr}


def paper_points() -> list[dict[str, Any]]:
    """The paper's measured points with their clock under the schedule their runs used (``exact``)
    and under the paper's constant-lr arithmetic (``constant_lr``), sorted by clock and value."""
    rows = [{"clock": clock, "spec": recipe(**overrides), "spread_pp": spread, "paper_value": quoted, "where": where,
             "exact": exact, "constant_lr": constant_lr_clocks(recipe(**overrides))[clock]}
            for clock, overrides, spread, quoted, where, exact in PAPER_POINTS]
    return sorted(rows, key=lambda r: (r["clock"], r["exact"]))


def describe(spec: dict[str, Any]) -> str:
    """A recipe in a few words: optimizer, lr and schedule, b, epochs, L2 and decay where set."""
    text = f"{spec['optimizer']} lr {spec['lr']:g} {spec['schedule']}"
    text += f" (alpha {spec['alpha']:g})" if spec["schedule"] == "cosine" else ""
    text += f", b {spec['batch_size']}, {spec['epochs']} epochs"
    text += f", L2 {spec['l2']:g}" if spec.get("l2") else ""
    text += f", wd {spec['weight_decay']:g}" if spec.get("weight_decay") else ""
    return text


ADAPTIVE = ("adam", "adamw", "muon", "muon_full")
CLOCK_NAMES = {"T_sgd": "T_SGD", "T_l2": "T_L2", "T_wd": "T_wd", "T_adapt": "T_adapt"}


def report(spec: dict[str, Any]) -> str:
    """The calculator's printout: a recipe's exact clocks, the paper's constant-lr arithmetic, and the
    recipe placed among the paper's measured points for the clocks that govern its optimizer."""
    c = run_clocks(spec)
    const = constant_lr_clocks(spec)
    lines = [f"recipe: {describe({**spec, 'weight_decay': c['weight_decay']})}, n_train {spec['n_train']}",
             f"steps: {c['steps_per_epoch']} per epoch (ceil(n_train / b)), {c['total_steps']} in all",
             f"T_SGD   = sum eta_k^2 / b  = {c['T_sgd']:.6g}",
             f"T_L2    = sum eta_k * l2   = {c['T_l2']:.6g}",
             f"T_wd    = sum eta_k * wd   = {c['T_wd']:.6g}   (wd {c['weight_decay']:g})",
             f"T_adapt = sum eta_k        = {c['T_adapt']:.6g}"]
    if spec["schedule"] != "constant":
        lines.append("constant-lr arithmetic (how the paper quotes clocks): " +
                     ", ".join(f"{CLOCK_NAMES[k]} {const[k]:.4g}" for k in CLOCK_KEYS))
    clocks = ["T_adapt"] if spec["optimizer"] in ADAPTIVE else ["T_sgd"]
    if spec["l2"]:
        clocks.append("T_l2")
    lines.append("")
    lines.append("Against the paper's measured points (spread = max - min over sigma_w of test accuracy, pp; each point's")
    lines.append("clock recomputed for the schedule its runs used, the value the paper quotes in brackets):")
    points = paper_points()
    for clock in clocks:
        mine = c[clock]
        lines.append(f"  {CLOCK_NAMES[clock]}:")
        placed = False
        for p in (p for p in points if p["clock"] == clock):
            same = mine > 0 and abs(mine / p["exact"] - 1) < 1e-3  # the stored points have 4 digits
            if not placed and mine < p["exact"] and not same:
                lines.append(f"    {mine:>10.4g}  <- this recipe")
                placed = True
            quoted = f" [{p['paper_value']:g}]" if p["paper_value"] is not None else ""
            mark = "  <- this recipe (the same clock)" if same else ""
            lines.append(f"    {p['exact']:>10.4g}  spread {p['spread_pp']:>5} pp  {describe(p['spec'])}{quoted}  ({p['where']}){mark}")
            placed = placed or same
        if not placed:
            lines.append(f"    {mine:>10.4g}  <- this recipe")
    if spec["optimizer"] == "sgd_momentum":
        lines.append("  (the T_SGD points are vanilla SGD; momentum 0.9 takes ~10x larger effective steps, not in the clock)")
    if spec["optimizer"] in ADAPTIVE and spec["optimizer"] != "adam":
        lines.append("  (the T_adapt points are Adam; the paper's AdamW and Muon spreads at b 128 are 4.7 and 4.0 pp, Sec. 3.1)")
    return "\n".join(lines)


def governing_clock(spec: dict[str, Any]) -> str:
    """The clock the paper reads for a recipe: T_adapt for adaptive optimizers, else T_l2 with L2, else T_sgd."""
    if spec["optimizer"] in ADAPTIVE:
        return "T_adapt"
    return "T_l2" if spec.get("l2") else "T_sgd"


def nearest_point(clock: str, value: float) -> dict[str, Any] | None:
    """The paper's measured point on ``clock`` nearest to ``value`` (in log distance); None without points or at 0."""
    points = [p for p in paper_points() if p["clock"] == clock]
    if not points or value <= 0:
        return None
    return min(points, key=lambda p: abs(math.log(p["exact"] / value)))


def clocks_table(runs_by_study: dict[str, list]) -> list[dict[str, Any]]:
    """One row per configuration (a run spec without sigma_w and seed) of every study, with its final
    clocks and, for the clock that governs it, the paper's nearest measured point (clock and spread)."""
    rows = []
    for study, runs in runs_by_study.items():
        seen: dict[str, dict] = {}
        for r in runs:
            if r.config_id in seen:
                seen[r.config_id]["runs"] += 1
                continue
            s = r.spec
            keys = ("variant", "arch", "optimizer", "lr", "schedule", "alpha", "epochs", "batch_size", "l2", "n_train")
            row = {"study": study, "config_id": r.config_id, **{k: s.get(k) for k in keys}, "runs": 1, **run_clocks(s)}
            clock = governing_clock(s)
            near = nearest_point(clock, row[clock])
            row.update(governing_clock=clock, paper_nearest_clock=near["exact"] if near else None,
                       paper_nearest_spread_pp=near["spread_pp"] if near else None,
                       paper_nearest_recipe=f"{describe(near['spec'])} ({near['where']})" if near else None)
            seen[r.config_id] = row
        rows.extend(seen.values())
    return rows


def write_clocks_table(runs_by_study: dict[str, list], out: str) -> int:
    """Write :func:`clocks_table` as CSV atomically (results/tables/clocks.csv); returns the row count."""
    from initmem.io import atomic_path

    rows = clocks_table(runs_by_study)
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["study", "config_id", *CLOCK_KEYS])
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


class _Parser(argparse.ArgumentParser):
    """Errors as one line naming the bad value (exit status 2), not usage + message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


VALUE_OPTIONS = ("--optimizer", "--lr", "--batch-size", "--epochs", "--schedule", "--alpha", "--l2", "--weight-decay", "--n-train")


def main(argv: list[str]) -> int:
    """``python -m initmem clocks``: print a recipe's exact clocks and place it among the paper's points."""
    parser = _Parser(prog="initmem clocks", description="Exact forgetting clocks of a training recipe (the sums the trainer records), "
                     "placed against the paper's measured points.")
    parser.add_argument("--optimizer", default="sgd", help=f"one of {list(OPTIMIZERS)} (default sgd)")
    parser.add_argument("--lr", type=float, required=True, help="peak learning rate eta_0")
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--schedule", default="cosine", help="cosine (default) or constant")
    parser.add_argument("--alpha", type=float, default=0.01, help="cosine floor as a fraction of lr (default 0.01)")
    parser.add_argument("--l2", type=float, default=0.0, help="Keras kernel L2 coefficient (loss + l2 sum W^2)")
    parser.add_argument("--weight-decay", type=float, default=None, help="decoupled decay (default: the optimizer's own)")
    parser.add_argument("--n-train", type=int, default=40000, help="training images (default 40000)")
    # "--lr -1e-2" would read as an option to argparse: glue values to their option so the check below names them
    glued, i = [], 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv):
            glued.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            glued.append(argv[i])
            i += 1
    args = parser.parse_args(glued)
    spec = {"optimizer": args.optimizer, "lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs,
            "schedule": args.schedule, "alpha": args.alpha, "l2": args.l2, "weight_decay": args.weight_decay, "n_train": args.n_train}
    try:
        check_recipe(spec)
    except ValueError as exc:
        parser.error(str(exc))
    print(report(spec))
    return 0

