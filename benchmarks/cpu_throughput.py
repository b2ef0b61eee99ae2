"""CPU training throughput of one run (images/s) for ResNet-9 at a few widths and batch sizes.

usage: python benchmarks/cpu_throughput.py [--threads 1] [--steps 20]
Prints a Markdown table; the committed output is benchmarks/cpu_throughput.md.
"""

from __future__ import annotations

import argparse
import platform
import time

import torch
import torch.nn.functional as F

from initmem.engine.models import build_model, count_parameters, init_weights
from initmem.engine.optim import KerasOptimizer


def images_per_second(width: int, batch: int, optimizer: str, steps: int) -> float:
    """Training images/s of ResNet-9 (forward, backward, Keras optimizer step) on random data."""
    model = build_model("resnet9", width)
    init_weights(model, 1.0, torch.Generator().manual_seed(0))
    opt = KerasOptimizer(optimizer, list(model.parameters()))
    x, y = torch.rand(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
    model.train()
    for i in range(steps + 3):
        if i == 3:
            start = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        for p in model.parameters():
            p.grad = None
        loss.backward()
        opt.step(1e-3)
    return steps * batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# ResNet-9 CPU training throughput ({platform.machine()}, torch {torch.__version__}, {args.threads} thread(s))\n")
    print("| width | params | batch | optimizer | images/s |")
    print("|---:|---:|---:|---|---:|")
    for width in (8, 16, 32, 64):
        params = count_parameters(build_model("resnet9", width))
        for batch in (16, 128):
            for optimizer in ("sgd", "muon"):
                rate = images_per_second(width, batch, optimizer, args.steps if width < 64 else 5)
                print(f"| {width} | {params:,} | {batch} | {optimizer} | {rate:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
