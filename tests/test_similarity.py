"""The similarity numbers: BatchNorm's settling against an epoch's steps, and the fit of the selected predictors."""

import math

import pytest

from initmem.claims.similarity import bn_settling_steps, design_numbers, fit_of_selected


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
    runs = [{"tau_best": 10, "tau_interp": 8}, {"tau_best": 5, "tau_interp": 9}, {"tau_best": 7, "tau_interp": math.nan},
            {"tau_best": 7, "tau_interp": ""}]
    assert fit_of_selected(runs) == 0.25
    assert fit_of_selected([]) is None


def test_bad_momentum_is_one_clear_error():
    with pytest.raises(ValueError, match="momentum 1.0"):
        bn_settling_steps(1.0)


def test_a_tiers_table_gives_each_configurations_numbers():
    from initmem.claims.similarity import tier_numbers
    base = {"study": "s", "optimizer": "sgd", "lr": 0.001, "batch_size": 16, "epochs": 300, "n_train": 256, "norm": "batchnorm"}
    runs = [{**base, "sigma_w": 0.1, "tau_best": 40, "tau_interp": 30, "val_acc_best": 0.3, "test_acc_best": 0.30},
            {**base, "sigma_w": 0.1, "tau_best": 5, "tau_interp": "", "val_acc_best": 0.1, "test_acc_best": 0.10},
            {**base, "sigma_w": 2.5, "tau_best": 50, "tau_interp": 60, "val_acc_best": 0.2, "test_acc_best": 0.20}]
    by_sigma = {row["sigma_w"]: row for row in tier_numbers(runs)}
    assert by_sigma["0.1"]["fit_of_selected"] == 0.5
    assert by_sigma["0.1"]["above_chance"] == 0.5
    assert by_sigma["0.1"]["test_acc_median"] == pytest.approx(0.2)
    assert by_sigma["2.5"]["fit_of_selected"] == 0.0
    assert by_sigma["2.5"]["steps_per_epoch"] == 16


def test_the_table_prints_each_configuration_beside_the_papers_values():
    from initmem.claims.similarity import markdown, tier_numbers
    row = {"study": "s", "optimizer": "adam", "lr": 0.001, "batch_size": 16, "epochs": 300, "n_train": 256, "norm": "batchnorm",
           "sigma_w": 0.1, "tau_best": 5, "tau_interp": "", "val_acc_best": 0.108, "test_acc_best": 0.103}
    text = markdown(tier_numbers([row]))
    assert "paper 313-2500" in text and "paper 0.2-1.5" in text and "750,000" in text
    assert "| s | adam | 0.001 | 16 | 0.1 | 1 | 16 | 28.6 | 4,800 | 0.00 | 0.103 | 0.00 |" in text
