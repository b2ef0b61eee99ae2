"""The shared core of the architectures (one file each in :mod:`initmem.engine.architectures`):
Keras layer semantics, the shared blocks, the sigma_w initialisation and the kernel norm.

- ``KerasBatchNorm``: momentum 0.99 (moving = 0.99 moving + 0.01 batch), eps 1e-3, and the *biased*
  batch variance for both normalisation and the moving average (PyTorch's BatchNorm uses the
  unbiased variance for its running estimate, so the native kernel normalises and the moving
  statistics are updated here). Under bf16 autocast it computes in float32.
- ``KerasLayerNorm``: Keras ``LayerNormalization()`` default, i.e. over the channel axis at each
  pixel, eps 1e-3.
- ``Conv``: Keras ``padding='same'``: symmetric inside the convolution for stride 1; for stride 2 the
  extra padding goes bottom/right only (an explicit pad).
- Every conv keeps its bias, as a Keras Conv2D does by default.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from initmem.engine.registry import load_entry
from initmem.spec import NORMS

# Names of one architecture's file, importable from here as before (read from its file on first use)
_FROM_ENTRIES = {"ResNet9": "resnet9"}


def __getattr__(name: str):
    if name in _FROM_ENTRIES:
        return getattr(load_entry("arch", _FROM_ENTRIES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

BIAS_STD = 0.2


class KerasBatchNorm(nn.Module):
    """BatchNormalization as Keras computes it (see module docstring)."""

    def __init__(self, channels: int, momentum: float = 0.99, eps: float = 1e-3):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.register_buffer("moving_mean", torch.zeros(channels))
        self.register_buffer("moving_var", torch.ones(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != self.weight.dtype:  # bf16 autocast: statistics, normalisation and output in float32
            x = x.to(self.weight.dtype)
        if not self.training:
            return F.batch_norm(x, self.moving_mean, self.moving_var, self.weight, self.bias, False, 0.0, self.eps)
        # The native kernel normalises with the biased batch variance (one kernel forward, one backward);
        # it returns the batch mean and 1/sqrt(var + eps), from which the Keras moving statistics follow.
        y, mean, invstd = torch.native_batch_norm(x, self.weight, self.bias, None, None, True, 0.0, self.eps)
        with torch.no_grad():
            m = self.momentum  # Keras: moving = momentum moving + (1 - momentum) batch (lerp_ has no vmap rule)
            self.moving_mean.mul_(m).add_(mean, alpha=1 - m)
            self.moving_var.mul_(m).add_(invstd.pow(-2) - self.eps, alpha=1 - m)
        return y


def batch_norms(model: nn.Module) -> list[KerasBatchNorm]:
    """The model's BatchNorm layers, in registration order."""
    return [m for m in model.modules() if isinstance(m, KerasBatchNorm)]


@contextlib.contextmanager
def precise_statistics(norms: list[KerasBatchNorm], buffers: list[torch.Tensor], forward: Callable[[torch.Tensor], object],
                       x: torch.Tensor, batch: int) -> Iterator[None]:
    """Within the block, the moving statistics of ``norms`` are the image-weighted means of their batch
    statistics over ``x`` in order, in batches of ``batch`` (precise BatchNorm, Wu & Johnson 2021);
    ``buffers`` (the tensors holding those statistics) are restored afterwards, so training goes on from
    Keras' own moving statistics.

    ``forward`` runs the model in training mode on a batch; with each layer's momentum set to
    1 - (images in this batch) / (images so far), its Keras update makes the moving statistics the running
    mean of the batch statistics (the first batch's replace the stale start outright). The batch is the
    training one, so the averaged variance is the biased batch variance training normalises with."""
    saved = [b.clone() for b in buffers]
    momenta = [m.momentum for m in norms]
    try:
        seen = 0
        with torch.no_grad():
            for i in range(0, len(x), batch):
                chunk = x[i:i + batch]
                seen += len(chunk)
                for m in norms:
                    m.momentum = 1 - len(chunk) / seen
                forward(chunk)
        for m, momentum in zip(norms, momenta, strict=True):  # within the block the layers are Keras' own again
            m.momentum = momentum
        yield
    finally:
        for m, momentum in zip(norms, momenta, strict=True):
            m.momentum = momentum
        with torch.no_grad():
            for b, s in zip(buffers, saved, strict=True):
                b.copy_(s)


class KerasLayerNorm(nn.Module):
    """Keras LayerNormalization(axis=-1): normalise over channels at every position, eps 1e-3."""

    def __init__(self, channels: int, eps: float = 1e-3):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(1, keepdim=True)
        var = (x - mean).square().mean(1, keepdim=True)
        shape = (1, -1, 1, 1)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight.view(shape) + self.bias.view(shape)


class Conv(nn.Conv2d):
    """Conv2D with a bias and Keras 'same' padding (stride 2: pad bottom/right only)."""

    def __init__(self, c_in: int, c_out: int, kernel: int = 3, stride: int = 1):
        super().__init__(c_in, c_out, kernel, stride=stride, padding=0, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, s = self.kernel_size[0], self.stride[0]
        if s == 1 and k % 2:  # symmetric: the padding goes inside the convolution (no separate pad kernel)
            return F.conv2d(x, self.weight, self.bias, 1, k // 2)
        size = x.shape[-1]
        total = max((math.ceil(size / s) - 1) * s + k - size, 0)
        before = total // 2
        if total:
            x = F.pad(x, (before, total - before, before, total - before))
        return F.conv2d(x, self.weight, self.bias, self.stride)


def make_norm(norm: str, channels: int) -> nn.Module:
    """The normalisation layer named in the spec."""
    if norm == "batchnorm":
        return KerasBatchNorm(channels)
    if norm == "layernorm":
        return KerasLayerNorm(channels)
    raise ValueError(f"unknown norm {norm!r}; choose one of {NORMS}")


class ConvBlock(nn.Sequential):
    """conv -> norm -> ReLU (-> 2x2 max pool)."""

    def __init__(self, c_in: int, c_out: int, norm: str, pool: bool = False):
        layers: list[nn.Module] = [Conv(c_in, c_out), make_norm(norm, c_out), nn.ReLU()]
        if pool:
            layers.append(nn.MaxPool2d(2))
        super().__init__(*layers)


class Residual(nn.Module):
    """x + f(x) with f two conv blocks (the Page/Myrtle ResNet-9 residual)."""

    def __init__(self, channels: int, norm: str):
        super().__init__()
        self.body = nn.Sequential(ConvBlock(channels, channels, norm), ConvBlock(channels, channels, norm))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class BasicBlock(nn.Module):
    """Keras resnet_v1 block: conv-norm-relu, conv-norm, 1x1 stride-2 projection when shapes change, relu."""

    def __init__(self, c_in: int, c_out: int, stride: int, norm: str):
        super().__init__()
        self.conv1, self.norm1 = Conv(c_in, c_out, 3, stride), make_norm(norm, c_out)
        self.conv2, self.norm2 = Conv(c_out, c_out), make_norm(norm, c_out)
        self.project = Conv(c_in, c_out, 1, stride) if (stride != 1 or c_in != c_out) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm2(self.conv2(F.relu(self.norm1(self.conv1(x)))))
        shortcut = self.project(x) if self.project is not None else x
        return F.relu(shortcut + y)


class CifarResNet(nn.Module):
    """CIFAR ResNet-(6n+2) (He et al.; Keras resnet_v1 layout), global average pool, dense."""

    def __init__(self, depth: int, base: int = 16, norm: str = "batchnorm", classes: int = 10):
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
        n = (depth - 2) // 6
        self.stem = nn.Sequential(Conv(3, base), make_norm(norm, base), nn.ReLU())
        blocks, c_in = [], base
        for stage, c_out in enumerate((base, 2 * base, 4 * base)):
            for i in range(n):
                stride = 2 if (stage > 0 and i == 0) else 1
                blocks.append(BasicBlock(c_in, c_out, stride, norm))
                c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.dense = nn.Linear(c_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense(self.blocks(self.stem(x)).mean((2, 3)))


def build_model(arch: str, width: int = 64, norm: str = "batchnorm", pool: str = "max", classes: int = 10) -> nn.Module:
    """Model named by the spec (a file of :mod:`initmem.engine.architectures`). ``width`` is the
    ResNet-9 base width (64 in the paper); the CIFAR ResNets use ``width // 4`` base channels (16 in
    the paper), so one key scales every architecture. ``classes``: the data source's label count."""
    return load_entry("arch", arch).build(width, norm, pool, classes)


def kernel_layers(model: nn.Module) -> list[nn.Module]:
    """Conv and dense layers in a fixed order (module registration order)."""
    return [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def kernels(model: nn.Module) -> list[torch.Tensor]:
    """Every conv and dense kernel (the tensors that get sigma_w init, L2, and the kernel norm)."""
    return [m.weight for m in kernel_layers(model)]


@torch.no_grad()
def init_weights(model: nn.Module, sigma_w: float, generator: torch.Generator) -> None:
    """Kernels W = (sigma_w / sqrt(fan_in)) * Z, biases 0.2 * Z', Z, Z' standard normal from ``generator``.

    The draws do not depend on sigma_w, so for one seed sigma_w is the only difference between runs
    (kernels at sigma_w = 2 are exactly twice those at sigma_w = 1). Norm layers: gamma 1, beta 0.
    """
    for layer in kernel_layers(model):
        w = layer.weight
        fan_in = w[0].numel()  # in_channels * kh * kw, or in_features
        z = torch.randn(w.shape, generator=generator, dtype=w.dtype)
        w.copy_(z * (sigma_w / math.sqrt(fan_in)))
        if layer.bias is not None:
            layer.bias.copy_(torch.randn(layer.bias.shape, generator=generator, dtype=w.dtype) * BIAS_STD)
    for m in model.modules():
        if isinstance(m, (KerasBatchNorm, KerasLayerNorm)):
            m.weight.fill_(1.0)
            m.bias.fill_(0.0)


def kernel_norm(model: nn.Module) -> float:
    """Frobenius norm of all conv and dense kernels together."""
    with torch.no_grad():
        return float(torch.sqrt(sum(w.double().square().sum() for w in kernels(model))))


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

