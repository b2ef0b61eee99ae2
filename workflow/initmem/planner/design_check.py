"""The planner checked against what happened: each committed tier replanned without itself, and each
planned P(decision) set beside the rate its claim's own rule reaches on that tier's runs.

For a spread or a contrast plan (:mod:`initmem.planner.design`) at a design (seeds, sigma_w grid):

- **planned**: the planner's P(decision), from the truth it assumes without the tier (``--leave-out``);
- **planned at the tier's truth**: the same arithmetic (:mod:`initmem.stats.power`) fed the tier's own
  seeds' profiles at the design (their means and their covariance per sigma_w and across the arms of a
  contrast: :func:`initmem.stats.power.profile_truth`): what the planner would have said had it known
  the tier's truth (it separates the truth it assumed from its arithmetic);
- **realised**: the share of resamples of the tier's own runs at the design, each read by the claims
  table's own functions (:func:`initmem.stats.spreads.spread_estimate` /
  :func:`~initmem.stats.spreads.contrast_estimate` and :func:`initmem.stats.verdicts.side_verdict`
  against the plan's side, the statistic alone: the plan is conditional on the regime), that end in
  ``reproduced`` or ``not reproduced``. A resample is ``seeds`` of the tier's seeds drawn without
  replacement (every subset where there are no more than the draws asked for) at the design's
  sigma_w; at the tier's own seed count the one draw is the tier itself.

A plan *missed* where the realised rate differs from the planned one beyond what chance allows
(:func:`miss_p`, at :data:`MISS_LEVEL`). The resamples are no independent draws: they are overlapping
subsets of one tier's N seeds, so their share of decisions is a U-statistic of degree n (the design's
seeds), whose variance under a rate p is at most (n / N) p (1 - p) (Hoeffding 1948); the test is the
normal test of the realised share against the planned rate with that variance plus the planner's own
Monte-Carlo variance p (1 - p) / sims. With one draw (the tier itself, at its own seeds), or resamples
of more than half its seeds (no two disjoint: one tier's worth of evidence), it is the exact binomial
test of that one (majority) verdict against the planned rate (a verdict the plan gave less than 1% is a
miss). Simulated tiers whose plan is exactly right miss at most at the nominal level
(``benchmarks/planner_check_calibration.md``). The same test on the rate planned at the tier's truth
says whether the miss is the assumed truth's (that rate agrees with what happened) or the arithmetic's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from initmem import paths, tiers
from initmem.claims.claim import SPREAD_READ
from initmem.claims.rows import run_cell
from initmem.pipeline.configfiles import load_config
from initmem.planner import design as D
from initmem.stats import power as P
from initmem.stats import spreads as S
from initmem.stats import verdicts as V

ROOT = paths.ROOT
# The committed tiers the planner can be checked against (initmem.tiers, in the planner check's order): folder
# under evidence/ -> the config it trained.
TIERS = {t.folder: t.config for t in tiers.planner_order()}
DRAWS, RNG_SEED = 1000, 5100
CHEAPEST = "## The least compute"   # the heading of a design_plan.md's --cheapest section


def committed_designs(plan_md: str) -> dict[str, tuple[int, tuple[float, ...]]]:
    """The designs a committed ``design_plan.md`` chose: its --cheapest section's rows, claim -> (seeds, sigma_w grid);
    a row without a design (more seeds than the search tried) is left out."""
    if CHEAPEST not in plan_md:
        return {}
    out = {}
    for line in plan_md.split(CHEAPEST, 1)[1].split("\n## ", 1)[0].splitlines():
        found = re.match(r"\| `([^`]+)` \| (\d+) \| \d+ \(([^)]*)\) \|", line)
        if found:
            out[found.group(1)] = (int(found.group(2)), tuple(float(v) for v in found.group(3).split(",")))
    return out


# Designs a tier's committed plan chose before it trained, checked besides the tier's own and today's --cheapest: the
# --cheapest section (seeds, sigma_w grid) of each tier's design_plan.md (the regime tier's was made when contrasts
# assumed independent arms; the selected tier's equals today's --cheapest, so it adds no row).
COMMITTED = {t.folder: committed_designs((t.path / "design_plan.md").read_text()) for t in tiers.tiers() if (t.path / "design_plan.md").is_file()}
MISS_LEVEL = 0.01
DECIDED = (V.REPRODUCED, V.NOT_REPRODUCED)


@dataclass(frozen=True)
class Check:
    """One plan at one design, beside what the tier's runs did there."""

    tier: str
    cid: str
    design: str                 # "as trained", "--cheapest" or "--cheapest as committed" (the tier's committed plan)
    seeds: int
    sigmas: tuple[float, ...]
    planned: float
    planned_sims: int
    own_truth: float            # the planner's arithmetic at the tier's own truth
    realised: float
    draws: int                  # resamples behind ``realised`` (1: the tier itself; 0: the design needs more seeds than it ran)
    p_planned: float            # the miss test's p (miss_p), planned against realised (nan: not tested)
    p_own: float                # ... the rate at the tier's truth against realised

    @property
    def family(self) -> str:
        """The claim without its configuration (``sgd_gt_adam_b16`` -> ``sgd_gt_adam``): plans of the same kind."""
        return D.claim_family(self.cid)

    @property
    def missed(self) -> bool:
        return math.isfinite(self.p_planned) and self.p_planned < MISS_LEVEL

    @property
    def arithmetic_missed(self) -> bool:
        return math.isfinite(self.p_own) and self.p_own < MISS_LEVEL


def cells_of(plan: D.Plan, runs: pd.DataFrame) -> list[V.Cell] | None:
    """The tier's cells the plan reads (the claims table's: study and settings), or None where one is missing."""
    cells = [run_cell(runs, p.study, optimizer=p.spec["optimizer"], lr=float(p.spec["lr"]), batch_size=int(p.spec["batch_size"]),
                      l2=float(p.spec["l2"] or 0.0)) for p in plan.reads]
    return None if any(c is None for c in cells) else cells


def restrict(cell: V.Cell, sigmas: Sequence[float], seeds: Sequence) -> V.Cell:
    """``cell`` at these sigma_w values and seeds only."""
    si = [int(np.flatnonzero(np.isclose(cell.sigmas, s))[0]) for s in sigmas]
    ci = [int(np.flatnonzero(cell.seeds == s)[0]) for s in seeds]
    return replace(cell, sigmas=cell.sigmas[si], seeds=cell.seeds[ci], values=cell.values[np.ix_(si, ci)])


def shared_seeds(cells: Sequence[V.Cell], sigmas: Sequence[float]) -> list:
    """The seeds every cell ran at every sigma_w of the design (complete: a resample reads whole seeds)."""
    out = None
    for c in cells:
        si = [int(np.flatnonzero(np.isclose(c.sigmas, s))[0]) for s in sigmas]
        ok = {s for s, col in zip(c.seeds.tolist(), np.isfinite(c.values[si]).all(0), strict=True) if col}
        out = ok if out is None else out & ok
    return sorted(out or [])


def rule_verdict(cells: Sequence[V.Cell], side: V.Side) -> str:
    """The claims table's verdict of the statistic alone: a spread for one cell, a seed-paired contrast for two."""
    est = S.spread_estimate(cells[0]) if len(cells) == 1 else S.contrast_estimate(list(cells))
    return V.side_verdict(est, side)


def resamples(seeds: Sequence, n: int, draws: int, rng: np.random.Generator) -> list[tuple]:
    """Subsets of ``n`` of ``seeds``: every one where there are at most ``draws``, else ``draws`` drawn without replacement."""
    if n > len(seeds):
        return []
    if math.comb(len(seeds), n) <= draws:
        return list(combinations(seeds, n))
    return [tuple(rng.choice(np.asarray(seeds, dtype=object), n, replace=False)) for _ in range(draws)]


def realised_rate(cells: Sequence[V.Cell], side: V.Side, n: int, sigmas: Sequence[float], draws: int,
                  rng: np.random.Generator) -> tuple[float, int, int]:
    """(share decided, resamples, the tier's seeds they are drawn from) of the rule on the tier's runs at
    ``n`` seeds and ``sigmas``."""
    seeds = shared_seeds(cells, sigmas)
    subsets = resamples(seeds, n, draws, rng)
    if not subsets:
        return math.nan, 0, len(seeds)
    words = [rule_verdict([restrict(c, sigmas, s) for c in cells], side) for s in subsets]
    return float(np.mean([w in DECIDED for w in words])), len(subsets), len(seeds)


def own_truth_rate(cells: Sequence[V.Cell], side: V.Side, n: int, sigmas: Sequence[float]) -> float:
    """The planner's arithmetic (:mod:`initmem.stats.power`) fed the tier's own truth at the design: its seeds'
    profiles on the design's sigma_w (their means and their covariance per sigma_w and across arms:
    :func:`initmem.stats.power.profile_truth`)."""
    seeds = shared_seeds(cells, sigmas)
    x = np.vstack([restrict(c, sigmas, seeds).values for c in cells])
    truth = P.profile_truth(x, len(cells))
    if truth is None:
        return math.nan
    mean, cov, k = truth
    return P.spread_truth_rate(mean, cov, k, n, side) if len(cells) == 1 else P.paired_decision_rate(mean, cov, k, n, side)


def miss_p(planned: float, sims: int, realised: float, draws: int, n: int, pool: int) -> float:
    """The two-sided p of "the rule's rate at ``n`` seeds is the ``planned`` one" given the ``realised`` share of
    ``draws`` resamples of ``n`` of a tier's ``pool`` seeds (see the module docstring): the normal test with the
    U-statistic's variance bound (n / pool) p (1 - p) plus the planner's Monte-Carlo variance p (1 - p) / ``sims``;
    with one draw (the tier itself), or resamples of more than half the tier's seeds (no two of them disjoint: one
    tier's worth of evidence, whose share a normal test reads too boldly), scipy's exact binomial test of the one
    (majority) verdict against the planned rate; nan without a draw."""
    if sims < 2 or draws < 1 or not (math.isfinite(planned) and math.isfinite(realised)):
        return math.nan
    if planned == realised:
        return 1.0
    if draws == 1 or 2 * n > pool:  # fewer than two disjoint subsets of seeds: the tier is one draw, its majority verdict
        return float(stats.binomtest(int(realised > 0.5), 1, planned).pvalue)
    var = planned * (1 - planned) * (n / pool + 1 / sims)
    if var <= 0:  # a plan of 0% or 100% that the tier does not meet
        return 0.0
    return float(2 * stats.norm.sf(abs(realised - planned) / math.sqrt(var)))


def planned_sims(plan: D.Plan) -> int:
    return P.PAIRED_SIMS if len(plan.reads) == 2 else P.POWER_SIMS


def check_plan(tier: str, plan: D.Plan, cells: Sequence[V.Cell], design: str, n: int, sigmas: tuple[float, ...],
               draws: int, rng: np.random.Generator) -> Check:
    """One :class:`Check` of ``plan`` at (``n`` seeds, ``sigmas``)."""
    planned = plan.rate(n, sigmas)
    realised, k, pool = realised_rate(cells, plan.side, n, sigmas, draws, rng)
    own = own_truth_rate(cells, plan.side, n, sigmas)
    sims = planned_sims(plan)
    return Check(tier, plan.cid, design, n, sigmas, planned, sims, own, realised, k,
                 miss_p(planned, sims, realised, k, n, pool), miss_p(own, sims, realised, k, n, pool))


def tier_checks(tier: str, config: str, draws: int = DRAWS, rng_seed: int = RNG_SEED) -> list[Check]:
    """Every spread and contrast plan of ``config`` made without ``tier``, at the tier's design, at ``--cheapest``'s and
    at the design the tier's committed plan chose (:data:`COMMITTED`), each design once."""
    cfg = load_config([ROOT / config])
    sources = D.measured(leave_out=(tier,))
    runs = pd.read_csv(D.EVIDENCE / tier / "tables" / "runs.csv")
    runs = runs[runs["status"] == "ok"]
    price = D.config_price(cfg)
    out = []
    for k, plan in enumerate(D.plans(cfg, sources)):
        if plan.kind != SPREAD_READ or plan.rate is None or plan.side is None or plan.seeds < 2:
            continue
        cells = cells_of(plan, runs)
        if cells is None:
            continue
        rng = np.random.default_rng([rng_seed, k])
        out.append(check_plan(tier, plan, cells, "as trained", plan.seeds, plan.sigmas, draws, rng))
        designs = {(plan.seeds, plan.sigmas)}
        best = D.cheapest(plan, price)
        for name, design in (("--cheapest", best and (best[0], best[1])), ("--cheapest as committed", COMMITTED.get(tier, {}).get(plan.cid))):
            if design is not None and design not in designs:
                designs.add(design)
                out.append(check_plan(tier, plan, cells, name, design[0], design[1], draws, rng))
    return out


def as_frame(checks: Sequence[Check]) -> pd.DataFrame:
    """The checks as a table (the committed CSV the planner reads its warnings from; its columns also without a check)."""
    columns = ("tier", "claim", "family", "design", "seeds", "sigmas", "planned", "planned_sims", "own_truth", "realised", "draws",
               "p_planned", "p_own", "missed", "arithmetic_missed")
    return pd.DataFrame([{"tier": c.tier, "claim": c.cid, "family": c.family, "design": c.design, "seeds": c.seeds,
                          "sigmas": " ".join(f"{s:g}" for s in c.sigmas), "planned": c.planned, "planned_sims": c.planned_sims,
                          "own_truth": c.own_truth, "realised": c.realised, "draws": c.draws, "p_planned": c.p_planned,
                          "p_own": c.p_own, "missed": c.missed, "arithmetic_missed": c.arithmetic_missed} for c in checks],
                        columns=list(columns))


def realised_text(c: Check) -> str:
    """The realised rate with its 95% Wilson interval, or why there is none."""
    if c.draws == 0:
        return "more seeds than the tier ran"
    if c.draws == 1:
        return f"{c.realised:.0%} (the tier itself: one draw)"
    lo, hi = proportion_confint(round(c.realised * c.draws), c.draws, 0.05, "wilson")
    return f"{c.realised:.1%} [{lo:.1%}, {hi:.1%}] of {c.draws}"


def verdict_text(c: Check) -> str:
    """What the check says: agreed, or missed, and whose miss (the assumed truth's or the arithmetic's)."""
    if not math.isfinite(c.p_planned):
        return "not tested (no draw)"
    if not c.missed:
        return f"agrees (p = {c.p_planned:.2g})"
    whose = "the arithmetic's too" if c.arithmetic_missed else "the assumed truth's: at the tier's truth the plan agrees"
    return f"**missed** (p = {c.p_planned:.2g}; {whose}, p = {c.p_own:.2g})"


def markdown(checks: Sequence[Check], command: str, seconds: float, draws: int = DRAWS) -> str:
    """The committed table."""
    out = ["# The planner checked against what happened\n",
           f"`{command}` ({seconds:.0f} s wall, one core). Each committed tier replanned without itself "
           "(`design --leave-out`), every spread and contrast plan at the tier's design, at `--cheapest`'s and at the "
           "`--cheapest` design the tier's committed plan chose (`initmem.planner.design_check` says how each column is made): *planned* "
           "is the planner's P(decision) from the truth it assumed; *at the tier's truth* its arithmetic fed the tier's own seed "
           "means, noise and seed pairing; *realised* the share of resamples of the tier's own seeds at the design (without "
           f"replacement, {draws:,} per row, or every subset where there are fewer; at the tier's own seed count the tier itself) "
           "that the claims table's own rule reads `reproduced` or `not reproduced` (the statistic alone; 95% Wilson interval). "
           "*missed*: planned and realised differ beyond chance: the resamples overlap (subsets of one tier's seeds), so the "
           "normal test uses the variance bound of a U-statistic, (n / N) p (1 - p), plus the planner's Monte-Carlo variance "
           f"(`initmem.planner.design_check.miss_p`; the tier itself, one draw: scipy's exact `binomtest` of its verdict against the planned rate; p < {MISS_LEVEL:g}); "
           "the same test at the tier's truth says whether the assumed truth or the arithmetic missed. `design` prints a "
           "warning under any plan of a kind that missed here.\n",
           "| tier | claim | design | seeds | sigma_w | planned | at the tier's truth | realised | check |",
           "|---|---|---|---|---|---|---|---|---|"]
    for c in checks:
        out.append(f"| {c.tier} | `{c.cid}` | {c.design} | {c.seeds} | {', '.join(f'{s:g}' for s in c.sigmas)} | {c.planned:.1%} | "
                   f"{c.own_truth:.1%} | {realised_text(c)} | {verdict_text(c)} |")
    missed = [c for c in checks if c.missed]
    out += ["", f"{len(missed)} of {sum(math.isfinite(c.p_planned) for c in checks)} tested rows missed "
            f"({sum(c.realised < c.planned for c in missed)} with fewer decisions than planned); at the tier's own truth "
            f"{sum(c.arithmetic_missed for c in checks)} rows miss (the arithmetic's)."]
    return "\n".join(out) + "\n"

