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

from initmem.engine.clocks import learning_rate, lr_schedule  # noqa: F401  (the schedule lives in the torch-free clocks module)
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
    mm_add = torch.addmm if x.dim() == 2 else torch.baddbmm  # beta * C + alpha * (A @ B): one kernel each
    for _ in range(steps):
        gram = x @ x.transpose(-2, -1)
        x = mm_add(x, mm_add(gram, gram, gram, beta=b, alpha=c), x, beta=a)  # a x + (b gram + c gram^2) x
    return x.transpose(-2, -1) if tall else x


def _layout(t: torch.Tensor) -> list[int]:
    """Axes of ``t`` from the slowest to the fastest in memory (its layout, e.g. channels_last)."""
    return sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))


def flat_view(t: torch.Tensor, like: torch.Tensor | None = None) -> torch.Tensor:
    """``t``'s elements in the memory order of ``like`` (default ``t``), as one axis (a view when they match)."""
    return t.permute(_layout(t if like is None else like)).reshape(-1)


def _shaped_like(chunk: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``chunk`` (flat, in ``t``'s memory order) viewed with ``t``'s shape and layout."""
    order = _layout(t)
    return chunk.view([t.shape[d] for d in order]).permute([order.index(d) for d in range(t.dim())])


def flatten_(tensors: list[torch.Tensor]) -> torch.Tensor:
    """One contiguous buffer holding ``tensors`` one after another; each tensor is repointed (``.data``)
    to its slice of it, keeping its shape and memory layout, so element-wise updates of the buffer
    update every tensor in one operation."""
    flat = torch.cat([flat_view(t.detach()) for t in tensors]) if tensors else torch.zeros(0)
    start = 0
    for t in tensors:
        t.data = _shaped_like(flat[start:start + t.numel()], t)
        start += t.numel()
    return flat


def expand_rows(keep: torch.Tensor, tensors: list[torch.Tensor]) -> torch.Tensor:
    """Stacked tensors laid out as :func:`flatten_` lays them out (the model axis slowest): the per-model
    flags ``keep`` (models,) as one flag per element of that buffer."""
    return torch.cat([keep.repeat_interleave(t[0].numel()) for t in tensors])


def mask_rows(current: torch.Tensor | None, keep: torch.Tensor | None, tensors: list[torch.Tensor],
               always: bool) -> torch.Tensor | None:
    """The element flags of :func:`expand_rows` for ``keep`` (None: every model), or None when every
    model trains and ``always`` is off; with ``always`` an existing mask is overwritten in place."""
    if not tensors or (not always and (keep is None or bool(keep.all()))):
        return None
    device = tensors[0].device
    if keep is None:
        keep = torch.ones(tensors[0].shape[0], dtype=torch.bool, device=device)
    rows = expand_rows(keep.to(device), tensors)
    if current is not None and current.shape == rows.shape:
        return current.copy_(rows)
    return rows


class KerasOptimizer:
    """One of :data:`OPTIMIZERS` over ``params`` (null weight_decay/momentum: the optimizer's own).

    ``weight_decay_mode``: ``decoupled`` (Keras, the default) shrinks p by eta_k * wd * p before the
    update; ``coupled`` adds wd * p to the gradient instead (PyTorch's ``weight_decay``), so that
    momentum and Adam's moments carry it (SGD-momentum 0.9: ~10x the decoupled decay in steady state).

    The parameters live in one flat buffer (:func:`flatten_`; the AdamW branch first, then the tensors
    Muon orthogonalises), as do the gradients (one concatenation) and every state slot, so each
    element-wise rule above is one operation over all tensors of a run or pack: the same arithmetic,
    element by element, as a loop over the tensors, with a handful of kernels per step instead of
    several per tensor. ``state`` shows the slots per tensor (views) as before.
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
        muon = [self.uses_muon_step(p) for p in self.params]
        self._order = [p for p, m in zip(self.params, muon, strict=True) if not m] + [p for p, m in zip(self.params, muon, strict=True) if m]
        self._muon_params = [p for p, m in zip(self.params, muon, strict=True) if m]
        self.flat = flatten_(self._order)
        self._split = sum(p.numel() for p in self._order) - sum(p.numel() for p in self._muon_params)  # first Muon element
        self._offsets = {}
        start = 0
        for p in self._order:
            self._offsets[id(p)] = (start, start + p.numel())
            start += p.numel()
        # slot name -> (buffer, first element it covers): velocity / m over all tensors, v over the AdamW branch
        zeros = lambda n: torch.zeros(n, dtype=self.flat.dtype, device=self.flat.device)  # noqa: E731
        if name == "sgd_momentum":
            self._slots = {"velocity": (zeros(start), 0)}
        elif name in ("adam", "adamw", "muon", "muon_full"):
            self._slots = {"m": (zeros(start), 0), "v": (zeros(self._split), 0)}
        else:
            self._slots = {}
        self._keep: torch.Tensor | None = None
        # the step count t on the device (float64, as Keras' bias corrections in Python floats): a compiled
        # step reads and advances it in the graph instead of specialising on a Python int every step
        self.step_count = torch.zeros((), dtype=torch.float64, device=self.flat.device)

    def buffers(self) -> list[torch.Tensor]:
        """Every tensor a step updates in place: the flat parameters, the slots, the step count and the mask."""
        return [self.flat, *(buf for buf, _ in self._slots.values()), self.step_count] + ([self._keep] if self._keep is not None else [])

    @property
    def iterations(self) -> int:
        """Updates applied so far (a host read of :attr:`step_count`)."""
        return int(self.step_count.item())

    def uses_muon_step(self, p: torch.Tensor) -> bool:
        """Keras Muon orthogonalises 2-D variables only; ``muon_full`` also flattened 4-D conv kernels."""
        dim = p.dim() - self.stacked
        if self.name == "muon":
            return dim == 2
        return self.name == "muon_full" and dim in (2, 4)

    def _slot(self, name: str, p: torch.Tensor) -> torch.Tensor | None:
        """The slot ``name`` of ``p`` (a view of the slot's buffer), or None if ``p`` has none."""
        buf, first = self._slots[name]
        a, b = self._offsets[id(p)]
        if a < first or b - first > len(buf):
            return None
        return _shaped_like(buf[a - first:b - first], p)

    @property
    def state(self) -> list[dict[str, torch.Tensor]]:
        """Per parameter, its optimizer slots (views of the flat buffers)."""
        return [{k: v for k in self._slots if (v := self._slot(k, p)) is not None} for p in self.params]

    def set_active(self, keep: torch.Tensor | None, always: bool = False) -> None:
        """Stacked packs: update only the models whose flag in ``keep`` (models,) is set (None: all).
        The others keep their parameters and optimizer state as they are (masked, not removed, so
        every tensor keeps its shape and compiled graphs stay valid). ``always``: apply the mask even
        when every model trains (a compiled step then sees the same graph before and after a member
        stops; the mask is updated in place)."""
        self._keep = mask_rows(self._keep, keep, self._order, always)

    @torch.no_grad()
    def step(self, lr: float | torch.Tensor) -> None:
        """Apply one update with the scheduled rate ``lr`` (a float, or a 0-d float64 tensor on the
        parameters' device, as a compiled step takes it; gradients in ``p.grad``; a missing one counts as zero)."""
        t = self.step_count.add_(1)
        g = torch.cat([flat_view(p.grad, p) if p.grad is not None else torch.zeros(p.numel(), dtype=p.dtype, device=p.device)
                       for p in self._order])
        p = self.flat
        buffers = [p] + [buf for buf, _ in self._slots.values()]
        saved = [buf.clone() for buf in buffers] if self._keep is not None else None
        if self.weight_decay and self.weight_decay_mode == "coupled":
            g = g + p * self.weight_decay
        elif self.weight_decay:
            p.sub_(p * (self.weight_decay * lr))
        if self.name == "sgd":
            p.sub_(g * lr)
        elif self.name == "sgd_momentum":
            v = self._slots["velocity"][0]
            v.mul_(self.momentum).sub_(g * lr)
            p.add_(v)
        else:
            a = self._split
            m, v = self._slots["m"][0], self._slots["v"][0]
            if a:
                self._adam(p[:a], g[:a], m[:a], v, lr, t)
            for q in self._muon_params:
                lo, hi = self._offsets[id(q)]
                self._muon(*(_shaped_like(buf[lo:hi], q) for buf in (p, g, m)), lr)
        if saved is not None:  # masked models: back to what they were
            for buf, old in zip(buffers, saved, strict=True):
                keep = self._keep if len(buf) == len(self._keep) else self._keep[:len(buf)]
                buf.copy_(torch.where(keep, buf, old))

    @staticmethod
    def _adam(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, lr: float | torch.Tensor, t: torch.Tensor) -> None:
        alpha = lr * torch.sqrt(1 - ADAM_BETA2**t) / (1 - ADAM_BETA1**t)  # float64, rounded to p's dtype where it meets m
        m.add_((g - m) * (1 - ADAM_BETA1))
        v.add_((g.square() - v) * (1 - ADAM_BETA2))
        p.sub_((m * alpha) / (v.sqrt() + ADAM_EPS))

    def _muon(self, p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, lr: float | torch.Tensor) -> None:
        m.add_(g + m * (self.momentum - 1))
        lead = p.shape[:1 + self.stacked]  # (out,) or (models, out)
        u = (g + self.momentum * m).reshape(*lead, -1)
        update = newton_schulz5(u)
        scale = math.sqrt(max(update.shape[-2], update.shape[-1])) * MUON_RMS_RATE
        p.sub_((lr * update * scale).reshape(p.shape))

    def state_dict(self) -> dict:
        """Optimizer state for checkpoints: per parameter, its slots."""
        return {"iterations": self.iterations, "state": [{k: v.clone() for k, v in s.items()} for s in self.state]}

    def load_state_dict(self, sd: dict) -> None:
        """Restore :meth:`state_dict` output into the flat buffers, i.e. onto each parameter's device and
        floating dtype (a CPU checkpoint resumes on a GPU: the model is moved by its own load, the optimizer state here)."""
        if len(sd["state"]) != len(self.params):
            raise ValueError(f"optimizer checkpoint holds state for {len(sd['state'])} tensors, the model has {len(self.params)}; "
                             "it belongs to another model: delete the checkpoint to start over")
        mine = self.state
        for p, have, saved in zip(self.params, mine, sd["state"], strict=True):
            if set(have) != set(saved):
                raise ValueError(f"optimizer checkpoint has slots {sorted(saved)} for a tensor of shape {tuple(p.shape)}, "
                                 f"{self.name} keeps {sorted(have)}: it belongs to another optimizer")
            for k, v in saved.items():
                have[k].copy_(v)
        self.step_count.fill_(int(sd["iterations"]))
