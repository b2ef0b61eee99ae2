"""Seed intervals, the statistics that decide the paper's directional claims, and the verdict words.

A *cell* is one configuration's runs laid out as a (sigma_w x seed) matrix of one metric (or an
(epoch x sigma_w x seed) array for curves). Every statistic is computed on *replicates*: row 0 is
the full sample, row j + 1 the same statistic with seed j left out of every cell that has it (one
seed gives the same init draws at every sigma_w and in every configuration, so a left-out seed
leaves with all of its runs, and two cells are paired by seed).

**Interval** (:func:`estimate`): a t-interval at :data:`LEVEL` with n - 1 degrees of freedom around
the full-sample statistic, its standard error from the delete-one-seed jackknife over the n seeds.
For a statistic that is a contrast of seed means (a difference of accuracies, a spread whose
extreme sigma_w stay the extremes when a seed leaves) this *is* the t-interval on the n per-seed
values; its coverage is the nominal one at any n >= 2 when seed noise is roughly normal. No
percentile bootstrap: with 3 seeds each single-seed resample has probability 1/27 > 2.5%, so its
"95%" interval is the [min, max] of the seeds. One seed has no interval: "not testable with one seed".

**Verdict words** (:data:`VERDICTS`), against the paper's side of a claim (:class:`Side`):
``reproduced`` (interval entirely on the paper's side), ``not reproduced`` (entirely on the other),
``inconclusive`` (across the boundary), ``cannot be decided above the noise floor`` (a |beta| shape
the OLS noise hides), ``outside the paper's regime`` (a claim about networks trained to fit, measured
on runs that mostly did not fit; :data:`REGIME_MIN_FIT`), ``not testable with one seed`` and ``not
measured`` (the config lacks what the claim needs). The statistics and the reading of the paper's
words they encode are defined once, below.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

LEVEL = 0.95
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
BELOW_FLOOR = "cannot be decided above the noise floor"
OUTSIDE_REGIME = "outside the paper's regime"
ONE_SEED = "not testable with one seed"
NOT_MEASURED = "not measured"
NOT_IDENTIFIABLE = "not identifiable"  # the design cannot tell the paper's clock from the alternatives (initmem.claims.collapse)
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BELOW_FLOOR, OUTSIDE_REGIME, ONE_SEED, NOT_IDENTIFIABLE, NOT_MEASURED)

# --- the reading of the paper's words ----------------------------------------------------------
# Regime. The paper's claims are about predictors of networks trained to fit (its SGD runs reach
# 99.5% train accuracy across the sweep). A claim is in that regime when, in every configuration it
# reads, at least half of the runs reached 99.5% train accuracy (tau_interp not null).
REGIME_MIN_FIT = 0.5
# |beta(t)| shapes are read on window means: the run is cut into WINDOWS equal stretches.
WINDOWS = 10
# Noise floor: FLOOR_SE x the median OLS standard error of beta over the run. An estimated slope
# below two standard errors is consistent with zero, so a |beta| there cannot be told from the floor.
FLOOR_SE = 2.0
# "stays flat near 1e-1": the range of the settled windows (all but the first: training leaves
# chance there), log10(highest / lowest), signed by which comes first, is within +-FLAT_ORDERS: a
# rise, a fall, a hump and a dip all fail. Where part of the settled run sits at the noise floor,
# the range is a lower bound ("cannot be decided above the noise floor" unless it already fails). The level: the last window's |beta| within LEVEL_ORDERS of 1e-1.
FLAT_ORDERS = 0.5
PAPER_FLAT_LEVEL = 0.1
LEVEL_ORDERS = 0.5
# "decay by 1-2 orders of magnitude": the fall from the peak level to the end level, each held over
# two neighbouring windows (a spike or a one-window transient is no peak), is at least DECAY_ORDERS.
# A curve falling exactly one order (log-linearly, first to last epoch) measures 0.7 between those
# levels of tenths' means, so 0.6 lets it pass and still fails any flat, rising or spiked curve.
# A curve whose peak is not SIGNAL_ORDERS above the noise floor has no fall to measure.
DECAY_ORDERS = 0.6
SIGNAL_ORDERS = math.log10(2)
# A single spread (max - min over sigma_w of seed means) is positive even when sigma_w does nothing:
# its noise-only reference permutes the sigma_w labels within each seed NULL_PERMUTATIONS times
# (a fixed RNG seed: the same null on every re-analysis). A spread is "nonzero" when its p-value is
# below 1 - LEVEL.
NULL_PERMUTATIONS = 2000
NULL_RNG_SEED = 20260
SPREAD_METHOD = (f"observed -/+ the 97.5% quantile of a sigma_w-permutation null within seeds ({NULL_PERMUTATIONS} permutations), "
                 "floored at 0")
BETA_FLOOR = 1e-5  # |beta| below this counts as this on a log axis (an exact 0 has no logarithm)


def steps_at_epoch(epoch, n_train, batch_size):
    """Optimizer steps after ``epoch`` finished epochs: epoch x ceil(n_train / b), the last partial
    batch kept as in training (numbers or numpy/pandas arrays alike; the one place the analysis counts steps)."""
    return epoch * np.ceil(np.asarray(n_train, float) / np.asarray(batch_size, float))


@dataclass(frozen=True)
class Side:
    """The paper's side of a claim: effect > lo (op '>'), effect < hi (op '<') or lo < effect < hi."""

    op: str
    lo: float = -math.inf
    hi: float = math.inf

    def text(self) -> str:
        return {">": f"> {self.lo:.3g}", "<": f"< {self.hi:.3g}"}.get(self.op, f"in [{self.lo:.3g}, {self.hi:.3g}]")


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


# --- cells and their replicates ----------------------------------------------------------------

@dataclass
class Cell:
    """One configuration's runs: ``values[..., sigma, seed]`` (NaN where a run has no value).

    ``fit``: (runs, runs that reached 99.5% train accuracy, runs whose tau_best is at or after that),
    from runs.csv (:func:`regime_counts`); ``label`` names the cell in notes."""

    key: str
    sigmas: np.ndarray
    seeds: np.ndarray
    values: np.ndarray
    epochs: np.ndarray | None = None   # curves: the epoch of each row of ``values``
    clocks: dict = field(default_factory=dict)  # curves: coordinate name -> value per epoch
    fit: tuple[int, int, int] | None = None
    label: str = ""
    config: dict = field(default_factory=dict)  # optimizer, lr, l2, batch_size (the regime rules read it)

    @property
    def end_clocks(self) -> dict:
        """Curves: each clock's last finite value (where the run ended)."""
        out = {}
        for k, x in self.clocks.items():
            x = np.asarray(x, float)
            if k.startswith("T_") and np.isfinite(x).any():
                out[k] = float(x[np.isfinite(x)][-1])
        return out

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    @property
    def n_runs(self) -> int:
        """Runs with a value (at any epoch)."""
        present = np.isfinite(self.values)
        return int(present.reshape(-1, *present.shape[-2:]).any(axis=0).sum())

    def weights(self, seeds: Sequence) -> np.ndarray:
        """(1 + len(seeds), n_seeds) multiplicities: the full sample, then each of ``seeds`` left out."""
        w = np.ones((1 + len(seeds), self.n_seeds))
        for j, s in enumerate(seeds):
            w[1 + j, self.seeds == s] = 0.0
        return w

    def sums(self, seeds: Sequence, power: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Per replicate: the weighted sum of value**power and the count of runs in each (..., sigma) cell."""
        w = self.weights(seeds)
        present = np.isfinite(self.values)
        inner = self.values.shape[:-1]
        flat = lambda a: (a.reshape(-1, self.n_seeds) @ w.T).T.reshape(len(w), *inner)  # noqa: E731
        return flat(np.where(present, self.values, 0.0) ** power), flat(present.astype(float))

    def means(self, seeds: Sequence) -> np.ndarray:
        """(1 + n, ..., n_sigma) seed means; row 0 is the full sample."""
        total, count = self.sums(seeds)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / count

    def fits(self, seeds: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """(1 + n, n_epoch) OLS slope of the metric on sigma_w over the runs and its standard error:
        the same numbers as an OLS over the individual runs (statsmodels' ``beta`` and ``se``)."""
        total, count = self.sums(seeds)
        squares, _ = self.sums(seeds, power=2)
        x = self.sigmas
        n, sx, sxx = count.sum(-1), count @ x, count @ (x * x)
        sy, sxy, syy = total.sum(-1), total @ x, squares.sum(-1)
        den = n * sxx - sx * sx
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = den > 1e-9 * np.maximum(n * sxx, 1e-300)
            slope = np.where(ok, (n * sxy - sx * sy) / den, np.nan)
            intercept = (sy - slope * sx) / n
            rss = np.maximum(syy - intercept * sy - slope * sxy, 0.0)
            se = np.where(ok & (n > 2), np.sqrt(rss / (n - 2) * n / den), np.nan)
        return slope, se

    def slopes(self, seeds: Sequence) -> np.ndarray:
        return self.fits(seeds)[0]


def cell_key(df: pd.DataFrame) -> str:
    """A cell's identity: its run ids."""
    ids = df["run_id"] if "run_id" in df else df["study"].astype(str) + df["sigma_w"].astype(str) + df["seed"].astype(str)
    return "|".join(sorted(set(map(str, ids))))


def regime_counts(runs: pd.DataFrame) -> tuple[int, int, int]:
    """(runs, runs with a tau_interp, runs whose tau_best is at or after their tau_interp)."""
    if "tau_interp" not in runs:
        return len(runs), 0, 0
    interp = pd.to_numeric(runs["tau_interp"], errors="coerce")  # None (a record read in memory) or NaN (runs.csv)
    fit = interp.notna()
    best = fit & (pd.to_numeric(runs["tau_best"], errors="coerce") >= interp) if "tau_best" in runs else fit & False
    return len(runs), int(fit.sum()), int(best.sum())


def cell_from_runs(runs: pd.DataFrame, metric: str = "test_acc_best") -> Cell:
    """A (sigma_w x seed) cell of ``metric`` from one configuration's rows of runs.csv (a seed
    without any value, e.g. diverged at every sigma_w in its first epoch, is not a replicate)."""
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


# --- estimates ---------------------------------------------------------------------------------

@dataclass
class Estimate:
    """A statistic of some cells: the full-sample ``effect``, its interval and how it was made."""

    effect: float
    low: float
    high: float
    method: str
    n_runs: int
    n_seeds: int
    replicates: np.ndarray
    null_mean: float = math.nan   # a single spread: the mean spread when sigma_w does nothing (:func:`spread_estimate`)
    p_null: float = math.nan      # ... the share of the permutation null at least as large as the observed spread
    corrected: float = math.nan   # ... the spread with the noise-only part removed

    @property
    def one_seed(self) -> bool:
        return self.n_seeds < 2


def seeds_of(cells: Sequence[Cell]) -> list:
    """The seeds of all ``cells`` together (a left-out seed leaves every cell that has it)."""
    return sorted(set().union(*(set(c.seeds.tolist()) for c in cells)))


def jackknife_t(replicates: np.ndarray) -> tuple[float, float, str]:
    """t-interval at :data:`LEVEL` around ``replicates[0]`` with the delete-one jackknife standard
    error of ``replicates[1:]`` (n - 1 degrees of freedom), and its label."""
    full, loo = replicates[0], replicates[1:]
    n = len(loo)
    if n < 2:
        return math.nan, math.nan, "none: 1 seed"
    label = f"t, jackknife over {n} seeds, df {n - 1}"
    if not (np.isfinite(full) and np.isfinite(loo).all()):
        return math.nan, math.nan, label
    se = math.sqrt((n - 1) / n * float(np.sum((loo - loo.mean()) ** 2)))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se
    return float(full - half), float(full + half), label


def estimate(cells: Sequence[Cell], statistic: Callable[[list[np.ndarray]], np.ndarray],
             prepare: Callable[[Cell, list], np.ndarray] | None = None) -> Estimate:
    """``statistic`` of the cells with its seed interval (:func:`jackknife_t`).

    ``prepare(cell, seeds)`` turns each cell into replicate arrays (default: its seed means);
    ``statistic`` maps the list of them to one value per replicate."""
    prepare = prepare or (lambda c, s: c.means(s))
    seeds = seeds_of(cells)
    few = min(c.n_seeds for c in cells) < 2
    reps = np.asarray(statistic([prepare(c, [] if few else seeds) for c in cells]), float)
    low, high, method = (math.nan, math.nan, "none: 1 seed") if few else jackknife_t(reps)
    return Estimate(float(reps[0]), low, high, method, int(sum(c.n_runs for c in cells)),
                    int(min(c.n_seeds for c in cells)), reps)


def side_verdict(est: Estimate, side: Side) -> str:
    """The verdict of an estimate against the paper's ``side`` (no interval with one seed)."""
    if est.one_seed:
        return ONE_SEED
    return verdict(est.low, est.high, side)


def regime(cells: Sequence[Cell]) -> dict:
    """Share of the cells' runs that reached 99.5% train accuracy (``share_fit``), share whose
    tau_best is at or after that (``share_best_fitted``), and whether every cell has at least
    :data:`REGIME_MIN_FIT` of its runs fitted (``in_regime``; ``least`` names the cell that has fewest)."""
    counts = [c.fit for c in cells if c.fit is not None and c.fit[0] > 0]
    if not counts:
        return {"share_fit": math.nan, "share_best_fitted": math.nan, "in_regime": None, "least": ""}
    n, fit, best = (sum(c[i] for c in counts) for i in range(3))
    shares = [(c.fit[1] / c.fit[0], c.label) for c in cells if c.fit is not None and c.fit[0] > 0]
    low, least = min(shares, key=lambda s: s[0])
    return {"share_fit": fit / n, "share_best_fitted": best / n, "in_regime": low >= REGIME_MIN_FIT,
            "least": f"{least + ': ' if least else ''}{100 * low:.0f}% of runs fitted"}


# --- spreads -----------------------------------------------------------------------------------

def spread_pp(means: np.ndarray) -> np.ndarray:
    """max - min over sigma_w of the seed mean, in percentage points (the paper's spread)."""
    with warnings.catch_warnings():  # a replicate without any value stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return 100 * (np.nanmax(means, -1) - np.nanmin(means, -1))


def permuted_spreads(values: np.ndarray, n_perm: int = NULL_PERMUTATIONS, rng_seed: int = NULL_RNG_SEED) -> np.ndarray:
    """Spreads (pp) of ``values[sigma, seed]`` with the sigma_w labels permuted within each seed:
    what max - min of seed means gives when sigma_w does nothing (a fixed RNG: the same null every run)."""
    rng = np.random.default_rng(rng_seed)
    n_sigma, n_seed = values.shape
    order = np.argsort(rng.random((n_perm, n_sigma, n_seed)), axis=1)
    shuffled = values[order, np.arange(n_seed)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return spread_pp(np.nanmean(shuffled, axis=-1))


def spread_estimate(cell: Cell, n_perm: int = NULL_PERMUTATIONS) -> Estimate:
    """One configuration's spread against its noise-only null (:data:`SPREAD_METHOD`).

    ``effect``: the observed max - min of seed means (pp); ``null_mean``: the mean spread under the
    sigma_w-permutation null; ``p_null``: the share of permutations with a spread at least as large
    (with the observed one counted); ``corrected``: sqrt(observed^2 - null_mean^2), 0 below the null
    (noise adds to a spread roughly in quadrature). Interval: the observed spread minus and plus the
    null's 97.5% quantile q, floored at 0. Why it holds: the seed means are the true means plus noise,
    and the range of a sum is within the range of either part plus the range of the other, so
    |observed - true| <= range(noise means), which the null's spreads estimate (exactly when sigma_w
    does nothing; larger, so conservative, when it does). A true zero spread is covered whenever the
    observed one is below q: at least 97.5% of the time."""
    values = cell.values if cell.values.ndim == 2 else cell.values[-1]
    observed = float(spread_pp(np.nanmean(values, axis=-1)[None])[0]) if np.isfinite(values).any() else math.nan
    n_runs, n_seeds = cell.n_runs, cell.n_seeds
    if n_seeds < 2 or not math.isfinite(observed):
        return Estimate(observed, math.nan, math.nan, "none: 1 seed" if n_seeds < 2 else SPREAD_METHOD, n_runs, n_seeds,
                        np.array([observed]))
    null = permuted_spreads(values, n_perm)
    q = float(np.quantile(null, 0.5 + LEVEL / 2))
    m0 = float(null.mean())
    est = Estimate(observed, max(observed - q, 0.0), observed + q, SPREAD_METHOD, n_runs, n_seeds, np.array([observed]))
    est.null_mean, est.p_null = m0, float((1 + np.sum(null >= observed - 1e-12)) / (1 + len(null)))
    est.corrected = math.sqrt(max(observed**2 - m0**2, 0.0))
    return est


def spread_interval(cell: Cell) -> tuple[float, float, str]:
    """Interval of one configuration's spread against its noise (:func:`spread_estimate`), its method."""
    est = spread_estimate(cell)
    return est.low, est.high, est.method


# --- |beta(t)| shapes --------------------------------------------------------------------------

def window_means(y: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """Mean of ``y`` in each of :data:`WINDOWS` equal stretches of the run (fewer for short runs);
    rows are replicates."""
    edges = np.linspace(epochs.min(), epochs.max(), min(WINDOWS, len(epochs)) + 1)
    which = np.clip(np.searchsorted(edges, epochs, side="right") - 1, 0, len(edges) - 2)
    with warnings.catch_warnings():  # a stretch where no fit exists stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.stack([np.nanmean(y[:, which == w], axis=1) for w in np.unique(which)], axis=1)


def noise_floor(se: np.ndarray) -> np.ndarray:
    """Per replicate: :data:`FLOOR_SE` x the median OLS standard error of beta over the run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return FLOOR_SE * np.nanmedian(se, axis=1)


def sign_changes(slopes: np.ndarray, epochs: np.ndarray) -> bool:
    """Whether the full sample's beta takes the other sign after its largest window (by |mean|):
    somewhere there it passes zero, where its |beta| sits at the noise floor."""
    w = window_means(slopes[:1], epochs)[0]
    if not np.isfinite(w).any():
        return False
    edges = np.linspace(epochs.min(), epochs.max(), len(w) + 1)
    peak = int(np.nanargmax(np.abs(w)))
    after = slopes[0][epochs > edges[peak + 1]]
    return bool(np.any(np.sign(after) * np.sign(w[peak]) < 0))


def _held_high(w: np.ndarray) -> np.ndarray:
    """Per row: the highest level held over two neighbouring windows (max_k min(w_k, w_k+1)): a
    single-window spike or an early transient in one window is not a peak."""
    if w.shape[1] < 2:
        return w[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmax(np.fmin(w[:, :-1], w[:, 1:]), axis=1)


@dataclass
class Shape:
    """Per-replicate |beta(t)| shape: window means of |beta| (the paper's |d ValAcc / d sigma_w|),
    the noise floor, and the statistics built from them. Every window enters the statistics floored
    at the noise floor: where beta crosses zero its |beta| is small but not a decay, so a fall counts
    only down to the floor (:func:`sign_changes` flags it). A level counts only when it holds over
    two neighbouring windows (:func:`_held_high`): a spike or a one-window transient is no peak, a
    one-window dip at the end no fall."""

    windows: np.ndarray
    floor: np.ndarray

    @property
    def peak(self) -> np.ndarray:
        """The highest level held over two neighbouring windows."""
        return _held_high(self.windows)

    @property
    def last(self) -> np.ndarray:
        """The last window's |beta| (the level of "flat near 1e-1")."""
        return self.windows[:, -1]

    @property
    def end(self) -> np.ndarray:
        """The level at the end held over the last two windows (the larger of the two)."""
        return np.fmax(self.windows[:, -2], self.windows[:, -1]) if self.windows.shape[1] > 1 else self.windows[:, -1]

    @property
    def settled(self) -> np.ndarray:
        """The windows after the first (training leaves chance there), floored at the noise floor."""
        w = self.windows[:, 1:] if self.windows.shape[1] > 2 else self.windows
        return self._above(w)

    def _above(self, v: np.ndarray) -> np.ndarray:
        floor = self.floor if v.ndim == 1 else self.floor[:, None]
        return np.maximum(v, floor)

    @property
    def change(self) -> np.ndarray:
        """"flat": the range of the settled windows, log10(highest / lowest), signed + when the
        highest comes after the lowest (a rise or a hump), - when before (a fall or a dip); every
        window floored at the noise floor (a curve that stays at the floor measures 0)."""
        w = self.settled
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            logs = np.log10(w)
            ok = np.isfinite(logs).any(axis=1)
            hi = np.where(ok, np.argmax(np.where(np.isfinite(logs), logs, -np.inf), axis=1), 0)
            lo = np.where(ok, np.argmin(np.where(np.isfinite(logs), logs, np.inf), axis=1), 0)
            rows = np.arange(len(w))
            size = logs[rows, hi] - logs[rows, lo]
            return np.where(ok, np.where(hi >= lo, size, -size), np.nan)

    @property
    def hidden_start(self) -> np.ndarray:
        """Whether a settled window lies at the noise floor while another rises above it: the change
        measured from the floor is only a lower bound (a rise from below the floor looks flat)."""
        w = self.windows[:, 1:] if self.windows.shape[1] > 2 else self.windows
        floor = self.floor[:, None]
        return (w <= floor).any(axis=1) & (w > floor).any(axis=1)

    @property
    def fall(self) -> np.ndarray:
        """"decay": orders of magnitude from the held peak down to the held end level, the end floored
        at the noise floor (a fall into the floor counts only as far as the floor)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log10(self._above(self.peak) / self._above(self.end))

    @property
    def observable(self) -> np.ndarray:
        """The largest fall this curve could show: orders of magnitude from its peak to the floor."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log10(self.peak / self.floor)


def beta_shape(slopes: np.ndarray, se: np.ndarray, epochs: np.ndarray) -> Shape:
    """The :class:`Shape` of replicate slope curves (rows) with their standard errors."""
    return Shape(window_means(np.abs(slopes), epochs), noise_floor(se))


def flat_decided(change: Estimate, shape: Shape) -> tuple[str, str] | None:
    """"Stays flat": ``cannot be decided above the noise floor`` (with the reason) when no level of the
    full sample's |beta| rises above the floor, or when part of its settled run sits at the floor and
    the change measured from there (a lower bound) does not already leave +-FLAT_ORDERS; else None
    (the interval against +-FLAT_ORDERS decides)."""
    if change.one_seed:
        return None
    floor = float(shape.floor[0])
    if not shape.peak[0] > floor:
        return BELOW_FLOOR, f"no level of |beta| rises above the noise floor {floor:.3g}"
    if shape.hidden_start[0] and not (change.low > FLAT_ORDERS or change.high < -FLAT_ORDERS):
        return BELOW_FLOOR, f"part of the settled run lies at the noise floor {floor:.3g}: the change from there is only a lower bound"
    return None


def decay_verdict(fall: Estimate, observable: float, reached_floor: bool, floor_is_enough: bool) -> tuple[str, str]:
    """Verdict and note for "|beta| decays by 1-2 orders" (``floor_is_enough``: "reaches the noise
    floor") from the fall's estimate, the full sample's observable range and whether its last window
    lies at the noise floor."""
    if fall.one_seed:
        return ONE_SEED, ""
    if not observable >= SIGNAL_ORDERS:
        return BELOW_FLOOR, f"|beta| never rises to twice the noise floor (its peak is {max(observable, 0):.2f} orders above it)"
    to_floor = f"fell to the noise floor, {observable:.2f} orders below its peak" if reached_floor else ""
    if verdict(fall.low, fall.high, greater(DECAY_ORDERS)) == REPRODUCED:
        return REPRODUCED, to_floor or f"fell >= {DECAY_ORDERS:g} orders above the noise floor"
    if reached_floor and floor_is_enough:
        return REPRODUCED, to_floor
    if reached_floor and observable < DECAY_ORDERS:
        return BELOW_FLOOR, f"{to_floor}: a fall of {DECAY_ORDERS:g} orders cannot be seen above it"
    if np.isfinite(fall.high) and fall.high < min(DECAY_ORDERS, observable):
        return NOT_REPRODUCED, "stays above the noise floor" + (" (rising or flat)" if fall.effect < 0.1 else "")
    return INCONCLUSIVE, to_floor


# --- power: the seeds that would decide an undecided claim -------------------------------------

POWER_MAX_SEEDS = 100_000


def seeds_to_decide(est: Estimate, side: Side) -> float:
    """Seeds at which the interval would stop crossing the paper's boundary, at the measured effect and
    noise, with the half-width shrinking as 1/sqrt(seeds) (the seed noise of a mean): for a jackknife
    t-interval, the smallest n with t(0.975, n - 1) se sqrt(n0 / n) < d, d the effect's distance to
    the nearest boundary; for a single spread against its null (:func:`spread_estimate`) the same with
    the noise-corrected spread and the null's quantile; for the bootstrap exponent, the half-width
    towards p = 0. NaN where the effect sits on the boundary (no number of seeds decides it)."""
    n0 = est.n_seeds
    if n0 < 2 or not (np.isfinite(est.low) and np.isfinite(est.high)):
        return math.nan
    bounds = [b for b in (side.lo, side.hi) if np.isfinite(b)]
    centre = est.corrected if est.method == SPREAD_METHOD and np.isfinite(est.corrected) else est.effect
    d = min(abs(centre - b) for b in bounds) if bounds else math.nan
    if not d > 0:
        return math.nan
    if est.method.startswith("t,"):
        se = (est.high - est.low) / (2 * float(stats.t.ppf(0.5 + LEVEL / 2, n0 - 1)))
        if not se > 0:
            return math.nan
        for n in itertools.chain(range(2, 1000), np.unique(np.geomspace(1000, POWER_MAX_SEEDS, 200).astype(int))):
            if float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se * math.sqrt(n0 / n) < d:
                return float(n)
        return math.inf
    half = est.high - est.effect if est.method == SPREAD_METHOD else max(est.effect - est.low, est.high - est.effect)
    return float(math.ceil(n0 * (half / d) ** 2)) if half > 0 else math.nan


def seeds_to_see_fall(observable: float, orders: float, n_seeds: int, sxx: float) -> tuple[float, float]:
    """(seeds x Sxx, seeds at this sigma_w grid) for |beta| to be able to show a fall of ``orders``
    below its peak: the noise floor is 2 SE(beta) = 2 sigma_r / sqrt(seeds x Sxx(sigma_w grid)), now
    ``observable`` orders below the peak, so seeds x Sxx must grow by 10^(2 (orders - observable))."""
    need = n_seeds * sxx * 10 ** (2 * (orders - observable))
    return need, math.ceil(need / sxx) if sxx > 0 else math.nan
