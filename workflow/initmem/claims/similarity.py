"""Similarity numbers: the dimensionless numbers that decide whether a small design measures the
paper's quantity, each beside the paper's value.

Pure functions, torch-free: :func:`design_numbers` reads a resolved run spec and the training set's
size (what ``design`` knows before anything trains); :func:`fit_of_selected` reads a tier's runs
table (one row per run with ``tau_best`` and ``tau_interp``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping

# Keras BatchNormalization's momentum: moving = 0.99 moving + 0.01 batch.
BN_MOMENTUM = 0.99
# The start's weight in the moving statistics that counts as forgotten (0.99^458 = 0.01).
BN_FORGOTTEN = 0.01
# The paper's values: an epoch is 313-2,500 steps (config/paper.yaml's 40,000
# training images at b = 128 ... 16; b = 256 gives 157), 750,000 steps in all for the longest runs,
# T_SGD ~1.8e-2 at the end of SGD training, test accuracy 58-85 %.
PAPER = {"steps_per_epoch": (313, 2500), "total_steps": 750_000, "T_sgd_end": 1.8e-2, "test_acc": (0.58, 0.85)}


def bn_settling_steps(momentum: float = BN_MOMENTUM, forgotten: float = BN_FORGOTTEN) -> float:
    """Steps after which the moving statistics' start weighs ``forgotten``: ln(forgotten) / ln(momentum)."""
    if not 0 < momentum < 1 or not 0 < forgotten < 1:
        raise ValueError(f"momentum {momentum} and forgotten {forgotten} must both lie strictly between 0 and 1")
    return math.log(forgotten) / math.log(momentum)


def design_numbers(spec: Mapping, n_train: int) -> dict[str, float]:
    """The numbers a config fixes before training: steps per epoch, BatchNorm's settling steps, their
    ratio (below 1: the first epochs are read with stale statistics) and the total steps."""
    if n_train <= 0:
        raise ValueError(f"n_train = {n_train} must be positive")
    steps = math.ceil(n_train / int(spec["batch_size"]))
    settle = bn_settling_steps() if spec.get("norm", "batchnorm") == "batchnorm" else 0.0
    return {"steps_per_epoch": steps, "bn_settling_steps": settle,
            "epochs_to_settle": settle / steps, "total_steps": steps * int(spec["epochs"])}


def fit_of_selected(runs: Iterable[Mapping]) -> float | None:
    """Share of runs whose selected predictor fits: tau_interp <= tau_best (a run that never reached
    the interpolation threshold does not fit); None for no runs."""
    rows = list(runs)
    if not rows:
        return None
    fitted = [r for r in rows if _number(r.get("tau_interp")) is not None and _number(r.get("tau_best")) is not None
              and _number(r["tau_interp"]) <= _number(r["tau_best"])]
    return len(fitted) / len(rows)


def _number(value: object) -> float | None:
    """A table cell as a number; None for an empty or NaN cell (a run that never interpolated)."""
    if value is None or value == "":
        return None
    x = float(value)
    return None if math.isnan(x) else x


CONFIG_COLUMNS = ("study", "optimizer", "lr", "batch_size", "sigma_w")


def tier_numbers(runs: Iterable[Mapping]) -> list[dict]:
    """Per configuration (:data:`CONFIG_COLUMNS`) of a tier's runs table: its design numbers
    (:func:`design_numbers`), the fit of its selected predictors (:func:`fit_of_selected`), the
    median test accuracy at tau_best and the share of selected predictors above chance level
    (validation accuracy at tau_best above 0.15)."""
    groups: dict[tuple, list[Mapping]] = {}
    for r in runs:
        groups.setdefault(tuple(str(r[c]) for c in CONFIG_COLUMNS), []).append(r)
    out = []
    for config, rows in groups.items():
        first = rows[0]
        design = design_numbers({"batch_size": int(first["batch_size"]), "epochs": int(first["epochs"]),
                                 "norm": first.get("norm", "batchnorm")}, int(first["n_train"]))
        tests = [x for r in rows if (x := _number(r.get("test_acc_best"))) is not None]
        vals = [x for r in rows if (x := _number(r.get("val_acc_best"))) is not None]
        out.append({**dict(zip(CONFIG_COLUMNS, config, strict=True)), "runs": len(rows), **design,
                    "fit_of_selected": fit_of_selected(rows),
                    "test_acc_median": statistics.median(tests) if tests else None,
                    "above_chance": sum(v > 0.15 for v in vals) / len(vals) if vals else None})
    return out


def markdown(numbers: list[dict]) -> str:
    """:func:`tier_numbers` as a markdown table, with the paper's values in its header."""
    lo, hi = PAPER["steps_per_epoch"]
    head = ("| study | optimizer | lr | b | sigma_w | runs | steps/epoch (paper "
            f"{lo}-{hi}) | epochs for BN to settle (paper {bn_settling_steps() / hi:.1f}-{bn_settling_steps() / lo:.1f}) | total steps (paper {PAPER['total_steps']:,}) "
            "| selected fit (tau_interp <= tau_best) | median test acc at tau_best (paper "
            f"{PAPER['test_acc'][0]:.2f}-{PAPER['test_acc'][1]:.2f}) | val acc at tau_best > 0.15 |")
    lines = [head, "|" + "---|" * 12]

    def cell(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)
    for r in numbers:
        lines.append(f"| {r['study']} | {r['optimizer']} | {r['lr']} | {r['batch_size']} | {r['sigma_w']} | {r['runs']} "
                     f"| {r['steps_per_epoch']} | {r['epochs_to_settle']:.1f} | {r['total_steps']:,} "
                     f"| {cell(r['fit_of_selected'], '.2f')} | {cell(r['test_acc_median'], '.3f')} | {cell(r['above_chance'], '.2f')} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m initmem.claims.similarity evidence/<tier>/tables/runs.csv
    import csv
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: .venv/bin/python -m initmem.claims.similarity RUNS_CSV")
    with open(sys.argv[1], newline="") as fh:
        print(markdown(tier_numbers(csv.DictReader(fh))))
