"""The similarity numbers: BatchNorm's settling against an epoch's steps, and the fit of the selected predictors."""

import math

import pytest

from initmem.similarity import bn_settling_steps, design_numbers, fit_of_selected


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
