"""Does bf16 change the paper's quantity? The selected tier retrained in bf16 beside its committed float32 runs.

The design, written before any bf16 run, is ``benchmarks/bf16_science/DESIGN.md``: the same 56 runs (seeds, data
order, evaluation), only ``compute.precision`` differs. Compared here:

1. per sigma_w and seed, the selected test accuracy (and tau_best) in both precisions;
2. per optimizer and sigma_w, the mean test accuracy bf16 minus float32 with a 95% Welch interval over the seeds
   (rounding decorrelates a run from its float32 twin at these lengths, so the two are independent samples);
3. per optimizer, the spread (max - min over sigma_w of the seed means) in both precisions and their difference with
   a 95% interval from the two delete-one-seed jackknife standard errors (normal, as a difference of two estimates);
4. every row of the claims table with a verdict (``initmem.claims.table.claims``) on each precision's runs: the same word or not.

Rule (stated before the runs): bf16 is within noise where every word of (4) is the same and every interval of (2) and
(3) holds 0. Seven seeds can show a difference, not prove there is none: the half-widths are the largest difference
that could hide within noise.

    PYTHONPATH=workflow .venv/bin/python benchmarks/bf16_science.py \\
        --bf16 results/selected-bf16/tables/studies > benchmarks/bf16_science.md
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from initmem.claims.table import claims

ROOT = Path(__file__).resolve().parents[1]
F32 = ROOT / "evidence" / "jpeg-cifar10-selected" / "tables"
LEVEL = 0.95


def load(folder: Path, prefix: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, history) of a tables folder: ``runs.csv``/``history.csv.gz`` or a study's ``<prefix>.runs.csv``/``.history.csv.gz``."""
    for runs, history in ((folder / "runs.csv", folder / "history.csv.gz"),
                          (folder / f"{prefix}.runs.csv", folder / f"{prefix}.history.csv.gz")):
        if runs.is_file():
            return pd.read_csv(runs), (pd.read_csv(history) if history.is_file() else pd.DataFrame())
    raise SystemExit(f"bf16_science: no runs table in {folder} (expected runs.csv or {prefix}.runs.csv): train the runs first "
                     "(the command in benchmarks/bf16_science/selected-bf16.yaml)")


def spread_and_se(grid: pd.DataFrame) -> tuple[float, float]:
    """The spread (pp) of a (sigma_w x seed) grid's seed means and its delete-one-seed jackknife standard error."""
    full = 100 * float(np.ptp(grid.mean(axis=1)))
    loo = np.array([100 * np.ptp(grid.drop(columns=s).mean(axis=1)) for s in grid.columns])
    n = len(loo)
    return full, math.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bf16", type=Path, required=True, help="the bf16 runs' tables folder (results/selected-bf16/tables/studies)")
    parser.add_argument("--f32", type=Path, default=F32, help="the float32 runs' tables folder (default: the selected tier's)")
    args = parser.parse_args(argv)
    (r32, h32), (r16, h16) = load(args.f32, "main"), load(args.bf16, "main")
    key = ["optimizer", "sigma_w", "seed"]
    both = r32[key + ["test_acc_best", "tau_best"]].merge(r16[key + ["test_acc_best", "tau_best"]], on=key, suffixes=("_f32", "_bf16"))
    if len(both) != len(r32):
        raise SystemExit(f"bf16_science: {len(both)} of the {len(r32)} float32 runs have a bf16 twin: train the rest first")
    out = ["# bf16 beside float32 on the selected tier's 56 runs (JPEG copy of CIFAR-10, not official numbers)", "",
           "`PYTHONPATH=workflow .venv/bin/python benchmarks/bf16_science.py --bf16 results/selected-bf16/tables/studies` "
           "(the bf16 runs: `benchmarks/bf16_science/selected-bf16.yaml`; the design, written before them: "
           "`benchmarks/bf16_science/DESIGN.md`).", ""]
    # (2) per optimizer and sigma_w
    out += ["## Mean selected test accuracy, bf16 minus float32 (pp, 95% Welch interval over the seeds)", "",
            "| optimizer | sigma_w | float32 | bf16 | difference | holds 0 |", "|---|---|---|---|---|---|"]
    holds = []
    for (opt, sw), g in both.groupby(["optimizer", "sigma_w"]):
        t = stats.ttest_ind(100 * g["test_acc_best_bf16"], 100 * g["test_acc_best_f32"], equal_var=False)
        lo, hi = t.confidence_interval(LEVEL)
        diff = 100 * (g["test_acc_best_bf16"].mean() - g["test_acc_best_f32"].mean())
        holds.append(lo <= 0 <= hi)
        out.append(f"| {opt} | {sw:g} | {100 * g['test_acc_best_f32'].mean():.1f} | {100 * g['test_acc_best_bf16'].mean():.1f} | "
                   f"{diff:+.2f} [{lo:+.2f}, {hi:+.2f}] | {'yes' if holds[-1] else '**no**'} |")
    # (3) per optimizer spread
    out += ["", "## Spread (max - min over sigma_w of the seed means, pp)", "",
            "| optimizer | float32 | bf16 | difference [95%] | holds 0 |", "|---|---|---|---|---|"]
    z = stats.norm.ppf(0.5 + LEVEL / 2)
    for opt, g in both.groupby("optimizer"):
        s32, e32 = spread_and_se(g.pivot_table(index="sigma_w", columns="seed", values="test_acc_best_f32"))
        s16, e16 = spread_and_se(g.pivot_table(index="sigma_w", columns="seed", values="test_acc_best_bf16"))
        half = z * math.hypot(e32, e16)
        holds.append(abs(s16 - s32) <= half)
        out.append(f"| {opt} | {s32:.2f} | {s16:.2f} | {s16 - s32:+.2f} [{s16 - s32 - half:+.2f}, {s16 - s32 + half:+.2f}] | "
                   f"{'yes' if holds[-1] else '**no**'} |")
    # (4) every claims row
    c32 = claims(r32, h32).set_index("id")
    c16 = claims(r16, h16).set_index("id")
    worded = c32["verdict"].fillna("").astype(str)
    rows = [i for i in c32.index if worded[i] not in ("", "not measured")]   # every row with a verdict word
    same = [c32.loc[i, "verdict"] == c16.loc[i, "verdict"] if i in c16.index else False for i in rows]
    out += ["", "## Every row of the claims table with a verdict", "",
            "| row | float32 | bf16 | same word |", "|---|---|---|---|"]
    for i, s in zip(rows, same, strict=True):
        v16 = c16.loc[i, "verdict"] if i in c16.index else "(no row)"
        out.append(f"| `{i}` | {c32.loc[i, 'verdict']}, {c32.loc[i, 'reproduced']:.3g} [{c32.loc[i, 'ci_low']:.3g}, "
                   f"{c32.loc[i, 'ci_high']:.3g}] | {v16}" + (f", {c16.loc[i, 'reproduced']:.3g} [{c16.loc[i, 'ci_low']:.3g}, "
                                                             f"{c16.loc[i, 'ci_high']:.3g}]" if i in c16.index else "")
                   + f" | {'yes' if s else '**no**'} |")
    within = all(holds) and all(same)
    out += ["", f"**Verdict (the rule stated before the runs): bf16 is {'within noise' if within else 'not within noise'}** "
            f"({sum(holds)} of {len(holds)} intervals hold 0; {sum(same)} of {len(same)} rows read the same word).", ""]
    # (1) per run, against the seed-to-seed noise
    twin = 100 * (both["test_acc_best_bf16"] - both["test_acc_best_f32"]).abs().mean()
    seed_sd = 100 * both.groupby(["optimizer", "sigma_w"])["test_acc_best_f32"].std(ddof=1).mean()
    out += ["## Per run", "",
            f"A run and its bf16 twin differ by {twin:.2f} pp on average (|bf16 - float32| of the selected test accuracy); "
            f"the float32 seeds of one sigma_w have an sd of {seed_sd:.2f} pp (mean over optimizer x sigma_w). Rounding "
            "alone decorrelates a run from its twin at these lengths (`benchmarks/rounding_floor.md`: the same run in three "
            "float summation orders differs as seeds do), so the twins are compared as samples, in the intervals above.", "",
            "| optimizer | sigma_w | seed | test acc float32 | test acc bf16 | tau_best float32 | tau_best bf16 |",
            "|---|---|---|---|---|---|---|"]
    out += [f"| {r.optimizer} | {r.sigma_w:g} | {r.seed} | {r.test_acc_best_f32:.3f} | {r.test_acc_best_bf16:.3f} | {r.tau_best_f32} | "
            f"{r.tau_best_bf16} |" for r in both.sort_values(key).itertuples()]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
