"""The paper's claims beside ours: ``claims.csv`` / ``claims.md``.

Four kinds of rows, all with the same columns (:data:`initmem.claims.rows.COLUMNS`):
- ``number``: a headline number of the paper (a spread, an accuracy) and ours, with its seed
  interval; no verdict (a number at another scale is not a direction);
- ``direction``: a directional claim (e.g. "SGD's spread exceeds Adam's at b=16"): the measured
  effect, its interval and method, the paper's side, the regime and a verdict (:mod:`initmem.stats.verdicts`);
- ``cell``: one configuration's spread and |beta| read at tau_best and at the end of training
  (:mod:`initmem.claims.catalogue.clocks`, which also has the clock-specific directions);
- ``clock``: the paper's forgetting-timescale arithmetic, recomputed.

The rows come from the claim catalogue (:mod:`initmem.claims.catalogue`, one module per claim family),
generated for every batch size, learning rate, ... the config has, so the same code gives verdicts at
the default, the evidence and the paper scale; Holm's step-down then reads every direction's p-value.
"""

from __future__ import annotations

import pandas as pd

from initmem.claims import catalogue
from initmem.claims.rows import COLUMNS, would_decide
from initmem.stats import multiplicity as M

__all__ = ["COLUMNS", "claims"]


def claims(runs: pd.DataFrame, history: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every claim row (numbers, directions with verdicts, cells, clocks; see the module docstring), then,
    off the verdict path, the seeds that would decide the undecided ones, then Holm's step-down."""
    history = history if history is not None else pd.DataFrame()
    return M.holm(pd.DataFrame(would_decide(catalogue.rows(runs, history)), columns=COLUMNS))
