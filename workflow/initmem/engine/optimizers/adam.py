"""Keras Adam in its eps-hat form: alpha = eta sqrt(1 - b2^t) / (1 - b1^t), m += (g - m)(1 - b1),
v += (g^2 - v)(1 - b2), p <- p - alpha m / (sqrt(v) + eps), t = step + 1 (b1 .9, b2 .999, eps 1e-7)."""

from __future__ import annotations

import torch

from initmem.spec import ADAM_BETA1, ADAM_BETA2, ADAM_EPS

CLOCK = "T_adapt"
SLOTS = {"m": "all", "v": "elementwise"}


def adam_step(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, lr: float | torch.Tensor, t: torch.Tensor) -> None:
    """One Adam step on matching flat slices (also Muon's AdamW branch)."""
    alpha = lr * torch.sqrt(1 - ADAM_BETA2**t) / (1 - ADAM_BETA1**t)  # float64, rounded to p's dtype where it meets m
    m.add_((g - m) * (1 - ADAM_BETA1))
    v.add_((g.square() - v) * (1 - ADAM_BETA2))
    p.sub_((m * alpha) / (v.sqrt() + ADAM_EPS))


def update(opt, p, g, lr, t) -> None:
    """The Adam step on every element."""
    adam_step(p, g, opt.slots["m"], opt.slots["v"], lr, t)
