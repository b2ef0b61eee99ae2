"""The engine's training speed against the same ResNet-9 written in plain PyTorch (``benchmarks/peer.py``),
on one CPU thread: width 16 and 64, batch 16 and 128, SGD and Adam, float32. The device check
measures the same ratio on a GPU (its peer rows).

Engine: ``train_run`` timed from outside as the difference of two trainings (``warm`` and ``warm +
steps`` steps) after one untimed training of the same shape (first-use costs: allocations, oneDNN
primitives), so the loop's own work (batch drawing, the schedule, stop checks) counts; and its step
alone (``SingleRun.step``) in process. Peer: ``nn.BatchNorm2d``, ``torch.optim`` with ``foreach``
kernels, ``warm`` steps then ``steps`` timed. Each cell times ~3 s of steps (more for the short
steps), ``--tries`` times alternating engine and peer.

Each measurement runs in its own process, with glibc's allocator defaults (what a user's script
gets) or with the host memory kept as the training jobs keep it
(``initmem.engine.allocator.keep_freed_host_memory``), ``--rounds`` processes of each, alternating;
a cell's rate is the best of all its measurements (a process's speed varies by a few percent).

usage: OMP_NUM_THREADS=1 PYTHONPATH=workflow python benchmarks/engine_vs_pytorch.py [--rounds N] [--tries N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "workflow"))
sys.path.insert(0, str(HERE))

CELLS = [(w, b, o) for w in (16, 64) for b in (16, 128) for o in ("sgd", "adam")]
ALLOCATORS = ("glibc", "kept")  # the process's defaults; the training jobs' setting


def steps_for(width: int, batch_size: int) -> int:
    """Timed steps of a cell: ~3 s at one thread's ~300 images/s (width 16) or ~28 (width 64), at least 3."""
    rate = 300 if width <= 16 else 28
    return max(3, round(3 * rate / batch_size))


def measure(tries: int, allocator: str) -> list[dict]:
    """One row per cell, in this process: the engine's loop, its step alone and the peer, images/s
    (best of ``tries``), with the allocator as ``allocator`` says."""
    import torch
    from peer import engine_images_per_second, engine_step_images_per_second, peer_images_per_second

    from initmem.engine.allocator import keep_freed_host_memory

    if allocator == "kept" and not keep_freed_host_memory():
        raise SystemExit("this C library has no mallopt: the kept-memory half cannot be measured here")
    torch.set_num_threads(1)
    device = torch.device("cpu")
    rows = []
    for width, b, opt in CELLS:
        steps = steps_for(width, b)
        row = {"width": width, "b": b, "optimizer": opt, "steps": steps, "engine": 0.0, "step": 0.0, "peer": 0.0}
        for _ in range(tries):  # alternating, so a slow spell of the machine falls on both sides
            row["engine"] = max(row["engine"], engine_images_per_second("resnet9", width, b, opt, 1, steps, device,
                                                                        warm=2, prime=True)[0])
            row["step"] = max(row["step"], engine_step_images_per_second(width, b, opt, device, steps, warm=2))
            row["peer"] = max(row["peer"], peer_images_per_second(width, b, opt, device, steps, warm=2))
        rows.append(row)
        print(allocator, row, file=sys.stderr, flush=True)
    return rows


def table(rows: dict[str, list[dict]], seconds: float, rounds: int, tries: int, load: str) -> str:
    """The markdown the benchmark commits: ``rows`` per allocator."""
    import torch

    glibc, kept = rows["glibc"], rows["kept"]
    shipped = [k["engine"] / g["peer"] for g, k in zip(glibc, kept, strict=True)]
    lines = ["# The engine against plain PyTorch (CPU, one thread)", "",
             f"`OMP_NUM_THREADS=1 PYTHONPATH=workflow python benchmarks/engine_vs_pytorch.py --rounds {rounds} --tries {tries}`: "
             f"{seconds:.0f} s wall on {platform.processor() or platform.machine()}, torch {torch.__version__}, float32, "
             f"ResNet-9, single runs; load average at the end {load} (1 / 5 / 15 min). Images per second.", "",
             "| width | batch | optimizer | steps timed | engine, as its jobs run | plain PyTorch, as a script runs | "
             "**engine / PyTorch** | both with glibc's defaults: engine / PyTorch | both keeping memory: engine / PyTorch "
             "| its step alone / PyTorch |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for g, k, q in zip(glibc, kept, shipped, strict=True):
        lines.append(f"| {g['width']} | {g['b']} | {g['optimizer']} | {g['steps']} | {k['engine']:,.1f} | {g['peer']:,.1f} | "
                     f"**{q:.2f}** | {g['engine'] / g['peer']:.2f} | {k['engine'] / k['peer']:.2f} | {k['step'] / k['peer']:.2f} |")
    same = [k["engine"] / k["peer"] for k in kept]
    alone = [k["step"] / k["peer"] for k in kept]
    default = [g["engine"] / g["peer"] for g in glibc]
    lines += ["", f"Engine / PyTorch {min(shipped):.2f}-{max(shipped):.2f}; with the same allocator setting on both sides "
              f"{min(same):.2f}-{max(same):.2f}, and the engine's step alone {min(alone):.2f}-{max(alone):.2f}: within what "
              "single cells move between runs of this benchmark here (~5-10%), so no Keras semantic costs more than that "
              "(batch norm's moving statistics, the optimizers' update rules over one flat buffer, the running loss and "
              "accuracy sums on the device; the loop adds each member's data order and the schedule). The one larger cost "
              f"was the allocator's (both sides with glibc's defaults: {min(default):.2f}-{max(default):.2f}): each large "
              "tensor freed goes back to the kernel and the next step faults fresh pages in, most where a step makes the "
              "most large temporaries, the engine's Adam update at width 64. A training job keeps the host memory it frees "
              "(`initmem.engine.allocator.keep_freed_host_memory`). The peer is what a user would write."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(HERE / "engine_vs_pytorch.md"))
    parser.add_argument("--rounds", type=int, default=2, help="processes per allocator setting (default 2)")
    parser.add_argument("--tries", type=int, default=1, help="measurements per cell in each process (default 1)")
    parser.add_argument("--allocator", choices=ALLOCATORS, help=argparse.SUPPRESS)  # one half, in a child process
    args = parser.parse_args(argv)
    if args.allocator:
        print(json.dumps(measure(args.tries, args.allocator)))
        return 0
    started = time.perf_counter()
    rows: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for allocator in ALLOCATORS:  # each in a fresh process: an allocator setting lasts for the process
            child = subprocess.run([sys.executable, __file__, "--tries", str(args.tries), "--allocator", allocator],
                                   stdout=subprocess.PIPE, text=True, check=True)
            new = json.loads(child.stdout)
            rows[allocator] = [{k: max(v, old[k]) if k in ("engine", "step", "peer") else v for k, v in row.items()}
                               for row, old in zip(new, rows.get(allocator, new), strict=True)]
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    text = table(rows, time.perf_counter() - started, args.rounds, args.tries, load)
    from initmem.io import atomic_path

    with atomic_path(args.out) as tmp:
        tmp.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
