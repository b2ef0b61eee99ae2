"""The seeds that would decide an undecided claim."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

from initmem.claims.spreads import SPREAD_METHOD
from initmem.claims.verdicts import LEVEL, Estimate, Side

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
