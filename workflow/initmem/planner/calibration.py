"""The spread and |beta| shape rules' error rates, measured: known truths simulated at a design and
read by the rules the claims table uses (``benchmarks/verdict_calibration.py`` prints them).

A *design* is a sigma_w grid, a number of seeds, a run noise and a run length: each committed tier's
(read from its ``runs.csv``: every distinct grid of its configurations, the median residual noise of
the seed-blocked model over its configurations, its epochs) and the paper's (25 sigma_w from 0.1 to
2.5, 10 seeds, 300 epochs; the paper states no seed noise: :data:`PAPER_NOISE` is assumed).

A row per rule, design and truth (:data:`ROW_KEYS`): ``false_reproduced`` (the share of
``reproduced`` where the truth is against the claim; NaN where it is for it), ``false_not_reproduced``
(the share of ``not reproduced`` where the truth is for it), ``coverage`` (the share of intervals
holding the true value, where the statistic has one) and ``decision_rate`` (``reproduced`` or ``not
reproduced``). Simulated runs: the truth's means plus a seed effect shared by every sigma_w plus
normal run noise (per epoch, for curves: independent, or, at a ``-ar1`` design, persisting along each run
as an AR(1) whose lag-1 autocorrelation is the tier's own, :func:`persistence`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from initmem import paper as published
from initmem import paths, tiers
from initmem.claims.clock import RETAINED
from initmem.stats import shapes as Sh
from initmem.stats.power import jackknife_arrays, side_codes, simulate
from initmem.stats.spreads import contrast_arrays, residual_sd, spread_arrays
from initmem.stats.verdicts import NOT_REPRODUCED, REPRODUCED, Cell, greater, less

ROW_KEYS = ("rule", "design", "truth", "n_sims", "false_reproduced", "false_not_reproduced", "coverage", "decision_rate")
EVIDENCE = paths.EVIDENCE
TIERS = {t.name: t.folder for t in tiers.tiers()}   # short name -> folder under evidence/ (initmem.tiers, in the tiers' order)
AR1 = "-ar1"  # a tier's designs with its run noise persisting along epochs: "selected-tier-ar1"
OFFSET = "-offset"  # ... with its measured per-run offset and an AR(1) of the rest: "selected-tier-offset"
HEAVY = "-t3"  # ... with heavy-tailed run noise (Student t, 3 degrees of freedom, the same sd)
PAPER_SIGMAS = tuple(np.round(np.arange(0.1, 2.5001, 0.1), 10))
PAPER_SEEDS, PAPER_EPOCHS, PAPER_NOISE = published.MAIN_SEEDS, published.MAIN_EPOCHS, 0.005  # the noise: an assumption
SEED_SD = 0.05   # the seed effect shared by every sigma_w of a seed (every rule must cancel it)
# the paper's spreads (Tables 1 and 4): L2 repair, Adam b=16 and b=128, SGD b=16 and b=128
_ADAM16, _ADAM128, _ADAM256 = (published.spread(optimizer="adam", batch_size=b) for b in (16, 128, 256))
_SGD16, _SGD128, _SGD256 = (published.spread(batch_size=b) for b in (16, 128, 256))
SPREADS_PP = (published.spread(lr=1e-2, l2=1e-2, batch_size=16), _ADAM16, _ADAM128, _SGD16, _SGD128)


@dataclass(frozen=True)
class Design:
    """One grid to simulate: ``sigmas``, ``seeds``, run ``noise`` (fraction), ``epochs`` (curves)."""

    name: str
    sigmas: tuple[float, ...]
    seeds: int
    noise: float
    epochs: int
    persistence: float = 0.0   # the lag-1 autocorrelation of a run's noise along its epochs (0: independent)
    offset: float = 0.0        # the share of the run noise's variance that is one constant per run (its offset)
    tails: float = math.inf    # Student t degrees of freedom of the run noise (inf: normal)


def persistence(history: pd.DataFrame) -> float:
    """How a run's validation-accuracy noise persists along its epochs: per run, its validation accuracy
    minus the mean over its configuration's seeds at that sigma_w and epoch (the noise about the true
    curve), after the run's first tenth (the shape rules leave it out); the lag-1 autocorrelation of that
    series (statsmodels' ``acf``); the median over runs (an AR(1) coefficient)."""
    from statsmodels.tsa.stattools import acf

    noise = run_noise(history)
    lag1 = [acf(x.to_numpy(float), nlags=1, fft=False)[1] for _, x in noise.groupby(noise.index.get_level_values("run_id"))
            if len(x) > 2 and np.ptp(x) > 0]
    return float(np.median(lag1))


def run_noise(history: pd.DataFrame) -> pd.Series:
    """Each run's validation accuracy minus the mean over its configuration's seeds at that sigma_w and
    epoch (the noise about the true curve), after the run's first tenth; indexed by run_id."""
    keys = [k for k in ("study", "optimizer", "batch_size", "lr", "l2", "epochs", "sigma_w") if k in history]
    h = history[history["epoch"] > history["epochs"] / 10]
    noise = h["val_acc"] - h.groupby([*keys, "epoch"], dropna=False)["val_acc"].transform("mean")
    return noise.set_axis(pd.Index(h["run_id"], name="run_id"))


def noise_parts(history: pd.DataFrame) -> tuple[float, float]:
    """How a run's validation-accuracy noise (as :func:`persistence` reads it) splits: the share of its
    variance that is one offset per run (the variance of each run's mean noise over the pooled variance),
    and the lag-1 autocorrelation of what is left about that offset (:func:`persistence`: ``acf``
    removes each run's mean)."""
    noise = run_noise(history)
    offsets = noise.groupby(level="run_id").transform("mean")
    share = float(offsets.var() / noise.var()) if noise.var() > 0 else 0.0
    return share, persistence(history)


def _tier(name: str) -> list[Design]:
    if name.endswith(OFFSET):
        base = name.removesuffix(OFFSET)
        share, phi = noise_parts(pd.read_csv(EVIDENCE / TIERS[base] / "tables" / "history.csv.gz"))
        return [Design(f"{d.name}, {share:.0%} of the noise a per-run offset, AR(1) {phi:.2f} of the rest", d.sigmas, d.seeds, d.noise,
                       d.epochs, phi, share) for d in _tier(base)]
    if name.endswith(HEAVY):
        base = name.removesuffix(HEAVY)
        return [Design(f"{d.name}, Student t noise (3 df)", d.sigmas, d.seeds, d.noise, d.epochs, tails=3.0) for d in _tier(base)]
    if name.endswith(AR1):
        base = name.removesuffix(AR1)
        phi = persistence(pd.read_csv(EVIDENCE / TIERS[base] / "tables" / "history.csv.gz"))
        return [Design(f"{d.name}, AR(1) {phi:.2f} along epochs", d.sigmas, d.seeds, d.noise, d.epochs, phi) for d in _tier(base)]
    runs = pd.read_csv(EVIDENCE / TIERS[name] / "tables" / "runs.csv")
    keys = [k for k in ("study", "optimizer", "batch_size", "lr", "l2", "epochs") if k in runs]
    grids, noise = {}, []
    for _, g in runs.groupby(keys, dropna=False):
        grid = g.pivot_table(index="sigma_w", columns="seed", values="test_acc_best")
        noise.append(float(residual_sd(grid.to_numpy(float))))
        grids.setdefault((tuple(grid.index), grid.shape[1]), int(g["epochs"].max()))
    sd = float(np.nanmedian(noise))
    return [Design(f"{name}: {len(s)} sigma_w x {n} seeds, noise {100 * sd:.2g} pp", s, n, sd, e) for (s, n), e in sorted(grids.items())]


def designs(name: str) -> list[Design]:
    """The designs of ``name``: a committed tier's (:data:`TIERS`, read from its runs) or 'paper'."""
    if name == "paper":
        return [Design(f"paper: 25 sigma_w x {PAPER_SEEDS} seeds, noise {100 * PAPER_NOISE:g} pp (assumed)", PAPER_SIGMAS, PAPER_SEEDS,
                       PAPER_NOISE, PAPER_EPOCHS)]
    if name.removesuffix(AR1).removesuffix(OFFSET).removesuffix(HEAVY) not in TIERS:
        raise ValueError(f"unknown calibration design {name!r}: expected one of {', '.join([*TIERS, 'paper'])} (a tier's name + "
                         f"{AR1!r}: its noise persisting along epochs)")
    return _tier(name)


def _row(rule: str, design: Design, truth: str, claim_true: bool | None, codes: np.ndarray, covered: np.ndarray | None) -> dict:
    """One calibration row; ``claim_true`` None: a truth on the boundary, where either decision is false."""
    rep, nrep = np.mean(codes == 1), np.mean(codes == -1)
    return {"rule": rule, "design": design.name, "truth": truth, "n_sims": int(len(codes)),
            "false_reproduced": math.nan if claim_true else float(rep),
            "false_not_reproduced": math.nan if claim_true is False else float(nrep),
            "coverage": float(np.mean(covered)) if covered is not None else math.nan, "decision_rate": float(rep + nrep)}


def _draw(means: np.ndarray, sd, seeds: int, n_sims: int, rng: np.random.Generator) -> np.ndarray:
    """(n_sims, k, seeds): :func:`initmem.stats.power.simulate` plus a seed effect shared by every sigma_w."""
    return simulate(means, sd, seeds, n_sims, rng) + SEED_SD * rng.standard_normal((n_sims, 1, seeds))


def linear(design: Design, spread_pp: float, base: float = 0.8) -> np.ndarray:
    """Means falling linearly with sigma_w by ``spread_pp`` over the grid (the paper's direction)."""
    s = np.asarray(design.sigmas, float)
    return base - spread_pp / 100 * (s - s.min()) / max(np.ptp(s), 1e-12)


def hump(design: Design, spread_pp: float, base: float = 0.8) -> np.ndarray:
    """Means lowest in the middle of the grid, equal at its ends (a spread the end values do not show)."""
    s = np.asarray(design.sigmas, float)
    u = (s - s.min()) / max(np.ptp(s), 1e-12)
    return base - spread_pp / 100 * (1 - np.abs(2 * u - 1)) if len(s) > 2 else base - spread_pp / 100 * (s == s.max())


def bump(design: Design, spread_pp: float, up: bool = True, base: float = 0.8) -> np.ndarray:
    """Means equal at the grid's ends and highest (``up``: a peak) or lowest (a dip) at its middle, a
    triangle scaled so that max - min over the grid is ``spread_pp`` (a spread the end values do not show)."""
    s = np.asarray(design.sigmas, float)
    tri = 1 - np.abs(2 * (s - s.min()) / max(np.ptp(s), 1e-12) - 1)
    return base + (1 if up else -1) * spread_pp / 100 * tri / max(tri.max(), 1e-12)


def non_monotone_pairs(design: Design) -> list[tuple[str, np.ndarray, np.ndarray, bool]]:
    """Contrast truths whose a or b is a peak or a dip (max - min is the spread, the end values show
    none of it), both directions of "a's spread exceeds b's": (truth, means a, means b, claim true?).
    None on a grid of 2 sigma_w (no interior point: every profile over it is monotone)."""
    if len(design.sigmas) < 3:
        return []
    big, small, least = _SGD16, _ADAM128, _ADAM16
    out = []
    for up, shape in ((True, "peak"), (False, "dip")):
        out += [(f"{shape} {big:g} / linear {small:g} pp (ends equal: a's drop 0)", bump(design, big, up), linear(design, small), True),
                (f"linear {small:g} / {shape} {big:g} pp (ends equal: b's drop 0)", linear(design, small), bump(design, big, up), False),
                (f"{shape} {small:g} / linear {least:g} pp", bump(design, small, up), linear(design, least), True),
                (f"linear {least:g} / {shape} {small:g} pp", linear(design, least), bump(design, small, up), False)]
    return out


def _sd_rising(design: Design, factor: float) -> np.ndarray:
    """Run noise growing linearly with sigma_w from the design's noise to ``factor`` x it (a noise-only effect)."""
    s = np.asarray(design.sigmas, float)
    return design.noise * (1 + (factor - 1) * (s - s.min()) / max(np.ptp(s), 1e-12))


def spread_rows(design_name: str, n_sims: int, rng_seed: int) -> list[dict]:
    """Rows for the single-spread rules (``spread_nonzero``: sigma_w matters, the spread rows' p;
    ``spread_below_1pp``: the "collapses below 1 pp" rows) and the seed-paired spread contrast
    (``spread_contrast``: a's spread exceeds b's, :func:`initmem.stats.spreads.contrast_arrays`, max - min
    in both cells; its truths include peaks and dips: :func:`non_monotone_pairs`), and a contrast of accuracies (the paired t-interval of
    :func:`initmem.stats.verdicts.estimate`)."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for d in designs(design_name):
        flat = linear(d, 0.0)
        single = [("null: sigma_w does nothing", flat, d.noise, 0.0),
                  ("null: sigma_w changes only the variance (noise x1 to x4)", flat, _sd_rising(d, 4.0), 0.0),
                  *[(f"linear {e:g} pp", linear(d, e), d.noise, e) for e in SPREADS_PP],
                  ("hump 4.3 pp (ends equal)", hump(d, 4.3), d.noise, 4.3)]
        for truth, means, sd, true_pp in single:
            s = spread_arrays(_draw(means, sd, d.seeds, n_sims, rng))
            covered = (s["low"] <= true_pp + 1e-9) & (true_pp - 1e-9 <= s["high"])
            out.append(_row("spread_nonzero", d, truth, true_pp > 0, side_codes(s["low"], s["high"], greater(0)), covered))
            if truth.startswith("null: sigma_w changes"):
                continue
            out.append(_row("spread_below_1pp", d, truth, true_pp < 1, side_codes(s["low"], s["high"], less(1.0)), covered))
        boundary = spread_arrays(_draw(linear(d, 1.0), d.noise, d.seeds, n_sims, rng))
        out.append(_row("spread_below_1pp", d, "linear 1 pp (the boundary)", False, side_codes(boundary["low"], boundary["high"], less(1.0)),
                        (boundary["low"] <= 1) & (1 <= boundary["high"])))
        pairs = [(f"null: equal spreads {_ADAM128:g} / {_ADAM128:g} pp", _ADAM128, _ADAM128, None),
                 (f"null: equal spreads {_SGD16:g} / {_SGD16:g} pp", _SGD16, _SGD16, None),
                 ("null: both 0 pp, a's noise x1 to x4", 0.0, 0.0, _sd_rising(d, 4.0)),
                 (f"reversed: {_ADAM16:g} / {_ADAM128:g} pp", _ADAM16, _ADAM128, None),
                 (f"SGD / Adam b=16: {_SGD16:g} / {_ADAM16:g} pp", _SGD16, _ADAM16, None),
                 (f"SGD / Adam b=128: {_SGD128:g} / {_ADAM128:g} pp", _SGD128, _ADAM128, None),
                 (f"Adam b=256 / b=16: {_ADAM256:g} / {_ADAM16:g} pp", _ADAM256, _ADAM16, None),
                 (f"SGD b=256 / b=16: {_SGD256:g} / {_SGD16:g} pp", _SGD256, _SGD16, None)]
        for truth, sa, sb, sd_a in pairs:
            a = _draw(linear(d, sa), d.noise if sd_a is None else sd_a, d.seeds, n_sims, rng)
            b = _draw(linear(d, sb), d.noise, d.seeds, n_sims, rng)
            _, low, high = contrast_arrays(a, b)
            true = sa - sb
            out.append(_row("spread_contrast", d, truth, true > 0, side_codes(low, high, greater(0)), (low <= true) & (true <= high)))
        for truth, ma, mb, claim_true in non_monotone_pairs(d):
            a, b = _draw(ma, d.noise, d.seeds, n_sims, rng), _draw(mb, d.noise, d.seeds, n_sims, rng)
            _, low, high = contrast_arrays(a, b)
            true = 100 * (np.ptp(ma) - np.ptp(mb))   # max - min of the true means: the paper's spreads
            out.append(_row("spread_contrast", d, truth, claim_true, side_codes(low, high, greater(0)), (low <= true + 1e-9) & (true - 1e-9 <= high)))
        for truth, eff in (("null: equal accuracy", 0.0), ("0.3 pp", 0.3), ("1.6 pp", 1.6)):
            a = _draw(np.full(len(d.sigmas), 0.8), d.noise, d.seeds, n_sims, rng)
            b = _draw(np.full(len(d.sigmas), 0.8 - eff / 100), d.noise, d.seeds, n_sims, rng)
            diff = 100 * (a - b).mean(-2)                        # (sims, seeds): per-seed difference of the sigma_w means
            n = d.seeds
            loo = (diff.sum(-1, keepdims=True) - diff) / (n - 1)
            low, high = jackknife_arrays(diff.mean(-1), loo)
            out.append(_row("accuracy_contrast", d, truth, eff > 0, side_codes(low, high, greater(0)), (low <= eff) & (eff <= high)))
    return out


GONE_TRUTHS_PP = (0.0, 0.5, 1.0, 1.5)   # inside the gone zone, on its edge, above it


def gone_rows(design_name: str, n_sims: int, rng_seed: int) -> list[dict]:
    """Rows for ``spread_gone``: the spread rows whose side names a zone where the spread is gone
    (:data:`initmem.claims.clock.RETAINED`, "> 1 (not reproduced within [0, 1): gone)"), read both ways by
    the claims table's own rule (:func:`initmem.stats.power.side_codes` on
    :func:`initmem.stats.spreads.spread_arrays`) under linear truths of :data:`GONE_TRUTHS_PP`: below the
    edge a ``reproduced`` is false, above it a ``not reproduced``, and on the edge (1 pp) either is."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for d in designs(design_name):
        for true_pp in GONE_TRUTHS_PP:
            s = spread_arrays(_draw(linear(d, true_pp), d.noise, d.seeds, n_sims, rng))
            covered = (s["low"] <= true_pp + 1e-9) & (true_pp - 1e-9 <= s["high"])
            edge = math.isclose(true_pp, RETAINED.gone)
            claim = None if edge else true_pp > RETAINED.gone
            truth = f"linear {true_pp:g} pp" + (" (the zone's edge)" if edge else (" (above the zone)" if claim else " (gone)"))
            out.append(_row("spread_gone", d, truth, claim, side_codes(s["low"], s["high"], RETAINED), covered))
    return out


WASH_OUT_TRUTHS = (0.07, 0.25, 0.5, 0.77, 1.0, 1.3)   # the adaptive spread as a share of SGD's: the paper's, inside, the edge, ...


def wash_out_rows(design_name: str, n_sims: int, rng_seed: int) -> list[dict]:
    """Rows for ``wash_out``: "Adam-family methods largely wash out initialization scale" read as the claims
    table reads it (:func:`initmem.claims.catalogue.optimizers.washes_out_row`): the direction and the size
    contrasts (:func:`initmem.stats.spreads.contrast_arrays`, the size on SGD's values scaled by
    :data:`~initmem.claims.catalogue.optimizers.WASH_OUT_SHARE`) combined by
    :func:`initmem.stats.verdicts.sentence_verdict`; ``not reproduced`` counts ``direction only`` too (both
    deny the sentence). Truths: SGD's b=16 spread with the adaptive one at each share of
    :data:`WASH_OUT_TRUTHS` (the paper's 7%, below the edge, the edge, the selected tier's 77%, equal, reversed)
    and at the edge with the adaptive noise rising x1 to x4 over sigma_w; coverage is the size interval's."""
    from initmem.claims.catalogue.optimizers import WASH_OUT_SHARE, WASHED_OUT
    from initmem.stats.verdicts import DIRECTION_ONLY, INCONCLUSIVE, ONE_SEED, sentence_verdict

    words = {1: REPRODUCED, -1: NOT_REPRODUCED, 0: INCONCLUSIVE}
    codes_of = {REPRODUCED: 1, NOT_REPRODUCED: -1, DIRECTION_ONLY: -1, INCONCLUSIVE: 0, ONE_SEED: 0}
    rng = np.random.default_rng(rng_seed)
    out = []
    for d in designs(design_name):
        truths = [(share, d.noise, "") for share in WASH_OUT_TRUTHS] + [(WASH_OUT_SHARE, _sd_rising(d, 4.0), ", adaptive noise x1 to x4")]
        for share, sd_b, extra in truths:
            a = _draw(linear(d, _SGD16), d.noise, d.seeds, n_sims, rng)
            b = _draw(linear(d, share * _SGD16), sd_b, d.seeds, n_sims, rng)
            _, dlo, dhi = contrast_arrays(a, b)
            _, slo, shi = contrast_arrays(WASH_OUT_SHARE * a, b)
            parts = zip(side_codes(dlo, dhi, greater(0)), side_codes(slo, shi, WASHED_OUT), strict=True)
            codes = np.array([codes_of[sentence_verdict(words[int(x)], words[int(y)])] for x, y in parts])
            true = (WASH_OUT_SHARE - share) * _SGD16
            edge = math.isclose(share, WASH_OUT_SHARE)
            truth = (f"SGD {_SGD16:g} pp, adaptive {share:.0%} of it{extra}"
                     + (" (the edge)" if edge else " (washed out)" if share < WASH_OUT_SHARE else " (kept)"))
            out.append(_row("wash_out", d, truth, None if edge else share < WASH_OUT_SHARE, codes, (slo <= true + 1e-9) & (true - 1e-9 <= shi)))
    return out


# --- |beta(t)| shapes ----------------------------------------------------------------------------

BETA_LEVEL = 0.1   # the paper's SGD |beta| ("flat near 1e-1")


def beta_truths() -> dict[str, tuple[Callable[[np.ndarray], np.ndarray], bool, bool]]:
    """name -> (|beta| at run fraction t, flat claim true?, decay claim true?); None: not asked of that rule.

    A rise of one order and a fall back (the hump) is a one-order fall from a level held over two
    tenths, which the decay rule counts as a decay (the paper's adaptive curves rise from ~0 at
    initialization before they fall); the flat rule must reject it. A one-tenth spike is no held level."""
    bump = lambda t: np.exp(-((t - 0.5) / 0.12) ** 2)
    def spike(t):
        out = np.full_like(t, BETA_LEVEL)
        out[(t >= 0.5) & (t < 0.6)] *= 10
        return out
    return {"flat": (lambda t: np.full_like(t, BETA_LEVEL), True, False),
            "fall 0.5 orders": (lambda t: BETA_LEVEL * 10 ** (-0.5 * t), None, False),
            "fall 1 order": (lambda t: BETA_LEVEL * 10 ** (-1.0 * t), False, True),
            "fall 2 orders": (lambda t: BETA_LEVEL * 10 ** (-2.0 * t), False, True),
            "rise and fall of 1 order (hump)": (lambda t: BETA_LEVEL * 10 ** bump(t) / 10, False, True),
            "spike x10 in one tenth": (spike, None, False)}


def epoch_noise(design: Design, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Run noise of sd ``design.noise`` over (epochs, ...): independent per epoch, or a stationary AR(1)
    along the first axis with coefficient ``design.persistence`` (the same draws either way); with
    ``design.offset``, that share of its variance one constant per run (drawn after, so the designs
    without one keep their draws); with finite ``design.tails``, Student t draws of unit variance."""
    if math.isfinite(design.tails):
        df = design.tails
        z = rng.standard_t(df, shape) * math.sqrt((df - 2) / df)
    else:
        z = rng.standard_normal(shape)
    phi = design.persistence
    if phi:
        scale = math.sqrt(1 - phi ** 2)
        for t in range(1, shape[0]):
            z[t] = phi * z[t - 1] + scale * z[t]
    if design.offset:
        z = math.sqrt(1 - design.offset) * z + math.sqrt(design.offset) * rng.standard_normal(shape[1:])[None]
    return design.noise * z


def beta_cell(design: Design, beta: np.ndarray, rng: np.random.Generator) -> Cell:
    """A curve cell: validation accuracy 0.7 - |beta(t)| sigma_w + a seed effect + run noise along the epochs (:func:`epoch_noise`)."""
    s = np.asarray(design.sigmas, float)
    e = np.arange(1, design.epochs + 1, dtype=float)
    values = (0.7 - beta[:, None, None] * s[None, :, None] + SEED_SD * rng.standard_normal((1, 1, design.seeds))
              + epoch_noise(design, (len(e), len(s), design.seeds), rng))
    return Cell("sim", s, np.arange(design.seeds), values, e, {"epoch": e})


def beta_cells(design: Design, beta: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """(m, epochs, sigma_w, seeds): the values of ``m`` successive :func:`beta_cell` draws, the same numbers
    from the same stream; a design of independent normal noise draws them in one block."""
    if design.persistence or design.offset or math.isfinite(design.tails):
        return np.stack([beta_cell(design, beta, rng).values for _ in range(m)])
    s, n, k, epochs = np.asarray(design.sigmas, float), design.seeds, len(design.sigmas), design.epochs
    z = rng.standard_normal((m, n + epochs * k * n))  # per cell: its seed effects, then its run noise (beta_cell's order)
    seed, noise = z[:, :n].reshape(m, 1, 1, n), z[:, n:].reshape(m, epochs, k, n)
    return 0.7 - beta[None, :, None, None] * s[None, None, :, None] + SEED_SD * seed + design.noise * noise


def _code(v: str) -> int:
    return 1 if v == REPRODUCED else (-1 if v == NOT_REPRODUCED else 0)


def shape_rows(design_name: str, n_sims: int, rng_seed: int) -> list[dict]:
    """Rows for ``beta_flat`` (:func:`initmem.stats.shapes.flat_decision`) and ``beta_decay``
    (:func:`initmem.stats.shapes.decay_decision`, the floor not enough) over :func:`beta_truths`.
    No coverage: the statistics are read on noisy window means floored at the noise floor, which
    have no noise-free value to cover."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for d in designs(design_name):
        t = (np.arange(1, d.epochs + 1) - 1) / max(d.epochs - 1, 1)
        for truth, (f, flat_true, decay_true) in beta_truths().items():
            beta = f(t)
            flat, decay = [], []
            for _ in range(n_sims):
                cell = beta_cell(d, beta, rng)
                if flat_true is not None:
                    flat.append(_code(Sh.flat_decision(cell)[0]))
                decay.append(_code(Sh.decay_decision(cell, floor_is_enough=False)[0]))
            if flat_true is not None:
                out.append(_row("beta_flat", d, truth, flat_true, np.asarray(flat), None))
            out.append(_row("beta_decay", d, truth, decay_true, np.asarray(decay), None))
    return out


def flat_edge(sign: float, epochs: int) -> np.ndarray:
    """|beta| log-linear in the run whose noise-free flat statistic (:attr:`initmem.stats.shapes.Shape.change`,
    read on the settled windows) is exactly ``sign`` x :data:`~initmem.stats.shapes.FLAT_ORDERS`: the rule's edge."""
    from scipy import optimize

    t = (np.arange(1, epochs + 1) - 1) / max(epochs - 1, 1)
    e = np.arange(1, epochs + 1, dtype=float)
    change = lambda s: float(Sh.Shape(Sh.window_means(BETA_LEVEL * 10 ** (sign * s * t)[None, :], e), np.zeros(1)).change[0])
    slope = optimize.brentq(lambda s: abs(change(s)) - Sh.FLAT_ORDERS, 0.1, 5.0, xtol=1e-12)
    return BETA_LEVEL * 10 ** (sign * slope * t)


def flat_edge_rows(design_name: str, n_sims: int, rng_seed: int) -> list[dict]:
    """Rows for ``beta_flat`` at its margin's edges: |beta| rising, and falling, by exactly
    :data:`~initmem.stats.shapes.FLAT_ORDERS` over the settled windows (:func:`flat_edge`), where either
    decision is false; read by the claims table's rule (:func:`initmem.stats.shapes.flat_decision`)."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for d in designs(design_name):
        for sign, word in ((1.0, "rise"), (-1.0, "fall")):
            beta = flat_edge(sign, d.epochs)
            codes = np.asarray([_code(Sh.flat_decision(beta_cell(d, beta, rng))[0]) for _ in range(n_sims)])
            out.append(_row("beta_flat", d, f"{word} of {Sh.FLAT_ORDERS:g} orders over the settled run (the margin's edge)", None, codes, None))
    return out
