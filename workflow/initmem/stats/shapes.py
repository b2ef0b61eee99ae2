"""|beta(t)| shapes: window means of |beta|, its noise floor, and the statistics that read "stays flat
near 1e-1" and "decays by 1-2 orders of magnitude" (:class:`Shape`)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from initmem.stats.verdicts import (
    BELOW_FLOOR,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    ONE_SEED,
    REPRODUCED,
    Cell,
    Estimate,
    between,
    estimate,
    greater,
    side_verdict,
    verdict,
)

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
BETA_FLOOR = 1e-5  # |beta| below this counts as this on a log axis (an exact 0 has no logarithm)


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


def log_abs_beta(slopes: np.ndarray, floor: float = BETA_FLOOR) -> np.ndarray:
    """log10 |beta|, floored at ``floor`` (below the noise floor every value means the same)."""
    return np.log10(np.maximum(np.abs(slopes), floor))


def seeds_to_see_fall(observable: float, orders: float, n_seeds: int, sxx: float) -> tuple[float, float]:
    """(seeds x Sxx, seeds at this sigma_w grid) for |beta| to be able to show a fall of ``orders``
    below its peak: the noise floor is 2 SE(beta) = 2 sigma_r / sqrt(seeds x Sxx(sigma_w grid)), now
    ``observable`` orders below the peak, so seeds x Sxx must grow by 10^(2 (orders - observable))."""
    need = n_seeds * sxx * 10 ** (2 * (orders - observable))
    return need, math.ceil(need / sxx) if sxx > 0 else math.nan


def _fits(c: Cell, seeds: list) -> tuple[np.ndarray, np.ndarray]:
    return c.fits(seeds)


def decay_decision(cell: Cell, floor_is_enough: bool) -> tuple[str, str, Estimate, Shape]:
    """"|beta| decays by 1-2 orders" (or "reaches the noise floor") read on one curve cell: (verdict,
    note, the fall's estimate, the full sample's shape): the rule the claims table and the calibration share."""
    shape0 = beta_shape(*cell.fits([]), cell.epochs)
    fall = estimate([cell], lambda m: beta_shape(*m[0], cell.epochs).fall, prepare=_fits)
    v, why = decay_verdict(fall, float(shape0.observable[0]), bool(shape0.end[0] <= shape0.floor[0]), floor_is_enough)
    return v, why, fall, shape0


def flat_decision(cell: Cell) -> tuple[str, str, Estimate, Shape]:
    """"|beta| stays flat" read on one curve cell: (verdict, note, the change's estimate, the full
    sample's shape): :func:`flat_decided`, else the change's interval against +-:data:`FLAT_ORDERS`."""
    shape0 = beta_shape(*cell.fits([]), cell.epochs)
    change = estimate([cell], lambda m: beta_shape(*m[0], cell.epochs).change, prepare=_fits)
    decided = flat_decided(change, shape0)
    if decided is not None:
        return decided[0], decided[1], change, shape0
    return side_verdict(change, between(-FLAT_ORDERS, FLAT_ORDERS)), "", change, shape0
