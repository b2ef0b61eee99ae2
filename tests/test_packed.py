"""The vectorised pack (initmem.engine.packed) against the reference single-run trainer.

What is exact and what is not: the schedule, clocks, epochs, initial kernel norm, status and early
stopping decisions are the same arithmetic and must be equal. Losses, accuracies and kernel norms go
through convolutions whose summation order differs (grouped vs plain), so they agree to float32
rounding amplified by training: tolerances in tests/helpers/packs.py. Two cases amplify rounding into visible
differences and are therefore tested at the first step only: Adam-family updates of conv biases in
front of BatchNorm (their gradient is pure rounding noise, and Adam turns noise into +-lr steps that
move the BN moving mean) and deep ResNet-56/110 with small batches (chaotic within a few steps).
Two single runs on different hardware differ the same way.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
import torch.nn.functional as F
from helpers.packs import PACK_RTOL, assert_same_records, pack_runs

from initmem.engine.compute import set_precision
from initmem.engine.models import build_model, init_weights
from initmem.engine.packed import PackedModel, check_packable, train_packed
from initmem.engine.settings import TrainSettings
from initmem.engine.train import train_run


@pytest.mark.parametrize("overrides", [
    dict(optimizer="sgd", lr=0.01, augment=True, l2=1e-3, batch_size=40),   # BN, augmentation, L2, partial last batch
    dict(optimizer="sgd_momentum", lr=0.01, norm="layernorm", pool="avg"),
    dict(optimizer="adam", lr=1e-3, norm="layernorm", augment=True),
    dict(optimizer="adamw", lr=1e-3, norm="layernorm"),
    dict(optimizer="muon", lr=1e-3, norm="layernorm", batch_size=40),        # Newton-Schulz batched over models
    dict(optimizer="muon_full", lr=1e-3, norm="layernorm"),
])
def test_vectorised_pack_matches_single_runs(tiny_tensors, overrides):
    runs = pack_runs(**overrides)
    packed = train_packed(runs, tiny_tensors, log=None)
    single = [train_run(r["spec"], tiny_tensors, r["run_id"], log=None) for r in runs]
    assert_same_records(packed, single, rtol=PACK_RTOL)
    assert packed[0]["env"]["engine"] == "vmap" and packed[0]["env"]["pack_size"] == 3


@pytest.mark.parametrize("arch,width,norm,grad_floor", [("resnet9", 8, "batchnorm", 1e-6), ("resnet9", 8, "layernorm", 1e-6),
                                                        ("resnet56", 16, "batchnorm", 2e-2)])
def test_first_step_is_as_accurate_as_a_single_float32_run(arch, width, norm, grad_floor):
    """Against a float64 single run, the pack's logits, moving statistics and gradients are as close
    as a float32 single run's. ResNet-56's backward through 56 BatchNorms loses up to ~1% of the
    gradient in float32 whatever the summation order (measured: single 0.3%, pack 1.0% of the norm),
    hence a relative floor of 2e-2 there instead of 1e-6."""
    torch.manual_seed(0)
    x, y = torch.rand(2, 24, 3, 32, 32), torch.randint(0, 10, (2, 24))
    members = []
    for seed, sigma in enumerate((0.5, 2.0)):
        m = build_model(arch, width, norm)
        init_weights(m, sigma, torch.Generator().manual_seed(seed))
        members.append(m.train())
    singles = [copy.deepcopy(m) for m in members]
    exact = [copy.deepcopy(m).double() for m in members]
    packed = PackedModel(members)
    packed.train()
    logits = packed(x)
    F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view(2, -1).mean(1).sum().backward()
    for i, (single, ref) in enumerate(zip(singles, exact, strict=True)):
        out_single, out_ref = single(x[i]), ref(x[i].double())
        assert (logits[i].double() - out_ref).abs().max() <= 2 * (out_single.double() - out_ref).abs().max() + 1e-6
        F.cross_entropy(out_single, y[i]).backward()
        F.cross_entropy(out_ref, y[i]).backward()
        # all gradients as one vector, without conv biases in front of BatchNorm (exact gradient 0:
        # pack and single run both see rounding noise there)
        used = [j for j, q in enumerate(ref.parameters()) if float(q.grad.norm()) > 1e-8]
        flat = lambda grads, used=used: torch.cat([grads[j].double().flatten() for j in used])
        g_ref = flat([q.grad for q in ref.parameters()])
        err_single = float((flat([p.grad for p in single.parameters()]) - g_ref).norm())
        err_packed = float((flat([p.grad[i] for p in packed.params.values()]) - g_ref).norm())
        assert err_packed <= max(2 * err_single, grad_floor * float(g_ref.norm()))
        for name, buf in single.named_buffers():
            assert torch.allclose(packed.buffers[name][i], buf, rtol=1e-5, atol=1e-6), name


def test_diverged_member_leaves_the_pack_and_the_others_go_on(tiny_tensors):
    runs = pack_runs(sigmas=(1.0, 1e30, 0.5), lr=0.01)
    packed = train_packed(runs, tiny_tensors, log=None)
    single = [train_run(r["spec"], tiny_tensors, r["run_id"], log=None) for r in runs]
    assert [r["status"] for r in packed] == ["ok", "diverged", "ok"]
    assert_same_records(packed, single, rtol=PACK_RTOL)
    json.dumps(packed, allow_nan=False)


def test_members_stop_early_at_their_own_epochs(tiny_tensors):
    # three members that stop at three different epochs (full length, 2, 3); chosen by trying the
    # sigma_w x seed grid at lr 0.1 once the BatchNorm moved to the native kernel (at lr 0.5 the stops moved with its rounding)
    runs = pack_runs(sigmas=(0.3, 0.5, 1.5), seeds=(0, 0, 2), lr=0.1, epochs=5, patience=1)
    packed = train_packed(runs, tiny_tensors, log=None)
    single = [train_run(r["spec"], tiny_tensors, r["run_id"], log=None) for r in runs]
    assert [len(r["history"]["epoch"]) for r in packed] == [len(r["history"]["epoch"]) for r in single] == [5, 2, 3]
    assert_same_records(packed, single, rtol=None)  # large steps: rounding shows in the losses within epochs


def test_sigterm_checkpoint_resumes_a_pack_bit_identically(tmp_path, tiny_tensors, stop_request):
    runs = pack_runs(sigmas=(0.3, 1.0, 2.0), seeds=(0, 1, 2), lr=0.5, epochs=5, patience=1, augment=True, optimizer="adam")
    reference = train_packed(runs, tiny_tensors, log=None)
    ckpt = tmp_path / "pack.ckpt"
    # stop in the middle of epoch 3, after the second member left the pack at the end of epoch 2
    stop_after = 2 * math.ceil(96 / 32) + 1
    with stop_request.after_backward(stop_after), stop_request.stops("epoch 2 step 1"):
        train_packed(runs, tiny_tensors, checkpoint=ckpt, log=None)
    resumed = train_packed(runs, tiny_tensors, checkpoint=ckpt, log=None)
    strip = lambda recs: [{k: v for k, v in r.items() if k != "wall_seconds"} for r in recs]
    assert json.dumps(strip(resumed)) == json.dumps(strip(reference))


def test_pack_members_must_differ_only_in_sigma_and_seed():
    runs = pack_runs()
    runs[1]["spec"]["lr"] = 0.5
    with pytest.raises(ValueError, match=r"r1 differs from r0 in \['lr'\]"):
        check_packable(runs)
    with pytest.raises(ValueError, match="names a run twice"):
        check_packable([runs[0], runs[0]])


def test_bf16_precision_is_recorded_and_close_to_float32(tiny_tensors):
    runs = pack_runs(sigmas=(0.5, 1.0), seeds=(0, 1), norm="layernorm", optimizer="adam", lr=1e-3)
    fp32 = train_packed(runs, tiny_tensors, log=None)
    bf16 = train_packed(runs, tiny_tensors, settings=TrainSettings(precision="bf16"), log=None)
    set_precision("float32")
    assert [r["env"]["precision"] for r in bf16] == ["bf16", "bf16"] and fp32[0]["env"]["precision"] == "float32"
    for a, b in zip(bf16, fp32, strict=True):
        assert a["history"]["train_loss"] == pytest.approx(b["history"]["train_loss"], rel=5e-2)
        assert a["history"]["train_loss"] != b["history"]["train_loss"]  # bf16 really was used
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        set_precision("fp8")


@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam", "muon"])
def test_a_masked_member_stays_frozen_and_leaves_the_others_alone(optimizer):
    """A member that stopped (here with NaN weights, as after divergence) keeps its parameters, BatchNorm
    statistics and optimizer state; the other members train exactly as in a pack without it masked."""
    from initmem.engine.optim import KerasOptimizer
    from initmem.engine.packed import pack_step

    def pack(poison: bool):
        members = []
        for seed in (0, 1):
            m = build_model("resnet9", 4)
            init_weights(m, 1.0, torch.Generator().manual_seed(seed))
            members.append(m)
        model = PackedModel(members)
        model.train()
        opt = KerasOptimizer(optimizer, list(model.params.values()), stacked=True)
        if poison:
            with torch.no_grad():
                model.params["dense.weight"][1] = float("nan")
            keep = torch.tensor([True, False])
            model.set_active(keep)
            opt.set_active(keep)
        return model, opt

    torch.manual_seed(0)
    x, y = torch.rand(2, 8, 3, 32, 32), torch.randint(0, 10, (2, 8))
    results = []
    for poison in (False, True):
        model, opt = pack(poison)
        before = copy.deepcopy((model.state_dict(), opt.state_dict()))
        sums = {"loss": torch.zeros(2, dtype=torch.float64), "correct": torch.zeros(2, dtype=torch.float64),
                "finite": torch.ones(2, dtype=torch.bool)}
        for _ in range(2):
            pack_step(model, opt, x, y, 0.01, 1e-3, sums)
        results.append((before, model.state_dict(), opt.state_dict()))
    (_, free, free_opt), (before, masked, masked_opt) = results
    for part in ("params", "buffers"):
        for k, v in masked[part].items():
            assert torch.equal(v[0], free[part][k][0]), k                          # member 0 as if alone
            assert torch.allclose(v[1], before[0][part][k][1], rtol=0, atol=0, equal_nan=True), k  # member 1 frozen
    assert any(not torch.equal(v[0], before[0]["params"][k][0]) for k, v in masked["params"].items())  # member 0 trained
    for s_now, s_before, s_free in zip(masked_opt["state"], before[1]["state"], free_opt["state"], strict=True):
        for k in s_now:
            assert torch.equal(s_now[k][0], s_free[k][0]) and torch.equal(s_now[k][1], s_before[k][1]), k
