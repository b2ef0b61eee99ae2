"""The collapse rule's chance of a decision, simulated: known clocks drawn at a design, read by the rule.

A *design* (:class:`SimDesign`) is one optimizer's configurations (lr, b, epochs) with the sigma_w grid,
seeds, training set size and per-run noise of accuracy. A *truth* is the clock the simulated curves
follow: runs' accuracy is 0.8 + beta(tau) sigma_w + noise, beta(tau) = -0.1 / (1 + tau / tau_s) (flat,
then falling an order per decade of clock: the paper's log-log picture of Fig. 6), with tau the clock
K eta^p b^q (the schedule's sum, as :mod:`initmem.stats.collapse` reads it) or the raw epoch
("epoch-only"); tau_s is the geometric mean of the configurations' tau at mid-run, so every curve falls
inside the design's clock range. :func:`power` is the chance of a decision at a design, seeds and noise;
:func:`row_rate` that chance for an undecided collapse row of the claims table, at its own
configurations. The planner's calibration (:mod:`initmem.planner.collapse_calibration`) reads the rule's
error rates from the same draws.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from initmem.stats import collapse as C
from initmem.stats.verdicts import INCONCLUSIVE, NOT_IDENTIFIABLE, NOT_REPRODUCED, PARTLY_TESTED, REPRODUCED, Cell

ALPHA = 0.01  # the cosine schedule's floor (paper and tiers)


@dataclass(frozen=True)
class SimDesign:
    """Configurations (lr, b, epochs) of one optimizer and how each is measured."""

    name: str
    optimizer: str
    clock: str
    configs: tuple[tuple[float, int, int], ...]
    sigmas: tuple[float, ...]
    seeds: int
    noise: float
    n_train: int


@functools.cache
def schedule_sums(lr: float, b: int, epochs: int, n_train: int) -> dict:
    """Per epoch: raw steps and the cosine schedule's cumulative sum of eta and of eta^2 / b (cached: read only)."""
    per = math.ceil(n_train / b)
    K = per * epochs
    k = np.arange(K)
    eta = lr * (ALPHA + (1 - ALPHA) * 0.5 * (1 + np.cos(np.pi * k / K)))
    ends = per * np.arange(1, epochs + 1) - 1
    out = {"steps": (ends + 1).astype(float), "T_adapt": np.cumsum(eta)[ends], "T_sgd": np.cumsum(eta**2 / b)[ends]}
    for v in out.values():
        v.flags.writeable = False
    return out


def _per_config(design: SimDesign, truth) -> list:
    """``truth`` for each configuration: one clock (p, q) or 'epoch-only' for all, or a tuple of one per configuration."""
    per = isinstance(truth, tuple) and len(truth) == len(design.configs) and all(isinstance(t, tuple) for t in truth)
    return list(truth) if per else [truth] * len(design.configs)


def simulate(design: SimDesign, truth, rng: np.random.Generator) -> list[Cell]:
    """One draw of the design's cells under ``truth`` ((p, q), 'epoch-only', or one (p, q) per configuration)."""
    base = []
    for (lr, b, epochs), one in zip(design.configs, _per_config(design, truth), strict=True):
        sums = schedule_sums(lr, b, epochs, design.n_train)
        if one == "epoch-only":
            tau = np.arange(1, epochs + 1, dtype=float)
        else:
            (p, q), (p0, q0) = one, C.CLOCKS[design.clock]
            tau = sums[design.clock] * lr ** (p - p0) * float(b) ** (q - q0)  # the family the rule reads: its clock's schedule sum
        base.append((lr, b, epochs, sums, tau))
    tau_s = math.exp(np.mean([math.log(tau[len(tau) // 2]) for *_, tau in base]))
    sig = np.asarray(design.sigmas, float)
    cells = []
    for lr, b, epochs, sums, tau in base:
        beta = -0.1 / (1 + tau / tau_s)
        values = 0.8 + beta[:, None, None] * sig[None, :, None] + rng.normal(0, design.noise, (epochs, len(sig), design.seeds))
        e = np.arange(1, epochs + 1, dtype=float)
        cells.append(Cell(f"{lr}-{b}-{epochs}", sig, np.arange(design.seeds), values, e, {"epoch": e, **sums},
                          label=f"lr={lr:g} b={b} E={epochs}", config={"optimizer": design.optimizer, "lr": lr, "batch_size": b}))
    return cells


def judge(design: SimDesign, cells: list[Cell], what: str, draws: int) -> C.ClockEstimate:
    cells, prepare, _ = C.curves_of(cells, what)
    return C.estimate_clock(cells, prepare, design.clock, [c.config["lr"] for c in cells], [c.config["batch_size"] for c in cells],
                            draws=draws)


def verdicts(design: SimDesign, truth, what: str, n_sims: int, rng: np.random.Generator, draws: int) -> list[str]:
    """The rule's verdicts of the next ``n_sims`` draws of ``design`` under ``truth`` from ``rng`` (those of
    :func:`verdict_rates`, one stream: two calls of m and m' draws give the verdicts of one call of m + m')."""
    return [C.collapse_decision(judge(design, simulate(design, truth, rng), what, draws)).verdict for _ in range(n_sims)]


def verdict_rates(design: SimDesign, truth, what: str, n_sims: int, rng: np.random.Generator, draws: int) -> dict:
    """``n_sims`` draws of ``design`` under ``truth``, each read by the rule: their verdicts (an array) and the share
    whose interval holds the truth (``coverage``: over the draws where the truth is :func:`_searchable`; NaN where none is)."""
    verdicts, covered = [], []
    single = not (truth == "epoch-only" or isinstance(truth[0], tuple))
    for _ in range(n_sims):
        est = judge(design, simulate(design, truth, rng), what, draws)
        verdicts.append(C.collapse_decision(est).verdict)
        if est.low is not None and single and _searchable(est, truth):
            covered.append(C._inside(est, truth))
    v = np.array(verdicts)
    return {"verdicts": v, "coverage": float(np.mean(covered)) if covered else math.nan}


def _searchable(est: C.ClockEstimate, truth: tuple[float, float]) -> bool:
    """Whether the rule can state an interval about ``truth`` in this draw: its coordinates lie where the
    configurations' curves still overlap (the clocks searched). A truth beyond them is outside the
    family the rule fits, as epoch-only curves are: no coverage is counted for it, only its verdicts."""
    s = est.design.coordinates(truth)
    inside = all(lo - 1e-9 <= v <= hi + 1e-9 for v, (lo, hi) in zip(s, est.edges, strict=True))
    return inside and bool(C.connected(est.design, s[None])[0])


def outcome_shares(configs: Sequence[tuple[float, int, int]], seeds: int, noise: float, optimizer: str = "adam", n_sims: int = 50,
                   sigmas: Sequence[float] = (0.1, 0.5, 1.2, 2.5), n_train: int = 1000, what: str = "beta", truth=None,
                   rng_seed: int = 0, draws: int = 100) -> dict[str, float]:
    """The share of ``n_sims`` simulations under ``truth`` (default: the paper's clock) at these
    configurations (lr, b, epochs), seeds and per-run noise that end in each verdict of the rule."""
    clock = "T_adapt" if optimizer != "sgd" else "T_sgd"
    d = SimDesign("power", optimizer, clock, tuple(configs), tuple(sigmas), seeds, noise, n_train)
    truth = C.CLOCKS[clock] if truth is None else truth
    v = verdict_rates(d, truth, what, n_sims, np.random.default_rng(rng_seed), draws)["verdicts"]
    return {word: float(np.mean(v == word)) for word in (REPRODUCED, NOT_REPRODUCED, PARTLY_TESTED, INCONCLUSIVE, NOT_IDENTIFIABLE)}


def decision_share(shares: dict[str, float]) -> float:
    """A decision is ``reproduced`` or ``not reproduced``, as everywhere (:mod:`initmem.stats.power`):
    ``partly tested`` (only the exponents the design identifies) is not one."""
    return shares[REPRODUCED] + shares[NOT_REPRODUCED]


def power(configs: Sequence[tuple[float, int, int]], seeds: int, noise: float, optimizer: str = "adam", n_sims: int = 50,
          sigmas: Sequence[float] = (0.1, 0.5, 1.2, 2.5), n_train: int = 1000, what: str = "beta", truth=None, rng_seed: int = 0,
          draws: int = 100) -> float:
    """P(decision): the share of simulations (:func:`outcome_shares`) that the rule decides
    (:func:`decision_share`): e.g. Adam at >= 3 batch sizes and one lr for a future tier."""
    return decision_share(outcome_shares(configs, seeds, noise, optimizer, n_sims, sigmas, n_train, what, truth, rng_seed, draws))


# A collapse row's "would decide": fewer simulations and resamples than the calibration (each simulation is a whole
# clock fit), enough to place the seeds within a factor of ~1.5; the search stops at ROW_MAX_SEEDS.
ROW_POWER_SIMS, ROW_POWER_DRAWS, ROW_MAX_SEEDS = 20, 40, 64


def row_rate(cells: Sequence[Cell], what: str, clock: str, theta: Sequence[float] | None, n_train: int) -> Callable[[int], float]:
    """The chance of a decision at n seeds of a collapse row, simulated at its own configurations
    (lr, b, epochs), sigma_w grid and per-run noise (the median over configuration, epoch and sigma_w
    of the seeds' sd) under its measured exponents ``theta`` (the paper's clock where none were
    measured), with the calibration's curve shape (the module docstring)."""
    configs = tuple((float(c.config["lr"]), int(c.config["batch_size"]), len(c.epochs)) for c in cells)
    with np.errstate(invalid="ignore"):
        noise = float(np.nanmedian(np.concatenate([np.nanstd(c.values, axis=-1, ddof=1).ravel() for c in cells])))
    optimizer = "sgd" if clock == "T_sgd" else "adam"
    truth = None if theta is None else (float(theta[0]), float(theta[1]))
    return lambda n: power(configs, n, noise, optimizer, ROW_POWER_SIMS, tuple(cells[0].sigmas), n_train, what, truth,
                           draws=ROW_POWER_DRAWS)

