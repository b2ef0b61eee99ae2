import math

import numpy as np
import pandas as pd
import pytest

from initmem.analysis import beta_table, claims, clock_values, config_spreads, ols_slope, spreads


def test_ols_slope_matches_numpy_and_statsmodels():
    rng = np.random.default_rng(0)
    x = np.repeat(np.linspace(0.1, 2.5, 25), 10)
    y = 0.8 - 0.1 * x + rng.normal(0, 0.02, len(x))
    fit = ols_slope(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (intercept + slope * x)
    se = math.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) ** 2).sum())
    assert fit["beta"] == pytest.approx(slope, rel=1e-10)
    assert fit["se"] == pytest.approx(se, rel=1e-10)
    from scipy import stats

    t = stats.t.ppf(0.975, len(x) - 2)
    assert fit["ci_low"] == pytest.approx(slope - t * se, rel=1e-10)
    assert fit["ci_high"] == pytest.approx(slope + t * se, rel=1e-10)
    assert fit["n"] == 250
    assert fit["ci_low"] < -0.1 < fit["ci_high"]  # the known slope is inside the 95% CI
    assert math.isnan(ols_slope(np.ones(5), y[:5])["beta"])  # one sigma_w: no slope


def _runs(rows):
    base = dict(study="main", arch="resnet9", width=8, norm="batchnorm", pool="max", lr=1e-3, schedule="cosine",
                alpha=0.01, epochs=8, l2=0.0, weight_decay=0.0, momentum=0.0, augment=False, patience=None,
                variant=None, n_train=100, train_acc_best=1.0)
    return pd.DataFrame([{**base, **r} for r in rows])


def test_spreads_on_a_hand_made_table():
    runs = _runs([
        dict(optimizer="sgd", batch_size=128, sigma_w=0.1, seed=0, test_acc_best=0.84),
        dict(optimizer="sgd", batch_size=128, sigma_w=0.1, seed=1, test_acc_best=0.86),
        dict(optimizer="sgd", batch_size=128, sigma_w=2.5, seed=0, test_acc_best=0.58),
        dict(optimizer="sgd", batch_size=128, sigma_w=2.5, seed=1, test_acc_best=0.60),
        dict(optimizer="adam", batch_size=128, sigma_w=0.1, seed=0, test_acc_best=0.80),
        dict(optimizer="adam", batch_size=128, sigma_w=2.5, seed=0, test_acc_best=0.77),
    ])
    st = spreads(runs)
    cs = config_spreads(st).set_index("optimizer")
    assert cs.loc["sgd", "spread_pp"] == pytest.approx(26.0)
    assert cs.loc["sgd", "argmax_sigma_w"] == 0.1 and cs.loc["sgd", "argmin_sigma_w"] == 2.5
    assert cs.loc["adam", "spread_pp"] == pytest.approx(3.0)
    assert cs.loc["sgd", "seed_std_pp"] == pytest.approx(100 * np.std([0.84, 0.86], ddof=1))
    row = st[(st["optimizer"] == "sgd") & (st["sigma_w"] == 0.1)].iloc[0]
    assert row["test_acc"] == pytest.approx(0.85) and row["n_seeds"] == 2
    table = claims(runs, st).set_index("id")
    assert table.loc["sgd_b128_spread", "reproduced"] == pytest.approx(26.0)
    assert table.loc["sgd_b128_acc_0.1", "reproduced"] == pytest.approx(85.0)
    assert math.isnan(table.loc["sgd_b16_spread", "reproduced"])
    assert "not in this config" in table.loc["sgd_b16_spread", "scale"]


@pytest.mark.parametrize("b,epochs,lr,l2,clock,paper", [
    (128, 300, 1e-3, 0.0, "T_sgd", 7.3e-4),
    (128, 5000, 1e-3, 0.0, "T_sgd", 1.2e-2),
    (16, 300, 1e-2, 0.0, "T_sgd", 4.7),
    (128, 300, 1e-2, 1e-3, "T_l2", 0.94),
    (128, 300, 1e-2, 5e-3, "T_l2", 4.7),
])
def test_clocks_reproduce_the_papers_constant_lr_arithmetic(b, epochs, lr, l2, clock, paper):
    value = clock_values(b, epochs, 40_000, lr, l2, "constant", steps="paper")[clock]
    assert value == pytest.approx(paper, rel=0.03)
    cosine = clock_values(b, epochs, 40_000, lr, l2, "cosine")[clock]
    assert cosine < value  # the cosine decay accumulates less than the constant-LR arithmetic


def test_claims_list_every_timescale_with_both_arithmetic():
    table = claims(_runs([dict(optimizer="sgd", batch_size=128, sigma_w=0.1, seed=0, test_acc_best=0.8)]),
                   spreads(_runs([dict(optimizer="sgd", batch_size=128, sigma_w=0.1, seed=0, test_acc_best=0.8)])))
    t = table[table["id"].str.startswith("T_")]
    assert len(t) == 5
    assert (t["reproduced"].to_numpy() == pytest.approx(t["paper"].to_numpy(), rel=0.03))
    assert t["reproduced_cosine"].notna().all()


def test_beta_table_recovers_a_known_slope_per_epoch():
    rows = []
    for sw in (0.5, 1.0, 1.5, 2.0):
        for seed in (0, 1, 2):
            for epoch in (1, 2):
                rows.append(dict(study="main", optimizer="sgd", batch_size=16, sigma_w=sw, seed=seed, epoch=epoch,
                                 val_acc=0.9 - (0.1 if epoch == 1 else 0.01) * sw + 0.001 * seed,
                                 T_sgd=epoch * 1e-3, T_l2=0.0, T_wd=0.0, T_adapt=epoch * 0.1))
    beta = beta_table(pd.DataFrame(rows)).set_index("epoch")
    assert beta.loc[1, "beta"] == pytest.approx(-0.1) and beta.loc[2, "abs_beta"] == pytest.approx(0.01)
    assert beta.loc[2, "T_sgd"] == pytest.approx(2e-3) and beta.loc[1, "n"] == 12
