"""The device check: what a first GPU session must measure, in the order it matters, within a lent
15-minute window (the plan is <= 7 minutes on an H200 with its own compiles, leaving time for the
machine's start and one rerun). Needs only a Python with torch >= 2.6 and numpy: the library is
imported from this checkout; the planner's shapes come from ``config/paper.yaml`` where the planner
runs (PyYAML and jsonschema installed), else from ``benchmarks/device_check_shapes.json`` (the
planner's output, kept equal to it by ``tests/test_device_check.py``; ``--write-shapes`` regenerates
it); the table's header says which.

Rows, in this order, in the paper's precision (``compute.precision`` of config/paper.yaml: bf16) unless they say otherwise:

1. versions;
2. the correctness rows, first and outside the speed budget (no budget cut skips them): resume
   bit-identity on the device (a pack with augmentation stopped by SIGTERM mid-epoch 2 in one
   process and resumed in another equals an uninterrupted one), every process under
   ``torch.use_deterministic_algorithms(True, warn_only=True)``, naming each op that has no
   deterministic implementation there; the TF32 self-check (a conv and a matmul);
3. matmul peaks in bf16, tf32 and float32: the ceiling every rate below is checked against;
4. single ResNet-9 runs at b = 16/32/64/128/256 (Adam; SGD at 16 and 128);
5. what would cut the bill, right after the singles so that a GPU slower than expected spends its budget on
   them rather than on the planned shapes (whose rates otherwise fall back to the stated defaults): first
   the planned pack shapes they are compared with (the three with the most GPU-hours, the smallest and
   largest batch, the planned pack of each larger pack's batch size), then packs of 4,096 and 8,192 images
   a step (b=128 x32, b=256 x16 and x32, beyond the planner's largest), cuDNN autotuning (benchmark)
   against the trainer's deterministic algorithms for two shapes, ``compute.memory_format: channels_last``
   and the other precision (tf32 where the paper's is bf16, else bf16), each for the three pack shapes with
   the most GPU-hours, and bf16 with channels_last on the 8,192-image pack (and on those three where the
   paper's precision is not bf16): each row says its speed-up over the same shape's default row;
6. the other pack shapes ``config/paper.yaml`` plans, ResNet-9 first, then ResNet-56 and ResNet-110, most
   GPU-hours first: the largest shape of every rate kind (architecture, batch size, optimizer family,
   precision), then as many more as their share of the plan allows (``--plan`` lists those left out);
7. one real pack epoch with evaluation (the paper's data sizes): its wall time against the step rate;
8. peer rows: the same ResNet-9 in plain PyTorch (``benchmarks/peer.py``) at b=16 and b=128, against
   the engine's single-run rows of step 4;
9. ``compile: step`` (the whole step as CUDA graphs), if time remains.

Every rate is timed by the check's own clock (``time.perf_counter``, the device synchronised at both
ends), never read from a log: one training of the row's shape in the engine's own loop, its first
steps untimed (first-use costs, autotuning, compilation), then a window of consecutive steps planned
for 1.25 s at the expected rate and stretched until it has lasted at least 1 s (``peer.StepWindow``),
going over the data pool again where a fast row outlasts it (the evaluations between passes
untimed); the training stops there. A rate is refused, with a one-line reason in the output and the table and
never written to ``rates.csv``, when its window lasted under 1 s or its FLOP/s (images/s x the
model's convolution and matmul FLOPs per training image) exceed the matmul peak the check measured in
its precision. Before each timed row the check compares its expected seconds, scaled by how much
slower than expected the timed rows so far ran, with the time left; a row that does not fit is
skipped with a note.

Writes into ``--out`` (default benchmarks/device_check/), after EVERY row and atomically (a timeout
leaves everything measured so far): ``device_check.md`` (the table) and ``rates.csv`` (images/s per
arch, width, batch size, optimizer family, pack, precision and compile; the slowest optimizer of a
family counts): what ``compute.rate_table`` reads (``initmem/costs/rates.py``).

usage: python benchmarks/device_check.py [--plan] [--quick] [--out DIR] [--budget SECONDS] [--only GROUPS]
  --plan    print the rows, in order, with their expected seconds on an H200 (no torch needed)
  --quick   CPU, tiny models, seconds (tests/test_device_check.py runs it so it cannot rot)
  --only    measure only some row groups (train, resume, ...: --help lists them), the others noted as not selected
            (the matmul peaks run whenever a timed row does)
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import io
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(HERE))
STARTED = time.perf_counter()

SHAPES_FILE = HERE / "device_check_shapes.json"
PAPER_CONFIG = ROOT / "config" / "paper.yaml"
BUDGET_S = 420  # the whole check, start-up and compiles included
# Expected costs on one H200 node (estimates for --plan and the budget, corrected as rows run):
STARTUP_S = 15  # torch import, CUDA context, the data pool
CALL_S = 0.4  # one training call beyond its steps: data views, evaluation, first kernels
BUILD_S = {"resnet9": 0.06, "resnet56": 0.015, "resnet110": 0.03}  # building and initialising one model
COMPILE_S = 120  # compute.compile: step, the first (cold) compile of a shape
WINDOW_S = 1.25  # the timed window a row plans for at its expected rate (a rate needs >= MIN_WINDOW_S)
WARM_STEPS = 3  # untimed steps before a window: first-use costs, autotuning
COMPILE_WARM = 5  # ... and for a compiled step (compilation, CUDA graph warm-up and recording)
STRETCH = 10  # a window may run to this many times its planned steps where the device is faster than expected
LARGE_PACKS = ((128, 32), (256, 16), (256, 32))  # (b, pack): 4,096 and 8,192 images a step, 2-4x the largest planned
CORRECTNESS = ("resume", "tf32")  # rows that check results, not speed: first, and outside the budget
PACK_SHARE_S = {"resnet9": 120, "deep": 60}  # expected seconds for the planned pack shapes of each group
MIN_SHARE = 0.03  # a planned shape is measured when it holds >= 3% of its group's GPU-hours
QUICK = {"width": 4, "pack": 2, "batch": 16, "warm": 1, "rate": 400.0}  # the CPU quick mode's shapes and expectations


# --- the plan (torch-free) -------------------------------------------------------------------


def planner_shapes() -> tuple[dict, str]:
    """{"shapes": the planner's job shapes of config/paper.yaml (most GPU-hours first), "data": its
    split sizes}, and where they came from: the planner where its packages import (PyYAML, jsonschema),
    else the stored file, saying which package is missing."""
    try:
        from initmem.pipeline.configfiles import load_config
        from initmem.pipeline.estimate import planned_shapes

        config = load_config([PAPER_CONFIG])
    except ImportError as exc:  # a bare GPU machine: torch and numpy only
        missing = exc.name or str(exc)
        return json.loads(SHAPES_FILE.read_text()), (f"{SHAPES_FILE.relative_to(ROOT)} (the planner's output; "
                                                     f"the planner cannot run here: no {missing})")
    data = {k: int(config["data"][k]) for k in ("n_train", "n_val", "n_test")}
    return {"shapes": planned_shapes(config), "data": data}, "the planner (initmem.pipeline.estimate.planned_shapes, config/paper.yaml)"


def job_rate(row: dict, quick: bool) -> float:
    """Expected images/s of a training row's job: the rate model's stated defaults (quick: a flat CPU rate)."""
    if quick:
        return QUICK["rate"]
    from initmem.costs.rates import RateModel

    spec = {"arch": row["arch"], "width": row["width"], "batch_size": row["b"], "optimizer": row["opt"]}
    return RateModel().rate(spec, row["pack"], row["precision"]).central


def warm_steps(row: dict, quick: bool) -> int:
    """Untimed steps before a row's window."""
    if row.get("compile"):
        return COMPILE_WARM
    return QUICK["warm"] if quick else WARM_STEPS


def timed_steps(row: dict, quick: bool) -> int:
    """Steps the timed window plans for: about :data:`WINDOW_S` at the expected rate, at least 10 (the
    window itself goes on until it has lasted ``peer.MIN_WINDOW_S``)."""
    step_s = row["pack"] * row["b"] / job_rate(row, quick)
    return max(10, math.ceil(WINDOW_S / step_s))


def most_steps(row: dict, quick: bool) -> int:
    """The most steps a row's training may take: its warm-up and :data:`STRETCH` times its planned
    window (over the data pool as many times as that takes, ``peer.engine_window``)."""
    return warm_steps(row, quick) + STRETCH * timed_steps(row, quick)


def expected_seconds(row: dict, quick: bool) -> float:
    """Expected wall seconds of a row (on an H200; quick: on a CPU)."""
    kind = row["kind"]
    if kind == "versions":
        return 1.0
    if kind == "matmul":
        return 1.5 if quick else 2.0  # a window of >= 1 s
    if kind in ("tf32",):
        return 1.0
    if kind == "resume":
        return 12.0 if quick else 25.0  # two child processes (torch import, CUDA context) and a reference
    if kind in ("train", "peer", "epoch"):
        warm = warm_steps(row, quick)
        steps = timed_steps(row, quick)
        step_s = row["pack"] * row["b"] / job_rate(row, quick)
        call = (0.2 if quick else CALL_S) + row["pack"] * BUILD_S[row["arch"]] * (0.2 if quick else 1.0)
        if kind == "peer":
            return call + (warm + steps) * step_s
        if kind == "epoch":
            n = row["data"]
            return call + row["pack"] * (n["n_train"] + (n["n_val"] + n["n_test"]) / 3) / job_rate(row, quick)
        compiling = (20 if quick else COMPILE_S) if row.get("compile") else 0.0
        return compiling + call + (warm + steps) * step_s  # one training: warm-up steps, then the window
    raise ValueError(f"unknown row kind {kind!r}")


def rate_kind(shape: dict) -> tuple:
    """What a rate is kept per, pack sizes aside (``rates.csv``): architecture, batch size, optimizer family, precision."""
    from initmem.costs.rates import family

    return shape["arch"], shape["batch_size"], family(shape["optimizer"]), shape["precision"]


def train_row(arch: str, width: int, b: int, opt: str, pack: int, precision: str, **extra) -> dict:
    return {"kind": "train", "arch": arch, "width": width, "b": b, "opt": opt, "pack": pack, "precision": precision,
            "compile": False} | extra


def plan_rows(quick: bool, source: dict | None = None) -> tuple[list[dict], list[dict]]:
    """The rows to run, in order, and the planned shapes left out (their GPU-hours share said by --plan)."""
    source = source or planner_shapes()[0]
    shapes, data = source["shapes"], source["data"]
    precision = shapes[0]["precision"] if shapes else "tf32"
    width = QUICK["width"] if quick else 64
    cap = (lambda n: min(n, QUICK["pack"])) if quick else (lambda n: n)
    batch = (lambda b: min(b, QUICK["batch"])) if quick else (lambda b: b)
    rows: list[dict] = [dict(kind="versions"), dict(kind="resume"), dict(kind="tf32")]
    rows += [dict(kind="matmul", precision=p) for p in ("bf16", "tf32", "float32")]
    singles = [(b, "adam") for b in (16, 32, 64, 128, 256)] + [(16, "sgd"), (128, "sgd")]
    if quick:
        singles = [(16, "adam"), (16, "sgd")]
    rows += [train_row("resnet9", width, b, opt, 1, precision) for b, opt in singles]
    planned, left_out = planned_pack_rows(shapes, width, cap, batch, quick)
    packs = [r for r in planned if r["pack"] > 1]
    large = large_pack_rows(width, precision, quick)
    top = packs[:3]
    by_b = {r["b"]: r for r in reversed(packs) if r["arch"] == "resnet9"}  # the first planned shape of each batch size
    two = [by_b[b] for b in sorted(by_b)]
    two = two[:1] + two[1:][-1:]  # the smallest and the largest batch
    # the cost rows (what would cut the bill) come right after the singles, so a slow GPU's budget keeps them; before
    # them only the planned shapes they are compared with (their default-settings rows)
    first = [r for r in packs if any(r is x for x in top + two) or any(_compared_with(big, r) for big in large)]
    rows += first + large
    rows += [{**r, "cudnn": "benchmark", "jobs": None, "hours": None, "group": "autotune"} for r in two]
    rows += [{**r, "memory_format": "channels_last", "jobs": None, "hours": None, "group": "channels_last"} for r in top]
    other = "tf32" if precision == "bf16" else "bf16"  # the precision the paper's rows are compared with
    rows += [{**r, "precision": other, "jobs": None, "hours": None, "group": other} for r in top]
    # the road to fewer GPU-hours, all three together (in bf16 the channels_last rows above are it for the top shapes)
    fastest = large[-1:] if precision == "bf16" else top + large[-1:]
    rows += [{**r, "precision": "bf16", "memory_format": "channels_last", "jobs": None, "hours": None,
              "group": "bf16_channels_last"} for r in fastest]
    rows += [r for r in planned if not any(r is x for x in first)]
    epoch = max((r for r in packs if r["arch"] == "resnet9"), key=lambda r: r.get("jobs") or 0, default=None)
    if epoch is not None:
        n = {"n_train": 48, "n_val": 16, "n_test": 16} if quick else data
        rows.append({**epoch, "kind": "epoch", "data": n, "jobs": None, "hours": None})
    rows += [dict(kind="peer", arch="resnet9", width=width, b=b, opt=o, pack=1, precision=precision)
             for b in ((16, 128) if not quick else (16,)) for o in ("adam", "sgd")]
    rows += [train_row("resnet9", width, 16, "adam", 1, precision, compile="step", group="compile")]
    for r in rows:
        r["expected_s"] = round(expected_seconds(r, quick), 1)
    return rows, left_out


def planned_pack_rows(shapes: list[dict], width: int, cap, batch, quick: bool) -> tuple[list[dict], list[dict]]:
    """The planned shapes to measure, most GPU-hours first, and those left out: the first (most hours) shape of every
    rate kind, then the others by hours within their group's share (:data:`PACK_SHARE_S`); quick: one or two small ones."""
    rows, left_out, covered = [], [], set()
    for group, archs in (("resnet9", ("resnet9",)), ("deep", ("resnet56", "resnet110"))):
        spent, taken = 0.0, 0
        members = [s for s in shapes if s["arch"] in archs]
        if quick:  # the cheapest architecture of the group, one or two shapes, small batches
            members = [s for s in members if s["arch"] == min(archs, key=lambda a: BUILD_S[a])]
        floor = MIN_SHARE * sum(s["hours"] for s in members)
        for shape in members:
            row = train_row(shape["arch"], width, batch(shape["batch_size"]), shape["optimizer"], cap(shape["pack"]), shape["precision"],
                            jobs=shape["jobs"], hours=shape["hours"])
            cost = expected_seconds(row, quick)
            if quick:
                skip = shape["pack"] == 1 or taken >= (2 if group == "resnet9" else 1)
            else:
                skip = rate_kind(shape) in covered and (shape["pack"] == 1 or shape["hours"] < floor
                                                        or spent + cost > PACK_SHARE_S[group])
            if skip:
                left_out.append(shape)
                continue
            rows.append(row)
            covered.add(rate_kind(shape))
            spent, taken = spent + cost, taken + 1
    return rows, left_out


def _compared_with(large: dict, planned: dict) -> bool:
    """Whether a large-pack row's per-job rate is read against ``planned`` (:func:`largest_planned_pack`'s shape)."""
    keys = ("arch", "width", "b", "opt", "precision")
    return all(large[k] == planned[k] for k in keys)


def large_pack_rows(width: int, precision: str, quick: bool) -> list[dict]:
    """Packs of 4,096 and 8,192 images a step (ResNet-9, Adam), beyond the largest the planner makes (2,048):
    whether fewer, larger jobs train faster (quick: one small pack)."""
    shapes = [(QUICK["batch"], 2 * QUICK["pack"])] if quick else LARGE_PACKS
    return [train_row("resnet9", width, b, "adam", pack, precision, group="large_pack") for b, pack in shapes]


ROW_GROUPS = ("versions", "resume", "tf32", "matmul", "train", "large_pack", "autotune", "channels_last", "bf16",
              "bf16_channels_last", "epoch", "peer", "compile")
RATE_GROUPS = {"train", "large_pack", "autotune", "channels_last", "bf16", "bf16_channels_last", "epoch", "peer", "compile"}


def row_group(r: dict) -> str:
    """The row's group for ``--only``: its kind, or what a training row compares (autotune, bf16, compile)."""
    return r.get("group") or r["kind"]


def selected(r: dict, only: set[str] | None) -> bool:
    """Whether ``--only`` selects the row; the matmul peaks whenever a timed row is (every rate is checked against them)."""
    if not only:
        return True
    return row_group(r) in only or (r["kind"] == "matmul" and bool(only & RATE_GROUPS))


def describe_row(r: dict) -> str:
    """What a row measures, in a few words."""
    kind = r["kind"]
    if kind == "versions":
        return "versions"
    if kind == "matmul":
        return f"matmul peak, {r['precision']}"
    if kind in ("resume", "tf32"):
        return {"resume": "resume bit-identity (SIGTERM mid-epoch, another process resumes)", "tf32": "TF32 self-check (conv, matmul)"}[kind]
    shape = f"{r['arch']} w{r['width']} b{r['b']} {r['opt']} x{r['pack']}"
    what = {"train": "pack" if r["pack"] > 1 else "single run", "peer": "plain PyTorch peer",
            "epoch": "one real pack epoch + evaluation"}[kind]
    extra = [x for x in (r.get("cudnn") and "cuDNN autotuned", r.get("compile") and f"compile {r['compile']}",
                         r.get("memory_format") and r["memory_format"],
                         r.get("group") == "large_pack" and f"{r['pack'] * r['b']:,} images a step",
                         r.get("jobs") and f"{r['jobs']} jobs, {r['hours']:,.0f} h planned") if x]
    return f"{what}: {shape}" + (f" ({', '.join(extra)})" if extra else "")


def print_plan(rows: list[dict], left_out: list[dict], where: str) -> None:
    total = STARTUP_S + sum(r["expected_s"] for r in rows)
    print(f"device check plan ({len(rows)} rows; shapes from {where}); expected seconds on one H200:")
    for i, r in enumerate(rows, 1):
        print(f"{i:3d}. {r.get('precision') or '':8s} {r['expected_s']:6.1f} s  {describe_row(r)}")
    hours = sum(s["hours"] for s in left_out)
    every = hours + sum(r.get("hours") or 0 for r in rows)
    print(f"total ~{total:.0f} s ({total / 60:.1f} min) with {STARTUP_S} s start-up; budget {BUDGET_S} s")
    kinds = {rate_kind(s) for s in left_out} | {rate_kind({**r, "batch_size": r["b"], "optimizer": r["opt"]}) for r in rows if r.get("hours")}
    measured = {rate_kind({**r, "batch_size": r["b"], "optimizer": r["opt"]}) for r in rows if r.get("hours")}
    print(f"planned rate kinds (architecture, batch size, optimizer family, precision) with a measured row: {len(measured)} of {len(kinds)}")
    if left_out:
        print(f"planned shapes not measured: {len(left_out)} ({hours:,.0f} of {every:,.0f} planned GPU-hours; the rate model "
              "reads them off the measured packs of their kind, never faster than the nearest larger one)")


# --- measurement ------------------------------------------------------------------------------


def fits(expected: float, elapsed: float, budget: float, slowdown: float) -> bool:
    """Whether a row expected to take ``expected`` seconds, at ``slowdown`` x the expectations (never
    below 1), ends within ``budget`` seconds when ``elapsed`` have gone."""
    return elapsed + expected * max(1.0, slowdown) <= budget


def matmul_peak(device, precision: str, quick: bool, clock=time.perf_counter) -> dict:
    """The square matmul's FLOP/s in ``precision`` over a window of >= 1 s: the ceiling every rate is checked against."""
    import torch
    from peer import StepWindow

    from initmem.engine.compute import set_tf32, tf32_state

    n = 256 if quick else 8192
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    before = tf32_state()
    set_tf32(precision == "tf32")
    timer = StepWindow(2, 20, 1_000_000, device, clock=clock)
    try:
        window = None
        while window is None:
            timer.before()
            a @ b
            window = timer.after()
    finally:
        set_tf32(before["matmul"], before["cudnn"])
    flops = 2 * n ** 3 * window.steps / window.seconds
    return {"flops_per_s": flops, "result": f"{flops / 1e12:,.4g} TFLOP/s ({n}x{n}x{n}, {window.steps} in {window.seconds:.2f} s)"}


@functools.cache
def training_flops(arch: str, width: int) -> float:
    """FLOPs of one training image (forward and backward of the engine's model: its convolutions and
    matmuls, as ``torch.utils.flop_counter`` counts them; norms, activations and the update left out,
    so a rate's FLOP/s comes out low, never high)."""
    import torch
    import torch.nn.functional as F
    from torch.utils.flop_counter import FlopCounterMode

    from initmem.engine.models import build_model

    model = build_model(arch, width).train()
    x, y = torch.rand(2, 3, 32, 32), torch.tensor([0, 1])
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x), y).backward()
    return counter.get_total_flops() / len(x)


def matmul_peaks(rows: list[dict]) -> dict[str, float]:
    """The matmul peak (FLOP/s) measured so far, per precision."""
    return {r["precision"]: r["flops_per_s"] for r in rows if r["kind"] == "matmul" and r.get("flops_per_s")}


def refusal(row: dict, window, peaks: dict[str, float]) -> str | None:
    """Why a row's rate cannot be trusted, or None: a window under ``peer.MIN_WINDOW_S``, no matmul peak
    measured in its precision, or more FLOP/s than that peak."""
    from peer import MIN_WINDOW_S

    if window.seconds < MIN_WINDOW_S:
        return f"its timed window of {window.steps} steps lasted {window.seconds:.3g} s, under the {MIN_WINDOW_S:g} s a rate needs"
    peak = peaks.get(row["precision"])
    if peak is None:
        return f"no {row['precision']} matmul peak was measured in this check to bound it"
    ips = row["pack"] * row["b"] * window.steps / window.seconds
    flops = ips * training_flops(row["arch"], row["width"])
    if flops > peak:
        return (f"{ips:,.0f} images/s is {flops / 1e12:,.3g} TFLOP/s, above the {peak / 1e12:,.3g} TFLOP/s "
                f"{row['precision']} matmul peak this check measured")
    return None


def judged(row: dict, window, rows: list[dict]) -> dict:
    """A timed row's fields: its rate (images/s) where :func:`refusal` finds nothing wrong, else the reason it is refused."""
    timed = f"{window.steps} steps timed in {window.seconds:.2f} s"
    reason = refusal(row, window, matmul_peaks(rows))
    if reason:
        return {"refused": reason, "result": f"REFUSED (not in rates.csv): {reason}"}
    return {"images_per_s": row["pack"] * row["b"] * window.steps / window.seconds, "result": timed}


def default_settings(r: dict) -> bool:
    """Whether a measured row trained in the trainer's default settings (a planned shape, or a larger pack)."""
    return r["kind"] == "train" and r.get("group") in (None, "large_pack") and bool(r.get("images_per_s"))


def baseline(row: dict, rows: list[dict]) -> dict | None:
    """The measured row of the same shape as ``row`` in the trainer's default settings, which an
    autotune, channels_last, bf16 or compile row is compared with."""
    keys = ("arch", "width", "b", "opt", "pack")
    return next((r for r in rows if default_settings(r) and r is not row and all(r[k] == row[k] for k in keys)), None)


def largest_planned_pack(row: dict, rows: list[dict]) -> dict | None:
    """The measured planned pack of ``row``'s architecture, batch size, optimizer and precision with the most runs."""
    keys = ("arch", "width", "b", "opt", "precision")
    same = [r for r in rows if default_settings(r) and not r.get("group") and all(r[k] == row[k] for k in keys)]
    return max(same, key=lambda r: r["pack"], default=None)


def measure_train(row: dict, device, quick: bool, pool, rows: list[dict], clock=time.perf_counter) -> dict:
    """A training row: one training of its shape, its steps timed after the warm-up (``clock``: the
    window's timer), the rate judged (:func:`judged`)."""
    import torch
    from peer import engine_window

    flags = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    if row.get("cudnn") == "benchmark":
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = True, False
    try:
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        window = engine_window(row["arch"], row["width"], row["b"], row["opt"], row["pack"], timed_steps(row, quick), device,
                               warm=warm_steps(row, quick), most=most_steps(row, quick), precision=row["precision"],
                               compile=row["compile"], pool=pool, memory_format=row.get("memory_format", "contiguous"), clock=clock)
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = flags
    out = judged(row, window, rows)
    if device.type == "cuda":
        out["result"] += f", peak {torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB"
    if "images_per_s" not in out:
        return out
    if row.get("group") == "large_pack" and (planned := largest_planned_pack(row, rows)):
        out["result"] += f"; per job {out['images_per_s'] / planned['images_per_s']:.2f}x the planned x{planned['pack']} pack"
    elif row.get("group") and (base := baseline(row, rows)):
        out["result"] += f"; {out['images_per_s'] / base['images_per_s']:.2f}x the default row ({base['precision']}, NCHW, deterministic)"
    return out


def measure_epoch(row: dict, device, rows: list[dict], pool) -> dict:
    """One real epoch (the paper's split sizes) with evaluation, against the training step rate measured for its shape."""
    from peer import engine_train_seconds

    n = row["data"]
    steps = math.ceil(n["n_train"] / row["b"])
    wall = engine_train_seconds(row["arch"], row["width"], row["b"], row["opt"], row["pack"], steps, device,
                                precision=row["precision"], pool=pool, n_eval=n["n_val"])
    same = next((r for r in rows if r["kind"] == "train" and r.get("images_per_s") and not r.get("group")
                 and all(r[k] == row[k] for k in ("arch", "width", "b", "opt", "pack", "precision"))), None)
    result = f"epoch of {steps * row['b']:,} training + {2 * n['n_val']:,} evaluated images per run: {wall:.1f} s"
    if same:
        train_only = row["pack"] * steps * row["b"] / same["images_per_s"]
        model = row["pack"] * (steps * row["b"] + 2 * n["n_val"] / 3) / same["images_per_s"]
        result += (f"; the step rate alone predicts {train_only:.1f} s training, {model:.1f} s with evaluation at 1/3 "
                   f"(the planner's model): wall / model {wall / model:.2f}")
    return {"result": result}


def measure_peer(row: dict, device, quick: bool, rows: list[dict], clock=time.perf_counter) -> dict:
    from peer import peer_window

    window = peer_window(row["width"], row["b"], row["opt"], device, timed_steps(row, quick), warm=warm_steps(row, quick),
                         most=most_steps(row, quick), clock=clock)
    out = judged(row, window, rows)
    if "refused" in out:
        return out
    ips = out["images_per_s"]
    engine = next((r for r in rows if r["kind"] == "train" and r["pack"] == 1 and r.get("images_per_s") and not r.get("group")
                   and (r["b"], r["opt"], r["precision"]) == (row["b"], row["opt"], row["precision"])), None)
    result = f"plain PyTorch {ips:,.0f} images/s ({out['result']})"
    if engine:
        result += f"; the engine {engine['images_per_s']:,.0f} (its single-run row): engine / PyTorch {engine['images_per_s'] / ips:.2f}"
    return {"result": result}


def resume_setup(device, quick: bool):
    """The resume check's pack (two runs, augmentation, two epochs) and its data, the same in every process."""
    from peer import engine_data, engine_spec

    b, width, n = (16, 4, 48) if quick else (32, 16, 512)
    runs = [{"run_id": f"r{s}", "spec": {**engine_spec("resnet9", width, b, "adam", seed=s, augment=True), "epochs": 2}} for s in (0, 1)]
    return runs, engine_data(n, 48, device), math.ceil(n / b)


def strip_records(records: list[dict]) -> str:
    return json.dumps([{k: v for k, v in r.items() if k not in ("wall_seconds", "env")} for r in records], sort_keys=True)


REFUSED = "does not have a deterministic implementation"  # torch's warning for such an op under warn_only


@contextlib.contextmanager
def deterministic_ops(refused: set[str]):
    """Run the block under ``torch.use_deterministic_algorithms(True, warn_only=True)``: an op with
    no deterministic implementation on this device warns instead of failing, and its name (the
    warning's first words) goes into ``refused``, so one run names every such op."""
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        torch.use_deterministic_algorithms(False)
        refused.update(str(w.message).split(REFUSED)[0].strip() for w in caught if REFUSED in str(w.message))


def resume_child(mode: str, folder: Path, quick: bool) -> int:
    """One process of the resume check, under :func:`deterministic_ops` (the ops that refused go to
    ``refused-<mode>.json``): ``stop`` trains until SIGTERM mid-epoch 2 (the trainer's own handler
    saves the checkpoint); ``resume`` resumes from it and writes its records."""
    refused: set[str] = set()
    try:
        with deterministic_ops(refused):
            return _resume_child(mode, folder, quick)
    finally:
        (folder / f"refused-{mode}.json").write_text(json.dumps(sorted(refused)))


def _resume_child(mode: str, folder: Path, quick: bool) -> int:
    import torch

    from initmem.engine.loop import Preempted, install_stop_handlers
    from initmem.engine.packed import train_packed

    device = setup_device(quick)
    runs, data, steps = resume_setup(device, quick)
    ckpt = folder / "pack.ckpt"
    if mode == "resume":
        (folder / "resumed.json").write_text(strip_records(train_packed(runs, data, device=device, checkpoint=ckpt, log=None)))
        return 0
    install_stop_handlers()
    original, calls = torch.Tensor.backward, {"n": 0}

    def counting_backward(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == steps + 2:  # the second step of epoch 2
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, *args, **kwargs)

    torch.Tensor.backward = counting_backward
    try:
        train_packed(runs, data, device=device, checkpoint=ckpt, log=None)
    except Preempted:
        return 0 if ckpt.exists() else 4
    finally:
        torch.Tensor.backward = original
    return 3  # SIGTERM did not stop the pack


def measure_resume(device, quick: bool) -> dict:
    """Resume bit-identity, every process under :func:`deterministic_ops`, and the ops that refused."""
    from initmem.engine.packed import train_packed

    runs, data, _ = resume_setup(device, quick)
    refused: set[str] = set()
    with deterministic_ops(refused):
        reference = strip_records(train_packed(runs, data, device=device, log=None))
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("stop", "resume"):
            args = [sys.executable, __file__, "--resume-child", mode, "--out", tmp] + (["--quick"] if quick else [])
            proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
            if (Path(tmp) / f"refused-{mode}.json").exists():
                refused.update(json.loads((Path(tmp) / f"refused-{mode}.json").read_text()))
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:160]
                return {"result": f"FAILED: the {mode} process exited {proc.returncode}: {tail}", "refused": sorted(refused)}
        same = (Path(tmp) / "resumed.json").read_text() == reference
    ops = (f"ops with no deterministic implementation on {device.type}: {', '.join(sorted(refused))}" if refused
           else "no op refused")
    return {"result": f"resume on {device.type}: a pack stopped by SIGTERM mid-epoch 2 and resumed in another process is "
                      f"{'bit-identical' if same else 'NOT bit-identical'} to an uninterrupted one; under "
                      f"torch.use_deterministic_algorithms(True): {ops}", "refused": sorted(refused)}


def measure_tf32(device) -> dict:
    from initmem.engine.device import tf32_check, tf32_summary

    return {"result": tf32_summary(tf32_check(device)).replace("\n", " / ")}


def versions(device) -> dict:
    import numpy
    import torch

    parts = [f"python {platform.python_version()}", f"torch {torch.__version__}", f"numpy {numpy.__version__}"]
    if device.type == "cuda":
        from initmem.engine.device import driver_version

        p = torch.cuda.get_device_properties(device)
        parts = [f"{p.name} ({p.total_memory / 2**30:.0f} GiB, sm {p.major}.{p.minor})", f"driver {driver_version()}",
                 f"CUDA {torch.version.cuda}", f"cuDNN {torch.backends.cudnn.version()}"] + parts
    else:
        parts = [f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"] + parts
    return {"result": ", ".join(parts)}


def measure(row: dict, device, quick: bool, rows: list[dict], pool) -> dict:
    kind = row["kind"]
    if kind == "versions":
        return versions(device)
    if kind == "matmul":
        return matmul_peak(device, row["precision"], quick)
    if kind == "train":
        return measure_train(row, device, quick, pool, rows)
    if kind == "epoch":
        return measure_epoch(row, device, rows, pool)
    if kind == "peer":
        return measure_peer(row, device, quick, rows)
    if kind == "resume":
        return measure_resume(device, quick)
    if kind == "tf32":
        return measure_tf32(device)
    raise ValueError(f"unknown row kind {kind!r}")


# --- outputs ----------------------------------------------------------------------------------


def table_text(rows: list[dict], header: str, quick: bool) -> str:
    lines = [f"# Device check ({'quick, CPU' if quick else 'GPU'})", "", header,
             f"`python benchmarks/device_check.py{' --quick' if quick else ''}`: {time.perf_counter() - STARTED:.0f} s so far", "",
             "| # | row | precision | expected s | took s | images/s per job | images/s per run | result |",
             "|---:|---|---|---:|---:|---:|---:|---|"]
    for i, r in enumerate(rows, 1):
        ips = r.get("images_per_s")
        job, per_run = (f"{ips:,.0f}", f"{ips / r['pack']:,.0f}") if ips else ("", "")
        took = f"{r['took_s']:.1f}" if "took_s" in r else ""
        lines.append(f"| {i} | {describe_row(r)} | {r.get('precision') or ''} | {r['expected_s']:.1f} | {took} | {job} | {per_run} | "
                     f"{r.get('result', r.get('note', 'not run yet'))} |")
    return "\n".join(lines) + "\n"


def software_versions() -> dict[str, str]:
    """The torch, CUDA and cuDNN this check measures with (rates.csv's version columns)."""
    import torch

    return {"torch": torch.__version__, "cuda": torch.version.cuda or "", "cudnn": str(torch.backends.cudnn.version() or "")}


def rates_text(rows: list[dict], device_name: str, software: dict[str, str] | None = None) -> str:
    """rates.csv: per key the slowest optimizer of a family; the trainer's default settings only
    (deterministic cuDNN, NCHW); each row names the GPU and the torch, CUDA and cuDNN versions
    (``software``, default :func:`software_versions`), which ``estimate`` compares with its own."""
    from initmem.costs.rates import COLUMNS, COMPILE_LABELS, ENVIRONMENT_COLUMNS, family

    software = software_versions() if software is None else software

    slowest: dict[tuple, float] = {}
    for r in rows:
        if r["kind"] != "train" or not r.get("images_per_s") or r.get("cudnn") or r.get("memory_format"):
            continue
        key = (r["arch"], r["width"], r["b"], family(r["opt"]), r["pack"], r["precision"], COMPILE_LABELS[r["compile"]])
        slowest[key] = min(slowest.get(key, math.inf), r["images_per_s"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS + ("compile", *ENVIRONMENT_COLUMNS))
    for key, ips in slowest.items():
        w.writerow((*key[:6], f"{ips:.1f}", key[6], device_name, *(software.get(c, "") for c in ENVIRONMENT_COLUMNS[1:])))
    return buf.getvalue()


def write_outputs(out: Path, rows: list[dict], header: str, quick: bool, device_name: str) -> None:
    """Both files, each replaced atomically (a reader or a timeout never sees half of one)."""
    from initmem.io import atomic_path

    for name, text in (("device_check.md", table_text(rows, header, quick)), ("rates.csv", rates_text(rows, device_name))):
        with atomic_path(out / name) as tmp:
            tmp.write_text(text)


def setup_device(quick: bool):
    import torch

    torch.set_num_threads(1 if quick else max(1, min(4, os.cpu_count() or 1)))
    device = torch.device("cpu" if quick else "cuda:0")
    if device.type == "cuda":
        from initmem.engine.device import configure_determinism

        configure_determinism(device)
    return device


def run(args: argparse.Namespace) -> int:
    try:
        import numpy  # noqa: F401
        import torch
    except ImportError as exc:
        print(f"device_check: needs torch and numpy in this Python ({sys.executable}): {exc}", file=sys.stderr)
        return 2
    if tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) < (2, 6):
        print(f"device_check: needs torch >= 2.6, this Python ({sys.executable}) has {torch.__version__}", file=sys.stderr)
        return 2
    if not args.quick and not torch.cuda.is_available():
        from initmem.engine.device import cuda_diagnosis, driver_version, gpu_assignment

        print(f"device_check: no usable CUDA: {cuda_diagnosis(driver_version(), torch.version.cuda, gpu_assignment())} "
              "(--quick runs the CPU check)", file=sys.stderr)
        return 2
    from peer import random_data

    device = setup_device(args.quick)
    source, where = planner_shapes()
    rows, _ = plan_rows(args.quick, source)
    budget = args.budget if args.budget is not None else (300 if args.quick else BUDGET_S)
    pool = random_data(6_000 if args.quick else 61_000, device)  # views of it feed every training row
    out = Path(args.out)
    name = "cpu" if device.type == "cpu" else torch.cuda.get_device_name(device)
    header = f"Shapes from {where}; budget {budget:.0f} s; expected seconds are estimates for one H200."
    write_outputs(out, rows, header, args.quick, name)
    spent_expected = spent_actual = 0.0
    for i, row in enumerate(rows, 1):
        elapsed = time.perf_counter() - STARTED
        slowdown = spent_actual / spent_expected if spent_expected else 1.0
        if not selected(row, args.only):
            row["note"] = "not selected (--only)"
        elif row["kind"] not in CORRECTNESS and not fits(row["expected_s"], elapsed, budget, slowdown):
            row["note"] = f"skipped: budget (~{row['expected_s'] * max(1.0, slowdown):.0f} s expected, {budget - elapsed:.0f} s left)"
        else:
            start = time.perf_counter()
            try:
                row.update(measure(row, device, args.quick, rows, pool))
            except Exception as exc:  # e.g. out of memory: the table says so and the check goes on
                row["result"] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            row["took_s"] = time.perf_counter() - start
            if row["kind"] not in CORRECTNESS:  # the budget's pace is the timed rows' (the correctness rows start processes)
                spent_expected, spent_actual = spent_expected + row["expected_s"], spent_actual + row["took_s"]
        write_outputs(out, rows, header, args.quick, name)
        print(json.dumps({k: v for k, v in row.items() if k != "data"}), flush=True)
        if row.get("refused"):
            print(f"device_check: row {i} ({describe_row(row)}, {row['precision']}) refused: {row['refused']}", flush=True)
    print(f"wrote {out / 'device_check.md'} and {out / 'rates.csv'} in {time.perf_counter() - STARTED:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", action="store_true", help="print the rows and their expected seconds, measure nothing")
    parser.add_argument("--quick", action="store_true", help="CPU, tiny models, seconds: the CI check of this script")
    parser.add_argument("--out", default=str(HERE / "device_check"))
    parser.add_argument("--budget", type=float, help=f"seconds for the whole check (default {BUDGET_S}; quick: 300)")
    parser.add_argument("--only", type=lambda v: set(v.split(",")), metavar="GROUPS",
                        help=f"measure only these row groups, comma-separated: {', '.join(ROW_GROUPS)} (e.g. to rerun one that failed)")
    parser.add_argument("--write-shapes", action="store_true", help=f"write {SHAPES_FILE.name} from the planner (needs PyYAML and jsonschema)")
    parser.add_argument("--resume-child", choices=("stop", "resume"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.only and args.only - set(ROW_GROUPS):
        parser.error(f"--only: unknown row group(s) {', '.join(sorted(args.only - set(ROW_GROUPS)))}; choose from {', '.join(ROW_GROUPS)}")
    if args.resume_child:
        return resume_child(args.resume_child, Path(args.out), args.quick)
    if args.write_shapes:
        from initmem.io import write_json

        source, where = planner_shapes()
        if where.startswith(str(SHAPES_FILE.relative_to(ROOT))):
            print(f"device_check: --write-shapes needs the planner; {where}", file=sys.stderr)
            return 2
        write_json(SHAPES_FILE, source)
        print(f"wrote {SHAPES_FILE}")
        return 0
    if args.plan:
        source, where = planner_shapes()
        print_plan(*plan_rows(args.quick, source), where)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
