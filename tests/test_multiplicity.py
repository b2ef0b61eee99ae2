"""Multiplicity: a decision's p read off its interval, and Holm's adjustment across a tier's rows."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from initmem.claims import multiplicity as M
from initmem.claims import verdicts as V


def t_estimate(mean: float, sd: float, n: int) -> V.Estimate:
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return V.Estimate(mean, mean - half, mean + half, f"t, jackknife over {n} seeds, df {n - 1}", 2 * n, n, np.zeros(1))


def test_the_p_of_a_t_interval_is_the_one_sided_t_test():
    """For a t-interval the decision's p is the one-sided t-test's against the side's boundary, and an
    interval end exactly at the boundary has p = 2.5%."""
    est = t_estimate(2.0, 3.0, 10)
    expected = stats.ttest_1samp(2.0 + 3.0 * stats.zscore(np.arange(10.0), ddof=1), 0.0, alternative="greater").pvalue
    assert M.decision_p(est, V.greater(0), "reproduced") == pytest.approx(expected, rel=1e-9)
    at_edge = V.Estimate(1.0, 0.0, 2.0, "t, jackknife over 5 seeds, df 4", 10, 5, np.zeros(1))
    assert M.decision_p(at_edge, V.greater(0), "reproduced") == pytest.approx(0.025)
    # equivalence takes the larger of its two one-sided p; 'not reproduced' against a margin the smaller
    inside = V.Estimate(0.1, -0.2, 0.4, "t, x, df 9", 20, 10, np.zeros(1))
    m = V.between(-0.5, 0.5)
    assert M.decision_p(inside, m, "reproduced") == pytest.approx(max(M.decision_p(inside, V.greater(-0.5), "reproduced"),
                                                                       M.decision_p(inside, V.less(0.5), "reproduced")))


def test_holm_undoes_a_decision_that_does_not_survive_the_family():
    """Ten tested rows: one with p 0.001 stands, one with p 0.02 (decided alone) does not after Holm;
    rows outside the paper's regime or not measured are not in the family and keep their words."""
    rows = [{"id": f"r{i}", "kind": "direction", "verdict": "inconclusive", "p_decision": 0.5} for i in range(8)]
    rows += [{"id": "strong", "kind": "direction", "verdict": "reproduced", "p_decision": 0.001},
             {"id": "weak", "kind": "direction", "verdict": "not reproduced", "p_decision": 0.02},
             {"id": "out", "kind": "direction", "verdict": "outside the paper's regime", "p_decision": 1e-9},
             {"id": "none", "kind": "direction", "verdict": "not measured", "p_decision": math.nan}]
    t = M.holm(pd.DataFrame(rows)).set_index("id")
    assert t.loc["strong", "verdict_holm"] == "reproduced" and t.loc["strong", "p_holm"] == pytest.approx(0.010)
    assert t.loc["weak", "verdict_holm"] == "inconclusive" and t.loc["weak", "p_holm"] == pytest.approx(0.18)
    assert t.loc["out", "verdict_holm"] == "outside the paper's regime" and math.isnan(t.loc["out", "p_holm"])
    assert t.loc["none", "verdict_holm"] == "not measured"
