"""Whether one optimizer's curves across learning rates and batch sizes align in the paper's clock."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np

from initmem.claims.verdicts import BETA_FLOOR, INCONCLUSIVE, NOT_REPRODUCED, NULL_RNG_SEED, REPRODUCED, Cell, seeds_of

# A pair of curves is compared only where each has at least MIN_OVERLAP of its epochs
# inside the range of the paper's clock the two share (and >= 2 epochs each).
MIN_OVERLAP = 0.25
EXPONENT_GRID = np.round(np.arange(-1.0, 3.0001, 0.1), 10)
EXPONENT_DRAWS = 200


def log_abs_beta(slopes: np.ndarray, floor: float = BETA_FLOOR) -> np.ndarray:
    """log10 |beta|, floored at ``floor`` (below the noise floor every value means the same)."""
    return np.log10(np.maximum(np.abs(slopes), floor))


def _coordinate(cell: Cell, name: str) -> np.ndarray:
    return cell.epochs if name == "epoch" else cell.clocks.get(name, np.full(len(cell.epochs), np.nan))


def _partner(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Rows of ``y`` (on increasing ``x``) interpolated at ``at``, beyond the ends their end values."""
    at = np.clip(at, x[0], x[-1])
    i = np.clip(np.searchsorted(x, at, side="right") - 1, 0, len(x) - 2)
    w = (at - x[i]) / (x[i + 1] - x[i])
    return y[:, i] * (1 - w) + y[:, i + 1] * w


def collapse(cells: Sequence[Cell], curves: Sequence[np.ndarray], clock: str, nulls: Sequence[str]) -> dict:
    """How much closer the ``curves`` of different configurations lie against ``clock`` than
    against each null coordinate, compared over the same stretch of the curves.

    For each pair of cells: the *stretch* is the epochs of each curve that fall in the range of
    ``clock`` the two share; the pair is kept when each curve has >= :data:`MIN_OVERLAP` of its
    epochs (and >= 2) in it, else left out with the reason. Under every coordinate (``clock`` and
    each of ``nulls``: ``epoch``, ``steps``, another clock) the distance of a pair is the mean over
    the stretch's points of both curves of |y - the other curve at the same coordinate value| (log
    coordinates; beyond the other curve's range, its end value: this favours the nulls). A null a
    cell lacks (or that does not increase in it) is left out of that cell's pairs, and said so.

    Returns ``kept`` and ``omitted`` (pairs, with reasons), ``distance`` (coordinate -> replicate
    array, mean over the pairs it was measured on), ``margin_by_null`` (null -> replicates: the mean
    over those pairs of its distance minus the clock's) and ``margin`` (the smallest of them: > 0
    when the clock beats every null)."""
    valid = []
    for c in cells:
        xs = {k: _coordinate(c, k) for k in (clock, *nulls)}
        usable = {k: x for k, x in xs.items() if k == clock or (np.isfinite(x).any() and (x[np.isfinite(x)] > 0).all())}
        ok = np.all([np.isfinite(x) & (x > 0) for x in usable.values()], axis=0)
        logs = {k: np.log(x[ok]) for k, x in usable.items()}
        valid.append({k: v for k, v in logs.items() if k == clock or np.all(np.diff(v) > 0)} | {"ok": ok})
    kept, omitted, per_pair = [], [], []
    for (i, a), (j, b) in itertools.combinations(enumerate(cells), 2):
        va, vb = valid[i], valid[j]
        name = f"{a.label or i} / {b.label or j}"
        ra, rb = va[clock], vb[clock]
        if len(ra) < 2 or len(rb) < 2 or np.any(np.diff(ra) <= 0) or np.any(np.diff(rb) <= 0):
            omitted.append(f"{name}: {clock} missing or not increasing")
            continue
        lo, hi = max(ra[0], rb[0]), min(ra[-1], rb[-1])
        in_a, in_b = (ra >= lo) & (ra <= hi), (rb >= lo) & (rb <= hi)
        share = min(in_a.mean(), in_b.mean())
        if share < MIN_OVERLAP or in_a.sum() < 2 or in_b.sum() < 2:
            omitted.append(f"{name}: {share:.0%} of a curve in the shared {clock} range (minimum {MIN_OVERLAP:.0%})")
            continue
        ya, yb = curves[i][:, va["ok"]], curves[j][:, vb["ok"]]
        pair = {}
        for k in (clock, *nulls):
            if k in va and k in vb:
                xa, xb = va[k], vb[k]
                d = np.concatenate([np.abs(ya[:, in_a] - _partner(xb, yb, xa[in_a])),
                                    np.abs(yb[:, in_b] - _partner(xa, ya, xb[in_b]))], axis=1)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    pair[k] = np.nanmean(d, axis=1)
            else:
                omitted.append(f"{name}: no usable {k}")
        kept.append(name)
        per_pair.append(pair)
    distance = {k: np.mean([p[k] for p in per_pair if k in p], axis=0) for k in (clock, *nulls) if any(k in p for p in per_pair)}
    by_null = {k: np.mean([p[k] - p[clock] for p in per_pair if k in p], axis=0) for k in nulls if k in distance}
    out = {"kept": kept, "omitted": omitted, "distance": distance, "margin_by_null": by_null}
    if by_null:
        out["margin"] = np.min(list(by_null.values()), axis=0)
    return out


# --- the clock's exponent ----------------------------------------------------------------------

def exponent_coordinate(cell: Cell, clock: str, lr: float, paper_p: float, p: float) -> np.ndarray:
    """The clock with the learning rate's exponent ``p`` in place of the paper's ``paper_p``:
    ``clock`` x lr^(p - paper_p) (T_adapt = K eta -> K eta^p; T_SGD = K eta^2 / b -> K eta^p / b).
    The schedule's shape stays in it; p = 0 is the schedule-weighted step count."""
    return _coordinate(cell, clock) * float(lr) ** (p - paper_p)


def exponent_scan(cells: Sequence[Cell], curves: Sequence[np.ndarray], clock: str, lrs: Sequence[float], paper_p: float,
                  grid: np.ndarray = EXPONENT_GRID) -> dict:
    """Mean distance between the ``curves`` (replicate rows) of different configurations against
    the clock with each exponent of ``grid`` (:func:`exponent_coordinate`), every exponent compared
    over the same stretch of each pair (where the two share the paper's clock range: :func:`collapse`).

    Returns ``distance`` (exponent index -> replicate array), ``best`` (the exponent of least distance
    per replicate), ``kept`` and ``omitted`` (pairs, with reasons)."""
    names = [f"p={p:.6g}" for p in grid]
    scanned = []
    for c, lr in zip(cells, lrs, strict=True):
        coords = dict(c.clocks) | {n: exponent_coordinate(c, clock, lr, paper_p, p) for n, p in zip(names, grid, strict=True)}
        scanned.append(Cell(c.key, c.sigmas, c.seeds, c.values, c.epochs, coords, c.fit, c.label, c.config))
    out = collapse(scanned, curves, clock, names)
    d = out["distance"]
    if not all(n in d for n in names):
        return {"kept": out["kept"], "omitted": out["omitted"], "distance": {}, "best": None}
    table = np.stack([d[n] for n in names], axis=0)  # (exponent, replicate)
    table = np.where(np.isfinite(table), table, np.inf)
    omitted = [o for o in out["omitted"] if "no usable p=" not in o]
    if not np.ptp(table[:, 0]) > 1e-12:  # every kept pair shares one learning rate: p changes nothing
        return {"kept": out["kept"], "omitted": omitted + ["no kept pair spans two learning rates"], "distance": table, "best": None}
    return {"kept": out["kept"], "omitted": omitted, "distance": table, "best": np.asarray(grid)[np.argmin(table, axis=0)]}


def seed_bootstrap(cells: Sequence[Cell], draws: int = EXPONENT_DRAWS, rng_seed: int = NULL_RNG_SEED) -> list[list[Cell]]:
    """``draws`` resamples of the seeds with replacement, paired across the cells (one draw picks the
    same seed labels in every cell that has them; a fixed RNG seed: the same draws every run)."""
    seeds = seeds_of(cells)
    rng = np.random.default_rng(rng_seed)
    out = []
    for _ in range(draws):
        pick = rng.choice(len(seeds), len(seeds), replace=True)
        drawn = []
        for c in cells:
            idx = [int(np.flatnonzero(c.seeds == seeds[i])[0]) for i in pick if np.any(c.seeds == seeds[i])]
            idx = idx or list(range(c.n_seeds))
            drawn.append(Cell(c.key, c.sigmas, c.seeds[idx], c.values[..., idx], c.epochs, c.clocks, c.fit, c.label, c.config))
        out.append(drawn)
    return out


def exponent_verdict(low: float, high: float, paper_p: float) -> str:
    """``reproduced`` when the exponent's interval contains the paper's and excludes raw steps (p = 0);
    ``not reproduced`` when it excludes the paper's; else ``inconclusive``."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return INCONCLUSIVE
    if not low <= paper_p <= high:
        return NOT_REPRODUCED
    return REPRODUCED if low > 0 else INCONCLUSIVE


