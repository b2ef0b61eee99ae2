"""App. F: the standard SGD recipe's |Delta| at b=128 below 1 pp, and its accuracy above Adam's;
App. D: deeper ResNets train worse at the largest sigma_w than ResNet-9."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem.claims.analysis import scale_label
from initmem.claims.claim import NO_FIT, Claim
from initmem.claims.clock import below_decided, undecided_power
from initmem.claims.rows import BELOW_PP, MAIN, Reading, batches, difference, instead, matched, row, run_cell, select, to_cell
from initmem.paper import Q_RECIPE
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V
from initmem.stats.verdicts import greater, less

ORDER = 60
RECIPE_DEPTH = Claim(("recipe_b{b}_erases", "recipe_beats_adam_b{b}", "depth_{arch}_trains_worse_b{b}"), "recipe and depth", Q_RECIPE,
                     "Sec. 3.2, App. D, F", "|Delta| and accuracies", "best_recipe, depth", "see the row", fit=NO_FIT)
CLAIMS = [RECIPE_DEPTH]


def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """The recipe's two rows at b=128 (or the config's largest batch), and each deeper architecture's at every batch size."""
    if runs.empty:
        return []
    out = []
    best = runs[runs["study"] == "best_recipe"]
    if not best.empty:
        scale = scale_label(runs, "best_recipe")
        bs = batches(best)
        b = 128 if 128 in bs else bs[-1]
        other_b = instead(128, b, "the config's best_recipe has no b=128; its largest batch")
        cell = run_cell(runs, "best_recipe", variant="sgd_standard", batch_size=b)
        est = Sp.spread_estimate(cell) if cell is not None else None
        out.append(row(RECIPE_DEPTH.id(0, b=b), "direction", f"standard SGD recipe b={b} |Delta| (pp): the spread collapses",
                       0.0, scale, Reading(est, side=less(BELOW_PP), decided=(d := below_decided(est, cell)), cells=[cell] if cell else [],
                       power=undecided_power(est, cell, less(BELOW_PP), d),
                       note="; ".join(n for n in (f"'collapses to zero' read as below {BELOW_PP:g} pp", other_b) if n)), RECIPE_DEPTH))
        sgd_r, adam_r, match = matched(select(best, None, variant="sgd_standard", batch_size=b), select(best, None, variant="adam", batch_size=b))
        cells = [to_cell(sgd_r), to_cell(adam_r)]
        mean_acc = lambda m: 100 * np.nanmean(m, axis=-1)
        est = V.estimate(cells, difference(mean_acc)) if None not in cells else None
        out.append(row(RECIPE_DEPTH.id(1, b=b), "direction", f"standard SGD recipe minus Adam test acc, b={b}, mean over sigma_w (pp)",
                       math.nan, scale, Reading(est, side=greater(0), cells=[c for c in cells if c],
                       note="; ".join(n for n in (match, other_b) if n)), RECIPE_DEPTH))
    depth = runs[runs["study"] == "depth"]
    if not depth.empty and "variant" in depth:
        scale = scale_label(runs, ["main", "depth"])
        top = float(depth["sigma_w"].max())
        for arch in ("resnet56", "resnet110"):
            for b in batches(depth[(depth["variant"] == arch) & (depth["optimizer"] == "sgd")]):
                r9 = run_cell(runs, "main", "train_acc_best", optimizer="sgd", batch_size=b, **MAIN)
                deep = run_cell(runs, "depth", "train_acc_best", variant=arch, optimizer="sgd", batch_size=b)
                est = None
                if r9 is not None and deep is not None and np.isclose(r9.sigmas, top).any():
                    i9, idp = (int(np.flatnonzero(np.isclose(c.sigmas, top))[0]) for c in (r9, deep))
                    est = V.estimate([r9, deep], lambda m, i9=i9, idp=idp: 100 * (m[0][:, i9] - m[1][:, idp]))
                out.append(row(RECIPE_DEPTH.id(2, arch=arch, b=b), "direction",
                               f"SGD train acc at tau_best, sigma_w={top:g}, b={b}: ResNet-9 minus {arch.replace('resnet', 'ResNet-')} (pp)",
                               math.nan, scale, Reading(est, side=greater(0), cells=[c for c in (r9, deep) if c],
                               missing=f"main lacks sigma_w={top:g} or b={b}"), RECIPE_DEPTH))
    return out
