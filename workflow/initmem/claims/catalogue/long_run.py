"""Sec. 4.2: the long constant-lr SGD control keeps the main grid's spread ("both regimes retain the
spread"), read on the sigma_w values and seeds the two share."""

from __future__ import annotations

import math

import pandas as pd

from initmem import paper as published
from initmem.claims.analysis import long_run_comparison, matched_long_runs, scale_label
from initmem.claims.claim import Claim
from initmem.claims.rows import PAPER_MAIN, Reading, difference, row, to_cell
from initmem.paper import Q_CLOCK
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V
from initmem.stats.verdicts import between

ORDER = 20
LONG_UNCHANGED_PP = 5.0   # "essentially unchanged": the long run's spread within 5 pp of the matched main grid's
LONG_RETAINS = Claim(("long_b{b}_retains",), "long run", Q_CLOCK, "Sec. 4.2", "long minus main-grid spread, matched (pp)",
                     "long vs main, lr 1e-3", "in [-5, 5]")
CLAIMS = [LONG_RETAINS]


def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """Per batch size of the long study: both spreads (numbers) and their matched difference."""
    if runs.empty:
        return []
    return [r for _, comparison in long_run_comparison(runs).iterrows() for r in _long_rows(runs, comparison)]


def _long_rows(runs: pd.DataFrame, r: pd.Series) -> list[dict]:
    """The long constant-LR control beside the main grid on the same sigma_w and seeds."""
    b = int(r["batch_size"])
    lg, mm = matched_long_runs(runs, b)
    long_cell, main_cell = to_cell(lg), to_cell(mm)
    scale = scale_label(runs, ["long", "main"])
    note = f"matched sigma_w {r['sigma_w'] or 'none'}, seeds {r['seeds'] or 'none'}"
    out = []
    for cid, quantity, paper, cell in (
            (f"long_b{b}_spread", f"long constant-LR SGD b={b} spread (pp)", published.LONG_RETAINED_PP if b == 128 else math.nan, long_cell),
            (f"main_b{b}_spread_matched", f"main-grid SGD b={b} spread on the long run's sigma_w and seeds (pp)",
             PAPER_MAIN["sgd", 128] if b == 128 else math.nan, main_cell)):
        est = Sp.spread_estimate(cell) if cell is not None else None
        out.append(row(cid, "number", quantity, paper, scale, Reading(est, cells=[cell] if cell else [],
                       note=note + ("; paper: '~26 pp'" if b == 128 else ""))))
    side = between(-LONG_UNCHANGED_PP, LONG_UNCHANGED_PP)
    cells = [long_cell, main_cell]
    est = V.estimate(cells, difference(Sp.spread_pp)) if None not in cells else None
    out.append(row(LONG_RETAINS.id(b=b), "direction",
                   f"long constant-LR minus main-grid SGD spread, b={b}, matched (pp): both regimes retain the spread",
                   math.nan, scale, Reading(est, side=side, cells=[c for c in cells if c],
                   note=f"{note}; 'essentially unchanged' read as within {LONG_UNCHANGED_PP:g} pp"), LONG_RETAINS))
    return out
