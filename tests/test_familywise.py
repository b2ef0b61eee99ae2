"""The familywise-error study: its truths put every row on its boundary, its persistent noise is the
AR(1) it says, and one simulated tier goes through the claims table's own rows and Holm."""

import numpy as np
import pandas as pd
import pytest

from initmem.planner import familywise as F
from initmem.stats import shapes as Sh


def test_the_beta_truth_is_on_both_margins_edges():
    beta = F.beta_truth()
    shape = Sh.beta_shape(beta[None, :], np.full((1, len(beta)), 1e-6), np.arange(1, len(beta) + 1, dtype=float))
    assert float(shape.change[0]) == pytest.approx(Sh.FLAT_ORDERS)                                  # settled range: +0.5 orders
    assert float(shape.last[0]) == pytest.approx(Sh.PAPER_FLAT_LEVEL * 10 ** Sh.LEVEL_ORDERS)     # the band's upper edge


def test_persistent_noise_is_measured_back_as_its_offset_sd_and_lag_one_correlation():
    noise = F.Noise("p", 0.02, 0.01, 0.8)
    values = F.curve_values(np.random.default_rng(0), noise, seeds=64) - 1.0 + F.beta_truth()[:, None, None] * np.asarray(F.SIGMAS)[None, :, None]
    e, k, n = values.shape
    rows = [{"sigma_w": F.SIGMAS[j], "seed": s, "epoch": i, "val_acc": values[i, j, s]} for i in range(e) for j in range(k) for s in range(n)]
    offset, within, phi = F.measured_persistence(pd.DataFrame(rows))
    assert offset == pytest.approx(0.02, rel=0.15) and within == pytest.approx(0.01, rel=0.15) and phi == pytest.approx(0.8, abs=0.05)


def test_one_simulated_tier_has_its_five_rows_tested_and_adjusted():
    t = F.family(np.random.default_rng(1), F.Noise("independent", 0.0, 0.02, 0.0), 0.024)
    assert list(t["id"]) == list(F.RULES)
    assert t["p_decision"].notna().all() and t["p_holm"].notna().all()
    assert (t["p_holm"] >= t["p_decision"] - 1e-12).all()
