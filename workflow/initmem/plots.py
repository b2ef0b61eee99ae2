"""Figures 1-8 of the paper from per-study run and history tables. Each ``figN`` returns a
matplotlib Figure (tests count its panels); :func:`save_figure` writes PDF + PNG atomically."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from initmem.analysis import beta_table, config_spreads, spreads  # noqa: E402
from initmem.io import atomic_path  # noqa: E402

OPTIMIZER_ORDER = ["sgd", "sgd_momentum", "adam", "adamw", "muon", "muon_full"]
LABELS = {"sgd": "SGD", "sgd_momentum": "SGD+mom.", "adam": "Adam", "adamw": "AdamW", "muon": "Muon",
          "muon_full": "Muon (full)", "resnet9": "ResNet-9", "resnet56": "ResNet-56", "resnet110": "ResNet-110",
          "r9avg": "R9-AvgPool", "batchnorm": "BatchNorm", "layernorm": "LayerNorm"}
COLORS = dict(zip(OPTIMIZER_ORDER, plt.get_cmap("tab10").colors, strict=False))
plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7,
                     "figure.dpi": 120, "axes.grid": True, "grid.alpha": 0.3})


def _optimizers(df: pd.DataFrame) -> list[str]:
    present = set(df["optimizer"]) if "optimizer" in df else set()
    return [o for o in OPTIMIZER_ORDER if o in present]


def _two_batches(df: pd.DataFrame) -> list[int]:
    """b=16 and b=128 where present (the paper's pair), else the smallest and largest present."""
    bs = sorted(set(df["batch_size"]))
    pair = [b for b in (16, 128) if b in bs]
    return pair if len(pair) == 2 else sorted({bs[0], bs[-1]})


def _no_data(ax, what: str = "no data in this config") -> None:
    ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes, color="gray")


def _band(ax, df: pd.DataFrame, col: str, label: str, color=None, scale: float = 1.0) -> None:
    """Seed mean of ``col`` vs sigma_w with a +-1 std band."""
    g = df.groupby("sigma_w")[col].agg(["mean", "std"]).reset_index()
    mean, std = g["mean"] * scale, g["std"].fillna(0) * scale
    ax.plot(g["sigma_w"], mean, marker="o", ms=3, label=label, color=color)
    ax.fill_between(g["sigma_w"], mean - std, mean + std, alpha=0.2, color=color)


def fig1(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Optimizer contrast: test acc, train acc, kernel norm at tau_best vs sigma_w, at two batch sizes."""
    main = runs[runs["study"] == "main"]
    batches = _two_batches(main)
    fig, axes = plt.subplots(len(batches), 3, figsize=(9, 2.6 * len(batches)), squeeze=False)
    for row, b in enumerate(batches):
        sub = main[main["batch_size"] == b]
        for opt in _optimizers(sub):
            d = sub[sub["optimizer"] == opt]
            _band(axes[row, 0], d, "test_acc_best", LABELS[opt], COLORS[opt], 100)
            _band(axes[row, 1], d, "train_acc_best", LABELS[opt], COLORS[opt], 100)
            _band(axes[row, 2], d, "kernel_norm_best", LABELS[opt], COLORS[opt])
        for col, (title, ylabel) in enumerate([("test accuracy", "test acc. at $\\tau_{best}$ (%)"),
                                               ("train accuracy", "train acc. at $\\tau_{best}$ (%)"),
                                               ("kernel norm", "$\\|W_{\\tau_{best}}\\|_F$")]):
            ax = axes[row, col]
            ax.set(title=f"({chr(97 + 3 * row + col)}) {title}, b={b}", xlabel="$\\sigma_w$", ylabel=ylabel)
    axes[0, 0].legend()
    fig.tight_layout()
    return fig


def fig2(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Full sigma_w x b grid: heatmap of seed-mean test accuracy per optimizer, spread per b."""
    main = runs[runs["study"] == "main"]
    st = spreads(main)
    opts = _optimizers(main)
    fig, axes = plt.subplots(1, len(opts), figsize=(2.6 * len(opts), 2.8), squeeze=False)
    for ax, opt in zip(axes[0], opts, strict=True):
        d = st[st["optimizer"] == opt]
        grid = d.pivot_table(index="batch_size", columns="sigma_w", values="test_acc") * 100
        im = ax.imshow(grid.to_numpy(), aspect="auto", origin="lower", cmap="viridis", vmin=10, vmax=100)
        ax.set_xticks(range(len(grid.columns)), [f"{s:g}" for s in grid.columns], rotation=90)
        spread_by_b = d.drop_duplicates("batch_size").set_index("batch_size")["spread_pp"]
        ax.set_yticks(range(len(grid.index)), [f"{b} ({spread_by_b[b]:.1f} pp)" for b in grid.index])
        ax.set(title=LABELS[opt], xlabel="$\\sigma_w$", ylabel="batch size (spread)")
        ax.grid(False)
    fig.colorbar(im, ax=axes[0].tolist(), label="test acc. at $\\tau_{best}$ (%)")
    return fig


def fig3(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Checkpoint analysis: tau_interp and tau_best vs b per optimizer, and the repair gap."""
    main = runs[runs["study"] == "main"]
    fig, axes = plt.subplots(1, 3, figsize=(9, 2.6))
    for opt in _optimizers(main):
        g = main[main["optimizer"] == opt].groupby("batch_size")[["tau_interp", "tau_best", "repair_gap"]].mean()
        for ax, col, scale in zip(axes, ["tau_interp", "tau_best", "repair_gap"], [1, 1, 100], strict=True):
            ax.plot(g.index, g[col] * scale, marker="o", ms=3, label=LABELS[opt], color=COLORS[opt])
    for ax, title, ylabel in zip(axes, ["(a) interpolation epoch", "(b) selected checkpoint", "(c) repair gap"],
                                 ["$\\tau_{interp}$ (epoch, train acc $\\geq$ 99.5%)", "$\\tau_{best}$ (epoch)",
                                  "ValAcc($\\tau_{best}$) - ValAcc($\\tau_{interp}$) (pp)"], strict=True):
        ax.set(title=title, xlabel="batch size", ylabel=ylabel, xscale="log")
    axes[0].legend()
    fig.tight_layout()
    return fig


def fig4(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """SGD repair map: spread vs training length, learning rate, and L2."""
    cs = config_spreads(spreads(runs))
    fig, axes = plt.subplots(1, 3, figsize=(9, 2.6))
    long_, lrl2 = cs[cs["study"] == "long"], cs[cs["study"] == "lr_l2"]
    main_sgd = cs[(cs["study"] == "main") & (cs["optimizer"] == "sgd")]
    by_length = pd.concat([main_sgd, long_])
    for b in sorted(set(long_["batch_size"])):
        d = by_length[by_length["batch_size"] == b].sort_values("epochs")
        axes[0].plot(d["epochs"], d["spread_pp"], marker="o", ms=3, label=f"b={b}")
    axes[0].set(title="(a) training length", xlabel="epochs (cosine main grid; constant-LR long run)", ylabel="spread (pp)", xscale="log")
    no_l2 = lrl2[lrl2["l2"] == 0]
    for b in sorted(set(no_l2["batch_size"])):
        d = no_l2[no_l2["batch_size"] == b].sort_values("lr")
        axes[1].plot(d["lr"], d["spread_pp"], marker="o", ms=3, label=f"b={b}")
    axes[1].set(title="(b) learning rate (no L2)", xlabel="$\\eta_0$", ylabel="spread (pp)", xscale="log")
    for (lr, b), d in lrl2.groupby(["lr", "batch_size"]):
        d = d.sort_values("l2")
        axes[2].plot(d["l2"], d["spread_pp"], marker="o", ms=3, label=f"$\\eta_0$={lr:g}, b={b}")
    axes[2].set(title="(c) explicit L2", xlabel="$\\lambda_{L2}$", ylabel="spread (pp)", xscale="symlog",
                )
    axes[2].set_xscale("symlog", linthresh=1e-3)
    for ax in axes:
        if ax.lines:
            ax.legend()
        else:
            _no_data(ax)
    fig.tight_layout()
    return fig


def _depth_frames(runs: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    frames = []
    main = runs[runs["study"] == "main"]
    if not main.empty:
        frames.append(("resnet9", main))
    depth = runs[runs["study"] == "depth"]
    for v in ["resnet56", "resnet110", "r9avg"] + sorted(set(depth["variant"].dropna()) - {"resnet56", "resnet110", "r9avg"}):
        d = depth[depth["variant"] == v]
        if not d.empty:
            frames.append((v, d))
    return frames


def _per_arch(runs: pd.DataFrame, rows: list[tuple[str, str, float]], title: str) -> plt.Figure:
    frames = _depth_frames(runs)
    b = max(_two_batches(runs[runs["study"] == "depth"]))
    fig, axes = plt.subplots(len(rows), len(frames), figsize=(2.5 * len(frames), 2.4 * len(rows)), squeeze=False)
    for col, (arch, d) in enumerate(frames):
        d = d[d["batch_size"] == b]
        for row, (metric, ylabel, scale) in enumerate(rows):
            ax = axes[row, col]
            for opt in _optimizers(d):
                _band(ax, d[d["optimizer"] == opt], metric, LABELS[opt], COLORS[opt], scale)
            ax.set(title=f"{LABELS.get(arch, arch)}, b={b}", xlabel="$\\sigma_w$", ylabel=ylabel)
            if not ax.lines:
                _no_data(ax)
    axes[0, 0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def fig5(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Depth: test accuracy vs sigma_w for ResNet-9, ResNet-56, ResNet-110, R9-AvgPool."""
    return _per_arch(runs, [("test_acc_best", "test acc. at $\\tau_{best}$ (%)", 100)], "Depth: test accuracy")


def fig7(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Depth: train accuracy at tau_best and interpolation epoch vs sigma_w."""
    return _per_arch(runs, [("train_acc_best", "train acc. at $\\tau_{best}$ (%)", 100),
                            ("tau_interp", "$\\tau_{interp}$ (epoch)", 1)], "Depth: trainability")


def _loglog(ax, x, y, **kw) -> None:
    """Plot only the points a log axis can show (|beta| is exactly 0 when every run has the same accuracy)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = (y > 0) & np.isfinite(y) & np.isfinite(x)
    if keep.any():
        ax.plot(x[keep], y[keep], **kw)


def _finish_log_panel(ax, xlog: bool) -> None:
    if ax.lines:
        ax.set_yscale("log")
        if xlog:
            ax.set_xscale("log")
        ax.legend(fontsize=6)
    else:
        _no_data(ax, "no non-zero |beta| in this config")


def fig6(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """|beta(t)| vs epoch (a-d: SGD with the SGD+L2 ablation, Adam, AdamW, Muon) and vs the clocks (e-f)."""
    beta = beta_table(history[history["study"].isin(["main", "lr_l2"])])
    main = beta[beta["study"] == "main"]
    abl = beta[(beta["study"] == "lr_l2")]
    abl = abl[np.isclose(abl["lr"], 1e-2) & np.isclose(abl["l2"], 1e-2)] if not abl.empty else abl
    fig, axes = plt.subplots(2, 3, figsize=(9, 5))
    ax = axes.flat
    cmap = plt.get_cmap("viridis")
    bs = sorted(set(main["batch_size"]))
    color = {b: cmap(i / max(1, len(bs) - 1)) for i, b in enumerate(bs)}
    abl_bs = sorted(set(abl["batch_size"])) if not abl.empty else []
    for i, opt in enumerate(["sgd", "adam", "adamw", "muon"]):
        for b in bs:
            d = main[(main["optimizer"] == opt) & (main["batch_size"] == b)]
            _loglog(ax[i], d["epoch"], d["abs_beta"], color=color[b], label=f"b={b}")
        if opt == "sgd":
            for b in abl_bs:
                d = abl[abl["batch_size"] == b]
                _loglog(ax[i], d["epoch"], d["abs_beta"], ls="--", color="crimson", label=f"SGD+L2 b={b}")
        ax[i].set(title=f"({chr(97 + i)}) {LABELS[opt]}", xlabel="epoch", ylabel="$|\\beta(t)|$")
        _finish_log_panel(ax[i], xlog=False)
    for b in bs:
        d = main[(main["optimizer"] == "sgd") & (main["batch_size"] == b)]
        _loglog(ax[4], d["T_sgd"], d["abs_beta"], color=color[b], label=f"SGD b={b} vs $T_{{SGD}}$")
        d = main[(main["optimizer"] == "adam") & (main["batch_size"] == b)]
        _loglog(ax[5], d["T_adapt"], d["abs_beta"], color=color[b], label=f"Adam b={b}")
    for b in abl_bs:
        d = abl[abl["batch_size"] == b]
        _loglog(ax[4], d["T_l2"], d["abs_beta"], ls="--", color="crimson", label=f"SGD+L2 b={b} vs $T_{{L2}}$")
    ax[4].set(title="(e) SGD vs $T_{SGD}$, SGD+L2 vs $T_{L2}$", xlabel="cumulative clock", ylabel="$|\\beta|$")
    ax[5].set(title="(f) Adam vs $T_{adapt}$", xlabel="$T_{adapt} = \\sum_k \\eta_k$", ylabel="$|\\beta|$")
    for a in (ax[4], ax[5]):
        _finish_log_panel(a, xlog=True)
    fig.tight_layout()
    return fig


def fig8(runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Normalization x augmentation: test accuracy vs sigma_w for BN/LN, SGD vs Adam."""
    na = runs[runs["study"] == "norm_aug"]
    norms = [n for n in ("batchnorm", "layernorm") if n in set(na["norm"])]
    batches = _two_batches(na)
    fig, axes = plt.subplots(len(batches), len(norms), figsize=(3.2 * len(norms), 2.5 * len(batches)), squeeze=False)
    for r, b in enumerate(batches):
        for c, norm in enumerate(norms):
            d = na[(na["norm"] == norm) & (na["batch_size"] == b)]
            for opt in _optimizers(d):
                _band(axes[r, c], d[d["optimizer"] == opt], "test_acc_best", LABELS[opt], COLORS[opt], 100)
            axes[r, c].set(title=f"{LABELS[norm]} + augmentation, b={b}", xlabel="$\\sigma_w$", ylabel="test acc. (%)")
    axes[0, 0].legend()
    fig.tight_layout()
    return fig


FIGURE_FUNCTIONS = {"fig1": fig1, "fig2": fig2, "fig3": fig3, "fig4": fig4, "fig5": fig5, "fig6": fig6,
                    "fig7": fig7, "fig8": fig8}


def make_figure(name: str, runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Build figure ``name`` (fig1 ... fig8)."""
    if runs.empty:
        raise ValueError(f"{name}: no runs to plot")
    return FIGURE_FUNCTIONS[name](runs, history)


def save_figure(fig: plt.Figure, pdf: str | Path, png: str | Path) -> None:
    """Write PDF and PNG atomically."""
    for path, fmt in ((pdf, "pdf"), (png, "png")):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, bbox_inches="tight")
    plt.close(fig)
