"""Multiplicity across a tier's directional claims: each row's p for the decision it makes, computed by
the test its interval inverts (:class:`initmem.stats.verdicts.Test`, carried by the estimate), and
Holm's step-down adjustment over the tier's tested rows (``statsmodels.stats.multitest.multipletests``)
at :data:`ALPHA`. What familywise error that gives is measured, not assumed: with every tested row of
the regime tier on its side's boundary, 2.7% [2.0, 3.5] of simulated tiers make a (false) decision
after Holm under run noise independent from epoch to epoch and 2.0% [1.4, 2.7] under noise that
persists along a run (``benchmarks/familywise_error.md``, :mod:`initmem.planner.familywise`).

The p of a decision is its test's own, against the boundary the decision crosses:

- a single t statistic (the jackknife t-intervals, df seeds - 1): the one-sided t-test;
- a single spread: "above b" is the two-sided event |d_end| > b, so twice the smaller one-sided p (at
  b = 0 the paired t-test's two-sided p); "below b" needs every seed-paired difference below b, each
  at alpha (an intersection-union test over the k (k - 1) pairs: the largest p), as the interval's high end reads them;
- a spread contrast: an intersection-union test (the largest component p) for "above", and for
  "below" the union over the sign of b's drop of two intersection-union tests (twice the smaller);
- a margin ``in [lo, hi]``: ``reproduced`` is the equivalence test (TOST: the larger of its two
  one-sided p), ``not reproduced`` the union "below lo or above hi" (twice the smaller);
- a side with a gone zone [lo, gone): both decisions are read against ``gone``;
- a sentence with a direction and a size: :func:`parts_p`.

An interval end exactly at the boundary has the p of the level its end is built at (2.5% one-sided;
5% where the decision is a union of two such ends, as a spread's low end is), and a decision's p is
below 2.5% only where its interval decides at that level. The clock collapse's bootstrap interval has
no test statistic: its estimate carries a normal reading of the interval (``normal reading``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem.stats.verdicts import DIRECTION_ONLY, INCONCLUSIVE, LEVEL, NOT_REPRODUCED, PARTLY_TESTED, REPRODUCED, UNDECIDABLE, Estimate, Side

ALPHA = (1 - LEVEL) / 2
TESTED = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, UNDECIDABLE, PARTLY_TESTED, DIRECTION_ONLY)  # the verdicts of rows in the family
DECIDED = (REPRODUCED, NOT_REPRODUCED, PARTLY_TESTED, DIRECTION_ONLY)


def agree_p(est: Estimate, side: Side) -> float:
    """The p of "the quantity lies on the paper's side" by ``est``'s own test."""
    test = est.test
    if side.op == ">":
        return test.p_above(side.agree_above)
    if side.op == "<":
        return test.p_below(side.hi)
    return max(test.p_above(side.lo), test.p_below(side.hi))   # equivalence: both one-sided tests (TOST)


def other_p(est: Estimate, side: Side) -> float:
    """The p of "the quantity lies on the other side" (for a margin: outside it, either way)."""
    test = est.test
    if side.op == ">":
        return test.p_below(side.other_below)
    if side.op == "<":
        return test.p_above(side.hi)
    return min(1.0, 2 * min(test.p_below(side.lo), test.p_above(side.hi)))   # a union of the two ways out


def decision_p(est: Estimate, side: Side, word: str) -> float:
    """The p of the decision ``word`` (``reproduced``/``partly tested``: the paper's side; ``not
    reproduced``: the other; anything else: the nearer of the two) by ``est``'s own test (NaN without one)."""
    if est.test is None or not math.isfinite(est.effect):
        return math.nan
    if word in (REPRODUCED, PARTLY_TESTED):
        return agree_p(est, side)
    if word == NOT_REPRODUCED:
        return other_p(est, side)
    return min(agree_p(est, side), other_p(est, side))


def parts_p(direction: Estimate, size: Estimate, side: Side, size_side: Side, word: str) -> float:
    """The p of a two-part sentence's decision ``word`` (:func:`initmem.stats.verdicts.sentence_verdict`):
    ``reproduced`` needs both parts on the paper's side and ``direction only`` the direction there and the
    size on the other (intersection-union tests: the larger p); ``not reproduced`` either part on the other
    side (a union of two: twice the smaller p); an undecided word the nearest of those decisions."""
    if any(e.test is None or not math.isfinite(e.effect) for e in (direction, size)):
        return math.nan   # one seed: no test, no p (as decision_p)
    both = max(agree_p(direction, side), agree_p(size, size_side))
    direction_only = max(agree_p(direction, side), other_p(size, size_side))
    either_not = min(1.0, 2 * min(other_p(direction, side), other_p(size, size_side)))
    return {REPRODUCED: both, DIRECTION_ONLY: direction_only, NOT_REPRODUCED: either_not}.get(word, min(both, direction_only, either_not))


def holm(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``p_holm`` (Holm-adjusted ``p_decision`` over the directional rows whose verdict is
    in :data:`TESTED`) and ``verdict_holm`` (a decision whose adjusted p exceeds :data:`ALPHA` reads
    ``inconclusive``; every other row keeps its verdict)."""
    from statsmodels.stats.multitest import multipletests  # analysis-only dependency

    out = table.copy()
    out["p_holm"] = np.nan
    out["verdict_holm"] = out["verdict"]
    family = (out["kind"] == "direction") & out["verdict"].isin(TESTED) & np.isfinite(out["p_decision"].astype(float))
    if family.any():
        out.loc[family, "p_holm"] = multipletests(out.loc[family, "p_decision"].astype(float), alpha=ALPHA, method="holm")[1]
    decided = family & out["verdict"].isin(DECIDED) & (out["p_holm"] > ALPHA)
    out.loc[decided, "verdict_holm"] = INCONCLUSIVE
    return out
