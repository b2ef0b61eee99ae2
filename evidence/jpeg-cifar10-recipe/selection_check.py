"""Is lr 1e-2's early selection a noisy argmin of 500 validation images, or where the loss really bottoms?

For each configuration of the recipe tier without L2, per seed: the epoch of least validation loss (the
selection, tau_best), the epoch of least loss on the 500 per-epoch test images (independent of the
selection), of least loss on both (1,000 images), the interpolation epoch (99.5% train accuracy), and how
many of the networks chosen on both sets fit (own eval-mode training accuracy >= 99.5%). Reads the
committed history only; trains nothing.

    PYTHONPATH=workflow .venv/bin/python evidence/jpeg-cifar10-recipe/selection_check.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from initmem.paper import INTERP_TRAIN_ACC

TABLES = Path(__file__).parent / "tables"
FIT = INTERP_TRAIN_ACC / 100  # the fit: 99.5% training accuracy


def main() -> None:
    history = pd.read_csv(TABLES / "history.csv.gz")
    runs = pd.read_csv(TABLES / "runs.csv").set_index(["lr", "l2", "sigma_w", "seed"])
    print("| lr | sigma_w | least val loss (epochs) | least test loss | least val + test loss | interpolation | "
          "fit when chosen on val / on val + test |")
    print("|---|---|---|---|---|---|---|")
    for (lr, sigma), g in history[history["l2"] == 0].groupby(["lr", "sigma_w"]):
        val, test, both, interp, fit_val, fit_both = [], [], [], [], 0, 0
        for seed, run in g.groupby("seed"):
            run = run.set_index("epoch")
            pooled = (run["val_loss"] + run["test_loss"]) / 2
            val.append(int(run["val_loss"].idxmin()))
            test.append(int(run["test_loss"].idxmin()))
            both.append(int(pooled.idxmin()))
            interp.append(int(runs.loc[(lr, 0.0, sigma, seed), "tau_interp"]))
            fit_val += bool(run.loc[val[-1], "train_acc_eval"] >= FIT)
            fit_both += bool(run.loc[both[-1], "train_acc_eval"] >= FIT)
        span = lambda xs: f"{min(xs)}-{max(xs)} (median {int(pd.Series(xs).median())})"
        print(f"| {lr:g} | {sigma:g} | {span(val)} | {span(test)} | {span(both)} | {span(interp)} | "
              f"{fit_val} / {fit_both} of {len(val)} |")


if __name__ == "__main__":
    main()
