"""Similarity numbers: the dimensionless numbers that decide whether a small design measures the
paper's quantity, each beside the paper's value.

Pure functions, torch-free: :func:`design_numbers` reads a resolved run spec and the training set's
size (what ``design`` knows before anything trains); :func:`fit_of_selected` reads a tier's runs
table (one row per run with ``tau_best`` and ``tau_interp``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from initmem.paper import INTERP_TRAIN_ACC

# Keras BatchNormalization's momentum: moving = 0.99 moving + 0.01 batch.
BN_MOMENTUM = 0.99
# The start's weight in the moving statistics that counts as forgotten (0.99^458 = 0.01).
BN_FORGOTTEN = 0.01
# The paper's values: an epoch is 157-2,500 steps (config/paper.yaml's 40,000 training images at
# b = 256 ... 16), 750,000 steps in all for the longest runs, T_SGD ~1.8e-2 at the end of SGD training,
# test accuracy 58-85 %. Its selected predictors come at least one epoch into training (tau_best >= 1).
PAPER = {"steps_per_epoch": (157, 2500), "total_steps": 750_000, "T_sgd_end": 1.8e-2, "test_acc": (0.58, 0.85)}


# A selected predictor at or below this validation accuracy is a chance-level network (10 classes: 0.10 + 5 pp).
CHANCE_ACC = 0.15


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


class SelectedCounts(NamedTuple):
    """What a configuration's selected predictors (the networks at tau_best) are, counted over its runs:
    ``runs``, ``fit`` (reached 99.5% train accuracy at some epoch), ``best`` (the selected predictor
    fits), per sigma_w (sigma_w, runs, best), ``settled`` (read with settled BatchNorm statistics) and,
    of the ``accuracy_known`` runs with a validation accuracy at tau_best, ``above_chance``."""

    runs: int
    fit: int
    best: int
    by_sigma: tuple[tuple[float, int, int], ...] = ()
    settled: int | None = None
    above_chance: int = 0
    accuracy_known: int = 0


def _column(runs: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column of a runs table (NaN where absent or empty)."""
    return pd.to_numeric(runs[name], errors="coerce") if name in runs else pd.Series(np.nan, index=runs.index)


def selected_fits(runs: pd.DataFrame) -> pd.Series:
    """Per run: its selected predictor fits the labels. Where the run recorded the network's own eval-mode
    training accuracy (``train_acc_eval_best``, ``train_eval: true``) that accuracy reaches 99.5%;
    otherwise Keras' running training accuracy reached 99.5% at or before tau_best (tau_interp <= tau_best)."""
    own = _column(runs, "train_acc_eval_best")
    interp, best = _column(runs, "tau_interp"), _column(runs, "tau_best")
    by_running = interp.notna() & best.notna() & (best >= interp)
    return own.ge(INTERP_TRAIN_ACC / 100).where(own.notna(), by_running).astype(bool)


def settled_statistics(runs: pd.DataFrame) -> pd.Series | None:
    """Per run: its selected predictor was evaluated with settled BatchNorm statistics: no BatchNorm,
    ``bn_eval: precise``, or tau_best x steps per epoch >= :func:`bn_settling_steps`. None where the
    table lacks what this needs (n_train, batch_size, tau_best)."""
    if not {"n_train", "batch_size", "tau_best"} <= set(runs.columns):
        return None
    steps = np.ceil(_column(runs, "n_train") / _column(runs, "batch_size"))
    late = (_column(runs, "tau_best") * steps >= bn_settling_steps()).fillna(False)
    norm = runs["norm"] if "norm" in runs else pd.Series("batchnorm", index=runs.index)
    precise = runs["bn_eval"].eq("precise") if "bn_eval" in runs else pd.Series(False, index=runs.index)
    return (norm.ne("batchnorm") | precise | late).astype(bool)


def selected_counts(runs: pd.DataFrame) -> SelectedCounts:
    """:class:`SelectedCounts` of one configuration's rows of a runs table."""
    fit = _column(runs, "tau_interp").notna()
    best = selected_fits(runs)
    sigma = _column(runs, "sigma_w")
    by_sigma = tuple((float(sw), int((sigma == sw).sum()), int(best[sigma == sw].sum())) for sw in sorted(sigma.dropna().unique()))
    settled = settled_statistics(runs)
    val = _column(runs, "val_acc_best")
    return SelectedCounts(len(runs), int(fit.sum()), int(best.sum()), by_sigma, None if settled is None else int(settled.sum()),
                          int((val > CHANCE_ACC).sum()), int(val.notna().sum()))


CONFIG_COLUMNS = ("study", "optimizer", "lr", "batch_size", "l2", "sigma_w")
CLOCK_NAMES = {"T_sgd": "T_SGD", "T_adapt": "T_adapt"}


def sentence_clock(optimizer: str) -> str:
    """The clock the paper's sentences about ``optimizer`` read: T_adapt for an adaptive one (its file says
    ``CLOCK = "T_adapt"``), T_sgd for the others."""
    from initmem.spec import ADAPTIVE

    return "T_adapt" if optimizer in ADAPTIVE else "T_sgd"


def fit_of_selected(runs: pd.DataFrame) -> float | None:
    """Share of runs whose selected predictor fits (:func:`selected_fits`); None for no runs."""
    return float(selected_fits(runs).mean()) if len(runs) else None


def clocks_at_selected(rows: pd.DataFrame, clock: str) -> np.ndarray:
    """Each run's ``clock`` at its selected checkpoint (tau_best epochs of ceil(n_train / b) steps), summed
    exactly from its spec as the trainer sums it (:func:`initmem.engine.clocks.schedule_clocks`: the
    number its history holds at that epoch); empty where the rows lack what this needs."""
    from initmem.engine.clocks import schedule_clocks
    from initmem.spec import resolve_weight_decay

    need = {"optimizer", "lr", "schedule", "alpha", "epochs", "batch_size", "l2", "n_train", "tau_best"}
    if not need <= set(rows.columns):
        return np.array([])
    values = []
    for r in rows.dropna(subset=["tau_best"]).to_dict("records"):
        steps = math.ceil(int(r["n_train"]) / int(r["batch_size"]))
        wd = resolve_weight_decay(r["optimizer"], None if pd.isna(r.get("weight_decay")) else float(r["weight_decay"]))
        values.append(schedule_clocks(r, int(r["epochs"]) * steps, int(r["tau_best"]) * steps, wd)[clock])
    return np.asarray(values, float)


def selected_test(runs: pd.DataFrame) -> str:
    """The column that holds the selected predictor's test accuracy for these runs: ``test_acc_final`` (its weights at
    tau_best evaluated once on the config's ``final_test`` images) where every run has it, else ``test_acc_best`` (the
    epoch's evaluation on ``n_test`` images). The same quantity; the final one with less test-sampling noise."""
    has_final = "test_acc_final" in runs and len(runs) and runs["test_acc_final"].notna().all()
    return "test_acc_final" if has_final else "test_acc_best"


def tier_numbers(runs: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (:data:`CONFIG_COLUMNS`) of a tier's runs table: its design numbers
    (:func:`design_numbers`), the clock its sentences read (T_SGD, or T_adapt for an adaptive optimizer)
    at the selected checkpoint (the mean of :func:`clocks_at_selected`) and at the end of training, whether its
    selected predictors were evaluated with precise BatchNorm statistics, the share of selected predictors that fit (:func:`selected_fits`), that were
    read with settled statistics (:func:`settled_statistics`) and that are above chance (validation
    accuracy at tau_best above :data:`CHANCE_ACC`), and the median test accuracy at tau_best (the one the claims read:
    :func:`selected_test`)."""
    from initmem.engine.clocks import run_clocks

    columns = [c for c in CONFIG_COLUMNS if c in runs]
    out = []
    for config, rows in runs.groupby(columns, dropna=False, sort=True):
        first = rows.iloc[0]
        spec = {k: first[k] for k in ("optimizer", "lr", "schedule", "alpha", "epochs", "batch_size", "l2", "n_train") if k in first}
        spec["weight_decay"] = None if pd.isna(first.get("weight_decay")) else float(first["weight_decay"])
        design = design_numbers({"batch_size": int(first["batch_size"]), "epochs": int(first["epochs"]),
                                 "norm": first.get("norm", "batchnorm")}, int(first["n_train"]))
        clock = sentence_clock(first["optimizer"])
        settled = settled_statistics(rows)
        val, test = _column(rows, "val_acc_best"), _column(rows, selected_test(rows))
        out.append({**dict(zip(columns, config, strict=True)), "runs": len(rows), **design, "clock": clock,
                    "clock_best": float(np.mean(best)) if len(best := clocks_at_selected(rows, clock)) else math.nan,
                    "clock_end": run_clocks(spec)[clock] if {"schedule", "alpha"} <= set(spec) else math.nan,
                    "precise": bool(rows["bn_eval"].eq("precise").all()) if "bn_eval" in rows else False,
                    "fit_of_selected": fit_of_selected(rows),
                    "settled": float(settled.mean()) if settled is not None else math.nan,
                    "above_chance": float((val > CHANCE_ACC).sum() / val.notna().sum()) if val.notna().any() else math.nan,
                    "test_acc_median": float(test.median()) if test.notna().any() else math.nan})
    return pd.DataFrame(out)


def markdown(numbers: pd.DataFrame) -> str:
    """:func:`tier_numbers` as a Markdown table, each number beside the paper's value in its header."""
    from initmem.paper import ADAM_T_ADAPT_RANGE

    lo, hi = PAPER["steps_per_epoch"]
    head = ("| study | optimizer | lr | b | L2 | sigma_w | runs | steps/epoch (paper "
            f"{lo:,}-{hi:,}) | epochs for BN to settle (paper {bn_settling_steps() / hi:.1f}-{bn_settling_steps() / lo:.1f}) "
            f"| total steps (paper up to {PAPER['total_steps']:,}) | clock at tau_best, mean (paper: at least one epoch's) "
            f"| clock at the end (paper: T_SGD ~{PAPER['T_sgd_end']:.2g}, "
            f"T_adapt {ADAM_T_ADAPT_RANGE[0]:g}-{ADAM_T_ADAPT_RANGE[1]:g}) | selected fit (paper: all) | selected after BN settled "
            f"(paper: all; precise statistics: settled by construction) | val acc at tau_best > {CHANCE_ACC:g} (paper: all) | median test acc at tau_best (paper "
            f"{PAPER['test_acc'][0]:.2f}-{PAPER['test_acc'][1]:.2f}) |")
    lines = [head, "|" + "---|" * 16]

    def cell(x: object, fmt: str) -> str:
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)
    for r in numbers.to_dict("records"):
        clock = CLOCK_NAMES[r["clock"]]
        lines.append(f"| {r['study']} | {r['optimizer']} | {r['lr']:g} | {r['batch_size']} | {r.get('l2', 0):g} | {r['sigma_w']:g} "
                     f"| {r['runs']} | {r['steps_per_epoch']} | {r['epochs_to_settle']:.1f} | {r['total_steps']:,} "
                     f"| {clock} {cell(r['clock_best'], '.3g')} | {clock} {cell(r['clock_end'], '.3g')} | {cell(r['fit_of_selected'], '.2f')} "
                     f"| {'precise' if r['precise'] else cell(r['settled'], '.2f')} "
                     f"| {cell(r['above_chance'], '.2f')} | {cell(r['test_acc_median'], '.3f')} |")
    return "\n".join(lines) + "\n"


SECTION = ("## Similarity to the paper's design\n\nThe dimensionless numbers that decide whether these runs measure the paper's "
           "quantity, per configuration, beside the paper's values (`initmem.claims.similarity`); a claim whose configurations "
           "break one its sentence depends on reads `outside the paper's regime` and names it (`initmem.claims.catalogue`). "
           "Selected fit: the selected predictor's own eval-mode training accuracy reaches 99.5% where it was recorded "
           "(`train_eval: true`), otherwise Keras' running training accuracy reached 99.5% by tau_best.\n\n")


def design_markdown(configs: list[tuple[str, Mapping]]) -> str:
    """Before anything trains: per configuration (its label and resolved spec with ``n_train``), the
    numbers a config fixes beside the paper's, and what they mean for the claims (:func:`design_numbers`)."""
    from initmem.engine.clocks import run_clocks

    lo, hi = PAPER["steps_per_epoch"]
    lines = ["## Similarity to the paper's design, per configuration (before training)", "",
             f"BatchNorm's moving statistics (momentum {BN_MOMENTUM}) forget their start after {bn_settling_steps():.0f} steps; the "
             f"paper's epochs are {lo:,}-{hi:,} steps, so its statistics settle within {bn_settling_steps() / hi:.1f}-"
             f"{bn_settling_steps() / lo:.1f} epochs. Where an epoch here is "
             "shorter and evaluation reads the moving statistics (`bn_eval: moving`, Keras' default), a run whose least "
             "validation loss falls in the first epochs selects a stale-statistics network, and the claims read such "
             "configurations `outside the paper's regime` (`bn_eval: precise` evaluates with statistics recomputed on the "
             "training set: docs/configuration.md).", "",
             f"| configuration | steps/epoch (paper {lo:,}-{hi:,}) | epochs for BN to settle | BN evaluation | total steps (paper up to "
             f"{PAPER['total_steps']:,}) | clock at the end | stale epochs |", "|---|---|---|---|---|---|---|"]
    for label, spec in configs:
        d = design_numbers(spec, int(spec["n_train"]))
        clock = sentence_clock(spec["optimizer"])
        end = run_clocks(spec)[clock]
        mode = spec.get("bn_eval", "moving") if spec.get("norm", "batchnorm") == "batchnorm" else "no BatchNorm"
        stale = (f"the first {math.ceil(d['epochs_to_settle'])}" if mode == "moving" and d["epochs_to_settle"] > 1 else "none")
        lines.append(f"| {label} | {d['steps_per_epoch']:,} | {d['epochs_to_settle']:.1f} | {mode} | {d['total_steps']:,} "
                     f"| {CLOCK_NAMES[clock]} {end:.3g} | {stale} |")
    return "\n".join(lines) + "\n"


def section(runs: pd.DataFrame) -> str:
    """:data:`SECTION`, what these records allow re-reading, and the table of a tier's runs (claims.md, a tier's README)."""
    own = _column(runs, "train_acc_eval_best").notna().any()
    moving = not (runs["bn_eval"].eq("precise").all() if "bn_eval" in runs else False)
    notes = []
    if not own:
        notes.append("these runs recorded no eval-mode training accuracy (`train_eval`), so their selected fit reads Keras' "
                     "running training accuracy")
    if moving and runs.get("norm", pd.Series("batchnorm", index=runs.index)).eq("batchnorm").any():
        notes.append("they were evaluated with BatchNorm's moving statistics: a row outside the regime by BatchNorm statistics "
                     "cannot be re-read from these records; retraining with `bn_eval: precise` would train the same weights and "
                     "evaluate them with settled statistics (`benchmarks/bn_statistics.md`)")
    said = ("Of these records: " + "; ".join(notes) + ".\n\n") if notes else ""
    return SECTION + said + markdown(tier_numbers(runs))


if __name__ == "__main__":  # python -m initmem.claims.similarity evidence/<tier>/tables/runs.csv
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: PYTHONPATH=workflow .venv/bin/python -m initmem.claims.similarity RUNS_CSV")
    print(markdown(tier_numbers(pd.read_csv(sys.argv[1]))), end="")
