"""Every figure by its name. The list of figures and the studies each reads is one table,
:data:`initmem.pipeline.targets.FIGURES` (torch- and matplotlib-free: the workflow reads it on every
parse); each name there is built by the function of that name in :mod:`initmem.figures.paper`
(Figures 1-8) or :mod:`initmem.figures.clock` (Figure 10, the clock-matched tier's). Figure 9 is the
linear check's (rule linear_check). Adding a figure: its row in ``targets.FIGURES``, its function
``figN(runs, history)`` in one of those modules, its caption in ``workflow/report/figure.rst``."""

from __future__ import annotations

import json
import os

import matplotlib.pyplot as plt
import pandas as pd

from initmem.figures import clock, paper
from initmem.figures.common import add_footnotes, what_the_runs_are
from initmem.pipeline.targets import FIGURES


def _functions() -> dict:
    found = {}
    for name in FIGURES:
        function = getattr(paper, name, None) or getattr(clock, name, None)
        if function is None:
            raise ImportError(f"pipeline.targets.FIGURES names {name}, but neither initmem.figures.paper nor "
                              f"initmem.figures.clock defines a function {name}(runs, history)")
        found[name] = function
    return found


FIGURE_FUNCTIONS = _functions()


# The data config of the workflow that runs the figure job (set for every job by workflow/rules/common.smk).
DATA_CONFIG_ENV = "INITMEM_DATA_CONFIG"


def make_figure(name: str, runs: pd.DataFrame, history: pd.DataFrame, data: dict | None = None) -> plt.Figure:
    """Build figure ``name`` (one of :data:`initmem.pipeline.targets.FIGURES`). Its footnote says first what
    the runs are where the paper's figure would not be (:func:`initmem.figures.common.what_the_runs_are`):
    near chance, or not the official pixels; ``data`` is the runs' data config, by default the one the
    workflow gives its jobs (``$INITMEM_DATA_CONFIG``; its runs' keys hold the data, so another data
    config means other runs and a new figure)."""
    if name not in FIGURE_FUNCTIONS:
        raise ValueError(f"unknown figure {name!r}; choose one of {', '.join(FIGURE_FUNCTIONS)} (fig9: rule linear_check)")
    if runs.empty:
        raise ValueError(f"{name}: no runs to plot")
    if data is None and os.environ.get(DATA_CONFIG_ENV):
        data = json.loads(os.environ[DATA_CONFIG_ENV])
    return add_footnotes(FIGURE_FUNCTIONS[name](runs, history), name, what_the_runs_are(runs, data))
