"""App. E: augmentation and LayerNorm lower SGD's spread without removing it; Adam stays below SGD under both.
The no-augmentation baseline (main grid, lr 1e-3) is matched to norm_aug's sigma_w values and seeds."""

from __future__ import annotations

import math

import pandas as pd

from initmem.claims.analysis import scale_label
from initmem.claims.claim import Claim
from initmem.claims.rows import LABEL, MAIN, batches, select, spread_gap
from initmem.stats.verdicts import greater

ORDER = 50
NORM_AUG = Claim(("aug_reduces_sgd_b{b}", "layernorm_reduces_sgd_b{b}", "adam_robust_{norm}_b{b}"), "normalization and augmentation",
                 "Replacing BatchNorm with LayerNorm or adding standard data augmentation reduces the SGD spread but does not "
                 "eliminate it; Adam remains robust under all these configurations", "Sec. 3.2, App. E", "spread differences (pp)",
                 "norm_aug vs main", "> 0")
CLAIMS = [NORM_AUG]


def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """At every batch size of norm_aug: augmentation and LayerNorm against their baselines, SGD against Adam under each norm."""
    if runs.empty:
        return []
    na = runs[runs["study"] == "norm_aug"]
    if na.empty:
        return []
    out = []
    for b in batches(na):
        cell = lambda study, b=b, **f: select(runs, study, batch_size=b, **f)
        aug = cell("norm_aug", optimizer="sgd", norm="batchnorm")
        base = cell("main", optimizer="sgd", norm="batchnorm", augment=False, **MAIN)
        out.append(spread_gap(NORM_AUG, NORM_AUG.id(0, b=b), f"SGD BatchNorm spread without minus with augmentation, b={b} (pp)",
                              math.nan, base, aug, greater(0), scale_label(runs, ["main", "norm_aug"]),
                              missing=f"main has no SGD BatchNorm b={b} baseline"))
        out.append(spread_gap(NORM_AUG, NORM_AUG.id(1, b=b), f"SGD spread BatchNorm minus LayerNorm, with augmentation, b={b} (pp)",
                              math.nan, aug, cell("norm_aug", optimizer="sgd", norm="layernorm"), greater(0), scale_label(runs, "norm_aug")))
        for norm in ("batchnorm", "layernorm"):
            out.append(spread_gap(NORM_AUG, NORM_AUG.id(2, norm=norm, b=b), f"SGD minus Adam spread, {LABEL[norm]} + augmentation, b={b} (pp)",
                                  math.nan, cell("norm_aug", optimizer="sgd", norm=norm), cell("norm_aug", optimizer="adam", norm=norm),
                                  greater(0), scale_label(runs, "norm_aug")))
    return out
