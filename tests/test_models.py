import math

import pytest
import torch

from initmem.models import KerasBatchNorm, build_model, count_parameters, init_weights, kernel_layers, kernels


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
    from initmem.models import Conv

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
