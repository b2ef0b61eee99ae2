"""The engine's training speed against the same ResNet-9 written in plain PyTorch (``benchmarks/peer.py``),
on one CPU thread: width 16 and 64, batch 16 and 128, SGD and Adam, float32. The device check
measures the same ratio on a GPU (its peer rows).

Engine: ``train_run`` timed from outside as the difference of two trainings (``warm`` and ``warm +
steps`` steps). Peer: ``nn.BatchNorm2d``, ``torch.optim`` with ``foreach`` kernels, ``warm`` steps
then ``steps`` timed. A few steps each (the run takes 1-3 minutes), so single ratios move by
~10-20% between runs on a shared machine (``--tries 2`` keeps the better of two per cell).

usage: OMP_NUM_THREADS=1 PYTHONPATH=workflow python benchmarks/engine_vs_pytorch.py [--tries N] [--out FILE]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "workflow"))
sys.path.insert(0, str(HERE))

CELLS = [(w, b, o) for w in (16, 64) for b in (16, 128) for o in ("sgd", "adam")]


def steps_for(width: int, batch_size: int) -> int:
    """Timed steps of a cell: fewer where a step is long (width 64, b=128: seconds on one thread)."""
    return 2 if width * batch_size >= 64 * 128 else 3 if width * batch_size >= 64 * 16 else 6


def measure(tries: int = 1) -> list[dict]:
    """One row per cell: engine and peer images/s (best of ``tries``) and their ratio."""
    import torch
    from peer import engine_images_per_second, peer_images_per_second

    torch.set_num_threads(1)
    device = torch.device("cpu")
    rows = []
    for width, b, opt in CELLS:
        steps = steps_for(width, b)
        engine = max(engine_images_per_second("resnet9", width, b, opt, 1, steps, device, warm=1)[0] for _ in range(tries))
        peer = max(peer_images_per_second(width, b, opt, device, steps, warm=1) for _ in range(tries))
        rows.append({"width": width, "b": b, "optimizer": opt, "steps": steps, "engine": engine, "peer": peer})
        print(rows[-1], flush=True)
    return rows


def table(rows: list[dict], seconds: float, tries: int) -> str:
    """The markdown the benchmark commits."""
    import torch

    ratios = [r["engine"] / r["peer"] for r in rows]
    lines = ["# The engine against plain PyTorch (CPU, one thread)", "",
             f"`OMP_NUM_THREADS=1 PYTHONPATH=workflow python benchmarks/engine_vs_pytorch.py{f' --tries {tries}' if tries > 1 else ''}`: "
             f"{seconds:.0f} s (wall, on a machine shared with other jobs) on "
             f"{platform.processor() or platform.machine()}, torch {torch.__version__}, float32, ResNet-9, single runs.", "",
             "| width | batch | optimizer | steps timed | engine images/s | plain PyTorch images/s | engine / PyTorch |",
             "|---:|---:|---|---:|---:|---:|---:|"]
    for r, q in zip(rows, ratios, strict=True):
        lines.append(f"| {r['width']} | {r['b']} | {r['optimizer']} | {r['steps']} | {r['engine']:,.1f} | {r['peer']:,.1f} | {q:.2f} |")
    lines += ["", f"Ratio range {min(ratios):.2f}-{max(ratios):.2f}. The engine's step also keeps the Keras semantics "
              "(batch norm's moving statistics, the optimizers' update rules, the running loss and accuracy sums on the "
              "device); the peer is what a user would write. A few steps per cell on a shared machine: read ratios to ~±15%."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(HERE / "engine_vs_pytorch.md"))
    parser.add_argument("--tries", type=int, default=1, help="measurements per cell, the best kept (default 1)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = measure(args.tries)
    text = table(rows, time.perf_counter() - started, args.tries)
    from initmem.io import atomic_path

    with atomic_path(args.out) as tmp:
        tmp.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
