"""Operations per training step: the non-view aten operations one step of the trainer dispatches,
counted on the CPU with a ``TorchDispatchMode`` (each is about one GPU kernel launch; views and
aliases launch nothing and are not counted). A b=16 ResNet-9 step on a GPU is bound by these
launches, not by arithmetic, so this count is what the engine's GPU speed at small batches follows.

Counted: one steady-state step (the third; optimizer state exists) of the trainer's own step
function (``initmem.engine.train.run_step`` for a single run, ``initmem.engine.packed.pack_step`` for a vmap
pack), with the loop's batch indexing, at the main grid's setting (no augmentation, no L2),
eager mode. The count does not depend on the width or the batch size; width 8 keeps it quick.
Per optimizer: one run, and a pack of 8 (the whole pack's step, not per member).

usage: PYTHONPATH=workflow python benchmarks/ops_per_step.py [--archs resnet9 resnet56] [--pack 8] [--batch 16]
On a checkout without ``run_step``/``pack_step`` (an older engine) the loops' bodies of that
checkout's train_run/train_packed are replayed inline, as they were written there.
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from initmem.engine.models import build_model, init_weights
from initmem.engine.optim import KerasOptimizer
from initmem.engine.packed import PackedModel

OPTIMIZERS = ("sgd", "sgd_momentum", "adam", "adamw", "muon", "muon_full")


class CountOps(TorchDispatchMode):
    """Counts non-view aten operations by name."""

    def __init__(self):
        super().__init__()
        self.ops: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view:
            self.ops[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def _single(arch: str, optimizer: str, batch: int):
    model = build_model(arch, 8).train()
    init_weights(model, 1.0, torch.Generator().manual_seed(0))
    opt = KerasOptimizer(optimizer, list(model.parameters()))
    x_all, y_all = torch.rand(4 * batch, 3, 32, 32), torch.randint(0, 10, (4 * batch,))
    perm = torch.randperm(4 * batch)
    sums = {"loss": torch.zeros((), dtype=torch.float64), "correct": torch.zeros((), dtype=torch.float64),
            "finite": torch.ones((), dtype=torch.bool)}
    try:
        from initmem.engine.train import run_step
    except ImportError:
        run_step = None

    def step(k: int) -> None:
        idx = perm[k * batch:(k + 1) * batch]
        x, y = x_all[idx], y_all[idx]
        if run_step is not None:
            run_step(model, model, opt, x, y, 1e-3, 0.0, sums)
            return
        logits = model(x)  # an older engine: the body of train_run's loop
        loss = F.cross_entropy(logits.float(), y) + 0.0
        sums["finite"] &= torch.isfinite(loss)
        for p in model.parameters():
            p.grad = None
        loss.backward()
        opt.step(1e-3)
        sums["loss"] += loss.detach().double() * len(y)
        sums["correct"] += (logits.argmax(1) == y).sum().double()
    return step


def _pack(arch: str, optimizer: str, batch: int, size: int):
    members = []
    for i in range(size):
        m = build_model(arch, 8)
        init_weights(m, 1.0, torch.Generator().manual_seed(i))
        members.append(m)
    model = PackedModel(members)
    model.train()
    opt = KerasOptimizer(optimizer, list(model.params.values()), stacked=True)
    x_all, y_all = torch.rand(4 * batch, 3, 32, 32), torch.randint(0, 10, (4 * batch,))
    perm = torch.stack([torch.randperm(4 * batch) for _ in range(size)])
    sums = {"loss": torch.zeros(size, dtype=torch.float64), "correct": torch.zeros(size, dtype=torch.float64),
            "finite": torch.ones(size, dtype=torch.bool)}
    try:
        from initmem.engine.packed import pack_step
    except ImportError:
        pack_step = None

    def step(k: int) -> None:
        idx = perm[:, k * batch:(k + 1) * batch]
        x, y = x_all[idx], y_all[idx]
        if pack_step is not None:
            pack_step(model, opt, x, y, 1e-3, 0.0, sums)
            return
        logits = model(x)  # an older engine: the body of train_packed's loop
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none").view(size, -1).mean(1)
        sums["finite"] &= torch.isfinite(loss)
        for p in opt.params:
            p.grad = None
        loss.sum().backward()
        opt.step(1e-3)
        sums["loss"] += loss.detach().double() * y.shape[1]
        sums["correct"] += (logits.argmax(-1) == y).sum(1).double()
    return step


def count(step) -> Counter:
    """Operations of the third step (the first two create optimizer state and warm caches)."""
    step(0)
    step(1)
    with CountOps() as counter:
        step(2)
    return counter.ops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archs", nargs="+", default=["resnet9", "resnet56"])
    ap.add_argument("--optimizers", nargs="+", default=list(OPTIMIZERS))
    ap.add_argument("--pack", type=int, default=8)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--top", type=int, default=0, help="also print the N most frequent operations of each count")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"| arch | optimizer | ops per step, one run | ops per step, pack of {args.pack} |")
    print("|---|---|---:|---:|")
    for arch in args.archs:
        for optimizer in args.optimizers:
            single = count(_single(arch, optimizer, args.batch))
            packed = count(_pack(arch, optimizer, args.batch, args.pack))
            print(f"| {arch} | {optimizer} | {sum(single.values())} | {sum(packed.values())} |", flush=True)
            if args.top:
                print("  one run:", dict(single.most_common(args.top)))
                print("  pack:", dict(packed.most_common(args.top)))


if __name__ == "__main__":
    main()
