"""Cells, seed intervals, the regime and the verdict words every claim shares.

The statistics of one concern live beside this module: a single spread and spread contrasts in
:mod:`initmem.stats.spreads`, |beta(t)| shapes in :mod:`initmem.stats.shapes`, the seeds a claim
would need in :mod:`initmem.stats.power`.

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
``inconclusive`` (across the boundary); for a side with a margin (``in [a, b]``) both ways, as two
one-sided tests (TOST, :func:`margin_verdict`): ``reproduced`` only with the interval inside the
margin, ``not reproduced`` only with it wholly outside; for a side whose words name a zone where the
effect is gone ("a spread below 1 pp is gone": :attr:`Side.gone`) also both ways, ``reproduced`` only
with the interval wholly above the zone, ``not reproduced`` only with it wholly inside; ``direction
only`` (a sentence stating a direction and a size: the direction reproduced, the size not,
:func:`sentence_verdict`), ``undecidable at this size`` (an undecided reading inside a gone zone whose gone
side the row's noise keeps out of reach at any feasible number of seeds), ``partly tested`` (a claim with parts whose
design identifies only some, which agree with the paper: :data:`PARTLY_TESTED`), ``cannot be decided above the noise floor`` (a |beta| shape
the OLS noise hides), ``outside the paper's regime`` (read outside the regime the paper's sentence
states: :func:`initmem.claims.claim.regime_check`), ``not testable with one seed`` and ``not
measured`` (the config lacks what the claim needs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

LEVEL = 0.95
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
BELOW_FLOOR = "cannot be decided above the noise floor"
OUTSIDE_REGIME = "outside the paper's regime"
ONE_SEED = "not testable with one seed"
NOT_MEASURED = "not measured"
NOT_IDENTIFIABLE = "not identifiable"  # the design cannot tell the paper's clock from the alternatives (initmem.stats.collapse)
# A claim with parts (a clock's p and q) whose design identifies only some: the tested parts agree with the paper (their
# verdict, ``reproduced``, is the row's statistic_verdict); the rest is untested, so the whole claim is not reproduced.
PARTLY_TESTED = "partly tested"
# A sentence that states a direction and a size ("largely wash out"): the direction is reproduced, the size is not (its
# interval lies wholly on the other side of the size's margin). Never a bare ``reproduced``: the sentence says more.
DIRECTION_ONLY = "direction only"
# A sentence that says a spread is gone ("below 1 pp"), read inside the gone zone, whose gone side no feasible design can
# reach at the row's noise (initmem.claims.clock.gone_verdict): more seeds would not decide it, so it is not "inconclusive".
UNDECIDABLE = "undecidable at this size"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, UNDECIDABLE, PARTLY_TESTED, DIRECTION_ONLY, BELOW_FLOOR, OUTSIDE_REGIME, ONE_SEED, NOT_IDENTIFIABLE, NOT_MEASURED)

# --- the reading of the paper's words ----------------------------------------------------------
NULL_RNG_SEED = 20260  # the fixed RNG seed of resampling rules: the same draws on every re-analysis


def steps_at_epoch(epoch, n_train, batch_size):
    """Optimizer steps after ``epoch`` finished epochs: epoch x ceil(n_train / b), the last partial
    batch kept as in training (numbers or numpy/pandas arrays alike; the one place the analysis counts steps)."""
    return epoch * np.ceil(np.asarray(n_train, float) / np.asarray(batch_size, float))


@dataclass(frozen=True)
class Side:
    """The paper's side of a claim: effect > lo (op '>'), effect < hi (op '<') or lo < effect < hi.

    op '>' with a ``gone`` edge names a zone [lo, gone) where the effect is gone ("a spread below 1 pp
    is gone"): the paper's side is then above the zone (effect > gone) and the other side the zone
    itself, so both verdicts are read against ``gone`` (an interval across it is inconclusive)."""

    op: str
    lo: float = -math.inf
    hi: float = math.inf
    gone: float | None = None

    def text(self) -> str:
        if self.gone is not None:
            return f"> {self.gone:.3g} (not reproduced within [{self.lo:.3g}, {self.gone:.3g}): gone)"
        return {">": f"> {self.lo:.3g}", "<": f"< {self.hi:.3g}"}.get(self.op, f"in [{self.lo:.3g}, {self.hi:.3g}]")

    @property
    def agree_above(self) -> float:
        """``reproduced`` needs the interval's low end above this (``gone`` where set, else ``lo``)."""
        return self.lo if self.gone is None else self.gone

    @property
    def other_below(self) -> float:
        """``not reproduced`` needs the interval's high end below this (``gone`` where set, else ``lo``)."""
        return self.lo if self.gone is None else self.gone

    @property
    def other_from(self) -> float:
        """... and its low end at or above this: the zone's floor where a gone zone is set (else unbounded)."""
        return -math.inf if self.gone is None else self.lo


def greater(x: float = 0.0, gone: float | None = None) -> Side:
    return Side(">", lo=x, gone=gone)


def less(x: float) -> Side:
    return Side("<", hi=x)


def between(lo: float, hi: float) -> Side:
    return Side("between", lo, hi)


def verdict(ci_low: float, ci_high: float, side: Side) -> str:
    """``reproduced`` | ``not reproduced`` | ``inconclusive`` for an interval against ``side``
    (a margin: :func:`margin_verdict`)."""
    return margin_verdict(ci_low, ci_high, side)[0]


def margin_verdict(ci_low: float, ci_high: float, side: Side, paper: float | None = None) -> tuple[str, str]:
    """Verdict and reason of an interval against ``side``, the one rule of every claim: ``reproduced``
    where the interval lies wholly on the paper's side (for a margin ``in [lo, hi]``: inside it, the
    equivalence half of two one-sided tests, TOST), ``not reproduced`` only where it lies wholly on the
    other (for a margin: wholly outside it, below ``lo`` or above ``hi``; for a side with a gone zone
    [lo, gone): ``reproduced`` wholly above the zone, ``not reproduced`` wholly inside it), else
    ``inconclusive``, saying which end crosses. With the paper's own value ``paper`` inside the margin, an interval inside the
    margin that excludes it is a difference smaller than the margin: ``reproduced``, said so."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return INCONCLUSIVE, "the interval is open (or missing)"
    if ci_low > side.agree_above and ci_high < side.hi:
        why = f"the interval lies within {side.text()}" if side.op == "between" else f"the interval lies on the paper's side ({side.text()})"
        if paper is not None and math.isfinite(paper) and not ci_low <= paper <= ci_high:
            why += f" (reproduced within the margin: it excludes the paper's {paper:.3g} by less than the margin)"
        return REPRODUCED, why
    if side.other_from <= ci_low and ci_high < side.other_below:
        where = (f"wholly within the zone [{side.lo:.3g}, {side.gone:.3g}) the paper's words call gone" if side.gone is not None
                 else f"wholly on the other side of the paper's ({side.text()})")
        return NOT_REPRODUCED, f"the interval lies {where}"
    if ci_low > side.hi:
        return NOT_REPRODUCED, f"the interval lies wholly outside {side.text()}"
    if side.gone is not None:
        return INCONCLUSIVE, f"the interval reaches across {side.gone:.3g}, the edge of the zone the paper's words call gone"
    ends = [t for t, hit in ((f"below {side.lo:.3g}", ci_low <= side.lo), (f"above {side.hi:.3g}", ci_high >= side.hi)) if hit]
    return INCONCLUSIVE, f"the interval reaches {' and '.join(ends)}"


# --- cells and their replicates ----------------------------------------------------------------

@dataclass
class Cell:
    """One configuration's runs: ``values[..., sigma, seed]`` (NaN where a run has no value).

    ``fit``: counts of what its selected predictors are, runs first, then runs that fit and runs whose
    selected predictor fits (the claims fill it with :class:`initmem.claims.similarity.SelectedCounts`);
    ``label`` names the cell in notes."""

    key: str
    sigmas: np.ndarray
    seeds: np.ndarray
    values: np.ndarray
    epochs: np.ndarray | None = None   # curves: the epoch of each row of ``values``
    clocks: dict = field(default_factory=dict)  # curves: coordinate name -> value per epoch
    fit: tuple | None = None
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

    def sums(self, seeds: Sequence, power: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Per replicate: the sum of value**power and the count of runs in each (..., sigma) cell
        (replicates: the full sample, then each of ``seeds`` left out), summed along
        the seed axis by numpy (pairwise, the same bits on every machine; a left-out seed subtracted)."""
        present = np.isfinite(self.values)
        # every run has a value (as in a bootstrap draw of whole cells): the same sums without masking
        whole = self.values.dtype == np.float64 and bool(present.all())
        v = (self.values if whole else np.where(present, self.values, 0.0)) ** power
        c = None if whole else present.astype(float)
        total, count = [v.sum(-1)], [np.full(v.shape[:-1], float(v.shape[-1])) if whole else c.sum(-1)]
        for s in seeds:
            out = self.seeds == s
            total.append(total[0] - v[..., out].sum(-1))
            count.append(count[0] - (float(np.count_nonzero(out)) if whole else c[..., out].sum(-1)))
        return np.stack(total), np.stack(count)

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
        return ols_from_sums(total, squares, count, self.sigmas)

    def slopes(self, seeds: Sequence) -> np.ndarray:
        return self.fits(seeds)[0]


def ols_from_sums(total: np.ndarray, squares: np.ndarray, count: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS slope of y on ``x`` and its standard error from per-x sums of y (``total``), of y**2 (``squares``) and
    run counts (``count``), x the last axis: the same numbers as an OLS over the individual runs."""
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


# --- the tests behind the intervals ------------------------------------------------------------

ALL, ANY = "all", "any"   # how a decision combines one-sided tests (:class:`Combined`)
T_TEST, SPREAD_TEST, CONTRAST_TEST, NORMAL_READING = "t", "spread", "spread contrast", "normal reading"  # Test.family


@dataclass(frozen=True)
class OneSided:
    """A one-sided t-test of "the quantity exceeds b" (or "is below b"): the statistic (estimate - b) / se
    on ``df`` degrees of freedom (a normal one where ``df`` is inf). ``share``: the test is read at
    alpha / share (Bonferroni inside an interval end that covers several comparisons), so its p is
    ``share`` times the t-test's, capped at 1."""

    estimate: float
    se: float
    df: float
    share: int = 1

    def p(self, b: float, above: bool) -> float:
        """The p of "the quantity exceeds ``b``" (``above``) or "lies below ``b``"."""
        if not (math.isfinite(self.estimate) and self.se >= 0 and self.df > 0):
            return math.nan
        if math.isinf(self.se) or self.se == 0:   # an open interval end, or a statistic the seeds do not move: no test
            return 1.0
        gap = self.estimate - b if above else b - self.estimate
        raw = float(stats.t.sf(gap / self.se, self.df)) if math.isfinite(self.df) else float(stats.norm.sf(gap / self.se))
        return min(1.0, self.share * raw)


@dataclass(frozen=True)
class Combined:
    """One-sided tests combined into one decision: ``all`` (an intersection-union test: the decision needs
    every part, so its p is the largest part's, with no multiplicity correction) or ``any`` (a union: one
    part suffices, so Bonferroni: the number of parts times the smallest p, capped at 1)."""

    how: str
    parts: tuple

    def p(self, b: float, above: bool) -> float:
        ps = [part.p(b, above) for part in self.parts]
        if not ps or any(math.isnan(x) for x in ps):
            return math.nan
        return max(ps) if self.how == ALL else min(1.0, len(ps) * min(ps))


@dataclass(frozen=True)
class Test:
    """The test an estimate's interval inverts, as data: ``above`` the evidence that the quantity exceeds
    a boundary (what the interval's low end reads), ``below`` that it lies under one (the high end), each
    a :class:`OneSided` or a :class:`Combined` of them; ``family`` names the rule (a power simulation
    picks its model by it, never by the interval's printed label)."""

    __test__ = False   # a statistical test, not a pytest class to collect

    family: str
    above: OneSided | Combined
    below: OneSided | Combined

    def p_above(self, b: float) -> float:
        return self.above.p(b, True)

    def p_below(self, b: float) -> float:
        return self.below.p(b, False)


def t_test(estimate: float, se: float, df: float, family: str = T_TEST) -> Test:
    """A single t statistic read both ways (a jackknife t-interval, a paired t-test)."""
    one = OneSided(float(estimate), float(se), float(df))
    return Test(family, one, one)


def normal_reading(effect: float, low: float, high: float) -> Test:
    """For an interval that inverts no test statistic (the clock collapse's bootstrap percentiles): each
    end read as a normal one-sided test at :data:`LEVEL`, its standard error the distance from the
    estimate to that end over z(0.5 + LEVEL / 2), so an end exactly at a boundary has p = (1 - LEVEL) / 2
    (an approximation, said so by its family; a t-based estimate carries its own test instead)."""
    z = float(stats.norm.ppf(0.5 + LEVEL / 2))
    low_se, high_se = (effect - low) / z, (high - effect) / z   # "above b" reads the low end, "below b" the high end
    return Test(NORMAL_READING, OneSided(float(effect), float(low_se), math.inf), OneSided(float(effect), float(high_se), math.inf))


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
    null_mean: float = math.nan   # a single spread: the mean spread when sigma_w does nothing (spreads.spread_estimate)
    p_null: float = math.nan      # ... the p-value of "sigma_w does nothing" (paired t-test of the end sigma_w)
    non_monotone: str = ""        # a spread contrast: which cell's sigma_w profile is not monotone (spreads.contrast_estimate)
    test: Test | None = None      # the test its interval inverts (its decisions' p-values: initmem.stats.multiplicity)

    @property
    def one_seed(self) -> bool:
        return self.n_seeds < 2


def seeds_of(cells: Sequence[Cell]) -> list:
    """The seeds of all ``cells`` together (a left-out seed leaves every cell that has it)."""
    return sorted(set().union(*(set(c.seeds.tolist()) for c in cells)))


def jackknife_se(replicates: np.ndarray) -> float:
    """The delete-one jackknife standard error of ``replicates[1:]`` (NaN below 2 or with a missing value)."""
    full, loo = replicates[0], replicates[1:]
    n = len(loo)
    if n < 2 or not (np.isfinite(full) and np.isfinite(loo).all()):
        return math.nan
    return math.sqrt((n - 1) / n * float(np.sum((loo - loo.mean()) ** 2)))


def jackknife_t(replicates: np.ndarray) -> tuple[float, float, str]:
    """t-interval at :data:`LEVEL` around ``replicates[0]`` with the delete-one jackknife standard
    error of ``replicates[1:]`` (n - 1 degrees of freedom), and its label."""
    n = len(replicates) - 1
    if n < 2:
        return math.nan, math.nan, "none: 1 seed"
    label = f"t, jackknife over {n} seeds, df {n - 1}"
    se = jackknife_se(replicates)
    if not math.isfinite(se):
        return math.nan, math.nan, label
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se
    return float(replicates[0] - half), float(replicates[0] + half), label


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
    test = None if few else t_test(reps[0], jackknife_se(reps), len(reps) - 2)
    return Estimate(float(reps[0]), low, high, method, int(sum(c.n_runs for c in cells)),
                    int(min(c.n_seeds for c in cells)), reps, test=test)


def sentence_verdict(direction: str, size: str) -> str:
    """The verdict of a sentence with a direction and a size, from each part's own verdict: ``reproduced``
    only where both are; :data:`DIRECTION_ONLY` where the direction is reproduced and the size not;
    ``not reproduced`` where the direction is not, or the size is not and the direction undecided (the
    sentence is false either way); else undecided (one seed, inconclusive)."""
    if ONE_SEED in (direction, size):
        return ONE_SEED
    if direction == NOT_REPRODUCED:
        return NOT_REPRODUCED
    if size == NOT_REPRODUCED:
        return DIRECTION_ONLY if direction == REPRODUCED else NOT_REPRODUCED
    return REPRODUCED if direction == size == REPRODUCED else INCONCLUSIVE


def side_verdict(est: Estimate, side: Side) -> str:
    """The verdict of an estimate against the paper's ``side`` (no interval with one seed)."""
    if est.one_seed:
        return ONE_SEED
    return verdict(est.low, est.high, side)


def regime(cells: Sequence[Cell]) -> dict:
    """Share of the cells' runs that reached 99.5% train accuracy (``share_fit``), share whose
    tau_best is at or after that (``share_best_fitted``) and the cell with the smallest share
    (``least``). The regime itself: :func:`initmem.claims.claim.regime_check`."""
    counts = [c.fit for c in cells if c.fit is not None and c.fit[0] > 0]
    if not counts:
        return {"share_fit": math.nan, "share_best_fitted": math.nan, "least": ""}
    n, fit, best = (sum(c[i] for c in counts) for i in range(3))
    shares = [(c.fit[1] / c.fit[0], c.label) for c in cells if c.fit is not None and c.fit[0] > 0]
    low, least = min(shares, key=lambda s: s[0])
    return {"share_fit": fit / n, "share_best_fitted": best / n,
            "least": f"{least + ': ' if least else ''}{100 * low:.0f}% of runs fitted"}
