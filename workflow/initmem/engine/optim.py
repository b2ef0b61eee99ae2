"""Keras-semantics optimizers: the shared core of every optimizer in :mod:`initmem.engine.optimizers`.

Each optimizer's own rule lives in its file there (one file per optimizer, found by name); this core
holds what they share, exactly as Keras 3 applies it (the paper used Keras):
- decoupled weight decay first, on every trainable variable: p <- p - p * wd * eta_k (or, with
  ``weight_decay_mode: coupled``, g <- g + wd p);
- the flat buffers: the parameters, the gradients and every state slot as one buffer each, so an
  element-wise rule is one operation over all tensors of a run or pack;
- masking (packs whose members stop early) and the optimizer state of checkpoints.

With ``stacked=True`` every tensor carries a leading pack axis (one slice per model of a vectorised
pack): the element-wise rules are unchanged and Muon's Newton-Schulz runs batched over the models.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch

from initmem.engine.clocks import learning_rate, lr_schedule  # noqa: F401  (the schedule lives in the torch-free clocks module)
from initmem.engine.registry import load_entry
from initmem.spec import WEIGHT_DECAY_MODES, entry_names, resolve_momentum, resolve_weight_decay

# Names of one optimizer's rule, importable from here as before (read from its file on first use)
_FROM_ENTRIES = {"newton_schulz5": "muon", "NS_COEFFS": "muon", "NS_STEPS": "muon", "MUON_RMS_RATE": "muon"}


def __getattr__(name: str) -> Any:
    if name in _FROM_ENTRIES:
        return getattr(load_entry("optimizer", _FROM_ENTRIES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_optimizer(name: str) -> None:
    """Raise a clear error for an optimizer name the library does not know."""
    if name not in entry_names("optimizer"):
        raise ValueError(f"unknown optimizer {name!r}; choose one of {list(entry_names('optimizer'))}")


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
    """The optimizer ``name`` (a file of :mod:`initmem.engine.optimizers`) over ``params`` (null
    weight_decay/momentum: the optimizer's own).

    ``weight_decay_mode``: ``decoupled`` (Keras, the default) shrinks p by eta_k * wd * p before the
    update; ``coupled`` adds wd * p to the gradient instead (PyTorch's ``weight_decay``), so that
    momentum and Adam's moments carry it (SGD-momentum 0.9: ~10x the decoupled decay in steady state).

    The parameters live in one flat buffer (:func:`flatten_`; the element-wise part first, then the
    tensors the rule orthogonalises), as do the gradients (one concatenation) and every state slot, so each
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
        self.rule: ModuleType = load_entry("optimizer", name)
        self._orthogonal_ranks = tuple(getattr(self.rule, "ORTHOGONALISES", ()))
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
        # slot name -> (buffer, first element it covers): "all" elements, or the "elementwise" ones
        # (those not orthogonalised, the first ``split``)
        sizes = {"all": start, "elementwise": self._split}
        self._slots = {slot: (torch.zeros(sizes[span], dtype=self.flat.dtype, device=self.flat.device), 0)
                       for slot, span in self.rule.SLOTS.items()}
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
        """Whether ``p`` gets the optimizer's matrix step: Keras Muon orthogonalises 2-D variables only;
        ``muon_full`` also flattened 4-D conv kernels (the rule's ``ORTHOGONALISES``)."""
        return p.dim() - self.stacked in self._orthogonal_ranks

    @property
    def split(self) -> int:
        """The number of elements (the first ones of every buffer) that are not orthogonalised."""
        return self._split

    @property
    def slots(self) -> dict[str, torch.Tensor]:
        """Each state slot as its flat buffer (what a rule's ``update`` reads and writes)."""
        return {name: buf for name, (buf, _) in self._slots.items()}

    def orthogonalised(self, *flat: torch.Tensor) -> Iterator[tuple[torch.Tensor, ...]]:
        """For each tensor that gets the matrix step, its slice of each buffer in ``flat``, in its shape."""
        for q in self._muon_params:
            lo, hi = self._offsets[id(q)]
            yield tuple(_shaped_like(buf[lo:hi], q) for buf in flat)

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
        self.rule.update(self, p, g, lr, t)
        if saved is not None:  # masked models: back to what they were
            for buf, old in zip(buffers, saved, strict=True):
                keep = self._keep if len(buf) == len(self._keep) else self._keep[:len(buf)]
                buf.copy_(torch.where(keep, buf, old))

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
