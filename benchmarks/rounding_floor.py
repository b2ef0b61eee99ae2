"""The rounding floor: how far the same runs (same seeds, same data) land apart when only the float
summation order changes, next to how far seeds and sigma_w move them.

Trains a small sigma_w x seed grid three ways: one run after another (``engine: loop``, the
reference), as one vectorised pack (``engine: vmap``) and compiled (``compute.compile``). The three
differ only in float rounding, so their spread is the floor below which a sigma_w effect in the
paper's analysis cannot be told from arithmetic noise.

usage: python benchmarks/rounding_floor.py ARCHIVE [--no-verify-md5] [--n-train 2000] [--epochs 6] [--width 16]
              [--optimizer sgd_momentum] [--lr 0.05] [--no-augment]
Prints Markdown (committed output: benchmarks/rounding_floor.md).
"""

from __future__ import annotations

import argparse
import itertools
import platform
import statistics
import sys
import time

import torch

from initmem.engine.data import build_splits
from initmem.engine.settings import TrainSettings
from initmem.pipeline.jobs import train_pack
from initmem.spec import resolve_spec

METRICS = ("test_acc_best", "val_loss_best", "tau_best")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("archive")
    parser.add_argument("--no-verify-md5", action="store_true")
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--sigmas", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--optimizer", default="sgd_momentum")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--no-augment", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n_eval = 2000
    splits = build_splits({"source": "archive", "archive": args.archive, "verify_md5": not args.no_verify_md5,
                           "n_train": args.n_train, "n_val": n_eval, "n_test": n_eval})
    optimizer = args.optimizer
    base = resolve_spec(dict(
        arch="resnet9", width=args.width, norm="batchnorm", pool="max", optimizer=optimizer, lr=args.lr, schedule="cosine",
        alpha=0.01, epochs=args.epochs, batch_size=32, l2=0.0, weight_decay=None, momentum=None,
        augment=not args.no_augment, patience=None, variant=None, n_train=args.n_train, n_val=n_eval, n_test=n_eval))
    runs = [{"run_id": f"s{sw:g}_seed{seed}", "spec": {**base, "sigma_w": sw, "seed": seed}}
            for sw, seed in itertools.product(args.sigmas, args.seeds)]
    ways = {"loop": dict(engine="loop"), "vmap": dict(engine="vmap"), "compiled": dict(engine="loop", compile=True)}
    results, walls = {}, {}
    for way, kwargs in ways.items():
        start = time.perf_counter()
        records = train_pack(runs, splits, TrainSettings(device="cpu", **kwargs), log=None)
        walls[way] = time.perf_counter() - start
        results[way] = {r["run_id"]: r["summary"] for r in records}
        print(f"{way}: {walls[way]:.0f} s", file=sys.stderr, flush=True)

    print(f"## ResNet-9 width {args.width}, {optimizer} lr {args.lr:g}, b=32, augmentation "
          f"{'off' if args.no_augment else 'on'}, n_train={args.n_train}, {args.epochs} epochs\n")
    print(f"Data: {args.archive} (the JPEG q75 copy, not the official pixels); {platform.machine()} CPU, "
          f"{args.threads} threads, torch {torch.__version__}; wall " + ", ".join(f"{w} {s:.0f} s" for w, s in walls.items()))
    flags = f"--optimizer {optimizer} --lr {args.lr:g}{' --no-augment' if args.no_augment else ''}"
    grid = f"--sigmas {' '.join(f'{s:g}' for s in args.sigmas)} --seeds {' '.join(map(str, args.seeds))}"
    print(f"\nCommand: `python benchmarks/rounding_floor.py ARCHIVE --n-train {args.n_train} --epochs {args.epochs} "
          f"--width {args.width} {flags} {grid}`\n")
    print("| run | " + " | ".join(f"{m} ({w})" for m in METRICS for w in ways) + " |")
    print("|---|" + "---:|" * (len(METRICS) * len(ways)))
    for r in runs:
        rid = r["run_id"]
        cells = [f"{results[w][rid][m]:.4f}" if m != "tau_best" else str(results[w][rid][m]) for m in METRICS for w in ways]
        print(f"| {rid} | " + " | ".join(cells) + " |")

    def spread(values: list[float]) -> float:
        return max(values) - min(values)

    acc = {w: {r["run_id"]: results[w][r["run_id"]]["test_acc_best"] for r in runs} for w in ways}
    floor = [spread([acc[w][r["run_id"]] for w in ways]) for r in runs]
    by_seed = [spread([acc["loop"][f"s{sw:g}_seed{seed}"] for seed in args.seeds]) for sw in args.sigmas]
    by_sigma = [spread([acc["loop"][f"s{sw:g}_seed{seed}"] for sw in args.sigmas]) for seed in args.seeds]
    print(f"\nTest accuracy at tau_best ({n_eval} test images, one image = {1 / n_eval:.4f}), spread = max - min:\n")
    print("| spread of | over | mean | max |\n|---|---|---:|---:|")
    print(f"| the same run | loop / vmap / compiled (rounding only) | {statistics.mean(floor):.4f} | {max(floor):.4f} |")
    print(f"| runs of one sigma_w | seeds {args.seeds} | {statistics.mean(by_seed):.4f} | {max(by_seed):.4f} |")
    print(f"| runs of one seed | sigma_w {args.sigmas} | {statistics.mean(by_sigma):.4f} | {max(by_sigma):.4f} |")


if __name__ == "__main__":
    main()
