"""Figure 9: the linear-network sanity check of the forgetting-time view (no training study needed).

(a) one-step imbalance change against eta: GD second order (slope 2, the exact eta^2 term drawn),
Adam first order (slope 1); (b) minibatch SGD from a minimiser: drift along the predicted direction C
against T_SGD = sum eta^2/b for several b, on the line T; (c) contraction under Keras L2 and coupled
weight decay against T_L2 / T_wd, with exp(-4T) and exp(-2T); (d) the scalar model's final factor norm
against the initial imbalance: GD on sqrt(D0^2 + 4p^2), Adam off it, GD + L2 flat (sigma_w forgotten).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from initmem.io import atomic_path  # noqa: E402
from initmem.linear import check_table, run_checks  # noqa: E402

PANELS = 4


def _rows(table: list[dict]) -> dict[str, float]:
    return {r["check"]: r["measured"] for r in table}


STYLE = {"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7, "figure.dpi": 120,
         "axes.grid": True, "grid.alpha": 0.3}  # as initmem.plots


def fig9(results: dict, table: list[dict]) -> plt.Figure:
    """Build Figure 9 from :func:`initmem.linear.run_checks` and :func:`initmem.linear.check_table`."""
    with plt.rc_context(STYLE):
        return _fig9(results, _rows(table))


def _fig9(results: dict, measured: dict[str, float]) -> plt.Figure:
    fig, axes = plt.subplots(2, 2, figsize=(8.5, 7.0))
    ax = axes[0, 0]
    so = results["step_order"]
    eta = so["eta"]
    ax.loglog(eta, so["sgd"], "o", color="C0", label=f"GD (slope {measured['gd_step_exponent']:.2f})")
    ax.loglog(eta, so["sgd"][0] * (eta / eta[0]) ** 2, "--", color="C0", lw=0.8, label=r"$\eta^2\,\|G_{l+1}^TG_{l+1}-G_lG_l^T\|$")
    ax.loglog(eta, so["adam"], "s", color="C1", label=f"Adam (slope {measured['adam_step_exponent']:.2f})")
    ax.loglog(eta, so["adam"][0] * eta / eta[0], ":", color="C1", lw=0.8, label="slope 1")
    ax.set(xlabel=r"step size $\eta$", ylabel=r"$\|D' - D\|_F$ after one step", title="(a) order of the imbalance change")
    ax.legend()

    ax = axes[0, 1]
    sc = results["sgd_clock"]
    t_max = 0.0
    for i, (b, curve) in enumerate(sc["curves"].items()):
        ax.plot(curve["T_sgd"], curve["projection"], "-", color=f"C{i}", label=f"b = {b} (slope {measured[f'sgd_clock_slope_b{b}']:.2f})")
        t_max = max(t_max, curve["T_sgd"][-1])
    ax.plot([0, t_max], [0, t_max], "k--", lw=0.8, label=r"predicted $T_{SGD}$")
    ax.set(xlabel=r"$T_{SGD} = \sum_k \eta_k^2 / b$", ylabel=r"$\langle D(T) - D(0), C\rangle / \|C\|^2$",
           title="(b) SGD leak runs on the minibatch clock")
    ax.legend()

    ax = axes[1, 0]
    t_end = 0.0
    for i, ((kind, value), curve) in enumerate(results["decay"]["curves"].items()):
        label = f"L2 {value:g}" if kind == "l2" else f"weight decay {value:g}"
        key = f"{'l2' if kind == 'l2' else 'wd'}_rate_{value:g}"
        ax.semilogy(curve["T"], curve["ratio"], "-", color=f"C{i}", label=f"{label} vs {curve['clock']} (rate {measured[key]:.3f})")
        t_end = max(t_end, curve["T"][-1])
    t = np.linspace(0, t_end, 50)
    ax.semilogy(t, np.exp(-4 * t), "k--", lw=0.8, label=r"$e^{-4T_{L2}}$")
    ax.semilogy(t, np.exp(-2 * t), "k:", lw=0.8, label=r"$e^{-2T_{wd}}$")
    ax.set(xlabel=r"$T_{L2} = \sum_k \eta_k \lambda$  or  $T_{wd} = \sum_k \eta_k\,wd$", ylabel=r"$\|D(T)\|_F / \|D(0)\|_F$",
           title="(c) explicit decay contracts the imbalance", ylim=(1e-3, 1.5))
    ax.legend(loc="upper right")

    ax = axes[1, 1]
    s = results["scalar"]
    order = np.argsort(s["D0"])
    ax.plot(s["D0"][order], s["predicted"][order], "k-", lw=0.8, label=r"gradient flow: $\sqrt{D_0^2 + 4p^2}$")
    ax.plot(s["D0"], s["gd"], "o", color="C0", ms=4, label="GD")
    ax.plot(s["D0"], s["adam"], "s", color="C1", ms=4, mfc="none", label="Adam")
    ax.plot(s["D0"], s["l2"], "^", color="C2", ms=4, label="GD + L2 (balanced: forgets)")
    ax.set(xlabel=r"initial imbalance $D_0 = b_0^2 - a_0^2 = \sigma_w^2 (v^2 - u^2)$", ylabel=r"final $a^2 + b^2$",
           title=r"(d) scalar model $y = abx$: what the solution remembers")
    ax.legend()
    fig.suptitle("Figure 9: imbalance in deep linear networks (float64, CPU)", fontsize=9)
    fig.tight_layout()
    return fig


def write_linear_check(pdf: str | Path, png: str | Path, table: str | Path) -> list[dict]:
    """Run the checks, write Figure 9 (PDF + PNG) and results/tables/linear_check.csv atomically; return the rows."""
    import csv

    results = run_checks()
    rows = check_table(results)
    with atomic_path(table) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    save(fig9(results, rows), pdf, png)
    return rows


def save(fig: plt.Figure, pdf: str | Path, png: str | Path) -> None:
    """Write PDF and PNG atomically."""
    for path, fmt in ((pdf, "pdf"), (png, "png")):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, bbox_inches="tight")
    plt.close(fig)
