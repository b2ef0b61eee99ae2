"""Every figure by its name: Figures 1-8 (:mod:`initmem.figures.paper`) and Figure 10 (the clock-matched
tier's, :mod:`initmem.figures.clock`); Figure 9 is the linear check's (rule linear_check)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from initmem.figures.clock import fig10
from initmem.figures.paper import fig1, fig2, fig3, fig4, fig5, fig6, fig7, fig8

FIGURE_FUNCTIONS = {"fig1": fig1, "fig2": fig2, "fig3": fig3, "fig4": fig4, "fig5": fig5, "fig6": fig6,
                    "fig7": fig7, "fig8": fig8, "fig10": fig10}


def make_figure(name: str, runs: pd.DataFrame, history: pd.DataFrame) -> plt.Figure:
    """Build figure ``name`` (fig1 ... fig8; fig10, the clock-matched tier's, from initmem.figures.clock)."""
    if name not in FIGURE_FUNCTIONS:
        raise ValueError(f"unknown figure {name!r}; choose one of {', '.join(FIGURE_FUNCTIONS)} (fig9: rule linear_check)")
    if runs.empty:
        raise ValueError(f"{name}: no runs to plot")
    return FIGURE_FUNCTIONS[name](runs, history)
