"""The collapse rule's error rates, measured: known clocks simulated at a design and read by the rule
(:mod:`initmem.stats.collapse_power` draws them and says how the curves are made).

The designs are a committed tier's (its plain configurations of each optimizer, from the tiers with the
role ``collapse-calibration``) or the paper's (:func:`designs`); the truths are the clocks the claim's
words rule out, those the design cannot tell from the paper's, clocks inside the margin and curves that
follow the epoch alone (:func:`truths`). Rates per rule (|beta| curves, spread curves), design and truth:
:func:`calibration_rows`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from initmem import paths, tiers
from initmem.stats import collapse as C
from initmem.stats.collapse_power import SimDesign, decision_share, outcome_shares, simulate, verdict_rates
from initmem.stats.verdicts import INCONCLUSIVE, NOT_IDENTIFIABLE, NOT_REPRODUCED, PARTLY_TESTED, REPRODUCED

__all__ = ["PAPER_NOISE", "calibration_rows", "decision_share", "design_names", "designs", "outcome_shares", "tier_noise", "truths"]

PAPER_NOISE = 0.01  # per-run sd of accuracy at the paper's scale (10,000 validation images and seed noise): an assumption
EVIDENCE = paths.EVIDENCE
# short name -> folder: the tiers with the role "collapse-calibration" (initmem.tiers, in the tiers' order)
TIERS = {t.name: t.path for t in tiers.with_role("collapse-calibration")}


def tier_noise(folder: Path) -> float:
    """The tier's per-run noise: the median over (configuration, epoch, sigma_w) of the seeds' sd of val acc."""
    import pandas as pd  # analysis-only dependency

    h = pd.read_csv(folder / "tables" / "history.csv.gz")
    keys = [k for k in ("optimizer", "lr", "batch_size", "epochs", "l2", "epoch", "sigma_w") if k in h]
    return float(h.groupby(keys, dropna=False)["val_acc"].std().median())


def designs(name: str) -> list[SimDesign]:
    """The collapse designs of ``name``: a committed tier's (:data:`TIERS`: its plain configurations of each
    optimizer, the fewest seeds any of them has, its per-run noise) or 'paper' (Fig. 6f: Adam at five
    b and lr 1e-3; Fig. 6e: SGD likewise; the lr x b ablation of SGD)."""
    if name in TIERS:
        import pandas as pd

        folder = TIERS[name]
        runs = pd.read_csv(folder / "tables" / "runs.csv")
        plain = runs[(runs["l2"].fillna(0) == 0) & (runs["weight_decay"].fillna(0) == 0 if "weight_decay" in runs else True)]
        noise = tier_noise(folder)
        n_train = int(runs["n_train"].iloc[0]) if "n_train" in runs else 1000
        out = []
        for opt, clock in (("adam", "T_adapt"), ("sgd", "T_sgd")):
            g = plain[plain["optimizer"] == opt]
            configs = tuple(sorted({(float(r.lr), int(r.batch_size), int(r.epochs)) for r in g.itertuples()}))
            seeds = int(g.groupby(["lr", "batch_size", "epochs"])["seed"].nunique().min())
            out.append(SimDesign(f"{name} {opt}", opt, clock, configs, tuple(sorted(set(g["sigma_w"]))), seeds, noise, n_train))
        return out
    if name == "paper":
        sig = tuple(np.round(np.arange(0.1, 2.5001, 0.1), 10))
        bs = (16, 32, 64, 128, 256)
        return [SimDesign("paper Fig. 6f (Adam, lr 1e-3)", "adam", "T_adapt", tuple((1e-3, b, 300) for b in bs), sig, 10, PAPER_NOISE, 40000),
                SimDesign("paper Fig. 6e (SGD, lr 1e-3)", "sgd", "T_sgd", tuple((1e-3, b, 300) for b in bs), sig, 10, PAPER_NOISE, 40000),
                SimDesign("paper lr x b ablation (SGD, 10 seeds assumed)", "sgd", "T_sgd",
                          tuple((lr, b, 300) for lr in (1e-3, 1e-2, 1e-1) for b in (16, 128)), (0.1, 0.5, 1.0, 1.8, 2.5), 10, PAPER_NOISE, 40000)]
    raise ValueError(f"unknown calibration design {name!r}: expected one of {', '.join([*TIERS, 'paper'])}")


def probe(design: SimDesign) -> C.ClockDesign:
    """The collapse design (groups, identified directions) of one draw of ``design`` at the paper's clock."""
    cells, prepare, _ = C.curves_of(simulate(design, C.CLOCKS[design.clock], np.random.default_rng(0)), "beta")
    return C.design_of(cells, [prepare(c) for c in cells], design.clock, [c.config["lr"] for c in cells],
                       [c.config["batch_size"] for c in cells])


def two_group_truth(design: SimDesign, dq: float) -> tuple | None:
    """One (p, q) per configuration: the paper's clock, but q + ``dq`` in the largest of the groups that
    each identify the design's direction (:func:`initmem.stats.collapse.comparable_groups`; None where
    fewer than two do): the curves of each group align, under different clocks."""
    cells, prepare, _ = C.curves_of(simulate(design, C.CLOCKS[design.clock], np.random.default_rng(0)), "beta")
    curves = [prepare(c) for c in cells]
    lrs, bs = [c.config["lr"] for c in cells], [c.config["batch_size"] for c in cells]
    d = C.design_of(cells, curves, design.clock, lrs, bs)
    groups = C.comparable_groups(d, cells, curves, lrs, bs)
    if len(groups) < 2:
        return None
    off = set(max(reversed(groups), key=len).tolist())
    p0, q0 = C.CLOCKS[design.clock]
    return tuple((p0, q0 + dq) if i in off else (p0, q0) for i in range(len(design.configs)))


def truths(design: SimDesign) -> list[tuple[str, object, str]]:
    """(name, truth, kind) of every truth the rule is calibrated on at ``design``: the paper's clock; the
    clocks the claim's words rule out, a step of 1 in p or q either way and the epoch and other
    optimizer's clocks; those the design cannot tell from the paper's in what it identifies (raw steps,
    K eta, K eta^2 where the learning rate is not identified); clocks inside the margin (q + 0.2, + 0.3,
    p + 0.3); the margin's edge (q + 0.5); curves that follow the epoch alone; and, where two groups of
    configurations each identify the design's direction, groups under different clocks (q + 1 in one).
    ``kind`` (:func:`truth_kind`) says which verdicts are errors."""
    d = probe(design)
    p0, q0 = C.CLOCKS[design.clock]
    named = [("paper", (p0, q0))]
    for name in ("epoch", C.OTHER_CLOCK[design.clock]):
        named.append((f"{C.NAMES[name]} (p = {C.CLOCKS[name][0]:g}, q = {C.CLOCKS[name][1]:g})", C.CLOCKS[name]))
    for p in (0.0, 1.0, 2.0):
        if (p, 0.0) != (p0, q0):
            named.append((f"K eta^{p:g} (raw steps)" if p == 0 else f"K eta^{p:g}", (p, 0.0)))
    for dp, dq in ((0, 0.2), (0, 0.3), (0.3, 0), (0, 0.5), (0, 1), (0, -1), (1, 0), (-1, 0)):
        named.append((f"paper {'+' if dp + dq > 0 else '-'} {abs(dp + dq):g} in {'p' if dp else 'q'}", (p0 + dp, q0 + dq)))
    seen, out = set(), []
    for name, t in named:
        if t not in seen:
            seen.add(t)
            out.append((name, t, truth_kind(d, t)))
    groups = two_group_truth(design, 1.0)
    if groups is not None:
        out.append(("two groups: the paper's clock and q + 1", groups, "against"))
    return out + [("epoch-only", "epoch-only", "against")]


def truth_kind(design: C.ClockDesign, truth) -> str:
    """``paper``; ``within`` (inside the margin in what the design identifies, not the paper's); ``unseen``
    (the paper's in what the design identifies, another clock in what it does not: at most `partly
    tested`); ``against`` (at or past the margin in what it identifies)."""
    if tuple(truth) == tuple(C.CLOCKS[design.clock]):
        return "paper"
    s = np.abs(design.coordinates(truth)) if design.rank else np.zeros(0)
    if not len(s) or s.max() < 1e-9:
        return "unseen"
    return "against" if s.max() >= C.EQUIVALENCE - 1e-9 else "within"


def design_rows(d: SimDesign, n_sims: int, rng: np.random.Generator, draws: int = 100, rules: Sequence[str] = ("beta", "spread"),
                truth_names: Sequence[str] | None = None, label: str = "") -> list[dict]:
    """:func:`calibration_rows` of one :class:`SimDesign`."""
    rows = []
    for what in rules:
        for tname, truth, kind in truths(d):
            if truth_names is not None and tname not in truth_names:
                continue
            r = verdict_rates(d, truth, what, n_sims, rng, draws)
            v = r["verdicts"]
            claimed = (v == REPRODUCED) | ((v == PARTLY_TESTED) if kind == "against" else False)
            rows.append({"rule": f"collapse_{what}_{d.optimizer}_{d.clock}", "design": f"{label}{d.name}", "truth": tname, "n_sims": n_sims,
                         "false_reproduced": float(np.mean(claimed)) if kind in ("against", "unseen") else math.nan,
                         "false_not_reproduced": math.nan if kind == "against" else float(np.mean(v == NOT_REPRODUCED)),
                         "coverage": r["coverage"], "decision_rate": float(np.mean((v == REPRODUCED) | (v == NOT_REPRODUCED))),
                         "partly_tested": float(np.mean(v == PARTLY_TESTED)), "kind": kind,
                         "not_identifiable": float(np.mean(v == NOT_IDENTIFIABLE)), "inconclusive": float(np.mean(v == INCONCLUSIVE))})
    return rows


def design_names(design: str) -> list[str]:
    """The names of ``design``'s simulated designs (``calibration_rows(..., designs_of=[name])`` runs one)."""
    return [d.name for d in designs(design)]


def calibration_rows(design: str, n_sims: int, rng_seed: int, draws: int = 100, rules: Sequence[str] = ("beta", "spread"),
                     truth_names: Sequence[str] | None = None, designs_of: Sequence[str] | None = None) -> list[dict]:
    """Per rule (``collapse_<curve>`` at each of the design's optimizer designs) and truth: the share
    of ``n_sims`` simulations judged ``reproduced`` where the truth is not the paper's clock
    (false_reproduced), ``not reproduced`` where it is (false_not_reproduced), the share whose
    interval holds the true exponents (coverage; NaN for epoch-only curves, not in the family) and
    the share decided either way (decision_rate); also the shares ``not identifiable`` and
    ``inconclusive``. ``draws``: the rule's resamples per simulation; ``truth_names`` and
    ``designs_of`` (parts of a design's name) pick a subset. Coverage counts only the draws whose truth
    lies within the clocks the rule searches (:func:`_searchable`); blank where none does."""
    if n_sims < 1:
        raise ValueError(f"n_sims must be >= 1, got {n_sims}")
    rows = []
    for k, d in enumerate(designs(design)):
        if designs_of is None or any(part in d.name for part in designs_of):  # each design its own stream: a subset gives the same rows
            rows += design_rows(d, n_sims, np.random.default_rng([rng_seed, k]), draws, rules, truth_names, label=f"{design}: ")
    return rows
