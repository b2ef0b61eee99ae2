"""Sec. 4.2, Figure 6 (a-d): SGD's |beta(t)| stays flat near 1e-1 (its range over the run and its level);
each adaptive optimizer's falls by 1-2 orders of magnitude (where its runs end at the paper's T_adapt);
the SGD + L2 ablation's reaches the noise floor. The statistics: :mod:`initmem.stats.shapes`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem.claims.analysis import carry_forward, l2_ablation, scale_label
from initmem.claims.claim import CURVE_READ, Claim
from initmem.claims.rows import ADAPTIVE, AT_END, CURVE, LABEL, MAIN, Reading, batches, curve_cell, decay_row, fits, row, select
from initmem.claims.selection import DECAY, FLAT, Readable, RunsRead, Selection
from initmem.paper import ADAM_T_ADAPT_RANGE, Q_FIG6
from initmem.stats import shapes as Sh
from initmem.stats import verdicts as V

ORDER = 70
BETA_FLAT = Claim(("beta_flat_sgd_b{b}", "beta_level_sgd_b{b}"), "|beta| shapes", Q_FIG6, "Sec. 4.2, Fig. 6a",
                  "range of |beta(t)| over the settled run; the last tenth's level", "main grid SGD, lr 1e-3",
                  "in [-0.5, 0.5] orders; in [0.032, 0.32]", clock=("T_sgd", 0.0, 1.0), reads=CURVE_READ)
BETA_DECAY_L2 = Claim(("beta_decay_sgd_l2_b{b}",), "|beta| shapes", Q_FIG6, "Sec. 4.2, Fig. 6a",
                      "fall of |beta(t)| from its held peak (orders), or to the floor", "lr_l2 strongest L2", "> 0.6",
                      clock=("T_l2", 1.0, math.inf), reads=CURVE_READ)
# the clock tier's adaptive configurations ending at the paper's T_adapt read the same claim (initmem.claims.catalogue.clocks)
BETA_DECAY = Claim(("beta_decay_{adaptive}_b{b}", "adapt_beta_falls_{configuration}"), "|beta| shapes", Q_FIG6, "Sec. 4.2, Fig. 6b-d",
                   "fall of |beta(t)| from its held peak (orders)",
                   f"main grid adaptive, lr 1e-3; clock cells ending at T_adapt >= {ADAM_T_ADAPT_RANGE[0]:g} (the paper's)", "> 0.6",
                   clock=("T_adapt", *ADAM_T_ADAPT_RANGE), reads=CURVE_READ)
CLAIMS = [BETA_FLAT, BETA_DECAY_L2, BETA_DECAY]
DECAY_RULE = "\\|beta(t)\\| falls >= 0.6 orders from its held peak"  # a plan's words for the decay rule (Markdown)


def selections(read: Readable) -> list[Selection]:
    """At every batch size of the main grid (lr 1e-3): SGD's |beta(t)| stays flat, each adaptive optimizer's falls."""
    main = select(read.table, "main", **MAIN)
    out = []
    for opt in [o for o in ("sgd", *ADAPTIVE) if o in set(main["optimizer"])]:
        for b in batches(main[main["optimizer"] == opt]):
            part = (select(main, None, optimizer=opt, batch_size=b),)
            fields = {"grid": "main", "optimizer": opt, "b": b}
            if opt == "sgd":
                out.append(Selection(BETA_FLAT, BETA_FLAT.id(0, b=b), FLAT, part, rule="range of \\|beta(t)\\| over the settled run within +-0.5 orders",
                                     fields=fields))
            else:
                out.append(Selection(BETA_DECAY, BETA_DECAY.id(0, adaptive=opt, b=b), DECAY, part, rule=DECAY_RULE, fields=fields))
    return out


def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """Sec. 4.2, Figure 6 (a-d), at every batch size of the main grid (lr 1e-3): SGD's |beta| stays
    flat near 1e-1 (two rows: the change over the run and the level); Adam's, AdamW's and Muon's
    decay by 1-2 orders of magnitude; the SGD + L2 ablation (eta=1e-2, L2=1e-2, or the config's
    strongest L2 at its largest lr: :func:`initmem.claims.analysis.l2_ablation`) reaches the noise floor.
    The statistics: :class:`initmem.stats.verdicts.Shape`."""
    if runs.empty or history.empty:
        return []
    history = carry_forward(history)
    scale, out = scale_label(runs, "main"), []
    for s in selections(RunsRead(runs)):
        opt, b = s.fields["optimizer"], s.fields["b"]
        cell = curve_cell(history, runs, "main", optimizer=opt, batch_size=b, **MAIN)
        if cell is None:
            continue
        if s.statistic == FLAT:
            out += _flat_rows(cell, b, scale)
        else:
            out.append(decay_row(BETA_DECAY, s.cid, f"{LABEL[opt]} b={b}: orders of magnitude |beta(t)| falls from its peak",
                                 cell, scale, floor_is_enough=False, note="paper: 'decay by 1-2 orders of magnitude'"))
    ablation = l2_ablation(runs)
    if ablation is not None:
        lr, l2 = ablation
        for b in batches(select(runs, "lr_l2", lr=lr, l2=l2)):
            cell = curve_cell(history, runs, "lr_l2", lr=lr, l2=l2, batch_size=b)
            if cell is not None:
                out.append(decay_row(BETA_DECAY_L2, BETA_DECAY_L2.id(b=b), f"SGD eta={lr:g} L2={l2:g} b={b}: orders of magnitude |beta(t)| falls from its peak",
                                       cell, scale_label(runs, "lr_l2"), floor_is_enough=True,
                                       note="paper (eta=1e-2, L2=1e-2): 'reaches the adaptive noise floor'"
                                       + ("" if ablation == (1e-2, 1e-2) else f"; measured at eta={lr:g}, L2={l2:g} instead: the config's strongest L2")))
    return out


def _flat_rows(cell: V.Cell, b: int, scale: str) -> list[dict]:
    """'SGD stays flat near 1e-1': the change over the run (two-sided) and the last window's level."""
    _, _, change, shape0 = Sh.flat_decision(cell)
    floor = float(shape0.floor[0])
    decided = Sh.flat_decided(change, shape0)
    power = ""
    if decided is not None and decided[0] == V.BELOW_FLOOR:
        low = float(np.nanmin(shape0.windows[0, 1:])) if shape0.windows.shape[1] > 2 else math.nan
        if low > 0:
            sxx = float(np.sum((cell.sigmas - cell.sigmas.mean()) ** 2))
            need, seeds = Sh.seeds_to_see_fall(math.log10(floor / low) * -1 if floor > 0 else 0.0, 0.0, cell.n_seeds, sxx)
            power = (f"seeds x Sxx(sigma_w) >= {need:.3g} (now {cell.n_seeds} x {sxx:.3g}): ~{seeds:.0f} seeds at this sigma_w grid "
                     f"to bring the noise floor below the lowest settled tenth ({low:.3g})")
    rows = [row(BETA_FLAT.id(0, b=b), "direction", f"SGD b={b}: range of |beta(t)| over the settled run, log10(highest / lowest tenth), + when rising (orders)",
                0.0, scale, Reading(change, side=V.between(-Sh.FLAT_ORDERS, Sh.FLAT_ORDERS), decided=decided, cells=[cell], read_at=CURVE, power=power,
                note=f"'stays flat' read as within {Sh.FLAT_ORDERS:g} orders either way (rising fails too); noise floor {floor:.3g} (2 OLS SE)"),
                BETA_FLAT)]
    level = V.estimate([cell], lambda m: Sh.beta_shape(*m[0], cell.epochs).last, prepare=fits)
    band = V.between(Sh.PAPER_FLAT_LEVEL * 10 ** -Sh.LEVEL_ORDERS, Sh.PAPER_FLAT_LEVEL * 10 ** Sh.LEVEL_ORDERS)
    rows.append(row(BETA_FLAT.id(1, b=b), "direction", f"SGD b={b}: |beta| in the last tenth of training",
                    Sh.PAPER_FLAT_LEVEL, scale, Reading(level, side=band, cells=[cell], read_at=AT_END,
                    note=f"paper: 'flat near 1e-1', read as within {Sh.LEVEL_ORDERS:g} orders of 0.1; noise floor {floor:.3g}"), BETA_FLAT))
    return rows
