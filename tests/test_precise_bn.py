"""Evaluation with precise BatchNorm statistics (``bn_eval: precise``) and the selected network's own
training accuracy (``train_eval: true``): what they compute, that training itself is unchanged, that a
pack computes what single runs do, and that a spec at the defaults is the spec it was."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_spec
from helpers.packs import PACK_RTOL, assert_same_records

from initmem.engine.loop import HISTORY_KEYS
from initmem.engine.models import batch_norms, build_model, init_weights, precise_statistics
from initmem.engine.packed import train_packed
from initmem.engine.train import train_run
from initmem.spec import ConfigError, resolve_spec, validate_spec

TRAINING = ("epoch", "train_loss", "train_acc", "kernel_norm", "lr", "T_sgd")


def test_precise_statistics_are_the_mean_of_the_batch_statistics_and_are_restored():
    torch.manual_seed(0)
    model = build_model("resnet9", 4, "batchnorm", "max", 10)
    init_weights(model, 1.0, torch.Generator().manual_seed(0))
    x = torch.randn(40, 3, 32, 32)
    first = batch_norms(model)[0]
    conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))  # the layer in front of the first BatchNorm
    before = (first.moving_mean.clone(), first.moving_var.clone())
    with torch.no_grad():  # batches of 16, 16 and 8: the image-weighted mean of each batch's mean and biased variance
        pre = [conv(x[i:i + 16]) for i in (0, 16, 32)]
    means = torch.stack([p.mean((0, 2, 3)) for p in pre])
    variances = torch.stack([p.var((0, 2, 3), unbiased=False) for p in pre])
    weights = torch.tensor([16.0, 16.0, 8.0])[:, None] / 40
    buffers = [b for m in batch_norms(model) for b in (m.moving_mean, m.moving_var)]
    model.train()
    with precise_statistics(batch_norms(model), buffers, model, x, 16):
        assert torch.allclose(first.moving_mean, (weights * means).sum(0), atol=1e-5)
        assert torch.allclose(first.moving_var, (weights * variances).sum(0), rtol=1e-4, atol=1e-6)
        assert first.momentum == 0.99
    assert torch.equal(first.moving_mean, before[0]) and torch.equal(first.moving_var, before[1])


@pytest.mark.parametrize("norm", ["batchnorm", "layernorm"])
def test_precise_evaluation_leaves_training_as_keras_trains(tiny_tensors, norm):
    """The same weights at every step: only what an evaluation reads changes (nothing, without BatchNorm)."""
    spec = tiny_spec(epochs=3, norm=norm)
    moving = train_run(spec, tiny_tensors, "moving", log=None)
    precise = train_run({**spec, "bn_eval": "precise", "train_eval": True}, tiny_tensors, "precise", log=None)
    for key in TRAINING:
        assert precise["history"][key] == moving["history"][key], key
    same = precise["history"]["val_loss"] == moving["history"]["val_loss"]
    assert same is (norm == "layernorm")
    acc = precise["history"]["train_acc_eval"]
    assert len(acc) == 3 and all(0 <= a <= 1 for a in acc)
    i = precise["history"]["epoch"].index(precise["summary"]["tau_best"])
    assert precise["summary"]["train_acc_eval_best"] == acc[i]


def test_a_spec_at_the_defaults_records_what_it_recorded(tiny_tensors):
    record = train_run(tiny_spec(), tiny_tensors, "r", log=None)
    assert tuple(record["history"]) == HISTORY_KEYS
    assert "train_acc_eval_best" not in record["summary"]
    said = resolve_spec(tiny_spec() | {"bn_eval": "moving", "train_eval": False})
    assert said == tiny_spec()  # the defaults said aloud: the same spec, the same run id and key


def test_a_pack_with_precise_statistics_matches_single_runs(tiny_tensors):
    runs = [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=sw, seed=seed, bn_eval="precise", train_eval=True, batch_size=40, lr=0.01)}
            for i, (sw, seed) in enumerate([(0.5, 0), (1.5, 1), (1.0, 3)])]
    packed = train_packed(runs, tiny_tensors, log=None)
    single = [train_run(r["spec"], tiny_tensors, r["run_id"], log=None) for r in runs]
    # summation order (grouped vs plain convolutions) again: this configuration's pack with Keras' moving
    # statistics differs from its single runs by up to 8.4e-4 relative in val/test loss (2026-12-02), precise ones by 6.2e-4
    assert_same_records(packed, single, rtol=4 * PACK_RTOL)
    n_train = len(tiny_tensors.x_train)
    for p, s in zip(packed, single, strict=True):
        assert all(abs(a - b) <= 1 / n_train + 1e-12 for a, b in zip(p["history"]["train_acc_eval"], s["history"]["train_acc_eval"],
                                                                     strict=True))


@pytest.mark.parametrize("key,value,message", [("bn_eval", "population", "bn_eval = 'population' is unknown"),
                                               ("train_eval", "yes", "train_eval = 'yes' must be true or false")])
def test_a_wrong_evaluation_setting_is_a_one_line_error(key, value, message):
    with pytest.raises(ConfigError, match=message):
        validate_spec(tiny_spec() | {key: value}, "study main")
