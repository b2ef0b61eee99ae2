"""The paper's claims beside ours: ``claims.csv`` / ``claims.md``.

Three kinds of rows, all with the same columns:
- ``number``: a headline number of the paper (a spread, an accuracy, a |beta| level) and ours, with
  a 95% seed-bootstrap interval; no verdict (a number at another scale is not a direction);
- ``direction``: a directional claim (e.g. "SGD's spread exceeds Adam's at b=128"): the measured
  effect, its interval, the paper's side and a verdict (:mod:`initmem.verdicts`);
- ``clock``: the paper's forgetting-timescale arithmetic, recomputed.

Directional claims are generated for every batch size, learning rate, ... the config has, so the
same code gives verdicts at the default, the evidence and the paper scale.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np
import pandas as pd

from initmem import verdicts as V
from initmem.analysis import carry_forward, l2_ablation, long_run_comparison, matched_long_runs, scale_label
from initmem.clocks import paper_constant_lr_clocks, run_clocks
from initmem.verdicts import Cell, between, greater, less

COLUMNS = ["id", "kind", "quantity", "paper", "reproduced", "ci_low", "ci_high", "paper_side", "verdict",
           "n_runs", "n_seeds", "note", "exact_as_run", "scale"]
ADAPTIVE = ("adam", "adamw", "muon", "muon_full")
LABEL = {"sgd": "SGD", "sgd_momentum": "SGD-momentum", "adam": "Adam", "adamw": "AdamW", "muon": "Muon",
         "muon_full": "Muon (full)", "batchnorm": "BatchNorm", "layernorm": "LayerNorm"}

# The paper's spreads (pp) that directional claims compare: main grid (optimizer, b); lr_l2 (lr, l2, b)
PAPER_MAIN = {("sgd", 16): 22.8, ("sgd", 128): 26.5, ("sgd", 256): 25.7, ("sgd_momentum", 16): 10.9,
              ("adam", 16): 1.6, ("adam", 128): 4.3, ("adam", 256): 5.3, ("adamw", 128): 4.7, ("muon", 128): 4.0}
PAPER_LR_L2 = {(1e-3, 0.0, 16): 22.8, (1e-3, 0.0, 128): 26.5, (1e-2, 0.0, 16): 9.7, (1e-1, 0.0, 16): 4.5,
               (1e-2, 0.0, 128): 23.8, (1e-1, 0.0, 128): 8.1, (1e-2, 1e-2, 16): 0.3, (1e-2, 1e-2, 128): 0.3,
               (1e-2, 1e-3, 128): 17.4}
LONG_UNCHANGED_PP = 5.0   # "essentially unchanged": the long run's spread within 5 pp of the matched main grid's
FLAT_ORDERS = 0.5         # "stays flat": |beta| falls by less than half an order of magnitude
DECAY_ORDERS = 1.0        # "decay by 1-2 orders of magnitude": at least one
BELOW_PP = 1.0            # "collapses the spread below 1 pp", "|Delta| = 0.0"

# (id, quantity, paper value, (study[@sigma_w], filters)): a spread, or the seed-mean test acc at sigma_w
SPREAD_CLAIMS = [
    ("sgd_b128_spread", "SGD b=128 sigma_w spread (pp)", 26.5, ("main", dict(optimizer="sgd", batch_size=128))),
    ("sgd_b128_acc_0.1", "SGD b=128 test acc at sigma_w=0.1 (%)", 85.0, ("main@0.1", dict(optimizer="sgd", batch_size=128))),
    ("sgd_b128_acc_2.5", "SGD b=128 test acc at sigma_w=2.5 (%)", 58.6, ("main@2.5", dict(optimizer="sgd", batch_size=128))),
    ("adam_b128_spread", "Adam b=128 spread (pp)", 4.3, ("main", dict(optimizer="adam", batch_size=128))),
    ("adamw_b128_spread", "AdamW b=128 spread (pp)", 4.7, ("main", dict(optimizer="adamw", batch_size=128))),
    ("muon_b128_spread", "Muon b=128 spread (pp)", 4.0, ("main", dict(optimizer="muon", batch_size=128))),
    ("adam_b16_spread", "Adam b=16 spread (pp)", 1.6, ("main", dict(optimizer="adam", batch_size=16))),
    ("sgd_b16_spread", "SGD b=16 spread (pp)", 22.8, ("main", dict(optimizer="sgd", batch_size=16))),
    ("momentum_b16_spread", "SGD-momentum b=16 spread (pp)", 10.9, ("main", dict(optimizer="sgd_momentum", batch_size=16))),
    ("sgd_b256_spread", "SGD b=256 spread (pp)", 25.7, ("main", dict(optimizer="sgd", batch_size=256))),
    ("adam_b256_spread", "Adam b=256 spread (pp)", 5.3, ("main", dict(optimizer="adam", batch_size=256))),
    ("lr1e-2_b16_spread", "SGD eta=1e-2 b=16 spread (pp)", 9.7, ("lr_l2", dict(lr=1e-2, l2=0.0, batch_size=16))),
    ("lr1e-1_b16_spread", "SGD eta=1e-1 b=16 spread (pp)", 4.5, ("lr_l2", dict(lr=1e-1, l2=0.0, batch_size=16))),
    ("lr1e-2_b128_spread", "SGD eta=1e-2 b=128 spread (pp)", 23.8, ("lr_l2", dict(lr=1e-2, l2=0.0, batch_size=128))),
    ("lr1e-1_b128_spread", "SGD eta=1e-1 b=128 spread (pp)", 8.1, ("lr_l2", dict(lr=1e-1, l2=0.0, batch_size=128))),
    ("l2_1e-2_b16_spread", "SGD eta=1e-2 L2=1e-2 b=16 spread (pp)", 0.3, ("lr_l2", dict(lr=1e-2, l2=1e-2, batch_size=16))),
    ("l2_1e-2_b128_spread", "SGD eta=1e-2 L2=1e-2 b=128 spread (pp)", 0.3, ("lr_l2", dict(lr=1e-2, l2=1e-2, batch_size=128))),
    ("l2_1e-3_b128_spread", "SGD eta=1e-2 L2=1e-3 b=128 spread (pp)", 17.4, ("lr_l2", dict(lr=1e-2, l2=1e-3, batch_size=128))),
    ("resnet56_sgd_b128_spread", "ResNet-56 SGD b=128 spread (pp)", 24.2, ("depth", dict(variant="resnet56", optimizer="sgd", batch_size=128))),
    ("resnet110_sgd_b128_spread", "ResNet-110 SGD b=128 spread (pp)", 20.4, ("depth", dict(variant="resnet110", optimizer="sgd", batch_size=128))),
    ("recipe_b128_spread", "standard SGD recipe b=128 abs Delta (pp)", 0.0, ("best_recipe", dict(variant="sgd_standard", batch_size=128))),
    ("recipe_b128_acc", "standard SGD recipe b=128 test acc, sigma_w=0.1 (%)", 94.2, ("best_recipe@0.1", dict(variant="sgd_standard", batch_size=128))),
]

# (id, quantity, paper value, clock, batch size, epochs, lr, l2, schedule of the paper's run)
TIMESCALE_CLAIMS = [
    ("T_sgd_b128_300", "T_SGD, SGD b=128 eta=1e-3, 300 epochs", 7.3e-4, "T_sgd", 128, 300, 1e-3, 0.0, "cosine"),
    ("T_sgd_b128_5000", "T_SGD, SGD b=128 eta=1e-3, 5000 epochs", 1.2e-2, "T_sgd", 128, 5000, 1e-3, 0.0, "constant"),
    ("T_sgd_b16_lr1e-2", "T_SGD, SGD b=16 eta=1e-2, 300 epochs", 4.7, "T_sgd", 16, 300, 1e-2, 0.0, "cosine"),
    ("T_l2_b128_1e-3", "T_L2, SGD b=128 eta=1e-2 L2=1e-3", 0.94, "T_l2", 128, 300, 1e-2, 1e-3, "cosine"),
    ("T_l2_b128_5e-3", "T_L2, SGD b=128 eta=1e-2 L2=5e-3", 4.7, "T_l2", 128, 300, 1e-2, 5e-3, "cosine"),
]


# --- selecting the runs of a claim -------------------------------------------------------------

def select(df: pd.DataFrame, study: str, **filters) -> pd.DataFrame:
    """Rows of ``study`` matching every filter (floats compared with isclose); empty when a column is missing."""
    if df.empty or "study" not in df:
        return df.iloc[0:0]
    df = df[df["study"] == study]
    for k, v in filters.items():
        if k not in df.columns:
            return df.iloc[0:0]
        df = df[np.isclose(df[k].astype(float), v)] if isinstance(v, float) else df[df[k] == v]
    return df


def run_cell(runs: pd.DataFrame, study: str, metric: str = "test_acc_best", **filters) -> Cell | None:
    """The (sigma_w x seed) cell of one configuration; None when absent or when several match."""
    sel = select(runs, study, **filters)
    if not sel.empty and sel.duplicated(["sigma_w", "seed"]).any():
        print(f"claims: several configurations of {study} match {filters}; the claims on them are left out", file=sys.stderr)
        return None
    return V.cell_from_runs(sel, metric) if not sel.empty else None


def curve_cell(history: pd.DataFrame, study: str, **filters) -> Cell | None:
    """The (epoch x sigma_w x seed) val-accuracy cell of one configuration (stopped runs carried)."""
    sel = select(history, study, **filters)
    if not sel.empty and sel.duplicated(["sigma_w", "seed", "epoch"]).any():
        print(f"claims: several configurations of {study} match {filters}; the |beta| claims on them are left out", file=sys.stderr)
        return None
    if sel.empty:
        return None
    return V.cell_from_history(sel)


def _batches(df: pd.DataFrame) -> list[int]:
    return sorted(int(b) for b in set(df["batch_size"])) if not df.empty else []


def two_batches(df: pd.DataFrame) -> list[int]:
    """b=16 and b=128 where present (the paper's pair), else the smallest and largest present."""
    bs = _batches(df)
    pair = [b for b in (16, 128) if b in bs]
    return pair if len(pair) == 2 else sorted({bs[0], bs[-1]}) if bs else []


def _paper(table: dict, *keys) -> float:
    return table.get(keys, math.nan)


# --- rows ----------------------------------------------------------------------------------------

def _row(cid: str, kind: str, quantity: str, paper: float, scale: str, result: dict | None, note: str = "") -> dict:
    if result is None:  # the config lacks a run this claim needs
        return {"id": cid, "kind": kind, "quantity": quantity, "paper": paper, "reproduced": math.nan,
                "ci_low": math.nan, "ci_high": math.nan, "paper_side": "", "verdict": V.INCONCLUSIVE if kind == "direction" else "",
                "n_runs": 0, "n_seeds": 0, "note": note or "not in this config", "exact_as_run": math.nan, "scale": scale}
    notes = "; ".join(n for n in (result["note"], note) if n)
    return {"id": cid, "kind": kind, "quantity": quantity, "paper": paper, "reproduced": result["effect"],
            "ci_low": result["ci_low"], "ci_high": result["ci_high"], "paper_side": result["paper_side"],
            "verdict": result["verdict"], "n_runs": result["n_runs"], "n_seeds": result["n_seeds"], "note": notes,
            "exact_as_run": math.nan, "scale": scale}


def _difference(stat: Callable[[np.ndarray], np.ndarray]) -> Callable[[list[np.ndarray]], np.ndarray]:
    """stat(first cell) - stat(second cell), per replicate."""
    return lambda m: stat(m[0]) - stat(m[1])


def _spread_gap(cid: str, quantity: str, paper: float, a: Cell | None, b: Cell | None, side: V.Side, scale: str) -> dict:
    """Directional claim spread(a) - spread(b) on the paper's ``side``."""
    result = V.evaluate([a, b], _difference(V.spread_pp), side) if a is not None and b is not None else None
    return _row(cid, "direction", quantity, paper, scale, result)


def number_claims(runs: pd.DataFrame) -> list[dict]:
    """The paper's headline spreads and accuracies beside ours, with seed-bootstrap intervals."""
    rows = []
    for cid, quantity, paper, (where, filters) in SPREAD_CLAIMS:
        study, _, sigma = where.partition("@")
        cell = run_cell(runs, study, **filters)
        result = None
        if cell is not None:
            if sigma:
                i = np.flatnonzero(np.isclose(cell.sigmas, float(sigma)))
                result = V.evaluate([cell], lambda m, i=i: 100 * m[0][:, i[0]], None) if len(i) else None
            else:
                result = V.evaluate([cell], lambda m: V.spread_pp(m[0]), None)
        scale = scale_label(runs, study) if result is not None else f"not in this config (study {study})"
        rows.append(_row(cid, "number", quantity, paper, scale, result))
    for _, r in long_run_comparison(runs).iterrows():
        b = int(r["batch_size"])
        lg, mm = matched_long_runs(runs, b)
        long_cell, main_cell = (V.cell_from_runs(d) if not d.empty else None for d in (lg, mm))
        scale = scale_label(runs, ["long", "main"])
        note = f"matched sigma_w {r['sigma_w'] or 'none'}, seeds {r['seeds'] or 'none'}"
        for cid, quantity, paper, cell in (
                (f"long_b{b}_spread", f"long constant-LR SGD b={b} spread (pp)", 26.0 if b == 128 else math.nan, long_cell),
                (f"main_b{b}_spread_matched", f"main-grid SGD b={b} spread on the long run's sigma_w and seeds (pp)",
                 26.5 if b == 128 else math.nan, main_cell)):
            result = V.evaluate([cell], lambda m: V.spread_pp(m[0]), None) if cell is not None else None
            rows.append(_row(cid, "number", quantity, paper, scale, result, note + ("; paper: '~26 pp'" if b == 128 else "")))
        side = between(-LONG_UNCHANGED_PP, LONG_UNCHANGED_PP)
        result = (V.evaluate([long_cell, main_cell], _difference(V.spread_pp), side)
                  if long_cell is not None and main_cell is not None else None)
        rows.append(_row(f"long_b{b}_retains", "direction",
                         f"long constant-LR minus main-grid SGD spread, b={b}, matched (pp): both regimes retain the spread",
                         math.nan, scale, result, f"{note}; 'essentially unchanged' read as within {LONG_UNCHANGED_PP:g} pp"))
    return rows


# --- directional claims on spreads --------------------------------------------------------------

def optimizer_claims(runs: pd.DataFrame) -> list[dict]:
    """Sec. 3.1: SGD's spread exceeds each adaptive optimizer's at every batch size; momentum
    reduces SGD's spread at small batch; a larger batch raises SGD's and Adam's spread; SGD b=128
    reaches >= 99.5% train accuracy across the whole sweep."""
    main = runs[runs["study"] == "main"]
    if main.empty:
        return []
    scale, rows = scale_label(runs, "main"), []
    opts = set(main["optimizer"])
    for b in _batches(main[main["optimizer"] == "sgd"]):
        sgd = run_cell(runs, "main", optimizer="sgd", batch_size=b)
        for opt in [o for o in ADAPTIVE if o in opts]:
            paper = _paper(PAPER_MAIN, "sgd", b) - _paper(PAPER_MAIN, opt, b)
            rows.append(_spread_gap(f"sgd_gt_{opt}_b{b}", f"SGD minus {LABEL[opt]} spread, b={b} (pp)", paper,
                                    sgd, run_cell(runs, "main", optimizer=opt, batch_size=b), greater(0), scale))
    bs = sorted(set(_batches(main[main["optimizer"] == "sgd"])) & set(_batches(main[main["optimizer"] == "sgd_momentum"])))
    if bs:
        b = bs[0]
        rows.append(_spread_gap(f"momentum_lt_sgd_b{b}", f"SGD minus SGD-momentum spread, b={b} (pp): momentum helps at small batch",
                                _paper(PAPER_MAIN, "sgd", b) - _paper(PAPER_MAIN, "sgd_momentum", b),
                                run_cell(runs, "main", optimizer="sgd", batch_size=b),
                                run_cell(runs, "main", optimizer="sgd_momentum", batch_size=b), greater(0), scale))
    for opt in ("sgd", "adam"):
        obs = _batches(main[main["optimizer"] == opt])
        if len(obs) >= 2:
            lo, hi = obs[0], obs[-1]
            rows.append(_spread_gap(f"batch_raises_{opt}_spread", f"{LABEL[opt]} spread at b={hi} minus b={lo} (pp): large batch slows forgetting",
                                    _paper(PAPER_MAIN, opt, hi) - _paper(PAPER_MAIN, opt, lo),
                                    run_cell(runs, "main", optimizer=opt, batch_size=hi),
                                    run_cell(runs, "main", optimizer=opt, batch_size=lo), greater(0), scale))
    sgd_bs = _batches(main[main["optimizer"] == "sgd"])
    if sgd_bs:
        b = 128 if 128 in sgd_bs else sgd_bs[-1]
        cell = run_cell(runs, "main", "train_acc_best", optimizer="sgd", batch_size=b)
        result = V.evaluate([cell], lambda m: 100 * np.nanmin(m[0], axis=-1), greater(99.5)) if cell is not None else None
        rows.append(_row(f"sgd_b{b}_interpolates", "direction",
                         f"SGD b={b}: lowest seed-mean train acc at tau_best over the sigma_w sweep (%)",
                         math.nan, scale, result, "paper: >= 99.5% across the entire sweep"))
    return rows


def repair_claims(runs: pd.DataFrame) -> list[dict]:
    """Sec. 3.2 / Table 4: a larger lr reduces SGD's spread; L2 reduces it; lambda=5e-3 at eta=1e-2,
    b=128 collapses it below 1 pp."""
    lr_l2 = runs[runs["study"] == "lr_l2"]
    if lr_l2.empty:
        return []
    scale, rows = scale_label(runs, "lr_l2"), []
    for b in _batches(lr_l2):
        lrs = sorted(set(lr_l2.loc[(lr_l2["batch_size"] == b) & (lr_l2["l2"] == 0), "lr"]))
        for lo, hi in zip(lrs, lrs[1:], strict=False):
            rows.append(_spread_gap(f"lr_reduces_sgd_b{b}_{lo:g}_to_{hi:g}", f"SGD spread at eta={lo:g} minus eta={hi:g}, b={b}, no L2 (pp)",
                                    _paper(PAPER_LR_L2, lo, 0.0, b) - _paper(PAPER_LR_L2, hi, 0.0, b),
                                    run_cell(runs, "lr_l2", lr=float(lo), l2=0.0, batch_size=b),
                                    run_cell(runs, "lr_l2", lr=float(hi), l2=0.0, batch_size=b), greater(0), scale))
        for lr in sorted(set(lr_l2.loc[lr_l2["batch_size"] == b, "lr"])):
            l2s = sorted(set(lr_l2.loc[(lr_l2["batch_size"] == b) & np.isclose(lr_l2["lr"], lr), "l2"]))
            if len(l2s) < 2 or l2s[0] != 0:
                continue
            top = l2s[-1]
            rows.append(_spread_gap(f"l2_reduces_sgd_lr{lr:g}_b{b}", f"SGD spread without L2 minus with L2={top:g}, eta={lr:g}, b={b} (pp)",
                                    _paper(PAPER_LR_L2, lr, 0.0, b) - _paper(PAPER_LR_L2, lr, top, b),
                                    run_cell(runs, "lr_l2", lr=float(lr), l2=0.0, batch_size=b),
                                    run_cell(runs, "lr_l2", lr=float(lr), l2=float(top), batch_size=b), greater(0), scale))
    cell = run_cell(runs, "lr_l2", lr=1e-2, l2=5e-3, batch_size=128)
    result = V.evaluate([cell], lambda m: V.spread_pp(m[0]), less(BELOW_PP)) if cell is not None else None
    rows.append(_row("l2_5e-3_b128_below_1pp", "direction", "SGD eta=1e-2 L2=5e-3 b=128 spread (pp): collapses below 1 pp",
                     math.nan, scale if cell is not None else "not in this config (lr_l2: lr 1e-2, l2 5e-3, b 128)", result))
    return rows


def norm_aug_claims(runs: pd.DataFrame) -> list[dict]:
    """App. E: augmentation and LayerNorm reduce SGD's spread; Adam stays below SGD under both."""
    na = runs[runs["study"] == "norm_aug"]
    if na.empty:
        return []
    rows = []
    for b in _batches(na):
        base = run_cell(runs, "main", optimizer="sgd", batch_size=b, norm="batchnorm", augment=False)
        aug = run_cell(runs, "norm_aug", optimizer="sgd", batch_size=b, norm="batchnorm")
        if base is not None:
            rows.append(_spread_gap(f"aug_reduces_sgd_b{b}", f"SGD BatchNorm spread without minus with augmentation, b={b} (pp)",
                                    math.nan, base, aug, greater(0), scale_label(runs, ["main", "norm_aug"])))
        rows.append(_spread_gap(f"layernorm_reduces_sgd_b{b}", f"SGD spread BatchNorm minus LayerNorm, with augmentation, b={b} (pp)",
                                math.nan, aug, run_cell(runs, "norm_aug", optimizer="sgd", batch_size=b, norm="layernorm"),
                                greater(0), scale_label(runs, "norm_aug")))
        for norm in ("batchnorm", "layernorm"):
            rows.append(_spread_gap(f"adam_robust_{norm}_b{b}", f"SGD minus Adam spread, {LABEL[norm]} + augmentation, b={b} (pp)",
                                    math.nan, run_cell(runs, "norm_aug", optimizer="sgd", batch_size=b, norm=norm),
                                    run_cell(runs, "norm_aug", optimizer="adam", batch_size=b, norm=norm), greater(0),
                                    scale_label(runs, "norm_aug")))
    return rows


def recipe_depth_claims(runs: pd.DataFrame) -> list[dict]:
    """App. F: the standard recipe's |Delta| at b=128 below 1 pp, and its accuracy above Adam's;
    App. D: deeper ResNets train worse at the largest sigma_w than ResNet-9."""
    rows = []
    best = runs[runs["study"] == "best_recipe"]
    if not best.empty:
        scale = scale_label(runs, "best_recipe")
        bs = _batches(best)
        b = 128 if 128 in bs else bs[-1]
        cell = run_cell(runs, "best_recipe", variant="sgd_standard", batch_size=b)
        result = V.evaluate([cell], lambda m: V.spread_pp(m[0]), less(BELOW_PP)) if cell is not None else None
        rows.append(_row(f"recipe_b{b}_erases", "direction", f"standard SGD recipe b={b} |Delta| (pp): the spread collapses",
                         0.0, scale, result, f"'collapses to zero' read as below {BELOW_PP:g} pp"))
        adam = run_cell(runs, "best_recipe", variant="adam", batch_size=b)
        mean_acc = lambda m: 100 * np.nanmean(m, axis=-1)  # noqa: E731
        result = V.evaluate([cell, adam], _difference(mean_acc), greater(0)) if cell is not None and adam is not None else None
        rows.append(_row(f"recipe_beats_adam_b{b}", "direction", f"standard SGD recipe minus Adam test acc, b={b}, mean over sigma_w (pp)",
                         math.nan, scale, result))
    depth = runs[runs["study"] == "depth"]
    if not depth.empty and "variant" in depth:
        scale = scale_label(runs, ["main", "depth"])
        top = float(depth["sigma_w"].max())
        for arch in ("resnet56", "resnet110"):
            for b in _batches(depth[(depth["variant"] == arch) & (depth["optimizer"] == "sgd")]):
                r9 = run_cell(runs, "main", "train_acc_best", optimizer="sgd", batch_size=b)
                deep = run_cell(runs, "depth", "train_acc_best", variant=arch, optimizer="sgd", batch_size=b)
                result = None
                if r9 is not None and deep is not None and np.isclose(r9.sigmas, top).any():
                    i9, idp = (int(np.flatnonzero(np.isclose(c.sigmas, top))[0]) for c in (r9, deep))
                    result = V.evaluate([r9, deep], lambda m, i9=i9, idp=idp: 100 * (m[0][:, i9] - m[1][:, idp]), greater(0))
                rows.append(_row(f"depth_{arch}_trains_worse_b{b}", "direction",
                                 f"SGD train acc at tau_best, sigma_w={top:g}, b={b}: ResNet-9 minus {arch.replace('resnet', 'ResNet-')} (pp)",
                                 math.nan, scale, result, "" if result is not None else f"main lacks sigma_w={top:g} or the batch size"))
    return rows


# --- directional claims on |beta(t)| -----------------------------------------------------------

def beta_claims(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """Sec. 4.2, Figure 6: SGD's |beta| stays flat (near 1e-1) while Adam, AdamW and Muon decay by
    1-2 orders of magnitude; SGD + L2 (eta=1e-2, L2=1e-2, or the config's strongest L2 at its largest
    lr: :func:`initmem.analysis.l2_ablation`) decays like them; the |beta| curves of
    different batch sizes lie closer together against the clock than against the epoch."""
    if history.empty:
        return []
    history = carry_forward(history)
    main = runs[runs["study"] == "main"]
    scale, rows = scale_label(runs, "main"), []
    abs_slopes = lambda c, n: np.abs(c.slopes(n))  # noqa: E731
    decay = lambda m, c: V.decay_orders(m[0], c.epochs)  # noqa: E731
    for opt in [o for o in ("sgd", *ADAPTIVE) if o in set(main["optimizer"])]:
        pair = two_batches(main[main["optimizer"] == opt])
        for b in pair:
            cell = curve_cell(history, "main", optimizer=opt, batch_size=b)
            if cell is None:
                continue
            if opt != "sgd":
                result = V.evaluate([cell], lambda m, c=cell: decay(m, c), greater(DECAY_ORDERS), prepare=abs_slopes)
                rows.append(_row(f"beta_decay_{opt}_b{b}", "direction", f"{LABEL[opt]} b={b}: orders of magnitude |beta(t)| falls",
                                 math.nan, scale, result, "paper: 1-2 orders of magnitude"))
                continue
            result = V.evaluate([cell], lambda m, c=cell: decay(m, c), between(-FLAT_ORDERS, FLAT_ORDERS), prepare=abs_slopes)
            rows.append(_row(f"beta_flat_sgd_b{b}", "direction", f"SGD b={b}: orders of magnitude |beta(t)| falls (peak tenth / last tenth)",
                             0.0, scale, result, f"'stays flat' read as within {FLAT_ORDERS:g} orders"))
            if b == max(pair):
                result = V.evaluate([cell], lambda m, c=cell: V.window_means(m[0], c.epochs)[:, -1], None, prepare=abs_slopes)
                rows.append(_row(f"beta_level_sgd_b{b}", "number", f"SGD b={b}: |beta| in the last tenth of training",
                                 0.1 if b == 128 else math.nan, scale, result, "paper: 'flat near 1e-1'"))
    ablation = l2_ablation(runs)
    if ablation is not None:
        lr, l2 = ablation
        for b in _batches(select(runs, "lr_l2", lr=lr, l2=l2)):
            cell = curve_cell(history, "lr_l2", lr=lr, l2=l2, batch_size=b)
            if cell is not None:
                result = V.evaluate([cell], lambda m, c=cell: decay(m, c), greater(DECAY_ORDERS), prepare=abs_slopes)
                rows.append(_row(f"beta_decay_sgd_l2_b{b}", "direction", f"SGD eta={lr:g} L2={l2:g} b={b}: orders of magnitude |beta(t)| falls",
                                 math.nan, scale_label(runs, "lr_l2"), result,
                                 "paper (eta=1e-2, L2=1e-2): reaches the adaptive noise floor"))
    for opt, clock in (("sgd", "T_sgd"), ("adam", "T_adapt")):
        rows.append(collapse_claim(runs, history, opt, clock, scale))
    return rows


def collapse_claim(runs: pd.DataFrame, history: pd.DataFrame, opt: str, clock: str, scale: str) -> dict:
    """Distance between the log10 |beta| curves of the main grid's batch sizes against the epoch
    minus against ``clock`` (:func:`initmem.verdicts.collapse_distances`); the paper: > 0."""
    cid, quantity = f"collapse_{opt}_{clock}", f"{LABEL[opt]}: |beta| curve distance across batch sizes, epoch minus {clock} (orders of magnitude)"
    bs = _batches(select(runs, "main", optimizer=opt))
    cells = [c for c in (curve_cell(history, "main", optimizer=opt, batch_size=b) for b in bs) if c is not None]
    if len(cells) < 2:
        return _row(cid, "direction", quantity, math.nan, scale, None, "needs >= 2 batch sizes")
    point: dict = {}

    def statistic(curves: list[np.ndarray]) -> np.ndarray:
        d = V.collapse_distances(cells, curves, clock)
        if not point:
            point.update(d)
        return d.get("difference", np.full(len(curves[0]), np.nan))

    result = V.evaluate(cells, statistic, greater(0), prepare=lambda c, n: V.log_abs_beta(c.slopes(n)))
    if not point.get("pairs"):
        return _row(cid, "direction", quantity, math.nan, scale, result, f"the {clock} ranges of the batch sizes do not overlap")
    note = (f"epoch distance {point['epoch'][0]:.2f}, {clock} distance {point['clock'][0]:.2f} over {point['pairs']} "
            f"pair(s) of b={'/'.join(map(str, bs))}")
    return _row(cid, "direction", quantity, math.nan, scale, result, note)


def timescale_claims() -> list[dict]:
    """The paper's quoted clocks beside the same arithmetic (``reproduced``: constant lr, K = E n/b,
    n = 40,000, :func:`initmem.clocks.paper_constant_lr_clocks`): like with like. ``exact_as_run`` is
    the sum a run records (:func:`initmem.clocks.run_clocks`) under the schedule the paper's run used
    (cosine, alpha 0.01; constant for the 5,000-epoch control)."""
    rows = []
    for cid, quantity, paper, clock, b, e, lr, l2, schedule in TIMESCALE_CLAIMS:
        spec = {"optimizer": "sgd", "lr": lr, "batch_size": b, "epochs": e, "n_train": 40_000, "l2": l2,
                "schedule": schedule, "alpha": 0.01, "weight_decay": None}
        row = _row(cid, "clock", quantity, paper, "", {"effect": paper_constant_lr_clocks(spec)[clock],
                                                       "ci_low": math.nan, "ci_high": math.nan, "n_runs": 0, "n_seeds": 0,
                                                       "paper_side": "", "verdict": "", "note": ""})
        row["exact_as_run"] = run_clocks(spec)[clock]
        row["scale"] = (f"reproduced: the paper's constant-lr arithmetic at its scale (n_train=40000, K = E n/b); "
                        f"exact_as_run: the recorded sum under the {schedule} schedule the paper's run used")
        rows.append(row)
    return rows


def claims(runs: pd.DataFrame, history: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every claim row (numbers, directions with verdicts, clocks); see the module docstring."""
    history = history if history is not None else pd.DataFrame()
    rows = number_claims(runs) if not runs.empty else []
    if not runs.empty:
        rows += optimizer_claims(runs) + repair_claims(runs) + norm_aug_claims(runs) + recipe_depth_claims(runs)
        rows += beta_claims(runs, history)
    rows += timescale_claims()
    return pd.DataFrame(rows, columns=COLUMNS)


# --- Markdown ------------------------------------------------------------------------------------

def _fmt(v, spec: str = ".3g") -> str:
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else format(float(v), spec)
    return str(v).replace("|", "\\|")  # a literal | would end the Markdown cell


def claims_markdown(table: pd.DataFrame) -> str:
    """claims.csv rendered for reading: verdicts first, then the numbers and the clock arithmetic;
    the scale of each study once, at the top (claims.csv has it on every row)."""
    out = ["# The paper's claims beside ours\n",
           "Intervals: 95% percentile bootstrap over seeds (seeds resampled with replacement within each "
           f"configuration, {V.N_BOOT} resamples, fixed RNG). Verdict: `reproduced` when the interval lies entirely "
           "on the paper's side, `not reproduced` when entirely on the other side, else `inconclusive` "
           "(always with 1 seed).\n"]
    measured = table[(table["kind"] != "clock") & ~table["scale"].str.startswith("not in this config")]
    scales = sorted({part for s in measured["scale"] for part in s.split("; ")})
    if scales:
        out += ["Measured at:\n", "\n".join(f"- {s}" for s in scales) + "\n"]
    d = table[table["kind"] == "direction"]
    if not d.empty:
        counts = d["verdict"].value_counts()
        out.append("**" + ", ".join(f"{counts.get(v, 0)} {v}" for v in (V.REPRODUCED, V.NOT_REPRODUCED, V.INCONCLUSIVE))
                   + f" of {len(d)} directional claims.**\n")
        out += ["## Directional claims\n", _md(d, ["id", "quantity", "paper", "reproduced", "95% CI", "paper_side", "verdict",
                                                  "n_runs", "note"])]
    n = table[table["kind"] == "number"]
    if not n.empty:
        out += ["## Headline numbers\n", _md(n, ["id", "quantity", "paper", "reproduced", "95% CI", "n_runs", "note"])]
    c = table[table["kind"] == "clock"]
    if not c.empty:
        out += ["## Forgetting timescales\n", _md(c, ["id", "quantity", "paper", "reproduced", "exact_as_run", "scale"])]
    return "\n".join(out)


def _md(df: pd.DataFrame, cols: list[str]) -> str:
    df = df.copy()
    df["95% CI"] = [f"[{_fmt(lo)}, {_fmt(hi)}]" if np.isfinite(lo) else "" for lo, hi in zip(df["ci_low"], df["ci_high"], strict=True)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for _, r in df.iterrows()]
    return "\n".join(lines) + "\n"
