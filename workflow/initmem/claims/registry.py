"""Every claim the claims table tests, in one list: the paper's sentence (quote and section), the
statistic, the configurations, the paper's side and the regime that sentence states.

A row of ``claims.csv`` belongs to the first :class:`Claim` whose ``ids`` pattern matches its id;
:func:`regime_check` applies that claim's regime to the cells the row read (one engine for every
row: :func:`initmem.claims.rows.row`). Regimes are what the paper's own sentence states:

- ``fit``: :data:`FITS_LABELS` for the claims about trained networks: the paper's runs all reach
  99.5% train accuracy at some epoch ("Low-learning-rate SGD can interpolate", Sec. 1; "at b=128 it
  exceeds 99.5% training accuracy across the entire sigma_w sweep", Sec. 3.1; for Adam "at small
  batches (b <= 64) the best-validation-loss checkpoint is reached before interpolation": after it,
  its runs interpolate too). A spread between networks that have not fit measures slow training at
  large sigma_w, not memory of the initialization, so a configuration is in the paper's regime by fit
  only when at least :attr:`Claim.fit_share` (:data:`FIT_SHARE`, one half, the rule the decisive
  tier's design stated before its runs) of its runs reached 99.5% train accuracy; every claim that
  cites a sentence reads the same runs the same way, and this list is the one place the rule lives
  (the design files and docs quote :func:`Claim.regime_text`). :data:`NO_FIT` for the claims about
  trainability itself (depth, the recipe's accuracy).
- ``clock``: the range of one clock the paper's runs reached, where the sentence is about that range
  (e.g. Adam's |beta| decay: its runs end at T_adapt :data:`initmem.paper.ADAM_T_ADAPT_RANGE`); a configuration read outside
  it makes the row ``outside the paper's regime`` by clock, and the row says which.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from initmem.claims.similarity import CHANCE_ACC, SelectedCounts, bn_settling_steps
from initmem.paper import ADAM_T_ADAPT_RANGE as PAPER_ADAM_T
from initmem.paper import Q_ADAM, Q_ALIGN, Q_CLOCK, Q_FIG6, Q_L2, Q_LR, Q_MOMENTUM, Q_RECIPE, Q_SGD, clock
from initmem.spec import ADAPTIVE

FITS_LABELS, NO_FIT = "fits_labels", "none"
FIT_SHARE = 0.5  # the share of a configuration's selected predictors (at every sigma_w) that must fit (fits_labels claims)
# the share of a configuration's selected predictors that must be read with settled BatchNorm statistics, and above chance
SETTLED_SHARE = 0.95
# the paper's points on either side of its clock threshold (Sec. 4.2; initmem.claims.clock reads them the same way)
_RETAINS, _DROPS = clock("T_l2", lr=1e-2, batch_size=128, l2=1e-3), clock("T_sgd", lr=1e-2, batch_size=16)


@dataclass(frozen=True)
class Claim:
    """One claim of the paper as the claims table tests it."""

    ids: str            # regex on claims.csv ids (full match)
    family: str         # for the README's short summary
    quote: str          # the paper's sentence
    section: str
    statistic: str
    configurations: str
    side: str
    fit: str = FITS_LABELS
    clock: tuple[str, float, float] | None = None   # (clock column, lowest, highest) the paper's runs reached
    fit_share: float = FIT_SHARE

    def regime_text(self) -> str:
        fit = (f"at least {self.fit_share:.0%} of the selected predictors at every sigma_w fit (99.5% train accuracy by tau_best; "
               f"an adaptive optimizer's runs: at some epoch), and at least {SETTLED_SHARE:.0%} of them read with settled BatchNorm "
               "statistics and above chance" if self.fit == FITS_LABELS else "no fit condition (the paper states none)")
        if self.clock:
            name, lo, hi = self.clock
            fit += f"; {CLOCK_LABEL[name]} at the end of training in [{lo:.3g}, {hi:.3g}]"
        return fit


CLOCK_LABEL = {"T_sgd": "T_SGD", "T_adapt": "T_adapt", "T_l2": "T_L2"}

REGISTRY: list[Claim] = [
    Claim(r"sgd_keeps_spread_b\d+", "optimizers", Q_SGD, "Sec. 3.1", "the SGD spread (pp), max - min of seed means over sigma_w",
          "main grid, lr 1e-3, each batch size", "> 1 pp (not reproduced within [0, 1 pp): gone)"),
    # one row per adaptive optimizer file (CLOCK = "T_adapt") and batch size, named by the claims table
    # from the optimizer registry: the pattern names no optimizer, so a new file's row reads as Adam's
    Claim(r"sgd_gt_\w+_b\d+", "optimizers", Q_ADAM, "Sec. 3.1", "SGD spread minus the adaptive one (pp), paired seeds",
          "main grid, lr 1e-3, each batch size", "> 0"),
    Claim(r"momentum_lt_sgd_b\d+", "optimizers", Q_MOMENTUM, "Sec. 3.1", "SGD minus SGD-momentum spread (pp)", "main grid, lr 1e-3, b=16", "> 0"),
    Claim(r"batch_raises_\w+_spread", "optimizers", "We find that large batch slows forgetting under a fixed-epoch budget.", "Sec. 3.2",
          "spread at the largest b minus the smallest (pp)", "main grid, lr 1e-3", "> 0"),
    Claim(r"lr_reduces_sgd_\S+", "repair", Q_LR, "Sec. 3.2", "spread at the smaller lr minus the larger (pp)", "lr_l2, no L2", "> 0"),
    Claim(r"l2_reduces_sgd_\S+", "repair", "Table 4: L2 lowers the SGD spread at every learning rate and batch size", "Sec. 3.2, Table 4",
          "spread without minus with the strongest L2 (pp)", "lr_l2", "> 0"),
    Claim(r"l2_5e-3_b128_below_1pp", "repair", Q_L2, "Sec. 4.2", "one spread's upper bound (pp)", "lr_l2 eta 1e-2, L2 5e-3, b=128",
          "< 1"),
    Claim(r"long_b\d+_retains", "long run", Q_CLOCK, "Sec. 4.2", "long minus main-grid spread, matched (pp)", "long vs main, lr 1e-3",
          "in [-5, 5]"),
    Claim(r"(aug|layernorm)_reduces_\S+|adam_robust_\S+", "normalization and augmentation",
          "Replacing BatchNorm with LayerNorm or adding standard data augmentation reduces the SGD spread but does not eliminate it; "
          "Adam remains robust under all these configurations", "Sec. 3.2, App. E", "spread differences (pp)", "norm_aug vs main", "> 0"),
    Claim(r"recipe_\S+|depth_\S+", "recipe and depth", Q_RECIPE, "Sec. 3.2, App. D, F",
          "|Delta| and accuracies", "best_recipe, depth", "see the row", fit=NO_FIT),
    Claim(r"beta_(flat|level)_sgd_b\d+", "|beta| shapes", Q_FIG6, "Sec. 4.2, Fig. 6a", "range of |beta(t)| over the settled run; the last "
          "tenth's level", "main grid SGD, lr 1e-3", "in [-0.5, 0.5] orders; in [0.032, 0.32]", clock=("T_sgd", 0.0, 1.0)),
    Claim(r"beta_decay_sgd_l2_b\d+", "|beta| shapes", Q_FIG6, "Sec. 4.2, Fig. 6a", "fall of |beta(t)| from its held peak (orders), or to the floor",
          "lr_l2 strongest L2", "> 0.6", clock=("T_l2", 1.0, math.inf)),
    Claim(r"beta_decay_\w+_b\d+|adapt_beta_falls_\S+", "|beta| shapes", Q_FIG6, "Sec. 4.2, Fig. 6b-d",
          "fall of |beta(t)| from its held peak (orders)", f"main grid adaptive, lr 1e-3; clock cells ending at T_adapt >= {PAPER_ADAM_T[0]:g} (the paper's)", "> 0.6",
          clock=("T_adapt", *PAPER_ADAM_T)),
    Claim(r"collapse_\w+", "clock collapse", Q_ALIGN, "Sec. 4.2, Fig. 6e-f",
          "the exponents p, q of the clock K eta^p b^q under which curves align (least squares, model-based bootstrap)",
          "one optimizer's configurations, every lr and b", "interval holds the paper's clock, within 0.5 of it, and excludes the epoch clock",
          fit=NO_FIT),
    Claim(r"sgd_T_\S+|sgd_(retains|drops)_\S+", "clock thresholds", Q_CLOCK, "Sec. 4.2",
          f"at T_SGD <= {_RETAINS:g}: the spread (pp); at >= {_DROPS:g}: the smallest-T_SGD configuration's spread minus this one's (pp), "
          "paired seeds (the paper's constant-lr arithmetic)", "SGD, one b, several lr", f"> 0 (at <= {_RETAINS:g}: > 1 pp, not reproduced within [0, 1 pp): gone)"),
    Claim(r"l2_T_\S+|l2_repairs_\S+", "clock thresholds", Q_L2, "Sec. 4.2",
          f"at T_L2 <= {_RETAINS:g}: the spread (pp); at >= {_DROPS:g}: the spread without L2 (or with a smaller one) minus this one's "
          "(pp), paired seeds (the paper's constant-lr arithmetic)", "SGD + L2", f"> 0 (at <= {_RETAINS:g}: > 1 pp, not reproduced within [0, 1 pp): gone)"),
]


def lookup(cid: str) -> Claim | None:
    """The registry entry of a claims.csv row id (None: a number, cell or clock row)."""
    return next((c for c in REGISTRY if re.fullmatch(c.ids, cid)), None)


def regime_check(claim: Claim | None, cells: Sequence) -> tuple[bool | None, str]:
    """(in the paper's regime?, why not / the clock range reached) for a row reading ``cells``
    (:class:`initmem.claims.verdicts.Cell` with ``fit``, ``config`` and ``clocks``). None: no rule applies."""
    if claim is None:
        return None, ""
    why, reached = [], ""
    if claim.fit == FITS_LABELS:
        for c in cells:
            why += _selected_outside(claim, c)
    if claim.clock:
        name, lo, hi = claim.clock
        ends = [float(c.end_clocks[name]) for c in cells if name in (getattr(c, "end_clocks", None) or {})]
        if ends:
            reached = f"{CLOCK_LABEL[name]} reached {min(ends):.3g}" + (f"-{max(ends):.3g}" if max(ends) > min(ends) else "")
            outside = [e for e in ends if not lo <= e <= hi]
            if outside:
                why.append(f"by clock: {reached}, the paper's runs {lo:.3g}-{hi:.3g}")
    checked = claim.fit == FITS_LABELS or bool(claim.clock)
    return (not why) if checked else None, "; ".join(why) or reached


def _selected_outside(claim: Claim, cell) -> list[str]:
    """Why one configuration (a :class:`initmem.claims.verdicts.Cell`) is not what the claim's sentence is
    about (none: it is): :func:`selected_outside` of its counts at the claim's fit share."""
    if cell.fit is None:
        return []
    return selected_outside(cell.fit, cell.config.get("optimizer"), cell.label or "a configuration", claim.fit_share,
                            curve=cell.epochs is not None)


def selected_outside(counts: SelectedCounts, optimizer: str | None, name: str, fit_share: float = FIT_SHARE,
                     curve: bool = False) -> list[str]:
    """Why one configuration's selected predictors (``counts``) are not what the paper's fit sentences are
    about (none: they are). The one rule, read by the claims table and by ``design`` (which assumes truths
    only from the readings it accepts):

    - fit: the SGD sentences are about the returned predictors (test accuracy varies across sigma_w "despite"
      99.5% training accuracy, Sec. 1), so at every sigma_w at least ``fit_share`` of the
      selected predictors fit; an adaptive optimizer's best checkpoint comes before interpolation at small
      batches (Sec. 3.1, Fig. 3), so its runs need only reach 99.5% at some epoch, in that share;
    - statistics: at least :data:`SETTLED_SHARE` of the selected predictors read after BatchNorm's
      moving statistics settled (or with precise ones): a stale-statistics network measures the
      statistics' start, not the initialization;
    - accuracy: at least :data:`SETTLED_SHARE` of them above chance level (where recorded).

    A row that reads a curve over the run (``curve``: a |beta(t)| shape) has the fit rule of its
    optimizer's sentences, not the other two: its shape statistics leave out the first window, where the
    statistics settle, and read every epoch after it, not one selected network.
    """
    if counts.runs == 0:
        return []
    why = []
    if optimizer in ADAPTIVE:
        if counts.fit < fit_share * counts.runs:
            why.append(f"by fit: {name}: {counts.fit} of its {counts.runs} runs reached 99.5% train accuracy, "
                       f"fewer than {fit_share:.0%} (the paper's runs fit the labels)")
    else:
        for sigma, n, best in counts.by_sigma or ((math.nan, counts.runs, counts.best),):
            if n and best < fit_share * n:
                at = "" if math.isnan(sigma) else f" at sigma_w {sigma:g}"
                why.append(f"by fit: {name}{at}: {best} of its {n} selected predictors fit (99.5% train accuracy by tau_best), "
                           f"fewer than {fit_share:.0%} (the paper's selected predictors fit the labels)")
    if curve:
        return why
    if counts.settled is not None and counts.settled < SETTLED_SHARE * counts.runs:
        why.append(f"by BatchNorm statistics: {name}: {counts.runs - counts.settled} of its {counts.runs} selected predictors read "
                   f"before the moving statistics settled (tau_best x steps per epoch < {bn_settling_steps():.0f} steps; the paper's "
                   f"epochs are longer than that)")
    known = counts.accuracy_known
    if known and counts.above_chance < SETTLED_SHARE * known:
        why.append(f"by accuracy: {name}: {known - counts.above_chance} of its {known} selected predictors at chance level "
                   f"(validation accuracy at tau_best <= {CHANCE_ACC:g})")
    return why


def registry_markdown() -> str:
    """The registry as a Markdown table (claims.md and docs)."""
    lines = ["| claims (id pattern) | family | the paper says | section | statistic | configurations | paper's side | regime |",
             "|---|---|---|---|---|---|---|---|"]
    for c in REGISTRY:
        cells = [f"`{c.ids}`", c.family, c.quote, c.section, c.statistic, c.configurations, c.side, c.regime_text()]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines) + "\n"
