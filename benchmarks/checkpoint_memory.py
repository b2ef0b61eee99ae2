"""Host memory of a pack checkpoint's save and load: the peak resident set a
training job reaches, over its state, for a paper-sized pack (default: 8 x ResNet-9 width 64 with
Adam state, 602 MiB). Each measurement runs in a fresh subprocess and reads its peak RSS
(``VmHWM``, reset to the current RSS just before): ``base`` after building the state, ``save`` after ``save_checkpoint``, ``load`` in
another process after ``load_checkpoint`` (without building the state first, as a resumed job does);
and the seconds of each call (the save: off the device, hashed, written and fsync'ed).

usage: python benchmarks/checkpoint_memory.py [--pack 8] [--width 64] [--optimizer adam] [--device cpu|cuda]
Needs only torch and numpy (imports initmem from workflow/). Target: save and load peaks over the
base each <= ~1.5x the state (docs/slurm.md, "Host memory").
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKFLOW = str(Path(__file__).resolve().parents[1] / "workflow")


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> float:
    """Reset the peak RSS (VmHWM; Linux >= 4.0) to the current RSS and return that."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # then the peak includes building the state: an upper bound
    return _status_mib("VmRSS")


def _peak_mib() -> float:
    try:
        return _status_mib("VmHWM")
    except (OSError, RuntimeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _build(pack: int, width: int, optimizer: str, device: str):
    import torch

    from initmem.engine.models import build_model, init_weights
    from initmem.engine.optim import KerasOptimizer
    from initmem.engine.packed import PackedModel

    models = []
    for i in range(pack):
        m = build_model("resnet9", width)
        init_weights(m, 1.0, torch.Generator().manual_seed(i))
        models.append(m.to(device))
    model = PackedModel(models)
    del models
    opt = KerasOptimizer(optimizer, list(model.params.values()), stacked=True)
    for p in opt.params:
        p.grad = torch.zeros_like(p)
    opt.step(1e-3)  # creates the optimizer state
    for p in opt.params:
        p.grad = None
    return model, opt


def child(args: argparse.Namespace) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    sys.path.insert(0, WORKFLOW)
    import torch

    from initmem.engine.checkpoint import load_checkpoint, save_checkpoint

    spec = {"bench": args.pack}
    if args.child == "save":
        model, opt = _build(args.pack, args.width, args.optimizer, args.device)
        payload = {"model": model.state_dict(), "optimizer": opt.state_dict()}
        state_mib = sum(t.numel() * t.element_size() for t in list(model.params.values()) + list(model.buffers.values())) / 2**20
        state_mib += sum(t.numel() * t.element_size() for s in opt.state for t in s.values() if isinstance(t, torch.Tensor)) / 2**20
        if args.device == "cuda":
            torch.cuda.synchronize()
        base = _reset_peak()
        start = time.perf_counter()
        save_checkpoint(Path(args.file), spec, payload)
        seconds = time.perf_counter() - start
        print(json.dumps({"state_mib": state_mib, "base_mib": base, "peak_mib": _peak_mib(), "seconds": seconds}))
    else:
        import torch

        base = _reset_peak()
        start = time.perf_counter()
        obj = load_checkpoint(Path(args.file), spec, map_location=args.device)
        seconds = time.perf_counter() - start
        assert obj is not None
        print(json.dumps({"base_mib": base, "peak_mib": _peak_mib(), "seconds": seconds}))


def measure(pack: int = 8, width: int = 64, optimizer: str = "adam", device: str = "cpu") -> dict:
    """state, save and load peaks (MiB over each process's base) for one pack, each in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        file = str(Path(tmp) / "pack.ckpt")
        common = [sys.executable, __file__, "--pack", str(pack), "--width", str(width), "--optimizer", optimizer,
                  "--device", device, "--file", file]
        save = json.loads(subprocess.run(common + ["--child", "save"], check=True, capture_output=True, text=True).stdout)
        load = json.loads(subprocess.run(common + ["--child", "load"], check=True, capture_output=True, text=True).stdout)
        size = Path(file).stat().st_size / 2**20
    return {"state_mib": save["state_mib"], "file_mib": size, "save_mib": save["peak_mib"] - save["base_mib"],
            "load_mib": load["peak_mib"] - load["base_mib"], "save_s": save["seconds"], "load_s": load["seconds"]}


def table(pack: int, width: int, optimizer: str, device: str) -> str:
    """The benchmark's markdown table."""
    m = measure(pack, width, optimizer, device)
    return ("| pack | state MiB | file MiB | save: host peak over base MiB | x state | load: host peak over base MiB | x state "
            "| save s | load s |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            f"| {pack} x ResNet-9 w{width} + {optimizer} ({device}) | {m['state_mib']:.0f} | {m['file_mib']:.0f} | "
            f"{m['save_mib']:.0f} | {m['save_mib'] / m['state_mib']:.2f} | {m['load_mib']:.0f} | {m['load_mib'] / m['state_mib']:.2f} "
            f"| {m['save_s']:.1f} | {m['load_s']:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pack", type=int, default=8)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--child", choices=["save", "load"], help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, WORKFLOW)
    import torch

    torch.set_num_threads(1)
    print(table(args.pack, args.width, args.optimizer, args.device))


if __name__ == "__main__":
    main()
