"""Synthetic clock-tier runs for the claims: per-epoch histories whose spread over sigma_w follows a chosen
function of the clocks, the runs.csv rows of such a history and the claims table read from them
(tests/test_verdicts.py, tests/test_collapse.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem.claims.table import claims


def clock_history(cells, slope_of, n_train: int = 1024, seeds=(0, 1, 2), noise: float = 1e-4, rng_seed: int = 0) -> pd.DataFrame:
    """Per-epoch rows of cells (optimizer, lr, b, epochs, l2) at constant lr: val and test accuracy
    fall with sigma_w at slope_of(clocks at that epoch)."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for opt, lr, b, epochs, l2 in cells:
        for e in range(1, epochs + 1):
            k = e * math.ceil(n_train / b)
            T = {"T_sgd": lr**2 * k / b, "T_l2": lr * l2 * k, "T_wd": 0.0, "T_adapt": lr * k}
            slope = slope_of(T | {"lr": lr, "steps": k})
            for sw in (0.1, 1.0, 2.5):
                for s in seeds:
                    acc = 0.8 + slope * sw + rng.normal(0, noise)
                    rows.append(dict(study="clock", run_id=f"{opt}_lr{lr:g}_b{b}_E{epochs}_l2{l2:g}_sw{sw}_s{s}", optimizer=opt, lr=lr,
                                     batch_size=b, epochs=epochs, l2=l2, weight_decay=None, sigma_w=sw, seed=s, epoch=e, n_train=n_train,
                                     val_acc=acc, test_acc=acc, train_acc=1.0, **T))
    return pd.DataFrame(rows)


def runs_of(history: pd.DataFrame) -> pd.DataFrame:
    """runs.csv rows of a synthetic history: tau_best at the last epoch, fitted at epoch 1."""
    last = history.sort_values("epoch").groupby(["study", "run_id"]).tail(1)
    return last.assign(arch="resnet9", width=8, norm="batchnorm", augment=False, status="ok", tau_best=last["epoch"], tau_interp=1,
                       test_acc_best=last["test_acc"], val_acc_best=last["val_acc"], train_acc_best=1.0).drop(columns=["epoch"])


def clock_table(cells, slope_of) -> pd.DataFrame:
    """The claims table (indexed by claim id) of :func:`clock_history`'s runs of ``cells``."""
    history = clock_history(cells, slope_of)
    return claims(runs_of(history), history).set_index("id")

