"""The paper's headline numbers beside ours (``number`` rows: a spread or an accuracy with its seed
interval, no verdict: a number at another scale is not a direction)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from initmem import paper as published
from initmem.claims.analysis import scale_label
from initmem.claims.rows import MAIN, PAPER_LR_L2, PAPER_MAIN, Reading, row, run_cell
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V

ORDER = 10
CLAIMS: list = []  # numbers have no verdict, so no claim

_DEPTH, _RECIPE_ACC = published.DEPTH_SPREADS, published.RECIPE_TEST_ACC
# (id, quantity, paper value, (study[@sigma_w], filters)): a spread, or the seed-mean test acc at sigma_w
SPREAD_CLAIMS = [
    ("sgd_b128_spread", "SGD b=128 sigma_w spread (pp)", PAPER_MAIN["sgd", 128], ("main", dict(optimizer="sgd", batch_size=128, **MAIN))),
    ("sgd_b128_acc_0.1", "SGD b=128 test acc at sigma_w=0.1 (%)", published.SGD_B128_TEST_ACC[0.1], ("main@0.1", dict(optimizer="sgd", batch_size=128, **MAIN))),
    ("sgd_b128_acc_2.5", "SGD b=128 test acc at sigma_w=2.5 (%)", published.SGD_B128_TEST_ACC[2.5], ("main@2.5", dict(optimizer="sgd", batch_size=128, **MAIN))),
    ("adam_b128_spread", "Adam b=128 spread (pp)", PAPER_MAIN["adam", 128], ("main", dict(optimizer="adam", batch_size=128, **MAIN))),
    ("adamw_b128_spread", "AdamW b=128 spread (pp)", PAPER_MAIN["adamw", 128], ("main", dict(optimizer="adamw", batch_size=128, **MAIN))),
    ("muon_b128_spread", "Muon b=128 spread (pp)", PAPER_MAIN["muon", 128], ("main", dict(optimizer="muon", batch_size=128, **MAIN))),
    ("adam_b16_spread", "Adam b=16 spread (pp)", PAPER_MAIN["adam", 16], ("main", dict(optimizer="adam", batch_size=16, **MAIN))),
    ("sgd_b16_spread", "SGD b=16 spread (pp)", PAPER_MAIN["sgd", 16], ("main", dict(optimizer="sgd", batch_size=16, **MAIN))),
    ("momentum_b16_spread", "SGD-momentum b=16 spread (pp)", PAPER_MAIN["sgd_momentum", 16], ("main", dict(optimizer="sgd_momentum", batch_size=16, **MAIN))),
    ("sgd_b256_spread", "SGD b=256 spread (pp)", PAPER_MAIN["sgd", 256], ("main", dict(optimizer="sgd", batch_size=256, **MAIN))),
    ("adam_b256_spread", "Adam b=256 spread (pp)", PAPER_MAIN["adam", 256], ("main", dict(optimizer="adam", batch_size=256, **MAIN))),
    ("lr1e-2_b16_spread", "SGD eta=1e-2 b=16 spread (pp)", PAPER_LR_L2[1e-2, 0.0, 16], ("lr_l2", dict(lr=1e-2, l2=0.0, batch_size=16))),
    ("lr1e-1_b16_spread", "SGD eta=1e-1 b=16 spread (pp)", PAPER_LR_L2[1e-1, 0.0, 16], ("lr_l2", dict(lr=1e-1, l2=0.0, batch_size=16))),
    ("lr1e-2_b128_spread", "SGD eta=1e-2 b=128 spread (pp)", PAPER_LR_L2[1e-2, 0.0, 128], ("lr_l2", dict(lr=1e-2, l2=0.0, batch_size=128))),
    ("lr1e-1_b128_spread", "SGD eta=1e-1 b=128 spread (pp)", PAPER_LR_L2[1e-1, 0.0, 128], ("lr_l2", dict(lr=1e-1, l2=0.0, batch_size=128))),
    ("l2_1e-2_b16_spread", "SGD eta=1e-2 L2=1e-2 b=16 spread (pp)", PAPER_LR_L2[1e-2, 1e-2, 16], ("lr_l2", dict(lr=1e-2, l2=1e-2, batch_size=16))),
    ("l2_1e-2_b128_spread", "SGD eta=1e-2 L2=1e-2 b=128 spread (pp)", PAPER_LR_L2[1e-2, 1e-2, 128], ("lr_l2", dict(lr=1e-2, l2=1e-2, batch_size=128))),
    ("l2_1e-3_b128_spread", "SGD eta=1e-2 L2=1e-3 b=128 spread (pp)", PAPER_LR_L2[1e-2, 1e-3, 128], ("lr_l2", dict(lr=1e-2, l2=1e-3, batch_size=128))),
    ("resnet56_sgd_b128_spread", "ResNet-56 SGD b=128 spread (pp)", _DEPTH["resnet56"], ("depth", dict(variant="resnet56", optimizer="sgd", batch_size=128))),
    ("resnet110_sgd_b128_spread", "ResNet-110 SGD b=128 spread (pp)", _DEPTH["resnet110"], ("depth", dict(variant="resnet110", optimizer="sgd", batch_size=128))),
    ("recipe_b128_spread", "standard SGD recipe b=128 abs Delta (pp)", published.RECIPE_SPREAD, ("best_recipe", dict(variant="sgd_standard", batch_size=128))),
    ("recipe_b128_acc", "standard SGD recipe b=128 test acc, sigma_w=0.1 (%)", _RECIPE_ACC, ("best_recipe@0.1", dict(variant="sgd_standard", batch_size=128))),
]



def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """The paper's headline spreads and accuracies beside ours, with seed intervals."""
    if runs.empty:
        return []
    out = []
    for cid, quantity, paper, (where, filters) in SPREAD_CLAIMS:
        study, _, sigma = where.partition("@")
        cell = run_cell(runs, study, **filters)
        est = None
        if cell is not None:
            if sigma:
                i = np.flatnonzero(np.isclose(cell.sigmas, float(sigma)))
                est = V.estimate([cell], lambda m, i=i: 100 * m[0][:, i[0]]) if len(i) else None
            else:
                est = Sp.spread_estimate(cell)
        scale = scale_label(runs, study) if est is not None else f"not in this config (study {study})"
        out.append(row(cid, "number", quantity, paper, scale, Reading(est, cells=[cell] if cell else [])))
    return out
