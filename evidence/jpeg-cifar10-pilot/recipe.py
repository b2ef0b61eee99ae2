"""The recipe pilot's tables (sizes/recipe.yaml), from its trained runs (results/runs/<study>/).

usage: PYTHONPATH=workflow .venv/bin/python evidence/jpeg-cifar10-pilot/recipe.py [--results results] [--data | --width | --paper]

Writes, next to this file:
- tables/recipe_fit.csv: one row per run: its recipe, the selected predictor (tau_best, the engine's own
  selection) with its own eval-mode training accuracy and whether it fits (>= 99.5%), its validation and
  test accuracy, and the clocks at tau_best and at the end (T_SGD, T_L2, T_adapt, as the trainer summed them);
- tables/recipe_beta.csv: per adaptive optimizer and epoch, |beta(t)| (the OLS slope of validation accuracy
  on sigma_w over its runs, statsmodels' numbers: initmem.stats.verdicts.Cell.fits) and its standard error;
- tables/recipe_decay.csv: per adaptive optimizer, the |beta| shape the decay rule reads
  (initmem.stats.shapes: the held peak, the held end, the noise floor, the fall and the largest fall the
  floor lets it show, in orders of magnitude, and the seeds at this sigma_w grid for the floor to let a
  0.6-order fall show: initmem.stats.shapes.seeds_to_see_fall). One seed: a reading of whether a decay is
  observable at this size, no interval and no verdict.

With ``--data``, the recipe data pilot's (sizes/recipe-data-n512.yaml, sizes/recipe-data-n1024.yaml) instead:
tables/recipe_data_fit.csv, the rows of recipe_fit.csv for its 16 runs, with their training-set size.
With ``--width``, the recipe width pilot's (sizes/recipe-width16.yaml): tables/recipe_width_fit.csv, its 8 runs.
With ``--paper``, the recipe paper-size pilot's, for a GPU (sizes/recipe-paper-gpu.yaml): tables/recipe_paper_fit.csv.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from initmem.io import atomic_path, read_json
from initmem.paper import INTERP_TRAIN_ACC
from initmem.stats import shapes as Sh
from initmem.stats.verdicts import Cell

HERE = Path(__file__).resolve().parent
STUDIES = ("recipe_lr", "recipe_l2", "adaptive_lr")
CLOCKS = ("T_sgd", "T_l2", "T_adapt")
RUNS = 18  # sizes/recipe.yaml: 4 + 8 + 6
DATA_STUDIES = {"lr_data_n512": 512, "lr_data_n1024": 1024}
DATA_RUNS = 16  # sizes/recipe-data-n512.yaml and -n1024.yaml: 8 each
# the fit-only pilots: (their studies -> the value of the column they vary, that column, runs, design files, table)
FIT_PILOTS = {"data": (DATA_STUDIES, "n_train", DATA_RUNS, "sizes/recipe-data-n*.yaml", "recipe_data_fit.csv"),
              "width": ({"lr_width16": 16}, "width", 8, "sizes/recipe-width16.yaml", "recipe_width_fit.csv"),
              "paper": ({"lr_paper": 40000}, "n_train", 8, "sizes/recipe-paper-gpu.yaml", "recipe_paper_fit.csv")}


def load(results: Path, studies=STUDIES, runs: int = RUNS, design: str = "sizes/recipe.yaml") -> list[dict]:
    """Every run record of the pilot, each with its study (its folder); an error naming what is missing."""
    recs = [read_json(p) | {"study": study} for study in studies for p in sorted((results / "runs" / study).glob("*.json"))]
    if len(recs) != runs:
        raise SystemExit(f"{results / 'runs'}: {len(recs)} of the pilot's {runs} runs; train it first "
                         f"(its commands: {HERE.name}/{design})")
    return recs


def fit_table(recs: list[dict]) -> pd.DataFrame:
    rows = []
    for r in recs:
        spec, best, h = r["spec"], r["summary"], r["history"]
        i = int(best["tau_best"]) - 1
        rows.append({"study": r["study"], "optimizer": spec["optimizer"], "lr": spec["lr"], "l2": spec["l2"], "sigma_w": spec["sigma_w"],
                     "seed": spec["seed"], "status": r["status"], "tau_best": best["tau_best"], "tau_interp_running": best["tau_interp"],
                     "train_acc_eval_best": best.get("train_acc_eval_best"),
                     "selected_fits": bool((best.get("train_acc_eval_best") or 0) >= INTERP_TRAIN_ACC / 100),
                     "val_acc_best": best["val_acc_best"], "test_acc_best": best["test_acc_best"],
                     **{f"{c}_best": h[c][i] for c in CLOCKS}, **{f"{c}_end": h[c][-1] for c in CLOCKS},
                     "wall_seconds": round(r["wall_seconds"], 1)})
    return pd.DataFrame(rows).sort_values(["study", "optimizer", "lr", "l2", "sigma_w", "seed"]).astype({"tau_interp_running": "Int64"})


def adaptive_cells(recs: list[dict]) -> dict[str, Cell]:
    """Per adaptive optimizer: its runs' validation accuracy as an (epoch x sigma_w x seed) curve cell."""
    out = {}
    for opt in sorted({r["spec"]["optimizer"] for r in recs if r["study"] == "adaptive_lr"}):
        mine = [r for r in recs if r["study"] == "adaptive_lr" and r["spec"]["optimizer"] == opt]
        sigmas = np.array(sorted({r["spec"]["sigma_w"] for r in mine}))
        seeds = np.array(sorted({r["spec"]["seed"] for r in mine}))
        epochs = np.arange(1, len(mine[0]["history"]["epoch"]) + 1, dtype=float)
        values = np.full((len(epochs), len(sigmas), len(seeds)), np.nan)
        for r in mine:
            v = np.asarray(r["history"]["val_acc"], float)
            values[: len(v), int(np.searchsorted(sigmas, r["spec"]["sigma_w"])), int(np.searchsorted(seeds, r["spec"]["seed"]))] = v
        out[opt] = Cell(opt, sigmas, seeds, values, epochs, {"epoch": epochs})
    return out


def beta_tables(cells: dict[str, Cell]) -> tuple[pd.DataFrame, pd.DataFrame]:
    curves, shapes = [], []
    for opt, cell in cells.items():
        slope, se = cell.fits([])
        curves.append(pd.DataFrame({"optimizer": opt, "epoch": cell.epochs.astype(int), "beta": slope[0], "se": se[0]}))
        shape = Sh.beta_shape(slope, se, cell.epochs)
        sxx = float(np.sum((cell.sigmas - cell.sigmas.mean()) ** 2))
        _, seeds = Sh.seeds_to_see_fall(max(float(shape.observable[0]), 0.0), Sh.DECAY_ORDERS, cell.n_seeds, sxx)
        shapes.append({"optimizer": opt, "peak": float(shape.peak[0]), "end": float(shape.end[0]), "noise_floor": float(shape.floor[0]),
                       "fall_orders": float(shape.fall[0]), "observable_orders": float(shape.observable[0]),
                       "decay_orders_needed": Sh.DECAY_ORDERS, "seeds_to_see_it": seeds, "sign_changes": Sh.sign_changes(slope, cell.epochs)})
    return pd.concat(curves, ignore_index=True), pd.DataFrame(shapes)


def write(df: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path("results"))
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--data", action="store_true", help="the recipe data pilot's fit table instead")
    which.add_argument("--width", action="store_true", help="the recipe width pilot's fit table instead")
    which.add_argument("--paper", action="store_true", help="the recipe paper-size pilot's fit table instead (a GPU's)")
    args = parser.parse_args()
    pilot = next((name for name in FIT_PILOTS if getattr(args, name)), None)
    if pilot:
        studies, column, runs, design, table = FIT_PILOTS[pilot]
        recs = load(args.results, tuple(studies), runs, design)
        fit = fit_table(recs)
        fit.insert(1, column, fit["study"].map(studies))
        write(fit, HERE / "tables" / table)
        print(f"wrote {HERE.name}/tables/{table} from {len(recs)} runs")
        return
    recs = load(args.results)
    write(fit_table(recs), HERE / "tables" / "recipe_fit.csv")
    curves, shapes = beta_tables(adaptive_cells(recs))
    write(curves, HERE / "tables" / "recipe_beta.csv")
    write(shapes, HERE / "tables" / "recipe_decay.csv")
    print(f"wrote {HERE.name}/tables/recipe_fit.csv, recipe_beta.csv, recipe_decay.csv from {len(recs)} runs")


if __name__ == "__main__":
    main()
