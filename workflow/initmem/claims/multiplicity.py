"""Multiplicity across a tier's directional claims: each row's one-sided p for the decision it makes,
read off its own interval, and Holm's step-down adjustment over the tier's tested rows
(``statsmodels.stats.multitest.multipletests``), so the decisions a front page counts hold a
familywise error rate of :data:`ALPHA` (each interval end's one-sided level) together.

The p of a decision is the level at which the row's interval end would touch the boundary it crossed
(hand-written, as no library reads a p off a stated interval): with the interval's own half-width on
that side as t(1 - ALPHA, df) standard errors, ``p = P(T_df > t(1 - ALPHA, df) x distance / half-width)``,
so an end exactly at the boundary has p = ALPHA. It is exact for the t-based rows (paired t on seed
differences: df = seeds - 1) and a normal approximation (df infinite) for the bootstrap intervals of
the clock collapse. Equivalence (a margin ``in [lo, hi]``) takes the larger p of its two one-sided
tests (TOST); ``not reproduced`` against a margin the smaller (either side suffices).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from initmem.claims.verdicts import INCONCLUSIVE, LEVEL, NOT_REPRODUCED, PARTLY_TESTED, REPRODUCED, Estimate, Side

ALPHA = (1 - LEVEL) / 2
TESTED = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, PARTLY_TESTED)  # the verdicts of rows in the family


def _df(est: Estimate) -> float:
    t_based = est.method.startswith("t,") or "paired t" in est.method
    return float(est.n_seeds - 1) if t_based and est.n_seeds >= 2 else math.inf


def decision_p(est: Estimate, side: Side, word: str) -> float:
    """One-sided p of the decision ``word`` (``reproduced``/``partly tested``: the paper's side;
    ``not reproduced``: the other; anything else: the nearer of the two) from ``est``'s interval."""
    e, lo, hi = est.effect, est.low, est.high
    if not all(map(math.isfinite, (e, lo, hi))) or not lo <= e <= hi:
        return math.nan
    df = _df(est)
    crit = float(stats.t.ppf(1 - ALPHA, df))

    def above(b: float) -> float:  # evidence that the value exceeds b
        return 1.0 if e - lo <= 0 else float(stats.t.sf(crit * (e - b) / (e - lo), df))

    def below(b: float) -> float:  # evidence that the value is under b
        return 1.0 if hi - e <= 0 else float(stats.t.sf(crit * (b - e) / (hi - e), df))

    if side.op == ">":
        agree, other = above(side.agree_above), below(side.other_below)
    elif side.op == "<":
        agree, other = below(side.hi), above(side.hi)
    else:
        agree, other = max(above(side.lo), below(side.hi)), min(below(side.lo), above(side.hi))
    if word in (REPRODUCED, PARTLY_TESTED):
        return agree
    return other if word == NOT_REPRODUCED else min(agree, other)


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
    decided = family & out["verdict"].isin((REPRODUCED, NOT_REPRODUCED, PARTLY_TESTED)) & (out["p_holm"] > ALPHA)
    out.loc[decided, "verdict_holm"] = INCONCLUSIVE
    return out
