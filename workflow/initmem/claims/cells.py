"""A claim's cells from the analysis tables: one configuration's runs.csv rows or per-epoch
history as a :class:`initmem.stats.verdicts.Cell`, with the counts the regime rules read."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from initmem.claims.similarity import SelectedCounts, selected_counts, selected_test
from initmem.stats.verdicts import Cell, steps_at_epoch


def cell_key(df: pd.DataFrame) -> str:
    """A cell's identity: its run ids."""
    ids = df["run_id"] if "run_id" in df else df["study"].astype(str) + df["sigma_w"].astype(str) + df["seed"].astype(str)
    return "|".join(sorted(set(map(str, ids))))


def regime_counts(runs: pd.DataFrame) -> SelectedCounts:
    """What the runs' selected predictors are (:func:`initmem.claims.similarity.selected_counts`): runs,
    runs with a tau_interp, runs whose selected predictor fits, and what the regime rules read besides."""
    return selected_counts(runs)


def cell_from_runs(runs: pd.DataFrame, metric: str = "test_acc_best") -> Cell:
    """A (sigma_w x seed) cell of ``metric`` from one configuration's rows of runs.csv (a seed
    without any value, e.g. diverged at every sigma_w in its first epoch, is not a replicate); the
    selected predictor's test accuracy from :func:`selected_test`'s column."""
    metric = selected_test(runs) if metric == "test_acc_best" else metric
    grid = runs.pivot_table(index="sigma_w", columns="seed", values=metric, aggfunc="mean", dropna=False)
    grid = grid.reindex(index=sorted(set(runs["sigma_w"])), columns=sorted(set(runs["seed"]))).dropna(axis=1, how="all")
    return Cell(cell_key(runs), grid.index.to_numpy(float), grid.columns.to_numpy(), grid.to_numpy(float),
                fit=regime_counts(runs))


def cell_from_history(history: pd.DataFrame, metric: str = "val_acc",
                      clocks: Sequence[str] = ("T_sgd", "T_l2", "T_wd", "T_adapt")) -> Cell:
    """An (epoch x sigma_w x seed) cell of ``metric`` from one configuration's per-epoch rows.

    Coordinates (``clocks``): ``epoch``, ``steps`` (epoch x ceil(n_train / b), where the history has
    both) and each clock, at an epoch the mean over the runs still training (``carried`` rows are not)."""
    sigmas, seeds = sorted(set(history["sigma_w"])), sorted(set(history["seed"]))
    epochs = sorted(set(history["epoch"]))
    cube = np.full((len(epochs), len(sigmas), len(seeds)), np.nan)
    e_i = history["epoch"].map({e: i for i, e in enumerate(epochs)}).to_numpy()
    s_i = history["sigma_w"].map({s: i for i, s in enumerate(sigmas)}).to_numpy()
    r_i = history["seed"].map({s: i for i, s in enumerate(seeds)}).to_numpy()
    cube[e_i, s_i, r_i] = history[metric].to_numpy(float)
    has = np.isfinite(cube).any(axis=(0, 1))  # a seed without any value is not a replicate
    cube, seeds = cube[:, :, has], [s for s, h in zip(seeds, has, strict=True) if h]
    live = history[~history["carried"].astype(bool)] if "carried" in history else history
    live = live if not live.empty else history
    ep = np.asarray(epochs, float)
    coords = {"epoch": ep}
    if {"n_train", "batch_size"} <= set(history.columns):
        coords["steps"] = steps_at_epoch(ep, history["n_train"].iloc[0], history["batch_size"].iloc[0])
    coords |= {c: live.groupby("epoch")[c].mean().reindex(epochs).to_numpy(float) for c in clocks if c in history}
    return Cell(cell_key(history), np.asarray(sigmas, float), np.asarray(seeds), cube, ep, coords)
