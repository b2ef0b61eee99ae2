"""Golden records: one tiny fixed-seed run per optimizer and per architecture the registries declare,
trained on the CPU, with its numbers pinned in ``tests/fixtures/golden_records.json`` beside the
trainer's version (:func:`initmem.pipeline.identity.trainer_version`).

``tests/test_golden_records.py`` trains them again and compares, so "this code computes the same
numbers as that version" (:data:`initmem.pipeline.identity.SAME_NUMBERS_AS`) is checked, not declared:
an entry there maps the new code onto the pinned version, whose numbers the new code must reproduce.

    PYTHONPATH=workflow .venv/bin/python tools/golden_records.py           # compare; exit 1 on a difference
    PYTHONPATH=workflow .venv/bin/python tools/golden_records.py --write   # pin the current code's records

Run ``--write`` only after a change that is meant to change numbers (it also changes every run's key,
so the runs train again), or after adding an optimizer or architecture file.

The runs train in float64, and each number of the record's history and summary must agree with the
pinned one to :data:`RTOL`: in float32, another thread count (or CPU) moves a tiny run's numbers in
their fourth digit after six steps; in float64 by at most 5e-11 (measured: 1 against 2 threads), while
an edit of what the code computes moves them far more.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINNED = ROOT / "tests" / "fixtures" / "golden_records.json"
DIGITS = 12  # kept in the pinned file
RTOL = 1e-7
DATA = {"source": "synthetic", "n_train": 96, "n_val": 48, "n_test": 48}
BASE = dict(arch="resnet9", width=4, norm="batchnorm", pool="max", optimizer="sgd", lr=0.01, schedule="cosine", alpha=0.01,
            epochs=2, batch_size=32, l2=1e-4, weight_decay=None, momentum=None, augment=False, patience=None, sigma_w=1.5,
            seed=3, variant=None, n_train=96, n_val=48, n_test=48)


def cases() -> dict[str, dict]:
    """Name -> spec overrides: every optimizer on ResNet-9, every architecture with SGD."""
    from initmem.spec import entry_names

    out = {f"optimizer={o}": {"optimizer": o} for o in entry_names("optimizer")}
    return out | {f"arch={a}": {"arch": a} for a in entry_names("arch") if a != BASE["arch"]}


def _rounded(x):
    if isinstance(x, float):
        return x if not math.isfinite(x) or x == 0 else float(f"{x:.{DIGITS - 1}e}")
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in sorted(x.items())}
    return x


def record_numbers(overrides: dict) -> dict:
    """The rounded history and summary of one tiny run in float64 (one CPU thread, the trainer's own seeding)."""
    import torch

    from initmem.engine.data import build_splits
    from initmem.engine.streams import Tensors
    from initmem.engine.train import train_run
    from initmem.spec import resolve_spec

    torch.set_num_threads(1)
    data = Tensors.from_splits(build_splits(DATA), torch.device("cpu"))
    data = dataclasses.replace(data, **{k: getattr(data, k).double() for k in ("x_train", "x_val", "x_test")})
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the weights too: the code's arithmetic, not float32's rounding
    try:
        record = train_run(resolve_spec(BASE | overrides), data, "golden", log=None)
    finally:
        torch.set_default_dtype(default)
    return _rounded({"history": record["history"], "summary": record["summary"]})


def current() -> dict:
    """The current code's records: its trainer version and, per case, the rounded history and summary."""
    from initmem.pipeline.identity import trainer_version

    return {"trainer_version": trainer_version(), "rtol": RTOL, "records": {name: record_numbers(o) for name, o in cases().items()}}


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
        was, got = _numbers(old), _numbers(rec)
        moved = [k for k in sorted(set(was) | set(got)) if not _same(was.get(k), got.get(k))]
        if moved:
            out.append(f"{name}: {len(moved)} of {len(got)} numbers differ, first {moved[0]} = {got.get(moved[0])} (pinned {was.get(moved[0])})")
    out += [f"{name}: pinned, but no such optimizer or architecture file" for name in pinned.get("records", {}) if name not in now["records"]]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"pin the current code's records in {PINNED.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    now = current()
    if args.write:
        from initmem.io import atomic_path

        with atomic_path(PINNED) as tmp:
            tmp.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {PINNED.relative_to(ROOT)}: {len(now['records'])} records, trainer version {now['trainer_version']}")
        return 0
    found = differences(json.loads(PINNED.read_text()), now)
    print("\n".join(found) if found else f"the same numbers: {len(now['records'])} records at trainer version {now['trainer_version']}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
