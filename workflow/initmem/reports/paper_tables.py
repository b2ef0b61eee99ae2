"""``paper_tables.md``: the paper's tables (1, 4, 7, Appendix D depth, Appendix B checkpoint,
Appendix E normalization x augmentation, the long-run control) at this config's scale."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem.claims.analysis import config_spreads, interpolation_table, long_run_comparison, scale_label
from initmem.spec import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, DEFAULT_MOMENTUM, OPTIMIZERS, entry_info

# Read from the optimizer files: those keeping a second moment (SLOTS "v") use Keras' Adam betas and
# epsilon (Muon on its AdamW branch); those declaring a MOMENTUM have one to show.
ADAM_FAMILY = tuple(o for o in OPTIMIZERS if "v" in entry_info("optimizer", o).get("SLOTS", {}))
MOMENTUM_OPTIMIZERS = tuple(DEFAULT_MOMENTUM)


def to_markdown(df: pd.DataFrame, floatfmt: str = ".1f") -> str:
    """A plain GitHub Markdown table (no extra dependency)."""
    if df.empty:
        return "_no data in this config_\n"

    def cell(v) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if math.isnan(v) else format(float(v), floatfmt)
        return "" if v is None else str(v).replace("|", "\\|")  # a literal | would end the cell

    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def with_ci(spread: float, low: float, high: float) -> str:
    """'12.3 [10.1, 14.0]' (the interval left out where there is none, e.g. with one seed)."""
    if not np.isfinite(spread):
        return ""
    return f"{spread:.1f}" + (f" [{low:.1f}, {high:.1f}]" if np.isfinite(low) else "")


def table1(runs: pd.DataFrame) -> pd.DataFrame:
    """Main-grid optimizer settings: momentum only where the optimizer has one, Keras' Adam-family
    beta1/beta2/epsilon where it uses them (Muon: on its AdamW branch)."""
    main = runs[runs["study"] == "main"]
    if main.empty:
        return pd.DataFrame()
    t = main.drop_duplicates("optimizer")[["optimizer", "lr", "schedule", "alpha", "epochs", "momentum", "weight_decay"]].copy()
    t["momentum"] = [f"{m:g}" if o in MOMENTUM_OPTIMIZERS else "-" for o, m in zip(t["optimizer"], t["momentum"], strict=True)]
    adam = t["optimizer"].isin(ADAM_FAMILY)
    for col, value in (("beta1", ADAM_BETA1), ("beta2", ADAM_BETA2), ("epsilon", ADAM_EPS)):
        t[col] = np.where(adam, f"{value:g}", "-")
    t["weight_decay"] = [f"{w:g} (decoupled)" if w else "0" for w in t["weight_decay"]]
    return t


def table4(cs: pd.DataFrame) -> pd.DataFrame:
    """SGD spreads over lr x L2 with their seed intervals, and the main grid's own
    eta=1e-3 SGD spreads beside the lr_l2 study's eta=1e-3 cell (the paper's text quotes the main grid)."""
    lr_l2 = cs[cs["study"] == "lr_l2"]
    if lr_l2.empty:
        return pd.DataFrame()
    rows = []
    for (lr, l2), g in lr_l2.groupby(["lr", "l2"]):
        row = {"source": f"lr_l2 ({int(g['n_seeds'].max())} seed(s))", "lr": lr, "l2": l2}
        row |= {f"spread b={int(b)} (pp)": with_ci(r["spread_pp"], r["spread_ci_low"], r["spread_ci_high"])
                for b, r in g.set_index("batch_size").iterrows()}
        rows.append(row)
    main = cs[(cs["study"] == "main") & (cs.get("optimizer") == "sgd")] if "optimizer" in cs else cs.iloc[0:0]
    if not main.empty:
        lr0 = float(main["lr"].iloc[0])
        row = {"source": f"main grid ({int(main['n_seeds'].max())} seed(s))", "lr": lr0, "l2": 0.0}
        row |= {f"spread b={int(b)} (pp)": with_ci(r["spread_pp"], r["spread_ci_low"], r["spread_ci_high"])
                for b, r in main.set_index("batch_size").iterrows() if b in set(lr_l2["batch_size"])}
        rows.append(row)
    t = pd.DataFrame(rows).sort_values(["lr", "l2", "source"], kind="stable")
    return t[["source", "lr", "l2"] + sorted((c for c in t.columns if c.startswith("spread")), key=lambda c: int(c.split("=")[1].split()[0]))]


def table7(spread_table: pd.DataFrame, cs: pd.DataFrame) -> pd.DataFrame:
    """Best recipe vs Adam: seed-mean test accuracy at the extreme sigma_w and |Delta| with its interval."""
    best = spread_table[spread_table["study"] == "best_recipe"] if not spread_table.empty else spread_table
    if best.empty:
        return pd.DataFrame()
    t = best.pivot_table(index=["variant", "batch_size"], columns="sigma_w", values="test_acc").reset_index()
    sig = sorted(c for c in t.columns if isinstance(c, float))
    t = t.rename(columns={s: f"test acc sigma_w={s:g} (%)" for s in sig})
    for s in sig:
        t[f"test acc sigma_w={s:g} (%)"] *= 100
    spread = cs[cs["study"] == "best_recipe"].set_index(["variant", "batch_size"])
    t["abs Delta (pp) [interval]"] = [with_ci(*spread.loc[(v, b), ["spread_pp", "spread_ci_low", "spread_ci_high"]])
                                    for v, b in zip(t["variant"], t["batch_size"], strict=True)]
    wd_mode = (best.drop_duplicates("variant").set_index("variant")["weight_decay_mode"]
               if "weight_decay_mode" in best else pd.Series(dtype=str))
    t["weight_decay_mode"] = [wd_mode.get(v, "decoupled") for v in t["variant"]]
    return t


def depth_table(runs: pd.DataFrame) -> pd.DataFrame:
    depth = runs[runs["study"] == "depth"]
    if depth.empty:
        return pd.DataFrame()
    by = ["variant", "optimizer", "batch_size", "sigma_w"]
    acc = depth.groupby(by).agg(test_acc=("test_acc_best", "mean"), train_acc=("train_acc_best", "mean")).reset_index()
    acc[["test_acc", "train_acc"]] *= 100
    interp = interpolation_table(depth, by)[by + ["n_runs", "frac_interp", "tau_interp"]]
    return acc.merge(interp, on=by)


def checkpoint_table(runs: pd.DataFrame) -> pd.DataFrame:
    main = runs[runs["study"] == "main"]
    return interpolation_table(main, ["optimizer", "batch_size"]) if not main.empty else pd.DataFrame()


def appendix_e(cs: pd.DataFrame) -> pd.DataFrame:
    """SGD and Adam spreads per normalization x augmentation and batch size, with the main grid's
    BatchNorm no-augmentation baseline that "augmentation reduces the SGD spread" compares against."""
    na = cs[cs["study"] == "norm_aug"]
    if na.empty:
        return pd.DataFrame()
    base = cs[(cs["study"] == "main") & cs["optimizer"].isin(set(na["optimizer"])) & (cs["norm"] == "batchnorm")
              & ~cs["augment"].astype(bool) & cs["batch_size"].isin(set(na["batch_size"]))]
    both = pd.concat([base, na], ignore_index=True)
    both["source"] = [f"{s} ({int(n)} seed(s))" for s, n in zip(both["study"], both["n_seeds"], strict=True)]
    both["spread (pp) [interval]"] = [with_ci(*r) for r in both[["spread_pp", "spread_ci_low", "spread_ci_high"]].to_numpy()]
    t = both.pivot_table(index=["norm", "augment", "optimizer", "source"], columns="batch_size",
                         values="spread (pp) [interval]", aggfunc="first").reset_index()
    t.columns = [f"spread b={c} (pp) [interval]" if isinstance(c, (int, np.integer)) else c for c in t.columns]
    return t


WEIGHT_DECAY_NOTE = (
    "Weight decay of the standard recipe (5e-4): applied Keras-style, decoupled and scaled by the "
    "scheduled rate (p <- p - eta_k wd p), unless the study sets `weight_decay_mode: coupled`, which adds "
    "wd * p to the gradient as PyTorch's `weight_decay` does (momentum then carries it: about 1/(1-0.9) = 10x "
    "stronger in steady state). The paper does not say which; the `weight_decay_mode` column says what these runs used.\n")


def paper_tables(runs: pd.DataFrame, spread_table: pd.DataFrame) -> str:
    """Markdown copies of the paper's tables from this config's runs, each with its scale."""
    cs = config_spreads(spread_table)
    studies = lambda *s: f"Scale: {scale_label(runs, list(s))}\n"
    out = ["# Paper tables at this config's scale\n",
           "Spreads: max - min over sigma_w of the seed-mean test accuracy at tau_best, with an interval against its noise "
           "in brackets, from seed-paired differences: at least the end sigma_w values' difference less its paired t half-width, "
           "at most the largest pair's difference plus its t half-width (intersection-union) (`spreads.csv`: `spread_ci_method`, the "
           "spread noise alone gives on average `spread_null_mean_pp`, the paired t-test's p-value of 'sigma_w does nothing' "
           "`spread_p_null`; none with one seed).\n"]
    out += ["## Table 1: main-grid optimizer settings\n", studies("main"), to_markdown(table1(runs), ".4g")]
    out += ["## Table 4: SGD LR x L2 sigma_w spreads\n", studies("lr_l2", "main"), to_markdown(table4(cs), ".3g")]
    out += ["## Table 7: best recipe vs Adam\n", studies("best_recipe"), WEIGHT_DECAY_NOTE, to_markdown(table7(spread_table, cs))]
    out += ["## Depth tables: test/train accuracy (%) and interpolation\n", studies("depth"),
            "`frac_interp`: share of runs that reached 99.5% train accuracy; `tau_interp`: mean over those runs only "
            "(empty: no run interpolated).\n", to_markdown(depth_table(runs), ".3g")]
    out += ["## Checkpoint table: interpolation, selected checkpoint, repair gap\n", studies("main"),
            "`frac_interp`: share of runs that interpolated; `tau_interp` and `repair_gap_pp`: means over those runs only "
            "(empty: no run interpolated); `share_best_after_interp`: share of all runs with tau_best > tau_interp.\n",
            to_markdown(checkpoint_table(runs), ".3g")]
    out += ["## Appendix E: normalization x augmentation spreads\n", studies("norm_aug", "main"),
            to_markdown(appendix_e(cs))]
    out += ["## Long constant-LR control vs the main grid (matched sigma_w and seeds)\n", studies("long", "main"),
            to_markdown(long_run_comparison(runs) if "long" in set(runs.get("study", [])) else pd.DataFrame(), ".3g")]
    return "\n".join(out)
