"""Sec. 3.2, Table 4 and Sec. 4.2 on the lr_l2 study: a larger lr lowers SGD's spread, L2 lowers it, and
lambda = 5e-3 at eta = 1e-2, b = 128 collapses it below 1 pp."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem.claims.analysis import scale_label
from initmem.claims.claim import Claim
from initmem.claims.clock import below_decided, undecided_power
from initmem.claims.rows import BELOW_PP, PAPER_LR_L2, Reading, batches, paper_value, row, run_cell, select, spread_gap
from initmem.claims.selection import CONTRAST, Readable, RunsRead, Selection
from initmem.paper import Q_L2, Q_LR
from initmem.stats import spreads as Sp
from initmem.stats.verdicts import greater, less

ORDER = 40
LR_REDUCES = Claim(("lr_reduces_sgd_b{b}_{lo}_to_{hi}",), "repair", Q_LR, "Sec. 3.2", "spread at the smaller lr minus the larger (pp)",
                   "lr_l2, no L2", "> 0")
L2_REDUCES = Claim(("l2_reduces_sgd_lr{lr}_b{b}",), "repair", "Table 4: L2 lowers the SGD spread at every learning rate and batch size",
                   "Sec. 3.2, Table 4", "spread without minus with the strongest L2 (pp)", "lr_l2", "> 0")
L2_BELOW = Claim(("l2_5e-3_b128_below_1pp",), "repair", Q_L2, "Sec. 4.2", "one spread's upper bound (pp)", "lr_l2 eta 1e-2, L2 5e-3, b=128",
                 "< 1")
CLAIMS = [LR_REDUCES, L2_REDUCES, L2_BELOW]


def selections(read: Readable) -> list[Selection]:
    """Each step between consecutive learning rates without L2, at every batch size of lr_l2."""
    lr_l2 = read.table[read.table["study"] == "lr_l2"] if "study" in read.table else read.table.iloc[0:0]
    at = lambda lr, b: select(lr_l2, None, lr=float(lr), l2=0.0, batch_size=b)
    out = []
    for b in batches(lr_l2):
        lrs = sorted(set(lr_l2.loc[(lr_l2["batch_size"] == b) & (lr_l2["l2"] == 0), "lr"]))
        for lo, hi in zip(lrs, lrs[1:], strict=False):
            out.append(Selection(LR_REDUCES, LR_REDUCES.id(b=b, lo=f"{lo:g}", hi=f"{hi:g}"), CONTRAST, (at(lo, b), at(hi, b)), greater(0),
                                 "spread at the smaller lr minus the larger > 0, paired seeds", {"b": b, "lo": lo, "hi": hi}))
    return out


def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """Each lr step and each lr's strongest L2 at every batch size of lr_l2, and the collapse below 1 pp."""
    if runs.empty:
        return []
    lr_l2 = runs[runs["study"] == "lr_l2"]
    if lr_l2.empty:
        return []
    scale, out = scale_label(runs, "lr_l2"), []
    at = lambda lr, l2, b: select(lr_l2, None, lr=float(lr), l2=float(l2), batch_size=b)
    steps = selections(RunsRead(runs))
    for b in batches(lr_l2):
        for s in (s for s in steps if s.fields["b"] == b):
            lo, hi = s.fields["lo"], s.fields["hi"]
            out.append(spread_gap(LR_REDUCES, s.cid, f"SGD spread at eta={lo:g} minus eta={hi:g}, b={b}, no L2 (pp)",
                                  paper_value(PAPER_LR_L2, lo, 0.0, b) - paper_value(PAPER_LR_L2, hi, 0.0, b), *s.parts, greater(0), scale))
        for lr in sorted(set(lr_l2.loc[lr_l2["batch_size"] == b, "lr"])):
            l2s = sorted(set(lr_l2.loc[(lr_l2["batch_size"] == b) & np.isclose(lr_l2["lr"], lr), "l2"]))
            if len(l2s) < 2 or l2s[0] != 0:
                continue
            top = l2s[-1]
            out.append(spread_gap(L2_REDUCES, L2_REDUCES.id(lr=f"{lr:g}", b=b),
                                  f"SGD spread without L2 minus with L2={top:g}, eta={lr:g}, b={b} (pp)",
                                  paper_value(PAPER_LR_L2, lr, 0.0, b) - paper_value(PAPER_LR_L2, lr, top, b), at(lr, 0, b), at(lr, top, b),
                                  greater(0), scale))
    cell = run_cell(runs, "lr_l2", lr=1e-2, l2=5e-3, batch_size=128)
    est = Sp.spread_estimate(cell) if cell is not None else None
    out.append(row(L2_BELOW.id(), "direction", "SGD eta=1e-2 L2=5e-3 b=128 spread (pp): collapses below 1 pp",
                   math.nan, scale, Reading(est, side=less(BELOW_PP), decided=(d := below_decided(est, cell)), cells=[cell] if cell else [],
                       power=undecided_power(est, cell, less(BELOW_PP), d),
                   missing="lr_l2 has no lr 1e-2, L2 5e-3, b=128 cell"), L2_BELOW))
    return out
