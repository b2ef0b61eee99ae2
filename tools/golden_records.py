"""Golden records: one tiny fixed-seed run per optimizer and per architecture the registries declare,
trained on the CPU, with its numbers pinned in ``tests/fixtures/golden_records.json`` beside the
trainer's version (:func:`initmem.pipeline.identity.trainer_version`).

``tests/test_golden_records.py`` trains them again and compares, so "this code computes the same
numbers as that version" (:data:`initmem.pipeline.identity.SAME_NUMBERS_AS`) is checked, not declared:
an entry there maps the new code onto the pinned version, whose numbers the new code must reproduce.

    PYTHONPATH=workflow .venv/bin/python tools/golden_records.py           # compare; exit 1 on a difference
    PYTHONPATH=workflow .venv/bin/python tools/golden_records.py --write   # pin new or moved records

Run ``--write`` only after a change that is meant to change numbers (it also changes every run's key,
so the runs train again), or after adding an optimizer or architecture file. It keeps every pinned
record the code still reproduces, and pins nothing unless every record is the same on every CPU
vector path (``ATEN_CPU_CAPABILITY`` default, avx2 and the machine's own) and with 1 and 2 threads.

Which tolerance holds, and why: the runs train in float64, and each number of the record's history and
summary must agree with the pinned one to :data:`RTOL` (relative). Another vector path or thread count
sums in another order, which moves a float64 run's numbers by at most ~5e-11 (measured: 1 against 2
threads, and the three vector paths on an AVX-512 machine), while an edit of what the code computes
moves them far more (in float32 the same reordering moves them in the fourth digit, so no float32
records). That holds only for arithmetic that is continuous in its inputs: a rule that steps by the
*sign* of a quantity (Lion) turns a rounding difference at a coordinate near zero into a full step.
So every ``sign`` a case takes must see its nonzero coordinates at least :data:`SIGN_MARGIN` times the
largest (:func:`sign_margin`): float64 rounds a sum of n terms at ~n * 1.1e-16 of them, so 1e-12 leaves
room for 1e4 terms as large as the largest coordinate, and excludes the cancellation residues (~1e-19).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINNED = ROOT / "tests" / "fixtures" / "golden_records.json"
DIGITS = 12  # kept in the pinned file
RTOL = 1e-7
SIGN_MARGIN = 1e-12  # BatchNorm's cancellation residues sit at ~1e-19; a sum of 1e4 terms as large as the largest rounds at ~1e-12
DATA = {"source": "synthetic", "n_train": 96, "n_val": 48, "n_test": 48}
BASE = dict(arch="resnet9", width=4, norm="batchnorm", pool="max", optimizer="sgd", lr=0.01, schedule="cosine", alpha=0.01,
            epochs=2, batch_size=32, l2=1e-4, weight_decay=None, momentum=None, augment=False, patience=None, sigma_w=1.5,
            seed=3, variant=None, n_train=96, n_val=48, n_test=48)
# Where a case needs more than its entry's name. Lion: under BatchNorm a conv's bias has an exactly zero
# gradient (the batch mean removes it), so what the code computes there is rounding residue (~1e-20 of the
# largest coordinate), whose sign Lion follows with a full step; LayerNorm (over the channels at each
# position) leaves every bias a gradient of its own, the smallest 3e-10 of the largest (sign_margin).
CASE_SETTINGS = {"optimizer=lion": {"norm": "layernorm"}}
# The CPU variants every record must agree across: (ATEN_CPU_CAPABILITY, threads); None = the machine's own.
VARIANTS = ((None, 1), ("default", 1), ("avx2", 1), (None, 2))


def cases() -> dict[str, dict]:
    """Name -> spec overrides: every optimizer on ResNet-9, every architecture with SGD."""
    from initmem.spec import entry_names

    out = {f"optimizer={o}": {"optimizer": o} for o in entry_names("optimizer")}
    out |= {f"arch={a}": {"arch": a} for a in entry_names("arch") if a != BASE["arch"]}
    return {name: overrides | CASE_SETTINGS.get(name, {}) for name, overrides in out.items()}


def _rounded(x):
    if isinstance(x, float):
        return x if not math.isfinite(x) or x == 0 else float(f"{x:.{DIGITS - 1}e}")
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in sorted(x.items())}
    return x


def record_numbers(overrides: dict, threads: int = 1) -> dict:
    """The rounded history and summary of one tiny run in float64 (``threads`` CPU threads, the trainer's own seeding)."""
    import torch

    from initmem.engine.data import build_splits
    from initmem.engine.streams import Tensors
    from initmem.engine.train import train_run
    from initmem.spec import resolve_spec

    torch.set_num_threads(threads)
    data = Tensors.from_splits(build_splits(DATA), torch.device("cpu"))
    data = dataclasses.replace(data, **{k: getattr(data, k).double() for k in ("x_train", "x_val", "x_test")})
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the weights too: the code's arithmetic, not float32's rounding
    try:
        record = train_run(resolve_spec(BASE | overrides), data, "golden", log=None)
    finally:
        torch.set_default_dtype(default)
    return _rounded({"history": record["history"], "summary": record["summary"]})


@contextlib.contextmanager
def _watching_sign(seen: list[float]) -> Iterator[None]:
    """While open, every ``torch.sign`` / ``Tensor.sign`` appends the smallest nonzero |x| over the largest to ``seen``."""
    import torch

    def margin(x: torch.Tensor) -> None:
        a = x.detach().abs()
        nonzero = a[a > 0]
        if nonzero.numel():
            seen.append((nonzero.min() / nonzero.max()).item())

    originals = torch.sign, torch.Tensor.sign

    def sign(x, *args, **kwargs):
        margin(x)
        return originals[0](x, *args, **kwargs)

    def tensor_sign(self, *args, **kwargs):
        margin(self)
        return originals[1](self, *args, **kwargs)

    torch.sign, torch.Tensor.sign = sign, tensor_sign
    try:
        yield
    finally:
        torch.sign, torch.Tensor.sign = originals


def recorded_with_margin(overrides: dict, threads: int = 1) -> tuple[dict, float | None]:
    """:func:`record_numbers` of a case and its sign margin: the smallest nonzero coordinate over the
    largest, over every ``sign`` its run takes (None: it takes none)."""
    seen: list[float] = []
    with _watching_sign(seen):
        record = record_numbers(overrides, threads)
    return record, (min(seen) if seen else None)


def sign_margin(overrides: dict) -> float | None:
    """The sign margin of a case's run (:func:`recorded_with_margin`)."""
    return recorded_with_margin(overrides)[1]


def sign_problems(margins: dict[str, float | None]) -> list[str]:
    """Cases whose sign-taking steps see a coordinate within rounding reach of zero (margins by case, as
    :func:`current` measures them), one line each."""
    return [f"{name}: a sign step sees a coordinate {m:.1e} of the largest (below {SIGN_MARGIN:g}): its record "
            f"depends on rounding; give the case a setting without exact cancellations (CASE_SETTINGS)"
            for name, m in margins.items() if m is not None and m < SIGN_MARGIN]


def current(threads: int = 1, margins: dict[str, float | None] | None = None) -> dict:
    """The current code's records: its trainer version and, per case, the rounded history and summary;
    ``margins``, where given, receives each case's :func:`sign_margin` from the same run."""
    from initmem.pipeline.identity import trainer_version

    records = {}
    for name, overrides in cases().items():
        if margins is None:
            records[name] = record_numbers(overrides, threads)
        else:
            records[name], margins[name] = recorded_with_margin(overrides, threads)
    return {"trainer_version": trainer_version(), "rtol": RTOL, "records": records}


def variant_name(capability: str | None, threads: int) -> str:
    return f"ATEN_CPU_CAPABILITY={capability or 'own'}, {threads} thread{'s' * (threads > 1)}"


def records_across(variants=VARIANTS) -> dict[str, dict]:
    """:func:`current` under each (vector path, threads) variant, each in its own process (the vector
    path is chosen when torch loads), all started at once: variant name -> records."""
    procs = {}
    for capability, threads in variants:
        env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "workflow"), os.environ.get("PYTHONPATH")]))}
        env.pop("ATEN_CPU_CAPABILITY", None)
        if capability:
            env["ATEN_CPU_CAPABILITY"] = capability
        procs[variant_name(capability, threads)] = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--print", "--threads", str(threads)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"golden records under {name} failed (exit {proc.returncode}): {stderr.strip()[-2000:]}")
        out[name] = json.loads(stdout)
    return out


def _numbers(rec: dict, prefix: str = "") -> dict[str, object]:
    """``history.train_loss[1]`` -> value: every number of a record, by where it stands."""
    out: dict[str, object] = {}
    for key, value in rec.items():
        if isinstance(value, dict):
            out |= _numbers(value, f"{prefix}{key}.")
        elif isinstance(value, list):
            out |= {f"{prefix}{key}[{i}]": v for i, v in enumerate(value)}
        else:
            out[f"{prefix}{key}"] = value
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-300)
    return a == b


def moved_numbers(pinned_record: dict, record: dict) -> list[str]:
    """Where two records differ beyond :data:`RTOL`, by where each number stands."""
    was, got = _numbers(pinned_record), _numbers(record)
    return [k for k in sorted(set(was) | set(got)) if not _same(was.get(k), got.get(k))]


def differences(pinned: dict, now: dict) -> list[str]:
    """What differs between the pinned records and the current code's, one line each (empty: the same numbers)."""
    out = []
    if pinned.get("trainer_version") != now["trainer_version"]:
        out.append(f"the trainer's version is {now['trainer_version']}, the golden records were pinned for "
                   f"{pinned.get('trainer_version')}")
    for name, rec in now["records"].items():
        old = pinned.get("records", {}).get(name)
        if old is None:
            out.append(f"{name}: no golden record pinned")
            continue
        moved = moved_numbers(old, rec)
        if moved:
            got, was = _numbers(rec), _numbers(old)
            out.append(f"{name}: {len(moved)} of {len(got)} numbers differ, first {moved[0]} = {got.get(moved[0])} (pinned {was.get(moved[0])})")
    out += [f"{name}: pinned, but no such optimizer or architecture file" for name in pinned.get("records", {}) if name not in now["records"]]
    return out


def cpu_dependence(across: dict[str, dict]) -> list[str]:
    """Records that differ between the CPU variants of :func:`records_across`, one line each."""
    (first, reference), *others = across.items()
    return [f"{name}: {len(moved)} of {len(_numbers(rec))} numbers differ under {variant} from {first}, first {moved[0]}"
            for variant, now in others for name, rec in now["records"].items()
            if (moved := moved_numbers(reference["records"][name], rec))]


def to_pin(pinned: dict, now: dict) -> dict:
    """The file ``--write`` pins: the pinned records the code still reproduces, kept as they are (another
    CPU's last digits are no change), and the current code's for the rest; none for a removed file."""
    if pinned.get("trainer_version") != now["trainer_version"]:
        return now
    old = pinned.get("records", {})
    records = {name: old[name] if name in old and not moved_numbers(old[name], rec) else rec for name, rec in now["records"].items()}
    return now | {"records": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"pin new or moved records in {PINNED.relative_to(ROOT)}")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    parser.add_argument("--print", action="store_true", help="print the current code's records as JSON, compare nothing")
    args = parser.parse_args(argv)
    if args.print:
        print(json.dumps(current(args.threads)))
        return 0
    pinned = json.loads(PINNED.read_text()) if PINNED.is_file() else {}
    if args.write:
        margins: dict[str, float | None] = {}
        now = current(margins=margins)
        across = {variant_name(None, 1): now} | records_across(VARIANTS[1:])
        refused = sign_problems(margins) + cpu_dependence(across)
        if refused:
            print("pinned nothing: a record must be the same on every CPU\n" + "\n".join(refused))
            return 1
        new = to_pin(pinned, now)
        from initmem.io import atomic_path

        with atomic_path(PINNED) as tmp:
            tmp.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
        changed = sorted(name for name, rec in new["records"].items() if pinned.get("records", {}).get(name) != rec)
        print(f"wrote {PINNED.relative_to(ROOT)}: {len(new['records'])} records at trainer version {new['trainer_version']}, "
              f"{len(changed)} new or moved{': ' + ', '.join(changed) if changed else ''} (the same on {len(across)} CPU variants)")
        return 0
    now = current(args.threads)
    found = differences(pinned, now)
    print("\n".join(found) if found else f"the same numbers: {len(now['records'])} records at trainer version {now['trainer_version']}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
