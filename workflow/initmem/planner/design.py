"""Plan a config before it trains: per headline claim, the chance that its calibrated rule decides.

``python -m initmem design CONFIG [...] [--cheapest]`` reads a config (a tier's or ``config/paper.yaml``),
finds the claims the claims table would test on it (every catalogue family's ``selections`` over its planned
configurations: the function that chooses what each row reads in a runs table, :mod:`initmem.claims.selection`),
assumes a truth for each selection's statistic from what the committed evidence measured, and prints per claim: the seeds and sigma_w
grid it reads, P(decision) (``reproduced`` or ``not reproduced``) by the rule's own simulation, whether
the paper's regime (the runs fit) is expected, and the compute of the configurations it reads.

The assumed truths (the rule everywhere: the smaller effect of every estimate), each effect only from
readings the regime rule accepts (:func:`initmem.claims.claim.selected_outside`: at every sigma_w half
the selected SGD predictors fit, an adaptive optimizer's runs fit at some epoch, 95% of the selected
predictors read with settled BatchNorm statistics and above chance); a configuration it rejects measured
something other than the paper's quantity, so it informs the noise and the regime only:
- **a spread** (a configuration's seed means over sigma_w): every measured configuration of the same
  optimizer, learning rate, L2 and batch size (any batch size where none) with >= 2 seeds in the committed
  tiers (``evidence/*/tables``; any epochs, data size or resolution), and the paper's spread at that batch
  size (a linear profile over its sigma_w range); each is interpolated onto the planned grid and the smallest
  spread is assumed. The pilot's one-seed cells inform the regime only.
- **a contrast** (a's spread minus b's, seed-paired): every source that measured both arms, and the
  paper's two numbers; the smallest contrast is assumed (with that source's two profiles).
- **the noise of a spread or a contrast**, only from readings the regime rule accepts, as a source's
  seeds measured it (:func:`seed_deviations`): each seed's deviations from the seed means per sigma_w
  (both arms on the seeds one source ran in both: one seed's runs in two arms correlate, the same init
  draws and data order), moved onto the planned grid (an interpolated sigma_w keeps its neighbours'
  noise, not the smaller noise of their average) and to the planned test-set size (the test-sampling
  part p(1 - p) / n_test recomputed, the rest kept); the rules' rates are then simulated from those
  per-seed vectors (:func:`initmem.stats.power.profile_truth`: their covariance per sigma_w and
  across sigma_w and arms, not one pooled sd). Of several sources, the one whose end drop (a contrast:
  the drops' difference) varies most is assumed. Where no accepted source measured both arms on
  >= MIN_PAIRED_SEEDS seeds, the arms are independent, each with its own accepted source's noise per
  sigma_w. A configuration no accepted reading measured takes the noise of the accepted readings of the
  same optimizer at the same training-set size and resolution (the nearest measured noise, said so);
  with none, the plan has no noise to simulate ("no truth to simulate"), never an assumed one.
- **the run noise of a curve rule** (|beta| falls, stays flat): the largest residual sd (seed-blocked)
  of the accepted direct sources, moved to the planned test-set size as above.
- **|beta| falls** (an adaptive optimizer): a fall of 1 order (the paper's lower end, "1-2 orders")
  from the smallest peak the committed tiers measured; the epoch noise as the run noise above.
- **SGD's |beta| stays flat**: flat at the lowest last-tenth level the committed tiers measured for
  SGD at that lr (a level nearer the noise floor is the harder one to call flat).
- **the collapse**: the calibration's truth (:mod:`initmem.planner.collapse_calibration`) at the
  planned configurations and the largest committed tier noise.

Checked against what happened (:mod:`initmem.planner.design_check`, ``benchmarks/planner_check.md``): each committed
tier replanned without itself, its plans beside the rate its rules reach on resamples of its own seeds; the
report ends with a warning under any planned claim whose kind (:func:`claim_family`) missed there.

The regime (a hand-made rule, stated because no textbook one exists): a configuration is expected to
fit at a sigma_w when a measured run of the same optimizer, lr, n_train and resolution reached 99.5%
train accuracy within the planned steps, in a run no longer than the planned one or by half of them
(a longer cosine keeps the rate higher for longer); "unknown" where nothing was measured at that size.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from initmem import paper as published
from initmem import paths
from initmem.claims import catalogue
from initmem.claims.claim import CLOCK_LABEL, FITS_LABELS, Claim, selected_outside
from initmem.claims.clock import T_DROPS, T_RETAINS
from initmem.claims.rows import ADAPTIVE, LABEL
from initmem.claims.selection import ALIGN, CONTRAST, DECAY, FLAT, SPREAD, STATISTICS, PlannedRead, Selection, planned_of
from initmem.claims.similarity import design_markdown, selected_counts, selected_test
from initmem.engine.clocks import paper_constant_lr_clocks, run_clocks
from initmem.pipeline.configfiles import load_config, read_yaml
from initmem.pipeline.estimate import config_gpu_hours, configuration_gpu_hours, pack_gpu_hours
from initmem.pipeline.grid import expand_studies
from initmem.pipeline.targets import forward_images
from initmem.planner import calibration as Cal
from initmem.planner import collapse_calibration as CC
from initmem.stats import collapse_power as CP
from initmem.stats import power as P
from initmem.stats import shape_power as SP
from initmem.stats.collapse import CLOCKS
from initmem.stats.collapse_power import SimDesign, verdicts
from initmem.stats.drawn import Drawn
from initmem.stats.spreads import residual_sd
from initmem.stats.verdicts import INCONCLUSIVE, NOT_IDENTIFIABLE, NOT_REPRODUCED, PARTLY_TESTED, REPRODUCED, Side

EVIDENCE = paths.EVIDENCE
# The planner checked against the committed tiers (benchmarks/planner_check.py): a plan of a kind that missed there is warned of.
CHECKS = paths.BENCHMARKS / "planner_check.csv"
PILOT = "jpeg-cifar10-pilot"
PILOT_CONFIG = "config/evidence-pilot.yaml"  # what the pilot trained (its sizes/ files change n_train, resolution, epochs)
TARGET = 0.8
MAX_SEEDS = 200
MIN_PAIRED_SEEDS = 4  # a contrast's paired noise needs this many seeds run in both arms (else the arms are taken as independent)
SHAPE_SIMS, COLLAPSE_SIMS, COLLAPSE_DRAWS = 100, 100, 100
SHAPE_BLOCK = 2_000_000  # values per block of simulated curve cells (each cell's runs and its leave-one-seed-out sums)
COLLAPSE_MAX_SEEDS = 64  # --cheapest's seed cap for the collapse (each simulation a whole clock fit); MAX_SEEDS for every other rule
GRID_SIZES = (2, 3, 4, 5, 7, 9, 13, 25)  # --cheapest's sigma_w grids: these sizes (and the full grid) of evenly spaced values
PAPER_FALL_ORDERS = 1.0  # "decay by 1-2 orders of magnitude": the lower end
# CPU cost of one single-thread job on this machine (2 vCPU AMD EPYC, ResNet-9 width 8, float32, loop engine),
# measured by the regime pilot (evidence/jpeg-cifar10-pilot/README.md, "Cost"): seconds per optimizer step at
# b=16 and 16x16, the 32x32 factor, and per epoch per evaluated image (the pilot's whole per-epoch overhead
# counted as evaluation: an upper bound). Other batch sizes: half of a b=16 step taken as fixed, half as per image
# (an assumption; no pilot cell varies b).
CPU_STEP_S = 5.0e-3
CPU_EVAL_S = 0.10e-3
CPU_RES32 = 3.5
CPU_CORES = 2


@dataclass(frozen=True)
class Planned:
    """One configuration of the config: its runs differ only in sigma_w and seed."""

    study: str
    config_id: str
    spec: dict = field(hash=False)
    sigmas: tuple[float, ...]
    seeds: int
    resolution: int

    @property
    def steps(self) -> int:
        return int(self.spec["epochs"]) * math.ceil(int(self.spec["n_train"]) / int(self.spec["batch_size"]))

    def label(self) -> str:
        s = self.spec
        return f"{self.study}: {LABEL.get(s['optimizer'], s['optimizer'])} lr {s['lr']:g} b={s['batch_size']}" + (
            f" L2 {s['l2']:g}" if s["l2"] else "")


@dataclass(frozen=True)
class Measured:
    """One measured configuration of a committed tier or the pilot."""

    source: str
    spec: dict = field(hash=False)
    resolution: int
    sigmas: np.ndarray = field(hash=False)
    means: np.ndarray = field(hash=False)   # seed means of test accuracy at tau_best (fractions)
    sd: float                               # residual sd of the seed-blocked model (nan: one seed)
    seeds: int
    steps: int                              # optimizer steps of the run
    steps_to_fit: np.ndarray = field(hash=False)  # per sigma_w: the median over fitted runs (nan: none fitted)
    values: pd.DataFrame | None = field(default=None, hash=False, compare=False)  # sigma_w x seed test accuracy (fractions)
    outside: tuple[str, ...] = ()           # why its selected predictors are not the paper's (none: an accepted reading)

    def label(self) -> str:
        s = self.spec
        return (f"{self.source} {LABEL.get(s['optimizer'], s['optimizer'])} lr {s['lr']:g} b={s['batch_size']}, "
                f"{s['epochs']} epochs, n={s['n_train']}, {self.resolution}px")


@dataclass(frozen=True)
class Truth:
    """An assumed truth on the planned grid: the means per arm and the noise, either a source's per-seed
    deviations (``deviations``: arms k x seeds, seed-paired across arms) or independent normal noise of
    ``sd`` (per arm: one value or one per sigma_w), one seed's runs correlating ``corr`` across arms."""

    means: tuple[np.ndarray, ...]   # per arm, on the planned grid
    sd: float | tuple = 0.0         # the independent noise (the report prints its largest value)
    source: str = ""
    corr: float = 0.0               # a contrast's: the correlation of one seed's runs across its two arms
    deviations: np.ndarray | None = field(default=None, hash=False, compare=False)

    @property
    def noise(self) -> float:
        """The largest run noise per sigma_w (fractions): what the report prints."""
        if self.deviations is not None:
            return float(np.sqrt(np.max(np.var(self.deviations, axis=1, ddof=1))))
        return float(max(np.max(np.asarray(v, float)) for v in (self.sd if isinstance(self.sd, tuple) else (self.sd,))))


@dataclass(frozen=True)
class Chance:
    """A rule's P(decision) at (seeds, sigma_w grid) (``of``), and whether it reaches a target (``settles``: the
    same answer as comparing ``of``, from only the simulations that settle it: :meth:`initmem.stats.drawn.Drawn.reaches`)."""

    of: Callable[[int, tuple[float, ...]], float]
    settles: Callable[[int, tuple[float, ...], float], bool]

    def __call__(self, n: int, sigmas: tuple[float, ...]) -> float:
        return self.of(n, sigmas)


def reaches(rate: Callable[[int, tuple[float, ...]], float], n: int, sigmas: tuple[float, ...], target: float) -> bool:
    """Whether ``rate(n, sigmas)`` >= ``target`` (a :class:`Chance` draws only the simulations that settle it)."""
    return rate.settles(n, sigmas, target) if isinstance(rate, Chance) else rate(n, sigmas) >= target


@dataclass
class Plan:
    """One claim as planned: its rule's decision rate at the config's design, and what it reads."""

    cid: str
    rule: str
    reads: list[Planned]
    truth: Truth | None
    rate: Callable[[int, tuple[float, ...]], float] | None   # (seeds, sigma_w grid) -> P(decision)
    regime: str
    note: str = ""
    side: Side | None = None   # a spread's or a contrast's side, as the claims table reads it
    partly: Callable[[int, tuple[float, ...]], float] | None = None   # the collapse's: P(partly tested), apart from P(decision)
    max_seeds: int = MAX_SEEDS   # the most seeds --cheapest searches

    @property
    def kind(self) -> str:
        """What the claim making this id reads (:attr:`initmem.claims.claim.Claim.reads`): "spread" (a
        spread or a contrast of spreads) or "curve" (a |beta| shape or the collapse)."""
        claim = catalogue.lookup(self.cid)
        if claim is None:
            raise ValueError(f"{self.cid}: no claim of the catalogue (initmem/claims/catalogue/) makes this id")
        return claim.reads

    @property
    def seeds(self) -> int:
        return min(p.seeds for p in self.reads)

    @property
    def sigmas(self) -> tuple[float, ...]:
        return self.reads[0].sigmas


# --- the config's configurations -----------------------------------------------------------------

def planned(config: dict) -> list[Planned]:
    """Every configuration of ``config`` (a loaded, layered config)."""
    out = []
    res = int(config["data"].get("resolution", 32))
    for study, runs in expand_studies(config).items():
        groups: dict[str, list] = {}
        for r in runs:
            groups.setdefault(r.config_id, []).append(r)
        for cid, rs in groups.items():
            spec = {k: v for k, v in rs[0].spec.items() if k not in ("sigma_w", "seed")}
            out.append(Planned(study, cid, spec, tuple(sorted({float(r.spec["sigma_w"]) for r in rs})),
                               len({r.spec["seed"] for r in rs}), res))
    return out


def _same(spec: dict, keys: Sequence[str], **want) -> bool:
    return all((spec[k] == want[k]) if isinstance(want[k], str) else np.isclose(float(spec[k] or 0), float(want[k] or 0))
               for k in keys)


# --- what the committed evidence measured ---------------------------------------------------------

@cache
def measured(evidence: Path = EVIDENCE, leave_out: tuple[str, ...] = ()) -> tuple[Measured, ...]:
    """Every measured configuration of the committed tiers (``tables/runs.csv``) and of the pilot
    (``tables/steps_to_fit.csv``: one seed, no noise; its rate, batch size and test size are those of
    the runs :data:`PILOT_CONFIG` specifies), but the folders named in ``leave_out``."""
    out = []
    for folder in sorted(p for p in evidence.iterdir() if (p / "tables" / "runs.csv").exists() and p.name not in leave_out):
        res = int((read_yaml(folder / "config.resolved.yaml").get("data") or {}).get("resolution", 32))
        runs = pd.read_csv(folder / "tables" / "runs.csv")
        runs = runs[runs["status"] == "ok"]
        keys = ["optimizer", "lr", "batch_size", "epochs", "l2", "n_train", "n_test"]
        for values, g in runs[runs["variant"].isna() & ~runs["augment"].astype(bool) & (runs["norm"] == "batchnorm")
                              & (runs["arch"] == "resnet9")].groupby(keys):
            spec = dict(zip(keys, values, strict=True))
            metric = selected_test(g)
            grid = g.pivot_table(index="sigma_w", columns="seed", values=metric)
            if metric == "test_acc_final":
                spec["final_test"] = int(g["final_test"].iloc[0])
            steps_per_epoch = math.ceil(spec["n_train"] / spec["batch_size"])
            fit = g.groupby("sigma_w")["tau_interp"].median() * steps_per_epoch
            m = Measured(folder.name, spec, res, grid.index.to_numpy(float), grid.mean(axis=1).to_numpy(float),
                         float(residual_sd(grid.to_numpy(float))) if grid.shape[1] > 1 else math.nan, grid.shape[1],
                         int(spec["epochs"]) * steps_per_epoch, fit.reindex(grid.index).to_numpy(float), grid)
            out.append(replace(m, outside=tuple(selected_outside(selected_counts(g), spec["optimizer"], "the configuration"))))
    pilot = evidence / PILOT / "tables" / "steps_to_fit.csv"
    if pilot.exists():
        t = pd.read_csv(pilot)
        trained = {r.spec["optimizer"]: r.spec for runs in expand_studies(load_config([evidence.parent / PILOT_CONFIG])).values() for r in runs}
        for (opt, n, res, steps), g in t.groupby(["optimizer", "n_train", "resolution", "steps_run"]):
            g = g.sort_values("sigma_w")
            s = trained[opt]
            b = int(s["batch_size"])
            spec = {"optimizer": opt, "lr": float(s["lr"]), "batch_size": b, "epochs": int(steps * b // n), "l2": float(s["l2"]),
                    "n_train": int(n), "n_test": int(s["n_test"])}
            out.append(Measured(PILOT, spec, int(res), g["sigma_w"].to_numpy(float), g["test_acc_best"].to_numpy(float), math.nan, 1,
                                int(steps), g["steps_to_fit"].to_numpy(float)))
    return tuple(out)


def test_images(spec: dict) -> int:
    """The test images behind a configuration's selected test accuracy: its ``final_test`` where set (the kept best
    weights evaluated once: :func:`initmem.claims.similarity.selected_test`), else its per-epoch ``n_test``."""
    return int(spec.get("final_test") or 0) or int(spec["n_test"])


def noise_at(m: Measured, n_test: int) -> float:
    """``m``'s run noise moved to ``n_test`` test images (:func:`sampling_moved`)."""
    if test_images(m.spec) == int(n_test):
        return float(m.sd)
    return float(np.sqrt(sampling_moved(np.array([m.sd ** 2]), np.array([np.mean(m.means)]), test_images(m.spec), int(n_test))[0]))


def _profile(m: Measured, sigmas: Sequence[float]) -> np.ndarray:
    return np.interp(np.asarray(sigmas, float), m.sigmas, m.means)


def _paper_profile(spread_pp: float, level: float, sigmas: Sequence[float]) -> np.ndarray:
    """A linear fall of ``spread_pp`` over the paper's sigma_w range (0.1-2.5), from ``level`` at 0.1."""
    s = np.clip(np.asarray(sigmas, float), 0.1, 2.5)
    return level - spread_pp / 100 * (s - 0.1) / 2.4


def _paper_spread(spec: dict) -> float | None:
    """The paper's spread (pp) of ``spec``'s recipe; for SGD with an L2 the paper did not run, its spread on the same
    side of its T_L2 threshold (its constant-lr arithmetic): 17.4 pp at T_L2 <= T_RETAINS, its "< 1 pp" read as 1 pp at
    >= T_DROPS (the larger, the cautious truth of a contrast "without minus with"), none between."""
    recipe = {**({} if spec["optimizer"] == "sgd" else {"optimizer": spec["optimizer"]}), "batch_size": int(spec["batch_size"]),
              **({} if spec["lr"] == published.MAIN_LR else {"lr": spec["lr"]}), **({"l2": spec["l2"]} if spec.get("l2") else {})}
    try:
        return published.spread(**recipe)
    except KeyError:
        pass
    if spec["optimizer"] != "sgd" or not spec.get("l2"):
        return None
    t_l2 = paper_constant_lr_clocks({**spec, "l2": float(spec["l2"])})["T_l2"]
    if t_l2 <= T_RETAINS:
        return published.spread(lr=1e-2, batch_size=128, l2=1e-3)
    return 1.0 if t_l2 >= T_DROPS else None


def _direct(p: Planned, sources: Sequence[Measured], accepted: bool = True) -> list[Measured]:
    """The sources that measured p's optimizer, lr and L2 at its batch size (at any epochs, size or
    resolution), or, where none did, at any batch size; with >= 2 seeds (a one-seed spread is "not
    testable" by the claims table's own rules, so it is no estimate: the pilot's cells inform the regime only).
    ``accepted``: only the readings the regime rule accepts (:attr:`Measured.outside` empty: their selected
    predictors are what the paper's sentences are about), as every assumed effect is; the run noise reads
    them all (the largest noise is the cautious one, whatever the predictors measured)."""
    same = [m for m in sources if m.seeds >= 2 and _same(m.spec, ("optimizer", "lr", "l2"), **p.spec) and not (accepted and m.outside)]
    at_b = [m for m in same if int(m.spec["batch_size"]) == int(p.spec["batch_size"])]
    return at_b or same


def left_out_of(plan: Plan, sources: Sequence[Measured]) -> list[Measured]:
    """The measured readings of ``plan``'s configurations that its assumed effects leave out (the regime
    rule rejects them: :attr:`Measured.outside`)."""
    return [m for p in plan.reads for m in _direct(p, sources, accepted=False) if m.outside]


def candidates(p: Planned, sources: Sequence[Measured]) -> list[tuple[str, np.ndarray]]:
    """(source, means on p's grid) of every estimate of p's profile (the paper's last, where it has one)."""
    out = [(m.label(), _profile(m, p.sigmas)) for m in _direct(p, sources)]
    paper = _paper_spread(p.spec)
    if paper is not None:
        level = float(np.mean([c[1][0] for c in out])) if out else 0.5
        out.append((f"the paper ({paper:g} pp)", _paper_profile(paper, level, p.sigmas)))
    return out


def run_noise(reads: Sequence[Planned], sources: Sequence[Measured]) -> float:
    """The largest noise of the accepted direct sources of ``reads`` (:func:`_direct`), moved to the planned
    test size; the calibration's paper noise where none has seeds."""
    n_test = test_images(reads[0].spec)
    sds = [noise_at(m, n_test) for p in reads for m in _direct(p, sources) if np.isfinite(m.sd)]
    return max(sds) if sds else CC.PAPER_NOISE


def interpolation(grid: Sequence[float], to: Sequence[float]) -> np.ndarray:
    """(len(to), len(grid)): linear interpolation from values on ``grid`` to ``to`` (held flat past the ends)."""
    grid, eye = np.asarray(grid, float), np.eye(len(grid))
    return np.stack([np.interp(np.asarray(to, float), grid, eye[:, j]) for j in range(len(grid))], axis=1)


def move_deviations(dev: np.ndarray, means: np.ndarray, grid: Sequence[float], to: Sequence[float], n_test: int | None = None,
                    n_test_to: int | None = None) -> np.ndarray:
    """Per-seed deviations ``dev`` (k x seeds, zero-mean rows, on ``grid``) moved onto ``to``: interpolated
    seed by seed (their correlations kept), each row rescaled to the interpolation of its neighbours'
    variances (an interpolated sigma_w is as noisy as the runs beside it, not as their average) and, with
    both test sizes, to that variance less the test-sampling part p(1 - p) / ``n_test`` plus p(1 - p) / ``n_test_to``."""
    L = interpolation(grid, to)
    moved, var = L @ dev, L @ np.var(dev, axis=1, ddof=1)
    if n_test and n_test_to and n_test != n_test_to:
        var = sampling_moved(var, L @ means, n_test, n_test_to)
    have = np.var(moved, axis=1, ddof=1)
    return moved * np.where(have > 0, np.sqrt(var / np.where(have > 0, have, 1.0)), 0.0)[:, None]


def sampling_moved(var: np.ndarray, means: np.ndarray, n_test: int, n_test_to: int) -> np.ndarray:
    """Run variances ``var`` at ``n_test`` test images moved to ``n_test_to``: the test-sampling part p (1 - p) / n
    recomputed, the rest kept (the binomial part can exceed a measured variance, as the same test images serve every
    run: then the variance never grows with more test images, nor shrinks with fewer)."""
    p = np.clip(means, 0.01, 0.99)
    moved = np.maximum(var - p * (1 - p) / n_test, 0.0) + p * (1 - p) / n_test_to
    return np.minimum(moved, var) if n_test_to > n_test else np.maximum(moved, var)


def seed_deviations(ms: Sequence[Measured], grids: Sequence[Sequence[float]], n_test: int) -> np.ndarray | None:
    """The per-seed deviations of the arms ``ms`` (one source each, one folder) on the seeds all of them ran at
    every sigma_w, each moved onto its planned grid and test size (:func:`move_deviations`), stacked arm after
    arm; None below 2 such seeds (below MIN_PAIRED_SEEDS for two arms: too few to measure a pairing)."""
    if any(m.values is None for m in ms):
        return None
    seeds = sorted(set.intersection(*(set(m.values.columns[m.values.notna().all()]) for m in ms)))
    if len(seeds) < (MIN_PAIRED_SEEDS if len(ms) > 1 else 2):
        return None
    parts = []
    for m, grid in zip(ms, grids, strict=True):
        v = m.values[seeds].to_numpy(float)
        parts.append(move_deviations(v - v.mean(1, keepdims=True), v.mean(1), m.values.index.to_numpy(float), grid,
                                     test_images(m.spec), n_test))
    return np.vstack(parts)


def _drop_var(dev: np.ndarray, arms: int) -> float:
    """The variance of the end drop (first minus last sigma_w) of ``dev``; of the drops' difference for two arms."""
    k = dev.shape[0] // arms
    drops = [dev[i * k] - dev[(i + 1) * k - 1] for i in range(arms)]
    return float(np.var(drops[0] - (drops[1] if arms == 2 else 0.0), ddof=1))


def noisiest(candidates: Sequence[tuple[str, np.ndarray]], arms: int) -> tuple[str, np.ndarray] | None:
    """The (source, deviations) whose end drop varies most (the cautious noise), or None."""
    return max(candidates, key=lambda c: _drop_var(c[1], arms), default=None)


def _nearest(p: Planned, sources: Sequence[Measured]) -> list[Measured]:
    """The accepted readings of p's optimizer at its training-set size and resolution, at any lr, L2 or batch size
    (the nearest measured noise for a configuration no accepted reading measured)."""
    return [m for m in sources if m.seeds >= 2 and not m.outside and m.spec["optimizer"] == p.spec["optimizer"]
            and int(m.spec["n_train"]) == int(p.spec["n_train"]) and m.resolution == p.resolution]


def _noise_of(p: Planned, sources: Sequence[Measured]) -> tuple[str, np.ndarray] | None:
    """(whose, per-seed deviations on p's grid and test size) of p's noisiest accepted direct source, else of the
    noisiest accepted reading nearest to it (:func:`_nearest`, said so); None without either."""
    n_test = test_images(p.spec)
    for group, how in ((_direct(p, sources), "{}"), (_nearest(p, sources), "the nearest accepted reading, {}")):
        found = noisiest([(how.format(m.label()), d) for m in group if (d := seed_deviations([m], [p.sigmas], n_test)) is not None], 1)
        if found is not None:
            return found
    return None


def _own_sds(p: Planned, sources: Sequence[Measured]) -> tuple[str, np.ndarray] | None:
    """An arm's own noise per sigma_w on its planned grid (:func:`_noise_of`), for independent arms."""
    found = _noise_of(p, sources)
    return None if found is None else (found[0], np.std(found[1], axis=1, ddof=1))


def simulable(t: Truth | None) -> bool:
    """A truth with a noise to simulate (a source's seeds, or an independent noise measured by one)."""
    return t is not None and (t.deviations is not None or math.isfinite(t.noise))


def spread_truth(p: Planned, sources: Sequence[Measured]) -> Truth | None:
    c = candidates(p, sources)
    if not c:
        return None
    name, means = min(c, key=lambda x: np.ptp(x[1]))
    what = f"{name}: {100 * np.ptp(means):.1f} pp (the smallest of {len(c)})"
    noise = _noise_of(p, sources)
    if noise is None:
        return Truth((means,), math.nan, f"{what}; noise: no accepted reading with seeds")
    whose = "its" if noise[0] == name else f"{noise[0]}'s"
    return Truth((means,), 0.0, f"{what}; noise: {whose} {noise[1].shape[1]} seeds", deviations=noise[1])


def contrast_truth(a: Planned, b: Planned, sources: Sequence[Measured]) -> Truth | None:
    """The smallest contrast of a's and b's spreads among the sources that measured both (and the paper's),
    with the noisiest seed-paired noise of an accepted source that measured both arms (else independent arms)."""
    ca, cb = dict(candidates(a, sources)), dict(candidates(b, sources))
    both, paired = [], []
    n_test = test_images(a.spec)
    for m in _direct(a, sources):
        for n in _direct(b, sources):
            if n.source == m.source and n is not m and _same(n.spec, [k for k in ("batch_size", "n_train", "lr", "optimizer")
                                                                      if _same(a.spec, (k,), **b.spec)], **m.spec):
                both.append((f"{m.label()} vs {n.label()}", _profile(m, a.sigmas), _profile(n, b.sigmas)))
                dev = seed_deviations([m, n], [a.sigmas, b.sigmas], n_test)
                if dev is not None:
                    paired.append((f"{m.label()} vs {n.label()}", dev))
    pa, pb = [k for k in ca if k.startswith("the paper")], [k for k in cb if k.startswith("the paper")]
    if pa and pb:
        both.append((f"{pa[0]} vs {pb[0]}", ca[pa[0]], cb[pb[0]]))
    if not both:
        return None
    name, ma, mb = min(both, key=lambda x: np.ptp(x[1]) - np.ptp(x[2]))
    what = f"{name}: {100 * (np.ptp(ma) - np.ptp(mb)):.1f} pp (the smallest of {len(both)})"
    noise = noisiest(paired, 2)
    if noise is not None:
        whose = "its" if noise[0] == name else f"{noise[0]}'s"
        return Truth((ma, mb), 0.0, f"{what}; noise: {whose} {noise[1].shape[1]} seed-paired seeds", deviations=noise[1])
    own = [_own_sds(a, sources), _own_sds(b, sources)]
    if all(o is not None for o in own):
        return Truth((ma, mb), (own[0][1], own[1][1]), f"{what}; noise: independent arms, {own[0][0]} and {own[1][0]}")
    return Truth((ma, mb), math.nan, f"{what}; noise: no accepted reading with seeds for {'either arm' if own == [None, None] else 'one arm'}")


def fit_expected(p: Planned, sources: Sequence[Measured]) -> str:
    """Expected to fit at every sigma_w?  (The module docstring's rule.)"""
    same = [m for m in sources if _same(m.spec, ("optimizer", "lr", "n_train"), **p.spec) and m.resolution == p.resolution
            and np.isclose(float(m.spec["l2"]), float(p.spec["l2"] or 0))]
    if not same:
        return "fit unknown (nothing measured at this n_train and resolution)"
    missing = []
    for s in p.sigmas:
        ok = [m for m in same if m.sigmas.min() <= s <= m.sigmas.max() and np.all(np.isfinite(m.steps_to_fit))]
        if not any(np.interp(s, m.sigmas, m.steps_to_fit) <= min(p.steps, p.steps / 2 if m.steps > p.steps else p.steps) for m in ok):
            missing.append(s)
    if missing:
        return f"not expected to fit at sigma_w {', '.join(f'{s:g}' for s in missing)} (measured: {same[0].label()})"
    return "expected to fit at every sigma_w"


def regime(claim: Claim, reads: Sequence[Planned], sources: Sequence[Measured]) -> str:
    """The row's regime as the claims table will read it: the fit (where its claim asks for
    one) of the configurations read, and the clock at the end of training against the paper's range."""
    parts = []
    if claim.fit == FITS_LABELS:
        parts += sorted({fit_expected(p, sources) for p in reads})
    else:
        parts.append("no fit condition")
    if claim.clock:
        name, lo, hi = claim.clock
        ends = [run_clocks({**p.spec, "sigma_w": p.sigmas[0], "seed": 0})[name] for p in reads]
        inside = all(lo <= e <= hi for e in ends)
        parts.append(f"{CLOCK_LABEL[name]} at the end {min(ends):.3g}" + (f"-{max(ends):.3g}" if max(ends) > min(ends) else "")
                     + (" (inside" if inside else " (outside") + f" the paper's {lo:.3g}-{hi:.3g})")
    return "; ".join(parts)


# --- the rules' decision rates --------------------------------------------------------------------

# Each rate is cached by its truth, seeds and grid: claims that share a truth (and --cheapest's search) simulate once.

@cache
def _spread_p(means: tuple[float, ...], sd: tuple[float, ...], n: int, side: Side) -> float:
    return P.spread_decision_rate(means, sd, n, side)


@cache
def _contrast_p(a: tuple[float, ...], b: tuple[float, ...], sd_a: tuple[float, ...], sd_b: tuple[float, ...], corr: float, n: int,
                side: Side) -> float:
    return P.contrast_decision_rate(a, b, sd_a, sd_b, n, side, corr=corr)


@cache
def _profile_p(x: tuple[tuple[float, ...], ...], arms: int, n: int, side: Side) -> float:
    """P(decision) from per-seed profiles ``x`` (arms k rows, seeds columns): :func:`initmem.stats.power.profile_truth`."""
    mean, cov, k = P.profile_truth(np.array(x), arms)
    return P.spread_truth_rate(mean, cov, k, n, side) if arms == 1 else P.paired_decision_rate(mean, cov, k, n, side)


def _shape_beta(kind: str, level: float, epochs: int) -> np.ndarray:
    """The |beta| truth of a curve rule: a PAPER_FALL_ORDERS fall from ``level`` (DECAY), or flat at it (FLAT)."""
    if kind == DECAY:
        return level * 10 ** (-PAPER_FALL_ORDERS * (np.arange(epochs) / max(epochs - 1, 1)))
    return np.full(epochs, level)


@cache
def _shape_sims(kind: str, level: float, epochs: int, noise: float, n: int, sigmas: tuple[float, ...]) -> Drawn:
    """SHAPE_SIMS curve cells of the calibration's model (:func:`initmem.planner.calibration.beta_cells`) at this
    truth and design, read by the rule (:func:`initmem.stats.shape_power.decay_codes` or ``flat_codes``: the
    claims table's rule, cell for cell), drawn as far as a question needs (:class:`initmem.stats.drawn.Drawn`)."""
    d, beta, rng = Cal.Design("design", sigmas, n, noise, epochs), _shape_beta(kind, level, epochs), np.random.default_rng(P.POWER_RNG_SEED)
    rule, s, e = SP.decay_codes if kind == DECAY else SP.flat_codes, np.asarray(sigmas, float), np.arange(1, epochs + 1, dtype=float)
    block = max(1, min(SHAPE_SIMS, SHAPE_BLOCK // (epochs * len(sigmas) * (n + 1))))
    return Drawn(lambda m: list(rule(Cal.beta_cells(d, beta, m, rng), s, e)), SHAPE_SIMS, bool, block)


@cache
def _collapse_sims(configs: tuple[tuple[float, int, int], ...], n_train: int, noise: float, n: int, sigmas: tuple[float, ...]) -> Drawn:
    """COLLAPSE_SIMS draws of Adam's |beta| curves under the paper's clock (:func:`initmem.stats.collapse_power.outcome_shares`),
    each read by the collapse rule, drawn as far as a question needs."""
    d = SimDesign("power", "adam", "T_adapt", configs, sigmas, n, noise, n_train)
    rng = np.random.default_rng(P.POWER_RNG_SEED)
    return Drawn(lambda m: verdicts(d, CLOCKS["T_adapt"], "beta", m, rng, COLLAPSE_DRAWS), COLLAPSE_SIMS,
                 lambda v: v in (REPRODUCED, NOT_REPRODUCED))


def _collapse_shares(configs: tuple[tuple[float, int, int], ...], n_train: int, noise: float, n: int,
                     sigmas: tuple[float, ...]) -> dict[str, float]:
    v = np.array(_collapse_sims(configs, n_train, noise, n, sigmas).all())
    return {word: float(np.mean(v == word)) for word in (REPRODUCED, NOT_REPRODUCED, PARTLY_TESTED, INCONCLUSIVE, NOT_IDENTIFIABLE)}


def _collapse_p(configs: tuple[tuple[float, int, int], ...], n_train: int, noise: float, n: int, sigmas: tuple[float, ...]) -> float:
    return CP.decision_share(_collapse_shares(configs, n_train, noise, n, sigmas))


def _on(means: np.ndarray, full: Sequence[float], sigmas: Sequence[float]) -> tuple[float, ...]:
    return tuple(float(v) for v in np.interp(np.asarray(sigmas, float), np.asarray(full, float), means))


def _sd_on(sd, arm: int, full: Sequence[float], sigmas: Sequence[float]) -> tuple[float, ...]:
    """An arm's independent noise per sigma_w of ``sigmas`` (its variance interpolated from ``full``)."""
    v = np.asarray(sd[arm] if isinstance(sd, tuple) else sd, float)
    v = np.broadcast_to(v, (len(full),)) ** 2
    return tuple(float(x) for x in np.sqrt(np.interp(np.asarray(sigmas, float), np.asarray(full, float), v)))


def _profiles_on(truth: Truth, full: Sequence[float], sigmas: Sequence[float]) -> tuple[tuple[float, ...], ...]:
    """The truth's per-seed profiles on ``sigmas``: its means plus its deviations moved there (:func:`move_deviations`)."""
    arms, k = len(truth.means), len(full)
    rows = []
    for i in range(arms):
        dev = move_deviations(truth.deviations[i * k:(i + 1) * k], truth.means[i], full, sigmas)
        rows += list(np.asarray(_on(truth.means[i], full, sigmas))[:, None] + dev)
    return tuple(tuple(float(v) for v in r) for r in rows)


def spread_rate(truth: Truth, full: Sequence[float], side: Side) -> Callable[[int, tuple[float, ...]], float]:
    """P(decision) of the single-spread rule at n seeds on a grid: from the truth's per-seed deviations
    (:func:`initmem.stats.power.spread_truth_rate`) or its independent noise (:func:`initmem.stats.power.spread_decision_rate`)."""
    def rate(n: int, s: tuple[float, ...]) -> float:
        if n < 2:
            return 0.0
        if truth.deviations is not None:
            return _profile_p(_profiles_on(truth, full, s), 1, n, side)
        return _spread_p(_on(truth.means[0], full, s), _sd_on(truth.sd, 0, full, s), n, side)
    return rate


def contrast_rate(truth: Truth, full: Sequence[float], side: Side) -> Callable[[int, tuple[float, ...]], float]:
    """P(decision) of the seed-paired contrast rule at n seeds on a grid: from the truth's seed-paired deviations
    (:func:`initmem.stats.power.paired_decision_rate`) or its independent noise, one seed's runs in the two arms
    correlating by ``truth.corr`` (:func:`initmem.stats.power.contrast_decision_rate`)."""
    def rate(n: int, s: tuple[float, ...]) -> float:
        if n < 2:
            return 0.0
        if truth.deviations is not None:
            return _profile_p(_profiles_on(truth, full, s), 2, n, side)
        return _contrast_p(_on(truth.means[0], full, s), _on(truth.means[1], full, s), _sd_on(truth.sd, 0, full, s),
                           _sd_on(truth.sd, 1, full, s), truth.corr, n, side)
    return rate


def decay_rate(peak: float, epochs: int, noise: float) -> Chance:
    """|beta| falling PAPER_FALL_ORDERS from ``peak`` over the run, read by :func:`initmem.stats.shapes.decay_decision`."""
    return _shape_chance(DECAY, peak, epochs, noise)


def flat_rate(level: float, epochs: int, noise: float) -> Chance:
    """|beta| flat at ``level`` over the run, read by :func:`initmem.stats.shapes.flat_decision`."""
    return _shape_chance(FLAT, level, epochs, noise)


def _shape_chance(kind: str, level: float, epochs: int, noise: float) -> Chance:
    sims = lambda n, s: _shape_sims(kind, level, epochs, noise, n, tuple(s))
    return Chance(lambda n, s: 0.0 if n < 2 else sims(n, s).share(), lambda n, s, t: t <= 0 if n < 2 else sims(n, s).reaches(t))


def collapse_rate(reads: Sequence[Planned], noise: float) -> Chance:
    """The collapse rule at the calibration's clock truth (:func:`initmem.stats.collapse_power.power`)."""
    configs = tuple((float(p.spec["lr"]), int(p.spec["batch_size"]), int(p.spec["epochs"])) for p in reads)
    n_train = int(reads[0].spec["n_train"])
    of = lambda n, s: 0.0 if n < 2 else _collapse_p(configs, n_train, noise, n, tuple(s))
    return Chance(of, lambda n, s, t: t <= 0 if n < 2 else _collapse_sims(configs, n_train, noise, n, tuple(s)).reaches(
        t, lambda: of(n, s)))


def collapse_partly(reads: Sequence[Planned], noise: float) -> Callable[[int, tuple[float, ...]], float]:
    """The share of the same simulations that read ``partly tested`` (the design identifies only part of the clock): no decision."""
    configs = tuple((float(p.spec["lr"]), int(p.spec["batch_size"]), int(p.spec["epochs"])) for p in reads)
    return lambda n, s: 0.0 if n < 2 else _collapse_shares(configs, int(reads[0].spec["n_train"]), noise, n, tuple(s))[PARTLY_TESTED]


def _tables(sources: Sequence[Measured], name: str) -> tuple[Path, ...]:
    """The table ``name`` of each committed folder ``sources`` were measured in: a folder left out of the
    sources (``measured(leave_out=...)``) is left out of every estimate."""
    return tuple(f for f in (EVIDENCE / folder / "tables" / name for folder in sorted({m.source for m in sources})) if f.is_file())


@cache
def _peaks(tables: tuple[Path, ...]) -> dict[str, float]:
    """Per adaptive optimizer, the smallest held |beta| peak over the configurations of these beta tables."""
    out: dict[str, float] = {}
    for f in tables:
        b = pd.read_csv(f)
        for (opt, *_), g in b.groupby(["optimizer", "lr", "batch_size", "epochs", "l2"]):
            if opt in ADAPTIVE:
                out[opt] = min(out.get(opt, math.inf), float(g["abs_beta"].max()))
    return out


@cache
def _levels(tables: tuple[Path, ...]) -> dict[tuple[str, float], float]:
    """Per (SGD-family optimizer, lr), the lowest last-tenth |beta| level over these beta tables' configurations without L2."""
    out: dict[tuple[str, float], float] = {}
    for f in tables:
        b = pd.read_csv(f)
        for (opt, lr, _, _, l2), g in b.groupby(["optimizer", "lr", "batch_size", "epochs", "l2"]):
            if opt == "sgd" and not l2:
                y = g.sort_values("epoch")["abs_beta"].to_numpy(float)
                last = float(np.mean(y[-max(len(y) // 10, 1):]))
                out[(opt, float(lr))] = min(out.get((opt, float(lr)), math.inf), last)
    return out


# --- the claims -----------------------------------------------------------------------------------

def _plan_order(s: Selection) -> tuple:
    """Where a plan lists a claim: the main grid first, by optimizer (SGD first) and batch size, each configuration's
    claims in :data:`initmem.claims.selection.STATISTICS` order; then the rest in catalogue order."""
    if s.fields.get("grid") == "main":
        opt = s.fields["optimizer"]
        return 0, opt != "sgd", opt, s.fields["b"], STATISTICS.index(s.statistic)
    return (1,)


def plans(config: dict, sources: Sequence[Measured] | None = None) -> list[Plan]:
    """The claims the claims table would test on ``config`` (every family's selections over its planned
    configurations: :func:`initmem.claims.catalogue.selections`), each with its assumed truth and rule."""
    sources = measured() if sources is None else sources
    conf = planned(config)
    read = PlannedRead.of([p.spec for p in conf], [p.study for p in conf], conf)
    beta = _tables(sources, "beta.csv")
    known = Known(sources, _peaks(beta), _levels(beta))
    chosen = sorted((s for s in catalogue.selections(read) if s.complete), key=_plan_order)
    return [plan for s in chosen if (plan := plan_of(s, known)) is not None]


@dataclass(frozen=True)
class Known:
    """What the committed evidence measured, as the plans read it: the sources and their |beta| peaks and levels."""

    sources: Sequence[Measured]
    peaks: dict[str, float]
    levels: dict[tuple[str, float], float]


def plan_of(s: Selection, known: Known) -> Plan | None:
    """The plan of one selection: its statistic's assumed truth and rule (None: a statistic no calibration simulates
    at this selection: the collapse of anything but Adam's |beta| curves, a flat |beta| without a measured level)."""
    reads, sources = [planned_of(part)[-1] for part in s.parts], known.sources
    if s.statistic == ALIGN:
        return _collapse_plan(s, reads, sources)
    regime_of = regime(s.claim, reads, sources)
    if s.statistic == SPREAD:
        t = spread_truth(reads[0], sources)
        return Plan(s.cid, s.rule, reads, t, spread_rate(t, reads[0].sigmas, s.side) if simulable(t) else None, regime_of, side=s.side)
    if s.statistic == CONTRAST:
        t = contrast_truth(*reads, sources)
        return Plan(s.cid, s.rule, reads, t, contrast_rate(t, reads[0].sigmas, s.side) if simulable(t) else None, regime_of, side=s.side)
    p = reads[0]
    if s.statistic == FLAT:
        level = known.levels.get((p.spec["optimizer"], float(p.spec["lr"])))
        if not level:
            return None
        noise = run_noise([p], sources)
        return Plan(s.cid, s.rule, reads, Truth((), noise, f"flat at the lowest measured last-tenth level {level:.3f}"),
                    flat_rate(level, int(p.spec["epochs"]), noise), regime_of)
    if s.statistic == DECAY:
        peak = known.peaks.get(p.spec["optimizer"])
        if not peak:
            return Plan(s.cid, s.rule, reads, None, None, regime_of)
        noise = run_noise([p], sources)
        return Plan(s.cid, s.rule, reads, Truth((), noise, f"a {PAPER_FALL_ORDERS:g}-order fall from the smallest measured peak {peak:.3f}"),
                    decay_rate(peak, int(p.spec["epochs"]), noise), regime_of)
    raise ValueError(f"{s.cid}: no plan for the statistic {s.statistic!r}")


def _collapse_plan(s: Selection, reads: list[Planned], sources: Sequence[Measured]) -> Plan | None:
    """The collapse of Adam's |beta| curves (the calibration's truth: T_adapt) at two or more (lr, b) on one sigma_w grid."""
    if (s.fields["what"], s.fields["optimizer"]) != ("beta", "adam"):
        return None
    if len({(p.spec["lr"], p.spec["batch_size"]) for p in reads}) < 2 or len({p.sigmas for p in reads}) != 1:
        return None
    noise = max((CC.tier_noise(f.parent.parent) for f in _tables(sources, "history.csv.gz") if f.parent.parent.name != PILOT),
                default=CC.PAPER_NOISE)
    return Plan(s.cid, s.rule, reads, Truth((), noise, "the calibration's clock truth (T_adapt)"), collapse_rate(reads, noise),
                regime(s.claim, reads, sources), partly=collapse_partly(reads, noise), max_seeds=COLLAPSE_MAX_SEEDS)


# --- compute --------------------------------------------------------------------------------------

def cpu_seconds(p: Planned) -> float:
    """Core-seconds of one run of ``p`` on this machine (the module's measured constants)."""
    s = p.spec
    step = CPU_STEP_S * (1 + int(s["batch_size"]) / 16) / 2 * (CPU_RES32 if p.resolution == 32 else 1)
    # the passes over the training set (bn_eval precise, train_eval) cost as evaluated images: an assumption,
    # the pilot's 32x32 precise cell measured it
    evals = forward_images(s) * CPU_EVAL_S * (CPU_RES32 if p.resolution == 32 else 1)
    return p.steps * step + evals


# The compute of ``n`` runs of one configuration (they differ only in sigma_w and seed).
Price = Callable[[Planned, int], float]


def gpu_price(config: dict) -> Price:
    """Central GPU-hours of ``n`` runs of a configuration, packed as the workflow packs them, at the
    rates and precision of ``config`` (:func:`initmem.pipeline.estimate.configuration_gpu_hours`:
    the packs and rates of ``estimate``)."""
    def price(p: Planned, n: int) -> float:
        return configuration_gpu_hours({**p.spec, "sigma_w": p.sigmas[0], "seed": 0}, n, config)[1]
    return price


def cpu_price(p: Planned, n: int) -> float:
    """Minutes on :data:`CPU_CORES` cores of ``n`` runs of ``p`` on this machine (one run a core)."""
    return n * cpu_seconds(p) / 60 / CPU_CORES


def cost(reads: Sequence[Planned], seeds: int, k: int, price: Price) -> float:
    """The compute of ``reads`` at ``seeds`` seeds and ``k`` sigma_w (each configuration once)."""
    return sum(price(p, seeds * k) for p in {p.config_id + p.study: p for p in reads}.values())


def grids(full: Sequence[float]) -> list[tuple[float, ...]]:
    """Evenly spaced sub-grids of ``full`` with both ends: GRID_SIZES values, and the full grid."""
    full = tuple(full)
    out = []
    for k in sorted({k for k in GRID_SIZES if k < len(full)} | {len(full)}):
        g = tuple(full[i] for i in sorted({round(i * (len(full) - 1) / (k - 1)) for i in range(k)}))
        if len(full) >= 2 and g not in out:
            out.append(g)
    return out


def cheapest(plan: Plan, price: Price) -> tuple[int, tuple[float, ...], float, float] | None:
    """(seeds, sigma_w grid, P, compute) of the least compute with P(decision) >= TARGET, or None (beyond the
    plan's seed cap, :attr:`Plan.max_seeds`); of equal compute, the larger grid. The smallest grid first: the
    cheapest design so far caps the seeds searched on the larger ones (a seed costs at least its share at the
    cap: packs are fullest there), and the chance grows with the seeds, so a grid whose chance at its cap falls
    short is not searched below it."""
    if plan.rate is None:
        return None
    best = None
    for g in grids(plan.sigmas):
        cap = _seed_cap(plan, g, price, None if best is None else best[3])
        if cap < 2 or not reaches(plan.rate, cap, g, TARGET):
            continue
        n = int(P.seeds_where(lambda n, g=g: reaches(plan.rate, n, g, TARGET), 2, cap))
        c = cost(plan.reads, n, len(g), price)
        if best is None or c < best[3] or (c == best[3] and len(g) > len(best[1])):
            best = (n, g, plan.rate(n, g), c)
    return best


def _seed_cap(plan: Plan, g: tuple[float, ...], price: Price, bound: float | None) -> int:
    """The most seeds worth searching on grid ``g``: the plan's cap, and below it the most whose compute can be
    at most ``bound`` (each seed costs at least its share at the cap)."""
    if bound is None:
        return plan.max_seeds
    per_seed = cost(plan.reads, plan.max_seeds, len(g), price) / plan.max_seeds
    return min(plan.max_seeds, math.floor(bound / per_seed * (1 + 1e-12)))


# --- the printed plan -----------------------------------------------------------------------------

def claim_family(cid: str) -> str:
    """A claim id without its batch size and what follows (``sgd_gt_adam_b16`` -> ``sgd_gt_adam``): plans of one kind."""
    return re.split(r"_b\d", cid, maxsplit=1)[0]


def missed_checks(checks: Path | None = None) -> pd.DataFrame:
    """The rows of the committed check table (:data:`CHECKS`, :mod:`initmem.planner.design_check`) where a plan missed; empty without one."""
    checks = CHECKS if checks is None else checks
    if not checks.is_file():
        return pd.DataFrame(columns=["family"])
    table = pd.read_csv(checks)
    return table[table["missed"].astype(bool)]


def warnings_of(ps: Sequence[Plan], missed: pd.DataFrame) -> list[str]:
    """One line per kind of planned claim (:func:`claim_family`) that missed on a committed tier: the claims
    planned here, then where it missed, planned against realised and whose miss it was."""
    out = []
    for family in dict.fromkeys(claim_family(p.cid) for p in ps):
        rows = missed[missed["family"] == family]
        if rows.empty:
            continue
        claims = ", ".join(f"`{p.cid}`" for p in ps if claim_family(p.cid) == family)
        where = "; ".join(f"{r.tier} `{r.claim}`, {r.seeds} seeds at sigma_w {r.sigmas} ({r.design}): planned {r.planned:.0%}, "
                          f"realised {r.realised:.0%} ({'the arithmetic missed too' if r.arithmetic_missed else 'the assumed truth missed'})"
                          for r in rows.itertuples())
        out.append(f"- **warning** {claims}: plans of `{family}` missed on committed tiers: {where}.")
    return out


def compute_unit(config: dict) -> str:
    """What the compute column counts: for a GPU config the rates and packs of ``estimate``."""
    if config["compute"]["device"] == "cpu":
        return f"minutes on {CPU_CORES} cores"
    sources = "; ".join(sorted(set().union(*(r["sources"] for r in pack_gpu_hours(config).values()))))
    return (f"central GPU-hours in {config['compute']['precision']} at {sources}, each configuration's runs packed "
            "as the workflow packs them (the rates and packs of `initmem estimate`)")


def whole_compute(config: dict) -> float:
    """The compute of every run of ``config`` (the report's last line): GPU-hours central, or minutes on this machine."""
    if config["compute"]["device"] == "cpu":
        return sum(cpu_price(p, p.seeds * len(p.sigmas)) for p in planned(config))
    return config_gpu_hours(config)[1]


def whole_config_line(config: dict, name: str) -> str:
    """The last line of the report: the compute of every run of ``config``; for a GPU config
    ``estimate``'s ``all`` row (:func:`initmem.pipeline.estimate.config_gpu_hours`)."""
    conf = planned(config)
    if config["compute"]["device"] == "cpu":
        return f"The whole config: {len(conf)} configurations, {sum(cpu_price(p, p.seeds * len(p.sigmas)) for p in conf):,.1f} minutes on {CPU_CORES} cores."
    lo, mid, hi = config_gpu_hours(config)
    return (f"The whole config: {len(conf)} configurations, {mid:,.0f} GPU-hours central ({lo:,.0f} low, {hi:,.0f} high; "
            f"{config['compute']['precision']}): the `all` row of `.venv/bin/python -m initmem estimate {name}`.")


def _grid_text(sigmas: Sequence[float]) -> str:
    return f"{len(sigmas)} ({', '.join(f'{s:g}' for s in sigmas)})" if len(sigmas) <= 6 else f"{len(sigmas)} ({sigmas[0]:g}-{sigmas[-1]:g})"


Found = tuple[int, tuple[float, ...], float, float] | None  # (seeds, sigma_w grid, P, compute) or none


def config_price(config: dict) -> Price:
    """The compute of ``config``'s configurations: GPU-hours for a GPU config, else minutes on this machine."""
    return gpu_price(config) if config["compute"]["device"] != "cpu" else cpu_price


def cheapest_designs(config: dict, ps: Sequence[Plan], progress: Callable[[str], None] | None = None) -> list[Found]:
    """:func:`cheapest` of every plan of ``ps``, in order, saying to ``progress`` which claim it searches
    (minutes each for the curve rules)."""
    price, found = config_price(config), []
    for i, p in enumerate(ps, 1):
        if progress is not None:
            progress(f"design --cheapest: claim {i}/{len(ps)}, {p.cid}")
        found.append(cheapest(p, price))
    return found


def report(config: dict, name: str, with_cheapest: bool = False, sources: Sequence[Measured] | None = None,
           ps: Sequence[Plan] | None = None, found: Sequence[Found] | None = None) -> str:
    """The plan as Markdown: a row per claim, then the config's total compute; ``with_cheapest`` (or
    ``found``, :func:`cheapest_designs` of ``ps``, already searched) the least compute per claim."""
    price = config_price(config)
    sources = measured() if sources is None else sources
    ps = plans(config, sources) if ps is None else ps
    lines = [f"# Design of `{name}`", "", f"P(decision): the chance the claim's own rule reads `reproduced` or `not reproduced` "
             f"under the assumed truth (initmem.planner.design); compute: {compute_unit(config)}.", "",
             "| claim | rule | configurations | seeds | sigma_w | assumed truth | noise | P(decision) | regime (runs fit) | compute |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for p in ps:
        rate = p.rate(p.seeds, p.sigmas) if p.rate and p.seeds >= 2 else math.nan
        chance = "not testable with one seed" if p.seeds < 2 else ("no truth to simulate" if math.isnan(rate) else f"{rate:.0%}")
        if p.partly and p.seeds >= 2 and not math.isnan(rate):
            chance += f" (and {p.partly(p.seeds, p.sigmas):.0%} partly tested, no decision)"
        if p.truth:
            truth, noise = p.truth.source, f"{p.truth.noise:.4f}" if simulable(p.truth) else ""
        else:
            truth, noise = "none accepted" if left_out_of(p, sources) else "none measured", ""
        lines.append(f"| `{p.cid}` | {p.rule} | {'; '.join(r.label() for r in p.reads)} | {p.seeds} | {_grid_text(p.sigmas)} | {truth} | "
                     f"{noise} | {chance} | {p.regime} | {cost(p.reads, p.seeds, len(p.sigmas), price):,.1f} |")
    lines += ["", whole_config_line(config, name)]
    left = {m.label(): m.outside for p in ps for m in left_out_of(p, sources)}
    if left:
        lines += ["", "## Readings left out of the assumed effects (outside the paper's regime: initmem.claims.claim.selected_outside)",
                  "", *[f"- {label}: {why[0]}" + (f" (and {len(why) - 1} more)" if len(why) > 1 else "") for label, why in left.items()]]
    lines += ["", design_markdown([(p.label(), p.spec) for p in planned(config)]).rstrip("\n")]
    warned = warnings_of(ps, missed_checks())
    if warned:
        lines += ["", "## Plans of these kinds missed on a committed tier (benchmarks/planner_check.md)", "", *warned]
    if with_cheapest or found is not None:
        found = cheapest_designs(config, ps) if found is None else found
        lines += ["", f"## The least compute for P(decision) >= {TARGET:.0%} (seeds and an evenly spaced sigma_w sub-grid with both ends)", "",
                  "| claim | seeds | sigma_w | P(decision) | compute |", "|---|---|---|---|---|"]
        for p, c in zip(ps, found, strict=True):
            lines.append(f"| `{p.cid}` | " + ((f"more than {p.max_seeds}" if p.rate else "no truth to simulate") + " | | | |" if c is None else
                                               f"{c[0]} | {_grid_text(c[1])} | {c[2]:.0%} | {c[3]:,.1f} |"))
        lines += together_section(config, ps, found)
    return "\n".join(lines) + "\n"


# --- the cheapest designs together -----------------------------------------------------------------

GOAL_SHARE = 0.10  # the goal of --cheapest: every planned claim at >= TARGET for at most this share of the whole config's compute


def family_of(cid: str) -> str:
    """The catalogue family (:attr:`initmem.claims.claim.Claim.family`) of the claim making ``cid``."""
    claim = catalogue.lookup(cid)
    return claim.family if claim is not None else cid


def designs_compute(ps: Sequence[Plan], found: Sequence[Found], price: Price) -> float:
    """The compute of the configurations the decidable claims of ``ps`` read, each once at the design
    :func:`merged_designs` gives it (the most seeds, the union of sigma_w): what ``--write-config`` runs."""
    reads = {(r.study, r.config_id): r for p, c in zip(ps, found, strict=True) if c is not None for r in p.reads}
    return sum(price(reads[key], n * len(sigmas)) for key, (n, sigmas) in merged_designs(ps, found).items())


def _costliest(ps: Sequence[Plan], found: Sequence[Found]) -> str:
    """The claim of ``ps`` whose own design costs most: its id, seeds x sigma_w, compute and assumed truth."""
    p, c = max(((p, c) for p, c in zip(ps, found, strict=True) if c is not None), key=lambda pc: pc[1][3])
    return f"`{p.cid}`: {c[0]} seeds x {len(c[1])} sigma_w ({c[3]:,.1f}); {p.truth.source if p.truth else 'no truth'}"


def _undecided(ps: Sequence[Plan], found: Sequence[Found]) -> str:
    """How many claims of ``ps`` no design plans to TARGET, and why (beyond the seed cap, or no truth)."""
    beyond = sum(c is None and p.rate is not None for p, c in zip(ps, found, strict=True))
    none = sum(p.rate is None for p in ps)
    parts = [f"{beyond} beyond the seed cap"] * bool(beyond) + [f"{none} with no truth to simulate"] * bool(none)
    return ", ".join(parts) or "none"


def together_section(config: dict, ps: Sequence[Plan], found: Sequence[Found]) -> list[str]:
    """The report's section on the cheapest designs together (the config ``--write-config`` writes): their compute
    against the whole config's and :data:`GOAL_SHARE` of it, and per claim family the compute of what its decidable
    claims read (a configuration read by several families counts in each) and the claim that costs it most."""
    price, whole = config_price(config), whole_compute(config)
    total = designs_compute(ps, found, price)
    unit = "GPU-hours" if config["compute"]["device"] != "cpu" else f"minutes on {CPU_CORES} cores"
    verdict = "within" if total <= GOAL_SHARE * whole else "above"
    lines = ["", "## The cheapest designs together (what `--write-config` writes)", "",
             f"Every decidable claim at its cheapest design, each configuration once at the most seeds and the union of sigma_w its "
             f"claims need: {total:,.1f} {unit}, {total / whole:.1%} of the whole config's {whole:,.1f}: {verdict} the goal of "
             f"{GOAL_SHARE:.0%}. Per claim family, the configurations its decidable claims read (one read by several families "
             "counts in each), and the claim whose own design costs most:", "",
             f"| claim family | claims planned to {TARGET:.0%} | not planned to {TARGET:.0%} | {unit} | share of the whole config | "
             "the costliest claim: its design and assumed truth |", "|---|---|---|---|---|---|"]
    for family, hours in family_compute(config, ps, found).items():
        fp, ff = zip(*[(p, c) for p, c in zip(ps, found, strict=True) if family_of(p.cid) == family], strict=True)
        costliest = _costliest(fp, ff) if any(c is not None for c in ff) else ""
        lines.append(f"| {family.replace('|', chr(92) + '|')} | {sum(c is not None for c in ff)} of {len(fp)} | {_undecided(fp, ff)} | {hours:,.1f} | "
                     f"{hours / whole:.1%} | {costliest.replace('|', chr(92) + '|')} |")
    return lines


# --- the config that runs the cheapest design -----------------------------------------------------

def merged_designs(ps: Sequence[Plan], found: Sequence[Found]) -> dict[tuple[str, str], tuple[int, tuple[float, ...]]]:
    """Per configuration (study, configuration id) that a decidable claim reads: the most seeds and the
    union of the sigma_w grids its claims' cheapest designs need (each claim gets at least its own)."""
    out: dict[tuple[str, str], tuple[int, tuple[float, ...]]] = {}
    for p, c in zip(ps, found, strict=True):
        if c is None:
            continue
        for r in p.reads:
            seeds, sigmas = out.get((r.study, r.config_id), (0, ()))
            out[(r.study, r.config_id)] = (max(seeds, c[0]), tuple(sorted(set(sigmas) | set(c[1]))))
    return out


def _grid_keys(study: dict, spec: dict) -> list[str]:
    """The keys (but sigma_w and seed) of the study's grid that names a configuration of ``spec``."""
    grids = study.get("grid") or {}
    for grid in grids if isinstance(grids, list) else [grids]:
        keys = [k for k in grid if k not in ("sigma_w", "seed")]
        if all(spec.get(k) in grid[k] for k in keys):
            return keys
    raise ValueError(f"no grid of the study names the configuration of {spec}")


def cheapest_config(config: dict, ps: Sequence[Plan], found: Sequence[Found]) -> dict:
    """A config file (to layer after ``config``'s own) whose studies are the configurations the
    decidable claims read, each at the seeds and sigma_w of :func:`merged_designs`: one grid per
    configuration, named by the study grid's own keys, so its runs keep their ids and finished runs
    are reused. The seeds are the study's first ones, then new ones."""
    designs = merged_designs(ps, found)
    specs: dict[tuple[str, str], dict] = {}
    seeds_of: dict[tuple[str, str], list] = {}
    for study, rs in expand_studies(config).items():
        for r in rs:
            specs[(study, r.config_id)] = r.spec
            seeds_of.setdefault((study, r.config_id), [])
            if r.spec["seed"] not in seeds_of[(study, r.config_id)]:
                seeds_of[(study, r.config_id)].append(r.spec["seed"])
    studies: dict[str, dict] = {}
    for (study, config_id), (n, sigmas) in designs.items():
        own = config["studies"][study]
        if own.get("variants"):
            raise ValueError(f"studies.{study} has variants: --write-config writes grids only")
        spec, listed = specs[(study, config_id)], seeds_of[(study, config_id)]
        seeds = (listed + [max(listed) + 1 + i for i in range(max(0, n - len(listed)))])[:n]
        grid = {k: [spec[k]] for k in _grid_keys(own, spec)} | {"sigma_w": list(sigmas), "seed": seeds}
        entry = studies.setdefault(study, {**({"set": own["set"]} if own.get("set") else {}), "grid": []})
        entry["grid"].append(grid)
    return {"studies": studies}


def written_config(base: dict, ps: Sequence[Plan], found: Sequence[Found], name: str | None = None) -> dict:
    """The config ``--write-config`` writes: ``base`` (the config as its files layer it, every section) with the studies of
    :func:`cheapest_config`, its tables and figures filed under ``name`` (results/<name>/, figures/<name>/: apart from
    the config's own; training stays shared, so finished runs are reused). Complete on its own: Snakemake's
    ``--configfile FILE`` on the command line replaces a profile's ``configfiles``, and FILE alone gives the same config as
    FILE after the config's own files, its name aside."""
    return {**copy.deepcopy(base), **cheapest_config(base, ps, found), **({"name": name} if name else {})}


def written_name(path: str) -> str | None:
    """The ``name`` a written config file files its outputs under: its file name's stem, where it is a valid name."""
    stem = Path(path).stem
    return stem if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", stem) else None


def run_command(config: dict, path: str) -> str:
    """The command that runs the config file ``path`` (complete on its own): under the Slurm profile for a GPU config,
    else on this machine's cores."""
    how = "--profile slurm" if config["compute"]["device"] != "cpu" else f"--cores {CPU_CORES}"
    return f".venv/bin/snakemake {how} --configfile {path}"


def family_compute(config: dict, ps: Sequence[Plan], found: Sequence[Found]) -> dict[str, float]:
    """Per claim family (:func:`family_of`), the compute of the configurations its decidable claims read at the
    merged designs (:func:`designs_compute`; a configuration read by several families counts in each)."""
    price, out = config_price(config), {}
    for family in dict.fromkeys(family_of(p.cid) for p in ps):
        pairs = [(p, c) for p, c in zip(ps, found, strict=True) if family_of(p.cid) == family]
        out[family] = designs_compute([p for p, _ in pairs], [c for _, c in pairs], price)
    return out


def outcome(config: dict, folder: Path, sources: Sequence[Measured] | None = None) -> str:
    """The plan beside what the trained tier's claims table (``folder/tables/claims.csv``) says, row by row.

    ``sources`` should be what the plan was made from (the committed evidence before the tier: pass
    :func:`measured` of a checkout without it); the default reads every committed folder, the tier's own
    included, so its chances are then post-hoc."""
    claims = pd.read_csv(folder / "tables" / "claims.csv").set_index("id")
    lines = ["| claim | P(decision), planned | statistic alone | verdict | after Holm | measured [interval] | runs fitted | selected fit |",
             "|---|---|---|---|---|---|---|---|"]
    ps = plans(config, sources)
    for p in ps:
        planned_p = p.rate(p.seeds, p.sigmas) if p.rate and p.seeds >= 2 else math.nan
        if p.cid not in claims.index:
            lines.append(f"| `{p.cid}` | {planned_p:.0%} | not in the claims table | | | | | |")
            continue
        r = claims.loc[p.cid]
        fit = "" if pd.isna(r["share_fit"]) else f"{r['share_fit']:.0%}"
        best = "" if pd.isna(r["share_best_fitted"]) else f"{r['share_best_fitted']:.0%}"
        holm = "" if pd.isna(r["verdict_holm"]) else r["verdict_holm"]
        lines.append(f"| `{p.cid}` | {'n/a' if math.isnan(planned_p) else f'{planned_p:.0%}'} | {r['statistic_verdict']} | "
                     f"**{r['verdict']}** | {holm} | {r['reproduced']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}] | {fit} | {best} |")
    decided = sum(claims.loc[p.cid, "verdict"] in (REPRODUCED, NOT_REPRODUCED) for p in ps if p.cid in claims.index)
    return "\n".join(lines) + f"\n\n{decided} of the planned rows are decided by their verdicts (reproduced or not reproduced).\n"
