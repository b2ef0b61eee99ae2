"""What every claim module shares: the columns of ``claims.csv``, selecting a claim's runs into
cells (matched on sigma_w and seeds where two are compared) and turning an estimate into a row
with its verdict, interval method and regime (:mod:`initmem.stats.verdicts`)."""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from initmem import paper as published
from initmem.claims.cells import cell_from_history, cell_from_runs, regime_counts
from initmem.claims.claim import Claim, regime_check
from initmem.presentation import table_label
from initmem.spec import ADAPTIVE, entry_names  # noqa: F401  (the optimizer files that say CLOCK = "T_adapt"; table and clock claims import it here)
from initmem.stats import multiplicity as M
from initmem.stats import power as P
from initmem.stats import shapes as Sh
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V
from initmem.stats.verdicts import Cell, Estimate, Side

COLUMNS = ["id", "kind", "quantity", "paper", "reproduced", "ci_low", "ci_high", "ci_method", "paper_side", "verdict",
           "statistic_verdict", "n_runs", "n_seeds", "share_fit", "share_best_fitted", "read_at", "note", "exact_as_run", "scale",
           "null_mean", "p_null", "section", "regime", "would_decide", "p_decision", "p_holm", "verdict_holm", "runs_read"]
# The claims table's name of each optimizer and norm (initmem.presentation: the entry's file or derived from it)
LABEL = {n: table_label(n) for n in (*entry_names("optimizer"), "batchnorm", "layernorm")}
PAPER_LR = published.MAIN_LR  # main-study claims read only the runs at the main grid's learning rate
AT_BEST, AT_END, CURVE = "tau_best", "end of training", "curve over the run"
MAIN = dict(lr=PAPER_LR)
BELOW_PP = 1.0  # "collapses the spread below 1 pp", "|Delta| = 0.0"

# The paper's spreads (pp) that directional claims compare: main grid (optimizer, b); lr_l2 (lr, l2, b)
PAPER_MAIN = {(opt, b): published.spread(**({} if opt == "sgd" else {"optimizer": opt}), batch_size=b)
              for opt, b in (("sgd", 16), ("sgd", 128), ("sgd", 256), ("sgd_momentum", 16), ("adam", 16), ("adam", 128),
                             ("adam", 256), ("adamw", 128), ("muon", 128))}
PAPER_LR_L2 = {(lr, l2, b): published.spread(**({"lr": lr} if lr != 1e-3 else {}), **({"l2": l2} if l2 else {}), batch_size=b)
               for lr, l2, b in ((1e-3, 0.0, 16), (1e-3, 0.0, 128), (1e-2, 0.0, 16), (1e-1, 0.0, 16), (1e-2, 0.0, 128),
                                 (1e-1, 0.0, 128), (1e-2, 1e-2, 16), (1e-2, 1e-2, 128), (1e-2, 1e-3, 128))}


def paper_value(table: dict, *keys) -> float:
    """The paper's number at ``keys`` of one of the tables above (nan: the paper has none)."""
    return table.get(keys, math.nan)


def batches(df: pd.DataFrame) -> list[int]:
    """The batch sizes of ``df``'s runs, ascending."""
    return sorted(int(b) for b in set(df["batch_size"])) if not df.empty else []


def instead(paper_b: int, b: int, why: str) -> str:
    """The note of a row measured at another batch size than the paper's (empty when it is the paper's)."""
    return "" if b == paper_b else f"measured at b={b} instead of the paper's b={paper_b}: {why}"


def select(df: pd.DataFrame, study: str | None, **filters) -> pd.DataFrame:
    """Rows of ``study`` (any study: None) matching every filter (floats compared with isclose);
    empty when a column is missing."""
    if df.empty or "study" not in df:
        return df.iloc[0:0]
    if study is not None:
        df = df[df["study"] == study]
    for k, v in filters.items():
        if k not in df.columns:
            return df.iloc[0:0]
        df = df[np.isclose(df[k].astype(float), v)] if isinstance(v, float) else df[df[k] == v]
    return df


def describe(filters: dict) -> str:
    """'Adam b=16 lr=0.001' from a claim's filters (for notes and cell labels)."""
    parts = [LABEL.get(filters["optimizer"], filters["optimizer"])] if "optimizer" in filters else []
    names = {"batch_size": "b", "lr": "lr", "l2": "L2", "epochs": "E", "variant": "", "norm": ""}
    parts += [f"{names[k]}={v:g}" if isinstance(v, float) and names[k] else (f"{names[k]}={v}" if names[k] else str(v))
              for k, v in filters.items() if k in names]
    return " ".join(parts)


def config_of(df: pd.DataFrame) -> dict:
    """The settings one configuration's rows share (optimizer, lr, l2, batch_size; the regime rules read them)."""
    return {k: df[k].iloc[0] for k in ("optimizer", "lr", "l2", "batch_size", "epochs") if k in df and df[k].nunique(dropna=False) == 1}


def label_of(df: pd.DataFrame) -> str:
    """:func:`describe` of the settings one configuration's rows share."""
    keys = [k for k in ("optimizer", "batch_size", "lr", "l2", "epochs") if k in df and df[k].nunique() == 1]
    return describe({k: (float(df[k].iloc[0]) if k in ("lr", "l2") else df[k].iloc[0]) for k in keys})


def to_cell(sel: pd.DataFrame, metric: str = "test_acc_best", label: str = "") -> Cell | None:
    """The (sigma_w x seed) cell of one configuration's runs; None when empty."""
    if sel.empty:
        return None
    cell = cell_from_runs(sel, metric)
    cell.label, cell.config = label or label_of(sel), config_of(sel)
    return cell


def run_cell(runs: pd.DataFrame, study: str | None, metric: str = "test_acc_best", **filters) -> Cell | None:
    """The (sigma_w x seed) cell of one configuration; None when absent or when several match."""
    sel = select(runs, study, **filters)
    if not sel.empty and sel.duplicated(["sigma_w", "seed"]).any():
        print(f"claims: several configurations of {study} match {filters}; the claims on them are left out", file=sys.stderr)
        return None
    return to_cell(sel, metric)


def curve_cell(history: pd.DataFrame, runs: pd.DataFrame, study: str | None, metric: str = "val_acc", **filters) -> Cell | None:
    """The (epoch x sigma_w x seed) cell of one configuration (stopped runs carried), its regime
    counted on the same configuration's rows of runs.csv."""
    sel = select(history, study, **filters)
    if sel.empty or sel.duplicated(["sigma_w", "seed", "epoch"]).any():
        if not sel.empty:
            print(f"claims: several configurations of {study} match {filters}; the curve claims on them are left out", file=sys.stderr)
        return None
    cell = cell_from_history(sel, metric)
    cell.fit, cell.label, cell.config = regime_counts(select(runs, study, **filters)), label_of(sel), config_of(sel)
    return cell


def matched(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Both run sets restricted to the sigma_w values and seeds they share, and a note saying what
    was left out (empty when nothing was)."""
    sig, seeds = set(a["sigma_w"]) & set(b["sigma_w"]), set(a["seed"]) & set(b["seed"])
    keep = lambda d: d[d["sigma_w"].isin(sig) & d["seed"].isin(seeds)]
    ka, kb = keep(a), keep(b)
    if len(ka) == len(a) and len(kb) == len(b):
        return ka, kb, ""
    return ka, kb, (f"matched on sigma_w {'/'.join(f'{s:g}' for s in sorted(sig)) or 'none'} and seeds "
                    f"{'/'.join(map(str, sorted(seeds))) or 'none'} ({len(a) - len(ka)} + {len(b) - len(kb)} runs left out)")


@dataclass(frozen=True)
class Reading:
    """How one claims.csv row reaches its verdict (:func:`row`): the estimate (None: the config
    lacks what the claim needs, and ``missing`` says what), the paper's ``side``, the ``cells`` it
    reads (their regime), a verdict ``decided`` elsewhere (verdict, why), the seeds that would
    decide it (``power``: a text, or a function that simulates it, called only by :func:`would_decide`;
    for an inconclusive direction without one, derived from the estimate: a spread contrast of the two
    cells when ``contrast``), where it is read and a note."""

    est: Estimate | None = None
    side: Side | None = None
    decided: tuple[str, str] | None = None
    cells: Sequence[Cell] = ()
    read_at: str = AT_BEST
    note: str = ""
    missing: str = ""
    power: str | Callable[[], str] = ""
    contrast: bool = False
    outside: str = ""                 # a regime condition the row itself checks and finds broken (why, in words)
    p_decision: float | None = None   # the decision's p where the row has parts (multiplicity.parts_p); else the estimate's

    def statistic_verdict(self, kind: str) -> tuple[str, list[str]]:
        """The verdict of the statistic alone (a direction's: ``decided``, or the estimate against
        ``side``; another kind has none) and the notes it brings, the row's own note among them."""
        est, notes = self.est, [self.note]
        if est.non_monotone:  # a spread contrast: say which cell's end-to-end drop is not its spread
            notes.append(est.non_monotone)
        if kind != "direction":
            return "", notes
        if self.decided is not None:
            return self.decided[0], [self.decided[1], *notes]
        if not math.isfinite(est.effect) and not est.one_seed:
            return V.INCONCLUSIVE, ["no value", *notes]
        return V.side_verdict(est, self.side), notes


def runs_read(cells: Sequence[Cell]) -> str:
    """Which runs a row reads, as a short digest of their ids (each cell's ``key``): rows with the same
    digest read the same runs and are one finding (:mod:`initmem.reports.verdict_tables`); "" without cells."""
    ids = sorted({i for c in cells if c is not None for i in c.key.split("|") if i})
    return f"runs:{hashlib.blake2b('|'.join(ids).encode(), digest_size=6).hexdigest()}" if ids else ""


@dataclass(frozen=True)
class Decision:
    """What one row decided (:func:`decide`), before any column is formatted: the verdict of the
    statistic alone, the verdict after the claim's regime check and the notes that say why."""

    statistic_verdict: str
    verdict: str
    notes: tuple[str, ...]


def decide(kind: str, reading: Reading, claim: Claim | None) -> Decision:
    """The row's verdict from its statistic (:meth:`Reading.statistic_verdict`) and, for a direction,
    its claim's regime (:func:`initmem.claims.claim.regime_check`): ``outside the paper's regime`` where
    the cells are outside it (a one-seed or unmeasured row keeps its word)."""
    stat_v, notes = reading.statistic_verdict(kind)
    in_regime, why = regime_check(claim if kind == "direction" else None, reading.cells)
    if reading.outside and kind == "direction":
        in_regime, why = False, "; ".join(w for w in (why if in_regime is False else "", reading.outside) if w)
    v = stat_v
    if in_regime is False and v not in (V.ONE_SEED, V.NOT_MEASURED):
        v = V.OUTSIDE_REGIME
        notes.append(f"outside the paper's regime {why}")
    elif why:
        notes.append(why)
    return Decision(stat_v, v, tuple(notes))


@dataclass(frozen=True)
class WouldDecide:
    """The seeds that would decide a row, left for :func:`would_decide` to compute after every row is
    decided: it simulates the row's own rule, which no verdict waits on."""

    reading: Reading
    kind: str
    verdict: str

    def text(self) -> str:
        """``power`` (called where it is a function), or for an inconclusive direction of the statistic
        alone the seeds at which its rule, simulated from its fitted truth, decides with even chance."""
        r = self.reading
        if callable(r.power):
            return r.power()
        if self.kind == "direction" and self.verdict == V.INCONCLUSIVE and r.decided is None and not r.power and r.side is not None:
            return P.would_decide(P.rate_for(r.est, r.side, list(r.cells), contrast=r.contrast), r.est.n_seeds)
        return r.power


def would_decide(rows: list[dict]) -> list[dict]:
    """The second pass over decided rows: each row's ``would_decide`` as text (:class:`WouldDecide`)."""
    for r in rows:
        if isinstance(r["would_decide"], WouldDecide):
            r["would_decide"] = r["would_decide"].text()
    return rows


def row(cid: str, kind: str, quantity: str, paper: float, scale: str, reading: Reading = Reading(),
        claim: Claim | None = None) -> dict:
    """One claims.csv row: what the claim is (id, kind, quantity, the paper's number, the scale it
    was measured at, the ``claim`` of a direction), how it is decided (:class:`Reading`, :func:`decide`)
    and its columns. ``would_decide`` stays pending (:class:`WouldDecide`) until :func:`would_decide`.

    Without an estimate a direction is ``not measured``. A claim whose cells are outside the
    regime it states gets ``outside the paper's regime``, and the verdict of the statistic alone stays
    in ``statistic_verdict``."""
    est, side = reading.est, reading.side
    base = {"id": cid, "kind": kind, "quantity": quantity, "paper": paper, "read_at": reading.read_at, "exact_as_run": math.nan,
            "scale": scale, "paper_side": side.text() if side is not None else ""}
    if est is None:
        v = V.NOT_MEASURED if kind == "direction" else ""
        return base | {"reproduced": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_method": "", "verdict": v,
                       "statistic_verdict": v, "n_runs": 0, "n_seeds": 0, "share_fit": math.nan, "share_best_fitted": math.nan,
                       "null_mean": math.nan, "p_null": math.nan, "section": "", "regime": "", "would_decide": "",
                       "p_decision": math.nan, "p_holm": math.nan, "verdict_holm": v, "runs_read": "",
                       "note": "; ".join(n for n in (reading.missing or "not in this config", reading.note) if n)}
    claim = claim if kind == "direction" else None
    d = decide(kind, reading, claim)
    reg = V.regime(list(reading.cells))
    return base | {"reproduced": est.effect, "ci_low": est.low, "ci_high": est.high, "ci_method": est.method, "verdict": d.verdict,
                   "statistic_verdict": d.statistic_verdict, "n_runs": est.n_runs, "n_seeds": est.n_seeds,
                   "share_fit": reg["share_fit"], "share_best_fitted": reg["share_best_fitted"],
                   "null_mean": est.null_mean, "p_null": est.p_null,
                   "section": claim.section if claim else "", "regime": claim.regime_text() if claim else "",
                   "would_decide": WouldDecide(reading, kind, d.statistic_verdict),
                   "p_decision": (reading.p_decision if reading.p_decision is not None else
                                  M.decision_p(est, side, d.statistic_verdict) if kind == "direction" and side is not None else math.nan),
                   "p_holm": math.nan, "verdict_holm": d.verdict, "runs_read": runs_read(reading.cells),
                   "note": "; ".join(n for n in d.notes if n)}


def difference(stat):
    """stat(first cell) - stat(second cell), per replicate."""
    return lambda m: stat(m[0]) - stat(m[1])


def spread_gap(claim: Claim | None, cid: str, quantity: str, paper: float, a: pd.DataFrame, b: pd.DataFrame, side: Side, scale: str,
               note: str = "", missing: str = "") -> dict:
    """Directional claim "a's spread exceeds b's" on the paper's ``side`` (:func:`initmem.stats.spreads.contrast_estimate`:
    max - min in both cells, bounded by seed-paired t over every pair of sigma_w), the two run sets matched on sigma_w and seeds (:func:`matched`);
    the note says where a cell's sigma_w profile is not monotone (:func:`initmem.stats.spreads.monotone_test`)."""
    if a.empty or b.empty:
        return row(cid, "direction", quantity, paper, scale, Reading(side=side, missing=missing or "not in this config"), claim)
    a, b, match = matched(a, b)
    cells = [to_cell(a), to_cell(b)]
    if any(c is None for c in cells):
        return row(cid, "direction", quantity, paper, scale, Reading(side=side, missing=match), claim)
    est = Sp.contrast_estimate(cells)
    return row(cid, "direction", quantity, paper, scale, Reading(est, side=side, cells=cells, contrast=True,
               note="; ".join(n for n in (match, note) if n)), claim)


def fits(c: Cell, seeds: list) -> tuple[np.ndarray, np.ndarray]:
    """Replicate OLS slopes and standard errors of a curve cell (an ``estimate`` preparation)."""
    return c.fits(seeds)


def decay_row(claim: Claim | None, cid: str, quantity: str, cell: V.Cell, scale: str, floor_is_enough: bool, note: str) -> dict:
    """'|beta| decays by 1-2 orders' (or 'reaches the noise floor') for one configuration."""
    v, why, fall, shape0 = Sh.decay_decision(cell, floor_is_enough)
    floor, obs = float(shape0.floor[0]), float(shape0.observable[0])
    decided = (v, why)
    power = ""
    if decided[0] == V.BELOW_FLOOR and np.isfinite(obs):
        sxx = float(np.sum((cell.sigmas - cell.sigmas.mean()) ** 2))
        need, seeds = Sh.seeds_to_see_fall(max(obs, 0.0), Sh.DECAY_ORDERS, cell.n_seeds, sxx)
        power = (f"seeds x Sxx(sigma_w) >= {need:.3g} (now {cell.n_seeds} x {sxx:.3g}; floor = 2 sigma_r / sqrt(seeds x Sxx)): "
                 f"~{seeds:.0f} seeds at this sigma_w grid to see a {Sh.DECAY_ORDERS:g}-order fall")
    if Sh.sign_changes(cell.slopes([]), cell.epochs):
        note += "; beta changes sign between its peak and the last tenth (there |beta| counts only down to the noise floor)"
    side = V.greater(Sh.DECAY_ORDERS)
    return row(cid, "direction", quantity, math.nan, scale, Reading(fall, side=side, decided=decided, cells=[cell], read_at=CURVE, power=power,
               note=f"{note}; >= {Sh.DECAY_ORDERS:g} orders{' or to the noise floor' if floor_is_enough else ''}; "
                    f"noise floor {floor:.3g} (2 OLS SE), {obs:.2f} orders below the peak"), claim)
