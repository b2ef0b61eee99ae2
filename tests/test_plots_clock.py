"""Figure 10: the clock-matched tier's |beta| and spread against epochs, steps and the clock."""

import numpy as np
import pandas as pd
import pytest

from initmem.figures.clock import fig10, spread_curves

CELL = dict(study="clock", arch="resnet9", width=8, norm="batchnorm", pool="max", schedule="cosine", alpha=0.01,
            weight_decay=None, momentum=None, augment=False, patience=None, variant=None, n_train=64, n_val=32, n_test=32,
            weight_decay_mode="decoupled", status="ok", stopped_early=False)


def _history(cells) -> pd.DataFrame:
    rows = []
    for optimizer, lr, b, l2 in cells:
        steps = int(np.ceil(64 / b))
        for sw in (0.1, 0.5, 1.2, 2.5):
            for seed in (0, 1, 2):
                for epoch in range(1, 5):
                    k = epoch * steps
                    clock = k * lr if optimizer == "adam" else k * lr * lr / b
                    rows.append({**CELL, "optimizer": optimizer, "lr": lr, "batch_size": b, "l2": l2, "epochs": 4,
                                 "sigma_w": sw, "seed": seed, "run_id": f"{optimizer}{lr}{b}{l2}_{sw}_{seed}", "epoch": epoch,
                                 "val_acc": 0.5 - 0.05 * np.exp(-clock) * sw + 0.001 * seed, "train_acc": 1.0,
                                 "T_sgd": k * lr * lr / b, "T_l2": k * lr * l2, "T_wd": 0.0, "T_adapt": k * lr})
    return pd.DataFrame(rows)


def test_spread_is_max_minus_min_of_seed_means_in_pp():
    h = _history([("adam", 0.01, 16, 0.0)])
    s = spread_curves(h).set_index("epoch")
    # val_acc = 0.5 - 0.05 e^{-T} sigma_w: spread over sigma_w 0.1..2.5 = 0.05 e^{-T} x 2.4 (seed offsets cancel in max - min)
    t1 = 4 * 0.01
    assert s.loc[1, "spread_pp"] == pytest.approx(100 * 0.05 * np.exp(-t1) * 2.4)


def test_figure_draws_each_cell_in_its_family_and_says_what_is_missing():
    h = _history([("adam", 0.01, 16, 0.0), ("adam", 0.1, 32, 0.0), ("sgd", 0.3, 16, 0.0)])
    runs = h.drop_duplicates("run_id")
    fig = fig10(runs, h)
    axes = fig.axes
    assert len(axes) == 12
    labels = [t.get_text() for t in axes[2].get_legend().get_texts()]  # (c) Adam vs T_adapt
    assert labels[:2] == ["lr 0.01, b 16, 4 ep", "lr 0.1, b 32, 4 ep"] and "median OLS SE" in labels
    assert len(axes[5].get_lines()) == 2  # (f) SGD vs T_SGD: one cell + the SE line
    assert "not in this tier" in [t.get_text() for t in axes[11].texts]  # (l) no SGD+L2 cell
    assert "not in this tier" in [t.get_text() for t in axes[6].texts]   # (g) no SGD+L2 |beta| either
    footnote = fig._supxlabel.get_text()
    assert "no SGD + L2 cells in this config" in footnote
