"""Figure 10: the clock-matched tier's |beta| and spread against epochs, steps and the clock."""

import numpy as np
import pytest
from helpers.clock_figure import figure10_history

from initmem.figures.clock import fig10, spread_curves


def test_spread_is_max_minus_min_of_seed_means_in_pp():
    h = figure10_history([("adam", 0.01, 16, 0.0)])
    s = spread_curves(h).set_index("epoch")
    # val_acc = 0.5 - 0.05 e^{-T} sigma_w: spread over sigma_w 0.1..2.5 = 0.05 e^{-T} x 2.4 (seed offsets cancel in max - min)
    t1 = 4 * 0.01
    assert s.loc[1, "spread_pp"] == pytest.approx(100 * 0.05 * np.exp(-t1) * 2.4)


def test_figure_draws_each_cell_in_its_family_and_says_what_is_missing():
    h = figure10_history([("adam", 0.01, 16, 0.0), ("adam", 0.1, 32, 0.0), ("sgd", 0.3, 16, 0.0)])
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
