"""The engine against Keras 3 itself: committed fixtures of Keras training the paper's ResNet-9
(width 4, float64) a few steps with each optimizer (``tools/keras_parity/make_fixtures.py``; how they were
made: ``tests/fixtures/keras/README.md``). The engine starts from the same weights, takes the same
minibatches with the same learning rates, and must land on Keras' weights and BatchNorm moving
statistics to 1e-7 (max absolute difference over every tensor).

The engine's own model, L2 term, schedule and optimizer do the work; the step is ``train.run_step``
line by line with the cross-entropy taken in the logits' dtype. ``run_step`` and ``packed.pack_step``
themselves take it in float32 (``logits.float()``, for bf16 autocast), which in float64 puts float32
rounding into every gradient; the last tests hold them to the same 1e-7.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from initmem.engine.compute import step_inputs
from initmem.engine.models import build_model
from initmem.engine.optim import KerasOptimizer, lr_schedule
from initmem.engine.packed import PackedModel, pack_step
from initmem.engine.train import l2_penalty, run_step

FIXTURE = Path(__file__).parent / "fixtures" / "keras" / "resnet9_w4.npz"
TOLERANCE = 1e-7  # max |engine - Keras| over every weight and moving statistic, float64
# Every case the fixture must hold: each optimizer the engine shares with Keras (muon_full has no Keras
# counterpart), explicit L2 once, and Lion with and without its decoupled decay.
CASES = ("sgd", "sgd_momentum", "sgd_momentum_l2", "adam", "adamw", "muon", "lion", "lion_wd")


@cache
def fixture() -> tuple[dict, dict[str, np.ndarray]]:
    """The fixture's metadata and arrays."""
    with np.load(FIXTURE, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return json.loads(str(arrays.pop("meta"))), arrays


def initial_state() -> dict[str, torch.Tensor]:
    """The initial weights both sides start from (float32 values, exact in float64)."""
    _, a = fixture()
    return {k[len("init/"):]: torch.from_numpy(v.astype(np.float64)) for k, v in a.items() if k.startswith("init/")}


def keras_end_state(case: str) -> dict[str, torch.Tensor]:
    """Keras' weights and moving statistics after the last step (engine names and layouts)."""
    _, a = fixture()
    init = initial_state()
    out = {k: init[k] + torch.from_numpy(a[f"{case}/delta/{k}"].astype(np.float64)) for k in init if f"{case}/delta/{k}" in a}
    out.update({k: torch.from_numpy(a[f"{case}/end/{k}"]) for k in init if f"{case}/end/{k}" in a})
    return out


def batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The minibatches Keras trained on: NCHW images in [0, 1] (uint8 / 255) and labels."""
    _, a = fixture()
    return [(torch.from_numpy(x.astype(np.float64) / 255.0), torch.from_numpy(y.astype(np.int64))) for x, y in zip(a["x"], a["y"], strict=True)]


def engine_rates(case: str) -> list[float]:
    """The engine's scheduled rates for the case's steps (its own schedule code)."""
    meta, _ = fixture()
    c = meta["cases"][case]
    lr_at = lr_schedule({"lr": c["lr"], "schedule": meta["schedule"], "alpha": meta["alpha"]}, meta["steps"])
    return [lr_at(k) for k in range(meta["steps"])]


def make_optimizer(case: str, params: list[torch.Tensor], stacked: bool = False) -> KerasOptimizer:
    """The engine's optimizer for a case, with the case's weight decay and momentum given explicitly."""
    c = fixture()[0]["cases"][case]
    return KerasOptimizer(c["optimizer"], params, c["weight_decay"], c["momentum"], stacked=stacked)


def float64_step(model: torch.nn.Module, opt: KerasOptimizer, x: torch.Tensor, y: torch.Tensor, lr: float, l2: float) -> float:
    """``train.run_step`` with the cross-entropy in the logits' dtype (float64): forward, loss + L2,
    backward, the optimizer's update; the batch's loss."""
    loss = F.cross_entropy(model(x), y) + l2_penalty(model, l2)
    for p in opt.params:
        p.grad = None
    loss.backward()
    opt.step(lr)
    return float(loss.detach())


def train_engine(case: str, through_run_step: bool = False) -> tuple[dict[str, torch.Tensor], list[float]]:
    """The engine trains the case's steps (:func:`float64_step`, or ``train.run_step`` itself); its end
    state and per-step losses."""
    meta, _ = fixture()
    model = build_model("resnet9", meta["width"]).double()
    model.load_state_dict(initial_state())
    opt = make_optimizer(case, list(model.parameters()))
    _, sums = step_inputs(None, torch.device("cpu"))
    model.train()
    l2, losses = meta["cases"][case]["l2"], []
    for (x, y), lr in zip(batches(), engine_rates(case), strict=True):
        if through_run_step:
            before = float(sums["loss"])
            run_step(model, model, opt, x, y, lr, l2, sums)
            losses.append((float(sums["loss"]) - before) / len(y))
        else:
            losses.append(float64_step(model, opt, x, y, lr, l2))
    return {k: v.detach() for k, v in model.state_dict().items()}, losses


def worst(mine: dict[str, torch.Tensor], keras: dict[str, torch.Tensor]) -> tuple[float, str]:
    """Max absolute difference over every tensor, and the tensor where it is."""
    assert set(mine) == set(keras), f"tensors differ: {sorted(set(mine) ^ set(keras))}"
    diffs = {k: float((mine[k] - keras[k]).abs().max()) for k in keras}
    name = max(diffs, key=diffs.get)
    return diffs[name], name


def test_fixture_holds_every_case_in_float64() -> None:
    meta, _ = fixture()
    assert set(meta["cases"]) == set(CASES)
    assert meta["floatx"] == "float64" and meta["backend"] == "torch" and meta["keras"].startswith("3.")
    assert meta["max_storage_rounding"] < TOLERANCE / 5  # the float32-stored changes leave the tolerance to the engine


@pytest.mark.parametrize("case", CASES)
def test_schedule_matches_keras_cosine_decay(case: str) -> None:
    _, a = fixture()
    np.testing.assert_allclose(engine_rates(case), a[f"{case}/lr"], rtol=1e-15, atol=0)


def sign_of_noise(state: dict[str, torch.Tensor]) -> tuple[list[str], list[str]]:
    """The conv biases that feed a BatchNorm (their exact gradient is zero: the normalisation removes
    any shift) and those BatchNorms' moving means (which average the shift in)."""
    biases = [k for k in state if k.startswith("features.") and k.endswith(".0.bias")]
    return biases, [k[:-len("0.bias")] + "1.moving_mean" for k in biases]


def check_lion_noise(case: str, mine: dict[str, torch.Tensor], keras: dict[str, torch.Tensor]) -> None:
    """Lion steps by lr * sign(...) with no epsilon, so on the biases of :func:`sign_of_noise` it turns
    the rounding noise of a zero gradient into full +-lr steps, in Keras and in the engine alike, with
    signs that differ between them. Both must be such steps: each coordinate moves by at most the sum
    of the rates (plus its decay), and the moving means by at most 1 - momentum times the biases' gap."""
    biases, means = sign_of_noise(keras)
    init, rates, wd = initial_state(), engine_rates(case), fixture()[0]["cases"][case]["weight_decay"]
    for k in biases:
        bound = sum(rates) * (1 + wd * float(init[k].abs().max())) + 1e-12
        for side, state in (("engine", mine), ("Keras", keras)):
            moved = float((state[k] - init[k]).abs().max())
            assert moved <= bound, f"{case}: {side} moved {k} by {moved:.3e}, more than Lion's {bound:.3e}"
    gap = 0.01 * sum(2 * sum(rates[:t]) * (1 + wd) for t in range(len(rates)))  # BatchNorm momentum 0.99
    for k in means:
        diff = float((mine[k] - keras[k]).abs().max())
        assert diff <= gap + TOLERANCE, f"{case}: {k} differs by {diff:.3e}, more than the biases' noise allows ({gap:.3e})"


@pytest.mark.parametrize("case", CASES)
def test_engine_matches_keras(case: str) -> None:
    """One run: weights and moving statistics after the last step equal Keras' to 1e-7, and every
    step's loss (Lion: all but the tensors :func:`check_lion_noise` bounds instead)."""
    mine, losses = train_engine(case)
    keras = keras_end_state(case)
    if fixture()[0]["cases"][case]["optimizer"] == "lion":
        check_lion_noise(case, mine, keras)
        noise = set(sum(sign_of_noise(keras), []))
        mine, keras = ({k: v for k, v in d.items() if k not in noise} for d in (mine, keras))
    diff, where = worst(mine, keras)
    assert diff <= TOLERANCE, f"{case}: engine and Keras differ by {diff:.3e} in {where}"
    np.testing.assert_allclose(losses, fixture()[1][f"{case}/loss"], rtol=1e-9)


@pytest.mark.parametrize("case", ["sgd_momentum_l2", "adam"])
def test_run_step_matches_keras(case: str) -> None:
    """The trainer's own step, ``train.run_step``, lands on Keras' weights to 1e-7 in float64."""
    mine, _ = train_engine(case, through_run_step=True)
    diff, where = worst(mine, keras_end_state(case))
    assert diff <= TOLERANCE, f"{case}: train.run_step and Keras differ by {diff:.3e} in {where}"


@pytest.mark.parametrize("case", ["sgd_momentum_l2", "adam"])
def test_pack_of_two_matches_keras(case: str) -> None:
    """The pack engine's own step, ``packed.pack_step``: two identical members both land on Keras' weights."""
    meta, _ = fixture()
    members = []
    for _ in range(2):
        m = build_model("resnet9", meta["width"]).double()
        m.load_state_dict(initial_state())
        members.append(m)
    pack = PackedModel(members)
    opt = make_optimizer(case, list(pack.params.values()), stacked=True)
    _, sums = step_inputs(2, torch.device("cpu"))
    pack.train()
    for (x, y), lr in zip(batches(), engine_rates(case), strict=True):
        pack_step(pack, opt, torch.stack([x, x]), torch.stack([y, y]), lr, meta["cases"][case]["l2"], sums)
    keras = keras_end_state(case)
    for member in range(2):
        mine = {k: v[member].detach() for k, v in {**pack.params, **pack.buffers}.items()}
        diff, where = worst(mine, keras)
        assert diff <= TOLERANCE, f"pack member {member}: engine and Keras differ by {diff:.3e} in {where}"
