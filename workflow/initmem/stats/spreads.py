"""One configuration's spread over sigma_w (max - min of seed means, the paper's spread), read
against its seed noise by textbook tests on seed-paired differences.

Every sigma_w of a configuration is trained on the same seeds (one seed, the same init draws and
data order), so the accuracy at two sigma_w values differs, seed by seed, by the effect of sigma_w
plus noise: a *paired* difference, whatever the noise at each sigma_w. Hence (:func:`spread_arrays`):

- **Whether sigma_w matters** (``p_null``): the two-sided paired t-test (``scipy.stats.ttest_rel``)
  between the grid's end values of sigma_w (its smallest and largest, fixed before seeing the data:
  the paper's accuracy falls with sigma_w across its sweep), df n - 1. It is exact under normal seed
  noise *whatever the variance at each sigma_w* (a null where sigma_w changes only the variance
  gives P(p < 0.05) = 5%), and it has no floor: with 2 sigma_w and 3 seeds a 28 pp effect under
  1.6 pp noise has p ~ 0.002 (a permutation test's p could not fall below 1/(n_sigma!)^(seeds - 1)).
- **How much** (the interval, :data:`SPREAD_METHOD`): the spread is at least the end values'
  |difference| and at most the largest |difference| of any pair, so its interval is
  [|d_ends| - t(0.975, n - 1) se_ends, floored at 0;  max over pairs of |d_ij| + t(0.975, n - 1) se_ij]
  (each side misses with probability <= 2.5%: the lower is one paired t-bound; the upper misses only
  where the one pair that attains the true spread, fixed by the truth, misses its own one-sided bound,
  so no multiplicity correction is due: an intersection-union test, Berger 1982; "the spread is below
  b" needs every pair's two one-sided tests to reject, TOST per pair, as ``statsmodels``'
  ``ttost_paired`` reads one pair), so it covers the true spread at least 95% of the time for any
  means and any variances under normal seed noise; its width is the noise's (t x se), never the
  signal's, and nothing is subtracted from the observed spread (no "corrected" spread: it is biased).
  A spread the paper calls gone ("below 1 pp") is read by that upper end: a true spread at the zone's
  edge reads gone at most 2.5% of the time.
- **Noise-only spread** (``null_mean``): what max - min of the seed means is, on average, when sigma_w
  does nothing: d2(k) x s / sqrt(n), with s the residual standard deviation of the seed-blocked
  additive model accuracy ~ C(sigma_w) + C(seed) (statsmodels' OLS gives the same s: a test) and
  d2(k) the expected range of k standard normals.

**A contrast of two spreads** ("a's spread exceeds b's", seed-paired: :func:`contrast_arrays`) reads
the paper's spread in both cells, max - min of the seed means over the sweep (the same quantity as a
single spread): its effect is spread(a) - spread(b) of the seed means, and its interval brackets the
true spread(a) - spread(b) for any sigma_w profile, monotone or not, the way a single spread's does:

- lower: spread(a) >= D_a (a's drop from the grid's smallest to its largest sigma_w, fixed before
  seeing the data: the paper's accuracy falls with sigma_w) and spread(b) = max over the ordered pairs
  (l, m) of b's sigma_w of the mean of b_l - b_m, so spread(a) - spread(b) >= min over (l, m) of
  mean(D_a - (b_l - b_m)); its bound is the smallest of the paired t lower bounds (one-sided 2.5% each)
  of the per-seed D_a - (b_l - b_m): an intersection-union test, no multiplicity correction;
- upper: spread(a) = max over a's ordered pairs (i, j) of mean(a_i - a_j) and spread(b) >= |D_b| >= s D_b
  for either sign s, so spread(a) - spread(b) <= min over s of max over (i, j) of mean((a_i - a_j) - s D_b);
  its bound is the same with each mean replaced by its paired t upper bound (one-sided 2.5% each; the
  minimum over the two signs misses with probability <= 5% in the worst case, as the drops' rule did).

So "reproduced" (lower > 0) needs a's drop above every seed-paired difference of b, and "not
reproduced" (upper < 0) every seed-paired difference of a below b's drop: neither can be read off
a peak or a dip the end values do not show (a contrast on the end drops alone, D_a against |D_b|,
inverted there: a peak of about 23 pp against a linear fall of about 4 pp read "not reproduced" every time at
16 seeds). With 2 sigma_w the pairs are the ends: the lower bound is the drops' IUT of D_a - D_b and
D_a + D_b; the upper reads |D_a| (a rising a has the spread |D_a|). Paired t (df n - 1, a pair uses the
seeds both cells have) is exact whatever the variances under normal seed noise. The max - min of seed
means is not tested directly: with 25 sigma_w its noise part grows with the run noise, so a
configuration whose sigma_w changes only the noise had the "larger spread" 27% of the time. The
price of reading every pair: a monotone contrast needs more seeds than the drops alone did (at the
decisive tier's grid and noise, 16 seeds, 5.3 against 1.6 pp: decided 46% of the time instead of 62%).
For complete values the bounds come from the seed means and covariance of the 2 k values (each pair's
mean and variance are linear in them); with a missing value, from the pairs themselves: the same numbers.

**Non-monotone profiles are said** (:func:`monotone_test`): a cell whose interior sigma_w mean lies
above both ends (a peak) or below both (a dip) has a spread its end-to-end drop does not show. For
every interior sigma_w i, an intersection-union of the two paired one-sided t-tests x_i - x_first and
x_i - x_last (``scipy.stats.ttest_rel``'s statistic, NaN-aware; the IUT's p is the larger of the two),
in each direction, Bonferroni over the 2 (k - 2) tests, familywise :data:`MONOTONE_LEVEL` per cell (the
combination is hand-written: no library tests monotonicity against an unknown profile). A contrast's
``Estimate.non_monotone`` names such a cell and its sigma_w, and the row prints it. The verdict does not
need it (the bounds above hold for any profile), but a reader does: such a row is decided only where
a's drop alone exceeds every difference of b, or every difference of a stays below b's drop.

**The tests behind the intervals** (:func:`spread_test`, :func:`contrast_test`): each estimate carries,
as data, the one-sided paired t-tests its interval ends invert and how they combine (a union for the
spread's low end and the contrast's two signs, an intersection-union test over pairs elsewhere), so
a decision's p is the test's own (:mod:`initmem.stats.multiplicity`).

The error rates of every rule here are measured by ``benchmarks/verdict_calibration.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import numpy as np
from scipy import integrate, stats

from initmem.stats.verdicts import ALL, ANY, CONTRAST_TEST, LEVEL, SPREAD_TEST, Cell, Combined, Estimate, OneSided, Test

MONOTONE_LEVEL = 1 - LEVEL  # familywise per cell: the chance a monotone profile is called non-monotone
CONTRAST_METHOD = ("max - min in both cells: paired t, a's end drop minus each difference of b (lower, intersection-union), "
                   "each difference of a minus b's end drop (upper), df n - 1")
SPREAD_METHOD = ("paired t on the end sigma_w (lower, df n - 1), largest seed-paired difference + its t half-width "
                 "(upper, intersection-union over the pairs), floored at 0")


def spread_pp(means: np.ndarray) -> np.ndarray:
    """max - min over sigma_w of the seed mean, in percentage points (the paper's spread)."""
    with warnings.catch_warnings():  # a replicate without any value stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return 100 * (np.nanmax(means, -1) - np.nanmin(means, -1))


@functools.cache
def expected_range(k: int) -> float:
    """d2(k): the expected range (max - min) of k independent standard normals (0 for k < 2)."""
    if k < 2:
        return 0.0
    f = lambda x: 1 - stats.norm.sf(x) ** k - stats.norm.cdf(x) ** k
    return float(integrate.quad(f, -np.inf, np.inf)[0])


def residual_sd(values: np.ndarray) -> np.ndarray:
    """Residual standard deviation of the additive seed-blocked model value ~ C(sigma_w) + C(seed)
    over ``values[..., sigma, seed]`` (seeds with a missing value left out; NaN below 2 x 2),
    df (k - 1)(n - 1): the two-way ANOVA's error term, as statsmodels' OLS gives it."""
    values = np.asarray(values, float)
    keep = np.isfinite(values).all(axis=-2)
    if values.ndim == 2:
        values = values[:, keep]
    elif not keep.all():
        raise ValueError("residual_sd: batched values must be complete (no NaN)")
    k, n = values.shape[-2:]
    if k < 2 or n < 2:
        return np.full(values.shape[:-2], np.nan)
    resid = values - values.mean(-1, keepdims=True) - values.mean(-2, keepdims=True) + values.mean((-2, -1), keepdims=True)
    return np.sqrt((resid**2).sum((-2, -1)) / ((k - 1) * (n - 1)))


def _paired(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, standard error, df) of the seed-paired difference of every pair of sigma_w rows of
    ``values[..., sigma, seed]``, shape (..., k, k); NaN-aware (a pair uses the seeds both have)."""
    d = values[..., :, None, :] - values[..., None, :, :]
    ok = np.isfinite(d)
    n = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.where(ok, d, 0.0).sum(-1) / n
        var = np.where(ok, (d - mean[..., None]) ** 2, 0.0).sum(-1) / (n - 1)
        se = np.sqrt(var / n)
    return mean, np.where(n >= 2, se, np.nan), n - 1


def spread_arrays(values: np.ndarray) -> dict:
    """The spread's statistics for ``values[..., sigma, seed]`` (fractions; any leading batch axes,
    e.g. simulations): ``effect`` (pp), ``low`` and ``high`` (its interval, pp), ``p`` (paired t-test of
    the end sigma_w values) and ``null_mean`` (the noise-only spread, pp). See the module docstring."""
    values = np.asarray(values, float)
    k = values.shape[-2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        effect = spread_pp(np.nanmean(values, axis=-1))
    mean, se, df = _paired(100 * values)
    d_end, se_end, df_end = np.abs(mean[..., 0, -1]), se[..., 0, -1], df[..., 0, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        t_end = np.where(se_end > 0, d_end / se_end, np.where(d_end > 0, np.inf, 0.0))
        low = np.maximum(d_end - stats.t.ppf(0.5 + LEVEL / 2, np.maximum(df_end, 1)) * se_end, 0.0)
        upper = np.abs(mean) + stats.t.ppf(0.5 + LEVEL / 2, np.maximum(df, 1)) * se
        off = ~np.eye(k, dtype=bool)
        high = np.nanmax(np.where(off, upper, -np.inf), axis=(-2, -1)) if k > 1 else np.zeros(values.shape[:-2])
    p = np.where(df_end >= 1, 2 * stats.t.sf(t_end, np.maximum(df_end, 1)), np.nan)
    bad = ~(df_end >= 1)
    null = expected_range(k) * 100 * residual_sd(values) / math.sqrt(max(values.shape[-1], 1))
    return {"effect": effect, "low": np.where(bad, np.nan, low), "high": np.where(bad, np.nan, high), "p": p, "null_mean": null}


def _t_bounds(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) of the t-interval at :data:`LEVEL` over the last axis (df n - 1, NaN-aware:
    the values present; NaN below 2)."""
    ok = np.isfinite(x)
    n = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, x, 0.0).sum(-1) / n
        sd = np.sqrt(np.where(ok, (x - mean[..., None]) ** 2, 0.0).sum(-1) / (n - 1))
        half = stats.t.ppf(0.5 + LEVEL / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
    half = np.where(n >= 2, half, np.nan)
    return mean, mean - half, mean + half


def _pairs(v: np.ndarray) -> np.ndarray:
    """(..., k (k - 1), n): v_i - v_j per seed for every ordered pair i != j of ``v[..., k, n]``."""
    k = v.shape[-2]
    i, j = np.nonzero(~np.eye(k, dtype=bool))
    return v[..., i, :] - v[..., j, :]


def _pair_bounds(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of :func:`contrast_arrays` from the per-seed pairs themselves (NaN-aware: a pair uses the seeds it has)."""
    da, db = a[..., 0, :] - a[..., -1, :], b[..., 0, :] - b[..., -1, :]
    _, low, _ = _t_bounds(da[..., None, :] - _pairs(b))
    pa = _pairs(a)
    high = np.minimum(*(np.max(_t_bounds(pa - sign * db[..., None, :])[2], axis=-1) for sign in (1.0, -1.0)))
    return np.min(low, axis=-1), high


def _moment_bounds(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same (low, high) for complete values, from the seed means and covariance of the 2 k values
    (:func:`moment_bounds`)."""
    n = a.shape[-1]
    x = np.concatenate([a, b], axis=-2)
    mu = x.mean(-1)
    xc = x - mu[..., None]
    return moment_bounds(mu, xc @ np.swapaxes(xc, -1, -2) / (n - 1), n)


def moment_bounds(mu: np.ndarray, C: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of :func:`contrast_arrays` from the seed means ``mu`` (..., 2 k: a's k values, then
    b's) and their sample covariance ``C`` (..., 2 k, 2 k) over ``n`` complete seeds: each pair's mean
    and variance are linear in them (O(k^2) per replicate instead of O(k^2 n)), so a simulation can draw
    the means and the covariance themselves."""
    k = mu.shape[-1] // 2
    caa, cbb, cab = C[..., :k, :k], C[..., k:, k:], C[..., :k, k:]
    ma, mb = mu[..., :k], mu[..., k:]
    dia, dib = np.diagonal(caa, 0, -2, -1), np.diagonal(cbb, 0, -2, -1)
    m_da, m_db = ma[..., 0] - ma[..., -1], mb[..., 0] - mb[..., -1]
    v_da = caa[..., 0, 0] + caa[..., -1, -1] - 2 * caa[..., 0, -1]
    v_db = cbb[..., 0, 0] + cbb[..., -1, -1] - 2 * cbb[..., 0, -1]
    g = cab[..., 0, :] - cab[..., -1, :]            # cov(D_a, b_l)
    h = cab[..., :, 0] - cab[..., :, -1]            # cov(a_i, D_b)
    pair_var = lambda d, c: d[..., :, None] + d[..., None, :] - 2 * c   # var(v_i - v_j)
    off = ~np.eye(k, dtype=bool)
    t = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) / np.sqrt(n)
    # lower: D_a - (b_l - b_m) over the ordered pairs (l, m)
    mean = m_da[..., None, None] - (mb[..., :, None] - mb[..., None, :])
    var = v_da[..., None, None] + pair_var(dib, cbb) - 2 * (g[..., :, None] - g[..., None, :])
    low = np.min(np.where(off, mean - t * np.sqrt(np.maximum(var, 0.0)), np.inf), axis=(-2, -1))
    # upper: (a_i - a_j) - s D_b over the ordered pairs (i, j), the smaller over the two signs s
    highs = []
    for sign in (1.0, -1.0):
        mean = (ma[..., :, None] - ma[..., None, :]) - sign * m_db[..., None, None]
        var = pair_var(dia, caa) + v_db[..., None, None] - 2 * sign * (h[..., :, None] - h[..., None, :])
        highs.append(np.max(np.where(off, mean + t * np.sqrt(np.maximum(var, 0.0)), -np.inf), axis=(-2, -1)))
    return low, np.minimum(*highs)


def contrast_arrays(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(effect, low, high) in pp of spread(a) - spread(b) (max - min of the seed means, the paper's
    spread) for ``a``, ``b`` of shape (..., k, n) with seed j of ``a`` paired with seed j of ``b``:
    see the module docstring."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        effect = spread_pp(np.nanmean(a, -1)) - spread_pp(np.nanmean(b, -1))
    a, b = 100 * np.asarray(a, float), 100 * np.asarray(b, float)
    complete = np.isfinite(a).all() and np.isfinite(b).all() and a.shape[-1] >= 2
    low, high = _moment_bounds(a, b) if complete else _pair_bounds(a, b)
    return effect, low, high


def _paired_t(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, df) of the one-sample t-test of ``d`` over its last axis, NaN-aware (``scipy.stats.ttest_rel``'s
    statistic on the seed-paired differences; df n - 1, NaN below 2 values)."""
    ok = np.isfinite(d)
    n = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, d, 0.0).sum(-1) / n
        sd = np.sqrt(np.where(ok, (d - mean[..., None]) ** 2, 0.0).sum(-1) / (n - 1))
        t = np.where(sd > 0, mean / (sd / np.sqrt(n)), np.sign(mean) * np.inf)
    return np.where(n >= 2, t, np.nan), n - 1.0


def monotone_test(values: np.ndarray) -> dict:
    """Is a sigma_w profile non-monotone? ``values[..., sigma, seed]`` (any leading batch axes) in;
    ``p`` (the Bonferroni-adjusted p over the 2 (k - 2) interior tests, 1 where k < 3), ``where`` (the
    interior sigma_w index of the smallest p), ``above`` (True: its mean above both ends; False: below)
    and ``detected`` (p < :data:`MONOTONE_LEVEL`). See the module docstring."""
    values = np.asarray(values, float)
    k, shape = values.shape[-2], values.shape[:-2]
    if k < 3:
        ones = np.ones(shape)
        return {"p": ones, "where": np.zeros(shape, int), "above": np.ones(shape, bool), "detected": ones < 0}
    inner = values[..., 1:-1, :]
    t0, df0 = _paired_t(inner - values[..., :1, :])      # interior minus the first sigma_w, per interior point
    t1, df1 = _paired_t(inner - values[..., -1:, :])     # ... minus the last
    with np.errstate(invalid="ignore"):
        up = np.maximum(stats.t.sf(t0, np.maximum(df0, 1)), stats.t.sf(t1, np.maximum(df1, 1)))      # above both ends (IUT)
        down = np.maximum(stats.t.cdf(t0, np.maximum(df0, 1)), stats.t.cdf(t1, np.maximum(df1, 1)))  # below both ends
    both = np.concatenate([np.nan_to_num(up, nan=1.0), np.nan_to_num(down, nan=1.0)], axis=-1)
    best = np.argmin(both, axis=-1)
    p = np.minimum(1.0, 2 * (k - 2) * np.take_along_axis(both, best[..., None], -1)[..., 0])
    return {"p": p, "where": 1 + best % (k - 2), "above": best < (k - 2), "detected": p < MONOTONE_LEVEL}


def monotone_note(values: np.ndarray, sigmas: np.ndarray, label: str) -> str:
    """Why a contrast cannot read ``label``'s drop as its spread, or "" when its profile is not detected non-monotone."""
    m = monotone_test(values)
    if not bool(m["detected"]):
        return ""
    k = values.shape[-2]
    return (f"{label}: its sigma_w profile is not monotone (sigma_w {float(sigmas[int(m['where'])]):g} lies "
            f"{'above' if bool(m['above']) else 'below'} both ends, p = {float(m['p']):.2g}, paired one-sided t-tests, "
            f"Bonferroni over {2 * (k - 2)}): the end-to-end drop is not its spread, the contrast reads every pair")


def contrast_estimate(cells: list[Cell]) -> Estimate:
    """"spread(cells[0]) exceeds spread(cells[1])" on the seeds both have (:func:`contrast_arrays`; the
    cells matched on sigma_w and seeds; a seed enters where it has both end values in both cells), each
    cell's profile tested on the same seeds (:func:`monotone_test`: ``non_monotone`` says which is not).
    Fewer than 2 seeds: no interval."""
    a, b = cells
    va, vb = paired_profiles(cells)
    ok = np.isfinite(va[[0, -1]]).all(0) & np.isfinite(vb[[0, -1]]).all(0)
    n_runs, n = a.n_runs + b.n_runs, int(ok.sum())
    if n < 2:
        return Estimate(math.nan, math.nan, math.nan, "none: 1 seed", n_runs, n, np.array([math.nan]))
    effect, low, high = contrast_arrays(va[:, ok], vb[:, ok])
    est = Estimate(float(effect), float(low), float(high), CONTRAST_METHOD, n_runs, n, np.array([float(effect)]),
                   test=contrast_test(va[:, ok], vb[:, ok]))
    notes = [monotone_note(v[:, ok], c.sigmas, c.label or name) for v, c, name in ((va, a, "the first cell"), (vb, b, "the second cell"))]
    est.non_monotone = "; ".join(x for x in notes if x)
    return est


def share_cells(cells: list[Cell], share: float) -> list[Cell]:
    """The two cells with the first one's values times ``share``: read by :func:`contrast_estimate` (or a
    contrast's power), "spread(cells[1]) is below ``share`` x spread(cells[0])", since max - min scales with
    its values and the seed pairing and every paired test are unchanged; its interval bounds
    share x spread(a) - spread(b), in pp."""
    a, b = cells
    return [dataclasses.replace(a, values=share * np.asarray(a.values, float)), b]


def paired_profiles(cells: list[Cell]) -> tuple[np.ndarray, np.ndarray]:
    """The two cells' (sigma, seed) values (the last epoch of a curve cell) on the seeds both have, in one order."""
    a, b = cells
    last = lambda c: c.values if c.values.ndim == 2 else c.values[-1]
    shared = sorted(set(a.seeds.tolist()) & set(b.seeds.tolist()))
    ia = [int(np.flatnonzero(a.seeds == s)[0]) for s in shared]
    ib = [int(np.flatnonzero(b.seeds == s)[0]) for s in shared]
    return last(a)[:, ia], last(b)[:, ib]


def spread_test(values: np.ndarray) -> Test:
    """The test :func:`spread_arrays`' interval inverts, for one cell's ``values[sigma, seed]`` (fractions;
    the quantity in pp): its low end is the paired t-test of the end sigma_w's difference d read as |d|,
    a two-sided event (d above b or -d above b: a union, so twice the smaller one-sided p, the two-sided
    p at b = 0); its high end needs every seed-paired difference below b, each read at alpha (an
    intersection-union test over the k (k - 1) ordered pairs: the largest p, no multiplicity correction)."""
    mean, se, df = _paired(100 * np.asarray(values, float))
    k = mean.shape[-1]
    end = (float(mean[0, -1]), float(se[0, -1]), float(df[0, -1]))
    above = Combined(ANY, (OneSided(end[0], end[1], end[2]), OneSided(-end[0], end[1], end[2])))
    pairs = [OneSided(float(mean[i, j]), float(se[i, j]), float(df[i, j]))
             for i in range(k) for j in range(k) if i != j and np.isfinite(mean[i, j]) and np.isfinite(se[i, j])]
    return Test(SPREAD_TEST, above, Combined(ALL, tuple(pairs)))


def _t_parts(x: np.ndarray, share: int = 1) -> tuple[OneSided, ...]:
    """One paired t-test per row of ``x[m, seed]`` (NaN-aware: the seeds a row has; df n - 1)."""
    out = []
    for row in np.asarray(x, float):
        v = row[np.isfinite(row)]
        if len(v) >= 2:
            out.append(OneSided(float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))), float(len(v) - 1), share))
    return tuple(out)


def contrast_test(a: np.ndarray, b: np.ndarray) -> Test:
    """The test :func:`contrast_arrays`' interval inverts for ``a``, ``b`` (k, n) seed-paired (fractions;
    the quantity in pp): its low end is an intersection-union test over b's ordered pairs (l, m) of the
    paired t-tests of D_a - (b_l - b_m) (the largest p); its high end, for either sign s of b's drop, an
    intersection-union test over a's ordered pairs (i, j) of (a_i - a_j) - s D_b, the smaller over the two
    signs doubled (a union of two: Bonferroni)."""
    a, b = 100 * np.asarray(a, float), 100 * np.asarray(b, float)
    da, db = a[0] - a[-1], b[0] - b[-1]
    above = Combined(ALL, _t_parts(da[None, :] - _pairs(b)))
    below = Combined(ANY, tuple(Combined(ALL, _t_parts(_pairs(a) - sign * db[None, :])) for sign in (1.0, -1.0)))
    return Test(CONTRAST_TEST, above, below)


def spread_estimate(cell: Cell) -> Estimate:
    """One configuration's spread with its interval, its p-value against "sigma_w does nothing" and
    its noise-only mean (:func:`spread_arrays`; the last epoch of a curve cell). One seed: no interval."""
    values = cell.values if cell.values.ndim == 2 else cell.values[-1]
    observed = float(spread_pp(np.nanmean(values, axis=-1)[None])[0]) if np.isfinite(values).any() else math.nan
    n_runs, n_seeds = cell.n_runs, cell.n_seeds
    if n_seeds < 2 or not math.isfinite(observed) or values.shape[0] < 2:
        return Estimate(observed, math.nan, math.nan, "none: 1 seed" if n_seeds < 2 else SPREAD_METHOD, n_runs, n_seeds,
                        np.array([observed]))
    s = spread_arrays(values)
    est = Estimate(observed, float(s["low"]), float(s["high"]), SPREAD_METHOD, n_runs, n_seeds, np.array([observed]),
                   test=spread_test(values))
    est.null_mean, est.p_null = float(s["null_mean"]), float(s["p"])
    return est

