"""Keras Muon: 2-D kernels get m <- mu m + g, u = g + mu m (Nesterov), p <- p - eta NS5(u) * 0.2
sqrt(max(rows, cols)); everything else (conv kernels, biases, norms) gets the AdamW step. Keras has
two decays, ``weight_decay`` (Muon branch) and ``adam_weight_decay`` (AdamW branch), both 0.004 by
default: the paper's 1e-4 goes on both (one decoupled decay over every variable)."""

from __future__ import annotations

import math

import torch

from initmem.engine.optimizers.adam import adam_step

WEIGHT_DECAY = 1e-4
MOMENTUM = 0.95
CLOCK = "T_adapt"
SLOTS = {"m": "all", "v": "elementwise"}
ORTHOGONALISES = (2,)
NS_COEFFS, NS_STEPS, MUON_RMS_RATE = (3.4445, -4.7750, 2.0315), 5, 0.2


def newton_schulz5(x: torch.Tensor, steps: int = NS_STEPS) -> torch.Tensor:
    """Keras' quintic Newton-Schulz orthogonalisation of the last two axes (batched over leading axes)."""
    a, b, c = NS_COEFFS
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = x.transpose(-2, -1)
    x = x / (torch.linalg.matrix_norm(x, keepdim=True) + 1e-7)
    mm_add = torch.addmm if x.dim() == 2 else torch.baddbmm  # beta * C + alpha * (A @ B): one kernel each
    for _ in range(steps):
        gram = x @ x.transpose(-2, -1)
        x = mm_add(x, mm_add(gram, gram, gram, beta=b, alpha=c), x, beta=a)  # a x + (b gram + c gram^2) x
    return x.transpose(-2, -1) if tall else x


def muon_step(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, momentum: float, lr: float | torch.Tensor, stacked: bool) -> None:
    """The Muon step of one tensor (its own shape; with ``stacked`` a leading pack axis)."""
    m.add_(g + m * (momentum - 1))
    lead = p.shape[:1 + stacked]  # (out,) or (models, out)
    u = (g + momentum * m).reshape(*lead, -1)
    step = newton_schulz5(u)
    scale = math.sqrt(max(step.shape[-2], step.shape[-1])) * MUON_RMS_RATE
    p.sub_((lr * step * scale).reshape(p.shape))


def update(opt, p, g, lr, t) -> None:
    """AdamW on the elementwise part, Muon on each orthogonalised tensor."""
    a, m = opt.split, opt.slots["m"]
    if a:
        adam_step(p[:a], g[:a], m[:a], opt.slots["v"], lr, t)
    for q, g_q, m_q in opt.orthogonalised(p, g, m):
        muon_step(q, g_q, m_q, opt.momentum, lr, opt.stacked)
