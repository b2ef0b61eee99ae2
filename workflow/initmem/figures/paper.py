"""Figures 1-8 of the paper from per-study run and history tables. Each ``figN`` returns a
matplotlib Figure (tests count its panels); :func:`initmem.figures.common.save_figure` writes PDF + PNG atomically.

What a figure cannot show (a fit with too few runs, a study or batch size the config lacks, runs
that diverged or never interpolated) is said in a footnote on the figure and printed to the log,
never silently left out.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from initmem import presentation as look
from initmem.claims.analysis import beta_table, config_spreads, interpolation_table, l2_ablation, matched_long_runs, spreads
from initmem.figures.common import Notes, finish_log_panel, loglog, no_data, plain  # noqa: F401
from initmem.spec import entry_names
from initmem.stats.shapes import BETA_FLOOR

# Every optimizer file in the paper's order, with its label, style and colour (initmem.presentation: the
# entry's file or derived from it, so a new file is drawn with no edit here)
OPTIMIZER_ORDER = look.optimizer_order()
LABELS = {n: look.label(n) for n in (*OPTIMIZER_ORDER, *entry_names("arch"), *look.OTHER_LABELS)}
COLORS = {o: look.color(o) for o in OPTIMIZER_ORDER}
STYLES = {o: look.style(o) for o in OPTIMIZER_ORDER}
plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7,
                     "axes.grid": True, "grid.alpha": 0.3})
MAX_TICKS = 9  # more grid values than this: let matplotlib choose the ticks
ACC_RANGE = (0.0, 100.0)  # accuracy in percent: a seed-SD band stops at 0 and 100
NONNEGATIVE = (0.0, np.inf)  # kernel norms, epochs

def _optimizers(df: pd.DataFrame) -> list[str]:
    present = set(df["optimizer"]) if "optimizer" in df else set()
    return [o for o in OPTIMIZER_ORDER if o in present]


def _two_batches(df: pd.DataFrame) -> list[int]:
    """b=16 and b=128 where present (the paper's pair), else the smallest and largest present."""
    bs = sorted(set(df["batch_size"])) if "batch_size" in df and not df.empty else []
    pair = [b for b in (16, 128) if b in bs]
    return pair if len(pair) == 2 else sorted({bs[0], bs[-1]}) if bs else []


def batch_colors(batch_sizes) -> dict:
    """One colour per value (batch size, lr), dark (small) to light (large), stopping before viridis' pale yellow."""
    bs = sorted(set(batch_sizes))
    cmap = plt.get_cmap("viridis")
    return {b: cmap(0.85 * i / max(1, len(bs) - 1)) for i, b in enumerate(bs)}


def _drawn(ax) -> bool:
    """Whether a panel shows any data point (a line without finite points draws nothing)."""
    return any(np.isfinite(np.asarray(line.get_ydata(), float)).any() for line in ax.lines)


def _grid_ticks(ax, values, axis: str = "x", log: bool = False) -> None:
    """Ticks at the grid values (a log axis otherwise shows only powers of ten)."""
    values = sorted({float(v) for v in values if np.isfinite(v)})
    if not values or len(values) > MAX_TICKS:
        return
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(values))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    if log:
        target.set_minor_locator(NullLocator())


def _legend_right(fig: plt.Figure, axes) -> None:
    """One legend for the figure, right of the panels (never on top of a line; the footnotes go under)."""
    handles, labels = {}, []
    for ax in np.ravel(axes):
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in handles and not label.startswith("_") and _shows_data(h):
                handles[label] = h
                labels.append(label)
    if labels:
        fig.legend([handles[lb] for lb in labels], labels, loc="outside right upper", frameon=False)


def _shows_data(handle) -> bool:
    """Whether a legend handle (a line, or an errorbar's container) draws a finite point."""
    line = handle.lines[0] if hasattr(handle, "lines") and isinstance(handle.lines, tuple) else handle
    if not hasattr(line, "get_ydata"):
        return True
    return bool(np.isfinite(np.asarray(line.get_ydata(), float)).any())


def _diverged_note(notes: Notes, runs: pd.DataFrame, what: str) -> None:
    if "status" not in runs:
        return
    div = runs[runs["status"] == "diverged"]
    if div.empty:
        return
    cells = div.groupby([c for c in ("optimizer", "batch_size", "sigma_w") if c in div]).size()
    shown = ", ".join(f"{LABELS.get(k[0], k[0])} b={k[1]} sigma_w={k[2]:g}: {n}" for k, n in list(cells.items())[:6])
    notes.add(f"{what}: {len(div)} diverged run(s) ({shown}{', ...' if len(cells) > 6 else ''}) enter with their best epoch "
              "before diverging; a run that diverged in epoch 1 has no value")


def _band(ax, df: pd.DataFrame, col: str, label: str, color=None, scale: float = 1.0,
          limits: tuple[float, float] = NONNEGATIVE, **kw) -> None:
    """Seed mean of ``col`` vs sigma_w with a +-1 std band clipped to the metric's ``limits``
    (an accuracy band never leaves 0-100%)."""
    g = df.groupby("sigma_w")[col].agg(["mean", "std"]).reset_index().dropna(subset=["mean"])
    if g.empty:
        return
    mean, std = g["mean"] * scale, g["std"].fillna(0) * scale
    ax.plot(g["sigma_w"], mean, **{"marker": "o", "ms": 3, **kw}, label=label, color=color)
    ax.fill_between(g["sigma_w"], np.clip(mean - std, *limits), np.clip(mean + std, *limits), alpha=0.2, color=color, lw=0)


def fig1(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Optimizer contrast: test acc, train acc, kernel norm at tau_best vs sigma_w, at two batch sizes;
    ||W_init|| (the same for every optimizer) as the reference of the norm panels."""
    notes = Notes("fig1")
    main = runs[runs["study"] == "main"]
    batches = _two_batches(main)
    fig, axes = plt.subplots(len(batches), 3, figsize=(9, 2.5 * len(batches) + 0.6), squeeze=False, layout="constrained")
    for row, b in enumerate(batches):
        sub = main[main["batch_size"] == b]
        for opt in _optimizers(sub):
            d = sub[sub["optimizer"] == opt]
            _band(axes[row, 0], d, "test_acc_best", LABELS[opt], COLORS[opt], 100, ACC_RANGE, **STYLES[opt])
            _band(axes[row, 1], d, "train_acc_best", LABELS[opt], COLORS[opt], 100, ACC_RANGE, **STYLES[opt])
            _band(axes[row, 2], d, "kernel_norm_best", LABELS[opt], COLORS[opt], **STYLES[opt])
        init = sub.groupby("sigma_w")["kernel_norm_init"].mean()
        axes[row, 2].plot(init.index, init.to_numpy(), ls="--", color="black", lw=1, label="$\\|W_{init}\\|_F$")
        for col, (title, ylabel) in enumerate([("test accuracy", "test acc. at $\\tau_{best}$ (%)"),
                                               ("train accuracy", "train acc. at $\\tau_{best}$ (%)"),
                                               ("kernel norm", "$\\|W_{\\tau_{best}}\\|_F$")]):
            ax = axes[row, col]
            ax.set(title=f"({chr(97 + 3 * row + col)}) {title}, b={b}", xlabel="$\\sigma_w$", ylabel=ylabel)
            _grid_ticks(ax, sub["sigma_w"])
    _legend_right(fig, axes)
    _diverged_note(notes, main, "main")
    return notes.finish(fig)


def fig2(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Full sigma_w x b grid: heatmap of seed-mean test accuracy per optimizer (one colour scale
    over the data's range), each cell annotated; the spread of each batch size on the right."""
    notes = Notes("fig2")
    main = runs[runs["study"] == "main"]
    st = spreads(main)
    opts = _optimizers(main)
    n_sigma = main["sigma_w"].nunique()
    fig, axes = plt.subplots(1, len(opts), figsize=(max(2.0, 0.32 * n_sigma + 1.3) * len(opts), 0.45 * main["batch_size"].nunique() + 1.6),
                             squeeze=False, layout="constrained")
    lo, hi = 100 * st["test_acc"].min(), 100 * st["test_acc"].max()
    im = None
    for ax, opt in zip(axes[0], opts, strict=True):
        d = st[st["optimizer"] == opt]
        grid = d.pivot_table(index="batch_size", columns="sigma_w", values="test_acc") * 100
        div = d.pivot_table(index="batch_size", columns="sigma_w", values="n_diverged").reindex_like(grid)
        im = ax.imshow(grid.to_numpy(), aspect="auto", origin="lower", cmap="viridis", vmin=lo, vmax=max(hi, lo + 1e-6))
        if grid.size <= 80:
            for (i, j), v in np.ndenumerate(grid.to_numpy()):
                if np.isfinite(v):
                    mark = "†" if div.to_numpy()[i, j] > 0 else ""
                    ax.text(j, i, f"{v:.0f}{mark}", ha="center", va="center", fontsize=6,
                            color="white" if v < lo + 0.6 * (hi - lo) else "black")
        step = max(1, int(np.ceil(len(grid.columns) / MAX_TICKS)))
        ax.set_xticks(range(0, len(grid.columns), step), [f"{s:g}" for s in grid.columns[::step]],
                      rotation=90 if len(grid.columns[::step]) > 5 else 0)
        ax.set_yticks(range(len(grid.index)), [str(b) for b in grid.index])
        spread_by_b = d.drop_duplicates("batch_size").set_index("batch_size")["spread_pp"]
        right = ax.secondary_yaxis("right")
        right.set_yticks(range(len(grid.index)), [f"{spread_by_b[b]:.1f}" for b in grid.index])
        right.tick_params(labelsize=6, length=0)
        if opt == opts[-1]:
            right.set_ylabel("spread over $\\sigma_w$ (pp)")  # at the axes' label size, like "batch size"
        ax.set(title=LABELS[opt], xlabel="$\\sigma_w$")
        ax.grid(False)
    axes[0, 0].set_ylabel("batch size")
    if im is not None:
        fig.colorbar(im, ax=axes[0].tolist(), label="test acc. at $\\tau_{best}$ (%)", shrink=0.9)
    if (st.get("n_diverged", pd.Series(dtype=float)) > 0).any():
        notes.add("†: the cell has diverged runs (they enter with their best epoch before diverging)")
    if grid.size > 80:
        notes.add("cells not annotated: too many to read (see spreads.csv)")
    return notes.finish(fig)


def fig3(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Checkpoint analysis vs b per optimizer: (a) tau_interp over the runs that interpolated, with the
    share that did, (b) tau_best, (c) the repair gap, (d) the share of runs with tau_best > tau_interp."""
    notes = Notes("fig3")
    main = runs[runs["study"] == "main"]
    t = interpolation_table(main, ["optimizer", "batch_size"])
    fig, axes = plt.subplots(1, 4, figsize=(11, 2.9), layout="constrained")
    never = []
    for opt in _optimizers(main):
        g = t[t["optimizer"] == opt].set_index("batch_size").sort_index()
        kw = dict(ms=3, label=LABELS[opt], color=COLORS[opt], **STYLES[opt])
        for ax, col, scale in zip(axes, ["tau_interp", "tau_best", "repair_gap_pp", "share_best_after_interp"], [1, 1, 1, 100], strict=True):
            ax.plot(g.index, g[col] * scale, **kw)
        for b, r in g.iterrows():
            if np.isfinite(r["tau_interp"]) and r["frac_interp"] < 1:
                axes[0].annotate(f"{100 * r['frac_interp']:.0f}%", (b, r["tau_interp"]), textcoords="offset points",
                                 xytext=(3, 3), fontsize=5.5, color=COLORS[opt])
        if (g["frac_interp"] == 0).all():
            never.append(LABELS[opt])
    titles = ["(a) interpolation epoch", "(b) selected checkpoint", "(c) repair gap", "(d) checkpoint after interpolation"]
    ylabels = ["$\\tau_{interp}$ (epoch; runs that reached 99.5%)", "$\\tau_{best}$ (epoch)",
               "ValAcc($\\tau_{best}$) - ValAcc($\\tau_{interp}$) (pp)", "runs with $\\tau_{best} > \\tau_{interp}$ (%)"]
    for ax, title, ylabel in zip(axes, titles, ylabels, strict=True):
        ax.set(title=title, xlabel="batch size", ylabel=ylabel, xscale="log")
        _grid_ticks(ax, main["batch_size"], log=True)
    axes[3].set_ylim(-5, 105)
    for ax in (axes[0], axes[2]):
        if not any(np.isfinite(line.get_ydata()).any() for line in ax.lines):
            no_data(ax, "no run interpolated\n(train acc. never reached 99.5%)")
    if never and len(never) < len(_optimizers(main)):
        notes.add(f"no run interpolated for {', '.join(never)}: no point in (a) and (c)")
    notes.add("(a) labels: share of runs that interpolated where not all did; (d) counts a run that never interpolates as 'not after'")
    _legend_right(fig, axes)
    return notes.finish(fig)


def _with_ci(ax, d: pd.DataFrame, x: str, label: str, **kw) -> None:
    """Spread vs ``x`` with its interval against the noise as error bars (``spreads.csv``'s
    ``spread_ci_low/high``: :func:`initmem.stats.verdicts.spread_estimate`; none with one seed)."""
    d = d.sort_values(x)
    err = np.vstack([d["spread_pp"] - d["spread_ci_low"], d["spread_ci_high"] - d["spread_pp"]])
    ax.errorbar(d[x], d["spread_pp"], yerr=np.where(np.isfinite(err), err, 0), marker="o", ms=3, capsize=2, label=label, **kw)


def fig4(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """SGD repair map: (a) the long constant-LR control against the main grid on the same sigma_w and
    seeds, (b) spread vs learning rate, (c) spread vs L2 (error bars: 0.95 jackknife t-intervals over seeds,
    :func:`initmem.stats.spreads.spread_estimate`)."""
    notes = Notes("fig4")
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.0), layout="constrained")
    long_bs = sorted(set(runs.loc[runs["study"] == "long", "batch_size"]))
    for b in long_bs:
        lg, mm = matched_long_runs(runs, b)
        if lg.empty or mm.empty:
            notes.add(f"(a) b={b}: the main grid has no SGD run on the long run's sigma_w and seeds")
            continue
        pts = config_spreads(spreads(pd.concat([mm, lg], ignore_index=True))).sort_values("epochs")
        _with_ci(axes[0], pts, "epochs", f"b={b}", color=batch_colors(long_bs)[b])
        seeds = "/".join(map(str, sorted(set(lg["seed"]))))
        notes.add(f"(a) b={b}: both spreads on sigma_w {'/'.join(f'{s:g}' for s in sorted(set(lg['sigma_w'])))}, seed(s) {seeds}")
    axes[0].set(title="(a) training length (matched $\\sigma_w$, seeds)", xlabel="epochs (main: cosine; long: constant LR)",
                ylabel="spread (pp)", xscale="log")
    _grid_ticks(axes[0], [p for line in axes[0].lines for p in line.get_xdata()], log=True)
    cs = config_spreads(spreads(runs[runs["study"] == "lr_l2"]))
    if not cs.empty:
        no_l2 = cs[cs["l2"] == 0]
        for b, c in batch_colors(no_l2["batch_size"]).items():
            _with_ci(axes[1], no_l2[no_l2["batch_size"] == b], "lr", f"b={b}", color=c)
        lr_color, styles = batch_colors(cs["lr"]), dict(zip(sorted(set(cs["batch_size"])), ["-", "--", ":", "-."] * 4, strict=False))
        for (lr, b), d in cs.groupby(["lr", "batch_size"]):  # colour: learning rate; line style: batch size
            _with_ci(axes[2], d, "l2", f"$\\eta_0$={lr:g}, b={b}", color=lr_color[lr], ls=styles[b])
        nonzero = sorted(v for v in set(cs["l2"]) if v > 0)
        axes[2].set_xscale("symlog", linthresh=min(nonzero) if nonzero else 1e-3)
        _grid_ticks(axes[2], cs["l2"], log=True)
        if cs["spread_ci_low"].isna().all():
            notes.add("(b, c) no error bars: one seed per configuration")
    axes[1].set(title="(b) learning rate (no L2)", xlabel="$\\eta_0$", ylabel="spread (pp)", xscale="log")
    if not cs.empty:
        _grid_ticks(axes[1], cs["lr"], log=True)
    axes[2].set(title="(c) explicit L2", xlabel="$\\lambda_{L2}$", ylabel="spread (pp)")
    for ax in axes:
        if ax.lines or ax.containers:
            ax.legend(fontsize=6, loc="best", framealpha=0.8)
        else:
            no_data(ax)
    return notes.finish(fig)


def _depth_frames(runs: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The architectures of the depth figures: ResNet-9 from the main grid, with only the optimizers
    the depth study trains (the figure compares depths, not optimizers), then the depth study's."""
    frames = []
    depth = runs[runs["study"] == "depth"]
    main = runs[(runs["study"] == "main") & runs["optimizer"].isin(set(depth["optimizer"]))]
    if not main.empty:
        frames.append(("resnet9", main))
    for v in ["resnet56", "resnet110", "r9avg"] + sorted(set(depth["variant"].dropna()) - {"resnet56", "resnet110", "r9avg"}):
        d = depth[depth["variant"] == v]
        if not d.empty:
            frames.append((v, d))
    return frames


def _label_outer_drawn(axes: np.ndarray, row_labels: list[str] | None = None) -> None:
    """Axis labels and tick labels on the outer panels only (their ranges are shared), where the
    outer panel is the leftmost (y) and lowest (x) panel that draws data: an empty panel ("no data")
    shows no axis, so a row or column whose outer panel is empty keeps its label on the next one, and a
    row whose every panel is empty keeps it on its first (no ticks: a quantity, not a scale). ``row_labels``:
    each row's label, where an empty panel (:func:`no_data`) cleared it."""
    ylabels = row_labels or [next((ax.get_ylabel() for ax in row if ax.get_ylabel()), "") for row in axes]
    xlabels = [next((ax.get_xlabel() for ax in col if ax.get_xlabel()), "") for col in axes.T]
    for ax in axes.flat:
        ax.set(xlabel="", ylabel="")
        ax.tick_params(labelleft=False, labelbottom=False)
    for row, label in zip(axes, ylabels, strict=True):
        if (first := next((ax for ax in row if _drawn(ax)), None)) is not None:
            first.set_ylabel(label)
            first.tick_params(labelleft=True)
        else:  # every panel of the row says "no data": the row still says what quantity it is
            row[0].set_ylabel(label)
    for col, label in zip(axes.T, xlabels, strict=True):
        if (last := next((ax for ax in col[::-1] if _drawn(ax)), None)) is not None:
            last.set_xlabel(label)
            last.tick_params(labelbottom=True)


def _per_arch(runs: pd.DataFrame, rows: list[tuple[str, str, float]], title: str, notes: Notes) -> plt.Figure:
    """Rows: each metric at each batch size of the depth study; columns: architectures. One y range
    per metric, shared by every panel that shows it, so depths compare at a glance."""
    frames = _depth_frames(runs)
    batches = _two_batches(runs[runs["study"] == "depth"])
    panel_rows = [(m, b) for m in rows for b in batches]
    fig, axes = plt.subplots(len(panel_rows), len(frames), figsize=(2.5 * len(frames), 2.1 * len(panel_rows) + 0.5),
                             squeeze=False, layout="constrained", sharex=True)
    for r, ((metric, ylabel, scale), b) in enumerate(panel_rows):
        for col, (arch, d) in enumerate(frames):
            ax = axes[r, col]
            d = d[d["batch_size"] == b]
            for opt in _optimizers(d):
                _band(ax, d[d["optimizer"] == opt], metric, LABELS[opt], COLORS[opt], scale,
                      ACC_RANGE if scale == 100 else NONNEGATIVE, **STYLES[opt])
                if metric == "tau_interp":
                    frac = d[d["optimizer"] == opt].groupby("sigma_w")["tau_interp"].apply(lambda s: s.notna().mean())
                    part = frac[(frac > 0) & (frac < 1)]
                    mean = d[d["optimizer"] == opt].groupby("sigma_w")["tau_interp"].mean()
                    ax.plot(part.index, mean[part.index], ls="none", marker="o", ms=6, mfc="white", mec=COLORS[opt], zorder=3)
            ax.set(title=f"{LABELS.get(arch, arch)}, b={b}", ylabel=ylabel, xlabel="$\\sigma_w$")
            _grid_ticks(ax, d["sigma_w"])
            never = [LABELS[o] for o in _optimizers(d) if metric == "tau_interp" and d.loc[d["optimizer"] == o, metric].isna().all()]
            if not _drawn(ax):  # (an empty marker line for partial interpolation draws nothing)
                no_data(ax, "no data: no run interpolated" if never else f"no b={b} runs" if d.empty else "no data")
            elif never:
                ax.text(0.03, 0.03, "no run interpolated:\n" + ", ".join(never), transform=ax.transAxes, fontsize=6,
                        color="dimgray", va="bottom")
    for metric in rows:  # one y range per metric over every architecture and batch size (bands included)
        group = [ax for (m, _), row in zip(panel_rows, axes, strict=True) if m == metric for ax in row
                 if _drawn(ax) and np.isfinite([ax.dataLim.y0, ax.dataLim.y1]).all()]  # an empty line leaves inf limits
        if group:
            lo, hi = min(ax.dataLim.y0 for ax in group), max(ax.dataLim.y1 for ax in group)
            pad = 0.05 * (hi - lo) if hi > lo else max(1.0, 0.02 * abs(hi))  # a flat metric still gets a readable range
            for ax in group:
                ax.set_ylim(lo - pad, hi + pad)
                ax.ticklabel_format(axis="y", useOffset=False)
    _label_outer_drawn(axes, [ylabel for (_, ylabel, _), _ in panel_rows])
    if any(a == "resnet9" for a, _ in frames):
        notes.add("ResNet-9 columns: the main grid's runs")
    _legend_right(fig, axes)
    fig.suptitle(title)
    return fig


def fig5(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Depth: test accuracy vs sigma_w for ResNet-9, ResNet-56, ResNet-110, R9-AvgPool, at both batch sizes."""
    notes = Notes("fig5")
    fig = _per_arch(runs, [("test_acc_best", "test acc. at $\\tau_{best}$ (%)", 100)], "Depth: test accuracy", notes)
    _diverged_note(notes, runs[runs["study"] == "depth"], "depth")
    return notes.finish(fig)


def fig7(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Depth: train accuracy at tau_best and interpolation epoch vs sigma_w, at both batch sizes."""
    notes = Notes("fig7")
    fig = _per_arch(runs, [("train_acc_best", "train acc. at $\\tau_{best}$ (%)", 100),
                           ("tau_interp", "$\\tau_{interp}$ (epoch)", 1)], "Depth: trainability", notes)
    notes.add("tau_interp: mean over the runs that reached 99.5% train accuracy; hollow marker: not all runs did; "
              "no point: none did")
    depth = runs[runs["study"] == "depth"]
    if "stopped_early" in depth and depth["stopped_early"].astype(bool).any():
        notes.add(f"{int(depth['stopped_early'].astype(bool).sum())} depth run(s) stopped early (patience)")
    return notes.finish(fig)


def _abs_ci(d: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The 95% OLS interval of beta mapped to |beta| (lower end 0 where the interval contains 0)."""
    lo, hi = d["ci_low"].to_numpy(float), d["ci_high"].to_numpy(float)
    low = np.where(lo * hi > 0, np.minimum(np.abs(lo), np.abs(hi)), 0.0)
    return low, np.maximum(np.abs(lo), np.abs(hi))


# Figure 6's panels (a-d), as in the paper; the main study's other optimizers are named in its footnote
FIG6_OPTIMIZERS = ("sgd", "adam", "adamw", "muon")


def fig6(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """|beta(t)| vs epoch (a-d: SGD with the SGD+L2 ablation, Adam, AdamW, Muon) and vs the clocks
    (e-f), each with its 95% OLS confidence band (beta.csv's ci_low/ci_high)."""
    notes = Notes("fig6")
    beta = beta_table(history[history["study"].isin(["main", "lr_l2"])])
    main = beta[beta["study"] == "main"] if not beta.empty else beta
    abl = beta[(beta["study"] == "lr_l2")] if not beta.empty else beta
    ablation = l2_ablation(abl) if not abl.empty else None
    if ablation is None:
        abl = abl.iloc[0:0]
        notes.add("no SGD+L2 ablation: no lr_l2 study with L2 > 0 in this config")
    else:
        abl = abl[np.isclose(abl["lr"], ablation[0]) & np.isclose(abl["l2"], ablation[1])]
        if ablation != (1e-2, 1e-2):
            notes.add(f"SGD+L2 ablation at eta={ablation[0]:g}, L2={ablation[1]:g} (the paper's eta=1e-2, L2=1e-2 is not in this config)")
    fig, axes = plt.subplots(2, 3, figsize=(10, 5.6), layout="constrained")
    ax = axes.flat
    bs = sorted(set(main["batch_size"])) if not main.empty else []
    color = batch_colors(bs)
    abl_bs = sorted(set(abl["batch_size"])) if not abl.empty else []
    abl_color = dict(zip(abl_bs, ["crimson", "tab:orange", "tab:brown", "tab:pink"] * 4, strict=False))

    def curve(a, d, x, label, **kw) -> None:
        low, high = _abs_ci(d)
        drawn = loglog(a, d[x], d["abs_beta"], low, high, label=label, **kw)
        if not drawn:
            why = "too few runs for an OLS fit" if d["beta"].isna().all() else f"|beta| < {BETA_FLOOR:g} at every epoch"
            notes.add(f"{label} ({a.get_title() or 'panel'}): not drawn, {why}")

    left_out = [o for o in _optimizers(main) if o not in FIG6_OPTIMIZERS]
    if left_out:
        notes.add(f"not drawn: the main study's {', '.join(LABELS[o] for o in left_out)} runs (panels a-d are the paper's "
                  f"{', '.join(LABELS[o] for o in FIG6_OPTIMIZERS)}; Figure 1 and the claims show every optimizer)")
    for i, opt in enumerate(FIG6_OPTIMIZERS):
        ax[i].set(title=f"({chr(97 + i)}) {LABELS[opt]}", xlabel="epoch", ylabel="$|\\beta(t)|$")
        has_runs = not main.empty and (main["optimizer"] == opt).any() or (opt == "sgd" and not abl.empty)
        for b in bs:
            d = main[(main["optimizer"] == opt) & (main["batch_size"] == b)]
            if not d.empty:
                curve(ax[i], d, "epoch", f"b={b}", color=color[b])
        if opt == "sgd":
            for b in abl_bs:
                curve(ax[i], abl[abl["batch_size"] == b], "epoch", f"SGD+L2 b={b}", ls="--", color=abl_color[b])
        finish_log_panel(ax[i], xlog=False, has_runs=has_runs)
        ax[i].xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole numbers
    ax[4].set(title="(e) SGD vs $T_{SGD}$, SGD+L2 vs $T_{L2}$", xlabel="cumulative clock", ylabel="$|\\beta|$")
    ax[5].set(title="(f) Adam vs $T_{adapt}$", xlabel="$T_{adapt} = \\sum_k \\eta_k$", ylabel="$|\\beta|$")
    for b in bs:
        d = main[(main["optimizer"] == "sgd") & (main["batch_size"] == b)]
        if not d.empty:
            curve(ax[4], d, "T_sgd", f"SGD b={b} vs $T_{{SGD}}$", color=color[b], xlog=True)
        d = main[(main["optimizer"] == "adam") & (main["batch_size"] == b)]
        if not d.empty:
            curve(ax[5], d, "T_adapt", f"Adam b={b}", color=color[b], xlog=True)
    for b in abl_bs:
        curve(ax[4], abl[abl["batch_size"] == b], "T_l2", f"SGD+L2 b={b} vs $T_{{L2}}$", ls="--", color=abl_color[b], xlog=True)
    has = lambda o: not main.empty and (main["optimizer"] == o).any()
    finish_log_panel(ax[4], xlog=True, has_runs=has("sgd") or not abl.empty)
    finish_log_panel(ax[5], xlog=True, has_runs=has("adam"))
    if not beta.empty and (beta["n_carried"] > 0).any():
        notes.add("runs that stopped early are carried forward at their last epoch (beta.csv: n_carried)")
    if not beta.empty and (beta["n_diverged"] > 0).any():
        notes.add(f"diverged runs leave the fits after diverging (up to {int(beta['n_diverged'].max())} per fit; beta.csv: n_diverged)")
    notes.add(f"bands: 95% OLS confidence interval of beta; |beta| below {BETA_FLOOR:g} (float round-off; the verdicts' "
              "floor) is not drawn")
    return notes.finish(fig)


def fig8(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Normalization x augmentation: test accuracy vs sigma_w, SGD vs Adam, for BatchNorm without
    augmentation (the main grid's baseline), BatchNorm + augmentation and LayerNorm + augmentation."""
    notes = Notes("fig8")
    na = runs[runs["study"] == "norm_aug"]
    main = runs[(runs["study"] == "main") & (runs["norm"] == "batchnorm") & ~runs["augment"].astype(bool)]
    main = main[main["optimizer"].isin(set(na["optimizer"]))]
    columns = [("main", "batchnorm", "BatchNorm, no aug. (main)")]
    columns += [("norm_aug", n, f"{LABELS[n]} + aug.") for n in ("batchnorm", "layernorm") if n in set(na["norm"])]
    batches = _two_batches(na)
    fig, axes = plt.subplots(len(batches), len(columns), figsize=(3.0 * len(columns), 2.4 * len(batches) + 0.5), squeeze=False,
                             sharey=True, layout="constrained")
    for r, b in enumerate(batches):
        for c, (study, norm, title) in enumerate(columns):
            src = main if study == "main" else na[na["norm"] == norm]
            d = src[src["batch_size"] == b]
            for opt in _optimizers(d):
                _band(axes[r, c], d[d["optimizer"] == opt], "test_acc_best", LABELS[opt], COLORS[opt], 100, ACC_RANGE,
                      **STYLES[opt])
            axes[r, c].set(title=f"{title}, b={b}", xlabel="$\\sigma_w$", ylabel="test acc. (%)")
            axes[r, c].label_outer()
            _grid_ticks(axes[r, c], d["sigma_w"] if not d.empty else [])
            if not axes[r, c].lines:
                no_data(axes[r, c], "main grid not in this config" if study == "main" and main.empty else f"no b={b} runs")
    _legend_right(fig, axes)
    _diverged_note(notes, na, "norm_aug")
    _diverged_note(notes, main[main["batch_size"].isin(batches)], "main (baseline)")
    notes.add("aug.: flip + 4-px reflect pad + random crop; the baseline column is the main grid's runs at the same settings")
    return notes.finish(fig)
