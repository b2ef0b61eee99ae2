"""Multiplicity: a decision's p computed by the test its interval inverts (carried by the estimate as
data, never rebuilt from the interval or its label), and Holm's adjustment across a tier's rows."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from initmem.claims.clock import RETAINED
from initmem.stats import multiplicity as M
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V


def t_estimate(mean: float, sd: float, n: int) -> V.Estimate:
    se = sd / math.sqrt(n)
    half = float(stats.t.ppf(0.975, n - 1)) * se
    return V.Estimate(mean, mean - half, mean + half, f"t, jackknife over {n} seeds, df {n - 1}", 2 * n, n, np.zeros(1),
                      test=V.t_test(mean, se, n - 1))


def cell(values: np.ndarray) -> V.Cell:
    k, n = values.shape
    return V.Cell("c", np.linspace(0.1, 2.5, k), np.arange(n), values)


def test_the_p_of_a_t_interval_is_the_one_sided_t_test():
    """For a t-interval the decision's p is the one-sided t-test's against the side's boundary, and an
    interval end exactly at the boundary has p = 2.5%."""
    x = 2.0 + 3.0 * stats.zscore(np.arange(10.0), ddof=1)
    est = t_estimate(2.0, 3.0, 10)
    assert M.decision_p(est, V.greater(0), "reproduced") == pytest.approx(stats.ttest_1samp(x, 0.0, alternative="greater").pvalue, rel=1e-9)
    assert M.decision_p(est, V.greater(0), "not reproduced") == pytest.approx(stats.ttest_1samp(x, 0.0, alternative="less").pvalue, rel=1e-9)
    at_edge = t_estimate(1.0, 1.0 / stats.t.ppf(0.975, 4) * math.sqrt(5), 5)   # its low end at 0
    assert at_edge.low == pytest.approx(0.0, abs=1e-12)
    assert M.decision_p(at_edge, V.greater(0), "reproduced") == pytest.approx(0.025)


def test_a_margin_is_two_one_sided_tests_to_agree_and_a_union_of_two_to_disagree():
    inside = t_estimate(0.1, 0.8, 10)
    m = V.between(-0.5, 0.5)
    up, down = inside.test.p_above(-0.5), inside.test.p_below(0.5)
    assert M.decision_p(inside, m, "reproduced") == pytest.approx(max(up, down))      # TOST: both must hold
    outside = t_estimate(1.2, 0.8, 10)
    below_lo, above_hi = outside.test.p_below(-0.5), outside.test.p_above(0.5)
    assert M.decision_p(outside, m, "not reproduced") == pytest.approx(min(1.0, 2 * min(below_lo, above_hi)))  # either way out


def test_a_spreads_p_is_the_two_sided_paired_t_test_not_half_of_it():
    """|d| - t se > 0 is a two-sided event: against 0 the spread's p is the paired t-test's two-sided p
    (the interval-width reading returned the one-sided one, 2x too small); against the gone zone's edge
    it is the union of the two one-sided tests of |d| above 1 pp."""
    rng = np.random.default_rng(3)
    values = np.array([0.80, 0.79, 0.775])[:, None] + 0.004 * rng.standard_normal((3, 8)) + 0.02 * rng.standard_normal(8)
    est = Sp.spread_estimate(cell(values))
    first, last = 100 * values[0], 100 * values[-1]
    assert M.decision_p(est, V.greater(0), "reproduced") == pytest.approx(stats.ttest_rel(first, last).pvalue, rel=1e-9)
    one_sided_above_1 = stats.ttest_1samp(first - last - 1.0, 0.0, alternative="greater").pvalue
    assert M.decision_p(est, RETAINED, "reproduced") == pytest.approx(2 * one_sided_above_1, rel=1e-6)
    assert est.p_null == pytest.approx(M.decision_p(est, V.greater(0), "reproduced"), rel=1e-9)   # the row's own p_null test


def test_a_contrasts_p_is_the_largest_component_p_of_its_intersection_union_test():
    """'a's spread exceeds b's' is decided only when every paired t-test of D_a - (b_l - b_m) rejects: its
    p is the largest of those one-sided p-values (scipy's), not a reading of the interval as if centred."""
    rng = np.random.default_rng(5)
    k, n = 3, 6
    seed = 0.02 * rng.standard_normal(n)
    a = np.array([0.80, 0.82, 0.70])[:, None] + seed + 0.01 * rng.standard_normal((k, n))   # a peak: spread(a) > D_a
    b = np.array([0.78, 0.775, 0.77])[:, None] + seed + np.array([0.01, 0.03, 0.01])[:, None] * rng.standard_normal((k, n))
    est = Sp.contrast_estimate([cell(a), cell(b)])
    da = 100 * (a[0] - a[-1])
    expected = max(stats.ttest_1samp(da - 100 * (b[i] - b[j]), 0.0, alternative="greater").pvalue
                   for i in range(k) for j in range(k) if i != j)
    got = M.decision_p(est, V.greater(0), "reproduced")
    assert got == pytest.approx(expected, rel=1e-9)
    # reading the interval as a t-interval centred on the effect gives another number (too small)
    crit = stats.t.ppf(0.975, n - 1)
    read_off = stats.t.sf(crit * est.effect / (est.effect - est.low), n - 1)
    assert not read_off == pytest.approx(got, rel=0.05)


@pytest.mark.parametrize("seed", range(6))
def test_each_decisions_p_is_below_its_level_exactly_where_its_interval_decides(seed):
    """The p and the interval are the same test: a spread's low end decides above b where its p (a union
    of two one-sided ends at 2.5%) is below 5%, its high end below b where its p is below 2.5%; a
    contrast's low end (an intersection-union test) at 2.5%, its high end (a union over two signs) at 5%."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        k, n = rng.integers(2, 5), rng.integers(3, 9)
        noise = rng.uniform(0.001, 0.02)
        a = np.sort(rng.uniform(0.7, 0.8, k))[::-1][:, None] + noise * rng.standard_normal((k, n))
        b = np.sort(rng.uniform(0.7, 0.8, k))[::-1][:, None] + noise * rng.standard_normal((k, n))
        s = Sp.spread_estimate(cell(a))
        for edge in (0.5, 1.0, 2.0):
            assert (s.test.p_above(edge) < 0.05) == (s.low > edge)
            assert (s.test.p_below(edge) < 0.025) == (s.high < edge)
        c = Sp.contrast_estimate([cell(a), cell(b)])
        assert (c.test.p_above(0.0) < 0.025) == (c.low > 0)
        assert (c.test.p_below(0.0) < 0.05) == (c.high < 0)


def test_the_p_reads_the_test_never_the_label():
    """Rewording an interval's printed method changes no p-value, and an estimate without a test has none."""
    est = t_estimate(2.0, 3.0, 10)
    reworded = dataclasses.replace(est, method="anything at all")
    assert M.decision_p(reworded, V.greater(0), "reproduced") == M.decision_p(est, V.greater(0), "reproduced")
    assert math.isnan(M.decision_p(dataclasses.replace(est, test=None), V.greater(0), "reproduced"))


def test_an_open_interval_end_gives_no_evidence():
    """The collapse's bootstrap interval, censored at the clocks searched, is open on one side: its normal
    reading gives p = 1 for a decision that end would make, and p = 2.5% for an end at the boundary."""
    t = V.normal_reading(0.3, -math.inf, 0.5)
    assert t.p_above(0.0) == 1.0 and t.p_below(0.5) == pytest.approx(0.025)


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
