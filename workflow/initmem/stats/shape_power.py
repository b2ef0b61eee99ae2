"""The |beta(t)| shape rules read on many simulated curve cells at once: the verdict codes of
:func:`initmem.stats.shapes.decay_decision` and :func:`initmem.stats.shapes.flat_decision`, cell for cell,
with the replicate axis (the full sample and each seed left out) and the cells' axis in one array.

The arithmetic is the rule's, step for step (the same sums along the seed axis, the same window means,
noise floor, held levels and jackknife t-interval), so a cell's code is the rule's verdict read as
``+1`` (``reproduced``), ``-1`` (``not reproduced``) or ``0`` (anything else): the planner's chance of a
decision (:mod:`initmem.planner.design`) is the share of nonzero codes. ``tests/test_shape_power.py``
holds them to the rule, cell for cell.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from initmem.stats.shapes import DECAY_ORDERS, FLAT_ORDERS, FLOOR_SE, SIGNAL_ORDERS, WINDOWS
from initmem.stats.verdicts import LEVEL, Side, between, greater, ols_from_sums


def replicate_fits(values: np.ndarray, sigmas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cells, 1 + n, epochs) OLS slope of ``values`` (cells, epochs, sigma_w, n seeds, every run present)
    on ``sigmas`` and its standard error: row 0 the full sample, row j + 1 seed j left out
    (:meth:`initmem.stats.verdicts.Cell.fits` of every cell at once)."""
    n = values.shape[-1]
    total, squares = values.sum(-1), (values ** 2).sum(-1)
    tot = np.concatenate([total[:, None], total[:, None] - np.moveaxis(values, -1, 1)], axis=1)
    sq = np.concatenate([squares[:, None], squares[:, None] - np.moveaxis(values ** 2, -1, 1)], axis=1)
    count = np.concatenate([np.full((1, *values.shape[1:3]), float(n)), np.full((n, *values.shape[1:3]), float(n - 1))])
    return ols_from_sums(tot, sq, count, np.asarray(sigmas, float))


def window_means(y: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """:func:`initmem.stats.shapes.window_means` along the last axis of ``y`` (any leading axes)."""
    edges = np.linspace(epochs.min(), epochs.max(), min(WINDOWS, len(epochs)) + 1)
    which = np.clip(np.searchsorted(edges, epochs, side="right") - 1, 0, len(edges) - 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.stack([np.nanmean(y[..., which == w], axis=-1) for w in np.unique(which)], axis=-1)


def shapes(values: np.ndarray, sigmas: np.ndarray, epochs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(windows (cells, 1 + n, W), floor (cells, 1 + n)): each replicate's |beta| window means and noise
    floor (:func:`initmem.stats.shapes.beta_shape`)."""
    slope, se = replicate_fits(values, sigmas)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        floor = FLOOR_SE * np.nanmedian(se, axis=-1)
    return window_means(np.abs(slope), epochs), floor


def held_high(w: np.ndarray) -> np.ndarray:
    """:attr:`initmem.stats.shapes.Shape.peak` along the last axis (windows)."""
    if w.shape[-1] < 2:
        return w[..., 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmax(np.fmin(w[..., :-1], w[..., 1:]), axis=-1)


def jackknife_bounds(reps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the t-interval of :func:`initmem.stats.verdicts.jackknife_t` of ``reps`` (cells, 1 + n):
    NaN where a replicate is missing."""
    full, loo = reps[:, 0], reps[:, 1:]
    n = loo.shape[1]
    se = np.sqrt((n - 1) / n * np.sum((loo - loo.mean(axis=1, keepdims=True)) ** 2, axis=1))
    se = np.where(np.isfinite(full) & np.isfinite(loo).all(axis=1), se, np.nan)
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se
    return full - half, full + half


def codes(low: np.ndarray, high: np.ndarray, side: Side) -> np.ndarray:
    """+1 ``reproduced``, -1 ``not reproduced``, 0 otherwise: :func:`initmem.stats.verdicts.verdict` per cell."""
    ok = np.isfinite(low) & np.isfinite(high)
    rep = ok & (low > side.agree_above) & (high < side.hi)
    nrep = ok & (((side.other_from <= low) & (high < side.other_below)) | (low > side.hi))
    return np.where(rep, 1, np.where(nrep, -1, 0))


def decay_codes(values: np.ndarray, sigmas: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """Per cell of ``values`` (cells, epochs, sigma_w, seeds), the code of
    :func:`initmem.stats.shapes.decay_decision` with ``floor_is_enough=False``."""
    w, floor = shapes(values, sigmas, epochs)
    peak = held_high(w)
    end = np.fmax(w[..., -2], w[..., -1]) if w.shape[-1] > 1 else w[..., -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        fall = np.log10(np.maximum(peak, floor) / np.maximum(end, floor))
        observable = np.log10(peak[:, 0] / floor[:, 0])
    low, high = jackknife_bounds(fall)
    reached = end[:, 0] <= floor[:, 0]
    with np.errstate(invalid="ignore"):
        signal = observable >= SIGNAL_ORDERS
        reproduced = signal & (codes(low, high, greater(DECAY_ORDERS)) == 1)
        hidden = reached & (observable < DECAY_ORDERS)
        below = np.isfinite(high) & (high < np.minimum(DECAY_ORDERS, observable))
    return np.where(reproduced, 1, np.where(signal & ~hidden & below, -1, 0))


def flat_codes(values: np.ndarray, sigmas: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """Per cell of ``values`` (cells, epochs, sigma_w, seeds), the code of :func:`initmem.stats.shapes.flat_decision`."""
    w, floor = shapes(values, sigmas, epochs)
    raw = w[..., 1:] if w.shape[-1] > 2 else w
    settled = np.maximum(raw, floor[..., None])
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        logs = np.log10(settled)
        finite = np.isfinite(logs)
        ok = finite.any(axis=-1)
        hi = np.where(ok, np.argmax(np.where(finite, logs, -np.inf), axis=-1), 0)
        lo = np.where(ok, np.argmin(np.where(finite, logs, np.inf), axis=-1), 0)
        size = np.take_along_axis(logs, hi[..., None], -1)[..., 0] - np.take_along_axis(logs, lo[..., None], -1)[..., 0]
        change = np.where(ok, np.where(hi >= lo, size, -size), np.nan)
    low, high = jackknife_bounds(change)
    f0 = floor[:, 0]
    above = held_high(w[:, 0]) > f0
    hidden = (raw[:, 0] <= f0[:, None]).any(axis=-1) & (raw[:, 0] > f0[:, None]).any(axis=-1)
    with np.errstate(invalid="ignore"):
        leaves = (low > FLAT_ORDERS) | (high < -FLAT_ORDERS)
    return np.where(above & ~(hidden & ~leaves), codes(low, high, between(-FLAT_ORDERS, FLAT_ORDERS)), 0)
