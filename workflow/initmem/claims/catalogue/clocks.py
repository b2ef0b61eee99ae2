"""The clock claims of Sec. 4 on any config that has the cells they need (:func:`initmem.claims.clock.clock_cells`).

Rows:

- ``cell``: each configuration's spread and |beta| read at two points, tau_best (the paper's
  protocol: the predictor at argmin val loss) and the end of training, with the share of runs that
  reached 99.5% train accuracy and the share whose tau_best is at or after that;
- "adaptive |beta(t)| falls once T_adapt is large" (:data:`initmem.claims.catalogue.beta_shapes.BETA_DECAY`):
  the decay statistic for each adaptive configuration ending at T_adapt >= :data:`T_ADAPT_LARGE`;
- "curves align in the clock across learning rates and batch sizes" (:data:`COLLAPSE`): the exponents (p, q) of the
  clock K eta^p b^q under which the |beta| curves and the spread curves of one optimizer align
  (:mod:`initmem.stats.collapse`), against the paper's clock (Adam T_adapt, SGD T_SGD), the epoch
  clock and the other optimizer's clock;
- "SGD keeps its spread at small T_SGD and loses it past the threshold" and "L2 ... the same threshold"
  (:data:`SGD_THRESHOLD`, :data:`L2_THRESHOLD`): at the paper's own points (:data:`T_RETAINS`, :data:`T_DROPS`,
  in its constant-lr arithmetic) a configuration still has a spread (> 0), or has a smaller spread than its
  reference (seed-paired); an SGD+L2 configuration past the threshold also reads its own spread against the
  size the sentence states, "below 1 pp" (``l2_T_<configuration>_below_1pp``).

A claim the config has no cells for is ``not measured``, with the reason.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from initmem.claims.analysis import scale_label
from initmem.claims.catalogue.beta_shapes import BETA_DECAY, DECAY_RULE
from initmem.claims.claim import CURVE_READ, NO_FIT, Claim
from initmem.claims.clock import (
    CLOCK_NAMES,
    CLOCK_STUDIES,
    COLLAPSES,
    GONE_PP,
    RETAINED,
    T_ADAPT_LARGE,
    T_DROPS,
    T_RETAINS,
    ClockCell,
    below_decided,
    clock_cells,
    plain,
    retained_verdict,
    slug,
    undecided_power,
)
from initmem.claims.rows import ADAPTIVE, AT_BEST, AT_END, CURVE, LABEL, Reading, decay_row, row, spread_gap, to_cell
from initmem.claims.selection import ALIGN, CONTRAST, DECAY, SPREAD, ClockConfiguration, Readable, Selection
from initmem.engine.clocks import paper_constant_lr_clocks
from initmem.paper import Q_ALIGN, Q_CLOCK, Q_L2
from initmem.stats import collapse as C
from initmem.stats import collapse_power as CC
from initmem.stats import power as P
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V

ORDER = 80
COLLAPSE = Claim(("collapse_{what}_{optimizer}_{clock}",), "clock collapse", Q_ALIGN, "Sec. 4.2, Fig. 6e-f",
                 "the exponents p, q of the clock K eta^p b^q under which curves align (least squares, model-based bootstrap)",
                 "one optimizer's configurations, every lr and b", "interval holds the paper's clock, within 0.5 of it, and excludes the epoch clock",
                 fit=NO_FIT, reads=CURVE_READ)
SGD_THRESHOLD = Claim(("sgd_T_{configuration}_retains", "sgd_T_{configuration}_drops", "sgd_retains_below_threshold", "sgd_drops_past_threshold"),
                      "clock thresholds", Q_CLOCK, "Sec. 4.2",
                      f"at T_SGD <= {T_RETAINS:g}: the spread (pp); at >= {T_DROPS:g}: the smallest-T_SGD configuration's spread minus this "
                      "one's (pp), paired seeds (the paper's constant-lr arithmetic)", "SGD, one b, several lr",
                      f"> 0 (at <= {T_RETAINS:g}: > 1 pp, not reproduced within [0, 1 pp): gone)")
L2_THRESHOLD = Claim(("l2_T_{configuration}_retains", "l2_T_{configuration}_drops", "l2_repairs_past_threshold",
                      "l2_T_{configuration}_below_1pp"), "clock thresholds", Q_L2, "Sec. 4.2",
                     f"at T_L2 <= {T_RETAINS:g}: the spread (pp); at >= {T_DROPS:g}: the spread without L2 (or with a smaller one) minus this "
                     "one's (pp), paired seeds, and this one's spread (pp) (the paper's constant-lr arithmetic)", "SGD + L2",
                     f"> 0 (at <= {T_RETAINS:g}: > 1 pp, not reproduced within [0, 1 pp): gone; at >= {T_DROPS:g} its own spread < {GONE_PP:g} pp)")
CLAIMS = [COLLAPSE, SGD_THRESHOLD, L2_THRESHOLD]


def _clocks_note(c: ClockCell, at_best: bool = False) -> str:
    """The cell's clocks where a reading sits: at the end of training, or at tau_best (mean over its runs)."""
    clocks = (c.clocks_best or {}) if at_best else c.clocks
    where = "at tau_best (mean over the runs)" if at_best else "at the end of training"
    return ", ".join(f"{CLOCK_NAMES[k]} {v:.3g}" for k, v in clocks.items() if (k != "T_wd" or v) and np.isfinite(v)) + f" {where}"


def _signed_beta(cell: V.Cell) -> str:
    """The signed beta beside |beta|, and each seed's sign (a sign change is not forgetting)."""
    per_seed = []
    for j in range(cell.n_seeds):
        y, ok = cell.values[:, j], np.isfinite(cell.values[:, j])
        if ok.sum() >= 2:
            per_seed.append(np.polyfit(cell.sigmas[ok], y[ok], 1)[0])
    pos, neg = sum(b > 0 for b in per_seed), sum(b < 0 for b in per_seed)
    return f"signed beta {float(cell.slopes([])[0]):.3g} (per seed: {neg} negative, {pos} positive)"


# --- two reading points --------------------------------------------------------------------------

def cell_rows(cells: list[ClockCell], scale: str) -> list[dict]:
    """Each configuration's spread and |beta| at tau_best and at the end of training."""
    rows = []
    abs_slope = lambda m: np.abs(m[0])
    for c in cells:
        for what, metric_best, metric_end, stat, prepare, unit in (
                ("spread", "test_acc_best", "test_acc_end", lambda m: Sp.spread_pp(m[0]), None, "pp"),
                ("|beta|", "val_acc_best", "val_acc_end", abs_slope, lambda cl, s: cl.slopes(s), "val acc per unit sigma_w")):
            for read_at, metric, suffix in ((AT_BEST, metric_best, "best"), (AT_END, metric_end, "end")):
                cell = c.cell(metric)
                est = Sp.spread_estimate(cell) if what == "spread" else V.estimate([cell], stat, prepare=prepare)
                note = _clocks_note(c, at_best=read_at == AT_BEST)
                if what != "spread":
                    note += f"; {_signed_beta(cell)}"
                rows.append(row(f"cell_{slug(c.label)}_{'spread' if what == 'spread' else 'beta'}_{suffix}", "cell",
                                f"{c.label}: {what} ({unit})", math.nan, scale, Reading(est, cells=[cell], read_at=read_at, note=note)))
    return rows


# --- |beta| falls once T_adapt is large ----------------------------------------------------------

def fall_selections(configs: list[ClockConfiguration]) -> list[Selection]:
    """Every adaptive configuration that ends at T_adapt >= T_ADAPT_LARGE: its |beta(t)| falls."""
    return [Selection(BETA_DECAY, BETA_DECAY.id(1, configuration=slug(c.label)), DECAY, (c,), rule=DECAY_RULE)
            for c in configs if c.settings.get("optimizer") in ADAPTIVE and c.end_clock("T_adapt") >= T_ADAPT_LARGE]


def adaptive_fall_rows(cells: list[ClockCell], scale: str) -> list[dict]:
    """Decay of |beta(t)| for every adaptive configuration that ends at T_adapt >= T_ADAPT_LARGE (:func:`fall_selections`)."""
    large = fall_selections(cells)
    if not large:
        adaptive = [c for c in cells if c.settings.get("optimizer") in ADAPTIVE]
        most = max((c.clocks.get("T_adapt", 0) for c in adaptive), default=math.nan)
        return [row(BETA_DECAY.id(1, configuration="large_T"), "direction", f"adaptive |beta(t)| falls once T_adapt >= {T_ADAPT_LARGE:g} (orders)",
                    math.nan, scale, Reading(missing=f"no adaptive configuration reaches T_adapt >= {T_ADAPT_LARGE:g} (largest: {most:.3g})"),
                    BETA_DECAY)]
    return [decay_row(BETA_DECAY, s.cid, f"{c.label}: orders of magnitude |beta(t)| falls from its peak, "
                       f"ending at T_adapt {c.clocks['T_adapt']:.3g}", c.curve(), scale, floor_is_enough=False,
                       note=f"'decay by 1-2 orders' read where the paper's Adam runs end: T_adapt >= {T_ADAPT_LARGE:g}")
            for s in large for c in s.parts]


# --- collapse across learning rates and batch sizes ----------------------------------------------

def collapse_selections(configs: list[ClockConfiguration]) -> list[Selection]:
    """Per optimizer of :data:`COLLAPSES`, its |beta| curves and its spread curves: every configuration of that optimizer
    without L2 or weight decay (a row needs two)."""
    return [Selection(COLLAPSE, COLLAPSE.id(what=what, optimizer=opt, clock=clock), ALIGN, tuple(c for c in configs if plain(c, (opt,))),
                      rule="the exponents of K eta^p b^q that align the \\|beta\\| curves (TOST)", fields={"optimizer": opt, "clock": clock, "what": what})
            for opt, clock, _nulls in COLLAPSES for what in ("beta", "spread")]


def collapse_rows(cells: list[ClockCell], scale: str) -> list[dict]:
    """The exponents (p, q) of the clock K eta^p b^q under which one optimizer's |beta| curves and
    spread curves (every lr, b and length, no L2 or weight decay) align, against the paper's clock and
    the epoch clock (:func:`initmem.stats.collapse.estimate_clock`, :func:`initmem.stats.collapse.collapse_decision`)."""
    rows = []
    for s in collapse_selections(cells):
        group, opt, clock, what, cid = list(s.parts), s.fields["optimizer"], s.fields["clock"], s.fields["what"], s.cid
        p0, q0 = C.CLOCKS[clock]
        quantity = (f"{LABEL[opt]}: exponents of the clock K eta^p b^q under which the {'log10 |beta|' if what == 'beta' else 'spread'} "
                    f"curves across lr and b align (paper: {CLOCK_NAMES[clock]}, p = {p0:g}, q = {q0:g}; epoch clock: p = 0, q = 1)")
        if len(group) < 2:
            rows.append(row(cid, "direction", quantity, math.nan, scale,
                            Reading(missing=f"needs >= 2 {LABEL[opt]} configurations without L2 or weight decay; the config has {len(group)}"),
                            COLLAPSE))
            continue
        rows.append(_collapse_row(cid, quantity, group, what, clock, scale))
    return rows


def _signs(cells: list[V.Cell]) -> str:
    """Which configurations' beta at the end of training is positive and which negative (a sign change
    across configurations at the same clock is not forgetting)."""
    signs = {c.label: float(np.sign(c.slopes([])[0][-1])) for c in cells}
    pos, neg = [k for k, v in signs.items() if v > 0], [k for k, v in signs.items() if v < 0]
    if pos and neg:
        return f"beta changes sign across configurations at the end of training: positive in {', '.join(pos)}; negative in {', '.join(neg)}"
    return ""


def _collapse_row(cid: str, quantity: str, group: list[ClockCell], what: str, clock: str, scale: str) -> dict:
    curves, prepare, how = C.curves_of([c.curve("val_acc" if what == "beta" else "test_acc") for c in group], what)
    lrs, batches = [float(c.settings["lr"]) for c in group], [float(c.settings["batch_size"]) for c in group]
    n_runs, n_seeds = int(sum(c.n_runs for c in curves)), min(c.n_seeds for c in curves)
    if n_seeds < 2:
        est = V.Estimate(math.nan, math.nan, math.nan, "none: 1 seed", n_runs, n_seeds, np.array([math.nan]))
        return row(cid, "direction", quantity, math.nan, scale, Reading(est, decided=(V.ONE_SEED, ""), cells=curves, read_at=CURVE, note=how),
                   COLLAPSE)
    fit = C.estimate_clock(curves, prepare, clock, lrs, batches)
    decision = C.collapse_decision(fit)
    design = fit.design
    groups = "; ".join(", ".join(design.labels[i] for i in np.flatnonzero(design.groups == g)) for g in np.unique(design.groups))
    k = C.shown_exponent(fit)  # the exponent the row's interval states (and its verdict reads)
    paper = C.CLOCKS[clock][k]
    if fit.theta is None:
        est = V.Estimate(math.nan, math.nan, math.nan, "none: not identifiable", n_runs, n_seeds, np.array([math.nan]))
        measured = ""
    else:
        low, high = fit.interval_of(k)
        est = V.Estimate(float(fit.theta[k]), low, high, fit.method, n_runs, n_seeds, np.array([float(fit.theta[k])]),
                         test=V.normal_reading(float(fit.theta[k]), low, high))
        measured = (f"measured {design.parameter()}: p = {fit.theta[0]:.3g} [{fit.interval_of(0)[0]:.3g}, {fit.interval_of(0)[1]:.3g}], "
                    f"q = {fit.theta[1]:.3g} [{fit.interval_of(1)[0]:.3g}, {fit.interval_of(1)[1]:.3g}] (an exponent the design does not "
                    "identify stays at the paper's, interval nan); the row's interval is "
                    f"{'pq'[k]}'s")
        measured += f"; fitted per group: {fit.group_intervals()}" if fit.groups else ""
    note = "; ".join(n for n in (
        how, measured,
        f"configurations whose curves overlap under every clock within {C.EQUIVALENCE:g} of {CLOCK_NAMES[clock]} share a curve: {groups}",
        f"reproduced when the interval lies within {C.EQUIVALENCE:g} of {CLOCK_NAMES[clock]} in every exponent (and the epoch clock and "
        f"{CLOCK_NAMES[C.OTHER_CLOCK[clock]]} are outside it), partly tested when so in the exponents the design identifies only; "
        f"not reproduced when the whole interval is further than {C.EQUIVALENCE:g} from {CLOCK_NAMES[clock]}",
        _signs(curves) if what == "beta" else "") if n)
    side = V.between(paper - C.EQUIVALENCE, paper + C.EQUIVALENCE)
    power = _collapse_power(curves, what, clock, fit, int(group[0].runs["n_train"].iloc[0]), n_seeds) \
        if decision.verdict == V.INCONCLUSIVE and n_seeds >= C.MIN_SEEDS_MODEL else ""
    r = row(cid, "direction", quantity, paper, scale, Reading(est, side=side, decided=(decision.verdict, decision.why), cells=curves,
            read_at=CURVE, note=note, power=power), COLLAPSE)
    return r | {"statistic_verdict": decision.tested}


def _collapse_power(curves: list[V.Cell], what: str, clock: str, fit, n_train: int, n_seeds: int):
    """The seeds that would decide an undecided collapse row (simulated when the table asks: :class:`initmem.claims.rows.WouldDecide`)."""
    def text() -> str:
        rate = CC.row_rate(curves, what, clock, fit.theta, n_train)
        power = P.would_decide(rate, n_seeds, CC.ROW_MAX_SEEDS, "simulated at the row's configurations and per-run noise under its "
                               f"measured exponents, if the true clock equals the estimate; the calibration's curve shape, "
                               f"{CC.ROW_POWER_SIMS} simulations per seed count")
        if fit.design.rank < 2:  # a decision needs every exponent: `partly tested` is no decision (collapse_calibration.decision_share)
            power += (f"; this design identifies {fit.design.parameter()} only: agreement reads `partly tested` at any seeds, "
                      "no decision; only `not reproduced` decides")
        return power
    return text


# --- the spread on either side of the paper's threshold points ----------------------------------

def _paper_clock(c: ClockConfiguration, clock: str) -> float:
    """The configuration's ``clock`` in the paper's constant-lr arithmetic (K = E n_train / b at the peak lr), the
    arithmetic its threshold points are stated in."""
    spec = {**c.settings, "n_train": c.n_train, "l2": float(c.settings.get("l2") or 0.0)}
    return float(paper_constant_lr_clocks(spec)[clock])


def _contrast_rule(ref: ClockConfiguration, clock: str) -> str:
    """A threshold contrast's rule in words (as a plan prints it)."""
    if clock != "T_l2":
        return "spread at the smallest T_SGD minus this one's > 0, paired seeds"
    return ("spread with the smaller L2 minus with this L2 > 0, paired seeds" if ref.settings.get("l2")
            else "spread without L2 minus with L2 > 0, paired seeds")


def _below_selection(c: ClockConfiguration) -> list[Selection]:
    """An SGD+L2 configuration at or past :data:`T_DROPS` on the T_L2 clock: "collapses the spread below 1 pp", the size the
    paper's sentence states (Q_L2), read on the configuration's own spread whether or not the config has a reference; none
    before the threshold."""
    if _paper_clock(c, "T_l2") < T_DROPS:
        return []
    side = V.less(GONE_PP)
    return [Selection(L2_THRESHOLD, L2_THRESHOLD.id(3, configuration=slug(c.label)), SPREAD, (c,), side,
                      f"spread (pp) {side.text()}: its upper end below {GONE_PP:g} pp")]


def _side_selection(claim: Claim, c: ClockConfiguration, ref: ClockConfiguration, what: str, clock: str) -> list[Selection]:
    """``c`` at or past :data:`T_DROPS`: the seed-paired contrast "the reference's spread exceeds c's"; at or below
    :data:`T_RETAINS`: "c still has a spread" (:data:`RETAINED`: above the gone zone); between the two points, none (the
    paper states neither)."""
    t, fields = _paper_clock(c, clock), {"ref": ref, "what": what, "clock": clock}
    if t >= T_DROPS:
        return [Selection(claim, claim.id(1, configuration=slug(c.label)), CONTRAST, (ref, c), V.greater(0),
                          _contrast_rule(ref, clock), fields)]
    if t <= T_RETAINS:
        return [Selection(claim, claim.id(0, configuration=slug(c.label)), SPREAD, (c,), RETAINED, f"spread (pp) {RETAINED.text()}", fields)]
    return []


def _side_row(s: Selection, scale: str) -> dict:
    """A threshold selection's row (:func:`_side_selection`, or :func:`_below_selection`: the one without a reference)."""
    if "ref" not in s.fields:
        return _below_row(s, scale)
    c, ref, what, clock = s.parts[-1], s.fields["ref"], s.fields["what"], s.fields["clock"]
    t, t_ref = _paper_clock(c, clock), _paper_clock(ref, clock)
    note = (f"{CLOCK_NAMES[clock]} {t:.3g} vs {t_ref:.3g} for {what} in the paper's constant-lr arithmetic (K = E n/b, peak lr; "
            f"exact as run: {c.clocks.get(clock, math.nan):.3g} vs {ref.clocks.get(clock, math.nan):.3g}); the paper's points: the spread "
            f"is still there at {CLOCK_NAMES[clock]} <= {T_RETAINS:g} and drops at >= {T_DROPS:g}")
    if s.statistic == CONTRAST:
        return spread_gap(s.claim, s.cid, f"{what} minus {c.label} spread, past {CLOCK_NAMES[clock]} {T_DROPS:g} (pp)", math.nan,
                          ref.runs, c.runs, V.greater(0), scale, note=note)
    return row(s.cid, "direction", f"{c.label} spread, at {CLOCK_NAMES[clock]} <= {T_RETAINS:g} (pp)", math.nan, scale,
               _own_spread(c, RETAINED, retained_verdict, note), s.claim)


def _below_row(s: Selection, scale: str) -> dict:
    """A :func:`_below_selection`'s row: the configuration's spread read against "< 1 pp" by
    :func:`initmem.claims.clock.below_decided` (``undecidable at this size`` where no feasible design reaches the gone side)."""
    c = s.parts[-1]
    note = (f"T_L2 {_paper_clock(c, 'T_l2'):.3g} in the paper's constant-lr arithmetic (K = E n/b, peak lr; exact as run: "
            f"{c.clocks.get('T_l2', math.nan):.3g}); the paper: past T_L2 {T_DROPS:g} the spread collapses below {GONE_PP:g} pp")
    return row(s.cid, "direction", f"{c.label} spread, past T_L2 {T_DROPS:g}: below {GONE_PP:g} pp (pp)", math.nan, scale,
               _own_spread(c, s.side, below_decided, note), s.claim)


def _own_spread(c: ClockConfiguration, side: V.Side, decide, note: str) -> Reading:
    """A configuration's own spread at tau_best read against a side that names the gone zone, by ``decide`` (est, cell) ->
    (word, why) or None (:func:`initmem.claims.clock.retained_verdict`, :func:`initmem.claims.clock.below_decided`);
    undecided with one seed (not testable), and with the seeds that would decide it where the rule leaves it open."""
    cell = to_cell(c.runs, "test_acc_best", c.label)
    est = Sp.spread_estimate(cell) if cell is not None else None
    decided = decide(est, cell) if est is not None and not est.one_seed else None
    return Reading(est, side=side, decided=decided, cells=[cell] if cell else [], note=note,
                   power=undecided_power(est, cell, side, decided))


def sgd_threshold_selections(configs: list[ClockConfiguration]) -> list[Selection]:
    """SGD keeps its spread at small T_SGD and loses it past the threshold: per batch size, each SGD configuration
    against the one with the smallest T_SGD (which must be at or below :data:`T_RETAINS`)."""
    out = []
    sgd = [c for c in configs if plain(c, ("sgd",))]
    for b in sorted({int(c.settings["batch_size"]) for c in sgd}):
        group = sorted((c for c in sgd if int(c.settings["batch_size"]) == b), key=lambda c: _paper_clock(c, "T_sgd"))
        if len(group) < 2 or _paper_clock(group[0], "T_sgd") > T_RETAINS:
            continue
        for c in group[1:]:
            out += _side_selection(SGD_THRESHOLD, c, group[0], group[0].label, "T_sgd")
    return out


def sgd_threshold_rows(cells: list[ClockCell], scale: str) -> list[dict]:
    """:func:`sgd_threshold_selections`' rows, and a ``not measured`` row for a side no configuration reaches."""
    rows = [_side_row(s, scale) for s in sgd_threshold_selections(cells)]
    sgd = [c for c in cells if plain(c, ("sgd",))]
    for suffix, cid, why in (("_retains", SGD_THRESHOLD.id(2), f"no SGD configuration at T_SGD <= {T_RETAINS:g} beside "
                              "another at the same b"),
                             ("_drops", SGD_THRESHOLD.id(3), f"no SGD configuration at T_SGD >= {T_DROPS:g} beside one at "
                              f"<= {T_RETAINS:g} at the same b")):
        if not any(r["id"].endswith(suffix) for r in rows):
            largest = max((_paper_clock(c, "T_sgd") for c in sgd), default=math.nan)
            rows.append(row(cid, "direction", f"SGD spread {'at T_SGD <= ' + format(T_RETAINS, 'g') if suffix == '_retains' else 'past T_SGD ' + format(T_DROPS, 'g')}",
                            math.nan, scale, Reading(missing=f"{why} (largest T_SGD in the paper's arithmetic: {largest:.3g})"), SGD_THRESHOLD))
    return rows


def l2_threshold_selections(configs: list[ClockConfiguration]) -> list[Selection]:
    """L2 repairs past the threshold: each SGD+L2 configuration against the same configuration without L2; where the
    config has no such run, against the same configuration with the smallest L2 at T_L2 <= :data:`T_RETAINS` (the
    paper's own contrast, Sec. 4.2: :data:`initmem.paper.Q_L2`); and each one past the threshold, read alone against
    the size the sentence states (:func:`_below_selection`)."""
    out = []
    same = ("optimizer", "lr", "batch_size", "epochs")
    with_l2 = [c for c in configs if c.settings.get("optimizer") == "sgd" and c.settings.get("l2")]
    for c in with_l2:
        peers = [o for o in configs if all(o.settings.get(k) == c.settings.get(k) for k in same)]
        base = [o for o in peers if plain(o, ("sgd",))]
        if base:
            ref, what = base[0], f"{base[0].label} (no L2)"
        else:
            below = sorted((o for o in peers if o in with_l2 and o is not c and _paper_clock(o, "T_l2") <= T_RETAINS),
                           key=lambda o: _paper_clock(o, "T_l2"))
            if not below:
                continue
            ref, what = below[0], below[0].label
        out += _side_selection(L2_THRESHOLD, c, ref, what, "T_l2")
    return out + [s for c in with_l2 for s in _below_selection(c)]


def l2_threshold_rows(cells: list[ClockCell], scale: str) -> list[dict]:
    """:func:`l2_threshold_selections`' rows, and a ``not measured`` row where no configuration is past the threshold."""
    rows = [_side_row(s, scale) for s in l2_threshold_selections(cells)]
    if not any(r["id"].endswith("_drops") for r in rows):
        with_l2 = [c for c in cells if c.settings.get("optimizer") == "sgd" and c.settings.get("l2")]
        largest = max((_paper_clock(c, "T_l2") for c in with_l2), default=math.nan)
        rows.append(row(L2_THRESHOLD.id(2), "direction", f"SGD+L2 spread past T_L2 {T_DROPS:g}", math.nan, scale,
                        Reading(missing=f"no SGD+L2 configuration at T_L2 >= {T_DROPS:g} beside a reference without L2 or with a smaller L2 "
                                f"at the same lr and b (largest T_L2 in the paper's arithmetic: {largest:.3g})"), L2_THRESHOLD))
    return rows


def selections(read: Readable) -> list[Selection]:
    """The clock claims the planner plans, in the order it lists them: the L2 threshold points, the adaptive falls at
    large T_adapt, the collapse (the SGD threshold points are not planned: :mod:`initmem.planner.design`)."""
    configs = read.clock_configurations()
    return l2_threshold_selections(configs) + fall_selections(configs) + collapse_selections(configs)


def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """Every clock-tier row (see the module docstring)."""
    cells = clock_cells(runs, history)
    if not cells:
        return []
    scale = scale_label(runs, [s for s in CLOCK_STUDIES if s in set(runs["study"])])
    return (cell_rows(cells, scale) + adaptive_fall_rows(cells, scale) + collapse_rows(cells, scale)
            + sgd_threshold_rows(cells, scale) + l2_threshold_rows(cells, scale))
