"""The paper's quoted forgetting clocks beside the same arithmetic (``clock`` rows)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem import paper as published
from initmem.claims.rows import Reading, row
from initmem.engine.clocks import paper_constant_lr_clocks, run_clocks
from initmem.stats import verdicts as V

ORDER = 90
CLAIMS: list = []  # the clocks are arithmetic, not claims with a verdict

# (id, quantity, paper value, clock, batch size, epochs, lr, l2, schedule of the paper's run)
_T = published.clock
TIMESCALE_CLAIMS = [
    ("T_sgd_b128_300", "T_SGD, SGD b=128 eta=1e-3, 300 epochs", _T("T_sgd", batch_size=128), "T_sgd", 128, 300, 1e-3, 0.0, "cosine"),
    ("T_sgd_b128_5000", "T_SGD, SGD b=128 eta=1e-3, 5000 epochs", _T("T_sgd", batch_size=128, epochs=5000,
                                                                   schedule="constant"), "T_sgd", 128, 5000, 1e-3, 0.0, "constant"),
    ("T_sgd_b16_lr1e-2", "T_SGD, SGD b=16 eta=1e-2, 300 epochs", _T("T_sgd", lr=1e-2, batch_size=16), "T_sgd", 16, 300, 1e-2, 0.0, "cosine"),
    ("T_l2_b128_1e-3", "T_L2, SGD b=128 eta=1e-2 L2=1e-3", _T("T_l2", lr=1e-2, batch_size=128, l2=1e-3), "T_l2", 128, 300, 1e-2, 1e-3, "cosine"),
    ("T_l2_b128_5e-3", "T_L2, SGD b=128 eta=1e-2 L2=5e-3", _T("T_l2", lr=1e-2, batch_size=128, l2=5e-3), "T_l2", 128, 300, 1e-2, 5e-3, "cosine"),
]


def rows(runs: pd.DataFrame | None = None, history: pd.DataFrame | None = None) -> list[dict]:
    """The paper's quoted clocks beside the same arithmetic (``reproduced``: constant lr, K = E n/b,
    n = 40,000, :func:`initmem.engine.clocks.paper_constant_lr_clocks`): like with like. ``exact_as_run`` is
    the sum a run records (:func:`initmem.engine.clocks.run_clocks`) under the schedule the paper's run used
    (cosine, alpha 0.01; constant for the 5,000-epoch control)."""
    out = []
    for cid, quantity, paper, clock, b, e, lr, l2, schedule in TIMESCALE_CLAIMS:
        spec = {"optimizer": "sgd", "lr": lr, "batch_size": b, "epochs": e, "n_train": 40_000, "l2": l2,
                "schedule": schedule, "alpha": 0.01, "weight_decay": None}
        est = V.Estimate(paper_constant_lr_clocks(spec)[clock], math.nan, math.nan, "", 0, 0, np.zeros(1))
        r = row(cid, "clock", quantity, paper, "", Reading(est, read_at=""))
        r["exact_as_run"] = run_clocks(spec)[clock]
        r["scale"] = (f"reproduced: the paper's constant-lr arithmetic at its scale (n_train=40000, K = E n/b); "
                      f"exact_as_run: the recorded sum under the {schedule} schedule the paper's run used")
        out.append(r)
    return out
