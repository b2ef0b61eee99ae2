"""CIFAR ResNet-56 (He et al., 6n+2 with n = 9; Keras resnet_v1 layout), base width width // 4
(16 in the paper), global average pool: any input size whose side survives two stride-2 stages."""

from __future__ import annotations

from torch import nn

from initmem.engine.models import CifarResNet


def build(width: int, norm: str, pool: str, classes: int) -> nn.Module:
    """ResNet-56; pool is ResNet-9's head and does not apply (the CIFAR ResNets average)."""
    return CifarResNet(56, max(1, width // 4), norm, classes)
