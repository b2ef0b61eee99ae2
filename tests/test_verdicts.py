"""Verdicts on synthetic metrics with known effects. Each statistic must be able to fail in every
direction the paper's words exclude: a strong effect is reproduced, a null one inconclusive, a
reversed one not reproduced; a rising |beta| is not flat, a one-order fall is a decay, a curve at
1e-3 fails the level check, a fall hidden by the noise floor is not "not reproduced"; a collapse
must beat the null clocks; 3 seeds give a t-interval, never a bootstrap "95%" range."""

import math
import re

import numpy as np
import pandas as pd
import pytest
from helpers.clock_tier import clock_history, clock_table, runs_of
from scipy import stats

from initmem.claims.cells import cell_from_history, cell_from_runs
from initmem.claims.rows import COLUMNS, would_decide
from initmem.claims.table import claims
from initmem.reports.verdict_tables import claims_markdown
from initmem.stats import shapes as Sh
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V

SEEDS = (0, 1, 2, 3, 4, 5)
SIGMAS = (0.1, 1.0, 2.5)


def synthetic_runs(slopes: dict, noise: float = 0.01, seeds=SEEDS, rng_seed: int = 0, fitted: bool = True) -> pd.DataFrame:
    """Main-grid runs (lr 1e-3) whose test accuracy falls with sigma_w at slope ``slopes[(optimizer, b)]`` plus seed noise."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for (opt, b), slope in slopes.items():
        for sw in SIGMAS:
            for s in seeds:
                rows.append(dict(study="main", run_id=f"{opt}_b{b}_sw{sw}_s{s}", optimizer=opt, batch_size=b, sigma_w=sw, lr=1e-3,
                                 seed=s, arch="resnet9", width=8, n_train=40000, epochs=10, norm="batchnorm", augment=False,
                                 test_acc_best=0.8 + slope * sw + rng.normal(0, noise), train_acc_best=1.0, status="ok",
                                 tau_best=10, tau_interp=5 if fitted else math.nan))
    return pd.DataFrame(rows)


def _gap(runs: pd.DataFrame, a: str, b: str, batch: int = 128) -> tuple[V.Estimate, str]:
    cells = [cell_from_runs(runs[(runs["optimizer"] == o) & (runs["batch_size"] == batch)]) for o in (a, b)]
    est = V.estimate(cells, lambda m: Sp.spread_pp(m[0]) - Sp.spread_pp(m[1]))
    return est, V.side_verdict(est, V.greater(0))


def test_strong_null_and_reversed_effects_get_the_three_verdicts():
    runs = synthetic_runs({("sgd", 128): -0.10, ("adam", 128): -0.01, ("adamw", 128): -0.10})
    strong, v = _gap(runs, "sgd", "adam")          # SGD 24 pp vs Adam 2.4 pp
    assert v == "reproduced" and strong.low > 0
    assert strong.effect == pytest.approx(21.6, abs=2.0) and strong.n_runs == 36 and strong.n_seeds == 6
    null, v = _gap(runs, "sgd", "adamw")           # the same slope: no effect
    assert v == "inconclusive" and null.low < 0 < null.high
    reversed_, v = _gap(runs, "adam", "sgd")       # the paper's direction turned around
    assert v == "not reproduced" and reversed_.high < 0


def test_one_seed_is_not_testable_and_has_no_interval():
    runs = synthetic_runs({("sgd", 128): -0.10, ("adam", 128): -0.01}, seeds=(0,))
    est, v = _gap(runs, "sgd", "adam")
    assert est.effect > 15  # the number is still measured
    assert v == V.ONE_SEED and est.method == "none: 1 seed"
    assert math.isnan(est.low) and math.isnan(est.high)


def test_three_seeds_give_a_t_interval_on_per_seed_differences_never_a_bootstrap_range():
    """The old percentile bootstrap gave [min, max] of the 3 per-seed values under a '95%' label."""
    runs = synthetic_runs({("sgd", 128): -0.10, ("adam", 128): -0.04}, seeds=(0, 1, 2), noise=0.01)  # extremes stay the extremes
    est, _ = _gap(runs, "sgd", "adam")
    assert est.method == "t, jackknife over 3 seeds, df 2" and "95%" not in est.method and "bootstrap" not in est.method
    # the contrast is linear in the seed means: the interval is the t-interval on the 3 per-seed differences
    piv = {o: runs[runs["optimizer"] == o].pivot(index="seed", columns="sigma_w", values="test_acc_best") for o in ("sgd", "adam")}
    hi = {o: piv[o].mean().idxmax() for o in piv}
    lo = {o: piv[o].mean().idxmin() for o in piv}
    d = 100 * ((piv["sgd"][hi["sgd"]] - piv["sgd"][lo["sgd"]]) - (piv["adam"][hi["adam"]] - piv["adam"][lo["adam"]])).to_numpy()
    from scipy import stats

    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / math.sqrt(3)
    assert est.effect == pytest.approx(d.mean(), rel=1e-9)
    assert (est.low, est.high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-9)
    assert est.low < d.min() and d.max() < est.high  # wider than the range of the seeds, unlike the bootstrap's
    table = claims(runs)
    spreads_rows = table[table["id"].str.contains("sgd_gt|spread")]
    assert not spreads_rows["ci_method"].str.contains("bootstrap").any()  # only the clock's exponent is bootstrapped
    assert Sp.CONTRAST_METHOD in claims_markdown(table)  # the table's spread contrasts: paired t on the end drops


def test_intervals_are_reproducible_and_match_spreads_csv():
    from initmem.claims.analysis import config_spreads, spreads

    runs = synthetic_runs({("sgd", 128): -0.10, ("adam", 128): -0.01})
    first, second = _gap(runs, "sgd", "adam")[0], _gap(runs.sample(frac=1, random_state=1), "sgd", "adam")[0]
    assert (first.low, first.high) == pytest.approx((second.low, second.high), rel=1e-12)  # row order irrelevant
    cs = config_spreads(spreads(runs)).set_index("optimizer")
    table = claims(runs).set_index("id")
    assert table.loc["sgd_b128_spread", "ci_low"] == pytest.approx(cs.loc["sgd", "spread_ci_low"])  # one method everywhere
    assert cs.loc["sgd", "spread_ci_method"] == table.loc["sgd_b128_spread", "ci_method"] == Sp.SPREAD_METHOD
    assert table.loc["sgd_b128_spread", "ci_low"] < table.loc["sgd_b128_spread", "reproduced"] < table.loc["sgd_b128_spread", "ci_high"]


def test_verdict_sides():
    assert V.verdict(1.0, 2.0, V.greater(0)) == "reproduced"
    assert V.verdict(-2.0, -1.0, V.greater(0)) == "not reproduced"
    assert V.verdict(0.2, 0.4, V.less(1.0)) == "reproduced"
    assert V.verdict(-0.2, 0.3, V.between(-0.5, 0.5)) == "reproduced"
    assert V.verdict(0.6, 0.9, V.between(-0.5, 0.5)) == "not reproduced"
    assert V.verdict(0.4, 0.9, V.between(-0.5, 0.5)) == "inconclusive"
    assert V.verdict(math.nan, math.nan, V.greater(0)) == "inconclusive"


@pytest.mark.parametrize("low, high, word", [
    (0.47, 0.81, "not reproduced"),   # a true 0.5 pp: the whole interval lies in the zone the words call gone
    (0.95, 1.37, "inconclusive"),     # a true 1.0 pp: across the zone's edge, neither way
    (0.0, 0.6, "not reproduced"),     # floored at 0, still inside [0, 1)
    (0.3, 1.0, "inconclusive"),       # the zone is [0, 1): an upper end at 1 is not inside it
    (1.02, 4.9, "reproduced"),        # wholly above the zone
    (1.0, 4.9, "inconclusive"),       # an end on the edge decides nothing
    (10.8, 14.5, "reproduced"),
])
def test_a_spread_side_with_a_gone_zone_is_read_both_ways(low, high, word):
    """'> 0 (not reproduced below 1 pp)' read one way called 0.60 [0.47, 0.81] reproduced; with the zone
    [0, 1) a margin of the rule, reproduced needs the interval wholly above it and not reproduced wholly
    inside it, and the side's text says so. The vectorised rule the power and calibration simulate agrees."""
    from initmem.claims.clock import RETAINED
    from initmem.stats.power import side_codes

    assert V.verdict(low, high, RETAINED) == word
    assert side_codes(np.array([low]), np.array([high]), RETAINED)[0] == {"reproduced": 1, "not reproduced": -1}.get(word, 0)
    assert RETAINED.text() == "> 1 (not reproduced within [0, 1): gone)"


@pytest.mark.parametrize("spread_pp, word", [(0.5, "not reproduced"), (1.0, "inconclusive"), (3.0, "reproduced")])
def test_the_claims_table_reads_a_small_spread_as_gone(spread_pp, word):
    """Through the claims table, an SGD spread of 0.5 pp measured to +-0.2 pp reads not reproduced (its
    interval lies in the zone the row's words call gone), 1 pp reads neither way, 3 pp reproduced; the
    row's p is its test's for the word it prints."""
    runs = synthetic_runs({("sgd", 16): -spread_pp / 100 / (SIGMAS[-1] - SIGMAS[0])}, noise=0.001)
    r = claims(runs).set_index("id").loc["sgd_keeps_spread_b16"]
    assert r["verdict"] == word, (r["reproduced"], r["ci_low"], r["ci_high"])
    assert r["paper_side"] == "> 1 (not reproduced within [0, 1): gone)"
    # the low end is a two-sided event (decides at p < 5%), the high end an intersection-union test at 2.5%
    assert r["p_decision"] < {"reproduced": 0.05, "not reproduced": 0.025}.get(word, 1.0)
    assert word != "inconclusive" or r["p_decision"] >= 0.025


@pytest.mark.parametrize("rng_seed", range(6))
def test_a_spread_reads_gone_exactly_where_every_pairs_tost_rejects(rng_seed):
    """The spread's high end is the intersection-union of per-pair equivalence tests: its interval lies
    within the gone zone [0, 1 pp) exactly where statsmodels' ``ttost_paired`` rejects "|difference| >=
    1 pp" at 2.5% for every pair of sigma_w (textbook TOST, one pair at a time; no multiplicity correction)."""
    from statsmodels.stats.weightstats import ttost_paired

    from initmem.stats.spreads import spread_arrays

    rng = np.random.default_rng(rng_seed)
    values = 0.30 + rng.normal(0, 0.02, (1, 12)) + rng.normal(0, 0.003 + 0.0015 * rng_seed, (4, 12))  # a seed effect + noise
    high = float(spread_arrays(values)["high"])
    tost = [ttost_paired(100 * values[i], 100 * values[j], -1.0, 1.0)[0] for i in range(4) for j in range(i + 1, 4)]
    assert (high < 1.0) == (max(tost) < 0.025), (high, tost)
    if rng_seed == 0:
        assert high < 1.0  # noise of 0.3 pp a run at 12 seeds (a 2 pp seed effect cancels) reads a zero spread as gone


@pytest.mark.parametrize("noise, word", [(0.02, "undecidable at this size"), (0.01, "inconclusive"), (0.003, "not reproduced")])
def test_a_spread_read_inside_the_gone_zone_says_whether_any_feasible_design_could_call_it_gone(noise, word):
    """A 0.3 pp SGD spread at 7 seeds: at 2 pp of run noise a truly gone spread would not read gone 80% of the
    time even at 64 seeds, so the row is ``undecidable at this size`` (never ``inconclusive``, as if seeds would
    help) and says why; at 1 pp it is ``inconclusive`` with the seeds that would decide it; at 0.3 pp it reads
    gone (``not reproduced`` of "still has a spread") already."""
    runs = synthetic_runs({("sgd", 16): -0.003 / (SIGMAS[-1] - SIGMAS[0])}, noise=noise, seeds=range(7), rng_seed=3)
    r = claims(runs).set_index("id").loc["sgd_keeps_spread_b16"]
    assert r["verdict"] == word, (r["ci_low"], r["ci_high"], r["note"])
    if word == "undecidable at this size":
        assert "out of this size's reach" in r["note"] and "at 64 seeds" in r["note"]
    if word == "inconclusive":
        assert "~57 seeds per configuration for a 50% chance" in r["would_decide"]


def test_claims_give_verdicts_for_every_batch_size_and_count_not_measured_apart():
    runs = synthetic_runs({("sgd", 16): -0.10, ("sgd", 128): -0.10, ("adam", 16): -0.005, ("adam", 128): -0.12})
    table = claims(runs)
    assert list(table.columns) == COLUMNS
    t = table.set_index("id")
    assert t.loc["sgd_gt_adam_b16", "verdict"] == "reproduced"
    assert t.loc["sgd_gt_adam_b128", "verdict"] == "not reproduced"  # this synthetic Adam remembers more at b=128
    assert t.loc["sgd_gt_adam_b16", "paper"] == pytest.approx(22.8 - 1.6)
    assert t.loc["batch_raises_adam_spread", "verdict"] == "reproduced"  # Adam: 0.5 pp at b=16, 30 pp at b=128
    assert t.loc["batch_raises_sgd_spread", "verdict"] == "inconclusive"  # SGD: the same slope at both
    # the paper's regime precondition is a diagnostic number, never a claim with a verdict
    assert t.loc["sgd_b128_interpolates", "kind"] == "number" and t.loc["sgd_b128_interpolates", "verdict"] == ""
    assert "diagnostic" in t.loc["sgd_b128_interpolates", "note"] and "not the paper's b=128 after 300" in t.loc["sgd_b128_interpolates", "note"]
    assert t.loc["sgd_gt_adam_b16", "share_fit"] == 1.0 and t.loc["sgd_gt_adam_b16", "read_at"] == "tau_best"
    md = claims_markdown(table)
    assert t.loc["sgd_keeps_spread_b16", "verdict"] == "reproduced" and t.loc["sgd_keeps_spread_b128", "verdict"] == "reproduced"
    assert ("6 directional claims measured, familywise after Holm: 4 reproduced, 1 not reproduced, 1 inconclusive; "
            "0 more not measured") in md
    assert "| sgd_gt_adam_b16 |" in md


def test_a_claim_about_fitted_networks_measured_on_unfitted_runs_is_outside_the_regime():
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005}, fitted=False)
    t = claims(runs).set_index("id")
    assert t.loc["sgd_gt_adam_b16", "verdict"] == "outside the paper's regime"
    assert t.loc["sgd_gt_adam_b16", "statistic_verdict"] == "reproduced"  # what the interval alone says stays visible
    assert t.loc["sgd_gt_adam_b16", "share_fit"] == 0.0 and "by fit: SGD b=16" in t.loc["sgd_gt_adam_b16", "note"]
    assert t.loc["sgd_b16_interpolates", "kind"] == "number"  # the precondition is a diagnostic, not a "not reproduced"
    assert t.loc["sgd_gt_adam_b16", "section"] == "Sec. 3.1" and "99.5%" in t.loc["sgd_gt_adam_b16", "regime"]


def test_the_regime_is_the_registrys_one_fit_share():
    """One regime rule, the registry's: an SGD configuration is in the paper's regime by fit only when at
    every sigma_w at least half its selected predictors fit (a third not fitting at each sigma_w leaves it
    in; two thirds puts it outside, never "inconclusive"); an adaptive one when half its runs reach 99.5%
    at some epoch; the row's regime text states both."""
    from initmem.claims.catalogue import lookup
    from initmem.claims.claim import FIT_SHARE

    assert FIT_SHARE == 0.5 and "at least 50% of the selected predictors at every sigma_w" in lookup("sgd_gt_adam_b16").regime_text()
    assert lookup("sgd_keeps_spread_b16").fit_share == FIT_SHARE  # the SGD spread claim has the rule too
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005})
    for share, word in ((1 / 3, "reproduced"), (2 / 3, "outside the paper's regime")):
        unfit = runs.copy()
        for _, at in unfit[unfit["optimizer"] == "sgd"].groupby("sigma_w"):
            unfit.loc[at.index[: round(len(at) * share)], "tau_interp"] = math.nan
        t = claims(unfit).set_index("id")
        assert t.loc["sgd_gt_adam_b16", "verdict"] == word, t.loc["sgd_gt_adam_b16", "note"]
        assert t.loc["sgd_keeps_spread_b16", "verdict"] == word, t.loc["sgd_keeps_spread_b16", "note"]
    adam_unfit = runs.copy()
    adam_unfit.loc[adam_unfit["optimizer"] == "adam", "tau_interp"] = math.nan
    row = claims(adam_unfit).set_index("id").loc["sgd_gt_adam_b16"]
    assert row["verdict"] == "outside the paper's regime" and "0 of its 18 runs" in row["note"] and "fewer than 50%" in row["note"]
    adam_early = runs.copy()  # Adam's best checkpoint before interpolation (Sec. 3.1): in its regime
    adam_early.loc[adam_early["optimizer"] == "adam", "tau_interp"] = 20
    assert claims(adam_early).set_index("id").loc["sgd_gt_adam_b16", "verdict"] == "reproduced"


def test_sgd_selected_predictors_that_do_not_fit_at_one_sigma_put_the_row_outside_the_regime():
    """Fitting at some epoch is not enough: at sigma_w 2.5 the selected predictors come before interpolation."""
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005})
    late = (runs["optimizer"] == "sgd") & (runs["sigma_w"] == runs["sigma_w"].max())
    runs.loc[late, "tau_interp"] = 20  # fits at epoch 20, selected at 10
    t = claims(runs).set_index("id")
    for cid in ("sgd_keeps_spread_b16", "sgd_gt_adam_b16"):
        assert t.loc[cid, "verdict"] == "outside the paper's regime" and t.loc[cid, "statistic_verdict"] == "reproduced"
        assert f"at sigma_w {runs['sigma_w'].max():g}: 0 of its 6 selected predictors fit" in t.loc[cid, "note"]
    own = runs.copy()  # the network's own eval-mode training accuracy, where recorded, decides
    own["train_acc_eval_best"] = 1.0
    assert claims(own).set_index("id").loc["sgd_keeps_spread_b16", "verdict"] == "reproduced"
    own.loc[own["optimizer"] == "sgd", "train_acc_eval_best"] = 0.9
    assert "selected predictors fit" in claims(own).set_index("id").loc["sgd_keeps_spread_b16", "note"]


def test_selected_predictors_read_with_stale_statistics_or_at_chance_are_outside_the_regime():
    """16 steps an epoch: tau_best 10 is 160 steps, before BatchNorm's moving statistics settle (458);
    with precise statistics the same runs are read; a chance-level selected network is outside too."""
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005})
    runs["n_train"] = 256
    row = claims(runs).set_index("id").loc["sgd_gt_adam_b16"]
    assert row["verdict"] == "outside the paper's regime" and "by BatchNorm statistics" in row["note"]
    assert "18 of its 18 selected predictors read before the moving statistics settled" in row["note"]
    runs["bn_eval"] = "precise"
    assert claims(runs).set_index("id").loc["sgd_gt_adam_b16", "verdict"] == "reproduced"
    runs["val_acc_best"] = 0.5
    runs.loc[(runs["optimizer"] == "adam") & (runs["sigma_w"] == runs["sigma_w"].min()), "val_acc_best"] = 0.108
    row = claims(runs).set_index("id").loc["sgd_gt_adam_b16"]
    assert row["verdict"] == "outside the paper's regime" and "6 of its 18 selected predictors at chance level" in row["note"]


def test_a_decay_read_below_the_papers_clock_is_outside_its_regime_by_clock():
    """Adam's runs in the paper end at T_adapt 23.8-379: a decay claim read at T_adapt 1.3 says so."""
    t = clock_table([("adam", 1e-3, 16, 20, 0.0)], lambda T: -0.1)  # T_adapt 1.28 at the end
    rows = t[t.index.str.startswith("adapt_beta_falls")]
    assert (rows["verdict"] == "not measured").all()  # below the paper's 23.8: the clock claim does not read it
    t = clock_table([("adam", 1e-2, 16, 40, 0.0)], lambda T: -0.1)  # T_adapt 25.6: inside
    assert t.loc["adapt_beta_falls_adam_b16_lr0.01_l2-0_e40", "verdict"] == "not reproduced"
    t = clock_table([("adam", 1e-2, 16, 20, 0.0)], lambda T: -0.1)  # T_adapt 12.8: below the paper's 23.8
    row = t.loc["adapt_beta_falls_large_T"]
    assert row["verdict"] == "not measured" and "T_adapt >= 23.8 (largest: 12.8)" in row["note"]


def test_main_claims_read_the_papers_learning_rate_only():
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005})
    other = synthetic_runs({("sgd", 16): -0.001, ("adam", 16): -0.2}, rng_seed=1).assign(lr=1e-2)
    other["run_id"] += "_lr1e-2"
    t = claims(pd.concat([runs, other], ignore_index=True)).set_index("id")
    assert t.loc["sgd_gt_adam_b16", "verdict"] == "reproduced" and t.loc["sgd_gt_adam_b16", "n_runs"] == 36


# --- |beta(t)| shapes on hand-made cells ---------------------------------------------------------

def beta_cell(beta: np.ndarray, noise: float = 1e-4, seeds: int = 4, sigmas=SIGMAS, seed: int = 0, offset: float = 0.0) -> V.Cell:
    """An (epoch x sigma_w x seed) val-accuracy cell whose sigma_w slope is ``beta[epoch]`` plus run
    noise, and a per-seed ``offset`` (the same at every sigma_w: it widens the OLS error, not the slope)."""
    rng = np.random.default_rng(seed)
    x = np.asarray(sigmas)
    values = 0.5 + beta[:, None, None] * x[None, :, None] + rng.normal(0, noise, (len(beta), len(x), seeds))
    values += rng.normal(0, offset, seeds)[None, None, :]
    epochs = np.arange(1, len(beta) + 1, dtype=float)
    return V.Cell("k", x, np.arange(seeds), values, epochs, {"epoch": epochs})


def _shape_estimate(cell: V.Cell, stat: str) -> V.Estimate:
    return V.estimate([cell], lambda m: getattr(Sh.beta_shape(*m[0], cell.epochs), stat), prepare=lambda c, s: c.fits(s))


def _decay(cell: V.Cell, floor_is_enough: bool = False) -> str:
    shape = Sh.beta_shape(*cell.fits([]), cell.epochs)
    fall = _shape_estimate(cell, "fall")
    return Sh.decay_verdict(fall, float(shape.observable[0]), bool(shape.last[0] <= shape.floor[0]), floor_is_enough)[0]


T = np.arange(100) / 99


def test_a_rising_curve_is_not_flat_and_a_flat_one_is():
    """The old statistic, log10(peak window / last window), measured 0 ('flat') for any rising curve."""
    rising = beta_cell(-0.01 * 10 ** T)       # |beta| rises one order over the run
    est = _shape_estimate(rising, "change")
    assert est.effect > 0.8 and V.side_verdict(est, V.between(-Sh.FLAT_ORDERS, Sh.FLAT_ORDERS)) == "not reproduced"
    flat = beta_cell(np.full(100, -0.1))
    est = _shape_estimate(flat, "change")
    assert abs(est.effect) < 0.01 and V.side_verdict(est, V.between(-Sh.FLAT_ORDERS, Sh.FLAT_ORDERS)) == "reproduced"
    falling = beta_cell(-0.1 * 10 ** -T)
    assert V.side_verdict(_shape_estimate(falling, "change"), V.between(-Sh.FLAT_ORDERS, Sh.FLAT_ORDERS)) == "not reproduced"


def test_a_flat_curve_at_1e_3_fails_the_level_check():
    band = V.between(Sh.PAPER_FLAT_LEVEL * 10 ** -Sh.LEVEL_ORDERS, Sh.PAPER_FLAT_LEVEL * 10 ** Sh.LEVEL_ORDERS)
    low = beta_cell(np.full(100, -1e-3), noise=1e-6)
    est = _shape_estimate(low, "last")
    assert est.effect == pytest.approx(1e-3, rel=0.01) and V.side_verdict(est, band) == "not reproduced"
    assert V.side_verdict(_shape_estimate(low, "change"), V.between(-Sh.FLAT_ORDERS, Sh.FLAT_ORDERS)) == "reproduced"  # flat, but not near 1e-1
    assert V.side_verdict(_shape_estimate(beta_cell(np.full(100, -0.1)), "last"), band) == "reproduced"


def test_a_one_order_fall_is_a_decay_and_rising_or_flat_curves_are_not():
    """An exact one-order fall measures 0.7 between levels held over two tenths; the threshold 0.6 passes it."""
    one_order = beta_cell(-0.1 * 10 ** -T, noise=1e-6)
    assert _shape_estimate(one_order, "fall").effect == pytest.approx(0.7, abs=0.02)
    assert _decay(one_order) == "reproduced"
    assert _decay(beta_cell(-0.01 * 10 ** T, noise=1e-6)) == "not reproduced"  # rising
    assert _decay(beta_cell(np.full(100, -0.1), noise=1e-6)) == "not reproduced"  # flat


def test_a_fall_the_noise_floor_hides_cannot_be_decided():
    noisy_fall = beta_cell(-0.1 * 10 ** (-2 * T), noise=0.04)  # two orders, but the floor is ~0.4 orders below the peak
    shape = Sh.beta_shape(*noisy_fall.fits([]), noisy_fall.epochs)
    assert shape.observable[0] < Sh.DECAY_ORDERS and shape.last[0] <= shape.floor[0]
    assert _decay(noisy_fall) == V.BELOW_FLOOR  # not "not reproduced"
    assert _decay(noisy_fall, floor_is_enough=True) == "reproduced"  # "reaches the noise floor" is what it did
    clear_fall = beta_cell(-0.1 * 10 ** (-2 * T), noise=1e-4)
    assert _decay(clear_fall) == "reproduced" and _shape_estimate(clear_fall, "fall").effect > 1.3


def test_a_zero_crossing_is_not_a_decay():
    # beta = -0.05 until the last fifth, where it crosses zero: |beta| ~ 3e-4 there would read as 2 orders of decay
    crossing = np.full(100, -0.05)
    crossing[80:] = np.linspace(-4e-4, 3e-4, 20)
    cell = beta_cell(crossing, noise=1e-6, offset=0.03)  # slopes exact, OLS standard error ~0.01
    old = np.log10(np.abs(cell.slopes([])[0][:80]).mean() / np.abs(cell.slopes([])[0][80:]).mean())
    assert old > 1.5  # what |beta| alone says
    shape = Sh.beta_shape(*cell.fits([]), cell.epochs)
    assert shape.last[0] <= shape.floor[0] and 0.3 < shape.observable[0] < Sh.DECAY_ORDERS
    assert Sh.sign_changes(cell.slopes([]), cell.epochs)
    assert _decay(cell) == V.BELOW_FLOOR  # the crossing is at the floor, which lies < 0.6 orders below the peak
    flipped = np.full(100, -0.05)
    flipped[80:] = 0.05  # a reversed slope as large as before: initialization still matters, no decay
    assert _decay(beta_cell(flipped, noise=1e-4)) == "not reproduced"


def test_slopes_and_standard_errors_equal_statsmodels_ols():
    from initmem.claims.analysis import beta_table

    rng = np.random.default_rng(3)
    rows = [dict(study="main", run_id=f"r{sw}_{s}", optimizer="adam", batch_size=16, sigma_w=sw, seed=s, epoch=e, epochs=3,
                 val_acc=0.5 - 0.03 * e * sw + rng.normal(0, 0.01), T_sgd=0.0, T_l2=0.0, T_wd=0.0, T_adapt=0.1 * e)
            for sw in SIGMAS for s in range(4) for e in (1, 2, 3)]
    history = pd.DataFrame(rows)
    slope, se = cell_from_history(history).fits([])
    beta = beta_table(history.assign(stopped_early=False, status="ok")).sort_values("epoch")
    assert slope[0] == pytest.approx(beta["beta"].to_numpy(), rel=1e-9)
    assert se[0] == pytest.approx(beta["se"].to_numpy(), rel=1e-9)


# --- claims on a paper-like and an evidence-like layout -------------------------------------------

@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
def test_claims_at_the_paper_layout_have_verdict_columns():
    from pathlib import Path

    import yaml

    from initmem.pipeline.grid import expand_studies

    paper = expand_studies(yaml.safe_load((Path(__file__).resolve().parents[1] / "config/paper.yaml").read_text()))
    rng = np.random.default_rng(0)
    rows = [{**r.spec, "study": study, "run_id": r.run_id, "test_acc_best": 0.8 - 0.05 * r.spec["sigma_w"] + rng.normal(0, 0.01),
             "train_acc_best": 1.0, "tau_best": 100, "tau_interp": 50, "status": "ok"} for study, rs in paper.items() for r in rs]
    from initmem.claims.catalogue import numbers, optimizers, repair

    runs = pd.DataFrame(rows)
    table = pd.DataFrame(would_decide([r for m in (numbers, optimizers, repair) for r in m.rows(runs, pd.DataFrame())]), columns=COLUMNS)  # the rows it reads
    t = table.set_index("id")
    assert t.loc["sgd_gt_adam_b256", "n_runs"] == 500 and t.loc["sgd_gt_adam_b256", "n_seeds"] == 10
    assert t.loc["lr_reduces_sgd_b16_0.001_to_0.01", "verdict"] == "not testable with one seed"  # the paper's lr_l2 has one seed
    assert set(table.loc[table["kind"] == "direction", "verdict"]) <= set(V.VERDICTS)
    assert "300 epochs, 25 sigma_w, 10 seeds" in t.loc["sgd_b128_spread", "scale"]


def test_claims_follow_the_configs_own_layout():
    """An evidence-like layout: momentum, AdamW and Muon only at b=16, SGD and Adam also at b=8 and
    b=32, the lr_l2 study at eta 1e-3/1e-1 with L2 0/1e-2 (not the paper's eta=1e-2 ablation)."""
    rows = []
    layout = [(o, 16) for o in ("sgd", "sgd_momentum", "adam", "adamw", "muon")] + [(o, b) for o in ("sgd", "adam") for b in (8, 32)]
    for opt, b in layout:
        rows.append(clock_history([(opt, 1e-3, b, 10, 0.0)], lambda T: -0.1 * math.exp(-T["T_adapt"] / 0.5)).assign(study="main"))
    for lr in (1e-3, 1e-1):
        for l2 in (0.0, 1e-2):
            rows.append(clock_history([("sgd", lr, 16, 10, l2)], lambda T: -0.1).assign(study="lr_l2"))
    history = pd.concat(rows, ignore_index=True)
    history["run_id"] = history["study"] + "_" + history["run_id"]
    t = claims(runs_of(history), history).set_index("id")
    assert "momentum_lt_sgd_b16" in t.index and t.loc["sgd_gt_adamw_b8", "verdict"] == "not measured"
    assert {"beta_decay_adamw_b16", "beta_decay_muon_b16", "beta_decay_adam_b8", "beta_decay_adam_b32",
            "beta_flat_sgd_b8", "beta_level_sgd_b16", "beta_flat_sgd_b32"} <= set(t.index)
    assert t.loc["beta_decay_sgd_l2_b16", "quantity"].startswith("SGD eta=0.1 L2=0.01")  # the config's strongest L2
    assert "instead" in t.loc["beta_decay_sgd_l2_b16", "note"]
    assert t.loc["beta_decay_adam_b8", "statistic_verdict"] == "reproduced"  # exp(-T/0.5) over T_adapt up to 1.3: several orders
    assert t.loc["beta_decay_adam_b8", "verdict"] == "outside the paper's regime"  # ... but the paper's Adam ends at T_adapt >= 23.8
    assert "by clock" in t.loc["beta_decay_adam_b8", "note"]


# --- the clock tier -------------------------------------------------------------------------------

def clock_rows(cells, slope_of, build) -> pd.DataFrame:
    """Only the rows one clock-claim builder (``build(clock cells, scale)``) makes: what a test reads,
    without the whole claims table."""
    from initmem.claims.clock import clock_cells

    history = clock_history(cells, slope_of)
    return pd.DataFrame(would_decide(build(clock_cells(runs_of(history), history), "scale")), columns=COLUMNS).set_index("id")


ADAM_CELLS = [("adam", 1e-3, 16, 40, 0.0), ("adam", 1e-2, 16, 4, 0.0), ("adam", 1e-3, 32, 40, 0.0), ("adam", 1e-2, 64, 40, 0.0)]


def test_adaptive_beta_falls_once_t_adapt_is_large():
    from initmem.claims.catalogue.clocks import adaptive_fall_rows

    t = clock_rows(ADAM_CELLS, lambda T: -0.1 * math.exp(-T["T_adapt"] / 3), adaptive_fall_rows)
    # lr 1e-2, b=64, 40 epochs: T_adapt 6.4; the rest stay below the paper's 23.8 too -> not measured
    assert t.loc["adapt_beta_falls_large_T", "verdict"] == "not measured"
    t = clock_rows([*ADAM_CELLS, ("adam", 1e-2, 16, 40, 0.0)], lambda T: -0.1 * math.exp(-T["T_adapt"] / 3), adaptive_fall_rows)
    row = t.loc["adapt_beta_falls_adam_b16_lr0.01_l2-0_e40"]
    assert row["verdict"] == "reproduced" and row["read_at"] == "curve over the run"
    flat = clock_rows([("adam", 1e-2, 16, 40, 0.0)], lambda T: -0.1, adaptive_fall_rows)
    assert flat.loc["adapt_beta_falls_adam_b16_lr0.01_l2-0_e40", "verdict"] == "not reproduced"


SGD_CELLS = [("sgd", 1e-3, 16, 20, 0.0), ("sgd", 2e-2, 16, 20, 0.0), ("sgd", 1e-1, 16, 20, 0.0)]
# T_SGD at the end (constant lr: the paper's arithmetic): 8e-5, 0.032 and 0.8 (at or below the paper's 0.94); with 40
# epochs at b=16: lr 0.15 gives 3.6 (between the paper's points), lr 0.2 gives 6.4 (past its 4.7)


def test_sgd_keeps_its_spread_at_the_papers_small_clocks_and_loses_it_past_them():
    cells = [*SGD_CELLS[:2], ("sgd", 2e-1, 16, 40, 0.0)]
    t = clock_table(cells, lambda T: -0.1 * math.exp(-T["T_sgd"]))  # the spread decays with T_SGD
    assert t.loc["sgd_T_sgd_b16_lr0.02_l2-0_e20_retains", "verdict"] == "reproduced"   # T 0.032: still a spread
    assert t.loc["sgd_T_sgd_b16_lr0.2_l2-0_e40_drops", "verdict"] == "reproduced"      # T 6.4: smaller than at 8e-5
    assert "sgd_drops_past_threshold" not in t.index
    rising = clock_table(cells, lambda T: -0.1 * (1 + T["T_sgd"] / 10))  # the spread grows with T_SGD (accuracies stay above chance)
    assert rising.loc["sgd_T_sgd_b16_lr0.2_l2-0_e40_drops", "verdict"] == "not reproduced"
    gone = clock_table(cells, lambda T: -0.1 if T["T_sgd"] < 1e-3 else 0.0)  # no spread left at T 0.032
    assert gone.loc["sgd_T_sgd_b16_lr0.02_l2-0_e20_retains", "verdict"] == "not reproduced"
    between = clock_table([*SGD_CELLS[:2], ("sgd", 1.5e-1, 16, 40, 0.0)], lambda T: -0.1)  # T 3.6: the paper states nothing there
    assert not between.index.str.startswith("sgd_T_sgd_b16_lr0.15").any()
    assert between.loc["sgd_drops_past_threshold", "verdict"] == "not measured"


def test_l2_repairs_past_the_papers_t_l2_point():
    cells = [("sgd", 1e-2, 16, 40, 0.0), ("sgd", 1e-2, 16, 40, 2e-1), ("sgd", 1e-2, 16, 40, 1e-3)]  # T_L2 5.12 and 0.026
    t = clock_table(cells, lambda T: -0.1 * math.exp(-3 * T["T_l2"]))
    assert t.loc["l2_T_sgd_b16_lr0.01_l2-0.2_e40_drops", "verdict"] == "reproduced"     # repairs past 4.7
    assert t.loc["l2_T_sgd_b16_lr0.01_l2-0.001_e40_retains", "verdict"] == "reproduced"  # keeps at 0.026
    assert "l2_repairs_past_threshold" not in t.index
    t = clock_table(cells, lambda T: -0.1 * (1 + T["T_l2"] / 10))  # L2 raises the spread (accuracies stay above chance)
    assert t.loc["l2_T_sgd_b16_lr0.01_l2-0.2_e40_drops", "verdict"] == "not reproduced"


def test_l2_past_the_threshold_is_read_against_a_smaller_l2_when_there_is_no_run_without():
    cells = [("sgd", 1e-2, 16, 40, 2e-1), ("sgd", 1e-2, 16, 40, 1e-3)]  # T_L2 5.12 and 0.026, no L2 = 0 cell
    t = clock_table(cells, lambda T: -0.1 * math.exp(-3 * T["T_l2"]))
    row = t.loc["l2_T_sgd_b16_lr0.01_l2-0.2_e40_drops"]
    assert row["verdict"] == "reproduced" and row["quantity"].startswith("SGD b=16 lr=0.01 L2=0.001")
    assert "l2_repairs_past_threshold" not in t.index
    assert clock_table(cells, lambda T: -0.1 * (1 + T["T_l2"] / 10)).loc["l2_T_sgd_b16_lr0.01_l2-0.2_e40_drops", "verdict"] == "not reproduced"
    alone = clock_table(cells[:1], lambda T: -0.1)  # nothing below the threshold to compare with
    assert alone.loc["l2_repairs_past_threshold", "verdict"] == "not measured"


def test_l2_past_the_threshold_reads_its_own_spread_against_below_one_pp():
    """"lambda = 5e-3 gives T_L2 ~ 4.7 and collapses the spread below 1 pp": past the threshold, a configuration's
    own spread is read against the sentence's size, with or without a reference to contrast it with; a spread
    with no sigma_w slope reads gone (reproduced), 24 pp reads above the zone (not reproduced); before the
    threshold no such row exists."""
    cid = "l2_T_sgd_b16_lr0.01_l2-0.2_e40_below_1pp"
    gone = clock_table([("sgd", 1e-2, 16, 40, 2e-1)], lambda T: 0.0)  # T_L2 5.12, alone
    row = gone.loc[cid]
    assert row["verdict"] == "reproduced" and row["ci_high"] < 1.0, (row["ci_low"], row["ci_high"])
    assert row["paper_side"] == "< 1" and "past T_L2 4.7: below 1 pp" in row["quantity"]
    left = clock_table([("sgd", 1e-2, 16, 40, 2e-1)], lambda T: -0.1)
    assert left.loc[cid, "verdict"] == "not reproduced" and left.loc[cid, "ci_low"] > 1.0
    before = clock_table([("sgd", 1e-2, 16, 40, 1e-3)], lambda T: 0.0)  # T_L2 0.026: the paper's "still leaves a spread" side
    assert not before.index.str.endswith("_below_1pp").any()


def test_each_configuration_is_read_at_tau_best_and_at_the_end():
    from initmem.claims.catalogue.clocks import cell_rows

    t = clock_rows(ADAM_CELLS[:2], lambda T: -0.1 * math.exp(-T["T_adapt"] / 2), cell_rows)
    cells = t[t["kind"] == "cell"]
    assert len(cells) == 2 * 4 and set(cells["read_at"]) == {"tau_best", "end of training"}
    row = t.loc["cell_adam_b16_lr0.01_l2-0_e4_spread_end"]
    assert row["reproduced"] == pytest.approx(100 * 2.4 * 0.1 * math.exp(-0.01 * 4 * 64 / 2), rel=0.01)
    assert row["share_fit"] == 1.0 and row["share_best_fitted"] == 1.0 and "T_adapt 2.56" in row["note"]


# --- a single spread against its noise ------------------------------------------------------------

def _spread_cell(profile: np.ndarray, n_seeds: int, rng: np.random.Generator, noise: float = 0.03) -> V.Cell:
    """Test accuracies at four sigma_w: ``profile`` + a seed effect + run noise."""
    values = 0.6 + profile[:, None] + rng.normal(0, 0.05, n_seeds)[None, :] + rng.normal(0, noise, (len(profile), n_seeds))
    return V.Cell("x", np.array([0.1, 0.5, 1.2, 2.5]), np.arange(n_seeds), values)


@pytest.mark.parametrize("n_seeds", (3, 5, 10))
def test_a_true_zero_spread_is_covered_and_its_noise_is_named(n_seeds):
    """sigma_w does nothing: the seed-jackknife t-interval of max - min covered 0 only 80-84% of the
    time; the paired interval must cover it >= 93%, its p-value must reject <= 7% of the time, and
    the noise-only spread must be what the observed spreads are on average (they are all noise)."""
    rng = np.random.default_rng(n_seeds)
    ests = [Sp.spread_estimate(_spread_cell(np.zeros(4), n_seeds, rng)) for _ in range(300)]
    assert np.mean([e.low <= 0 <= e.high for e in ests]) >= 0.93
    assert np.mean([e.p_null < 0.05 for e in ests]) <= 0.07
    assert np.mean([e.null_mean for e in ests]) == pytest.approx(np.mean([e.effect for e in ests]), rel=0.25)


@pytest.mark.parametrize("n_seeds", (3, 10))
def test_a_spread_of_the_variance_alone_is_not_a_spread(n_seeds):
    """sigma_w changes only the noise (run sd 1 pp at the smallest sigma_w to 6 pp at the largest):
    a test that assumes one variance (the permutation of sigma_w labels within seeds, an F test)
    rejects 8-13% of the time; the paired t-test must stay at its 5% (a 2.5% Monte Carlo margin)."""
    rng = np.random.default_rng(10 + n_seeds)
    sd = np.array([0.01, 0.02, 0.04, 0.06])
    values = 0.6 + sd[None, :, None] * rng.standard_normal((4000, 4, n_seeds))
    assert np.mean(Sp.spread_arrays(values)["p"] < 0.05) <= 0.06


@pytest.mark.parametrize("n_seeds", (3, 10))
def test_a_real_spread_is_covered_and_found(n_seeds):
    rng = np.random.default_rng(7)
    truth = np.array([0.0, -0.05, -0.10, -0.15])  # 15 pp
    ests = [Sp.spread_estimate(_spread_cell(truth, n_seeds, rng)) for _ in range(200)]
    assert np.mean([e.low <= 15 <= e.high for e in ests]) >= 0.93
    assert np.mean([e.p_null < 0.05 for e in ests]) >= (0.5 if n_seeds == 3 else 0.95)


def test_a_large_spread_on_a_small_grid_is_found_and_its_interval_is_the_noise():
    """2 sigma_w x 3 seeds, a 28.5 pp spread under 1.6 pp run noise (the small tier's SGD b=16): a
    sigma_w permutation could not give p below 1/(2!)^2 = 0.25 and read [0, 2 x observed]; the
    paired test must find it nearly always, and the interval's width must follow the noise (the
    same at 5 and 28.5 pp), not the signal."""
    rng = np.random.default_rng(5)
    def width_and_found(spread):
        v = 0.8 - np.array([0.0, spread])[None, :, None] + 0.016 * rng.standard_normal((2000, 2, 3))
        s = Sp.spread_arrays(v)
        return np.mean(s["high"] - s["low"]), np.mean(s["p"] < 0.05), np.mean((s["low"] <= 100 * spread) & (100 * spread <= s["high"]))
    w_big, found, covered = width_and_found(0.285)
    w_small, _, _ = width_and_found(0.05)
    assert found >= 0.99 and covered >= 0.93
    assert w_big == pytest.approx(w_small, rel=0.15) and w_big < 15  # the permutation interval was 57 pp wide


def test_the_spreads_noise_is_the_seed_blocked_models_residual():
    """The noise behind the noise-only spread: statsmodels' OLS accuracy ~ C(sigma_w) + C(seed)."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(2)
    cell = _spread_cell(np.array([0.0, -0.02, -0.05, -0.1]), 5, rng)
    df = pd.DataFrame([(s, r, cell.values[i, j]) for i, s in enumerate(cell.sigmas) for j, r in enumerate(cell.seeds)],
                      columns=["sigma_w", "seed", "acc"])
    fit = smf.ols("acc ~ C(sigma_w) + C(seed)", df).fit()
    assert float(Sp.residual_sd(cell.values)) == pytest.approx(math.sqrt(fit.scale), rel=1e-9)
    est = Sp.spread_estimate(cell)
    assert est.p_null == pytest.approx(stats.ttest_rel(cell.values[0], cell.values[-1]).pvalue, rel=1e-9)


def test_a_spread_below_one_pp_is_decided_against_the_null():
    """"collapses below 1 pp": reproduced with enough seeds at small noise, never from a spread
    the noise alone could make."""
    rng = np.random.default_rng(1)
    quiet = Sp.spread_estimate(_spread_cell(np.zeros(4), 10, rng, noise=0.0005))
    assert V.side_verdict(quiet, V.less(1.0)) == "reproduced"
    loud = Sp.spread_estimate(_spread_cell(np.zeros(4), 3, rng, noise=0.03))
    assert V.side_verdict(loud, V.less(1.0)) == "inconclusive" and loud.low == 0
    big = Sp.spread_estimate(_spread_cell(np.array([0, 0, 0, -0.2]), 10, rng, noise=0.01))
    assert V.side_verdict(big, V.less(1.0)) == "not reproduced"


# --- shapes that cannot be fooled ------------------------------------------------------------------

def _flat_verdict(cell: V.Cell) -> str:
    change = _shape_estimate(cell, "change")
    decided = Sh.flat_decided(change, Sh.beta_shape(*cell.fits([]), cell.epochs))
    return decided[0] if decided else V.side_verdict(change, V.between(-Sh.FLAT_ORDERS, Sh.FLAT_ORDERS))


def test_a_hump_or_a_dip_in_the_settled_run_is_not_flat():
    """The old change (last tenth over second tenth) called a one-order hump or dip between them flat."""
    bump = np.exp(-((T - 0.5) / 0.12) ** 2)
    hump, dip = -0.01 * 10 ** bump, -0.1 * 10 ** -bump
    assert _flat_verdict(beta_cell(hump)) == "not reproduced" and abs(_shape_estimate(beta_cell(hump), "change").effect) > 0.8
    assert _flat_verdict(beta_cell(dip)) == "not reproduced" and abs(_shape_estimate(beta_cell(dip), "change").effect) > 0.6
    assert _flat_verdict(beta_cell(np.full(100, -0.1))) == "reproduced"


def test_a_rise_from_below_the_noise_floor_is_not_flat():
    """|beta| rises two orders, from 1e-4 to just above a floor of ~0.01: the change from the floor is
    a lower bound, so "flat" cannot be decided (the old rule measured ~0.1 orders: flat)."""
    rise = -1e-4 * 10 ** (2.2 * T)
    cell = beta_cell(rise, offset=0.005, noise=1e-6)
    shape = Sh.beta_shape(*cell.fits([]), cell.epochs)
    assert shape.windows[0, 1] < shape.floor[0] < shape.windows[0, -1]
    assert _flat_verdict(cell) == V.BELOW_FLOOR


def test_a_single_spike_or_an_early_transient_is_not_a_decay():
    """A 10x spike in one tenth, or a transient in the first tenth, read as a one-order decay from the
    peak window; a level must hold over two tenths to count."""
    spike = np.full(100, -0.01)
    spike[50:60] = -0.1
    assert _decay(beta_cell(spike, noise=1e-6)) == "not reproduced"
    early = np.full(100, -0.01)
    early[:10] = -0.1
    assert _decay(beta_cell(early, noise=1e-6)) == "not reproduced"
    assert _shape_estimate(beta_cell(early, noise=1e-6), "fall").effect < 0.05


# --- power -------------------------------------------------------------------------------------------

def test_the_seeds_to_see_a_fall_grow_with_the_orders_hidden_below_the_floor():
    assert Sh.seeds_to_see_fall(0.3, 0.6, 3, 2.0) == pytest.approx((3 * 2.0 * 10 ** 0.6, math.ceil(3 * 10 ** 0.6)))


@pytest.mark.parametrize(("direction", "size", "word"), [
    ("reproduced", "reproduced", "reproduced"),
    ("reproduced", "not reproduced", "direction only"),
    ("reproduced", "inconclusive", "inconclusive"),
    ("inconclusive", "not reproduced", "not reproduced"),
    ("not reproduced", "reproduced", "not reproduced"),
    ("inconclusive", "inconclusive", "inconclusive"),
    ("not testable with one seed", "reproduced", "not testable with one seed"),
])
def test_a_sentence_with_a_direction_and_a_size_needs_both(direction, size, word):
    assert V.sentence_verdict(direction, size) == word


def _optimizer_rows(runs: pd.DataFrame, adam_n_train: int | None = None) -> pd.DataFrame:
    """The optimizers family's rows alone, the runs given their schedule (cosine over 10 epochs: T_adapt at
    tau_best 12.6 at 40,000 images; Adam's ``adam_n_train`` images set its clock: 0.1 at 320)."""
    from initmem.claims.catalogue import optimizers

    runs = runs.assign(schedule="cosine", alpha=0.01, l2=0.0)
    if adam_n_train is not None:
        runs.loc[runs["optimizer"] == "adam", "n_train"] = adam_n_train
    return pd.DataFrame(optimizers.rows(runs, pd.DataFrame())).set_index("id")


def test_an_adaptive_optimizer_that_keeps_most_of_sgds_spread_reads_direction_only():
    """"Adam-family methods largely wash out initialization scale": SGD's spread above Adam's is its
    direction; Adam keeping 77% of SGD's spread fails its size, so the row never reads a bare reproduced."""
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.077}, noise=0.004)
    row = _optimizer_rows(runs).loc["sgd_gt_adam_b16"]
    assert row["statistic_verdict"] == row["verdict"] == "direction only", row["note"]
    assert "direction (SGD's spread above Adam's): reproduced" in row["note"] and "size ('largely wash out'" in row["note"]
    assert re.search(r"Adam keeps 7\d% of SGD.s", row["note"]) and "the paper's 7%" in row["note"]
    assert row["ci_low"] > 0  # the row's number is the direction's contrast
    # washed out (Adam keeps 5%): the whole sentence
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005}, noise=0.004)
    assert _optimizer_rows(runs).loc["sgd_gt_adam_b16", "verdict"] == "reproduced"


def test_an_adaptive_spread_read_before_the_papers_first_epoch_clock_is_outside_the_regime():
    """The paper's Adam predictors are selected at least one epoch in (T_adapt 2.5 at b=16): one selected
    at T_adapt 0.1 has not had the clock the sentence is about."""
    from initmem.claims.catalogue.optimizers import paper_first_epoch_t_adapt

    assert paper_first_epoch_t_adapt(16) == pytest.approx(2.5, rel=1e-3) and paper_first_epoch_t_adapt(256) == pytest.approx(0.157, rel=1e-2)
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005}, noise=0.004)
    row = _optimizer_rows(runs, adam_n_train=320).loc["sgd_gt_adam_b16"]
    assert row["verdict"] == "outside the paper's regime" and row["statistic_verdict"] == "reproduced"
    assert "by clock at the selected checkpoint: Adam's selected predictors at T_adapt 0.1" in row["note"]
    assert "the paper's at least 2.5 (one epoch at b=16)" in row["note"]


def test_a_zero_sgd_spread_is_read_without_dividing_by_it():
    """Tiny runs where nothing learned: every run at one accuracy. The wash-out row still reads (no
    ZeroDivisionError), its size note giving both spreads in pp."""
    runs = synthetic_runs({("sgd", 16): 0.0, ("adam", 16): 0.0}, noise=0.0)
    row = _optimizer_rows(runs).loc["sgd_gt_adam_b16"]
    assert "Adam keeps 0 pp, SGD's spread 0" in row["note"]


def test_a_one_seed_wash_out_row_has_no_p_and_no_crash():
    runs = synthetic_runs({("sgd", 16): -0.10, ("adam", 16): -0.005}, seeds=(0,))
    row = _optimizer_rows(runs).loc["sgd_gt_adam_b16"]
    assert row["verdict"] == "not testable with one seed" and math.isnan(row["p_decision"])


def test_the_claims_and_spreads_read_the_final_test_where_every_run_has_it():
    """Runs evaluated once at tau_best on the final test images (``test_acc_final``) are read by the claims and the
    spreads table in place of the epoch's ``test_acc_best``; a configuration where one run lacks it reads ``test_acc_best``."""
    from initmem.claims.analysis import spreads

    runs = synthetic_runs({("sgd", 16): -0.10}, noise=0.01, seeds=range(4))
    final = runs.assign(test_acc_final=0.5 + 0.02 * (runs["sigma_w"] == SIGMAS[0]))   # a 2 pp spread
    assert claims(final).set_index("id").loc["sgd_keeps_spread_b16", "reproduced"] == pytest.approx(2.0)
    assert spreads(final)["spread_pp"].iloc[0] == pytest.approx(2.0)
    partial = final.assign(test_acc_final=final["test_acc_final"].where(final.index > 0))
    assert claims(partial).set_index("id").loc["sgd_keeps_spread_b16", "reproduced"] == pytest.approx(
        claims(runs).set_index("id").loc["sgd_keeps_spread_b16", "reproduced"])


def test_a_complete_cells_sums_are_the_masked_sums_bit_for_bit():
    """Every run present (a bootstrap draw of whole cells): the per-replicate sums, counts and OLS fits are the same
    bits as the masked arithmetic gives (NaN runs set to 0 and uncounted), for the full sample and each seed left out."""
    values = np.random.default_rng(4).normal(0.6, 0.05, (30, 5, 7))
    cell = V.Cell("c", np.linspace(0.1, 2.5, 5), np.arange(7), values, np.arange(1.0, 31.0))
    seeds = list(range(7))
    for power in (1, 2):
        v, c = np.where(np.isfinite(values), values, 0.0) ** power, np.isfinite(values).astype(float)
        masked = (np.stack([v.sum(-1)] + [v.sum(-1) - v[..., [j]].sum(-1) for j in seeds]),
                  np.stack([c.sum(-1)] + [c.sum(-1) - c[..., [j]].sum(-1) for j in seeds]))
        total, count = cell.sums(seeds, power)
        assert np.array_equal(total, masked[0]) and np.array_equal(count, masked[1])
    holed = V.Cell("c", cell.sigmas, cell.seeds, np.where(np.arange(7) == 3, np.nan, values), cell.epochs)
    assert np.isfinite(holed.fits(seeds)[0]).all() and holed.sums([], 1)[1].max() == 6  # a missing seed: masked and uncounted
