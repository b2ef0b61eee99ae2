"""Page/Myrtle ResNet-9 (the paper's main model), with its max-pool head or the R9-AvgPool head
(``pool: avg``) and either norm. Its global pooling takes any input size (16x16 as well as 32x32)."""

from __future__ import annotations

import torch
from torch import nn

from initmem.engine.models import ConvBlock, Residual
from initmem.spec import POOLS


class ResNet9(nn.Module):
    """Page/Myrtle ResNet-9: prep w, [2w + pool + res], [4w + pool], [8w + pool + res], global pool, dense."""

    def __init__(self, width: int = 64, norm: str = "batchnorm", pool: str = "max", classes: int = 10):
        super().__init__()
        if pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; choose one of {POOLS}")
        w = width
        self.features = nn.Sequential(
            ConvBlock(3, w, norm),
            ConvBlock(w, 2 * w, norm, pool=True), Residual(2 * w, norm),
            ConvBlock(2 * w, 4 * w, norm, pool=True),
            ConvBlock(4 * w, 8 * w, norm, pool=True), Residual(8 * w, norm),
        )
        self.pool = pool
        self.dense = nn.Linear(8 * w, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x)
        h = h.amax((2, 3)) if self.pool == "max" else h.mean((2, 3))
        return self.dense(h)


def build(width: int, norm: str, pool: str, classes: int) -> nn.Module:
    """ResNet-9 of base width ``width`` (64 in the paper)."""
    return ResNet9(width, norm, pool, classes)
