import math

import pytest
import torch

from initmem.engine.models import KerasBatchNorm, build_model, count_parameters, init_weights, kernel_layers, kernels


def test_resnet9_width64_parameter_count():
    # Page/Myrtle layout with conv biases and a dense head (README quotes this number).
    assert count_parameters(build_model("resnet9", 64)) == 6_575_370


@pytest.mark.parametrize("arch", ["resnet9", "resnet56", "resnet110"])
def test_architectures_give_logits(arch):
    model = build_model(arch, 8)
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)


def test_cifar_resnet_depth_counts_conv_layers():
    # 6n+2: stem conv + 6n block convs + dense; the 2 projection shortcuts are extra 1x1 convs.
    for arch, n in (("resnet56", 9), ("resnet110", 18)):
        convs = [m for m in kernel_layers(build_model(arch, 64)) if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3)]
        assert len(convs) == 1 + 6 * n


def test_init_statistics_and_exact_sigma_proportionality():
    m1, m2 = build_model("resnet9", 16), build_model("resnet9", 16)
    init_weights(m1, 1.0, torch.Generator().manual_seed(7))
    init_weights(m2, 2.0, torch.Generator().manual_seed(7))
    for w1, w2 in zip(kernels(m1), kernels(m2), strict=False):
        assert torch.equal(w2, 2 * w1)  # same normal draws, sigma_w the only difference
    big = max(kernels(m1), key=lambda w: w.numel())
    fan_in = big[0].numel()
    assert abs(big.std().item() * math.sqrt(fan_in) - 1.0) < 0.02
    assert abs(big.mean().item()) < 0.01 / math.sqrt(fan_in) * 10
    for layer1, layer2 in zip(kernel_layers(m1), kernel_layers(m2), strict=False):
        assert torch.equal(layer1.bias, layer2.bias)  # biases are not scaled by sigma_w
    biases = torch.cat([lay.bias for lay in kernel_layers(m1)])
    assert abs(biases.std().item() - 0.2) < 0.01


def test_keras_batchnorm_moving_statistics_use_biased_variance():
    torch.manual_seed(0)
    bn = KerasBatchNorm(3)
    x = torch.randn(5, 3, 4, 4) * 2 + 1
    y = bn.train()(x)
    mean = x.mean((0, 2, 3))
    var_biased = ((x - mean.view(1, 3, 1, 1)) ** 2).mean((0, 2, 3))
    assert torch.allclose(bn.moving_mean, 0.01 * mean, atol=1e-6)
    assert torch.allclose(bn.moving_var, 0.99 + 0.01 * var_biased, atol=1e-6)
    expected = (x - mean.view(1, 3, 1, 1)) / torch.sqrt(var_biased.view(1, 3, 1, 1) + 1e-3)
    assert torch.allclose(y, expected, atol=1e-5)
    y_eval = bn.eval()(x)
    assert torch.allclose(y_eval, (x - bn.moving_mean.view(1, 3, 1, 1)) / torch.sqrt(bn.moving_var.view(1, 3, 1, 1) + 1e-3), atol=1e-5)


def test_stride2_same_padding_is_bottom_right_like_keras():
    from initmem.engine.models import Conv

    conv = Conv(1, 1, 3, stride=2)
    with torch.no_grad():
        conv.weight.zero_()
        conv.weight[0, 0, 0, 0] = 1.0  # picks the top-left tap of each window
        conv.bias.zero_()
    x = torch.arange(16.0).view(1, 1, 4, 4)
    out = conv(x)
    # Keras pads 0 rows on top, 1 at the bottom: windows start at rows/cols 0 and 2.
    assert out.shape == (1, 1, 2, 2)
    assert out.flatten().tolist() == [0.0, 2.0, 8.0, 10.0]


def _count_ops(fn) -> int:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += not func.is_view
            return func(*args, **(kwargs or {}))
    with Count():
        fn()
    return Count.n


def test_keras_batchnorm_is_the_native_kernel_with_keras_statistics_in_float64():
    torch.manual_seed(0)
    bn = KerasBatchNorm(3).double().train()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([0.5, 1.0, 2.0]))
        bn.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    x = (torch.randn(6, 3, 5, 5, dtype=torch.float64) * 3 + 2).requires_grad_(True)
    ref_x = x.detach().clone().requires_grad_(True)
    w, b = bn.weight.detach().clone().requires_grad_(True), bn.bias.detach().clone().requires_grad_(True)
    # Keras: two-pass biased moments, eps 1e-3, moving = 0.99 moving + 0.01 batch
    mean = ref_x.mean((0, 2, 3), keepdim=True)
    var = (ref_x - mean).square().mean((0, 2, 3), keepdim=True)
    ref = (ref_x - mean) / torch.sqrt(var + 1e-3) * w.view(1, 3, 1, 1) + b.view(1, 3, 1, 1)
    upstream = torch.randn_like(ref)
    n = _count_ops(lambda: (bn(x) * upstream).sum().backward())
    (ref * upstream).sum().backward()
    y = bn.train()(x.detach())  # second call for the output (the first updated the moving statistics once)
    assert torch.allclose(x.grad, ref_x.grad, rtol=0, atol=1e-12)
    assert torch.allclose(bn.weight.grad, w.grad, rtol=0, atol=1e-12) and torch.allclose(bn.bias.grad, b.grad, rtol=0, atol=1e-12)
    assert torch.allclose(y, ref.detach(), rtol=0, atol=1e-12)
    m = 0.01 * mean.flatten().detach()  # after the first of two updates
    assert torch.allclose(bn.moving_mean, 0.99 * m + 0.01 * mean.flatten().detach(), rtol=0, atol=1e-14)
    v = 0.99 + 0.01 * var.flatten().detach()
    assert torch.allclose(bn.moving_var, 0.99 * v + 0.01 * var.flatten().detach(), rtol=0, atol=1e-14)
    # one normalisation kernel each way, not a dozen element-wise ones (an element-wise version dispatched 39)
    assert n <= 12, n


def test_keras_batchnorm_statistics_are_float32_under_bf16_autocast():
    torch.manual_seed(0)
    bn = KerasBatchNorm(4).train()
    conv = torch.nn.Conv2d(3, 4, 1)
    x = torch.randn(8, 3, 6, 6) + 40.0  # a large mean: bf16 sums would be off by whole units
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = conv(x)
        y = bn(h)
    assert h.dtype == torch.bfloat16 and y.dtype == torch.float32
    h32 = h.float()
    mean = h32.mean((0, 2, 3))
    var = (h32 - mean.view(1, 4, 1, 1)).square().mean((0, 2, 3))
    assert torch.allclose(bn.moving_mean, 0.01 * mean, rtol=1e-5, atol=0)
    assert torch.allclose(bn.moving_var, 0.99 + 0.01 * var, rtol=1e-5, atol=0)
    expected = (h32 - mean.view(1, 4, 1, 1)) / torch.sqrt(var.view(1, 4, 1, 1) + 1e-3)
    assert torch.allclose(y, expected, rtol=0, atol=1e-4)
