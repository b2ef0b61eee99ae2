"""Power: the chance that a claim's own rule reaches a decision, simulated from an assumed truth.

Small pure functions, so the same simulation reads an undecided row ("would decide": the seeds at
which its rule, fed the row's own fitted means and noise, decides with >= 50% and >= 80% chance) and
designs a new tier (assumed means per sigma_w, noise, seeds and grid in; P(decision) out):

- :func:`spread_truth_rate` (a row's or a design's per-seed covariance) and :func:`spread_decision_rate`
  (means and independent noise per sigma_w: the calibrations' form): one configuration's spread against a
  side (e.g. "sigma_w matters": ``greater(0)``; "below 1 pp": ``less(1)``), through
  :func:`initmem.stats.spreads.spread_arrays`;
- :func:`contrast_decision_rate` / :func:`paired_decision_rate`: "a's spread exceeds b's", seed-paired,
  through :func:`initmem.stats.spreads.contrast_arrays` (what the claims
  table's spread contrasts use);
- :func:`mean_decision_rate`: a contrast of seed means (a difference of accuracies), the paired t-interval.

A *decision* is ``reproduced`` or ``not reproduced``. Every rate of a row is post-hoc: it assumes the
true effect equals the row's estimate, and :func:`would_decide` says so.

**Pairing.** One seed gives the same init draws and data order at every sigma_w *and in every
configuration*, so a seed's runs correlate within a cell and across the two cells of a contrast
(the committed tiers' per-seed drops D_a, D_b correlate 0.20-0.65). Within one cell a seed effect
shared by every sigma_w cancels in every statistic (each is built from differences within a seed), but
the noise of those differences is not one pooled sd: runs at the grid's ends are noisier, and a seed's
differences correlate. So every row's rate is simulated from its own per-seed vectors
(:func:`profile_truth`): the within-cell differences from the first sigma_w of its one cell (a spread:
:func:`cell_truth`) or of both (a contrast: :func:`paired_truth`: all the rule reads), multivariate
normal with their mean over seeds and their sample covariance across seeds, used as measured where it is
full rank (seeds - 1 >= arms (k - 1): 7 seeds on 4 sigma_w for a contrast) and, where it is not, shrunk
towards the independent-noise model (each cell's residual sd, the cells independent) with the
Ledoit-Wolf / Schaefer-Strimmer intensity (:func:`shrinkage`, hand-written: the target is a structured
one no library offers), which makes it positive definite. (Shrinking a full-rank one as well would
undo the pairing: at 16 seeds the intensity is ~0.9 and the rate falls back to the independent one.)
The planner passes a measured source's per-seed vectors moved onto its planned grid (:mod:`initmem.planner.design`);
the calibrations pass means and sd with an assumed correlation ``corr`` of one seed's runs across the two
configurations (:func:`contrast_decision_rate`).
Fixed RNG seeds: the same numbers on every re-analysis.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from initmem.stats.spreads import moment_bounds, paired_profiles, residual_sd, spread_arrays
from initmem.stats.verdicts import CONTRAST_TEST, LEVEL, SPREAD_TEST, T_TEST, Cell, Estimate, Side

POWER_SIMS = 400          # simulations per number of seeds ("would decide": Monte Carlo error <= 2.5 pp)
PAIRED_SIMS = 1000        # a contrast's: its seeds' moments are drawn directly, at a cost that does not grow with seeds (<= 1.6 pp)
POWER_RNG_SEED = 35_000
MAX_SEEDS = 1000          # beyond this a row reads "more than 1000 seeds"
TARGETS = (0.5, 0.8)
POST_HOC = "if the true effect equals the estimate"  # every would-decide rate is post-hoc power
_CHUNK = 2_000_000        # floats per simulated block (bounds memory on 25-value grids)


def side_codes(low: np.ndarray, high: np.ndarray, side: Side) -> np.ndarray:
    """+1 ``reproduced``, -1 ``not reproduced``, 0 otherwise (:func:`initmem.stats.verdicts.verdict`, vectorised)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    ok = np.isfinite(low) & np.isfinite(high)
    rep = ok & (low > side.agree_above) & (high < side.hi)
    nrep = ok & (((side.other_from <= low) & (high < side.other_below)) | (low > side.hi))
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
    """P(decision) of one configuration's spread against ``side`` at ``seeds`` seeds: independent run
    noise is right for within-configuration pairing where a seed's effect is shared by every sigma_w
    (it cancels in every statistic of the rule; see the module docstring)."""
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
    """(low, high) of the jackknife t-interval (:func:`initmem.stats.verdicts.jackknife_t`), vectorised:
    ``full`` (sims,), ``loo`` (sims, n) the statistic with each seed left out."""
    n = loo.shape[-1]
    se = np.sqrt((n - 1) / n * np.sum((loo - loo.mean(-1, keepdims=True)) ** 2, axis=-1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se
    return full - half, full + half


def centring(k: int, arms: int = 2) -> np.ndarray:
    """(arms (k - 1), arms k): the cells' profiles (k sigma_w each, one cell after the other) to their
    differences from their first sigma_w (a seed effect shared by a cell's sigma_w cancels; every spread
    and contrast statistic reads these)."""
    one = np.hstack([-np.ones((k - 1, 1)), np.eye(k - 1)])
    return np.kron(np.eye(arms), one)


def shrinkage(y: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, float]:
    """The sample covariance of ``y`` (seeds, dims) shrunk towards ``target``: (1 - lambda) S + lambda T
    with lambda = sum Var(s_ij) / sum (s_ij - t_ij)^2 clipped to [0, 1] (Ledoit and Wolf 2003; Schaefer
    and Strimmer 2005, the target held fixed), and lambda."""
    n = y.shape[0]
    c = y - y.mean(0)
    w = c[:, :, None] * c[:, None, :]
    S = w.sum(0) / (n - 1)
    var_s = n / (n - 1) ** 3 * ((w - w.mean(0)) ** 2).sum(0)
    gap = float(((S - target) ** 2).sum())
    lam = 1.0 if gap <= 0 else float(np.clip(var_s.sum() / gap, 0.0, 1.0))
    return (1 - lam) * S + lam * target, lam


def profile_truth(x: np.ndarray, arms: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The fitted truth of ``arms`` cells' seed-paired profiles ``x`` (arms k, seeds; a cell's k sigma_w
    after the other's): (mean, covariance, k) of each seed's differences from the first sigma_w of each
    cell (:func:`centring`; the seeds complete in every cell), the sample covariance where it is full rank
    (seeds - 1 >= arms (k - 1)), shrunk towards the independent-noise model (each cell's residual sd) where
    it is not (:func:`shrinkage`). None below 2 complete seeds or 2 sigma_w."""
    k = x.shape[0] // arms
    x = x[:, np.isfinite(x).all(0)]
    n = x.shape[1]
    if k < 2 or n < 2:
        return None
    C = centring(k, arms)
    y = (C @ x).T
    if n - 1 >= y.shape[1]:   # the sample covariance is full rank: used as measured
        return y.mean(0), np.atleast_2d(np.cov(y, rowvar=False)), k
    sd = [float(residual_sd(x[i * k:(i + 1) * k])) for i in range(arms)]
    target = C @ np.diag(np.repeat(np.square(sd), k)) @ C.T
    cov, _ = shrinkage(y, target)
    return y.mean(0), cov, k


def paired_truth(cells: Sequence[Cell]) -> tuple[np.ndarray, np.ndarray, int] | None:
    """A contrast row's fitted truth (:func:`profile_truth` of both cells' values on the seeds both have)."""
    va, vb = paired_profiles(list(cells))
    if va.shape[0] != vb.shape[0]:
        return None
    return profile_truth(np.vstack([va, vb]), 2)


def cell_truth(cell: Cell) -> tuple[np.ndarray, np.ndarray, int] | None:
    """A single spread's fitted truth: :func:`profile_truth` of one cell (the last epoch of a curve cell),
    its noise per sigma_w and across sigma_w as its seeds measured it, not one pooled sd."""
    values = cell.values if cell.values.ndim == 2 else cell.values[-1]
    return profile_truth(np.asarray(values, float), 1)


def spread_truth_rate(mean: np.ndarray, cov: np.ndarray, k: int, seeds: int, side: Side, n_sims: int = POWER_SIMS,
                      rng_seed: int = POWER_RNG_SEED) -> float:
    """P(decision) of one configuration's spread against ``side`` at ``seeds`` seeds, each seed's
    differences from the first sigma_w drawn from N(``mean``, ``cov``) (:func:`cell_truth`; a seed
    effect shared by every sigma_w cancels in the rule, so only these are drawn)."""
    return float(np.mean(spread_truth_codes(mean, cov, k, seeds, side, n_sims, rng_seed) != 0))


def spread_truth_codes(mean: np.ndarray, cov: np.ndarray, k: int, seeds: int, side: Side, n_sims: int = POWER_SIMS,
                       rng_seed: int = POWER_RNG_SEED) -> np.ndarray:
    """The simulated verdict codes (:func:`side_codes`) of :func:`spread_truth_rate`."""
    if seeds < 2:
        return np.zeros(n_sims, int)
    rng, root = np.random.default_rng(rng_seed), _sym_root(cov)
    embed = _embedding(k, 1)
    out = []
    for m in _blocks(n_sims, k * k * int(seeds)):
        y = np.asarray(mean, float)[None, :, None] + root @ rng.standard_normal((m, k - 1, int(seeds)))
        s = spread_arrays(embed @ y)
        out.append(side_codes(s["low"], s["high"], side))
    return np.concatenate(out)


def _sym_root(cov: np.ndarray) -> np.ndarray:
    """The symmetric square root of ``cov``: unique, so the draws are the same on every machine (an
    eigenvector basis of near-equal eigenvalues is not: LAPACK builds differ, and so would the simulated rates)."""
    vals, vecs = np.linalg.eigh(np.asarray(cov, float))
    return (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T


def _seed_moments(mean: np.ndarray, root: np.ndarray, seeds: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``m`` draws of the seed mean (m, D) and sample covariance (m, D, D) of ``seeds`` seeds drawn
    from N(``mean``, ``root`` root^T): the mean N(mean, cov / seeds) and, independent of it, the
    covariance Wishart(cov, seeds - 1) / (seeds - 1) (Bartlett's decomposition where seeds - 1 >= D,
    else the product of seeds - 1 normal vectors): the same distribution as computing them from drawn
    seeds, at a cost that does not grow with the seeds."""
    D, df = len(mean), int(seeds) - 1
    mu = np.asarray(mean, float) + rng.standard_normal((m, D)) @ root.T / math.sqrt(seeds)
    if df >= D:
        A = rng.standard_normal((m, D, D)) * np.tri(D, k=-1)
        A[:, np.arange(D), np.arange(D)] = np.sqrt(rng.chisquare(df - np.arange(D), (m, D)))
    else:
        A = rng.standard_normal((m, D, df))
    W = root @ A
    return mu, W @ np.swapaxes(W, -1, -2) / df


def paired_decision_rate(mean: np.ndarray, cov: np.ndarray, k: int, seeds: int, side: Side, n_sims: int = PAIRED_SIMS,
                         rng_seed: int = POWER_RNG_SEED) -> float:
    """P(decision) of "a's spread exceeds b's" (:func:`initmem.stats.spreads.contrast_arrays`, as the
    row reads it) at ``seeds`` seeds, each seed's within-cell differences (:func:`centring`) drawn from
    N(``mean``, ``cov``) (:func:`paired_truth`). The rule reads the seeds through their mean and sample
    covariance only, so those are drawn directly (:func:`_seed_moments`)."""
    if seeds < 2:
        return 0.0
    rng = np.random.default_rng(rng_seed)
    root, embed = _sym_root(cov), _embedding(k)
    out = []
    for m in _blocks(n_sims, 8 * (2 * k) ** 2):
        mu, S = _seed_moments(mean, root, seeds, m, rng)
        low, high = moment_bounds(100 * mu @ embed.T, 1e4 * embed @ S @ embed.T, int(seeds))
        out.append(side_codes(low, high, side))
    return float(np.mean(np.concatenate(out) != 0))


def _embedding(k: int, arms: int = 2) -> np.ndarray:
    """(arms k, arms (k - 1)): the differences from each cell's first sigma_w (:func:`centring`) back to the
    cells' profiles with that first value at 0 (the spread and contrast rules read only differences within a cell)."""
    one = np.vstack([np.zeros((1, k - 1)), np.eye(k - 1)])
    return np.kron(np.eye(arms), one)


def contrast_decision_rate(means_a: Sequence[float], means_b: Sequence[float], sd_a: float | Sequence[float],
                           sd_b: float | Sequence[float], seeds: int, side: Side, n_sims: int = PAIRED_SIMS,
                           rng_seed: int = POWER_RNG_SEED, corr: float = 0.0) -> float:
    """P(decision) of "a's spread exceeds b's" against ``side`` at ``seeds`` seeds (the two paired by
    seed): means and run noise per sigma_w of each cell, and ``corr``, the correlation of one seed's
    runs at one sigma_w across the two configurations (their drops then correlate by ``corr`` too)."""
    ma, mb = np.asarray(means_a, float), np.asarray(means_b, float)
    k = len(ma)
    sa, sb = np.broadcast_to(np.asarray(sd_a, float), (k,)), np.broadcast_to(np.asarray(sd_b, float), (k,))
    raw = np.diag(np.concatenate([sa, sb]) ** 2)
    raw[np.arange(k), k + np.arange(k)] = raw[k + np.arange(k), np.arange(k)] = corr * sa * sb
    C = centring(k)
    return paired_decision_rate(C @ np.concatenate([ma, mb]), C @ raw @ C.T, k, seeds, side, n_sims, rng_seed)


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
    """The smallest n >= ``start`` with ``rate(n)`` >= ``target`` (:func:`seeds_where`); inf beyond ``max_seeds``."""
    return seeds_where(lambda n: rate(n) >= target, start, max_seeds)


def seeds_where(enough: Callable[[int], bool], start: int, max_seeds: int = MAX_SEEDS) -> float:
    """The smallest n >= ``start`` where ``enough(n)`` (doubling, then bisection: the chance of a decision
    grows with the seeds); inf beyond ``max_seeds``."""
    lo, n = start - 1, max(start, 2)
    while not enough(n):
        if n >= max_seeds:
            return math.inf
        lo, n = n, min(2 * n, max_seeds)
    while n - lo > 1:
        mid = (lo + n) // 2
        lo, n = (lo, mid) if enough(mid) else (mid, n)
    return float(n)


def rate_for(est: Estimate, side: Side, cells: Sequence[Cell], contrast: bool = False) -> Callable[[int], float] | None:
    """The decision rate (a function of seeds) of a row's rule from its own fitted truth: a single
    spread, a spread contrast (``contrast``: :func:`initmem.stats.spreads.contrast_estimate`, simulated from
    the seeds' own pairing across the two cells: :func:`paired_truth`) or, for a jackknife
    t-interval, a contrast of seed means at the measured effect and per-seed noise. None where the
    row has no noise to simulate."""
    if est.n_seeds < 2 or est.test is None or not (np.isfinite(est.low) and np.isfinite(est.high)):
        return None
    family = est.test.family
    if family == SPREAD_TEST and cells:
        truth = cell_truth(cells[0])
        if truth is None or not np.isfinite(truth[1]).all():
            return None
        mean, cov, k = truth
        return lambda n: spread_truth_rate(mean, cov, k, n, side)
    if (contrast or family == CONTRAST_TEST) and len(cells) == 2:
        truth = paired_truth(cells)
        if truth is None or not np.isfinite(truth[1]).all():
            return None
        mean, cov, k = truth
        return lambda n: paired_decision_rate(mean, cov, k, n, side)
    if family == T_TEST:
        sd = est.test.above.se * math.sqrt(est.n_seeds)   # the per-seed sd behind the t-test's standard error
        return (lambda n: mean_decision_rate(est.effect, sd, n, side)) if sd > 0 else None
    return None


def would_decide(rate: Callable[[int], float] | None, n_seeds: int, max_seeds: int = MAX_SEEDS,
                 source: str = "simulated from the row's fitted means and seed-paired noise") -> str:
    """'~N seeds for a 50% chance of a decision, ~M for 80%' for an undecided row with ``n_seeds``
    (never <= its own seeds), or why no number is given; every text says it is post-hoc (:data:`POST_HOC`)."""
    if rate is None:
        return ""
    rate = functools.cache(rate)  # both targets search the same seed counts
    source = f"{POST_HOC}, {source}"
    need = [seeds_to_reach(rate, n_seeds + 1, t, max_seeds) for t in TARGETS]
    if not math.isfinite(need[0]):
        return f"more than {max_seeds} seeds for a 50% chance of a decision ({source})"
    eighty = f"~{need[1]:.0f}" if math.isfinite(need[1]) else f"more than {max_seeds}"
    return f"~{need[0]:.0f} seeds per configuration for a 50% chance of a decision, {eighty} for 80% ({source})"


def seeds_for_half(text: str) -> int | None:
    """The seeds for a 50% chance of a decision that a "would decide" text states (:func:`would_decide`'s, or a |beta|
    shape's "~N seeds at this sigma_w grid"); None where it states none ("more than N seeds"): the one reader of that format."""
    found = re.search(r"~(\d+) seeds", text)
    return int(found.group(1)) if found else None
