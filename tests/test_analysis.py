import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from initmem.claims.analysis import (
    PAPER_SCALE,
    beta_table,
    carry_forward,
    collect,
    config_spreads,
    describe_scale,
    interpolation_table,
    long_run_comparison,
    ols_slope,
    scale_label,
    spreads,
)
from initmem.claims.table import claims
from initmem.stats import spreads as Sp


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
                variant=None, n_train=100, train_acc_best=1.0, status="ok")
    df = pd.DataFrame([{**base, **r} for r in rows])
    df["run_id"] = [f"{r.study}_{r.optimizer}_b{r.batch_size}_sw{r.sigma_w}_s{r.seed}_{i}" for i, r in enumerate(df.itertuples())]
    return df


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
    table = claims(runs).set_index("id")
    assert table.loc["sgd_b128_spread", "reproduced"] == pytest.approx(26.0)
    assert table.loc["sgd_b128_acc_0.1", "reproduced"] == pytest.approx(85.0)
    assert math.isnan(table.loc["sgd_b16_spread", "reproduced"])
    assert "not in this config" in table.loc["sgd_b16_spread", "scale"]


def test_claims_list_every_timescale_with_both_arithmetic():
    table = claims(_runs([dict(optimizer="sgd", batch_size=128, sigma_w=0.1, seed=0, test_acc_best=0.8)]))
    t = table[table["id"].str.startswith("T_")]
    assert len(t) == 5
    assert (t["reproduced"].to_numpy() == pytest.approx(t["paper"].to_numpy(), rel=0.03))
    assert t["exact_as_run"].notna().all()
    # each paper run's own schedule: cosine accumulates less than constant lr; the 5,000-epoch control ran
    # at constant lr, so its recorded sum is the arithmetic up to K = E ceil(n/b) vs E n/b (313 vs 312.5 steps)
    t = t.set_index("id")
    assert t.loc["T_sgd_b128_5000", "exact_as_run"] == pytest.approx(t.loc["T_sgd_b128_5000", "reproduced"] * 313 / 312.5, rel=1e-12)
    for cid in ("T_sgd_b128_300", "T_sgd_b16_lr1e-2", "T_l2_b128_1e-3", "T_l2_b128_5e-3"):
        assert t.loc[cid, "exact_as_run"] < 0.55 * t.loc[cid, "reproduced"], cid


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


def test_spreads_count_diverged_runs_and_give_a_seed_interval():
    runs = _runs([dict(optimizer="sgd", batch_size=16, sigma_w=sw, seed=s, test_acc_best=acc)
                  for sw, accs in ((0.1, (0.80, 0.82, 0.81)), (2.5, (0.60, 0.62, 0.61))) for s, acc in enumerate(accs)]
                 + [dict(optimizer="sgd", batch_size=16, sigma_w=2.5, seed=3, test_acc_best=None, status="diverged")])
    st = spreads(runs)
    row = st[st["sigma_w"] == 2.5].iloc[0]
    assert (row["n_runs"], row["n_seeds"], row["n_diverged"]) == (4, 3, 1)  # counted, not silently dropped
    cs = config_spreads(st).iloc[0]
    assert cs["spread_pp"] == pytest.approx(20.0) and cs["n_diverged_config"] == 1
    # seed 3 has no value at all: not a replicate; the other three show the same 20 pp each, so the
    # seed-paired difference has no noise: interval [20, 20], p ~ 0, no noise-only spread (a sigma_w
    # permutation of 2 sigma_w x 3 seeds could not give p below 0.25 and read [0, 40])
    assert cs["spread_ci_low"] == pytest.approx(20.0, abs=1e-6) and cs["spread_ci_high"] == pytest.approx(20.0, abs=1e-6)
    assert cs["spread_p_null"] < 1e-6 and cs["spread_null_mean_pp"] == pytest.approx(0.0, abs=1e-6)
    assert cs["spread_ci_method"] == Sp.SPREAD_METHOD
    one_seed = spreads(runs[runs["seed"] == 0])
    assert one_seed["spread_ci_low"].isna().all()  # one seed: no interval


def test_interpolation_fractions_and_checkpoint_order_per_cell():
    runs = _runs([
        dict(optimizer="adam", batch_size=128, sigma_w=0.1, seed=0, tau_interp=10, tau_best=40, repair_gap=0.05, test_acc_best=0.8),
        dict(optimizer="adam", batch_size=128, sigma_w=2.5, seed=0, tau_interp=20, tau_best=15, repair_gap=-0.01, test_acc_best=0.8),
        dict(optimizer="adam", batch_size=128, sigma_w=1.0, seed=0, tau_interp=None, tau_best=30, repair_gap=None, test_acc_best=0.8),
        dict(optimizer="adam", batch_size=128, sigma_w=1.5, seed=0, tau_interp=30, tau_best=60, repair_gap=0.03, test_acc_best=0.8),
        dict(optimizer="sgd", batch_size=128, sigma_w=0.1, seed=0, tau_interp=None, tau_best=5, repair_gap=None, test_acc_best=0.5),
    ])
    t = interpolation_table(runs, ["optimizer", "batch_size"]).set_index("optimizer")
    assert t.loc["adam", "n_runs"] == 4 and t.loc["adam", "frac_interp"] == pytest.approx(0.75)
    assert t.loc["adam", "tau_interp"] == pytest.approx(20.0)  # over the 3 that interpolated, not 4
    assert t.loc["adam", "share_best_after_interp"] == pytest.approx(0.5)  # 40 > 10, 60 > 30; not 15 < 20, not the non-interpolating run
    assert t.loc["adam", "repair_gap_pp"] == pytest.approx(100 * (0.05 - 0.01 + 0.03) / 3)
    assert t.loc["sgd", "frac_interp"] == 0 and math.isnan(t.loc["sgd", "tau_interp"])  # "no run interpolated"


def test_long_run_is_compared_with_main_on_matched_sigma_and_seed():
    main = [dict(optimizer="sgd", batch_size=128, sigma_w=sw, seed=s, test_acc_best=0.85 - 0.1 * sw + 0.01 * s)
            for sw in (0.1, 0.5, 1.0, 2.0, 2.5) for s in (0, 1, 2)]
    long_ = [dict(study="long", optimizer="sgd", schedule="constant", epochs=5000, batch_size=128, sigma_w=sw, seed=0,
                  test_acc_best=0.84 - 0.1 * sw) for sw in (0.1, 1.0, 2.5, 3.0)]
    runs = _runs(main + long_)
    row = long_run_comparison(runs).iloc[0]
    assert (row["sigma_w"], row["seeds"], row["n_long"], row["n_main_matched"]) == ("0.1/1/2.5", "0", 3, 3)
    assert row["spread_long"] == pytest.approx(24.0)          # sigma_w=3.0 has no main-grid partner
    assert row["spread_main_matched"] == pytest.approx(24.0)  # seed 0 only, sigma_w 0.1-2.5
    assert row["spread_main_full"] == pytest.approx(24.0)
    table = claims(runs).set_index("id")
    assert table.loc["long_b128_spread", "reproduced"] == pytest.approx(24.0)
    assert table.loc["long_b128_retains", "reproduced"] == pytest.approx(0.0, abs=1e-9)
    assert table.loc["long_b128_retains", "verdict"] == "not testable with one seed"  # as in the paper
    assert table.loc["long_b128_retains", "ci_method"] == "none: 1 seed" and math.isnan(table.loc["long_b128_retains", "ci_low"])


def _history(rows):
    base = dict(study="main", arch="resnet9", width=8, norm="batchnorm", pool="max", optimizer="sgd", lr=1e-3,
                schedule="cosine", alpha=0.01, epochs=4, batch_size=16, l2=0.0, weight_decay=0.0, momentum=0.0,
                augment=False, patience=2, variant=None, status="ok", stopped_early=False)
    return pd.DataFrame([{**base, **r} for r in rows])


def test_stopped_runs_are_carried_forward_and_diverged_runs_counted():
    rows = []
    for sw in (0.5, 1.0, 1.5, 2.0):
        stops = sw == 2.0  # stops early after epoch 2 with val acc 0.7
        diverges = sw == 1.5  # diverges in epoch 3
        last = 2 if (stops or diverges) else 4
        for e in range(1, last + 1):
            rows.append(dict(run_id=f"r{sw}", sigma_w=sw, seed=0, epoch=e, val_acc=0.9 - 0.1 * sw, T_sgd=e * 1e-3,
                             T_l2=0.0, T_wd=0.0, T_adapt=e * 0.1, stopped_early=stops,
                             status="diverged" if diverges else "ok"))
    history = _history(rows)
    carried = carry_forward(history)
    stopped = carried[carried["run_id"] == "r2.0"].set_index("epoch")
    assert list(stopped.index) == [1, 2, 3, 4] and stopped["carried"].tolist() == [False, False, True, True]
    assert stopped.loc[4, "val_acc"] == pytest.approx(0.7) and stopped.loc[4, "T_sgd"] == pytest.approx(2e-3)
    beta = beta_table(history).set_index("epoch")
    assert beta.loc[2, "n"] == 4 and beta.loc[2, "n_carried"] == 0 and beta.loc[2, "n_diverged"] == 0
    assert beta.loc[4, "n"] == 3 and beta.loc[4, "n_carried"] == 1 and beta.loc[4, "n_diverged"] == 1
    assert beta.loc[4, "beta"] == pytest.approx(-0.1)  # the stopped run still sits on the line
    assert beta.loc[4, "T_sgd"] == pytest.approx(4e-3)  # the clock of the runs still training


def test_collect_keeps_the_recorded_per_epoch_lr(tmp_path):
    from conftest import tiny_spec

    from initmem.engine.loop import summarize
    from initmem.engine.metrics import METRICS_FORMAT
    from initmem.io import write_json

    spec = tiny_spec(lr=0.1, epochs=3)
    h = {"epoch": [1, 2, 3], "train_loss": [1.0] * 3, "train_acc": [0.5] * 3, "val_loss": [1.0, 0.9, 0.8],
         "val_acc": [0.5] * 3, "test_loss": [1.0] * 3, "test_acc": [0.5] * 3, "kernel_norm": [1.0] * 3,
         "lr": [0.075, 0.025, 0.001], "T_sgd": [0.0] * 3, "T_l2": [0.0] * 3, "T_wd": [0.0] * 3, "T_adapt": [0.0] * 3}
    write_json(tmp_path / "r.json", {"format": METRICS_FORMAT, "run_id": "r", "spec": spec, "status": "ok", "history": h,
                                     "summary": summarize(h, 1.0), "env": {}, "wall_seconds": 1.0})
    runs, history = collect([tmp_path / "r.json"], "main")
    assert history["lr_epoch"].tolist() == [0.075, 0.025, 0.001]  # what the trainer recorded, not eta0
    assert history["lr"].tolist() == [0.1] * 3 and runs["lr"].iloc[0] == 0.1  # eta0, the configuration key
    assert runs["weight_decay_mode"].iloc[0] == "decoupled" and history["status"].iloc[0] == "ok"


def test_scale_labels_use_each_studys_own_paper_settings():
    import yaml

    from initmem.pipeline.grid import expand_studies

    paper = expand_studies(yaml.safe_load((Path(__file__).resolve().parents[1] / "config/paper.yaml").read_text()))
    for study, rs in paper.items():
        assert describe_scale(pd.DataFrame([{**r.spec} for r in rs])) == PAPER_SCALE[study]
    runs = _runs([dict(study="long", optimizer="sgd", epochs=12, batch_size=16, sigma_w=sw, seed=0, test_acc_best=0.5)
                  for sw in (0.1, 2.5)])
    assert scale_label(runs, "long") == ("long: n_train=100, ResNet-9 width 8, 12 epochs, 2 sigma_w, 1 seed "
                                         "(paper: n_train=40000, ResNet-9 width 64, 5000 epochs, 5 sigma_w, 1 seed)")
