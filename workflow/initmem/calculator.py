"""The clock calculator: a recipe's exact clocks placed among the paper's measured points
(``python -m initmem clocks``) and ``results/tables/clocks.csv``. The sums are :mod:`initmem.clocks`'s,
the ones the trainer records.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from typing import Any

from initmem.clocks import CLOCK_KEYS, paper_constant_lr_clocks, run_clocks
from initmem.spec import OPTIMIZERS, SCHEDULES

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


def recipe(**overrides: Any) -> dict[str, Any]:
    """A clock recipe: the paper's defaults (cosine, alpha 0.01, n_train 40000, no L2) with ``overrides``."""
    return {"optimizer": "sgd", "lr": 1e-3, "batch_size": 128, "epochs": 300, "l2": 0.0, **RECIPE_DEFAULTS, **overrides}


def paper_points() -> list[dict[str, Any]]:
    """The paper's measured points with their clock under the schedule their runs used (``exact``)
    and under the paper's constant-lr arithmetic (``constant_lr``), sorted by clock and value."""
    rows = [{"clock": clock, "spec": recipe(**overrides), "spread_pp": spread, "paper_value": quoted, "where": where,
             "exact": exact, "constant_lr": paper_constant_lr_clocks(recipe(**overrides))[clock]}
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
    const = paper_constant_lr_clocks(spec)
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

