"""What every figure shares: the style (fonts, dpi), footnotes that say what a figure leaves out,
log-log |beta| panels that say why they are empty, and atomic PDF + PNG writing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

import initmem.figures.style  # noqa: F401  (Type 42 fonts in PDFs, 200-dpi PNGs)
from initmem.io import atomic_path
from initmem.stats.shapes import BETA_FLOOR

_MATH = [(r"\\(?:sigma|eta|tau|lambda|beta|alpha)", lambda m: m.group(0)[1:]), (r"\\\|", "||"), (r"\\sum_k", "sum_k"),
         (r"_\{([^{}]*)\}", r"_\1"), (r"[${}\\]", "")]


def plain(text: str) -> str:
    """Mathtext made plain for a log line: ``$T_{L2}$`` -> ``T_L2``, ``$\\sigma_w$`` -> ``sigma_w``."""
    for pattern, repl in _MATH:
        text = re.sub(pattern, repl, text)
    return text


class Notes:
    """What a figure leaves out, said on the figure (footnote) and in the job's log."""

    def __init__(self, name: str):
        self.name, self.lines = name, []

    def add(self, text: str) -> None:
        if text not in self.lines:
            self.lines.append(text)
            print(f"{self.name}: {plain(text)}", file=sys.stderr)

    def finish(self, fig: plt.Figure) -> plt.Figure:
        if self.lines:
            # a figure-level x label: the layout engine keeps room for it under the panels and the legend
            fig.supxlabel("\n".join("* " + t for t in self.lines), x=0.01, ha="left", fontsize=6.5, color="dimgray")
        return fig


# How close to chance a figure's runs may be and still be read as having learned nothing (test accuracy,
# the median over its runs, in percentage points above 1 / classes).
NEAR_CHANCE_PP = 5.0


def what_the_runs_are(runs: pd.DataFrame, data: dict | None) -> list[str]:
    """Footnotes that say what a figure's runs are where that is not what the paper's figure shows: runs
    that learned next to nothing (median test accuracy within :data:`NEAR_CHANCE_PP` of chance: a plumbing
    demo, like the embedded default's), and images that are not the official pixels (``data`` the run's
    data config: a re-packed copy read with ``data.verify_md5: false``, as config/jpeg-copy.yaml, or
    synthetic images)."""
    from initmem.spec import entry_info

    lines = []
    source = (data or {}).get("source")
    try:
        classes = int(entry_info("source", source).get("CLASSES", 10)) if source else 10
    except ValueError:  # a source this checkout does not know: CIFAR-10's
        classes = 10
    chance = 100.0 / classes
    acc = 100 * pd.to_numeric(runs.get("test_acc_best", pd.Series(dtype=float)), errors="coerce").dropna()
    if len(acc) and acc.median() <= chance + NEAR_CHANCE_PP:
        lines.append(f"DEMO: test accuracy {acc.min():.0f}-{acc.max():.0f}% (median {acc.median():.0f}%), chance "
                     f"{chance:.0f}%: these networks learned next to nothing; the curves show that the pipeline runs, "
                     "not the paper's effects")
    if source == "synthetic":
        lines.append("data.source synthetic: synthetic images, not CIFAR-10")
    elif data and data.get("archive") and data.get("verify_md5", True) is False:
        lines.append(f"trained on a re-packed copy, not the official CIFAR-10 pixels ({data['archive']}, data.verify_md5: "
                     "false, e.g. the JPEG q75 copy of config/jpeg-copy.yaml)")
    return lines


def add_footnotes(fig: plt.Figure, name: str, lines: list[str]) -> plt.Figure:
    """Put ``lines`` first in the figure's footnote (above what :class:`Notes` wrote there), and in the log."""
    if not lines:
        return fig
    for line in lines:
        print(f"{name}: {plain(line)}", file=sys.stderr)
    existing = fig._supxlabel.get_text() if getattr(fig, "_supxlabel", None) is not None else ""
    text = "\n".join(["* " + t for t in lines] + ([existing] if existing else []))
    fig.supxlabel(text, x=0.01, ha="left", fontsize=6.5, color="dimgray")
    return fig


def no_data(ax, what: str = "no data") -> None:
    """An empty panel says so, with no axis (ticks, tick labels, grid) that would suggest a scale."""
    ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes, color="gray", wrap=True)
    ax.tick_params(which="both", left=False, bottom=False, labelleft=False, labelbottom=False)
    ax.grid(False)
    ax.set(xlabel="", ylabel="")


def loglog(ax, x, y, low=None, high=None, **kw) -> bool:
    """Plot only the points a log axis can show (|beta| is exactly 0 when every run has the same
    accuracy), with a band between ``low`` and ``high`` where given; False when nothing is drawn."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = (y >= BETA_FLOOR) & np.isfinite(y) & np.isfinite(x) & (x > 0 if kw.pop("xlog", False) else True)
    if not keep.any():
        return False
    line, = ax.plot(x[keep], y[keep], **kw)
    if low is not None:  # a CI through 0 would reach -inf on a log axis
        lo = np.maximum(np.asarray(low, float)[keep], np.maximum(y[keep] / 100, BETA_FLOOR))
        ax.fill_between(x[keep], lo, np.asarray(high, float)[keep], color=line.get_color(), alpha=0.15, lw=0)
    return True


def _readable_log_ticks(axis) -> None:
    """A log axis spanning under two decades gets labelled ticks at 1, 2, 5 x 10^k instead of
    crowded minor labels."""
    lo, hi = axis.get_view_interval()
    if lo > 0 and np.log10(hi / lo) < 2:
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2g}"))
        axis.set_minor_formatter(NullFormatter())


def finish_log_panel(ax, xlog: bool, has_runs: bool = True) -> None:
    """Log axes and a legend; an empty panel says why: no runs in this tier, or no |beta| to draw."""
    if ax.lines:
        ax.set_yscale("log")
        if xlog:
            ax.set_xscale("log")
            _readable_log_ticks(ax.xaxis)
        _readable_log_ticks(ax.yaxis)
        ax.legend(fontsize=6, loc="best", framealpha=0.8)
    else:
        no_data(ax, f"no data (no |beta| >= {BETA_FLOOR:g})" if has_runs else "not in this tier")


def save_figure(fig: plt.Figure, pdf: str | Path, png: str | Path) -> None:
    """Write PDF (Type 42 fonts) and PNG (at figstyle.PNG_DPI) atomically."""
    for path, fmt in ((pdf, "pdf"), (png, "png")):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, bbox_inches="tight")
    plt.close(fig)
