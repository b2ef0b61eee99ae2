"""What one claim of the paper is, as the claims table tests it (:class:`Claim`), and the regime rule
every claim applies to the configurations it reads (:func:`regime_check`, :func:`selected_outside`).

The claims themselves live in the catalogue (:mod:`initmem.claims.catalogue`, one module per claim
family); a row of ``claims.csv`` is made by its claim's module and carries that claim. Regimes are what
the paper's own sentence states:

- ``fit``: :data:`FITS_LABELS` for the claims about trained networks: the paper's runs all reach
  99.5% train accuracy at some epoch ("Low-learning-rate SGD can interpolate", Sec. 1; "at b=128 it
  exceeds 99.5% training accuracy across the entire sigma_w sweep", Sec. 3.1; for Adam "at small
  batches (b <= 64) the best-validation-loss checkpoint is reached before interpolation": after it,
  its runs interpolate too). A spread between networks that have not fit measures slow training at
  large sigma_w, not memory of the initialization, so a configuration is in the paper's regime by fit
  only when at least :attr:`Claim.fit_share` (:data:`FIT_SHARE`, one half, the rule the decisive
  tier's design stated before its runs) of its runs reached 99.5% train accuracy; every claim that
  cites a sentence reads the same runs the same way, and this list is the one place the rule lives
  (the design files and docs quote :meth:`Claim.regime_text`). :data:`NO_FIT` for the claims about
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
from functools import cached_property

from initmem.claims.similarity import CHANCE_ACC, SelectedCounts, bn_settling_steps
from initmem.spec import ADAPTIVE

FITS_LABELS, NO_FIT = "fits_labels", "none"
SPREAD_READ, CURVE_READ = "spread", "curve"  # what a claim's statistic reads: each run's end (a spread), or each run's epochs (a curve)
FIT_SHARE = 0.5  # the share of a configuration's selected predictors (at every sigma_w) that must fit (fits_labels claims)
# the share of a configuration's selected predictors that must be read with settled BatchNorm statistics, and above chance
SETTLED_SHARE = 0.95


@dataclass(frozen=True)
class Claim:
    """One claim of the paper as the claims table tests it: its sentence, where its rows' ids come from
    (``ids``: templates), the statistic and configurations its rows read, the paper's side and its regime."""

    ids: tuple[str, ...]  # row id templates: {b} a batch size, {adaptive} an adaptive optimizer's name, any other field a word
    family: str         # for the README's short summary
    quote: str          # the paper's sentence
    section: str
    statistic: str
    configurations: str
    side: str
    fit: str = FITS_LABELS
    clock: tuple[str, float, float] | None = None   # (clock column, lowest, highest) the paper's runs reached
    fit_share: float = FIT_SHARE
    reads: str = SPREAD_READ  # or CURVE_READ: the planner sizes a curve claim's seeds apart

    def id(self, form: int = 0, **fields) -> str:
        """The row id of template ``form`` at ``fields`` (e.g. ``b=16, adaptive="adam"``)."""
        return self.ids[form].format(**fields)

    @cached_property
    def pattern(self) -> re.Pattern:
        """A regex every id the templates generate matches in full (the adaptive names from the optimizer files)."""
        fields = {"b": r"\d+", "adaptive": "(?:" + "|".join(sorted(map(re.escape, ADAPTIVE), key=len, reverse=True)) + ")"}
        parts = []
        for template in self.ids:
            pieces = re.split(r"\{(\w+)\}", template)
            parts.append("".join(re.escape(x) if i % 2 == 0 else fields.get(x, r"\S+") for i, x in enumerate(pieces)))
        return re.compile("|".join(f"(?:{p})" for p in parts))

    def matches(self, cid: str) -> bool:
        return self.pattern.fullmatch(cid) is not None

    def id_patterns(self) -> str:
        """The templates as a reader sees them (``sgd_gt_<adaptive>_b<b>``), for claims.md."""
        return ", ".join(re.sub(r"\{(\w+)\}", r"<\1>", t) for t in self.ids)

    def regime_text(self) -> str:
        fit = (f"at least {self.fit_share:.0%} of the selected predictors at every sigma_w fit (99.5% train accuracy by tau_best; "
               f"an adaptive optimizer's runs: at some epoch), and at least {SETTLED_SHARE:.0%} of them read with settled BatchNorm "
               "statistics and above chance" if self.fit == FITS_LABELS else "no fit condition (the paper states none)")
        if self.clock:
            name, lo, hi = self.clock
            fit += f"; {CLOCK_LABEL[name]} at the end of training in [{lo:.3g}, {hi:.3g}]"
        return fit


CLOCK_LABEL = {"T_sgd": "T_SGD", "T_adapt": "T_adapt", "T_l2": "T_L2"}

def regime_check(claim: Claim | None, cells: Sequence) -> tuple[bool | None, str]:
    """(in the paper's regime?, why not / the clock range reached) for a row reading ``cells``
    (:class:`initmem.stats.verdicts.Cell` with ``fit``, ``config`` and ``clocks``). None: no rule applies."""
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
    """Why one configuration (a :class:`initmem.stats.verdicts.Cell`) is not what the claim's sentence is
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
