import math

import pytest
import torch

from initmem.engine.optim import KerasOptimizer, learning_rate, newton_schulz5


def test_cosine_schedule_matches_closed_form():
    lr0, total, alpha = 1e-3, 1000, 0.01
    closed = lambda k: lr0 * (alpha + (1 - alpha) * 0.5 * (1 + math.cos(math.pi * k / total)))
    for k in (0, total // 2, total - 1):
        assert learning_rate(k, lr0, total, "cosine", alpha) == pytest.approx(closed(k), rel=1e-12)
    assert learning_rate(0, lr0, total, "cosine", alpha) == pytest.approx(lr0)
    assert learning_rate(total // 2, lr0, total, "cosine", alpha) == pytest.approx(lr0 * (alpha + (1 - alpha) / 2))
    assert learning_rate(5, lr0, total, "constant", alpha) == lr0
    with pytest.raises(ValueError, match="schedule"):
        learning_rate(0, lr0, total, "linear", alpha)


def _param(values):
    p = torch.nn.Parameter(torch.tensor(values, dtype=torch.float64))
    return p


def test_adam_uses_keras_eps_hat_form():
    p = _param([1.0, -2.0])
    g = torch.tensor([0.5, 1e-9], dtype=torch.float64)
    opt = KerasOptimizer("adam", [p])
    p.grad = g.clone()
    opt.step(0.1)
    m, v = 0.1 * g, 0.001 * g**2
    alpha = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
    expected = torch.tensor([1.0, -2.0], dtype=torch.float64) - alpha * m / (v.sqrt() + 1e-7)
    assert torch.allclose(p.detach(), expected, rtol=0, atol=1e-15)
    # eps-hat outside the bias correction: the tiny gradient gives a much smaller step than
    # PyTorch's Adam (eps inside the corrected denominator) would.
    torch_p = _param([1.0, -2.0])
    torch_opt = torch.optim.Adam([torch_p], lr=0.1, eps=1e-7)
    torch_p.grad = g.clone()
    torch_opt.step()
    assert not torch.allclose(torch_p.detach(), expected)


def test_decoupled_weight_decay_applied_before_update_with_scheduled_rate():
    p = _param([2.0])
    opt = KerasOptimizer("adamw", [p], weight_decay=0.1)
    p.grad = torch.zeros(1, dtype=torch.float64)
    opt.step(0.5)
    # zero gradient: Adam step is 0, decay is p - p * wd * lr
    assert p.item() == pytest.approx(2.0 - 2.0 * 0.1 * 0.5)
    assert KerasOptimizer("adamw", [p]).weight_decay == 1e-4
    assert KerasOptimizer("muon", [p]).weight_decay == 1e-4
    assert KerasOptimizer("adam", [p]).weight_decay == 0.0


def test_sgd_momentum_keeps_lr_inside_velocity():
    p = _param([0.0])
    opt = KerasOptimizer("sgd_momentum", [p])
    for lr in (1.0, 0.5):
        p.grad = torch.ones(1, dtype=torch.float64)
        opt.step(lr)
    # v1 = -1; v2 = 0.9 * -1 - 0.5 = -1.4; p = -2.4 (PyTorch's form would give -1 - 0.5 * 1.9 = -1.95)
    assert p.item() == pytest.approx(-2.4)


def test_l2_gradient_is_two_l2_w():
    from initmem.engine.train import l2_penalty

    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(2, 3))
    l2 = 1e-2
    l2_penalty(model, l2).backward()
    for layer in (model[0], model[2]):
        assert torch.allclose(layer.weight.grad, 2 * l2 * layer.weight.detach())
        assert layer.bias.grad is None  # biases are not regularised


def test_muon_orthogonalises_only_2d_kernels_in_keras_mode():
    dense = torch.nn.Parameter(torch.randn(10, 32))
    conv = torch.nn.Parameter(torch.randn(8, 4, 3, 3))
    bias = torch.nn.Parameter(torch.randn(10))
    for name, expect_muon in (("muon", {0}), ("muon_full", {0, 1})):
        opt = KerasOptimizer(name, [dense, conv, bias])
        for p in (dense, conv, bias):
            p.grad = torch.randn_like(p)
        opt.step(1e-3)
        muon_params = {i for i, s in enumerate(opt.state) if "v" not in s}
        assert muon_params == expect_muon
        assert "m" in opt.state[0] and "v" in opt.state[2]


def test_muon_step_has_keras_scale():
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.zeros(10, 32, dtype=torch.float64))
    g = torch.randn(10, 32, dtype=torch.float64)
    opt = KerasOptimizer("muon", [p], weight_decay=0.0)
    p.grad = g
    opt.step(1.0)
    u = g + 0.95 * g  # m = g after one step; Nesterov u = g + 0.95 m
    expected = -newton_schulz5(u) * math.sqrt(32) * 0.2
    assert torch.allclose(p.detach(), expected)
    # NS5 pushes singular values towards ~1 (Keras' quintic does not converge exactly)
    s = torch.linalg.svdvals(newton_schulz5(u))
    assert s.min() > 0.5 and s.max() < 1.3


def test_unknown_optimizer_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown optimizer 'lamb'"):
        KerasOptimizer("lamb", [])


def test_coupled_weight_decay_goes_through_the_gradient():
    # decoupled (Keras): v = -lr g, then p <- p - lr wd p first; coupled (PyTorch): g <- g + wd p
    wd, lr = 0.1, 0.5
    p_dec, p_cpl = _param([2.0]), _param([2.0])
    dec = KerasOptimizer("sgd_momentum", [p_dec], weight_decay=wd)
    cpl = KerasOptimizer("sgd_momentum", [p_cpl], weight_decay=wd, weight_decay_mode="coupled")
    for p, opt in ((p_dec, dec), (p_cpl, cpl)):
        p.grad = torch.zeros(1, dtype=torch.float64)
        opt.step(lr)
    # one step: both shrink p by lr * wd * p = 0.1
    assert p_dec.item() == pytest.approx(1.9) and p_cpl.item() == pytest.approx(1.9)
    for p, opt in ((p_dec, dec), (p_cpl, cpl)):
        p.grad = torch.zeros(1, dtype=torch.float64)
        opt.step(lr)
    # second step: decoupled 1.9 - 0.095 (+ the velocity of a zero gradient: 0); coupled: the decay
    # entered the velocity, v = 0.9 * (-0.1) - 0.5 * 0.1 * 1.9 = -0.185
    assert p_dec.item() == pytest.approx(1.9 - 0.095)
    assert p_cpl.item() == pytest.approx(1.9 - 0.185)


def test_coupled_weight_decay_in_steady_state_is_ten_times_stronger_with_momentum():
    # the issue-13 claim: with momentum 0.9 coupled decay acts like wd / (1 - 0.9) per step
    def shrink(mode: str) -> float:
        p = _param([1.0])
        opt = KerasOptimizer("sgd_momentum", [p], weight_decay=1e-3, weight_decay_mode=mode)
        for _ in range(200):
            p.grad = torch.zeros(1, dtype=torch.float64)
            opt.step(0.1)
        return -math.log(p.item()) / 200  # per-step log decay rate
    assert shrink("decoupled") == pytest.approx(1e-4, rel=1e-3)
    assert shrink("coupled") == pytest.approx(1e-3, rel=0.05)


def test_coupled_weight_decay_is_the_same_for_stacked_packs():
    torch.manual_seed(0)
    single = [torch.nn.Parameter(torch.randn(3, 4, dtype=torch.float64)) for _ in range(2)]
    stacked = torch.nn.Parameter(torch.stack([p.detach().clone() for p in single]))
    grads = [torch.randn(3, 4, dtype=torch.float64) for _ in range(2)]
    for p, g in zip(single, grads, strict=True):
        opt = KerasOptimizer("adamw", [p], weight_decay=0.01, weight_decay_mode="coupled")
        for _ in range(3):
            p.grad = g.clone()
            opt.step(0.1)
    opt = KerasOptimizer("adamw", [stacked], weight_decay=0.01, weight_decay_mode="coupled", stacked=True)
    for _ in range(3):
        stacked.grad = torch.stack(grads)
        opt.step(0.1)
    assert torch.allclose(stacked.detach(), torch.stack([p.detach() for p in single]), rtol=0, atol=1e-12)


def test_unknown_weight_decay_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="weight_decay_mode 'l2'"):
        KerasOptimizer("sgd", [], weight_decay_mode="l2")


def test_weight_decay_mode_is_a_spec_option_that_leaves_default_specs_alone():
    from pathlib import Path

    import yaml

    from initmem.pipeline.grid import expand_studies
    from initmem.spec import ConfigError

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())
    before = {r.run_id: r.spec for r in expand_studies(config)["best_recipe"]}
    config["studies"]["best_recipe"]["variants"]["sgd_standard"]["weight_decay_mode"] = "decoupled"  # the default, said
    assert {r.run_id: r.spec for r in expand_studies(config)["best_recipe"]} == before  # no spec, id or rerun changes
    config["studies"]["best_recipe"]["grid"]["weight_decay_mode"] = ["decoupled", "coupled"]
    runs = expand_studies(config)["best_recipe"]
    coupled = [r for r in runs if r.spec.get("weight_decay_mode") == "coupled"]
    assert len(coupled) == len(runs) // 2 and coupled[0].run_id.startswith("sgd_standard_coupled_")
    config["studies"]["best_recipe"]["grid"]["weight_decay_mode"] = ["l2"]
    with pytest.raises(ConfigError, match="weight_decay_mode = 'l2' is unknown"):
        expand_studies(config)


def test_loaded_state_follows_each_parameter_to_its_device():
    # a CPU checkpoint resumed on a GPU: 'meta' stands in for cuda (no GPU in the test machine)
    torch.manual_seed(0)
    cpu = [torch.nn.Parameter(torch.randn(3, 4)), torch.nn.Parameter(torch.randn(4))]
    opt = KerasOptimizer("adamw", cpu)
    for p in cpu:
        p.grad = torch.randn_like(p)
    opt.step(0.1)
    sd = opt.state_dict()
    moved = [torch.nn.Parameter(p.detach().to("meta", torch.float64)) for p in cpu]
    resumed = KerasOptimizer("adamw", moved)
    resumed.load_state_dict(sd)
    assert resumed.step_count.device.type == "meta"  # the step count (a compiled step reads it) moves too
    on_cpu = KerasOptimizer("adamw", [torch.nn.Parameter(p.detach().clone()) for p in cpu])
    on_cpu.load_state_dict(sd)
    assert on_cpu.iterations == 1
    tensors = [(p, v) for p, s in zip(moved, resumed.state, strict=True) for v in s.values()]
    assert len(tensors) == 4
    assert all(v.device.type == "meta" and v.dtype == torch.float64 and v.shape == p.shape for p, v in tensors)
    with pytest.raises(ValueError, match="state for 2 tensors, the model has 1"):
        KerasOptimizer("adamw", moved[:1]).load_state_dict(sd)


def test_flat_buffers_keep_each_parameters_memory_layout():
    # channels_last kernels (a benchmark variant) stay channels_last and get the same update as contiguous ones
    torch.manual_seed(0)
    w = torch.randn(4, 3, 3, 3)
    plain = torch.nn.Parameter(w.clone())
    nhwc = torch.nn.Parameter(w.clone().to(memory_format=torch.channels_last))
    grad = torch.randn(4, 3, 3, 3)
    for p in (plain, nhwc):
        opt = KerasOptimizer("muon_full", [p])
        for _ in range(2):
            p.grad = grad.clone().to(memory_format=torch.channels_last) if p is nhwc else grad.clone()
            opt.step(0.1)
    assert nhwc.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(nhwc.detach().contiguous(), plain.detach())


def test_lion_follows_keras_lion_with_the_shared_decoupled_decay():
    """keras.optimizers.Lion: p <- p - eta sign(b1 m + (1 - b1) g), m <- b2 m + (1 - b2) g (b1 .9, b2 .99),
    after Keras' base-optimizer decay p <- p - eta wd p; no decay by default (Keras' weight_decay=None)."""
    assert KerasOptimizer("lion", [_param([1.0])]).weight_decay == 0.0
    p = _param([1.0, -2.0, 0.5])
    opt = KerasOptimizer("lion", [p], weight_decay=0.1)
    ref, m = p.detach().clone(), torch.zeros(3, dtype=torch.float64)
    grads = [torch.tensor(g, dtype=torch.float64) for g in ([0.3, -1e-9, 0.0], [-0.2, 0.5, 4.0], [0.01, 0.01, -3.0])]
    for lr, g in zip((1e-3, 5e-4, 2e-4), grads, strict=True):
        p.grad = g.clone()
        opt.step(lr)
        ref = ref - ref * 0.1 * lr
        ref = ref - lr * torch.sign(0.9 * m + 0.1 * g)
        m = 0.99 * m + 0.01 * g
        assert torch.allclose(p.detach(), ref, rtol=0, atol=1e-15)
        assert torch.allclose(opt.state[0]["m"], m, rtol=0, atol=1e-15)
    # each coordinate moves by exactly eta (a fixed size per coordinate) when there is no decay
    q = _param([0.0, 0.0])
    lion = KerasOptimizer("lion", [q])
    q.grad = torch.tensor([1e-6, -50.0], dtype=torch.float64)
    lion.step(0.25)
    assert q.detach().tolist() == [-0.25, 0.25]
