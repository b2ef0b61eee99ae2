"""Figure 10 (this project's, for the clock-matched evidence tier): does forgetting follow the clock?

For every configuration (a cell of optimizer, lr, batch size, epochs, L2) of the config's studies,
|beta(t)| = |d ValAcc / d sigma_w| (OLS over sigma_w and seeds) and the spread of the seed-mean
validation accuracy over sigma_w, drawn three times: against epochs, against optimizer steps, and
against the clock the paper says governs the cell (T_adapt for adaptive optimizers, T_SGD for SGD,
T_L2 for SGD with L2). If forgetting follows the clock, the curves of different b and lr fall on one
another in the last column and not in the first two. The dotted grey line in each |beta| panel is the
median OLS standard error of beta: below it a fall of |beta| cannot be seen.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from initmem.claims.analysis import beta_table, group_keys
from initmem.figures.common import Notes, finish_log_panel, loglog
from initmem.spec import ADAPTIVE
from initmem.stats.verdicts import steps_at_epoch

FAMILIES = (  # (row title, which cells, the clock the paper reads for them, its label)
    ("Adam", lambda c: c["optimizer"] in ADAPTIVE, "T_adapt", "$T_{adapt}=\\sum\\eta_k$"),
    ("SGD", lambda c: c["optimizer"] == "sgd" and not c["l2"], "T_sgd", "$T_{SGD}=\\sum\\eta_k^2/b$"),
    ("SGD + L2", lambda c: c["optimizer"] == "sgd" and c["l2"] > 0, "T_l2", "$T_{L2}=\\sum\\eta_k\\,\\lambda$"),
)


def cell_label(c: dict) -> str:
    """E.g. 'lr 0.025, b 16, 40 ep' (+ ', L2 0.15')."""
    text = f"lr {c['lr']:g}, b {int(c['batch_size'])}, {int(c['epochs'])} ep"
    return text + (f", L2 {c['l2']:g}" if c.get("l2") else "")


def spread_curves(history: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and epoch: max - min over sigma_w of the seed-mean validation accuracy (pp)."""
    keys = group_keys(history)
    means = history.groupby([*keys, "epoch", "sigma_w"], dropna=False)["val_acc"].mean().reset_index()
    out = means.groupby([*keys, "epoch"], dropna=False)["val_acc"].agg(lambda v: 100 * (v.max() - v.min()))
    return out.rename("spread_pp").reset_index()


def _with_steps(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(steps=steps_at_epoch(df["epoch"], df["n_train"], df["batch_size"]))


def fig10(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """|beta(t)| (rows 1-3) and the sigma_w spread (row 4) of every cell against epochs, steps and its clock."""
    notes = Notes("fig10")
    beta = beta_table(history)
    clocks = history.groupby([*group_keys(history), "epoch"], dropna=False)[["T_sgd", "T_l2", "T_adapt"]].mean().reset_index()
    spread = spread_curves(history).merge(clocks, on=[*group_keys(history), "epoch"], how="left")
    n_train = history.groupby(group_keys(history), dropna=False)["n_train"].first().reset_index()
    beta = _with_steps(beta.merge(n_train, on=group_keys(history), how="left")) if not beta.empty else beta
    spread = _with_steps(spread.merge(n_train, on=group_keys(history), how="left"))
    keys = group_keys(history)
    cells = [dict(zip(keys, k, strict=True)) for k in beta[keys].drop_duplicates().itertuples(index=False)] if not beta.empty else []
    fig, axes = plt.subplots(4, 3, figsize=(11, 12.5), layout="constrained")
    for row, (family, member, clock, clock_label) in enumerate(FAMILIES):
        mine = [c for c in cells if member(c)]
        for col, (x, xlabel, xlog) in enumerate((("epoch", "epoch", False), ("steps", "optimizer steps", True),
                                                  (clock, clock_label, True))):
            ax = axes[row, col]
            ax.set(title=f"({chr(97 + 3 * row + col)}) {family}: $|\\beta|$ vs {xlabel}", xlabel=xlabel, ylabel="$|\\beta(t)|$")
            ses = []
            for i, c in enumerate(mine):
                d = beta.loc[_nan_equal(beta, c, keys)]
                ses.extend(d["se"].dropna())
                if not loglog(ax, d[x], d["abs_beta"], label=cell_label(c), color=f"C{i}", xlog=xlog):
                    notes.add(f"{family} {cell_label(c)}: no non-zero |beta| to draw")
            if ses:
                ax.axhline(float(np.median(ses)), color="grey", ls=":", lw=1, label="median OLS SE")
            finish_log_panel(ax, xlog=xlog, has_runs=bool(mine))
        if not mine:
            notes.add(f"no {family} cells in this config")
    for col, (family, member, clock, clock_label) in enumerate(FAMILIES):
        ax = axes[3, col]
        ax.set(title=f"({chr(106 + col)}) {family}: spread vs {clock_label}", xlabel=clock_label, ylabel="spread of val. acc. (pp)")
        for i, c in enumerate(c for c in cells if member(c)):
            d = spread.loc[_nan_equal(spread, c, keys)]
            d = d[d[clock] > 0]
            if not d.empty:
                ax.plot(d[clock], d["spread_pp"], color=f"C{i}", label=cell_label(c))
        if ax.lines:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())  # labelled decades only: minor labels overlap
            ax.legend(fontsize=6)
        else:
            ax.text(0.5, 0.5, "not in this tier" if not any(member(c) for c in cells) else "no data", ha="center", va="center",
                    transform=ax.transAxes, color="dimgray")
    scale = _scale(runs)
    fig.suptitle(f"Figure 10: forgetting against epochs, steps and the clock ({scale})", fontsize=9)
    notes.add("|beta| below the median OLS SE (dotted) is at the noise floor; |beta| = 0 is not drawn on the log axis")
    return notes.finish(fig)


def _nan_equal(df: pd.DataFrame, cell: dict, keys: list[str]) -> pd.Series:
    """Rows equal to ``cell`` where NaN keys count as equal (pandas' == says NaN != NaN)."""
    ok = pd.Series(True, index=df.index)
    for k in keys:
        v = cell[k]
        ok &= df[k].isna() if (isinstance(v, float) and math.isnan(v)) or v is None else df[k].eq(v)
    return ok


def _scale(runs: pd.DataFrame) -> str:
    if runs.empty:
        return "no runs"
    return (f"n_train={int(runs['n_train'].iloc[0])}, width {'/'.join(str(int(w)) for w in sorted(set(runs['width'])))}, "
            f"{runs['sigma_w'].nunique()} sigma_w x {runs['seed'].nunique()} seeds per cell")
