"""The calibration study's fast subset: every spread and |beta| shape rule meets its bars at every
design (false ``reproduced`` <= 5% under every null, coverage >= 93% where 95% is stated), and the
bar check itself catches a rule that does not."""

import pandas as pd
import pytest
from conftest import ROOT, script

from initmem.planner import calibration as C
from initmem.stats import verdicts as V


def _benchmark():
    return script("benchmarks/verdict_calibration.py")


@pytest.fixture(scope="module")
def quick_table() -> pd.DataFrame:
    b = _benchmark()
    mine = {k: v for k, v in b.RULES.items() if k.startswith("initmem.planner.calibration:")}
    return b.collect(quick=True, modules=mine)


def test_every_rule_meets_its_bars_at_every_design(quick_table):
    b = _benchmark()
    designs = quick_table["design"].str.split(":").str[0]
    assert set(designs) == {"small-tier", "clocks-tier", "decisive-tier", "paper", "regime-tier", "selected-tier"}
    assert set(quick_table.loc[designs == "regime-tier", "rule"]) == {"spread_gone"}  # every tier whose rows read a gone zone
    # the selected-fit tier's curves also with its own run noise persisting along epochs (AR(1))
    persistent = quick_table[quick_table["design"].str.contains("AR\\(1\\)")]
    assert set(persistent["rule"]) == {"beta_flat", "beta_decay"} and persistent["design"].str.startswith("selected-tier").all()
    assert {"spread_nonzero", "spread_below_1pp", "spread_gone", "spread_contrast", "accuracy_contrast", "beta_flat", "beta_decay"} <= set(quick_table["rule"])
    assert list(quick_table.columns) == list(C.ROW_KEYS)
    bad = b.failures(quick_table)
    assert bad.empty, bad.to_string()


def test_the_nulls_include_a_noise_that_changes_with_sigma_w(quick_table):
    nulls = quick_table[quick_table["truth"].str.contains("variance|noise x1")]
    assert set(nulls["rule"]) == {"spread_nonzero", "spread_contrast", "wash_out"} and nulls["false_reproduced"].notna().all()


def test_the_paper_design_decides_the_papers_spreads(quick_table):
    paper = quick_table[quick_table["design"].str.startswith("paper")].set_index(["rule", "truth"])
    assert paper.loc[("spread_nonzero", "linear 1.6 pp"), "decision_rate"] >= 0.9
    assert paper.loc[("spread_contrast", "SGD / Adam b=16: 22.8 / 1.6 pp"), "decision_rate"] >= 0.9


def test_an_ar1_design_persists_its_noise_along_epochs_at_its_sd():
    """A stationary AR(1) at the design's noise: lag-1 autocorrelation the coefficient, the sd unchanged,
    and independent noise (coefficient 0) the same draws as before."""
    import numpy as np

    d = C.Design("d", (0.1, 2.5), 4, 0.02, 300, persistence=0.8)
    x = C.epoch_noise(d, (4000, 2, 50), np.random.default_rng(0))
    lag1 = np.mean([np.corrcoef(x[:-1, i, j], x[1:, i, j])[0, 1] for i in range(2) for j in range(50)])
    assert abs(lag1 - 0.8) < 0.01 and abs(x.std() - 0.02) < 0.001
    flat = C.Design("d", (0.1, 2.5), 4, 0.02, 300)
    assert np.array_equal(C.epoch_noise(flat, (5, 2, 3), np.random.default_rng(1)), 0.02 * np.random.default_rng(1).standard_normal((5, 2, 3)))


def test_persistence_is_the_median_lag1_autocorrelation_of_each_runs_noise_about_its_mean_curve():
    import numpy as np

    rng = np.random.default_rng(3)
    rows = []
    for seed in range(6):
        e = 0.0
        for epoch in range(1, 201):
            e = 0.6 * e + np.sqrt(1 - 0.36) * rng.standard_normal()
            rows.append({"run_id": f"r{seed}", "epoch": epoch, "epochs": 200, "sigma_w": 1.0, "val_acc": 0.5 + epoch / 1000 + 0.02 * e})
    assert abs(C.persistence(pd.DataFrame(rows)) - 0.6) < 0.12


def test_the_bar_check_catches_a_rule_that_fails():
    b = _benchmark()
    rows = pd.DataFrame([dict(rule="r", design="d", truth="null", n_sims=4000, false_reproduced=0.08, false_not_reproduced=float("nan"),
                              coverage=0.95, decision_rate=0.08),
                         dict(rule="r", design="d", truth="effect", n_sims=4000, false_reproduced=float("nan"), false_not_reproduced=0.0,
                              coverage=0.90, decision_rate=0.5),
                         dict(rule="r", design="d", truth="ok", n_sims=4000, false_reproduced=0.05, false_not_reproduced=float("nan"),
                              coverage=0.94, decision_rate=0.05)])
    assert list(b.failures(rows)["truth"]) == ["null", "effect"]


def test_a_spread_with_a_gone_zone_is_calibrated_inside_on_and_above_its_edge(quick_table):
    """The two-way spread rule (reproduced wholly above [0, 1 pp), not reproduced wholly inside it) under
    truths of 0, 0.5, 1 and 1.5 pp: on the edge either word is false, so both rates are stated."""
    gone = quick_table[quick_table["rule"] == "spread_gone"]
    assert set(gone["truth"].str.split(" pp").str[0]) == {"linear 0", "linear 0.5", "linear 1", "linear 1.5"}
    edge = gone[gone["truth"].str.contains("edge")]
    assert edge["false_reproduced"].notna().all() and edge["false_not_reproduced"].notna().all()


def test_run_offsets_and_heavy_tails_keep_the_designs_noise_sd_and_its_share_is_measured():
    """The flat rule's calibration noise: a per-run offset carrying the measured share of the variance
    (noise_parts), and Student t noise of the same sd; a design without either keeps its draws."""
    import numpy as np

    d = C.Design("d", (0.1, 2.5), 4, 0.02, 300, persistence=0.5, offset=0.8)
    x = C.epoch_noise(d, (300, 40, 50), np.random.default_rng(0))
    run_means = x.mean(axis=0)
    assert abs(x.std() - 0.02) < 0.001 and abs(run_means.var() / x.var() - 0.8) < 0.05
    t3 = C.epoch_noise(C.Design("d", (0.1, 2.5), 4, 0.02, 300, tails=3.0), (2000, 2, 50), np.random.default_rng(0))
    assert abs(t3.std() - 0.02) < 0.002 and np.mean(np.abs(t3) > 4 * 0.02) > 0.005  # normal: 6e-5 beyond 4 sd
    rng = np.random.default_rng(5)
    rows = []
    for seed in range(8):
        offset = 0.03 * rng.standard_normal()
        rows += [{"run_id": f"r{seed}", "epoch": e, "epochs": 100, "sigma_w": 1.0, "val_acc": 0.5 + offset + 0.01 * rng.standard_normal()}
                 for e in range(1, 101)]
    share, phi = C.noise_parts(pd.DataFrame(rows))
    assert 0.7 < share < 0.98 and abs(phi) < 0.2


def test_the_flat_rules_edge_truths_sit_exactly_on_its_margin():
    import numpy as np

    from initmem.stats import shapes as Sh

    for sign in (1.0, -1.0):
        beta = C.flat_edge(sign, 300)
        e = np.arange(1, 301, dtype=float)
        change = Sh.Shape(Sh.window_means(beta[None, :], e), np.zeros(1)).change[0]
        assert change == pytest.approx(sign * Sh.FLAT_ORDERS, abs=1e-9)


def test_the_gone_design_is_sized_on_the_committed_noise_of_its_one_configuration():
    """``gone_calibration --design``: the gone tier's configuration is sized on the recipe tier's 7 seeds of
    SGD lr 1e-2 L2 0.1 at 10,000 test images, never on the gone tier's own 40 (committed since: the design
    regenerates as it was written before them); at 0.1 pp of noise a truly gone spread always reads gone and
    1.5 pp never does; a config with two configurations, or one no tier measured, is refused by name."""
    import numpy as np

    from initmem.pipeline.configfiles import load_config

    g = script("benchmarks/gone_calibration.py")
    m, planned = g.design_configuration(load_config([ROOT / "config" / "evidence-gone.yaml"]))
    assert (m.source, m.seeds, planned.seeds) == ("jpeg-cifar10-recipe", 7, 40)
    assert (m.spec["lr"], m.spec["l2"], m.spec["batch_size"]) == (0.01, 0.1, 16)
    rng, quiet = np.random.default_rng(0), np.diag(np.full(4, 1e-6))
    assert g.gone_share(0.0, quiet, "measured", 40, 50, rng) == 1.0
    assert g.gone_share(1.5, quiet, "measured", 40, 50, rng) == 0.0
    two = load_config([ROOT / "config" / "evidence-recipe.yaml"])
    with pytest.raises(SystemExit, match="trains 4 configurations"):
        g.design_configuration(two)
    unmeasured = load_config([ROOT / "config" / "evidence-gone.yaml"])
    unmeasured["studies"]["lr_l2"]["grid"][0]["l2"] = [0.3]
    with pytest.raises(SystemExit, match="no committed tier measured sgd lr 0.01 b=16 L2 0.3"):
        g.design_configuration(unmeasured)


def test_a_spread_whose_largest_difference_is_inside_the_grid_costs_the_below_row_power_not_a_false_word():
    """The ``_below_1pp`` row's upper end reads every sigma_w pair, its lower end the end pair only
    (``gone_calibration --shapes``, evidence/jpeg-cifar10-gone/shape_check.md): at near-zero noise a 1.5 pp
    spread read as 0.9 pp between the ends is undecided (neither gone nor above), the same spread linear in
    sigma_w reads above the zone, and 2 pp inside the grid (1.2 pp between the ends) does too."""
    import numpy as np

    g = script("benchmarks/gone_calibration.py")
    rng, quiet = np.random.default_rng(0), np.diag(np.full(4, 1e-6))

    def words(truth, shape):
        w = g.shares(truth, quiet, "measured", 40, 20, rng, g.BELOW, shape)
        return w[V.REPRODUCED], w[V.NOT_REPRODUCED], w[V.INCONCLUSIVE]   # gone, above the zone, open

    assert words(1.5, "interior") == (0.0, 0.0, 1.0)
    assert words(1.5, "linear") == (0.0, 1.0, 0.0)
    assert words(2.0, "interior") == (0.0, 1.0, 0.0)
    assert words(0.0, "interior") == (1.0, 0.0, 0.0)
