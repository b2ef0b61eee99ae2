"""The verdict rules' error rates, measured: known truths simulated at each committed tier's design and
at the paper's, read by the claims table's own rule functions.

Every entry of :data:`RULES` names a function ``module:function(design, n_sims, rng_seed) -> list[dict]``
returning rows with the keys of :data:`initmem.claims.calibration.ROW_KEYS`; this script collects them, prints one
Markdown table per design and checks the bars: false ``reproduced`` <= 5% under every null (plus the
Monte Carlo margin, 2 standard errors) and coverage >= 93% where a 95% interval is stated.

    PYTHONPATH=workflow .venv/bin/python benchmarks/verdict_calibration.py > benchmarks/verdict_calibration.md
    PYTHONPATH=workflow .venv/bin/python benchmarks/verdict_calibration.py --quick    # a few sims: the tests' subset
    ... --rules initmem.claims.calibration:spread_rows                                 # some rules only

Exit status 1 when a bar fails.
"""

from __future__ import annotations

import argparse
import importlib
import math
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

DESIGNS = ("small-tier", "clocks-tier", "decisive-tier", "paper")
# rule rows (module:function) -> (designs it is calibrated at, simulations per truth in the full run)
RULES = {
    "initmem.claims.calibration:spread_rows": (DESIGNS, 4000),
    "initmem.claims.calibration:shape_rows": (DESIGNS, 200),
    "initmem.claims.collapse_calibration:calibration_rows": (("clocks-tier", "decisive-tier", "paper"), 20),  # ~1 min a simulation at the paper design
}
QUICK_SIMS = {"initmem.claims.calibration:spread_rows": 250, "initmem.claims.calibration:shape_rows": 12,
              "initmem.claims.collapse_calibration:calibration_rows": 10}
RNG_SEED = 35
FALSE_MAX, COVERAGE_MIN = 0.05, 0.93


def margin(rate_bar: float, n: int) -> float:
    """Two Monte Carlo standard errors of a rate ``rate_bar`` estimated from ``n`` simulations."""
    return 2 * math.sqrt(rate_bar * (1 - rate_bar) / max(n, 1))


def _calibrate(name: str, design: str, n_sims: int, part: str | None = None) -> list[dict]:
    module, _, function = name.partition(":")
    calibrate = getattr(importlib.import_module(module), function)
    return calibrate(design, n_sims, RNG_SEED) if part is None else calibrate(design, n_sims, RNG_SEED, designs_of=[part])


def _parts(name: str, design: str) -> list[str | None]:
    """A collapse entry runs one task per simulated design (each has its own random stream), the rest one per design."""
    module = importlib.import_module(name.partition(":")[0])
    return module.design_names(design) if hasattr(module, "design_names") else [None]


def collect(quick: bool = False, modules: dict | None = None, jobs: int = 1) -> pd.DataFrame:
    """Every rule entry's rows at each of its designs (``jobs`` processes; the rows and their random
    numbers are the same for any number: each (rule, design) starts from RNG_SEED)."""
    tasks = [(name, design, QUICK_SIMS[name] if quick else n_sims, part) for name, (designs, n_sims) in (modules or RULES).items()
             for design in designs for part in _parts(name, design)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            parts = list(pool.map(_calibrate, *zip(*tasks, strict=True)))
    else:
        parts = [_calibrate(*t) for t in tasks]
    return pd.DataFrame([row for part in parts for row in part])


def failures(table: pd.DataFrame) -> pd.DataFrame:
    """Rows that fail a bar (false ``reproduced`` above 5% + margin, coverage below 93% - margin)."""
    n = table["n_sims"].astype(float)
    false_bad = table["false_reproduced"] > FALSE_MAX + n.map(lambda k: margin(FALSE_MAX, k))
    cov_bad = table["coverage"] < COVERAGE_MIN - n.map(lambda k: margin(1 - COVERAGE_MIN, k))
    return table[false_bad.fillna(False) | cov_bad.fillna(False)]


def _pct(v: float) -> str:
    return "" if pd.isna(v) else f"{100 * v:.1f}%"


def markdown(table: pd.DataFrame, seconds: float, command: str, left_out: list[str] = (), jobs: int = 1) -> str:
    cores = "one core" if jobs == 1 else f"{jobs} processes"
    out = ["# Verdict calibration\n",
           f"`{command}` ({seconds:.0f} s wall, {cores}). Known truths simulated at each design and read by the claims table's "
           "own rules (`initmem.claims.calibration`, and the collapse rule's `initmem.claims.collapse_calibration.calibration_rows`). "
           "`false reproduced`: share of `reproduced` where the truth is against the claim; `false not reproduced`: share "
           "of `not reproduced` where it is for it; `coverage`: share of stated 95% intervals holding the true value (blank: "
           "no true value to cover, or, for the collapse, a true clock beyond those it can search: its configurations' curves "
           "do not overlap there); `decision`: `reproduced` or `not reproduced`. Monte Carlo standard error of a rate p "
           "from n simulations: sqrt(p (1 - p) / n), e.g. 0.34 pp at 5% with 4,000 simulations, 1.5 pp with 200. Bars: false "
           f"`reproduced` <= {FALSE_MAX:.0%} under every null, coverage >= {COVERAGE_MIN:.0%} (each with a 2-standard-error "
           "Monte Carlo margin).\n"]
    if left_out:
        out.append(f"Not calibrated in this run (`--rules`): {', '.join(f'`{m}`' for m in left_out)}.\n")
    for design, g in table.groupby("design", sort=False):
        out += [f"## {design}\n", "| rule | truth | sims | false reproduced | false not reproduced | coverage | decision |",
                "|---|---|---|---|---|---|---|"]
        out += [f"| {r.rule} | {r.truth} | {r.n_sims} | {_pct(r.false_reproduced)} | {_pct(r.false_not_reproduced)} | "
                f"{_pct(r.coverage)} | {_pct(r.decision_rate)} |" for r in g.itertuples()]
        out.append("")
    bad = failures(table)
    out += ["## Bars\n", "Every row meets the bars." if bad.empty else
            "Rows that fail a bar:\n\n" + "\n".join(f"- {r.rule}, {r.design}, {r.truth}" for r in bad.itertuples())]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few simulations per truth (the tests' subset)")
    parser.add_argument("--rules", nargs="+", choices=list(RULES), default=list(RULES), help="rule entries to calibrate (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1); the table is the same for any number")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = collect(quick=args.quick, modules={k: RULES[k] for k in args.rules}, jobs=args.jobs)
    command = ("PYTHONPATH=workflow .venv/bin/python benchmarks/verdict_calibration.py" + (" --quick" if args.quick else "")
               + (f" --jobs {args.jobs}" if args.jobs > 1 else "")
               + ("" if args.rules == list(RULES) else " --rules " + " ".join(args.rules)))
    sys.stdout.write(markdown(table, time.perf_counter() - start, command, [m for m in RULES if m not in args.rules], args.jobs))
    return 1 if not failures(table).empty else 0


if __name__ == "__main__":
    sys.exit(main())
