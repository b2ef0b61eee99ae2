"""Figure 10's input: a synthetic clock-tier grid, per epoch (tests/test_plots_clock.py, tests/test_plots.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

# What every run of Figure 10's grid shares (64 training images, 4 epochs).
FIGURE10_CELL = dict(study="clock", arch="resnet9", width=8, norm="batchnorm", pool="max", schedule="cosine", alpha=0.01,
                     weight_decay=None, momentum=None, augment=False, patience=None, variant=None, n_train=64, n_val=32, n_test=32,
                     weight_decay_mode="decoupled", status="ok", stopped_early=False)


def figure10_history(cells) -> pd.DataFrame:
    """Figure 10's input: per-epoch rows of cells (optimizer, lr, b, l2), 4 sigma_w x 3 seeds x 4 epochs
    each, whose val accuracy falls with sigma_w by a slope that decays with the optimizer's clock."""
    rows = []
    for optimizer, lr, b, l2 in cells:
        steps = int(np.ceil(64 / b))
        for sw in (0.1, 0.5, 1.2, 2.5):
            for seed in (0, 1, 2):
                for epoch in range(1, 5):
                    k = epoch * steps
                    clock = k * lr if optimizer == "adam" else k * lr * lr / b
                    rows.append({**FIGURE10_CELL, "optimizer": optimizer, "lr": lr, "batch_size": b, "l2": l2, "epochs": 4,
                                 "sigma_w": sw, "seed": seed, "run_id": f"{optimizer}{lr}{b}{l2}_{sw}_{seed}", "epoch": epoch,
                                 "val_acc": 0.5 - 0.05 * np.exp(-clock) * sw + 0.001 * seed, "train_acc": 1.0,
                                 "T_sgd": k * lr * lr / b, "T_l2": k * lr * l2, "T_wd": 0.0, "T_adapt": k * lr})
    return pd.DataFrame(rows)
