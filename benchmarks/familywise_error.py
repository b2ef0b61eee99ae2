"""The familywise error of the regime tier's directional rows after Holm, measured with every row at the
boundary of its side (where either decision is false), under run noise independent from epoch to epoch
and under noise that persists along a run (:mod:`initmem.planner.familywise`).

    PYTHONPATH=workflow .venv/bin/python benchmarks/familywise_error.py > benchmarks/familywise_error.md
    PYTHONPATH=workflow .venv/bin/python benchmarks/familywise_error.py --sims 100     # a quick look
"""

from __future__ import annotations

import argparse
import sys
import time

from scipy import stats

from initmem.planner import familywise as F
from initmem.stats.multiplicity import ALPHA

SIMS, RNG_SEED = 2000, 51


def interval(rate: float, n: int) -> str:
    """The rate with its two-sided 95% Clopper-Pearson interval."""
    ci = stats.binomtest(round(rate * n), n).proportion_ci(0.95, "exact")
    return f"{100 * rate:.1f}% [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"


def markdown(table, seconds: float, command: str) -> str:
    out = ["# Familywise error after Holm\n",
           f"`{command}` ({seconds:.0f} s wall, one core). Every tested row of `evidence/{F.TIER}` at the boundary of its side "
           "(so either decision is false) at that tier's design, read by the claims table's own functions: "
           f"{', '.join(f'`{r}`' for r in F.RULES)} (`initmem.planner.familywise` says which truth puts each on its boundary). "
           "`any decision`: the share of simulated tiers with at least one `reproduced` or `not reproduced`, by the intervals "
           f"alone and after Holm at {ALPHA:.1%} (`initmem.stats.multiplicity.holm` over each row's own test's p); "
           "[a, b]: the 95% Clopper-Pearson interval.\n",
           "| noise | sims | any decision, intervals alone | any decision after Holm |", "|---|---|---|---|"]
    for r in table.itertuples():
        out.append(f"| {r.noise} | {r.n_sims} | {interval(r.any_alone, r.n_sims)} | {interval(r.any_holm, r.n_sims)} |")
    out += ["", "Each row's share of decisions (intervals alone / after Holm):", "",
            "| noise | " + " | ".join(f"`{c}`" for c in F.RULES) + " |", "|---|" + "---|" * len(F.RULES)]
    for _, r in table.iterrows():
        out.append(f"| {r['noise']} | " + " | ".join(f"{100 * r[f'alone {c}']:.1f}% / {100 * r[f'holm {c}']:.1f}%" for c in F.RULES) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=SIMS, help=f"simulated tiers per noise model (default {SIMS})")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = F.familywise(args.sims, RNG_SEED)
    command = "PYTHONPATH=workflow .venv/bin/python benchmarks/familywise_error.py" + ("" if args.sims == SIMS else f" --sims {args.sims}")
    sys.stdout.write(markdown(table, time.perf_counter() - start, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
