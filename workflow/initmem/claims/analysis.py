"""From metrics files to the paper's tables: runs, history, spreads, OLS |beta(t)|, interpolation,
the long-run comparison, clocks and the scale a number was measured at.

A *configuration* is every spec key except sigma_w and seed; spreads and beta are per study and
configuration. The paper's claims are in :mod:`initmem.claims.table`, their verdicts in
:mod:`initmem.stats.verdicts`, the Markdown tables in :mod:`initmem.reports.paper_tables`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from initmem.claims.cells import cell_from_runs, selected_test
from initmem.pipeline.records import load_record
from initmem.spec import OPTIONAL_SPEC_KEYS, SPEC_KEYS
from initmem.stats.spreads import spread_estimate

PACKED = ("sigma_w", "seed")
CONFIG_KEYS = [k for k in SPEC_KEYS if k not in PACKED] + list(OPTIONAL_SPEC_KEYS) + ["variant"]
SUMMARY_KEYS = ("tau_best", "tau_interp", "val_loss_best", "val_acc_best", "test_acc_best", "train_acc_best",
                "kernel_norm_init", "kernel_norm_best", "repair_gap", "train_acc_eval_best", "test_acc_final", "test_loss_final")
CLOCKS = ("T_sgd", "T_l2", "T_wd", "T_adapt")


def collect(files: list[str | Path], study: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A row per run (spec + summary) and a row per (run, epoch) for one study's metrics files.

    In the history the spec's eta0 is ``lr`` (a configuration key, as in runs.csv) and the rate of
    the epoch's last step, recorded by the trainer, is ``lr_epoch``; ``status`` and
    ``stopped_early`` say how the run ended.
    """
    rows, hist = [], []
    for f in files:
        rec = load_record(f)
        spec = {k: rec["spec"].get(k, OPTIONAL_SPEC_KEYS.get(k)) for k in [*CONFIG_KEYS, *PACKED, "n_train", "n_val", "n_test"]}
        base = {"study": study, "run_id": rec["run_id"], **spec}
        ended = {"status": rec["status"], "stopped_early": bool(rec.get("stopped_early", False))}
        rows.append({**base, **ended, **{k: rec["summary"].get(k) for k in SUMMARY_KEYS},
                     "epochs_run": len(rec["history"]["epoch"]), "wall_seconds": rec["wall_seconds"],
                     "device": rec["env"].get("device")})
        h = pd.DataFrame(rec["history"]).rename(columns={"lr": "lr_epoch"})
        for k, v in {**base, **ended}.items():
            h[k] = v
        hist.append(h)
    runs = pd.DataFrame(rows)
    history = pd.concat(hist, ignore_index=True) if hist else pd.DataFrame()
    return runs, history


def group_keys(df: pd.DataFrame) -> list[str]:
    """Study + configuration columns present in ``df`` (NaN-safe grouping needs dropna=False)."""
    return ["study"] + [k for k in CONFIG_KEYS if k in df.columns]


def _diverged(df: pd.DataFrame) -> pd.Series:
    return df["status"].eq("diverged") if "status" in df else pd.Series(False, index=df.index)


# --- spreads -----------------------------------------------------------------------------------

def spreads(runs: pd.DataFrame) -> pd.DataFrame:
    """Per study, configuration and sigma_w: seed-mean test/train accuracy at tau_best and the
    configuration's spread (max - min over sigma_w of the seed mean, percentage points) with its
    interval against its noise (``spread_ci_low/high``, method in ``spread_ci_method``; NaN with one seed),
    the spread max - min of seed means has on average when sigma_w does nothing (``spread_null_mean_pp``)
    and the p-value of "sigma_w does nothing" (``spread_p_null``): :func:`initmem.stats.spreads.spread_estimate`.

    Diverged runs are counted (``n_diverged``) and enter with their best epoch before diverging;
    a run that diverged in its first epoch has no value (``n_runs`` - ``n_seeds`` per sigma_w).
    """
    if runs.empty:
        return pd.DataFrame()
    keys = group_keys(runs)
    runs = runs.assign(diverged=_diverged(runs), selected_acc=runs["test_acc_best"])
    for _, g in runs.groupby(keys, dropna=False, sort=False):   # each configuration's selected test accuracy (similarity.selected_test)
        runs.loc[g.index, "selected_acc"] = g[selected_test(g)]
    per_sigma = (runs.groupby(keys + ["sigma_w"], dropna=False)
                 .agg(test_acc=("selected_acc", "mean"), test_acc_seed_std=("selected_acc", "std"),
                      train_acc=("train_acc_best", "mean"), n_seeds=("selected_acc", "count"),
                      n_runs=("seed", "size"), n_diverged=("diverged", "sum"))
                 .reset_index())
    stats = []
    for group, g in runs.groupby(keys, dropna=False, sort=False):
        means = per_sigma_means(g, "selected_acc")
        if means.empty:
            continue
        hi, lo = means.idxmax(), means.idxmin()
        est = spread_estimate(cell_from_runs(g))
        stats.append({**dict(zip(keys, group, strict=True)), "spread_pp": 100 * (means[hi] - means[lo]),
                      "spread_ci_low": est.low, "spread_ci_high": est.high, "spread_ci_method": est.method,
                      "spread_null_mean_pp": est.null_mean, "spread_p_null": est.p_null,
                      "argmax_sigma_w": hi, "argmin_sigma_w": lo,
                      "seed_std_pp": 100 * g.groupby("sigma_w")["selected_acc"].std().mean(),
                      "n_diverged_config": int(g["diverged"].sum())})
    if not stats:
        return per_sigma
    stats = pd.DataFrame(stats).astype({k: per_sigma[k].dtype for k in keys})  # all-NaN keys come back as float
    return per_sigma.merge(stats, on=keys, how="left")


def per_sigma_means(g: pd.DataFrame, metric: str = "test_acc_best") -> pd.Series:
    """Seed mean of ``metric`` per sigma_w (sigma_w values without any value left out)."""
    return g.groupby("sigma_w")[metric].mean().dropna()


def config_spreads(spread_table: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (the spread columns of :func:`spreads`)."""
    if spread_table.empty or "spread_pp" not in spread_table:
        return pd.DataFrame(columns=["study", "spread_pp"])
    keys = group_keys(spread_table)
    cols = ["spread_pp", "spread_ci_low", "spread_ci_high", "spread_ci_method", "spread_null_mean_pp", "spread_p_null",
            "argmax_sigma_w", "argmin_sigma_w", "seed_std_pp",
            "n_diverged_config"]
    out = spread_table.drop_duplicates(keys)[keys + cols]
    n = spread_table.groupby(keys, dropna=False).agg(n_runs=("n_runs", "sum"), n_seeds=("n_seeds", "max")).reset_index()
    return out.merge(n, on=keys, how="left")


# --- |beta(t)| ---------------------------------------------------------------------------------

def ols_slope(x: np.ndarray, y: np.ndarray) -> dict:
    """OLS of y on (1, x) with statsmodels: slope, its SE, 95% CI, n (NaN where it cannot be fitted)."""
    import statsmodels.api as sm

    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return {"beta": math.nan, "se": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": n}
    fit = sm.OLS(y, sm.add_constant(x, has_constant="add")).fit()
    low, high = fit.conf_int(0.05)[1]
    return {"beta": float(fit.params[1]), "se": float(fit.bse[1]), "ci_low": float(low), "ci_high": float(high), "n": n}


def carry_forward(history: pd.DataFrame) -> pd.DataFrame:
    """The history with each early-stopped run's last epoch repeated up to its spec's ``epochs``
    (``carried`` = True on the added rows): its selected predictor does not change after it stops,
    so the per-epoch fits keep the same runs along the curve. Clocks stay where the run stopped.
    Diverged runs are not carried (their predictor after diverging is undefined)."""
    history = history.assign(carried=False)
    if history.empty or "stopped_early" not in history:
        return history
    last = history[history["stopped_early"].astype(bool)].sort_values("epoch").groupby("run_id", sort=False).tail(1)
    last = last[last["epoch"] < last["epochs"]]
    if last.empty:
        return history
    reps = (last["epochs"] - last["epoch"]).astype(int).to_numpy()
    added = last.loc[last.index.repeat(reps)].copy()
    added["epoch"] = added["epoch"].to_numpy() + np.concatenate([np.arange(1, r + 1) for r in reps])
    added["carried"] = True
    return pd.concat([history, added], ignore_index=True)


def beta_table(history: pd.DataFrame) -> pd.DataFrame:
    """|beta(t)| = |d ValAcc / d sigma_w| per study, configuration and epoch, by OLS over every
    (sigma_w, seed) run at that epoch, with the cumulative clocks at that epoch.

    Early-stopped runs are carried forward (:func:`carry_forward`; ``n_carried`` of the ``n`` runs
    of a fit); runs that diverged before an epoch are missing from its fit and counted in
    ``n_diverged``. Clocks are the mean over the runs still training."""
    if history.empty:
        return pd.DataFrame()
    history = carry_forward(history)
    keys = group_keys(history)
    rows = []
    for config, c in history.groupby(keys, dropna=False, sort=True):
        div = c[_diverged(c)]
        div_last = div.groupby("run_id")["epoch"].max() if "run_id" in div else pd.Series(dtype=float)
        for epoch, g in c.groupby("epoch", sort=True):
            fit = ols_slope(g["sigma_w"].to_numpy(float), g["val_acc"].to_numpy(float))
            live = g[~g["carried"]] if (~g["carried"]).any() else g
            rows.append({**dict(zip(keys, config, strict=True)), "epoch": epoch, **fit, "abs_beta": abs(fit["beta"]),
                         "n_carried": int(g["carried"].sum()), "n_diverged": int((div_last < epoch).sum()),
                         **{k: float(live[k].mean()) for k in CLOCKS}})
    return pd.DataFrame(rows)


# --- interpolation, long run -------------------------------------------------------------------

def interpolation_table(runs: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group: how many runs reached 99.5% train accuracy and what the checkpoint did.

    ``frac_interp``: the share of runs with a tau_interp; ``tau_interp`` and ``repair_gap_pp``:
    means over those runs only (NaN when none did: "no run interpolated"); ``tau_best``: mean
    over all runs; ``share_best_after_interp``: the share of *all* runs whose selected checkpoint
    comes after interpolation (tau_best > tau_interp; a run that never interpolates counts as not).
    """
    if runs.empty:
        return pd.DataFrame()
    r = runs.assign(interp=runs["tau_interp"].notna(),
                    after=runs["tau_interp"].notna() & (runs["tau_best"] > runs["tau_interp"]))
    out = (r.groupby(by, dropna=False)
           .agg(n_runs=("run_id" if "run_id" in r else "seed", "size"), frac_interp=("interp", "mean"),
                tau_interp=("tau_interp", "mean"), tau_best=("tau_best", "mean"),
                share_best_after_interp=("after", "mean"), repair_gap_pp=("repair_gap", "mean"))
           .reset_index())
    out["repair_gap_pp"] *= 100
    return out


def matched_long_runs(runs: pd.DataFrame, batch_size: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The long study's runs at ``batch_size`` and the main grid's SGD runs there, both restricted
    to the sigma_w values and seeds the two studies share (the paper's long run: 5 sigma_w, 1 seed)."""
    lg = runs[(runs["study"] == "long") & (runs["batch_size"] == batch_size)]
    mb = runs[(runs["study"] == "main") & (runs["optimizer"] == "sgd") & (runs["batch_size"] == batch_size)]
    sig, seeds = set(lg["sigma_w"]) & set(mb["sigma_w"]), set(lg["seed"]) & set(mb["seed"])
    keep = lambda d: d[d["sigma_w"].isin(sig) & d["seed"].isin(seeds)]
    return keep(lg), keep(mb)


def long_run_comparison(runs: pd.DataFrame) -> pd.DataFrame:
    """The long constant-LR control against the main grid's SGD on the same sigma_w values and seeds.

    Per batch size of ``long``: its spread and the main grid's SGD spread, both on the sigma_w values
    and seeds the two studies share (``spread_long``, ``spread_main_matched``), and the main grid's
    spread over all of its runs (``spread_main_full``)."""
    rows = []
    for b in sorted(set(runs.loc[runs["study"] == "long", "batch_size"])):
        lg, mm = matched_long_runs(runs, b)
        full = runs[(runs["study"] == "main") & (runs["optimizer"] == "sgd") & (runs["batch_size"] == b)]
        long_all = runs[(runs["study"] == "long") & (runs["batch_size"] == b)]
        rows.append({"batch_size": b, "epochs_long": int(long_all["epochs"].max()),
                     "epochs_main": int(full["epochs"].max()) if not full.empty else math.nan,
                     "sigma_w": "/".join(f"{s:g}" for s in sorted(set(lg["sigma_w"]))),
                     "seeds": "/".join(map(str, sorted(set(lg["seed"])))),
                     "spread_long": _spread_of(lg), "spread_main_matched": _spread_of(mm),
                     "spread_main_full": _spread_of(full), "n_long": len(lg), "n_main_matched": len(mm)})
    return pd.DataFrame(rows)


def _spread_of(df: pd.DataFrame) -> float:
    m = per_sigma_means(df) if not df.empty else pd.Series(dtype=float)
    return float(100 * (m.max() - m.min())) if len(m) else math.nan


def l2_ablation(df: pd.DataFrame) -> tuple[float, float] | None:
    """(lr, l2) of the lr_l2 study's SGD + L2 ablation: the paper's eta=1e-2, L2=1e-2 where the
    config has it, else its largest L2 at its largest learning rate; None without an L2 > 0."""
    cells = df.loc[(df["study"] == "lr_l2") & (df["l2"] > 0), ["lr", "l2"]].drop_duplicates() if "l2" in df else pd.DataFrame()
    if cells.empty:
        return None
    if (np.isclose(cells["lr"], 1e-2) & np.isclose(cells["l2"], 1e-2)).any():
        return 1e-2, 1e-2
    lr = float(cells["lr"].max())
    return lr, float(cells.loc[cells["lr"] == lr, "l2"].max())


# --- the scale a number was measured at --------------------------------------------------------

# describe_scale() of each study of config/paper.yaml (tests/test_analysis.py checks they agree)
PAPER_SCALE = {
    "main": "n_train=40000, ResNet-9 width 64, 300 epochs, 25 sigma_w, 10 seeds",
    "long": "n_train=40000, ResNet-9 width 64, 5000 epochs, 5 sigma_w, 1 seed",
    "lr_l2": "n_train=40000, ResNet-9 width 64, 300 epochs, 5 sigma_w, 1 seed",
    "norm_aug": "n_train=40000, ResNet-9 width 64, 300 epochs, 5 sigma_w, 5 seeds",
    "best_recipe": "n_train=40000, ResNet-9 width 64, 200 epochs, 2 sigma_w, 10 seeds",
    "depth": "n_train=40000, ResNet-9 width 64 + ResNet-56/110 base width 16, 300 epochs, 5 sigma_w, 10 seeds",
}


def describe_scale(runs: pd.DataFrame) -> str:
    """E.g. 'n_train=512, ResNet-9 width 8, 6 epochs, 3 sigma_w, 2 seeds' for one study's runs."""
    archs = []
    if (runs["arch"] == "resnet9").any():
        archs.append("ResNet-9 width " + "/".join(str(w) for w in sorted(set(runs.loc[runs["arch"] == "resnet9", "width"]))))
    deep = runs[runs["arch"] != "resnet9"]
    if not deep.empty:
        names = "/".join(sorted((a.replace("resnet", "") for a in set(deep["arch"])), key=lambda d: int(d) if d.isdigit() else 0))
        archs.append(f"ResNet-{names} base width " + "/".join(str(int(w) // 4 or 1) for w in sorted(set(deep["width"]))))
    seeds = runs["seed"].nunique()
    return (f"n_train={'/'.join(str(int(n)) for n in sorted(set(runs['n_train'])))}, {' + '.join(archs)}, "
            f"{'/'.join(str(int(e)) for e in sorted(set(runs['epochs'])))} epochs, {runs['sigma_w'].nunique()} sigma_w, "
            f"{seeds} seed{'s' if seeds != 1 else ''}")


def scale_label(runs: pd.DataFrame, studies: str | list[str] | None = None) -> str:
    """Our scale beside the paper's, per study: 'main: n_train=512, ... (paper: n_train=40000, ...)'."""
    if runs.empty:
        return "no runs"
    studies = [studies] if isinstance(studies, str) else (studies or sorted(set(runs["study"])))
    parts = []
    for s in studies:
        sub = runs[runs["study"] == s]
        if sub.empty:
            parts.append(f"not in this config (study {s})")
            continue
        parts.append(f"{s}: {describe_scale(sub)} (paper: {PAPER_SCALE.get(s, 'no such study in the paper')})")
    return "; ".join(parts)
