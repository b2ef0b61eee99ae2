"""What a run sees: its prepared splits on the device, its own generators (init, data order,
augmentation, derived from its seed, never the global RNG), and each epoch's data order and
augmentation draws. Pure indexing: a run's batches are exact whatever pack it trains in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from initmem.engine.data import Splits


@dataclass
class Tensors:
    """The prepared splits as float tensors in [0, 1] on the training device (shared by a pack)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int = 10  # the data source's label count: the size of the model's last layer
    x_final: torch.Tensor | None = None  # the test split's first data.final_test images, where more than x_test (the job's)
    y_final: torch.Tensor | None = None

    @classmethod
    def from_splits(cls, s: Splits, device: torch.device, final: Splits | None = None) -> Tensors:
        """``s`` on ``device``; with ``final`` (a prepared file of the test split's first ``final_test``
        images) its test images as ``x_final``/``y_final``."""
        f = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float32) / 255.0).to(device)
        i = lambda a: torch.from_numpy(np.asarray(a, dtype=np.int64)).to(device)
        extra = {} if final is None else {"x_final": f(final.x_test), "y_final": i(final.y_test)}
        return cls(f(s.x_train), i(s.y_train), f(s.x_val), i(s.y_val), f(s.x_test), i(s.y_test), int(s.meta.get("classes", 10)), **extra)


def seed_streams(seed: int) -> tuple[torch.Generator, np.random.Generator, torch.Generator]:
    """Independent per-run generators for init, data order and augmentation (never the global RNG)."""
    init_seed, order_seed, aug_seed = np.random.SeedSequence(seed).generate_state(3, dtype=np.uint64)
    return (torch.Generator().manual_seed(int(init_seed)), np.random.default_rng(int(order_seed)),
            torch.Generator().manual_seed(int(aug_seed)))


def draw_augment(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch's augmentation draws from ``gen``: horizontal flips (n,) and crop offsets (n, 2)."""
    flip = torch.rand(n, generator=gen) < 0.5
    offsets = torch.randint(0, 9, (n, 2), generator=gen)
    return flip, offsets


def apply_augment(x: torch.Tensor, flip: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Flip, 4-px reflect pad and 32x32 crop at ``offsets``; leading axes of ``x`` (images or
    models x images) match those of ``flip`` and ``offsets[..., 0]``. Pure indexing: exact."""
    lead, (c, h, w) = x.shape[:-3], x.shape[-3:]
    x, flip, offsets = x.reshape(-1, c, h, w), flip.reshape(-1).to(x.device), offsets.reshape(-1, 2).to(x.device)
    n = len(x)
    x = torch.where(flip.view(n, 1, 1, 1), x.flip(3), x)
    padded = F.pad(x, (4, 4, 4, 4), mode="reflect")
    rows = offsets[:, 0:1] + torch.arange(h, device=x.device)
    cols = offsets[:, 1:2] + torch.arange(w, device=x.device)
    idx_n = torch.arange(n, device=x.device).view(n, 1, 1, 1)
    idx_c = torch.arange(c, device=x.device).view(1, -1, 1, 1)
    return padded[idx_n, idx_c, rows.view(n, 1, h, 1), cols.view(n, 1, 1, w)].reshape(*lead, c, h, w)


def augment_batch(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random horizontal flip + 4-px reflect pad + random 32x32 crop, drawn from ``gen``."""
    return apply_augment(x, *draw_augment(len(x), gen))


def draw_epoch_augment(gen: torch.Generator, n: int, b: int, first_step: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The augmentation draws of an epoch's batches ``first_step``.. (flips (m,), offsets (m, 2) for
    the m images they hold), made batch by batch: the same numbers as drawing at every step."""
    batches = [draw_augment(min(b, n - i), gen) for i in range(first_step * b, n, b)]
    return torch.cat([f for f, _ in batches]), torch.cat([o for _, o in batches])


def draw_epoch(rngs: list[np.random.Generator], gens: list[torch.Generator], active: list[int], n: int, b: int,
               augment: bool, device: torch.device) -> dict[str, torch.Tensor]:
    """One epoch of data order (and augmentation) per member, a row each: a permutation per epoch,
    then flips and offsets batch by batch, as a run alone draws them. Only members still training
    draw; a masked member's row repeats the first active member's draws."""
    rows = [active.index(i) if i in active else 0 for i in range(len(rngs))]
    perms = np.stack([rngs[i].permutation(n) for i in active])[rows]
    draws = {"perm": torch.from_numpy(perms).to(device)}
    if augment:
        flips, offsets = zip(*(draw_epoch_augment(gens[i], n, b) for i in active), strict=True)
        draws.update(flip=torch.stack(flips)[rows].to(device), offsets=torch.stack(offsets)[rows].to(device))
    return draws


def batch_of(data: Tensors, draws: dict[str, torch.Tensor], batch: slice) -> tuple[torch.Tensor, torch.Tensor]:
    """The training batch ``batch`` of every member (images (members, b, C, H, W), labels (members, b)), augmented if drawn."""
    idx = draws["perm"][:, batch]
    x, y = data.x_train[idx], data.y_train[idx]
    if "flip" in draws:
        x = apply_augment(x, draws["flip"][:, batch], draws["offsets"][:, batch])
    return x, y
