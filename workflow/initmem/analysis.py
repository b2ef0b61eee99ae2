"""From metrics files to the paper's tables: runs, history, spreads, OLS |beta(t)|, clocks, claims.

A *configuration* is every spec key except sigma_w and seed; spreads and beta are per study and
configuration.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from initmem.records import load_record
from initmem.spec import SPEC_KEYS

PACKED = ("sigma_w", "seed")
CONFIG_KEYS = [k for k in SPEC_KEYS if k not in PACKED] + ["variant"]
SUMMARY_KEYS = ("tau_best", "tau_interp", "val_loss_best", "val_acc_best", "test_acc_best", "train_acc_best",
                "kernel_norm_init", "kernel_norm_best", "repair_gap")
CLOCKS = ("T_sgd", "T_l2", "T_wd", "T_adapt")


def collect(files: list[str | Path], study: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A row per run (spec + summary) and a row per (run, epoch) for one study's metrics files."""
    rows, hist = [], []
    for f in files:
        rec = load_record(f)
        spec = {k: rec["spec"].get(k) for k in [*CONFIG_KEYS, *PACKED, "n_train", "n_val", "n_test"]}
        base = {"study": study, "run_id": rec["run_id"], **spec}
        rows.append({**base, "status": rec["status"], "stopped_early": rec.get("stopped_early", False),
                     **{k: rec["summary"][k] for k in SUMMARY_KEYS}, "epochs_run": len(rec["history"]["epoch"]),
                     "wall_seconds": rec["wall_seconds"], "device": rec["env"].get("device")})
        h = pd.DataFrame(rec["history"])
        for k, v in base.items():
            h[k] = v
        hist.append(h)
    runs = pd.DataFrame(rows)
    history = pd.concat(hist, ignore_index=True) if hist else pd.DataFrame()
    return runs, history


def _group_keys(df: pd.DataFrame) -> list[str]:
    """Study + configuration columns present in ``df`` (NaN-safe grouping needs dropna=False)."""
    return ["study"] + [k for k in CONFIG_KEYS if k in df.columns]


def spreads(runs: pd.DataFrame) -> pd.DataFrame:
    """Per study, configuration and sigma_w: seed-mean test/train accuracy at tau_best and the
    configuration's spread (max - min over sigma_w of the seed mean, percentage points)."""
    keys = _group_keys(runs)
    ok = runs[runs["test_acc_best"].notna()]
    per_sigma = (ok.groupby(keys + ["sigma_w"], dropna=False)
                 .agg(test_acc=("test_acc_best", "mean"), test_acc_seed_std=("test_acc_best", "std"),
                      train_acc=("train_acc_best", "mean"), n_seeds=("seed", "count"))
                 .reset_index())
    def config_stats(g: pd.DataFrame) -> pd.Series:
        hi, lo = g.loc[g["test_acc"].idxmax()], g.loc[g["test_acc"].idxmin()]
        return pd.Series({"spread_pp": 100 * (hi["test_acc"] - lo["test_acc"]), "argmax_sigma_w": hi["sigma_w"],
                          "argmin_sigma_w": lo["sigma_w"], "seed_std_pp": 100 * g["test_acc_seed_std"].mean()})
    stats = per_sigma.groupby(keys, dropna=False)[["sigma_w", "test_acc", "test_acc_seed_std"]].apply(config_stats).reset_index()
    return per_sigma.merge(stats, on=keys, how="left")


def config_spreads(spread_table: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (the spread columns of :func:`spreads`)."""
    keys = _group_keys(spread_table)
    return spread_table.drop_duplicates(keys)[keys + ["spread_pp", "argmax_sigma_w", "argmin_sigma_w", "seed_std_pp"]]


def ols_slope(x: np.ndarray, y: np.ndarray) -> dict:
    """OLS of y on (1, x) with statsmodels: slope, its SE, 95% CI, n (NaN where it cannot be fitted)."""
    import statsmodels.api as sm

    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return {"beta": math.nan, "se": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": n}
    fit = sm.OLS(y, sm.add_constant(x, has_constant="add")).fit()
    low, high = fit.conf_int(0.05)[1]
    return {"beta": float(fit.params[1]), "se": float(fit.bse[1]), "ci_low": float(low), "ci_high": float(high), "n": n}


def beta_table(history: pd.DataFrame) -> pd.DataFrame:
    """|beta(t)| = |d ValAcc / d sigma_w| per study, configuration and epoch, by OLS over every
    (sigma_w, seed) run present at that epoch, with the cumulative clocks at that epoch."""
    keys = _group_keys(history)
    rows = []
    for group, g in history.groupby(keys + ["epoch"], dropna=False, sort=True):
        fit = ols_slope(g["sigma_w"].to_numpy(float), g["val_acc"].to_numpy(float))
        rows.append({**dict(zip(keys + ["epoch"], group, strict=True)), **fit, "abs_beta": abs(fit["beta"]),
                     **{c: float(g[c].mean()) for c in CLOCKS}})
    return pd.DataFrame(rows)


def clock_values(batch_size: int, epochs: int, n_train: int, lr: float, l2: float = 0.0,
                 schedule: str = "cosine", alpha: float = 0.01, steps: str = "ceil") -> dict:
    """Cumulative clocks after a whole run, under ``schedule`` (exact per-step sum).

    ``steps='ceil'`` uses K = E ceil(n/b) as training does; ``steps='paper'`` uses the paper's
    K = E n / b (Sec. 4.2), for its constant-LR arithmetic.
    """
    per_epoch = math.ceil(n_train / batch_size) if steps == "ceil" else n_train / batch_size
    total = epochs * per_epoch
    if schedule == "constant":
        s1, s2 = total * lr, total * lr * lr
    else:
        k = np.arange(int(round(total)))
        eta = lr * (alpha + (1 - alpha) * 0.5 * (1 + np.cos(np.pi * k / total)))
        s1, s2 = float(eta.sum()), float((eta * eta).sum())
    return {"K": total, "T_sgd": s2 / batch_size, "T_l2": s1 * l2, "T_adapt": s1}


def scale_label(runs: pd.DataFrame) -> str:
    """The scale a number was measured at, e.g. 'n_train=1000, width 8, 8 epochs (paper: 40000, 64, 300)'."""
    if runs.empty:
        return "no runs"
    widths = sorted(set(runs["width"]))
    epochs = sorted(set(runs["epochs"]))
    return (f"n_train={int(runs['n_train'].iloc[0])}, width {'/'.join(map(str, widths))}, "
            f"epochs {'/'.join(map(str, epochs))}, seeds {runs['seed'].nunique()} "
            "(paper: n_train=40000, width 64, 300 epochs, 10 seeds)")


# --- claims: the paper's headline numbers beside ours -------------------------------------------

def _match(df: pd.DataFrame, **filters) -> pd.DataFrame:
    for k, v in filters.items():
        if k not in df.columns:
            return df.iloc[0:0]
        df = df[np.isclose(df[k].astype(float), v)] if isinstance(v, float) else df[df[k] == v]
    return df


def _spread(cs: pd.DataFrame, study: str, **filters) -> float:
    m = _match(cs[cs["study"] == study], **filters)
    return float(m["spread_pp"].iloc[0]) if len(m) == 1 else math.nan


def _acc_at(st: pd.DataFrame, study: str, sigma_w: float, **filters) -> float:
    m = _match(st[st["study"] == study], sigma_w=sigma_w, **filters)
    return float(100 * m["test_acc"].iloc[0]) if len(m) == 1 else math.nan


# (id, quantity, paper value, how to read ours from the spread tables)
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


def claims(runs: pd.DataFrame, spread_table: pd.DataFrame) -> pd.DataFrame:
    """Each headline number of the paper beside ours, with the scale ours was measured at.

    Timescales: ``reproduced`` is the paper's constant-LR arithmetic (K = E n/b, n = 40,000),
    ``reproduced_cosine`` the same sum under the schedule the paper's run actually used.
    """
    cs = config_spreads(spread_table) if not spread_table.empty else spread_table
    rows = []
    for cid, quantity, paper, (where, filters) in SPREAD_CLAIMS:
        study, _, sigma = where.partition("@")
        value = math.nan
        if not cs.empty:
            value = _acc_at(spread_table, study, float(sigma), **filters) if sigma else _spread(cs, study, **filters)
        scale = scale_label(runs[runs["study"] == study]) if not math.isnan(value) else f"not in this config (study {study})"
        rows.append({"id": cid, "quantity": quantity, "paper": paper, "reproduced": value,
                     "reproduced_cosine": math.nan, "scale": scale})
    for cid, quantity, paper, clock, b, e, lr, l2, schedule in TIMESCALE_CLAIMS:
        const = clock_values(b, e, 40_000, lr, l2, "constant", steps="paper")[clock]
        actual = clock_values(b, e, 40_000, lr, l2, schedule)[clock]
        rows.append({"id": cid, "quantity": quantity, "paper": paper, "reproduced": const,
                     "reproduced_cosine": actual,
                     "scale": f"arithmetic at the paper's scale (n_train=40000); cosine column: exact sum under the {schedule} schedule"})
    return pd.DataFrame(rows)


# --- Markdown tables ---------------------------------------------------------------------------

def to_markdown(df: pd.DataFrame, floatfmt: str = ".1f") -> str:
    """A plain GitHub Markdown table (no extra dependency)."""
    if df.empty:
        return "_no data in this config_\n"
    def cell(v) -> str:
        if isinstance(v, float):
            return "" if math.isnan(v) else format(v, floatfmt)
        return str(v)
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def claims_markdown(table: pd.DataFrame) -> str:
    """claims.csv rendered for reading."""
    df = table.copy()
    for col in ("paper", "reproduced", "reproduced_cosine"):
        df[col] = [("" if (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}") for v in df[col]]
    return "# The paper's headline numbers beside ours\n\n" + to_markdown(df)


def paper_tables(runs: pd.DataFrame, spread_table: pd.DataFrame) -> str:
    """Markdown copies of the paper's tables (1, 4, 7, depth, checkpoint) from this config's runs."""
    out = [f"# Paper tables at this config's scale\n\nScale: {scale_label(runs)}\n"]
    main = runs[runs["study"] == "main"]
    t1 = main.drop_duplicates("optimizer")[["optimizer", "lr", "schedule", "alpha", "epochs", "momentum", "weight_decay"]]
    out += ["## Table 1: main-grid optimizer settings\n", to_markdown(t1, ".4g")]
    cs = config_spreads(spread_table) if not spread_table.empty else spread_table
    lr_l2 = cs[cs["study"] == "lr_l2"] if not cs.empty else cs
    t4 = (lr_l2.pivot_table(index=["lr", "l2"], columns="batch_size", values="spread_pp").reset_index()
          if not lr_l2.empty else pd.DataFrame())
    t4.columns = [f"spread b={c} (pp)" if isinstance(c, (int, np.integer)) else c for c in t4.columns]
    out += ["## Table 4: SGD LR x L2 sigma_w spreads\n", to_markdown(t4, ".3g")]
    best = spread_table[spread_table["study"] == "best_recipe"] if not spread_table.empty else spread_table
    if not best.empty:
        t7 = best.pivot_table(index=["variant", "batch_size"], columns="sigma_w", values="test_acc").reset_index()
        sig = [c for c in t7.columns if isinstance(c, float)]
        t7["abs Delta (pp)"] = 100 * (t7[max(sig)] - t7[min(sig)]).abs()
        t7 = t7.rename(columns={s: f"test acc sigma_w={s:g} (%)" for s in sig})
        for c in t7.columns:
            if str(c).startswith("test acc"):
                t7[c] = 100 * t7[c]
    else:
        t7 = pd.DataFrame()
    out += ["## Table 7: best recipe vs Adam\n", to_markdown(t7)]
    depth = runs[runs["study"] == "depth"]
    if not depth.empty:
        td = (depth.groupby(["variant", "optimizer", "batch_size", "sigma_w"])
              .agg(test_acc=("test_acc_best", "mean"), train_acc=("train_acc_best", "mean"), tau_interp=("tau_interp", "mean"))
              .reset_index())
        td[["test_acc", "train_acc"]] *= 100
    else:
        td = pd.DataFrame()
    out += ["## Depth tables: test/train accuracy (%) and interpolation epoch\n", to_markdown(td)]
    if not main.empty:
        tc = (main.groupby(["optimizer", "batch_size"])
              .agg(tau_interp=("tau_interp", "mean"), tau_best=("tau_best", "mean"), repair_gap_pp=("repair_gap", "mean"))
              .reset_index())
        tc["repair_gap_pp"] *= 100
    else:
        tc = pd.DataFrame()
    out += ["## Checkpoint table: interpolation, selected checkpoint, repair gap\n", to_markdown(tc)]
    return "\n".join(out)
