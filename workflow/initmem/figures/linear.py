"""Figure 9: the linear-network sanity check of the forgetting-time view (no training study needed).

A depth-3 linear chain (widths 4-6-6-3, float64) on a Gaussian regression task (256 examples, 4 -> 3,
label noise 0.5); the figure states its setup. (a) one-step imbalance change against eta: GD beside its
predicted change eta^2 ||G_{l+1}^T G_{l+1} - G_l G_l^T|| (computed, not fitted), Adam beside a slope-1
guide; (b) minibatch SGD from a minimiser: drift along the predicted direction C against
T_SGD = sum eta^2/b for several b, on the predicted line (projection = T_SGD); (c) contraction under
Keras L2 and weight decay against T_L2 / T_wd, with the predicted exp(-4T) and exp(-2T); (d) the scalar
model's final factor norm against the initial imbalance: GD on the gradient-flow law sqrt(D0^2 + 4p^2),
Adam near it at small |D0| and well below it at large |D0| (the measured deviation in the legend),
GD + L2 flat (sigma_w forgotten).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from initmem.io import atomic_path
from initmem.theory.linear import LABEL_NOISE, N_EXAMPLES, WIDTHS, check_table, run_checks

PANELS = 4


def _rows(table: list[dict]) -> dict[str, float]:
    return {r["check"]: r["measured"] for r in table}


STYLE = {"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7, "figure.dpi": 120,
         "axes.grid": True, "grid.alpha": 0.3}  # as initmem.figures.paper


def fig9(results: dict, table: list[dict]) -> plt.Figure:
    """Build Figure 9 from :func:`initmem.theory.linear.run_checks` and :func:`initmem.theory.linear.check_table`."""
    with plt.rc_context(STYLE):
        return _fig9(results, _rows(table))


def _fig9(results: dict, measured: dict[str, float]) -> plt.Figure:
    fig, axes = plt.subplots(2, 2, figsize=(8.5, 7.6))
    ax = axes[0, 0]
    so = results["step_order"]
    eta = so["eta"]
    ax.loglog(eta, so["sgd"], "o", color="C0", label=f"GD (slope {measured['gd_step_exponent']:.2f})")
    ax.loglog(eta, eta**2 * so["leak_norm"], "--", color="C0", lw=0.8,
              label=r"predicted: $\eta^2\,\|G_{l+1}^TG_{l+1}-G_lG_l^T\|$")
    ax.loglog(eta, so["adam"], "s", color="C1", label=f"Adam (slope {measured['adam_step_exponent']:.2f})")
    ax.loglog(eta, so["adam"][0] * eta / eta[0], ":", color="C1", lw=0.8, label="slope-1 guide (through Adam's first point)")
    ax.set(xlabel=r"step size $\eta$", ylabel=r"$\|D' - D\|_F$ after one step")
    ax.set_title("(a) order of the imbalance change\none full-batch GD or Adam step from a $\\sigma_w = 1$ init", fontsize=8)
    ax.legend()

    ax = axes[0, 1]
    sc = results["sgd_clock"]
    t_max = 0.0
    for i, (b, curve) in enumerate(sc["curves"].items()):
        ax.plot(curve["T_sgd"], curve["projection"], "-", color=f"C{i}", label=f"b = {b} (slope {measured[f'sgd_clock_slope_b{b}']:.2f})")
        t_max = max(t_max, curve["T_sgd"][-1])
    ax.plot([0, t_max], [0, t_max], "k--", lw=0.8, label=r"predicted: projection $= T_{SGD}$")
    ax.set(xlabel=r"$T_{SGD} = \sum_k \eta_k^2 / b$", ylabel=r"$\langle D(T) - D(0), C\rangle / \|C\|^2$")
    bs = "/".join(str(b) for b in sc["curves"])
    ax.set_title(f"(b) SGD leak runs on the minibatch clock\nSGD $\\eta$ {sc['lr']:g}, b {bs} (drawn with replacement)\n"
                 f"from a GD minimiser, mean of {sc['repeats']} streams", fontsize=8)
    ax.legend()

    ax = axes[1, 0]
    dc = results["decay"]
    t_end = 0.0
    for i, ((kind, value), curve) in enumerate(dc["curves"].items()):
        label = f"L2 {value:g} vs $T_{{L2}}$" if kind == "l2" else f"weight decay {value:g} vs $T_{{wd}}$"
        key = f"{'l2' if kind == 'l2' else 'wd'}_rate_{value:g}"
        ax.semilogy(curve["T"], curve["ratio"], "-", color=f"C{i}", label=f"{label} (rate {measured[key]:.3f})")
        t_end = max(t_end, curve["T"][-1])
    t = np.linspace(0, t_end, 50)
    ax.semilogy(t, np.exp(-4 * t), "k--", lw=0.8, label=r"predicted $e^{-4T_{L2}}$")
    ax.semilogy(t, np.exp(-2 * t), "k:", lw=0.8, label=r"predicted $e^{-2T_{wd}}$")
    ax.set(xlabel=r"$T_{L2} = \sum_k \eta_k \lambda$  or  $T_{wd} = \sum_k \eta_k\,wd$", ylabel=r"$\|D(T)\|_F / \|D(0)\|_F$",
           ylim=(1e-3, 1.5))
    ax.set_title(f"(c) explicit decay contracts the imbalance\nSGD $\\eta$ {dc['lr']:g}, b {dc['batch_size']} (drawn with replacement)\n"
                 "from a GD minimiser", fontsize=8)
    ax.legend(loc="upper right")

    ax = axes[1, 1]
    s = results["scalar"]
    setup = s["setup"]
    order = np.argsort(s["D0"])
    ax.plot(s["D0"][order], s["predicted"][order], "k-", lw=0.8, label=r"gradient-flow law: $\sqrt{D_0^2 + 4p^2}$")
    ax.plot(s["D0"], s["gd"], "o", color="C0", ms=4, label=f"GD (median error {100 * measured['scalar_gd_norm_error']:.2g}%)")
    ax.plot(s["D0"], s["adam"], "s", color="C1", ms=4, mfc="none",
            label=f"Adam: median deviation {100 * measured['scalar_adam_norm_deviation']:.2g}% ($|D_0| > 0.1$),\n"
                  f"up to {100 * np.max(np.abs(s['adam'] / s['predicted'] - 1)):.0f}% at large $D_0$; "
                  f"$D$ moves {100 * measured['scalar_adam_imbalance_change']:.0f}% (median)")
    ax.plot(s["D0"], s["l2"], "^", color="C2", ms=4, label="GD + L2 (balanced: forgets)")
    ax.set(xlabel=r"initial imbalance $D_0 = b_0^2 - a_0^2 = \sigma_w^2 (v^2 - u^2)$", ylabel=r"final $a^2 + b^2$")
    n_sw, n_seeds = len(np.unique(s["sigma_w"])), len(np.unique(s["seed"]))
    ax.set_title(f"(d) scalar model $y = abx$: what the solution remembers\n{setup['n']} examples, full batch, {setup['steps']} "
                 f"steps, {n_sw} $\\sigma_w$ x {n_seeds} seeds;\nGD $\\eta$ {setup['lr']:g}, Adam $\\eta$ {setup['adam_lr']:g} "
                 f"(cosine), GD + L2 {setup['l2']:g}", fontsize=8)
    ax.legend(fontsize=6.5)
    fig.suptitle(f"Figure 9: imbalance in deep linear networks (float64, CPU). (a-c): depth-{len(WIDTHS) - 1} linear chain "
                 f"$y = W_3W_2W_1x$, widths {'-'.join(map(str, WIDTHS))};\nregression $y = Ax + $noise, {N_EXAMPLES} Gaussian "
                 f"examples, {WIDTHS[0]} -> {WIDTHS[-1]}, label noise {LABEL_NOISE:g}. (d): widths 1-1-1.", fontsize=9)
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
