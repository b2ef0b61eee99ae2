"""Seed-bootstrap intervals and a verdict for each directional claim of the paper.

A *cell* is one configuration's runs laid out as a (sigma_w x seed) matrix of one metric (or an
(epoch x sigma_w x seed) array for |beta(t)| curves). The bootstrap resamples a cell's seeds with
replacement, so a resampled seed keeps all of its sigma_w runs (one seed gives the same init draws
at every sigma_w). Each cell draws its resamples from an RNG seeded by the cell's own key: the same
configuration gets the same resamples in every claim and in ``spreads.csv``, independent of the
order claims are computed in, and different cells are resampled independently. The interval is the
percentile interval of the replicates.

Verdict, against the paper's side of a claim (``Side``): ``reproduced`` when the 95% interval lies
entirely on the paper's side, ``not reproduced`` when it lies entirely on the other side, else
``inconclusive``; a cell with a single seed has no interval, so its claims are ``inconclusive``.
"""

from __future__ import annotations

import itertools
import math
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

N_BOOT = 2000
LEVEL = 0.95
RNG_SEED = 2605_29152  # the paper's arXiv number: fixed, so every table is reproducible
BETA_FLOOR = 1e-5      # |beta| below this counts as this on a log axis (an exact 0 has no logarithm)
GRID_POINTS = 50       # points of the common grid on which curves are compared
DECAY_WINDOWS = 10     # |beta| decay: mean |beta| in each tenth of the run, peak tenth vs last tenth

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


@dataclass(frozen=True)
class Side:
    """The paper's side of a claim: effect > lo (op '>'), effect < hi (op '<') or lo < effect < hi."""

    op: str
    lo: float = -math.inf
    hi: float = math.inf

    def text(self) -> str:
        return {">": f"> {self.lo:g}", "<": f"< {self.hi:g}"}.get(self.op, f"in [{self.lo:g}, {self.hi:g}]")


def greater(x: float = 0.0) -> Side:
    return Side(">", lo=x)


def less(x: float) -> Side:
    return Side("<", hi=x)


def between(lo: float, hi: float) -> Side:
    return Side("between", lo, hi)


def verdict(ci_low: float, ci_high: float, side: Side) -> str:
    """``reproduced`` | ``not reproduced`` | ``inconclusive`` for an interval against ``side``."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return INCONCLUSIVE
    if ci_low > side.lo and ci_high < side.hi:
        return REPRODUCED
    if ci_high < side.lo or ci_low > side.hi:
        return NOT_REPRODUCED
    return INCONCLUSIVE


# --- cells and their resamples ------------------------------------------------------------------

@dataclass
class Cell:
    """One configuration's runs: ``values[..., sigma, seed]`` (NaN where a run has no value)."""

    key: str
    sigmas: np.ndarray
    seeds: np.ndarray
    values: np.ndarray
    epochs: np.ndarray | None = None   # curves: the epoch of each row of ``values``
    clocks: dict | None = None         # curves: clock name -> value per epoch

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    @property
    def n_runs(self) -> int:
        """Runs with a value (at any epoch)."""
        present = np.isfinite(self.values)
        return int(present.reshape(-1, *present.shape[-2:]).any(axis=0).sum())

    def weights(self, n_boot: int) -> np.ndarray:
        """(1 + n_boot, n_seeds) seed multiplicities: the full sample, then the resamples."""
        rng = np.random.default_rng([RNG_SEED, zlib.crc32(self.key.encode())])
        n = self.n_seeds
        boot = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot) if n > 1 else np.ones((0, n))
        return np.vstack([np.ones((1, n)), boot])

    def sums(self, n_boot: int) -> tuple[np.ndarray, np.ndarray]:
        """Per replicate: the weighted sum and count of the runs in each (..., sigma) cell."""
        w = self.weights(n_boot)
        present = np.isfinite(self.values)
        inner = self.values.shape[:-1]
        flat = lambda a: (a.reshape(-1, self.n_seeds) @ w.T).T.reshape(len(w), *inner)  # noqa: E731
        return flat(np.where(present, self.values, 0.0)), flat(present.astype(float))

    def means(self, n_boot: int) -> np.ndarray:
        """(1 + n_boot, ..., n_sigma) seed means; row 0 is the full sample."""
        total, count = self.sums(n_boot)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / count

    def slopes(self, n_boot: int) -> np.ndarray:
        """(1 + n_boot, n_epoch) OLS slope of the metric on sigma_w over the runs (each weighted by its
        multiplicity), from the per-sigma sums: the same slope as an OLS over the individual runs."""
        total, count = self.sums(n_boot)
        x = self.sigmas
        n, sx, sxx = count.sum(-1), count @ x, count @ (x * x)
        sy, sxy = total.sum(-1), total @ x
        den = n * sxx - sx * sx
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 1e-9 * np.maximum(n * sxx, 1e-300), (n * sxy - sx * sy) / den, np.nan)


def cell_key(df: pd.DataFrame) -> str:
    """A cell's identity: its run ids (the same runs get the same resamples wherever they are used)."""
    ids = df["run_id"] if "run_id" in df else df["study"].astype(str) + df["sigma_w"].astype(str) + df["seed"].astype(str)
    return "|".join(sorted(set(map(str, ids))))


def cell_from_runs(runs: pd.DataFrame, metric: str = "test_acc_best") -> Cell:
    """A (sigma_w x seed) cell of ``metric`` from one configuration's rows of runs.csv."""
    key = cell_key(runs)
    grid = runs.pivot_table(index="sigma_w", columns="seed", values=metric, aggfunc="mean", dropna=False)
    grid = grid.reindex(index=sorted(set(runs["sigma_w"])), columns=sorted(set(runs["seed"])))
    return Cell(key, grid.index.to_numpy(float), grid.columns.to_numpy(), grid.to_numpy(float))


def cell_from_history(history: pd.DataFrame, metric: str = "val_acc",
                      clocks: Sequence[str] = ("T_sgd", "T_l2", "T_wd", "T_adapt")) -> Cell:
    """An (epoch x sigma_w x seed) cell of ``metric`` from one configuration's per-epoch rows; the
    clock of an epoch is its mean over the runs still training (``carried`` rows are not)."""
    key = cell_key(history)
    sigmas, seeds = sorted(set(history["sigma_w"])), sorted(set(history["seed"]))
    epochs = sorted(set(history["epoch"]))
    cube = np.full((len(epochs), len(sigmas), len(seeds)), np.nan)
    e_i = history["epoch"].map({e: i for i, e in enumerate(epochs)}).to_numpy()
    s_i = history["sigma_w"].map({s: i for i, s in enumerate(sigmas)}).to_numpy()
    r_i = history["seed"].map({s: i for i, s in enumerate(seeds)}).to_numpy()
    cube[e_i, s_i, r_i] = history[metric].to_numpy(float)
    live = history[~history["carried"]] if "carried" in history else history
    live = live if not live.empty else history
    clock = {c: live.groupby("epoch")[c].mean().reindex(epochs).to_numpy(float) for c in clocks if c in history}
    return Cell(key, np.asarray(sigmas, float), np.asarray(seeds), cube, np.asarray(epochs, float), clock)


# --- statistics on replicates ------------------------------------------------------------------

def spread_pp(means: np.ndarray) -> np.ndarray:
    """max - min over sigma_w of the seed mean, in percentage points (the paper's spread)."""
    with warnings.catch_warnings():  # a replicate without any value stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return 100 * (np.nanmax(means, -1) - np.nanmin(means, -1))


def window_means(abs_beta: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """Mean |beta| in each of :data:`DECAY_WINDOWS` equal stretches of the run (fewer for short
    runs), floored at :data:`BETA_FLOOR`; rows are replicates."""
    edges = np.linspace(epochs.min(), epochs.max(), min(DECAY_WINDOWS, len(epochs)) + 1)
    which = np.clip(np.searchsorted(edges, epochs, side="right") - 1, 0, len(edges) - 2)
    with warnings.catch_warnings():  # a stretch where no fit exists stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.stack([np.nanmean(abs_beta[:, which == w], axis=1) for w in np.unique(which)], axis=1)
    return np.maximum(means, BETA_FLOOR)


def decay_orders(abs_beta: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """How many orders of magnitude |beta(t)| falls: log10 of the peak window mean over the last
    window mean (:func:`window_means`)."""
    windows = window_means(abs_beta, epochs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.log10(np.nanmax(windows, axis=1) / windows[:, -1])


def _interpolate(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Linear interpolation of every row of ``y`` (on increasing ``x``) at ``grid``."""
    i = np.clip(np.searchsorted(x, grid, side="right") - 1, 0, len(x) - 2)
    w = (grid - x[i]) / (x[i + 1] - x[i])
    return y[:, i] * (1 - w) + y[:, i + 1] * w


def curve_distance(x1: np.ndarray, y1: np.ndarray, x2: np.ndarray, y2: np.ndarray, log_x: bool) -> np.ndarray | None:
    """Mean |y1 - y2| on a common grid over the overlap of x1 and x2 (log-spaced when ``log_x``);
    None when the ranges do not overlap. Rows of y are replicates."""
    if len(x1) < 2 or len(x2) < 2 or np.any(np.diff(x1) <= 0) or np.any(np.diff(x2) <= 0):
        return None
    lo, hi = max(x1[0], x2[0]), min(x1[-1], x2[-1])
    if not hi > lo:
        return None
    grid = np.geomspace(lo, hi, GRID_POINTS) if log_x else np.linspace(lo, hi, GRID_POINTS)
    if log_x:  # interpolate in log T, where the curves are drawn
        x1, x2, grid = np.log(x1), np.log(x2), np.log(grid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.abs(_interpolate(x1, y1, grid) - _interpolate(x2, y2, grid)), axis=1)


def log_abs_beta(slopes: np.ndarray) -> np.ndarray:
    return np.log10(np.maximum(np.abs(slopes), BETA_FLOOR))


def collapse_distances(cells: Sequence[Cell], curves: Sequence[np.ndarray], clock: str) -> dict:
    """Mean pairwise distance (orders of magnitude of |beta|) between the log10 |beta| ``curves`` of
    the ``cells`` (one per batch size; rows of a curve are replicates), against the normalised epoch
    t/E and against ``clock`` (log grid over each pair's overlap). Only pairs whose clock ranges
    overlap count, for both distances.

    Returns ``pairs`` and, where any pair counts, replicate arrays ``epoch``, ``clock`` and
    ``difference`` (epoch - clock: positive when the curves lie closer against the clock)."""
    d_epoch, d_clock = [], []
    for (c1, y1), (c2, y2) in itertools.combinations(zip(cells, curves, strict=True), 2):
        t1, t2 = c1.clocks[clock], c2.clocks[clock]
        dc = curve_distance(t1, y1, t2, y2, log_x=True) if (t1 > 0).all() and (t2 > 0).all() else None
        de = curve_distance(c1.epochs / c1.epochs.max(), y1, c2.epochs / c2.epochs.max(), y2, log_x=False)
        if dc is not None and de is not None:
            d_clock.append(dc)
            d_epoch.append(de)
    if not d_clock:
        return {"pairs": 0}
    e, c = np.mean(d_epoch, axis=0), np.mean(d_clock, axis=0)
    return {"pairs": len(d_clock), "epoch": e, "clock": c, "difference": e - c}


# --- one claim ---------------------------------------------------------------------------------

def interval(replicates: np.ndarray) -> tuple[float, float]:
    """Percentile interval at :data:`LEVEL` of the bootstrap replicates (row 0, the full sample, excluded)."""
    boot = replicates[1:]
    boot = boot[np.isfinite(boot)]
    if len(boot) < 2:
        return math.nan, math.nan
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(boot, [tail, 100 - tail])
    return float(low), float(high)


def evaluate(cells: Sequence[Cell], statistic: Callable[[list[np.ndarray]], np.ndarray], side: Side | None,
             n_boot: int = N_BOOT, prepare: Callable[[Cell, int], np.ndarray] | None = None) -> dict:
    """Effect (full sample), its interval, run count and verdict for ``statistic`` of the cells.

    ``prepare(cell, n_boot)`` turns each cell into replicate arrays (default: its seed means);
    ``statistic`` maps the list of them to one value per replicate. ``side=None``: a number without
    a direction (no verdict)."""
    prepare = prepare or (lambda c, n: c.means(n))
    few = [c for c in cells if c.n_seeds < 2]
    n = 0 if few else n_boot
    reps = np.asarray(statistic([prepare(c, n) for c in cells]), float)
    effect = float(reps[0])
    low, high = interval(reps) if not few else (math.nan, math.nan)
    note = "1 seed: no interval" if few else ""
    if few:
        v = INCONCLUSIVE
    elif not math.isfinite(effect):
        v, note = INCONCLUSIVE, "no value"
    else:
        v = verdict(low, high, side) if side is not None else ""
    return {"effect": effect, "ci_low": low, "ci_high": high, "n_runs": int(sum(c.n_runs for c in cells)),
            "n_seeds": int(min(c.n_seeds for c in cells)) if cells else 0,
            "paper_side": side.text() if side is not None else "", "verdict": v if side is not None else "", "note": note}


def spread_interval(cell: Cell, n_boot: int = N_BOOT) -> tuple[float, float]:
    """Seed-bootstrap interval of one configuration's spread (NaN with one seed)."""
    if cell.n_seeds < 2:
        return math.nan, math.nan
    return interval(spread_pp(cell.means(n_boot)))
