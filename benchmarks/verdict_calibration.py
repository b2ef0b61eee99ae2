"""The verdict rules' error rates, measured: known truths simulated at each committed tier's design and
at the paper's, read by the claims table's own rule functions.

Every entry of :data:`RULES` names a function ``module:function(design, n_sims, rng_seed) -> list[dict]``
returning rows with the keys of :data:`initmem.planner.calibration.ROW_KEYS`; this script collects them, prints one
Markdown table per design and checks the bars: false ``reproduced`` (for the collapse also a ``partly
tested`` whose tested part is against the truth) <= 5% under every truth against the claim and false
``not reproduced`` <= 5% under every truth for it, each by a one-sided exact binomial test at 5% of
"rate <= 5%" (scipy's ``binomtest``; the table states each rate's 95% Clopper-Pearson upper bound),
and coverage >= 93% (2 Monte Carlo standard errors of margin) where a 95% interval is stated.

    PYTHONPATH=workflow .venv/bin/python benchmarks/verdict_calibration.py > benchmarks/verdict_calibration.md
    PYTHONPATH=workflow .venv/bin/python benchmarks/verdict_calibration.py --quick    # a few sims: the tests' subset
    ... --rules initmem.planner.calibration:spread_rows                                 # some rules only
    ... --designs selected-tier selected-tier-ar1 > benchmarks/verdict_calibration_selected.md   # some designs only

Exit status 1 when a bar fails.
"""

from __future__ import annotations

import argparse
import importlib
import math
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import pandas as pd
from scipy import stats

from initmem import tiers

DESIGNS = ("small-tier", "clocks-tier", "decisive-tier", "paper")
SELECTED = "selected-tier"   # its curves also with the run noise persisting along epochs (AR(1): "-ar1")
# rule rows (module:function) -> (designs it is calibrated at, simulations per truth in the full run)
RULES = {
    "initmem.planner.calibration:spread_rows": ((*DESIGNS, SELECTED), 4000),
    "initmem.planner.calibration:gone_rows": ((*DESIGNS, "regime-tier", SELECTED), 4000),
    "initmem.planner.calibration:wash_out_rows": ((*DESIGNS, SELECTED), 4000),
    "initmem.planner.calibration:flat_edge_rows": ((SELECTED, SELECTED + "-ar1", SELECTED + "-offset", SELECTED + "-t3", "decisive-tier"), 400),
    "initmem.planner.calibration:shape_rows": ((*DESIGNS, SELECTED, SELECTED + "-ar1"), 200),
    # the tiers with the role "collapse-calibration" (initmem.tiers: the clocks and decisive tiers) and the paper
    "initmem.planner.collapse_calibration:calibration_rows": ((*(t.name for t in tiers.with_role("collapse-calibration")), "paper"), 200),
}
QUICK_SIMS = {"initmem.planner.calibration:spread_rows": 250, "initmem.planner.calibration:gone_rows": 250,
              "initmem.planner.calibration:wash_out_rows": 250, "initmem.planner.calibration:flat_edge_rows": 12,
              "initmem.planner.calibration:shape_rows": 12,
              "initmem.planner.collapse_calibration:calibration_rows": 10}
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


def collect(quick: bool = False, modules: dict | None = None, jobs: int = 1, only: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every rule entry's rows at each of its designs (``only``: those designs alone; ``jobs`` processes;
    the rows and their random numbers are the same for any number: each (rule, design) starts from RNG_SEED)."""
    tasks = [(name, design, QUICK_SIMS[name] if quick else n_sims, part) for name, (designs, n_sims) in (modules or RULES).items()
             for design in designs if only is None or design in only for part in _parts(name, design)]
    start, parts = time.perf_counter(), [None] * len(tasks)

    def done(i: int) -> None:  # progress on stderr: the full run takes tens of minutes
        name, design, _, part = tasks[i]
        print(f"{sum(p is not None for p in parts)}/{len(tasks)} done after {time.perf_counter() - start:.0f} s: "
              f"{name.rpartition(':')[2]} at {part or design}", file=sys.stderr, flush=True)

    if jobs > 1:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_calibrate, *t): i for i, t in enumerate(tasks)}
            for future in as_completed(futures):
                parts[futures[future]] = future.result()
                done(futures[future])
    else:
        for i, t in enumerate(tasks):
            parts[i] = _calibrate(*t)
            done(i)
    return pd.DataFrame([row for part in parts for row in part])


def exceed_p(rate: float, n: int, bar: float = FALSE_MAX) -> float:
    """The one-sided exact binomial p-value of "the true rate exceeds ``bar``" for ``rate`` observed in
    ``n`` simulations (1 where nothing was observed)."""
    if pd.isna(rate):
        return 1.0
    return float(stats.binomtest(round(rate * n), n, bar, alternative="greater").pvalue)


def upper_bound(rate: float, n: int) -> float:
    """The one-sided 95% Clopper-Pearson upper bound of a rate observed in ``n`` simulations."""
    return math.nan if pd.isna(rate) else float(stats.binomtest(round(rate * n), n).proportion_ci(0.90, "exact").high)


def failures(table: pd.DataFrame) -> pd.DataFrame:
    """Rows that fail a bar: false ``reproduced`` or false ``not reproduced`` above 5% by the one-sided
    exact binomial test (:func:`exceed_p`), Holm-adjusted at 5% across every rate of the table (a rule
    exactly at 5%, as the two-sided single-spread test is under its null, would otherwise fail one row in
    twenty by chance); coverage below 93% - 2 Monte Carlo standard errors."""
    from statsmodels.stats.multitest import multipletests

    n = table["n_sims"].astype(int)
    p = [exceed_p(v, k) for col in ("false_reproduced", "false_not_reproduced") for v, k in zip(table[col], n, strict=True)]
    reject = multipletests(p, alpha=0.05, method="holm")[0] if p else []
    false_bad = pd.Series(reject[: len(table)], index=table.index) | pd.Series(reject[len(table):], index=table.index)
    cov_bad = table["coverage"] < COVERAGE_MIN - n.map(lambda k: margin(1 - COVERAGE_MIN, k))
    return table[false_bad | cov_bad.fillna(False)]


def _pct(v: float) -> str:
    return "" if pd.isna(v) else f"{100 * v:.1f}%"


def _bounded(v: float, n: int) -> str:
    return "" if pd.isna(v) else f"{100 * v:.1f}% (<= {100 * upper_bound(v, n):.1f}%)"


def markdown(table: pd.DataFrame, seconds: float, command: str, left_out: list[str] = (), jobs: int = 1) -> str:
    cores = "one core" if jobs == 1 else f"{jobs} processes"
    out = ["# Verdict calibration\n",
           f"`{command}` ({seconds:.0f} s wall, {cores}). Known truths simulated at each design and read by the claims table's "
           "own rules (`initmem.planner.calibration`, and the collapse rule's `initmem.planner.collapse_calibration.calibration_rows`). "
           "`false reproduced`: share of `reproduced` where the truth is against the claim; `false not reproduced`: share "
           "of `not reproduced` where it is for it (a truth on the rule's boundary, as a spread of exactly 1 pp against the zone "
           "[0, 1 pp) the words call gone, states both: either word is false there); `coverage`: share of stated 95% intervals holding the true value (blank: "
           "no true value to cover, or, for the collapse, a true clock beyond those it can search: its configurations' curves "
           "do not overlap there); `decision`: `reproduced` or `not reproduced`; `partly tested` (the collapse): the share of "
           "that word, the most a design can say when it identifies only some exponents; `kind` (the collapse): `paper`, "
           "`within` the margin, `unseen` (the paper's clock in what the design identifies, another in what it does not: "
           "`reproduced` is false there, `partly tested` is not) or `against`. A collapse truth's false `reproduced` counts "
           "`partly tested` too where the truth is `against`. `(<= x)`: the rate's one-sided 95% Clopper-Pearson upper bound. "
           f"Bars: false `reproduced` and false `not reproduced` <= {FALSE_MAX:.0%}, failed only where a one-sided exact "
           "binomial test says the rate exceeds it, Holm-adjusted at 5% across every rate of the table (a rule exactly at "
           f"5%, as the two-sided single-spread test is under its null, would fail one row in twenty by chance); coverage >= "
           f"{COVERAGE_MIN:.0%} with a 2-standard-error Monte Carlo margin.\n"]
    if left_out:
        out.append(f"Not calibrated in this run (`--rules`): {', '.join(f'`{m}`' for m in left_out)}.\n")
    for design, g in table.groupby("design", sort=False):
        collapse = "partly_tested" in g and g["partly_tested"].notna().any()
        extra = (" partly tested | kind |", "---|---|") if collapse else ("", "")
        out += [f"## {design}\n", f"| rule | truth | sims | false reproduced | false not reproduced | coverage | decision |{extra[0]}",
                f"|---|---|---|---|---|---|---|{extra[1]}"]
        for r in g.itertuples():
            more = f" {_pct(r.partly_tested)} | {r.kind} |" if collapse else ""
            out.append(f"| {r.rule} | {r.truth} | {r.n_sims} | {_bounded(r.false_reproduced, r.n_sims)} | "
                       f"{_bounded(r.false_not_reproduced, r.n_sims)} | {_pct(r.coverage)} | {_pct(r.decision_rate)} |{more}")
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
    parser.add_argument("--csv", help="also write the rows as CSV (the rates unrounded) to this path")
    every = sorted({d for designs, _ in RULES.values() for d in designs})
    parser.add_argument("--designs", nargs="+", choices=every, help="designs to calibrate at (default: each rule's own)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = collect(quick=args.quick, modules={k: RULES[k] for k in args.rules}, jobs=args.jobs, only=tuple(args.designs) if args.designs else None)
    if args.csv:
        table.to_csv(args.csv, index=False)
    command = ("PYTHONPATH=workflow .venv/bin/python benchmarks/verdict_calibration.py" + (" --quick" if args.quick else "")
               + (f" --jobs {args.jobs}" if args.jobs > 1 else "")
               + ("" if args.rules == list(RULES) else " --rules " + " ".join(args.rules))
               + (" --designs " + " ".join(args.designs) if args.designs else ""))
    sys.stdout.write(markdown(table, time.perf_counter() - start, command, [m for m in RULES if m not in args.rules], args.jobs))
    return 1 if not failures(table).empty else 0


if __name__ == "__main__":
    sys.exit(main())
