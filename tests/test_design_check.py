"""The planner checked against what happened (initmem.planner.design_check, benchmarks/planner_check.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from helpers.planner import measured_configuration, planner_config

from initmem.planner import design as D
from initmem.planner import design_check as K
from initmem.stats import verdicts as V

TIER = "jpeg-cifar10-regime"


@pytest.mark.parametrize("tier", [TIER, "jpeg-cifar10-selected"])
def test_the_committed_check_of_a_tier_is_what_the_check_computes(tier):
    """benchmarks/planner_check.csv's rows of the regime tier regenerate (every number at its 6 printed digits),
    among them the committed --cheapest design of sgd_gt_adam_b16: planned ~100% when it was committed, ~37% now that the
    planner assumes only accepted readings (the selected-fit tier's 3.7 pp contrast, with its seeds' per-seed covariance),
    realised ~30% of 1,000 resamples: no miss once the resamples are read as the overlapping subsets of 16 seeds they are
    (design_check.miss_p). The selected tier's too: planned without itself no accepted reading measured SGD's noise at
    its size, so it plans no spread or contrast and has no row (never an assumed noise)."""
    committed = pd.read_csv(ROOT / "benchmarks" / "planner_check.csv")
    committed = committed[committed["tier"] == tier].reset_index(drop=True)
    fresh = K.as_frame(K.tier_checks(tier, K.TIERS[tier]))
    assert list(fresh["claim"] + fresh["design"]) == list(committed["claim"] + committed["design"])
    for col in ("planned", "own_truth", "realised", "draws"):
        assert np.allclose(fresh[col].astype(float), committed[col].astype(float), rtol=1e-5, equal_nan=True), col
    if tier != TIER:
        return
    row = committed[(committed["claim"] == "sgd_gt_adam_b16") & (committed["design"] == "--cheapest as committed")].iloc[0]
    assert 0.3 < row["planned"] < 0.45 and 0.27 < row["realised"] < 0.33 and row["draws"] == K.DRAWS and not row["missed"]


def test_a_resample_is_whole_seeds_at_the_designs_sigma_w_and_every_subset_where_few():
    rng = np.random.default_rng(0)
    assert len(K.resamples(list(range(8)), 4, 1000, rng)) == 70           # every subset of 4 of 8
    assert all(len(set(s)) == 5 for s in K.resamples(list(range(16)), 5, 50, rng))   # without replacement
    assert K.resamples(list(range(3)), 4, 1000, rng) == []                # more seeds than the tier ran
    cell = V.Cell("c", np.array([0.1, 1.0, 2.5]), np.array([0, 1, 2]), np.arange(9.0).reshape(3, 3))
    sub = K.restrict(cell, (0.1, 2.5), (2, 0))
    assert sub.values.tolist() == [[2.0, 0.0], [8.0, 6.0]] and sub.seeds.tolist() == [2, 0]


def test_one_draw_is_tested_exactly_and_overlapping_resamples_by_their_u_statistic_bound():
    assert K.miss_p(0.001, 1000, 1.0, 1, 7, 7) == pytest.approx(0.001)   # the tier itself: a verdict the plan gave 0.1%
    assert K.miss_p(0.5, 1000, 0.5, 300, 5, 16) == 1.0
    assert math.isnan(K.miss_p(0.5, 1000, math.nan, 0, 5, 4))
    # 1,000 resamples of 6 of 16 seeds carry about 16 / 6 tiers' worth of information, not 1,000 draws'
    assert K.miss_p(0.5, 1000, 0.6, 1000, 6, 16) > 0.5
    assert K.miss_p(0.95, 1000, 0.2, 1000, 6, 16) < 1e-4
    # 6 of 7 seeds: no two subsets disjoint, one tier's worth: its majority verdict, exactly
    assert K.miss_p(0.843, 1000, 1 / 7, 7, 6, 7) == pytest.approx(1 - 0.843)
    assert K.miss_p(0.001, 1000, 0.9, 21, 5, 7) == pytest.approx(0.001)


def test_design_warns_under_a_plan_whose_kind_missed_on_a_committed_tier(tmp_path, monkeypatch):
    sources = [measured_configuration("tier", spread_pp=10), measured_configuration("tier", optimizer="adam", spread_pp=2)]
    row = {"tier": "jpeg-cifar10-regime", "claim": "sgd_gt_adam_b16", "family": "sgd_gt_adam", "design": "--cheapest", "seeds": 5,
           "sigmas": "0.1 2.5", "planned": 0.997, "realised": 0.3, "missed": True, "arithmetic_missed": False}
    checks = tmp_path / "check.csv"
    pd.DataFrame([row]).to_csv(checks, index=False)
    monkeypatch.setattr(D, "CHECKS", checks)
    text = D.report(planner_config(), "test", sources=sources)
    warned = [line for line in text.splitlines() if line.startswith("- **warning**")]
    assert len(warned) == 1 and warned[0].startswith("- **warning** `sgd_gt_adam_b16`: plans of `sgd_gt_adam` missed")
    assert "jpeg-cifar10-regime `sgd_gt_adam_b16`, 5 seeds at sigma_w 0.1 2.5 (--cheapest): planned 100%, realised 30%" in warned[0]
    pd.DataFrame([row | {"missed": False}]).to_csv(checks, index=False)
    assert "**warning**" not in D.report(planner_config(), "test", sources=sources)


def test_plans_of_one_kind_share_a_family():
    assert D.claim_family("sgd_gt_adam_b16") == D.claim_family("sgd_gt_adam_b32") == "sgd_gt_adam"
    assert D.claim_family("lr_reduces_sgd_b16_0.001_to_0.1") == "lr_reduces_sgd"
