"""Verdicts on synthetic metrics with known effects: a strong effect is reproduced, a null one is
inconclusive, a reversed one is not reproduced; collapse is a number that tells collapsing curves
from curves that do not collapse."""

import math

import numpy as np
import pandas as pd
import pytest

from initmem import verdicts as V
from initmem.claims import COLUMNS, claims, claims_markdown, collapse_claim

SEEDS = (0, 1, 2, 3, 4, 5)
SIGMAS = (0.1, 1.0, 2.5)


def synthetic_runs(slopes: dict, noise: float = 0.01, seeds=SEEDS, rng_seed: int = 0) -> pd.DataFrame:
    """Main-grid runs whose test accuracy falls with sigma_w at slope ``slopes[(optimizer, b)]`` plus seed noise."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for (opt, b), slope in slopes.items():
        for sw in SIGMAS:
            for s in seeds:
                rows.append(dict(study="main", run_id=f"{opt}_b{b}_sw{sw}_s{s}", optimizer=opt, batch_size=b, sigma_w=sw,
                                 seed=s, arch="resnet9", width=8, n_train=1000, epochs=10, norm="batchnorm", augment=False,
                                 test_acc_best=0.8 + slope * sw + rng.normal(0, noise), train_acc_best=1.0, status="ok"))
    return pd.DataFrame(rows)


def _gap(runs: pd.DataFrame, a: str, b: str, batch: int = 128) -> dict:
    cells = [V.cell_from_runs(runs[(runs["optimizer"] == o) & (runs["batch_size"] == batch)]) for o in (a, b)]
    return V.evaluate(cells, lambda m: V.spread_pp(m[0]) - V.spread_pp(m[1]), V.greater(0))


def test_strong_null_and_reversed_effects_get_the_three_verdicts():
    runs = synthetic_runs({("sgd", 128): -0.10, ("adam", 128): -0.01, ("adamw", 128): -0.10})
    strong = _gap(runs, "sgd", "adam")          # SGD 24 pp vs Adam 2.4 pp
    assert strong["verdict"] == "reproduced" and strong["ci_low"] > 0
    assert strong["effect"] == pytest.approx(21.6, abs=2.0) and strong["n_runs"] == 36 and strong["n_seeds"] == 6
    null = _gap(runs, "sgd", "adamw")           # the same slope: no effect
    assert null["verdict"] == "inconclusive" and null["ci_low"] < 0 < null["ci_high"]
    reversed_ = _gap(runs, "adam", "sgd")       # the paper's direction turned around
    assert reversed_["verdict"] == "not reproduced" and reversed_["ci_high"] < 0


def test_one_seed_is_inconclusive_without_an_interval():
    runs = synthetic_runs({("sgd", 128): -0.10, ("adam", 128): -0.01}, seeds=(0,))
    result = _gap(runs, "sgd", "adam")
    assert result["effect"] > 15  # the number is still measured
    assert result["verdict"] == "inconclusive" and result["note"] == "1 seed: no interval"
    assert math.isnan(result["ci_low"]) and math.isnan(result["ci_high"])


def test_intervals_are_reproducible_and_match_spreads_csv():
    from initmem.analysis import config_spreads, spreads

    runs = synthetic_runs({("sgd", 128): -0.10, ("adam", 128): -0.01})
    first, second = _gap(runs, "sgd", "adam"), _gap(runs.sample(frac=1, random_state=1), "sgd", "adam")
    assert (first["ci_low"], first["ci_high"]) == (second["ci_low"], second["ci_high"])  # fixed RNG, row order irrelevant
    cs = config_spreads(spreads(runs)).set_index("optimizer")
    table = claims(runs).set_index("id")
    assert table.loc["sgd_b128_spread", "ci_low"] == cs.loc["sgd", "spread_ci_low"]  # one resample per configuration
    assert table.loc["sgd_b128_spread", "ci_low"] < table.loc["sgd_b128_spread", "reproduced"] < table.loc["sgd_b128_spread", "ci_high"]


def test_verdict_sides():
    assert V.verdict(1.0, 2.0, V.greater(0)) == "reproduced"
    assert V.verdict(-2.0, -1.0, V.greater(0)) == "not reproduced"
    assert V.verdict(0.2, 0.4, V.less(1.0)) == "reproduced"
    assert V.verdict(-0.2, 0.3, V.between(-0.5, 0.5)) == "reproduced"
    assert V.verdict(0.6, 0.9, V.between(-0.5, 0.5)) == "not reproduced"
    assert V.verdict(0.4, 0.9, V.between(-0.5, 0.5)) == "inconclusive"
    assert V.verdict(math.nan, math.nan, V.greater(0)) == "inconclusive"


def test_claims_give_verdicts_for_every_batch_size_with_the_same_columns():
    runs = synthetic_runs({("sgd", 16): -0.10, ("sgd", 128): -0.10, ("adam", 16): -0.005, ("adam", 128): -0.12})
    table = claims(runs)
    assert list(table.columns) == COLUMNS
    t = table.set_index("id")
    assert t.loc["sgd_gt_adam_b16", "verdict"] == "reproduced"
    assert t.loc["sgd_gt_adam_b128", "verdict"] == "not reproduced"  # this synthetic Adam remembers more at b=128
    assert t.loc["sgd_gt_adam_b16", "paper"] == pytest.approx(22.8 - 1.6)
    assert t.loc["batch_raises_adam_spread", "verdict"] == "reproduced"  # Adam: 0.5 pp at b=16, 30 pp at b=128
    assert t.loc["batch_raises_sgd_spread", "verdict"] == "inconclusive"  # SGD: the same slope at both
    assert t.loc["sgd_b128_interpolates", "verdict"] == "reproduced"  # train acc 100% everywhere
    md = claims_markdown(table)
    assert "3 reproduced, 1 not reproduced, 1 inconclusive of 5 directional claims" in md and "| sgd_gt_adam_b16 |" in md


def curve_history(opt: str, batch_sizes, clock_collapse: bool, epochs: int = 20, n_train: int = 2048) -> pd.DataFrame:
    """Val accuracy whose sigma_w slope decays as exp(-T / tau): with ``clock_collapse`` T is the
    run's clock T_adapt = epoch * ceil(n/b) * lr (so curves of different b collapse against it),
    else the slope decays with the epoch alone (curves collapse against the epoch)."""
    rng = np.random.default_rng(1)
    rows = []
    for b in batch_sizes:
        steps = math.ceil(n_train / b)
        for e in range(1, epochs + 1):
            t_adapt = e * steps * 1e-3
            slope = -0.2 * math.exp(-t_adapt / 0.5) if clock_collapse else -0.2 * math.exp(-e / 4)
            for sw in SIGMAS:
                for s in SEEDS[:4]:
                    rows.append(dict(study="main", run_id=f"{opt}_b{b}_sw{sw}_s{s}", optimizer=opt, batch_size=b, sigma_w=sw,
                                     seed=s, epoch=e, epochs=epochs, val_acc=0.8 + slope * sw + rng.normal(0, 1e-4),
                                     T_sgd=t_adapt * 1e-3 / b, T_l2=0.0, T_wd=0.0, T_adapt=t_adapt))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("clock_collapse,verdict", [(True, "reproduced"), (False, "not reproduced")])
def test_collapse_distance_tells_clock_collapse_from_epoch_collapse(clock_collapse, verdict):
    history = curve_history("adam", (16, 64, 128), clock_collapse)
    runs = history.drop_duplicates("run_id").assign(arch="resnet9", width=8, n_train=2048, test_acc_best=0.8)
    row = collapse_claim(runs, history, "adam", "T_adapt", "scale")
    assert row["verdict"] == verdict, row
    assert "3 pair(s) of b=16/64/128" in row["note"]
    cells = [V.cell_from_history(history[history["batch_size"] == b]) for b in (16, 64, 128)]
    d = V.collapse_distances(cells, [V.log_abs_beta(c.slopes(0)) for c in cells], "T_adapt")
    if clock_collapse:  # the same curve of T: no distance against the clock, a large one against the epoch
        assert d["clock"][0] < 0.05 < 0.5 < d["epoch"][0]
    else:
        assert d["epoch"][0] < 0.05 < 0.5 < d["clock"][0]


def test_collapse_needs_overlapping_clocks():
    history = curve_history("sgd", (16, 128), True)
    history.loc[history["batch_size"] == 128, "T_sgd"] *= 1e-6  # two clock ranges that never meet
    runs = history.drop_duplicates("run_id").assign(arch="resnet9", width=8, n_train=2048, test_acc_best=0.8)
    row = collapse_claim(runs, history, "sgd", "T_sgd", "scale")
    assert row["verdict"] == "inconclusive" and "do not overlap" in row["note"]


def test_decay_orders_of_flat_and_decaying_curves():
    epochs = np.arange(1, 101, dtype=float)
    flat = np.full((1, 100), 0.1)
    decaying = 0.1 * 10 ** (-2 * (epochs - 1) / 99)[None, :]
    assert V.decay_orders(flat, epochs)[0] == pytest.approx(0.0)
    assert V.decay_orders(decaying, epochs)[0] == pytest.approx(1.8, abs=0.1)  # window means: a bit under 2


def test_bootstrap_slopes_equal_statsmodels_ols():
    from initmem.analysis import beta_table

    history = curve_history("adam", (16,), True, epochs=3)
    cell = V.cell_from_history(history)
    beta = beta_table(history.assign(stopped_early=False, status="ok")).sort_values("epoch")
    assert cell.slopes(0)[0] == pytest.approx(beta["beta"].to_numpy(), rel=1e-9)


def test_claims_at_the_paper_layout_have_verdict_columns():
    from pathlib import Path

    import yaml

    from initmem.grid import expand_studies

    paper = expand_studies(yaml.safe_load((Path(__file__).resolve().parents[1] / "config/paper.yaml").read_text()))
    rng = np.random.default_rng(0)
    rows = [{**r.spec, "study": study, "run_id": r.run_id, "test_acc_best": 0.8 - 0.05 * r.spec["sigma_w"] + rng.normal(0, 0.01),
             "train_acc_best": 1.0, "status": "ok"} for study, rs in paper.items() for r in rs]
    table = claims(pd.DataFrame(rows))
    assert list(table.columns) == COLUMNS
    t = table.set_index("id")
    assert t.loc["sgd_gt_adam_b256", "n_runs"] == 500 and t.loc["sgd_gt_adam_b256", "n_seeds"] == 10
    assert t.loc["lr_reduces_sgd_b16_0.001_to_0.01", "note"] == "1 seed: no interval"  # the paper's lr_l2 has one seed
    assert set(table.loc[table["kind"] == "direction", "verdict"]) <= {"reproduced", "not reproduced", "inconclusive"}
    assert "300 epochs, 25 sigma_w, 10 seeds" in t.loc["sgd_b128_spread", "scale"]


def test_claims_follow_the_configs_own_layout():
    """An evidence-like layout: momentum, AdamW and Muon only at b=16, SGD and Adam also at b=8 and
    b=32, the lr_l2 study at eta 1e-3/1e-1 with L2 0/1e-2 (not the paper's eta=1e-2 ablation)."""
    rows = []
    layout = [(o, 16) for o in ("sgd", "sgd_momentum", "adam", "adamw", "muon")] + [(o, b) for o in ("sgd", "adam") for b in (8, 32)]
    for opt, b in layout:
        rows.append(curve_history(opt, (b,), clock_collapse=True, epochs=10).assign(study="main", lr=1e-3, l2=0.0))
    for lr in (1e-3, 1e-1):
        for l2 in (0.0, 1e-2):
            h = curve_history("sgd", (16,), clock_collapse=l2 > 0, epochs=10)
            rows.append(h.assign(study="lr_l2", lr=lr, l2=l2, run_id=h["run_id"] + f"_lr{lr}_l2{l2}"))
    history = pd.concat(rows, ignore_index=True)
    runs = history.drop_duplicates(["study", "run_id"]).assign(arch="resnet9", width=8, n_train=2048, norm="batchnorm",
                                                                augment=False, train_acc_best=1.0, status="ok",
                                                                test_acc_best=lambda d: 0.8 - 0.05 * d["sigma_w"])
    t = claims(runs, history).set_index("id")
    assert "momentum_lt_sgd_b16" in t.index  # the smallest b where both SGD and SGD-momentum ran
    assert {"beta_decay_adamw_b16", "beta_decay_muon_b16", "beta_decay_adam_b8", "beta_decay_adam_b32"} <= set(t.index)
    assert t.loc["beta_decay_sgd_l2_b16", "quantity"].startswith("SGD eta=0.1 L2=0.01")  # the config's strongest L2
    assert t.loc["beta_decay_adam_b8", "verdict"] == "reproduced"  # exp(-T/0.5) over 10 epochs: several orders
    assert "over 3 pair(s) of b=8/16/32" in t.loc["collapse_adam_T_adapt", "note"]
