"""Power: the chance that a claim's own rule reaches a decision, simulated from an assumed truth.

Small pure functions, so the same simulation reads an undecided row ("would decide": the seeds at
which its rule, fed the row's own fitted means and noise, decides with >= 50% and >= 80% chance) and
designs a new tier (assumed means per sigma_w, noise, seeds and grid in; P(decision) out):

- :func:`spread_decision_rate`: one configuration's spread against a side (e.g. "sigma_w matters":
  ``greater(0)``; "below 1 pp": ``less(1)``), through :func:`initmem.claims.spreads.spread_arrays`;
- :func:`contrast_decision_rate`: "a's spread exceeds b's", seed-paired, through
  :func:`initmem.claims.spreads.contrast_arrays` (what the claims table's spread contrasts use);
- :func:`mean_decision_rate`: a contrast of seed means (a difference of accuracies), the paired t-interval.

A *decision* is ``reproduced`` or ``not reproduced``. Simulated runs are the fitted means plus
independent normal noise (seed effects cancel in every statistic here: each is built from
differences within a seed). Fixed RNG seeds: the same numbers on every re-analysis.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from initmem.claims.spreads import CONTRAST_METHOD, SPREAD_METHOD, contrast_arrays, residual_sd, spread_arrays
from initmem.claims.verdicts import LEVEL, Cell, Estimate, Side

POWER_SIMS = 400          # simulations per number of seeds ("would decide": Monte Carlo error <= 2.5 pp)
POWER_RNG_SEED = 35_000
MAX_SEEDS = 1000          # beyond this a row reads "more than 1000 seeds"
TARGETS = (0.5, 0.8)
_CHUNK = 2_000_000        # floats per simulated block (bounds memory on 25-value grids)


def side_codes(low: np.ndarray, high: np.ndarray, side: Side) -> np.ndarray:
    """+1 ``reproduced``, -1 ``not reproduced``, 0 otherwise (:func:`initmem.claims.verdicts.verdict`, vectorised)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    ok = np.isfinite(low) & np.isfinite(high)
    rep = ok & (low > side.lo) & (high < side.hi)
    nrep = ok & ((high < side.other_below) | (low > side.hi))
    return np.where(rep, 1, np.where(nrep, -1, 0))


def simulate(means: Sequence[float], sd: float | Sequence[float], seeds: int, n_sims: int,
             rng: np.random.Generator) -> np.ndarray:
    """(n_sims, k, seeds) accuracies (fractions): ``means`` per sigma_w plus normal noise of ``sd``
    (one value, or one per sigma_w: a noise that changes with sigma_w)."""
    m = np.asarray(means, float)
    s = np.broadcast_to(np.asarray(sd, float), m.shape)
    return m[None, :, None] + s[None, :, None] * rng.standard_normal((n_sims, len(m), int(seeds)))


def _blocks(n_sims: int, per_sim: int) -> list[int]:
    size = max(1, _CHUNK // max(per_sim, 1))
    return [min(size, n_sims - i) for i in range(0, n_sims, size)]


def spread_decision_rate(means: Sequence[float], sd: float | Sequence[float], seeds: int, side: Side,
                         n_sims: int = POWER_SIMS, rng_seed: int = POWER_RNG_SEED) -> float:
    """P(decision) of one configuration's spread against ``side`` at ``seeds`` seeds."""
    return float(np.mean(spread_codes(means, sd, seeds, side, n_sims, rng_seed) != 0))


def spread_codes(means, sd, seeds: int, side: Side, n_sims: int = POWER_SIMS, rng_seed: int = POWER_RNG_SEED) -> np.ndarray:
    """The simulated verdict codes (:func:`side_codes`) of a single spread."""
    rng, k = np.random.default_rng(rng_seed), len(means)
    out = []
    for n in _blocks(n_sims, k * k * int(seeds)):
        s = spread_arrays(simulate(means, sd, seeds, n, rng))
        out.append(side_codes(s["low"], s["high"], side))
    return np.concatenate(out)


def jackknife_arrays(full: np.ndarray, loo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the jackknife t-interval (:func:`initmem.claims.verdicts.jackknife_t`), vectorised:
    ``full`` (sims,), ``loo`` (sims, n) the statistic with each seed left out."""
    n = loo.shape[-1]
    se = np.sqrt((n - 1) / n * np.sum((loo - loo.mean(-1, keepdims=True)) ** 2, axis=-1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se
    return full - half, full + half


def contrast_decision_rate(means_a: Sequence[float], means_b: Sequence[float], sd_a: float | Sequence[float],
                           sd_b: float | Sequence[float], seeds: int, side: Side, n_sims: int = POWER_SIMS,
                           rng_seed: int = POWER_RNG_SEED) -> float:
    """P(decision) of "a's spread exceeds b's" against ``side`` at ``seeds`` seeds (the two paired by seed)."""
    rng = np.random.default_rng(rng_seed)
    ends = lambda m, s: (np.asarray(m, float)[[0, -1]], np.broadcast_to(np.asarray(s, float), np.shape(m))[[0, -1]])
    a = simulate(*ends(means_a, sd_a), seeds, n_sims, rng)   # the rule reads the end sigma_w only
    b = simulate(*ends(means_b, sd_b), seeds, n_sims, rng)
    _, low, high = contrast_arrays(a, b)
    return float(np.mean(side_codes(low, high, side) != 0))


def mean_decision_rate(effect: float, sd: float, seeds: int, side: Side, n_sims: int = POWER_SIMS,
                       rng_seed: int = POWER_RNG_SEED) -> float:
    """P(decision) of a contrast of seed means (true value ``effect``, per-seed standard deviation
    ``sd``) against ``side``: the paired t-interval at ``seeds`` seeds."""
    if seeds < 2:
        return 0.0
    rng = np.random.default_rng(rng_seed)
    est = effect + sd / math.sqrt(seeds) * rng.standard_normal(n_sims)
    s = sd * np.sqrt(rng.chisquare(seeds - 1, n_sims) / (seeds - 1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, seeds - 1)) * s / math.sqrt(seeds)
    return float(np.mean(side_codes(est - half, est + half, side) != 0))


def seeds_to_reach(rate: Callable[[int], float], start: int, target: float, max_seeds: int = MAX_SEEDS) -> float:
    """The smallest n >= ``start`` with ``rate(n)`` >= ``target`` (doubling, then bisection: the
    chance of a decision grows with the seeds); inf beyond ``max_seeds``."""
    lo, n = start - 1, max(start, 2)
    while rate(n) < target:
        if n >= max_seeds:
            return math.inf
        lo, n = n, min(2 * n, max_seeds)
    while n - lo > 1:
        mid = (lo + n) // 2
        lo, n = (lo, mid) if rate(mid) >= target else (mid, n)
    return float(n)


def fitted_truth(cell: Cell) -> tuple[np.ndarray, float]:
    """A configuration's fitted means per sigma_w (seed means, fractions) and its noise (the residual
    standard deviation of the seed-blocked model: :func:`initmem.claims.spreads.residual_sd`)."""
    values = cell.values if cell.values.ndim == 2 else cell.values[-1]
    with np.errstate(invalid="ignore"):
        return np.nanmean(values, axis=-1), float(residual_sd(values))


def rate_for(est: Estimate, side: Side, cells: Sequence[Cell], contrast: bool = False) -> Callable[[int], float] | None:
    """The decision rate (a function of seeds) of a row's rule from its own fitted truth: a single
    spread, a spread contrast (``contrast``: :func:`initmem.claims.spreads.contrast_estimate`) or, for a jackknife
    t-interval, a contrast of seed means at the measured effect and per-seed noise. None where the
    row has no noise to simulate."""
    if est.n_seeds < 2 or not (np.isfinite(est.low) and np.isfinite(est.high)):
        return None
    if est.method == SPREAD_METHOD and cells:
        means, sd = fitted_truth(cells[0])
        return (lambda n: spread_decision_rate(means, sd, n, side)) if np.isfinite(sd) else None
    if (contrast or est.method == CONTRAST_METHOD) and len(cells) == 2:
        (ma, sa), (mb, sb) = fitted_truth(cells[0]), fitted_truth(cells[1])
        return (lambda n: contrast_decision_rate(ma, mb, sa, sb, n, side)) if np.isfinite(sa + sb) else None
    if est.method.startswith("t,"):
        sd = (est.high - est.low) / (2 * float(stats.t.ppf(0.5 + LEVEL / 2, est.n_seeds - 1))) * math.sqrt(est.n_seeds)
        return (lambda n: mean_decision_rate(est.effect, sd, n, side)) if sd > 0 else None
    return None


def would_decide(rate: Callable[[int], float] | None, n_seeds: int, max_seeds: int = MAX_SEEDS,
                 source: str = "simulated from the row's fitted means and noise") -> str:
    """'~N seeds for a 50% chance of a decision, ~M for 80%' for an undecided row with ``n_seeds``
    (never <= its own seeds), or why no number is given."""
    if rate is None:
        return ""
    rate = functools.cache(rate)  # both targets search the same seed counts
    need = [seeds_to_reach(rate, n_seeds + 1, t, max_seeds) for t in TARGETS]
    if not math.isfinite(need[0]):
        return f"more than {max_seeds} seeds for a 50% chance of a decision ({source})"
    eighty = f"~{need[1]:.0f}" if math.isfinite(need[1]) else f"more than {max_seeds}"
    return f"~{need[0]:.0f} seeds per configuration for a 50% chance of a decision, {eighty} for 80% ({source})"
