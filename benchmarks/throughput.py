"""Training throughput of packs (baseline for issue 6): images/s per run and runs/hour for pack
sizes, plus the achieved TFLOP/s against a measured matmul peak on the same device.

Packs are currently trained as a loop over runs, so this is the *baseline* a vectorised pack must
beat. usage: python benchmarks/throughput.py [--device cpu|cuda] [--width 64] [--steps 20]
              [--packs 1 4] [--batches 16 128] [--epoch-images 40000] [--epochs 300]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from initmem.models import build_model, init_weights
from initmem.optim import KerasOptimizer


def matmul_peak_tflops(device: torch.device, dtype: torch.dtype, n: int = 4096, reps: int = 10) -> float:
    """Measured dense matmul rate (TFLOP/s) on ``device`` in ``dtype``."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(2):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e12


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_flops_per_image(width: int) -> float:
    """Forward + backward FLOPs of ResNet-9 for one 32x32 image (3x the forward multiply-adds x 2)."""
    w = width
    convs = [(3, w, 32), (w, 2 * w, 32), (2 * w, 2 * w, 16), (2 * w, 2 * w, 16), (2 * w, 4 * w, 16),
             (4 * w, 8 * w, 8), (8 * w, 8 * w, 4), (8 * w, 8 * w, 4)]
    macs = sum(cin * cout * 9 * size * size for cin, cout, size in convs) + 8 * w * 10
    return 3 * 2 * macs


def pack_images_per_second(pack: int, width: int, batch: int, steps: int, device: torch.device) -> float:
    """Training images/s of a pack of ``pack`` ResNet-9 runs trained one step each in turn (the loop pack)."""
    models = [build_model("resnet9", width).to(device) for _ in range(pack)]
    opts = []
    for i, m in enumerate(models):
        init_weights(m, 1.0, torch.Generator().manual_seed(i))
        m.to(device).train()
        opts.append(KerasOptimizer("sgd", list(m.parameters())))
    x = torch.rand(batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    for step in range(steps + 3):
        if step == 3:
            sync(device)
            start = time.perf_counter()
        for m, opt in zip(models, opts, strict=True):
            loss = F.cross_entropy(m(x), y)
            for p in m.parameters():
                p.grad = None
            loss.backward()
            opt.step(1e-3)
    sync(device)
    return steps * batch * pack / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--packs", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 128])
    parser.add_argument("--epoch-images", type=int, default=40_000)
    parser.add_argument("--epochs", type=int, default=300)
    args = parser.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    peak = matmul_peak_tflops(device, torch.float32, n=2048 if device.type == "cpu" else 8192)
    print(f"# Pack throughput, ResNet-9 width {args.width}, float32, {name} (loop packs: the issue-6 baseline)\n")
    print(f"Measured float32 matmul peak: {peak:.2f} TFLOP/s\n")
    print("| pack | batch | images/s per run | runs/hour (E epochs of N images) | TFLOP/s | % of matmul peak |")
    print("|---:|---:|---:|---:|---:|---:|")
    flops = train_flops_per_image(args.width)
    for batch in args.batches:
        for pack in args.packs:
            total = pack_images_per_second(pack, args.width, batch, args.steps, device)
            per_run = total / pack
            runs_per_hour = 3600 * total / (args.epochs * args.epoch_images)
            tflops = total * flops / 1e12
            print(f"| {pack} | {batch} | {per_run:,.0f} | {runs_per_hour:.3f} | {tflops:.3f} | {100 * tflops / peak:.1f} |", flush=True)


if __name__ == "__main__":
    main()
