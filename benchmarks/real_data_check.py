"""A short real-data training check on CPU: does one run learn CIFAR-10 clearly above chance?

usage: python benchmarks/real_data_check.py ARCHIVE [--no-verify-md5] [--n-train 5000] [--epochs 8] [--width 16]
(ARCHIVE ``synthetic``: the synthetic source, for a check of the script itself)
Prints a Markdown table of the per-epoch history (committed output: benchmarks/real_data_check.md) and
what the command cost: its whole wall time and CPU seconds since the process started (imports, reading
and decoding the archive, training, evaluation), the part spent training, and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time

STARTED = time.perf_counter()  # before torch's import: the command's whole wall time

import torch  # noqa: E402

from initmem.engine.data import build_splits  # noqa: E402
from initmem.engine.settings import TrainSettings  # noqa: E402
from initmem.pipeline.jobs import train_pack  # noqa: E402
from initmem.spec import resolve_spec  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("archive")
    parser.add_argument("--no-verify-md5", action="store_true")
    parser.add_argument("--n-train", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-eval", type=int, default=2000, help="validation and test images each")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    data_started = time.perf_counter()
    data = {"source": "synthetic"} if args.archive == "synthetic" else \
        {"source": "archive", "archive": args.archive, "verify_md5": not args.no_verify_md5}
    splits = build_splits({**data, "n_train": args.n_train, "n_val": args.n_eval, "n_test": args.n_eval})
    spec = resolve_spec(dict(
        arch="resnet9", width=args.width, norm="batchnorm", pool="max", optimizer=args.optimizer, lr=args.lr,
        schedule="cosine", alpha=0.01, epochs=args.epochs, batch_size=args.batch_size, l2=0.0, weight_decay=None,
        momentum=None, augment=False, patience=None, sigma_w=1.0, seed=0, variant=None, n_train=args.n_train,
        n_val=args.n_eval, n_test=args.n_eval))
    start = time.perf_counter()
    rec = train_pack([{"run_id": "real_check", "spec": spec}], splits, TrainSettings(device="cpu"), log=sys.stderr)[0]
    end = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    h = rec["history"]
    print(f"# Real-data check: ResNet-9 width {args.width}, {args.optimizer} lr {args.lr}, b={args.batch_size}, "
          f"n_train={args.n_train}, {args.epochs} epochs, sigma_w=1, seed 0\n")
    what = "synthetic images" if data["source"] == "synthetic" else \
        f"{args.archive} (md5 check {'off' if args.no_verify_md5 else 'on'})"
    print(f"Data: {what}; {platform.machine()} CPU "
          f"({os.cpu_count()} cores), {args.threads} threads, torch {torch.__version__}\n")
    print(f"Cost: wall {end - STARTED:.0f} s in all ({start - data_started:.0f} s reading and splitting the archive, "
          f"{end - start:.0f} s training and evaluating), {usage.ru_utime + usage.ru_stime:.0f} CPU-s; "
          f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
    print("| epoch | train loss | train acc | val acc | test acc |")
    print("|---:|---:|---:|---:|---:|")
    for i, e in enumerate(h["epoch"]):
        print(f"| {e} | {h['train_loss'][i]:.3f} | {h['train_acc'][i]:.3f} | {h['val_acc'][i]:.3f} | {h['test_acc'][i]:.3f} |")
    s = rec["summary"]
    print(f"\nSelected checkpoint tau_best = {s['tau_best']}: test accuracy {s['test_acc_best']:.3f} (chance 0.100)")


if __name__ == "__main__":
    main()
