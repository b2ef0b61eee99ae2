"""The similarity numbers: BatchNorm's settling against an epoch's steps, and the fit of the selected predictors."""

import math

import pandas as pd
import pytest

from initmem.claims.similarity import bn_settling_steps, design_numbers, fit_of_selected, markdown, section, selected_fits, tier_numbers


def test_keras_batchnorm_forgets_its_start_after_458_steps():
    assert bn_settling_steps() == pytest.approx(458.2, abs=0.1)
    assert 0.99 ** bn_settling_steps() == pytest.approx(0.01)


def test_a_16_step_epoch_needs_about_29_epochs_to_settle():
    numbers = design_numbers({"batch_size": 16, "epochs": 300, "norm": "batchnorm"}, n_train=256)
    assert numbers["steps_per_epoch"] == 16
    assert numbers["total_steps"] == 4800
    assert numbers["epochs_to_settle"] == pytest.approx(458.2 / 16, abs=0.01)


def test_layernorm_has_no_statistics_to_settle():
    assert design_numbers({"batch_size": 16, "epochs": 1, "norm": "layernorm"}, n_train=256)["bn_settling_steps"] == 0


def test_fit_counts_only_runs_that_interpolated_by_the_selected_epoch():
    runs = pd.DataFrame({"tau_best": [10, 5, 7, 7], "tau_interp": [8, 9, math.nan, None]})
    assert fit_of_selected(runs) == 0.25
    assert fit_of_selected(runs.iloc[:0]) is None


def test_the_selected_networks_own_training_accuracy_decides_where_it_was_recorded():
    runs = pd.DataFrame({"tau_best": [10, 10, 10], "tau_interp": [8, 8, math.nan], "train_acc_eval_best": [0.99, math.nan, 1.0]})
    assert selected_fits(runs).tolist() == [False, True, True]  # recorded: it decides; not recorded: the running accuracy


def test_bad_momentum_is_one_clear_error():
    with pytest.raises(ValueError, match="momentum 1.0"):
        bn_settling_steps(1.0)


def test_a_tiers_table_gives_each_configurations_numbers():
    base = {"study": "s", "optimizer": "sgd", "lr": 0.001, "batch_size": 16, "epochs": 300, "n_train": 256, "norm": "batchnorm",
            "l2": 0.0, "schedule": "cosine", "alpha": 0.01, "weight_decay": 0.0}
    runs = pd.DataFrame([{**base, "sigma_w": 0.1, "tau_best": 40, "tau_interp": 30, "val_acc_best": 0.3, "test_acc_best": 0.30},
                         {**base, "sigma_w": 0.1, "tau_best": 5, "tau_interp": None, "val_acc_best": 0.1, "test_acc_best": 0.10},
                         {**base, "sigma_w": 2.5, "tau_best": 50, "tau_interp": 60, "val_acc_best": 0.2, "test_acc_best": 0.20}])
    by_sigma = tier_numbers(runs).set_index("sigma_w")
    assert by_sigma.loc[0.1, "fit_of_selected"] == 0.5
    assert by_sigma.loc[0.1, "above_chance"] == 0.5
    assert by_sigma.loc[0.1, "settled"] == 0.5  # tau_best 5 x 16 steps = 80 < 458
    assert by_sigma.loc[0.1, "test_acc_median"] == pytest.approx(0.2)
    assert by_sigma.loc[2.5, "fit_of_selected"] == 0.0
    assert by_sigma.loc[2.5, "steps_per_epoch"] == 16
    assert by_sigma.loc[2.5, "clock"] == "T_sgd" and by_sigma.loc[2.5, "clock_end"] == pytest.approx(1.13e-4, rel=0.01)


def test_the_median_test_accuracy_is_the_one_the_claims_read():
    """Where every run kept its best weights and tested them once on the final test images, the table's median
    test accuracy is that one (what the claims read), not the epoch's evaluation on the small per-epoch test set."""
    base = {"study": "s", "optimizer": "sgd", "lr": 0.01, "batch_size": 16, "epochs": 300, "n_train": 256, "norm": "batchnorm",
            "l2": 0.0, "schedule": "cosine", "alpha": 0.01, "weight_decay": 0.0, "sigma_w": 0.1, "tau_best": 40, "tau_interp": 30,
            "val_acc_best": 0.3}
    runs = pd.DataFrame([{**base, "test_acc_best": 0.30, "test_acc_final": 0.35}, {**base, "test_acc_best": 0.32, "test_acc_final": 0.37}])
    assert tier_numbers(runs)["test_acc_median"].iloc[0] == pytest.approx(0.36)
    partial = runs.assign(test_acc_final=[0.35, math.nan])  # not every run has it: the per-epoch one, as the claims
    assert tier_numbers(partial)["test_acc_median"].iloc[0] == pytest.approx(0.31)


def test_the_table_prints_each_configuration_beside_the_papers_values():
    row = {"study": "s", "optimizer": "adam", "lr": 0.001, "batch_size": 16, "epochs": 300, "n_train": 256, "norm": "batchnorm",
           "l2": 0.0, "schedule": "cosine", "alpha": 0.01, "weight_decay": None,
           "sigma_w": 0.1, "tau_best": 5, "tau_interp": None, "val_acc_best": 0.108, "test_acc_best": 0.103}
    text = markdown(tier_numbers(pd.DataFrame([row])))
    # the paper's epochs run from b=256 (157 steps) to b=16 (2,500): BatchNorm settles in 0.2-2.9 of them
    assert "paper 157-2,500" in text and "paper 0.2-2.9" in text and "750,000" in text and "T_adapt 23.8-379" in text
    # the clock at the selected checkpoint (5 epochs of 16 steps at lr 1e-3: T_adapt 0.08) beside the end's
    assert "| s | adam | 0.001 | 16 | 0 | 0.1 | 1 | 16 | 28.6 | 4,800 | T_adapt 0.08 | T_adapt 2.42 | 0.00 | 0.00 | 0.00 | 0.103 |" in text
    # precise statistics are settled by construction, not by a measurement: the table says which
    precise = markdown(tier_numbers(pd.DataFrame([row | {"bn_eval": "precise"}])))
    assert "| T_adapt 2.42 | 0.00 | precise | 0.00 | 0.103 |" in precise and "settled by construction" in precise


def test_every_committed_tier_shows_its_numbers_in_its_claims_and_readme():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for tier in sorted((root / "evidence").glob("*/tables/runs.csv")):
        folder = tier.parent.parent
        expected = section(pd.read_csv(tier))
        assert expected in (folder / "tables" / "claims.md").read_text(), folder.name
        assert markdown(tier_numbers(pd.read_csv(tier))) in (folder / "README.md").read_text(), folder.name
