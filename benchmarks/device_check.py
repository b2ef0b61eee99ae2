"""The device check: everything a first GPU session must measure, in one script with its own time
budget (default 450 s of measurement, <= 8 minutes with start-up), needing only a Python with
torch and numpy (the GPU machine's own; this project's .venv is not required).

Writes into ``--out`` (default: benchmarks/device_check/):
- ``device_check.md``: the device, then one table, a row per measurement: images/s per job for
  single runs and vmap packs of 8/16/32 at b=16 and b=128, every optimizer, ResNet-9 (width 64) and
  ResNet-56 rows, float32 vs TF32 vs bf16, compile off / forward / whole step (CUDA graphs) where it fits, peak GPU memory per row;
  then the checks: the host peak of a pack checkpoint's save and load, a TF32 self-check (an
  float32 convolution against float64, TF32 off and on), deterministic-cuDNN cost, and a resume-on-
  device bit-identity check (a pack stopped by SIGTERM mid-epoch and resumed equals an uninterrupted one).
- ``rates.csv``: images/s per (arch, width, batch size, optimizer family, pack, precision): what
  ``compute.rate_table`` reads (initmem/pipeline/rates.py; the slowest optimizer of a family counts).

Rows run most important first; a row that would start after the budget is listed as skipped.
``--quick``: CPU, width 4, a few rows, seconds (tests/test_device_check.py runs it so it cannot rot).

usage: python benchmarks/device_check.py [--quick] [--out DIR] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "workflow"))
sys.path.insert(0, str(HERE))

OPTIMIZERS = ("sgd", "sgd_momentum", "adam", "adamw", "muon")
COMPILE_LABELS = {False: "off", True: "forward", "step": "step"}  # compute.compile


def sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plan_rows(quick: bool) -> list[dict]:
    """Measurements in order of importance: float32 across optimizers, packs and batch sizes first."""
    if quick:
        return ([dict(arch="resnet9", width=4, b=16, opt=o, pack=n, precision="float32", compile=False)
                 for o in ("sgd", "adam") for n in (1, 2)]
                + [dict(arch="resnet56", width=4, b=16, opt="adam", pack=1, precision="float32", compile=False)]
                + [dict(arch="resnet9", width=4, b=16, opt="adam", pack=2, precision="float32", compile="step")])
    rows = [dict(arch="resnet9", width=64, b=b, opt=o, pack=n, precision="float32", compile=False)
            for b in (16, 128) for o in OPTIMIZERS for n in (1, 8, 16, 32)]
    # compute.compile: step (the whole step as CUDA graphs) in the paper's precision, against the same rows uncompiled
    rows += [dict(arch="resnet9", width=64, b=16, opt="adam", pack=n, precision="tf32", compile=c)
             for n in (8, 1) for c in ("step", False)]
    rows += [dict(arch="resnet9", width=64, b=b, opt=o, pack=n, precision=p, compile=False)
             for p in ("tf32", "bf16") for b in (16, 128) for o in ("sgd", "adam", "muon") for n in (1, 8, 32)]
    rows += [dict(arch="resnet56", width=64, b=b, opt=o, pack=n, precision="float32", compile=False)
             for b in (16, 128) for o in ("sgd", "adam") for n in (1, 8, 32)]
    rows += [dict(arch="resnet9", width=64, b=16, opt="adam", pack=n, precision=p, compile=c)
             for c in (True, "step") for p in ("float32", "tf32") for n in (1, 8) if (c, p) != ("step", "tf32")]
    return rows


def measure_row(row: dict, device, steps: int, min_seconds: float) -> dict:
    """Images/s of one job training ``row`` (the trainers' own models, optimizers and step functions)
    and its peak GPU memory. ``compile``: False, True (the forward pass) or "step" (the whole step; on
    CUDA as CUDA graphs, and the note says if the compiler skipped them)."""
    import torch

    from initmem.engine.models import build_model, init_weights
    from initmem.engine.optim import KerasOptimizer
    from initmem.engine.packed import PackedModel, pack_step
    from initmem.engine.train import compile_forward, compile_step, run_step, set_precision, static_inputs, step_inputs

    autocast = set_precision(row["precision"])
    n, b, whole = row["pack"], row["b"], row["compile"] == "step"
    models = []
    for i in range(n):
        m = build_model(row["arch"], row["width"])
        init_weights(m, 1.0, torch.Generator().manual_seed(i))
        models.append(m.to(device).train())
    x = torch.rand(n, b, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (n, b), device=device)
    lr, sums = step_inputs(None if n == 1 else n, device)
    lr.fill_(1e-3)
    if n == 1:  # the reference trainer's single run
        model = models[0]
        fwd = model if whole else compile_forward(model, bool(row["compile"]))
        opt = KerasOptimizer(row["opt"], list(model.parameters()))
        one = lambda xb, yb: run_step(fwd, model, opt, xb, yb, lr, 0.0, sums, autocast(device))  # noqa: E731
        inputs, state = (x[0], y[0]), []
    else:  # the vectorised pack
        model = PackedModel(models)
        model.train()
        if row["compile"]:
            model.compile(training=not whole)
        opt = KerasOptimizer(row["opt"], list(model.params.values()), stacked=True)
        if whole:  # as the trainer: the masks exist from the start
            model.set_active(None, always=True)
            opt.set_active(None, always=True)
        one = lambda xb, yb: pack_step(model, opt, xb, yb, lr, 0.0, sums, autocast(device))  # noqa: E731
        inputs, state = (x, y), list(model.params.values()) + list(model.buffers.values()) + model.mask_buffers()
    if whole:
        static_inputs(device, opt.buffers() + state + [lr, *sums.values()])
    compiled = compile_step(one, row["compile"], device)
    skips_before = torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0)

    def step() -> None:
        compiled(*inputs)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    for _ in range(3 if not row["compile"] else 5):
        step()
    sync(device)
    start, done = time.perf_counter(), 0
    while done < steps or time.perf_counter() - start < min_seconds:
        step()
        done += 1
        if done >= steps:
            sync(device)
    sync(device)
    ips = done * b * n / (time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else float("nan")
    out = {"images_per_s": ips, "peak_gib": peak}
    skipped = torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0) - skips_before
    if whole and device.type == "cuda":
        out["note"] = f"CUDA graphs skipped for {skipped} graph(s) (see the log)" if skipped else "CUDA graphs"
    return out


def tf32_check(device) -> str:
    """Relative error of a float32 convolution against float64 with TF32 off and on."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(64, 256, 16, 16, generator=g), torch.randn(256, 256, 3, 3, generator=g) / 48
    ref = F.conv2d(x.double(), w.double(), padding=1)
    out = []
    for tf32 in (False, True):
        torch.backends.cudnn.allow_tf32 = tf32
        got = F.conv2d(x.to(device), w.to(device), padding=1).double().cpu()
        out.append(float((got - ref).norm() / ref.norm()))
    torch.backends.cudnn.allow_tf32 = False
    verdict = "TF32 off works" if out[0] < 1e-5 else "TF32 NOT OFF: float32 runs are not float32"
    return f"TF32 self-check (conv 64x256x16x16, 3x3, vs float64): rel. error TF32 off {out[0]:.1e}, on {out[1]:.1e}: {verdict}"


def resume_check(device, quick: bool) -> str:
    """A pack stopped by SIGTERM mid-epoch and resumed from its checkpoint equals an uninterrupted one."""
    import tempfile

    import torch

    from initmem.engine.data import build_splits
    from initmem.engine.packed import train_packed
    from initmem.engine.train import Preempted, Tensors, _StopFlag
    from initmem.spec import resolve_spec

    n = 96 if quick else 512
    data = Tensors.from_splits(build_splits({"source": "synthetic", "n_train": n, "n_val": 48, "n_test": 48}), device)
    spec = dict(arch="resnet9", width=4 if quick else 16, norm="batchnorm", pool="max", optimizer="adam", lr=1e-3,
                schedule="cosine", alpha=0.01, epochs=2, batch_size=32, l2=0.0, weight_decay=None, momentum=None,
                augment=True, patience=None, seed=0, variant=None, n_train=n, n_val=48, n_test=48)
    runs = [{"run_id": f"r{s}", "spec": resolve_spec({**spec, "sigma_w": s})} for s in (0.5, 2.0)]
    reference = train_packed(runs, data, device=device, log=None)
    original, calls = torch.Tensor.backward, {"n": 0}
    stop_after = math.ceil(n / 32) + 1

    def counting_backward(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == stop_after:
            _StopFlag.requested = True
        return original(self, *args, **kwargs)

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(tmp) / "pack.ckpt"
        torch.Tensor.backward = counting_backward
        try:
            train_packed(runs, data, device=device, checkpoint=ckpt, log=None)
            return "resume check: FAILED (the SIGTERM flag did not stop the pack)"
        except Preempted:
            pass
        finally:
            torch.Tensor.backward = original
            _StopFlag.requested = False
        resumed = train_packed(runs, data, device=device, checkpoint=ckpt, log=None)
    strip = lambda recs: json.dumps([{k: v for k, v in r.items() if k not in ("wall_seconds", "env")} for r in recs])  # noqa: E731
    same = strip(resumed) == strip(reference)
    return f"resume on {device.type}: a pack stopped mid-epoch 2 and resumed is {'bit-identical' if same else 'NOT bit-identical'} to an uninterrupted one"


def determinism_cost(device) -> str:
    """images/s of one ResNet-9 b=16 pack of 8 with deterministic cuDNN against cuDNN autotuning."""
    import torch

    if device.type != "cuda":
        return "deterministic cuDNN: not applicable on the CPU"
    row = dict(arch="resnet9", width=64, b=16, opt="adam", pack=8, precision="float32", compile=False)
    out = {}
    for det in (True, False):
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = det, not det
        out[det] = measure_row(row, device, 10, 1.0)["images_per_s"]
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    return (f"deterministic cuDNN (the trainer's setting) {out[True]:,.0f} images/s vs autotuned {out[False]:,.0f} "
            f"(ResNet-9 w64, pack of 8, b=16, Adam, float32): {out[True] / out[False]:.2f}x")


def checkpoint_check(device, quick: bool) -> str:
    from checkpoint_memory import measure

    pack, width = (2, 8) if quick else (8, 64)
    m = measure(pack, width, "adam", device.type)
    return (f"checkpoint host peak ({pack} x ResNet-9 w{width} + Adam, {m['state_mib']:.0f} MiB state on {device.type}): "
            f"save +{m['save_mib']:.0f} MiB ({m['save_mib'] / m['state_mib']:.2f}x), load +{m['load_mib']:.0f} MiB "
            f"({m['load_mib'] / m['state_mib']:.2f}x) over the process's RSS")


def describe(device) -> str:
    import torch

    if device.type != "cuda":
        return f"device: cpu ({platform.processor() or platform.machine()}), torch {torch.__version__}, {torch.get_num_threads()} threads"
    from initmem.engine.device import driver_version

    p = torch.cuda.get_device_properties(device)
    return (f"device: {p.name} ({p.total_memory / 2**30:.0f} GiB, sm {p.major}.{p.minor}), driver {driver_version()}, "
            f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")


def write_rates(path: Path, rows: list[dict], device_name: str) -> None:
    """rates.csv: per family the slowest optimizer's images/s (uncompiled rows only)."""
    from initmem.pipeline.rates import COLUMNS, family

    best: dict[tuple, float] = {}
    for r in rows:
        if "images_per_s" not in r or r["compile"]:
            continue
        key = (r["arch"], r["width"], r["b"], family(r["opt"]), r["pack"], r["precision"])
        best[key] = min(best.get(key, math.inf), r["images_per_s"])
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS + ("device",))
        for key, ips in best.items():
            w.writerow((*key, f"{ips:.1f}", device_name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="CPU, tiny models, seconds: the CI check of this script")
    parser.add_argument("--out", default=str(HERE / "device_check"))
    parser.add_argument("--budget", type=float, help="seconds for the throughput rows (default 330; quick: 60)")
    args = parser.parse_args(argv)
    try:
        import numpy  # noqa: F401
        import torch
    except ImportError as exc:
        print(f"device_check: needs torch and numpy in this Python ({sys.executable}): {exc}", file=sys.stderr)
        return 2
    if not args.quick and not torch.cuda.is_available():
        from initmem.engine.device import cuda_diagnosis, driver_version, gpu_assignment

        print(f"device_check: no usable CUDA: {cuda_diagnosis(driver_version(), torch.version.cuda, gpu_assignment())} "
              "(--quick runs the CPU check)", file=sys.stderr)
        return 2
    torch.set_num_threads(1 if args.quick else max(1, min(4, os.cpu_count() or 1)))
    device = torch.device("cpu" if args.quick else "cuda:0")
    if device.type == "cuda":
        from initmem.engine.device import configure_determinism

        configure_determinism(device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    budget = args.budget if args.budget is not None else (60 if args.quick else 330)
    steps, min_seconds = (2, 0.0) if args.quick else (10, 1.0)
    started = time.perf_counter()
    header = describe(device)
    print(header, flush=True)
    rows = plan_rows(args.quick)
    for row in rows:
        if time.perf_counter() - started > budget - (60 if row["compile"] and not args.quick else 0):  # compiling takes ~a minute
            row["note"] = "skipped: budget"
            continue
        try:
            row.update(measure_row(row, device, steps, min_seconds))
        except Exception as exc:  # e.g. out of memory: the table says so and the check goes on
            row["note"] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
            if device.type == "cuda":
                torch.cuda.empty_cache()
        print(json.dumps(row), flush=True)
    checks = [tf32_check(device)]
    for check in (lambda: determinism_cost(device), lambda: checkpoint_check(device, args.quick),
                  lambda: resume_check(device, args.quick)):
        try:
            checks.append(check())
        except Exception as exc:
            checks.append(f"check failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
        print(checks[-1], flush=True)
    lines = [f"# Device check ({'quick, CPU' if args.quick else 'GPU'})", "", header,
             f"`python benchmarks/device_check.py{' --quick' if args.quick else ''}`: {time.perf_counter() - started:.0f} s", "",
             "| arch | width | b | optimizer | pack | precision | compile | images/s per job | images/s per run | peak GPU GiB | note |",
             "|---|---:|---:|---|---:|---|---|---:|---:|---:|---|"]
    for r in rows:
        ips = r.get("images_per_s")
        job = f"{ips:,.0f}" if ips else ""
        per_run = f"{ips / r['pack']:,.0f}" if ips else ""
        peak = "" if ips is None or math.isnan(r["peak_gib"]) else f"{r['peak_gib']:.2f}"
        lines.append(f"| {r['arch']} | {r['width']} | {r['b']} | {r['opt']} | {r['pack']} | {r['precision']} | "
                     f"{COMPILE_LABELS[r['compile']]} | {job} | {per_run} | {peak} | {r.get('note', '')} |")
    lines += [""] + [f"- {c}" for c in checks]
    (out / "device_check.md").write_text("\n".join(lines) + "\n")
    name = "cpu" if device.type == "cpu" else torch.cuda.get_device_name(device)
    write_rates(out / "rates.csv", rows, name)
    print(f"wrote {out / 'device_check.md'} and {out / 'rates.csv'} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
