"""The clock tier's cells and the paper's clock points, for the clock claims
(:mod:`initmem.claims.catalogue.clocks`) and the spread claims that read the zone the paper calls gone.

Runs of the studies in :data:`CLOCK_STUDIES` are grouped into *cells* by their configuration (every
spec key but sigma_w and seed: optimizer, lr, batch_size, epochs, l2, weight_decay, ...), across
studies (a configuration two studies share counts once). Each cell's clocks are read from the
history's T_* columns at its last epoch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from initmem import paper as published
from initmem.claims.analysis import CONFIG_KEYS, carry_forward
from initmem.claims.cells import cell_from_history, regime_counts
from initmem.claims.rows import label_of, to_cell
from initmem.stats import power as P
from initmem.stats import verdicts as V

CLOCK_STUDIES = ("main", "lr_l2", "clock", "long")
# The paper's points on either side of its threshold (Sec. 4.2, initmem.paper.Q_CLOCK and Q_L2), in its constant-lr
# arithmetic: the spread is still there at T_RETAINS (its largest T_L2 that "still leaves 17.4 pp"; its smaller T_SGD
# values keep ~26 pp) and it drops at T_DROPS (T_SGD: "drops sharply"; T_L2: "below 1 pp"). Between the two the paper
# states nothing, so no row reads there.
T_RETAINS = published.clock("T_l2", lr=1e-2, batch_size=128, l2=1e-3)
T_DROPS = published.clock("T_sgd", lr=1e-2, batch_size=16)
# "Adam ... decay by 1-2 orders of magnitude" (Fig. 6) is stated for the paper's Adam runs, which end at T_adapt
# 23.8 (b=256) to 379 (b=16) exact: the decay is read for adaptive configurations that end inside that range or past it.
T_ADAPT_LARGE = published.ADAM_T_ADAPT_RANGE[0]
GONE_PP = 1.0  # "collapses the spread below 1 pp" (Q_L2): a spread below it is gone
# The most seeds one configuration can be given on one machine: 64 seeds x 4 sigma_w of the selected tier's runs (~200 s
# each on one core) is ~14 CPU-hours. A gone side a truly gone spread reaches less than GONE_POWER of the time there is
# out of reach of any feasible design at that noise.
FEASIBLE_SEEDS = 64
GONE_POWER = 0.8
RETAINED = V.greater(0, gone=GONE_PP)  # "still leaves a spread": above GONE_PP; not reproduced within [0, GONE_PP), where it is gone
COLLAPSES = (("adam", "T_adapt", ("epoch", "steps", "T_sgd")), ("sgd", "T_sgd", ("epoch", "steps", "T_adapt")))
CLOCK_NAMES = {"T_sgd": "T_SGD", "T_l2": "T_L2", "T_adapt": "T_adapt", "T_wd": "T_wd"}


@dataclass
class ClockCell:
    """One configuration across the clock studies: its runs (with ``test_acc_end``/``val_acc_end``
    at the last epoch), its history (stopped runs carried) and its clocks at the end of training."""

    label: str
    settings: dict
    runs: pd.DataFrame
    history: pd.DataFrame
    clocks: dict
    clocks_best: dict = None  # the clocks at each run's tau_best, averaged over the runs (where spreads at tau_best sit)

    def curve(self, metric: str = "val_acc") -> V.Cell:
        cell = cell_from_history(self.history, metric)
        cell.fit, cell.label, cell.config = regime_counts(self.runs), self.label, dict(self.settings)
        return cell

    def cell(self, metric: str) -> V.Cell:
        return to_cell(self.runs, metric, self.label)

    @property
    def n_train(self) -> int:
        return int(self.runs["n_train"].iloc[0])

    def end_clock(self, name: str) -> float:
        """The clock ``name`` its runs reached at their last epoch (mean over them; 0 where not recorded)."""
        return self.clocks.get(name, 0)


def slug(label: str) -> str:
    """'SGD b=16 lr=0.1 L2=0.01 E=12' -> 'sgd_b16_lr0.1_l2-0.01_e12' (for row ids)."""
    return re.sub(r"[^a-z0-9.-]+", "_", label.replace("L2=", "l2-").replace("=", "").lower()).strip("_")


def clock_cells(runs: pd.DataFrame, history: pd.DataFrame) -> list[ClockCell]:
    """The configurations of :data:`CLOCK_STUDIES`, each run once (see the module docstring)."""
    runs = runs[runs["study"].isin(CLOCK_STUDIES)] if not runs.empty else runs
    if runs.empty or history.empty:
        return []
    keys = [k for k in CONFIG_KEYS if k in runs.columns]
    runs = runs.drop_duplicates(keys + ["sigma_w", "seed"]).drop(columns=list(CLOCK_NAMES), errors="ignore")
    hist = history.merge(runs[["study", "run_id"]], on=["study", "run_id"])
    last = hist.sort_values("epoch").groupby(["study", "run_id"], sort=False).tail(1)
    end = last[["study", "run_id", "test_acc", "val_acc", *[c for c in CLOCK_NAMES if c in last]]].rename(
        columns={"test_acc": "test_acc_end", "val_acc": "val_acc_end"})
    runs = runs.merge(end, on=["study", "run_id"], how="left")
    if "tau_best" in runs:
        at_best = hist.merge(runs[["study", "run_id", "tau_best"]], on=["study", "run_id"])
        at_best = at_best[at_best["epoch"] == at_best["tau_best"]]
        runs = runs.merge(at_best[["study", "run_id", *[c for c in CLOCK_NAMES if c in at_best]]].rename(
            columns={c: f"{c}_best" for c in CLOCK_NAMES}), on=["study", "run_id"], how="left")
    hist = carry_forward(hist)
    cells = []
    for _, g in runs.groupby(keys, dropna=False, sort=True):
        h = hist.merge(g[["study", "run_id"]], on=["study", "run_id"])
        settings = {k: g[k].iloc[0] for k in ("optimizer", "lr", "batch_size", "epochs", "l2", "weight_decay") if k in g}
        best_cols = [f"{c}_best" for c in CLOCK_NAMES]
        cells.append(ClockCell(label_of(g), settings, g.drop(columns=list(CLOCK_NAMES) + [c for c in best_cols if c in g]), h,
                               {c: float(g[c].mean()) for c in CLOCK_NAMES if c in g},
                               {c: float(g[f"{c}_best"].mean()) for c in CLOCK_NAMES if f"{c}_best" in g}))
    return cells


def plain(c: ClockCell, optimizers: tuple[str, ...]) -> bool:
    """No explicit L2 and no weight decay: the clock of the optimizer alone."""
    wd = c.settings.get("weight_decay")
    return c.settings.get("optimizer") in optimizers and not c.settings.get("l2") and (wd is None or not wd or pd.isna(wd))


def gone_reach(cell, side: V.Side, seeds: int = FEASIBLE_SEEDS) -> float:
    """The chance that a truly gone spread (every sigma_w alike) reads gone against ``side`` at ``seeds`` seeds,
    at ``cell``'s own noise (its seeds' per-seed covariance: :func:`initmem.stats.power.cell_truth`); nan without one."""
    truth = P.cell_truth(cell) if cell is not None else None
    if truth is None or not np.isfinite(truth[1]).all():
        return math.nan
    _, cov, k = truth
    gone = -1 if side.gone is not None else 1   # the code of the gone side: a gone zone's "not reproduced", "< b"'s "reproduced"
    return float(np.mean(P.spread_truth_codes(np.zeros(k - 1), cov, k, seeds, side) == gone))


def gone_verdict(est: V.Estimate, cell, side: V.Side) -> tuple[str, str]:
    """A spread read against a side that names a gone zone (:data:`RETAINED`: "> 1 pp, not reproduced within
    [0, 1)") or says it is gone ("< 1 pp"), by :func:`initmem.stats.verdicts.margin_verdict`; an undecided
    reading (its interval holds spreads inside the zone) reads ``undecidable at this size`` where a truly gone
    spread would read gone less than :data:`GONE_POWER` of the time even at :data:`FEASIBLE_SEEDS` seeds of
    this cell's noise: were the truth inside the zone, no feasible design would decide the row (calibrated:
    ``spread_gone``)."""
    word, why = V.margin_verdict(est.low, est.high, side)
    if word == V.NOT_REPRODUCED and side.gone is not None:
        why = f"the spread's interval lies within [0, {GONE_PP:g}) pp: gone (the paper's 'collapses the spread below 1 pp')"
    if word == V.INCONCLUSIVE:
        reach = gone_reach(cell, side)
        if reach < GONE_POWER:
            word, why = V.UNDECIDABLE, (f"{why}; a spread inside the zone the paper calls gone is out of this size's reach: a truly "
                                        f"gone spread would read gone {reach:.0%} of the time at {FEASIBLE_SEEDS} seeds of this cell's "
                                        "noise (its per-seed covariance); only a spread above the zone could be decided with more seeds")
    return word, why


def retained_verdict(est: V.Estimate, cell=None) -> tuple[str, str]:
    """"Still leaves a spread": :data:`RETAINED` read both ways against the zone [0, :data:`GONE_PP`) the
    paper's words call gone ("collapses the spread below 1 pp") by :func:`gone_verdict`: ``reproduced`` where
    the spread's interval lies wholly above it, ``not reproduced`` where it lies wholly inside it,
    ``undecidable at this size`` where it is read inside it out of the gone side's reach, else ``inconclusive``
    (calibrated: ``spread_gone`` in ``benchmarks/verdict_calibration.py``)."""
    return gone_verdict(est, cell, RETAINED)


def below_decided(est: V.Estimate | None, cell) -> tuple[str, str] | None:
    """A "the spread collapses below :data:`GONE_PP`" row's verdict (:func:`gone_verdict` against ``< GONE_PP``),
    or None where there is no interval to read (no estimate, one seed)."""
    if est is None or est.one_seed or not (math.isfinite(est.low) and math.isfinite(est.high)):
        return None
    return gone_verdict(est, cell, V.less(GONE_PP))


def undecided_power(est: V.Estimate | None, cell, side: V.Side, decided: tuple[str, str] | None):
    """The seeds that would decide an undecided gone-reading row if its true spread were its estimate (a function
    the claims table calls after every row is decided: :class:`initmem.claims.rows.WouldDecide`); "" for a decided one."""
    if decided is None or decided[0] not in (V.INCONCLUSIVE, V.UNDECIDABLE):
        return ""
    return lambda: P.would_decide(P.rate_for(est, side, [cell]), est.n_seeds)
