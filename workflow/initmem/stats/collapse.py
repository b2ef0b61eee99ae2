"""Which clock one optimizer's curves align in: the exponents of K eta^p b^q, measured.

**The clock family.** A configuration (learning rate eta, batch size b) that has taken K steps is at
clock K eta^p b^q; under a schedule, K eta stands for the schedule's sum of eta_k, so the family is
read off the run's recorded paper clock: ``clock x eta^(p - p0) x b^(q - q0)``. The paper's clocks
are T_adapt (p, q) = (1, 0) (sum of eta over the steps) and T_SGD (2, -1); the epoch clock
steps x b / n is (0, 1) (:data:`CLOCKS`).

**The estimate** (hand-written: no library has this rule, the collapse). Each configuration's curve
(log10 |beta| or the spread, one value per epoch) is modelled as one shared smooth function of the
log clock, a cubic B-spline with knots :data:`KNOT_WIDTH` apart over the pooled range, plus noise;
(p, q) minimise the profile residual sum of squares (variable projection: for fixed exponents the
spline is an ordinary least-squares fit). Only the exponents the design moves are estimated: the
clock shifts a configuration's log clock by (p, q) . (log eta, log b), so a common shift is absorbed
by the spline and the identifiable part is the span of the centred (log eta, log b) of the
configurations (one lr: q only; one b: p only; lr proportional to b: only p + q). The rest stays at
the paper's values. Exponents under which the configurations' curves do not overlap in clock (each
pair kept when the log-clock range the two share is >= :data:`MIN_OVERLAP` of each one's range, and
the kept pairs join the configurations) are left out of the search: a curve that shares no clock
range with the others can be fitted on its own under any clock.

**The interval** is a percentile interval of the estimate over :data:`DRAWS` resamples, at
:data:`LEVEL` jointly (Bonferroni: each of two exponents at 1 - (1 - LEVEL) / 2). An end that reaches
the limit of the clocks searched (where the curves stop overlapping, or the search box) is open
(infinite): the data say only that the exponent lies at or beyond that limit, since a clock past it
cannot be fitted by alignment at all. A seed bootstrap
(seeds paired across configurations) needs :data:`MIN_SEEDS_PERCENTILE` seeds (with 3 seeds the 200
draws are 10 distinct seed multisets); from :data:`MIN_SEEDS_MODEL` to fewer than that the resampling is model-based: each configuration's seed means plus
its own residual runs' epoch paths with random signs (:func:`_wild_runs`), the curves recomputed from them.

**Groups.** Configurations whose curves share no clock range (e.g. two learning rates far apart)
each have their own spline; where two or more such groups each identify the design's direction on
their own, each is fitted alone (Bonferroni over the groups) and the interval is the hull of theirs,
so groups that follow different clocks widen it instead of being pooled into one exponent that
describes neither; the row names them ("no single clock aligns these curves") where their intervals
are disjoint. A group whose own interval is open has no alignment within it and is not tested.
Every interval is widened by :data:`RESOLUTION` either side (the fit cannot place an exponent closer).

**The verdict** (:func:`collapse_decision`): equivalence both ways, in every identified coordinate,
against the margin :data:`EQUIVALENCE` around the paper's clock (two one-sided tests, TOST, by
:func:`initmem.stats.verdicts.margin_verdict`): ``not identifiable`` where the design cannot tell the
paper's clock from the epoch clock (they project to the same point) or the curves do not overlap;
``inconclusive`` where the interval reaches the limit of the clocks searched (there the curves stop
overlapping and fit apart, which any flat curve does best) or crosses the margin; ``not reproduced``
only where the whole interval lies further than the margin from the paper's clock in some coordinate;
where it lies within the margin (and the epoch clock and the other optimizer's clock outside it)
``reproduced`` if the design identifies every exponent (and every group), else ``partly tested``: the
tested part agrees (the row's statistic_verdict says ``reproduced``), the rest is untested, so a clock
the design cannot see (K eta^2, raw steps at one learning rate) never reads ``reproduced``. The rule's
error rates are measured by :func:`initmem.planner.collapse_calibration.calibration_rows`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from initmem.stats.shapes import log_abs_beta, noise_floor
from initmem.stats.spreads import spread_pp
from initmem.stats.verdicts import (
    INCONCLUSIVE,
    LEVEL,
    NOT_IDENTIFIABLE,
    NOT_REPRODUCED,
    NULL_RNG_SEED,
    PARTLY_TESTED,
    REPRODUCED,
    Cell,
    between,
    margin_verdict,
    seeds_of,
)

CLOCKS = {"T_adapt": (1.0, 0.0), "T_sgd": (2.0, -1.0), "epoch": (0.0, 1.0)}  # (p, q) of K eta^p b^q
OTHER_CLOCK = {"T_adapt": "T_sgd", "T_sgd": "T_adapt"}
NAMES = {"T_adapt": "T_adapt", "T_sgd": "T_SGD", "epoch": "the epoch clock"}
MIN_OVERLAP = 0.25
KNOT_WIDTH = 0.5        # the shared spline's knot spacing in log clock: the same resolution under every clock compared
MAX_POINTS = 60         # points per curve in the fit, evenly spaced in log clock (the early epochs kept)
BOX = ((-1.0, 3.0), (-3.0, 2.0))  # the exponents searched: p, q (every clock compared lies inside)
STEP = 0.1              # the search grid's step (refined by a parabola through the best point's neighbours)
DRAWS = 200
MIN_SEEDS_PERCENTILE = 20
MIN_SEEDS_MODEL = 3     # the model-based interval resamples the residual runs: with 2 seeds each is its partner's mirror image
EQUIVALENCE = 0.5
RESOLUTION = 0.05       # exponents closer than this are one clock: the search's resolution (half its grid step), and the
                        # shared spline never draws a real curve exactly; every interval is widened by it
RIDGE = 1e-9            # keeps the spline's normal equations solvable where a segment has no points


# --- the design -------------------------------------------------------------------------------

@dataclass
class ClockDesign:
    """One optimizer's curves for the fit: per configuration the log of the paper's clock at the
    fitted points (``x``; ``pick`` their indices into the curve), its (log eta, log b), label and
    *group*: the configurations whose curves overlap, directly or through others, under the paper's
    clock (each group has its own shared spline: curves that share no clock range say nothing about
    how they align). ``basis`` (r, 2): the directions in (p, q) the design identifies; ``dropped``:
    why a direction it moves is not tested."""

    clock: str
    x: list[np.ndarray]
    pick: list[np.ndarray]
    z: np.ndarray
    labels: list[str]
    groups: np.ndarray | None = None
    basis: np.ndarray = field(init=False)
    dropped: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.groups is None:
            self.groups = np.zeros(len(self.z), int)
        self.z = np.asarray(self.z, float)
        centred = self.z.copy()
        for g in np.unique(self.groups):
            centred[self.groups == g] -= self.z[self.groups == g].mean(axis=0)
        _, sv, vt = np.linalg.svd(centred, full_matrices=True)
        r = int((sv > 1e-6).sum())
        basis = np.eye(2) if r == 2 else vt[:r]
        if r == 1:
            basis = basis / np.max(np.abs(basis[0])) * np.sign(basis[0, np.argmax(np.abs(basis[0]))])
            basis[np.abs(basis) < 1e-12] = 0.0
        self.basis = basis

    @property
    def rank(self) -> int:
        return len(self.basis)

    @property
    def paper(self) -> np.ndarray:
        return np.asarray(CLOCKS[self.clock])

    def coordinates(self, theta: np.ndarray) -> np.ndarray:
        """(r,) identifiable coordinates of exponents ``theta`` (p, q), relative to the paper's clock
        (least squares onto the basis: for an axis or a unit-normed direction, its component)."""
        d = np.asarray(theta, float) - self.paper
        return np.linalg.lstsq(self.basis.T, d, rcond=None)[0] if self.rank else np.zeros(0)

    def exponents(self, s: np.ndarray) -> np.ndarray:
        """(..., 2) exponents (p, q) of identifiable coordinates ``s`` (..., r)."""
        return self.paper + np.asarray(s) @ self.basis

    def shifts(self, s: np.ndarray) -> np.ndarray:
        """(..., configs) log-clock shift of each configuration at coordinates ``s``."""
        return (np.asarray(s) @ self.basis) @ self.z.T

    def parameter(self) -> str:
        """What the design measures: 'p', 'q', 'p and q' or the combination it moves."""
        if self.rank == 2:
            return "p and q"
        if self.rank == 0:
            return "nothing"
        a, b = self.basis[0]
        return "p" if b == 0 else "q" if a == 0 else f"{a:.3g} p + {b:.3g} q"


def _pair_overlaps(x: list[np.ndarray], shift: np.ndarray) -> np.ndarray:
    """(n, C, C) whether two curves overlap at each of the n ``shift`` rows (n, C): the log-clock range
    the two share is >= MIN_OVERLAP of each one's own range and holds >= 2 points of each."""
    n, C = shift.shape
    adj = np.zeros((n, C, C), bool)
    xs = [np.sort(v) for v in x]
    for i, j in itertools.combinations(range(C), 2):
        xi, xj = xs[i], xs[j]
        if len(xi) < 2 or len(xj) < 2:
            continue
        lo = np.maximum(xi[0] + shift[:, i], xj[0] + shift[:, j])
        hi = np.minimum(xi[-1] + shift[:, i], xj[-1] + shift[:, j])
        ok = hi > lo
        for v, k in ((xi, i), (xj, j)):
            cnt = np.searchsorted(v, hi - shift[:, k] + 1e-12, side="right") - np.searchsorted(v, lo - shift[:, k] - 1e-12, side="left")
            ok &= (cnt >= 2) & (hi - lo >= MIN_OVERLAP * (v[-1] - v[0]))
        adj[:, i, j] = adj[:, j, i] = ok
    return adj


def _reach(adj: np.ndarray) -> np.ndarray:
    reach = adj | np.eye(adj.shape[-1], dtype=bool)
    for _ in range(adj.shape[-1]):
        reach = np.einsum("nij,njk->nik", reach.astype(np.int16), reach.astype(np.int16)) > 0
    return reach


def connected(design: ClockDesign, s: np.ndarray) -> np.ndarray:
    """(n,) whether, at each of ``s`` (n, r), every group's curves stay joined by overlapping pairs."""
    reach = _reach(_pair_overlaps(design.x, design.shifts(s)))
    same = design.groups[:, None] == design.groups[None, :]
    return np.all(reach | ~same, axis=(1, 2))


def design_of(cells: Sequence[Cell], curves: Sequence[np.ndarray], clock: str, lrs: Sequence[float], batches: Sequence[float]) -> ClockDesign:
    """The :class:`ClockDesign` of ``curves`` (one 1-D curve per cell) against the cells' ``clock``. Its
    groups join the pairs whose curves overlap under every clock within EQUIVALENCE of the paper's in
    either exponent, so a pair that overlaps only at the paper's clock cannot speak for it; the
    directions it identifies are those the groups' own (log eta, log b) move."""
    if clock not in OTHER_CLOCK:
        raise ValueError(f"unknown paper clock {clock!r}: expected one of {sorted(OTHER_CLOCK)}")
    x, pick = [], []
    for c, y in zip(cells, curves, strict=True):
        t = np.asarray(c.clocks.get(clock, np.full(len(c.epochs), np.nan)), float)
        ok = np.flatnonzero(np.isfinite(t) & (t > 0) & np.isfinite(np.asarray(y, float)))
        lt = np.log(t[ok])
        if len(ok) > MAX_POINTS:  # evenly in log clock: the early epochs carry the spread of clock values
            idx = np.unique(np.searchsorted(lt, np.linspace(lt[0], lt[-1], MAX_POINTS)).clip(0, len(lt) - 1))
        else:
            idx = np.arange(len(ok))
        pick.append(ok[idx])
        x.append(lt[idx])
    z = np.log(np.column_stack([np.asarray(lrs, float), np.asarray(batches, float)]))
    t = np.linspace(-EQUIVALENCE, EQUIVALENCE, 11)
    lines = np.concatenate([np.column_stack([t, 0 * t]), np.column_stack([0 * t, t])])  # (p, q) offsets from the paper's clock
    robust = _pair_overlaps(x, lines @ z.T).all(axis=0)
    reach = _reach(robust[None])[0]
    groups = np.argmax(reach, axis=1)  # the first member each configuration reaches names its group
    labels = [c.label or str(i) for i, c in enumerate(cells)]
    design = ClockDesign(clock, x, pick, z, labels, groups)
    moves = np.ptp(z, axis=0) > 1e-9
    within = np.abs(design.basis).max(axis=0) > 1e-9 if design.rank else np.zeros(2, bool)
    for k, (name, what) in enumerate((("p", "learning rates"), ("q", "batch sizes"))):
        if moves[k] and not within[k]:
            design.dropped.append(f"{name} not identifiable: no configurations at different {what} keep overlapping in clock for every "
                                  f"{name} within {EQUIVALENCE:g} of the paper's")
        elif not moves[k]:
            design.dropped.append(f"{name} not identifiable: every configuration has the same {what[:-1]}")
    return design


def _bspline(u: np.ndarray, lo: np.ndarray, segments: int) -> np.ndarray:
    """(n, N, segments + 3) uniform cubic B-spline basis of points ``u`` (n, N), knots KNOT_WIDTH apart from ``lo`` (n,)."""
    t = (u - lo[:, None]) / KNOT_WIDTH
    i = np.clip(np.floor(t), 0, segments - 1)
    f = t - i
    w = np.stack([(1 - f) ** 3, 3 * f**3 - 6 * f**2 + 4, -3 * f**3 + 3 * f**2 + 3 * f + 1, f**3], axis=-1) / 6
    out = np.zeros((*u.shape, segments + 3))
    np.put_along_axis(out, i.astype(int)[..., None] + np.arange(4), w, axis=-1)
    return out


def profile_rss(design: ClockDesign, y: np.ndarray, s: np.ndarray, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Residual sum of squares of each group's shared spline at each of ``s`` (n, r) for stacked
    curves ``y`` (m, N: m draws of the fitted points of every curve, in :attr:`ClockDesign.x` order), and
    the fitted values (m, N) where n == 1 (else an empty array)."""
    x = np.concatenate(design.x)
    owner = np.concatenate([np.full(len(v), k) for k, v in enumerate(design.x)])
    group = design.groups[owner]
    rss, fitted = np.zeros((len(s), y.shape[0])), np.full(y.shape, np.nan) if len(s) == 1 else np.empty(0)
    for g in np.unique(group):
        at = group == g
        for a in range(0, len(s), chunk):
            u = x[None, at] + design.shifts(s[a:a + chunk])[:, owner[at]]             # (n, N_g)
            lo = u.min(axis=1)
            B = _bspline(u, lo, max(int(np.ceil((u.max(axis=1) - lo).max() / KNOT_WIDTH - 1e-9)), 1))  # (n, N_g, k)
            G = np.einsum("nik,nil->nkl", B, B) + RIDGE * np.eye(B.shape[-1])
            coef = np.linalg.solve(G, np.einsum("nik,mi->nkm", B, y[:, at]))       # (n, k, m)
            fit = np.einsum("nik,nkm->nmi", B, coef)
            rss[a:a + chunk] += ((y[None][:, :, at] - fit) ** 2).sum(-1)
            if len(s) == 1:
                fitted[:, at] = fit[0]
    return rss, fitted


def _grid(design: ClockDesign, centre: np.ndarray | None = None, half: float | None = None) -> np.ndarray:
    """Identifiable coordinates on a STEP grid whose exponents stay in BOX (around ``centre`` within ``half``)."""
    r = design.rank
    if r == 2:
        lo = np.array([b[0] for b in BOX]) - design.paper
        hi = np.array([b[1] for b in BOX]) - design.paper
        if centre is not None:
            lo, hi = np.maximum(lo, centre - half), np.minimum(hi, centre + half)
        axes = [np.arange(math.ceil(lo[k] / STEP - 1e-9), math.floor(hi[k] / STEP + 1e-9) + 1) * STEP for k in range(2)]
        return np.array(list(itertools.product(*axes)))
    d = design.basis[0]
    bounds = []
    for k in range(2):  # paper + s d inside BOX along each exponent that d moves
        if d[k] != 0:
            ends = sorted(((BOX[k][0] - design.paper[k]) / d[k], (BOX[k][1] - design.paper[k]) / d[k]))
            bounds.append(ends)
    lo, hi = max(b[0] for b in bounds), min(b[1] for b in bounds)
    if centre is not None:
        lo, hi = max(lo, float(centre[0]) - half), min(hi, float(centre[0]) + half)
    return (np.arange(math.ceil(lo / STEP - 1e-9), math.floor(hi / STEP + 1e-9) + 1) * STEP)[:, None]


def _refine(grid: np.ndarray, rss: np.ndarray, best: int) -> np.ndarray:
    """The best grid point moved, along each coordinate, to the vertex of the parabola through it and
    its two neighbours (when both are on the grid and the parabola opens upwards)."""
    s = grid[best].copy()
    for k in range(grid.shape[1]):
        nb = []
        for sign in (-1, 1):
            target = grid[best].copy()
            target[k] += sign * STEP
            hit = np.flatnonzero(np.all(np.abs(grid - target) < 1e-9, axis=1))
            nb.append(hit[0] if len(hit) else None)
        if None in nb:
            continue
        f0, fm, fp = rss[best], rss[nb[0]], rss[nb[1]]
        curv = fm - 2 * f0 + fp
        if np.isfinite(curv) and curv > 0:
            s[k] += STEP * 0.5 * (fm - fp) / curv
    return s


def fit_exponents(design: ClockDesign, y: np.ndarray, grid: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(m, r) least-squares identifiable coordinates of each of ``y``'s m draws over the ``grid``
    points where ``mask`` (overlap) holds."""
    rss, _ = profile_rss(design, y, grid)
    rss = np.where(mask[:, None], rss, np.inf)
    out = np.empty((y.shape[0], design.rank))
    for m in range(y.shape[0]):
        best = int(np.argmin(rss[:, m]))
        out[m] = _refine(grid, rss[:, m], best)
    return out


# --- the estimate and its interval ------------------------------------------------------------

@dataclass
class ClockEstimate:
    """The measured clock: ``theta`` (p, q; the unidentified part at the paper's), the identifiable
    coordinates' interval ``low``/``high`` (r,), how it was made, and what the design identifies.
    ``groups``: where two or more groups of configurations (curves that share no clock range) each
    identify the same direction, each group's own estimate (label, :class:`ClockEstimate`), and the
    interval is the hull of theirs."""

    design: ClockDesign
    theta: np.ndarray | None
    s: np.ndarray | None
    low: np.ndarray | None
    high: np.ndarray | None
    method: str
    n_seeds: int
    why: str = ""                        # set where nothing could be estimated
    edges: tuple | None = None           # (r,) lowest and highest coordinates searched (the overlap's limits) along each axis
    groups: list = field(default_factory=list)
    untested: list = field(default_factory=list)   # groups whose own interval is open: no alignment of their own

    def interval_of(self, k: int) -> tuple[float, float]:
        """Exponent ``k`` (0: p, 1: q) interval: both exponents where the design identifies two; along
        the one direction it identifies, exponent ``k``'s share of that direction (the exponent itself
        when the direction is an axis); NaN where the direction does not move it."""
        if self.low is None or self.design.rank == 0:
            return math.nan, math.nan
        if self.design.rank == 2:
            return float(self.design.paper[k] + self.low[k]), float(self.design.paper[k] + self.high[k])
        d = self.design.basis[0]
        if d[k] == 0:
            return math.nan, math.nan
        with np.errstate(invalid="ignore"):
            ends = sorted((self.design.paper[k] + d[k] * self.low[0], self.design.paper[k] + d[k] * self.high[0]))
        return float(ends[0]), float(ends[1])

    def disagreement(self) -> str:
        """Where the groups' intervals are disjoint in a coordinate: which groups, with their intervals."""
        if len(self.groups) < 2:
            return ""
        for k in range(self.design.rank):
            lows = [g.low[k] for _, g in self.groups]
            highs = [g.high[k] for _, g in self.groups]
            if max(lows) > min(highs):
                return "no single clock aligns these curves (the groups' intervals are disjoint): " + self.group_intervals()
        return ""

    def group_intervals(self) -> str:
        """Each group's estimate and interval of the exponent the row states ("label: q = x [a, b]; ...")."""
        e = shown_exponent(self)
        return "; ".join(f"{label}: {'pq'[e]} = {g.theta[e]:.3g} [{g.interval_of(e)[0]:.3g}, {g.interval_of(e)[1]:.3g}]"
                         for label, g in self.groups)


def shown_exponent(est: ClockEstimate) -> int:
    """The exponent a row states (its interval is this exponent's): along one identified direction the
    exponent it moves most; with two, p, unless only q's interval lies wholly outside the margin (then
    q: the row's interval is the one its verdict reads)."""
    design = est.design
    if design.rank == 1:
        return int(np.argmax(np.abs(design.basis[0])))
    if design.rank == 2 and est.low is not None:
        outside = [b < -EQUIVALENCE or a > EQUIVALENCE for a, b in zip(est.low, est.high, strict=True)]
        return 1 if outside[1] and not outside[0] else 0
    return 0


def _wild_values(c: Cell, rng: np.random.Generator, draws: int) -> np.ndarray:
    """(draws, epoch, sigma, seed) model-based draws of a cell: its seed means plus, in every
    (sigma_w, seed) slot, the whole epoch path of a residual run (a run minus its seed mean, scaled by
    sqrt(n / (n - 1))) drawn from the cell's own, with a random sign (a wild bootstrap: a run's
    deviation keeps its course over the epochs, and the noise its size at each epoch)."""
    n = c.n_seeds
    mean = np.nanmean(c.values, axis=-1, keepdims=True)
    resid = (c.values - mean) * math.sqrt(n / (n - 1))
    paths = resid.reshape(resid.shape[0], -1)                                   # (epoch, sigma x seed)
    paths = paths[:, np.isfinite(paths).any(axis=0)]
    pick = rng.integers(0, paths.shape[1], size=(draws, *c.values.shape[1:]))
    sign = rng.choice((-1.0, 1.0), size=(draws, *c.values.shape[1:]))
    values = mean[None] + np.moveaxis(paths[:, pick], 0, 1) * sign[:, None]
    return np.where(np.isfinite(c.values)[None], values, np.nan)


def _seed_values(cells: Sequence[Cell], rng: np.random.Generator, draws: int) -> list[np.ndarray]:
    """Per cell (draws, epoch, sigma, seed) seed-bootstrap draws, seeds resampled jointly across the
    cells (a seed's runs share their init draws in every configuration); a cell without a drawn seed
    keeps the drawn seeds it has (all of its own where it has none)."""
    seeds = seeds_of(cells)
    pick = rng.choice(len(seeds), (draws, len(seeds)), replace=True)
    out = []
    for c in cells:
        where = np.array([int(np.flatnonzero(c.seeds == s)[0]) if np.any(c.seeds == s) else -1 for s in seeds])
        idx = where[pick]
        if (idx >= 0).all():
            out.append(np.moveaxis(c.values[..., idx], -2, 0))
            continue
        drawn = [c.values[..., [i for i in row if i >= 0] or list(range(c.n_seeds))] for row in idx]
        width = max(d.shape[-1] for d in drawn)
        pad = [np.concatenate([d, np.full((*d.shape[:-1], width - d.shape[-1]), np.nan)], axis=-1) for d in drawn]
        out.append(np.stack(pad))
    return out


def _at_fitted(design: ClockDesign, cells: Sequence[Cell]) -> list[Cell]:
    """The cells at their fitted epochs only (each curve's value at an epoch reads that epoch's runs
    alone, so the resampling needs no other epoch)."""
    return [Cell(c.key, c.sigmas, c.seeds, c.values[p], c.epochs[p], {}, c.fit, c.label, c.config) for c, p in zip(cells, design.pick, strict=True)]


def _curves(cells: Sequence[Cell], values: Sequence[np.ndarray], prepare: Callable[[Cell], np.ndarray]) -> np.ndarray:
    """(draws, N) the stacked curves of ``cells`` (at their fitted epochs) from per-cell (draws, epoch, sigma, seed) values."""
    ys = []
    for c, v in zip(cells, values, strict=True):
        cell = Cell(c.key, c.sigmas, np.arange(v.shape[-1]), v, c.epochs, {}, c.fit, c.label, c.config)
        ys.append(np.asarray(prepare(cell), float).reshape(v.shape[0], v.shape[1]))
    return np.concatenate(ys, axis=1)


def _stack(design: ClockDesign, curves: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(y, float)[p] for y, p in zip(curves, design.pick, strict=True)])[None, :]


def comparable_groups(design: ClockDesign, cells: Sequence[Cell], curves: Sequence[np.ndarray], lrs: Sequence[float],
                      batches: Sequence[float]) -> list[np.ndarray]:
    """The design's groups (configurations whose curves share clock range) of two or more
    configurations that identify, on their own, the same direction(s) as the whole design: each can
    be fitted alone, and the fits compared."""
    out = []
    for g in np.unique(design.groups):
        idx = np.flatnonzero(design.groups == g)
        if len(idx) < 2:
            continue
        sub = design_of([cells[i] for i in idx], [curves[i] for i in idx], design.clock, [lrs[i] for i in idx], [batches[i] for i in idx])
        if sub.rank == design.rank and sub.rank and np.allclose(np.abs(sub.basis), np.abs(design.basis), atol=1e-6):
            out.append(idx)
    return out


def estimate_clock(cells: Sequence[Cell], prepare: Callable[[Cell], np.ndarray], clock: str, lrs: Sequence[float],
                   batches: Sequence[float], draws: int = DRAWS, rng_seed: int = NULL_RNG_SEED, level: float = LEVEL,
                   by_group: bool = True) -> ClockEstimate:
    """The clock exponents under which ``prepare(cell)`` (one curve per epoch) of the ``cells`` align,
    with their interval at ``level`` (see the module docstring). ``by_group``: where two or more groups
    each identify the design's direction(s), each group is fitted alone (Bonferroni over the groups) and
    the interval is the hull of theirs, so a disagreement between them widens it instead of being
    pooled away."""
    curves = [np.asarray(prepare(c), float) for c in cells]
    design = design_of(cells, curves, clock, lrs, batches)
    n_seeds = min(c.n_seeds for c in cells)
    if n_seeds < MIN_SEEDS_MODEL:
        return ClockEstimate(design, None, None, None, None, "", n_seeds, f"{n_seeds} seed(s): the interval needs >= {MIN_SEEDS_MODEL}")
    if design.rank == 0:
        why = "; ".join(design.dropped) or "the configurations share one learning rate and one batch size: no exponent moves their clocks apart"
        return ClockEstimate(design, None, None, None, None, "", n_seeds, why)
    grid = _grid(design)
    mask = connected(design, grid)
    if not mask.any():
        return ClockEstimate(design, None, None, None, None, "", n_seeds, "the curves overlap in clock under none of the exponents searched")
    s_hat = fit_exponents(design, _stack(design, curves), grid, mask)[0]
    edges = _grid_edges(grid, mask)
    groups = comparable_groups(design, cells, curves, lrs, batches) if by_group else []
    if len(groups) >= 2:
        return _hull_of_groups(design, s_hat, edges, groups, cells, prepare, lrs, batches, draws, rng_seed, level, n_seeds)
    rng, fitted = np.random.default_rng(rng_seed), _at_fitted(design, cells)
    if n_seeds >= MIN_SEEDS_PERCENTILE:
        values = _seed_values(fitted, rng, draws)
        method = f"seed bootstrap, {draws} draws paired across configurations"
    else:
        values = [_wild_values(c, rng, draws) for c in fitted]
        method = (f"model-based bootstrap, {draws} draws: each configuration's seed means plus its own residual runs' epoch paths, "
                  f"resampled with random signs (fewer than {MIN_SEEDS_PERCENTILE} seeds: no seed percentile interval)")
    ystar = _curves(fitted, values, prepare)
    # the draws searched around the estimate (the whole box where a draw lands on the window's edge)
    local = _grid(design, s_hat, 1.5)
    fits = fit_exponents(design, ystar, local, connected(design, local))
    span = np.array([[local[:, k].min(), local[:, k].max()] for k in range(design.rank)])
    edge = np.any((fits <= span[:, 0] + STEP / 2) & (span[:, 0] > grid[:, :].min(axis=0) + 1e-9)
                  | (fits >= span[:, 1] - STEP / 2) & (span[:, 1] < grid.max(axis=0) - 1e-9), axis=1)
    if edge.any():
        fits[edge] = fit_exponents(design, ystar[edge], grid, mask)
    tail = (1 - level) / (2 * design.rank)  # Bonferroni over the identifiable coordinates
    # widened by the search's resolution: the fit cannot place an exponent closer than that (a truth 0.02 off the
    # estimate under 300-epoch curves, whose bootstrap spread is narrower), so the interval says no more than it can
    low = np.quantile(fits, tail, axis=0) - RESOLUTION
    high = np.quantile(fits, 1 - tail, axis=0) + RESOLUTION
    joint = "" if design.rank == 1 else f", each of the 2 exponents at {1 - 2 * tail:.1%} (jointly >= {level:.0%}, Bonferroni)"
    method += f", {100 * tail:.3g}-{100 * (1 - tail):.4g}% of the least-squares exponents{joint}, widened by {RESOLUTION:g} either side"
    for k, (lo, hi) in enumerate(edges):  # censored at the limit of the clocks searched: open on that side
        if low[k] + RESOLUTION <= lo + STEP / 2:
            low[k] = -math.inf
        if high[k] - RESOLUTION >= hi - STEP / 2:
            high[k] = math.inf
    return ClockEstimate(design, design.exponents(s_hat), s_hat, low, high, method, n_seeds, "", edges)


def _hull_of_groups(design: ClockDesign, s_hat: np.ndarray, edges: tuple, groups: list[np.ndarray], cells: Sequence[Cell],
                    prepare: Callable[[Cell], np.ndarray], lrs: Sequence[float], batches: Sequence[float], draws: int, rng_seed: int,
                    level: float, n_seeds: int) -> ClockEstimate:
    """The estimate of a design whose groups each identify its direction(s): each group fitted alone at
    ``1 - (1 - level) / groups`` (Bonferroni), the interval the hull of the closed intervals among
    them (it holds every such group's exponent jointly at ``level``), the point estimate the pooled
    fit's. A group whose interval reaches the limit of the clocks searched carries no alignment of
    its own: it is named in ``untested`` and the row is about the other groups only."""
    each = 1 - (1 - level) / len(groups)
    parts, untested = [], []
    for k, idx in enumerate(groups):
        sub = estimate_clock([cells[i] for i in idx], prepare, design.clock, [lrs[i] for i in idx], [batches[i] for i in idx],
                             draws, rng_seed + k, each, by_group=False)
        label = ", ".join(design.labels[i] for i in idx)
        closed = sub.low is not None and np.isfinite(sub.low).all() and np.isfinite(sub.high).all()
        (parts if closed else untested).append((label, sub))
    method = (f"each of {len(groups)} groups fitted alone ({(parts or untested)[0][1].method.split(',')[0]}, {each:.1%} each, "
              f"Bonferroni), the interval the hull of the closed ones (jointly >= {level:.0%}); the point estimate the pooled fit's")
    if not parts:
        inf = np.full(design.rank, math.inf)
        return ClockEstimate(design, design.exponents(s_hat), s_hat, -inf, inf, method, n_seeds, "", edges, groups=untested)
    lows, highs = np.array([sub.low for _, sub in parts]), np.array([sub.high for _, sub in parts])  # the same normed basis
    return ClockEstimate(design, design.exponents(s_hat), s_hat, lows.min(axis=0), highs.max(axis=0), method, n_seeds, "", edges,
                         groups=parts, untested=[label for label, _ in untested])


# --- the verdict ------------------------------------------------------------------------------

def _inside(est: ClockEstimate, theta: Sequence[float]) -> bool:
    """Whether ``theta``'s identified coordinates lie in the interval (which holds the resolution already)."""
    s = est.design.coordinates(theta)
    return bool(np.all((est.low <= s) & (s <= est.high)))


def _fmt(theta: Sequence[float]) -> str:
    return f"p = {theta[0]:.3g}, q = {theta[1]:.3g}"


@dataclass(frozen=True)
class CollapseDecision:
    """A collapse row's verdict, the verdict of the part its design tests (the row's statistic_verdict:
    the same word where the design identifies every exponent) and why."""

    verdict: str
    tested: str
    why: str


def collapse_decision(est: ClockEstimate) -> CollapseDecision:
    """The verdict of a :class:`ClockEstimate` (see the module docstring): equivalence both ways in
    every identified coordinate, against the margin :data:`EQUIVALENCE` around the paper's clock."""
    design, clock = est.design, est.design.clock
    untested = "; ".join(design.dropped)
    join = lambda *parts: "; ".join(p for p in parts if p)
    if est.theta is None or est.low is None:
        word = INCONCLUSIVE if 1 < est.n_seeds < MIN_SEEDS_MODEL or est.theta is not None else NOT_IDENTIFIABLE
        return CollapseDecision(word, word, est.why)
    paper, epoch, other = (np.asarray(CLOCKS[k]) for k in (clock, "epoch", OTHER_CLOCK[clock]))
    if np.allclose(design.coordinates(epoch), design.coordinates(paper), atol=1e-9):
        why = join(f"this design moves only {design.parameter()}, under which {NAMES[clock]} ({_fmt(paper)}) and the epoch clock "
                   f"({_fmt(epoch)}) are the same clock", untested)
        return CollapseDecision(NOT_IDENTIFIABLE, NOT_IDENTIFIABLE, why)
    if est.untested:
        untested = join(untested, "the groups " + " and ".join(f"({g})" for g in est.untested) + " are not tested: their own "
                        "interval reaches the limit of the clocks searched (no alignment within them)")
    only = f"tested on {design.parameter()} only ({untested})" if untested else ""
    split = est.disagreement()
    if not (np.isfinite(est.low).all() and np.isfinite(est.high).all()):
        lo, hi = next(e for e, a, b in zip(est.edges, est.low, est.high, strict=True) if not (np.isfinite(a) and np.isfinite(b)))
        return CollapseDecision(INCONCLUSIVE, INCONCLUSIVE, join(
            f"the interval reaches the limit of the clocks searched ({lo:+.2g} to {hi:+.2g} from {NAMES[clock]} in its coordinate "
            "where the curves still overlap, or the search box): a clock beyond it fits the curves separately, not aligned", split, only))
    margin = between(-EQUIVALENCE, EQUIVALENCE)  # in the identified coordinates, relative to the paper's clock
    words = [margin_verdict(float(a), float(b), margin)[0] for a, b in zip(est.low, est.high, strict=True)]
    if NOT_REPRODUCED in words:
        tested = NOT_REPRODUCED
        why = f"{NAMES[clock]} ({_fmt(paper)}) is further than {EQUIVALENCE:g} from the whole interval"
    elif all(w == REPRODUCED for w in words):
        near = [NAMES[n] for n, t in (("epoch", epoch), (OTHER_CLOCK[clock], other))
                if not np.allclose(design.coordinates(t), design.coordinates(paper), atol=1e-9) and _inside(est, t)]
        tested = INCONCLUSIVE if near else REPRODUCED
        why = (f"{' and '.join(near)} inside the interval too" if near else
               f"the interval lies within {EQUIVALENCE:g} of {NAMES[clock]} in {design.parameter()}; the epoch clock outside"
               + ("" if _inside(est, paper) else f" ({NAMES[clock]} itself just outside it: a difference smaller than the margin)"))
    else:
        tested = INCONCLUSIVE
        why = f"the interval reaches further than {EQUIVALENCE:g} from {NAMES[clock]} and holds clocks within it: neither side"
    if tested == REPRODUCED and untested:
        return CollapseDecision(PARTLY_TESTED, REPRODUCED, join(f"partly tested ({design.parameter()} only): reproduced on "
                                                        f"{design.parameter()}, {why}", untested))
    return CollapseDecision(tested, tested, join(why, split, only))



def _grid_edges(grid: np.ndarray, mask: np.ndarray) -> tuple:
    """(lowest, highest) searched coordinate along each axis (the limits the overlap sets)."""
    g = grid[mask]
    return tuple((float(g[:, k].min()), float(g[:, k].max())) for k in range(g.shape[1]))


def common_sigmas(cells: Sequence[Cell]) -> list[Cell]:
    """The cells restricted to the sigma_w values all of them have (spreads over the same grid)."""
    common = set.intersection(*(set(np.round(c.sigmas, 12)) for c in cells))
    out = []
    for c in cells:
        keep = np.isin(np.round(c.sigmas, 12), sorted(common))
        out.append(Cell(c.key, c.sigmas[keep], c.seeds, c.values[:, keep, :], c.epochs, c.clocks, c.fit, c.label, c.config))
    return out


def curves_of(cells: Sequence[Cell], what: str) -> tuple[list[Cell], Callable[[Cell], np.ndarray], str]:
    """The cells a collapse reads, the curve of one cell (``what``: 'beta', log10 |beta| floored at the
    largest of the configurations' noise floors; 'spread', of the seed-mean accuracy over the sigma_w
    all of them share) and its description."""
    if what == "beta":
        floor = max(float(noise_floor(c.fits([])[1])[0]) for c in cells)
        return (list(cells), lambda cl: log_abs_beta(cl.slopes([])[0], floor),
                f"log10 |beta| floored at the noise floor {floor:.3g} (2 OLS SE, the largest of the configurations')")
    if what == "spread":
        common = common_sigmas(cells)
        return (common, lambda cl: spread_pp(cl.means([])[0]),
                f"spread of seed-mean accuracy per epoch over sigma_w {'/'.join(f'{s:g}' for s in common[0].sigmas)}")
    raise ValueError(f"unknown collapse curve {what!r}: expected 'beta' or 'spread'")
