"""Keras-semantics optimizers and the learning-rate schedule.

Each update follows Keras 3 exactly (the paper used Keras):
- decoupled weight decay first, on every trainable variable: p <- p - p * wd * eta_k;
- SGD: p <- p - eta g;  SGD momentum (Keras keeps eta inside the velocity): v <- mu v - eta g, p <- p + v;
- Adam/AdamW (eps-hat form): alpha = eta sqrt(1 - b2^t) / (1 - b1^t), m += (g - m)(1 - b1),
  v += (g^2 - v)(1 - b2), p <- p - alpha m / (sqrt(v) + eps), t = step + 1;
- Muon (Keras): 2-D kernels get m <- mu m + g, u = g + mu m (Nesterov), p <- p - eta NS5(u) * 0.2 sqrt(max(rows, cols));
  everything else (conv kernels, biases, norms) gets the AdamW step; decay ``weight_decay`` on the Muon
  branch and ``adam_weight_decay`` on the AdamW branch (the paper's 1e-4 goes on both).
  ``muon_full`` also orthogonalises conv kernels flattened to (out, in*kh*kw).

With ``stacked=True`` every tensor carries a leading pack axis (one slice per model of a vectorised
pack): the element-wise rules are unchanged and Newton-Schulz runs batched over the models.
"""

from __future__ import annotations

import math

import torch

from initmem.clocks import learning_rate, lr_schedule  # noqa: F401  (the schedule lives in the torch-free clocks module)
from initmem.spec import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, OPTIMIZERS, WEIGHT_DECAY_MODES, resolve_momentum, resolve_weight_decay

NS_COEFFS, NS_STEPS, MUON_RMS_RATE = (3.4445, -4.7750, 2.0315), 5, 0.2


def check_optimizer(name: str) -> None:
    """Raise a clear error for an optimizer name the library does not know."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {list(OPTIMIZERS)}")


def newton_schulz5(x: torch.Tensor, steps: int = NS_STEPS) -> torch.Tensor:
    """Keras' quintic Newton-Schulz orthogonalisation of the last two axes (batched over leading axes)."""
    a, b, c = NS_COEFFS
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = x.transpose(-2, -1)
    x = x / (torch.linalg.matrix_norm(x, keepdim=True) + 1e-7)
    for _ in range(steps):
        gram = x @ x.transpose(-2, -1)
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.transpose(-2, -1) if tall else x


class KerasOptimizer:
    """One of :data:`OPTIMIZERS` over ``params`` (null weight_decay/momentum: the optimizer's own).

    ``weight_decay_mode``: ``decoupled`` (Keras, the default) shrinks p by eta_k * wd * p before the
    update; ``coupled`` adds wd * p to the gradient instead (PyTorch's ``weight_decay``), so that
    momentum and Adam's moments carry it (SGD-momentum 0.9: ~10x the decoupled decay in steady state).
    """

    def __init__(self, name: str, params: list[torch.Tensor], weight_decay: float | None = None,
                 momentum: float | None = None, *, stacked: bool = False, weight_decay_mode: str = "decoupled"):
        check_optimizer(name)
        if weight_decay_mode not in WEIGHT_DECAY_MODES:
            raise ValueError(f"unknown weight_decay_mode {weight_decay_mode!r}; choose one of {list(WEIGHT_DECAY_MODES)}")
        self.weight_decay_mode = weight_decay_mode
        self.name = name
        self.params = list(params)
        self.stacked = stacked
        self.weight_decay = resolve_weight_decay(name, weight_decay)
        self.momentum = resolve_momentum(name, momentum)
        self.iterations = 0
        self.state: list[dict[str, torch.Tensor]] = [{} for _ in self.params]

    def uses_muon_step(self, p: torch.Tensor) -> bool:
        """Keras Muon orthogonalises 2-D variables only; ``muon_full`` also flattened 4-D conv kernels."""
        dim = p.dim() - self.stacked
        if self.name == "muon":
            return dim == 2
        return self.name == "muon_full" and dim in (2, 4)

    @torch.no_grad()
    def step(self, lr: float) -> None:
        """Apply one update with the scheduled rate ``lr`` (gradients in ``p.grad``)."""
        t = self.iterations + 1
        for p, state in zip(self.params, self.state, strict=True):
            g = p.grad
            if g is None:
                continue
            if self.weight_decay and self.weight_decay_mode == "coupled":
                g = g + p * self.weight_decay
            elif self.weight_decay:
                p.sub_(p * (self.weight_decay * lr))
            if self.name == "sgd":
                p.sub_(g * lr)
            elif self.name == "sgd_momentum":
                v = state.setdefault("velocity", torch.zeros_like(p))
                v.mul_(self.momentum).sub_(g * lr)
                p.add_(v)
            elif self.uses_muon_step(p):
                self._muon(p, g, state, lr)
            else:
                self._adam(p, g, state, lr, t)
        self.iterations += 1

    @staticmethod
    def _adam(p: torch.Tensor, g: torch.Tensor, state: dict, lr: float, t: int) -> None:
        m = state.setdefault("m", torch.zeros_like(p))
        v = state.setdefault("v", torch.zeros_like(p))
        alpha = lr * math.sqrt(1 - ADAM_BETA2**t) / (1 - ADAM_BETA1**t)
        m.add_((g - m) * (1 - ADAM_BETA1))
        v.add_((g.square() - v) * (1 - ADAM_BETA2))
        p.sub_((m * alpha) / (v.sqrt() + ADAM_EPS))

    def _muon(self, p: torch.Tensor, g: torch.Tensor, state: dict, lr: float) -> None:
        m = state.setdefault("m", torch.zeros_like(p))
        m.add_(g + m * (self.momentum - 1))
        lead = p.shape[:1 + self.stacked]  # (out,) or (models, out)
        u = (g + self.momentum * m).reshape(*lead, -1)
        update = newton_schulz5(u)
        scale = math.sqrt(max(update.shape[-2], update.shape[-1])) * MUON_RMS_RATE
        p.sub_((lr * update * scale).reshape(p.shape))

    def select(self, params: list[torch.Tensor], keep: torch.Tensor) -> None:
        """Stacked packs: continue with the models ``keep`` (indices), whose parameters are ``params``."""
        self.params = list(params)
        self.state = [{k: v[keep] for k, v in s.items()} for s in self.state]

    def state_dict(self) -> dict:
        """Optimizer state for checkpoints."""
        return {"iterations": self.iterations, "state": [{k: v.clone() for k, v in s.items()} for s in self.state]}

    def load_state_dict(self, sd: dict) -> None:
        """Restore :meth:`state_dict` output onto each parameter's device and floating dtype (a CPU
        checkpoint resumes on a GPU: the model is moved by its own load, the optimizer state here)."""
        if len(sd["state"]) != len(self.params):
            raise ValueError(f"optimizer checkpoint holds state for {len(sd['state'])} tensors, the model has {len(self.params)}; "
                             "it belongs to another model: delete the checkpoint to start over")
        self.iterations = int(sd["iterations"])
        self.state = [{k: v.to(device=p.device, dtype=p.dtype if v.is_floating_point() else v.dtype, copy=True) for k, v in s.items()}
                      for p, s in zip(self.params, sd["state"], strict=True)]
