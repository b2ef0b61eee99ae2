"""One configuration's spread over sigma_w (max - min of seed means, the paper's spread) and its
reading against the noise."""

from __future__ import annotations

import math
import warnings

import numpy as np

from initmem.claims.verdicts import LEVEL, NULL_RNG_SEED, Cell, Estimate

# A single spread (max - min over sigma_w of seed means) is positive even when sigma_w does nothing:
# its noise-only reference permutes the sigma_w labels within each seed NULL_PERMUTATIONS times
# (a fixed RNG seed: the same null on every re-analysis). A spread is "nonzero" when its p-value is
# below 1 - LEVEL.
NULL_PERMUTATIONS = 2000
SPREAD_METHOD = (f"observed -/+ the 97.5% quantile of a sigma_w-permutation null within seeds ({NULL_PERMUTATIONS} permutations), "
                 "floored at 0")


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
