"""The "gone" rule calibrated at the recipe tier's design: does a truly gone spread read gone, and a spread at
the zone's edge not?

A spread row whose words name a zone where the spread is gone ("still leaves a spread", gone within [0, 1 pp))
is read by :func:`initmem.claims.clock.gone_verdict`: ``reproduced`` above the zone, ``not reproduced`` (gone)
wholly inside it (the spread's upper end, an intersection-union bound: :func:`initmem.stats.spreads.spread_arrays`),
``undecidable at this size`` where the interval holds the zone and a truly gone spread would not read gone 80%
of the time at 64 seeds of the cell's own noise, else ``inconclusive``. Simulated here through those functions on
cells drawn from a known truth at a design: linear profiles over sigma_w 0.1 / 0.5 / 1.2 / 2.5 whose spread is
0 (gone), 0.5, 1 (the edge: either word is false), 1.5 and 3 pp, with a seed effect shared by every sigma_w.

The noise models (the truths the design cannot tell apart, each of which could make the rule wrong):
- ``measured``: the selected tier's SGD runs (the recipe tier's measurement: 256 images at 32x32, precise
  BatchNorm statistics), each seed's deviations per sigma_w, their covariance as measured, moved to the test
  size (``initmem.planner.design.seed_deviations``: the test-sampling part recomputed, the rest kept);
- ``independent``: independent normal noise at that covariance's largest sd per sigma_w, at every sigma_w;
- ``offset-t3``: the measured covariance with a run offset from Student t (3 degrees of freedom, the same sd):
  heavy-tailed runs.
At 500 test images (the epochs' test evaluation) and at 10,000 (the kept best weights evaluated once,
``final_test``), and at 7 seeds (the recipe design) and at 64 (the most one configuration can be given:
:data:`initmem.claims.clock.FEASIBLE_SEEDS`).
Then, once the recipe tier is committed, at its design (7 seeds, 10,000 images) under each of its own
configurations' measured noise (the same three models): the noise its runs showed, which the design could not
know before them.

    PYTHONPATH=workflow .venv/bin/python benchmarks/gone_calibration.py > benchmarks/gone_calibration.md

``--design CONFIG`` sizes and calibrates a tier that reads the gone side (written before its runs): for the one
configuration ``CONFIG`` trains, at the noise a committed tier measured for that configuration, the share of draws
that read gone at a true 0 and at the edge from 16 to 64 seeds (the sizing: the fewest seeds at which every noise
model reads a truly gone spread gone >= 80% of the time), then every verdict word at the design's own seeds.

    PYTHONPATH=workflow .venv/bin/python benchmarks/gone_calibration.py --design config/evidence-gone.yaml \
        > evidence/jpeg-cifar10-gone/gone_calibration.md

``--shapes CONFIG`` asks the same design what the linear truths leave out: spreads whose largest difference is not
between the grid's ends (:data:`SHAPES`). The rule's upper end reads every pair and its lower end the end pair
only, so such a shape can cost power but never a false word; the table measures both at the edge and above it.

    PYTHONPATH=workflow .venv/bin/python benchmarks/gone_calibration.py --shapes config/evidence-gone.yaml \
        > evidence/jpeg-cifar10-gone/shape_check.md
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import stats

from initmem import tiers
from initmem.claims.clock import FEASIBLE_SEEDS, RETAINED, gone_verdict
from initmem.pipeline.configfiles import load_config
from initmem.planner import design as D
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V

SIGMAS = np.array([0.1, 0.5, 1.2, 2.5])
TRUTHS_PP = (0.0, 0.5, 1.0, 1.5, 3.0)
# A truth's profile over SIGMAS, scaled to a spread of 1 (accuracy falls by truth x profile): linear in sigma_w (the
# calibration's truths), sigma_w 0.1 alone off the rest, and the largest difference inside the grid (0.1 against 1.2).
SHAPES = {"linear": (SIGMAS - SIGMAS[0]) / np.ptp(SIGMAS), "step": np.array([0.0, 1.0, 1.0, 1.0]),
          "interior": np.array([0.0, 0.6, 1.0, 0.6])}
SHAPE_TRUTHS_PP = (1.0, 1.5, 1.75, 2.0, 3.0)
SEED_SD, RNG_SEED = 0.05, 7100
RECIPE = "jpeg-cifar10-recipe"
WORDS = (V.NOT_REPRODUCED, V.REPRODUCED, V.UNDECIDABLE, V.INCONCLUSIVE)
BELOW = V.less(RETAINED.gone)   # the _below_1pp row's side: gone is its `reproduced`
BARS = ("Bars: a truly gone spread (0 pp) reads gone >= 80% of the time; a spread at or above the edge (1 pp) reads gone <= 5% "
        "(the one-sided 95% upper bound in brackets).\n")
TABLE_HEAD = ("| noise | seeds | true spread (pp) | gone | reproduced | undecidable at this size | inconclusive |", "|---|---|---|---|---|---|---|")


def measured_covariance(n_test: int) -> np.ndarray:
    """The selected tier's SGD seeds' covariance per sigma_w (fractions^2) at ``n_test`` test images."""
    m = next(m for m in D.measured() if m.source == "jpeg-cifar10-selected" and m.spec["optimizer"] == "sgd")
    return covariance(m, n_test)


def covariance(m: D.Measured, n_test: int) -> np.ndarray:
    """``m``'s seeds' covariance per sigma_w (fractions^2) at ``n_test`` test images."""
    return np.cov(D.seed_deviations([m], [tuple(SIGMAS)], n_test))


def recipe_configurations() -> list[D.Measured]:
    """The recipe tier's own configurations (each measured at 7 seeds on 10,000 final-test images), where committed."""
    return [m for m in D.measured() if m.source == RECIPE]


def draw(truth_pp: float, cov: np.ndarray, model: str, seeds: int, rng: np.random.Generator,
         shape: str = "linear") -> np.ndarray:
    """One configuration's (sigma_w x seed) test accuracies under ``model``, its means ``shape`` (:data:`SHAPES`)."""
    means = 0.4 - truth_pp / 100 * SHAPES[shape]
    if model == "independent":
        noise = np.sqrt(np.max(np.diag(cov))) * rng.standard_normal((len(SIGMAS), seeds))
    else:
        noise = rng.multivariate_normal(np.zeros(len(SIGMAS)), cov, size=seeds).T
        if model == "offset-t3":
            noise = noise * np.sqrt(1 / 3) * np.sqrt(3 / rng.chisquare(3, size=(1, seeds)))  # t3 scale mixture, sd kept
    return means[:, None] + noise + SEED_SD * rng.standard_normal((1, seeds))


def shares(truth_pp: float, cov: np.ndarray, model: str, seeds: int, sims: int, rng: np.random.Generator,
           side: V.Side = RETAINED, shape: str = "linear") -> dict[str, float]:
    """The share of each verdict word of the rule against ``side`` over ``sims`` simulated configurations."""
    words = []
    for _ in range(sims):
        cell = V.Cell("sim", SIGMAS, np.arange(seeds), draw(truth_pp, cov, model, seeds, rng, shape))
        words.append(gone_verdict(Sp.spread_estimate(cell), cell, side)[0])
    words = np.array(words)
    return {w: float(np.mean(words == w)) for w in WORDS}


def upper(share: float, sims: int) -> float:
    """The one-sided 95% Clopper-Pearson upper bound of a share of ``sims``."""
    k = round(share * sims)
    return 1.0 if k == sims else float(stats.beta.ppf(0.95, k + 1, sims - k))


def recipe_rows(sims: int, rng: np.random.Generator) -> list[str]:
    """The rule at the recipe design (7 seeds, 10,000 test images) under each of the recipe tier's own configurations'
    noise, as its runs measured it (a truth the design could not know before them), with the same three models."""
    lines = []
    for m in recipe_configurations():
        cov = covariance(m, D.test_images(m.spec))
        sds = ", ".join(f"{100 * s:.2f}" for s in np.sqrt(np.diag(cov)))
        lines += [f"## The recipe tier's own noise: SGD lr {m.spec['lr']:g}, L2 {m.spec['l2']:g} "
                  f"({D.test_images(m.spec):,} test images, {m.seeds} seeds; per sigma_w: {sds} pp)", "",
                  *TABLE_HEAD]
        for model in ("measured", "independent", "offset-t3"):
            for truth in TRUTHS_PP:
                lines.append(row(model, 7, truth, shares(truth, cov, model, 7, sims, rng), sims))
        lines.append("")
    return lines


SIZING_SEEDS = (16, 24, 32, 40, 48, 64)
MODELS = ("measured", "independent", "offset-t3")


def gone_share(truth_pp: float, cov: np.ndarray, model: str, seeds: int, sims: int, rng: np.random.Generator) -> float:
    """The share of ``sims`` draws whose spread's upper end lies below the edge (the gone reading), computed on all
    draws at once (:func:`initmem.stats.spreads.spread_arrays`, the bound :func:`gone_verdict` reads)."""
    values = np.stack([draw(truth_pp, cov, model, seeds, rng) for _ in range(sims)])
    return float(np.mean(Sp.spread_arrays(values)["high"] < RETAINED.gone))


def _recipe(spec: dict) -> tuple:
    """What makes two specs the same configuration for the design: optimizer, lr, b, L2, training images."""
    return spec["optimizer"], float(spec["lr"]), int(spec["batch_size"]), float(spec["l2"]), int(spec["n_train"])


def design_configuration(config: dict) -> tuple[D.Measured, D.Planned]:
    """The committed measurement of the one configuration ``config`` trains, and that configuration as planned.
    A design is sized on what was measured before it: the tier this config trained (its ``name:``) is left out."""
    planned = D.planned(config)
    own = tuple(t.folder for t in tiers.tiers() if t.name == f"{config.get('name')}-tier")
    recipes = {_recipe(p.spec) for p in planned}
    if len(recipes) != 1:
        raise SystemExit(f"--design: the config trains {len(recipes)} configurations; the gone design reads one")
    found = [m for m in D.measured(leave_out=own) if _recipe(m.spec) == _recipe(planned[0].spec) and m.seeds >= 3]
    if not found:
        opt, lr, b, l2, n = recipes.pop()
        raise SystemExit(f"--design: no committed tier measured {opt} lr {lr:g} b={b} L2 {l2:g} at n_train {n}: nothing to size on")
    return found[0], planned[0]


def design_lines(config: dict, sims: int, rng: np.random.Generator) -> list[str]:
    """The sizing table and the calibration at the design's seeds (see the module docstring)."""
    m, p = design_configuration(config)
    seeds, n_test = p.seeds, D.test_images(p.spec)
    cov = covariance(m, n_test)
    sds = ", ".join(f"{100 * s:.2f}" for s in np.sqrt(np.diag(cov)))
    lines = [f"Noise: {m.source}'s {m.seeds} seeds of SGD lr {m.spec['lr']:g} b={m.spec['batch_size']} L2 {m.spec['l2']:g} at "
             f"{n_test:,} test images (per sigma_w: {sds} pp), under the three models above.", "",
             "## Sizing: the share reading gone at a true 0 / at the edge (1 pp)", "",
             "| noise | " + " | ".join(f"{n} seeds" for n in SIZING_SEEDS) + " |", "|---|" + "---|" * len(SIZING_SEEDS)]
    for model in MODELS:
        cells = [f"{gone_share(0.0, cov, model, n, sims, rng):.0%} / {gone_share(1.0, cov, model, n, sims, rng):.1%}" for n in SIZING_SEEDS]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    lines += ["", f"## Every verdict word at the design ({seeds} seeds, {n_test:,} test images), read as the tier's row reads it", ""]
    return lines + below_words(cov, seeds, max(sims // 5, 1), rng, [("linear", t) for t in TRUTHS_PP])


def below_words(cov: np.ndarray, seeds: int, sims: int, rng: np.random.Generator, truths: list[tuple[str, float]],
                shaped: bool = False) -> list[str]:
    """Every word of the ``_below_1pp`` row at ``seeds`` under each noise model, per (shape, true spread)."""
    lines = [f"The row `l2_T_<configuration>_below_1pp` reads the spread against \"{BELOW.text()}\" "
             "(:func:`initmem.claims.clock.below_decided`): `reproduced` is the gone reading, `not reproduced` a spread above the zone.",
             "", "| noise | seeds | " + ("shape | " if shaped else "") + "true spread (pp) | gone (`reproduced`) | "
             "above the zone (`not reproduced`) | undecidable at this size | inconclusive |", "|---|---|" + "---|" * (5 + shaped)]
    for model in MODELS:
        for shape, truth in truths:
            w = shares(truth, cov, model, seeds, sims, rng, BELOW, shape)
            lines.append(row(model, seeds, truth, {**w, V.NOT_REPRODUCED: w[V.REPRODUCED], V.REPRODUCED: w[V.NOT_REPRODUCED]}, sims,
                             shape if shaped else None))
    return lines


def shape_lines(config: dict, sims: int, rng: np.random.Generator) -> list[str]:
    """Every word at the design of ``config`` for truths of every shape (:data:`SHAPES`), at and above the edge."""
    m, p = design_configuration(config)
    n_test = D.test_images(p.spec)
    cov = covariance(m, n_test)
    profiles = ", ".join(f"{k} ({' / '.join(f'{v:.2f}' for v in SHAPES[k])})" for k in SHAPES)
    return [f"Noise: {m.source}'s {m.seeds} seeds, as the design read it; {p.seeds} seeds, {n_test:,} test images. "
            f"Shapes (the accuracy drop at sigma_w {' / '.join(f'{s:g}' for s in SIGMAS)}, spread 1): {profiles}.", "",
            *below_words(cov, p.seeds, sims, rng, [(k, t) for k in SHAPES for t in SHAPE_TRUTHS_PP], shaped=True)]


def row(model: str, seeds: int, truth: float, s: dict[str, float], sims: int, shape: str | None = None) -> str:
    """One table row: the share of each word, and the one-sided upper bound of "gone" where gone is false (with a
    ``shape`` column where the table has one)."""
    gone = f"{s[V.NOT_REPRODUCED]:.1%}" + (f" (<= {upper(s[V.NOT_REPRODUCED], sims):.1%})" if truth >= 1 else "")
    shape_cell = "" if shape is None else f"{shape} | "
    return f"| {model} | {seeds} | {shape_cell}{truth:g} | {gone} | {s[V.REPRODUCED]:.1%} | {s[V.UNDECIDABLE]:.1%} | {s[V.INCONCLUSIVE]:.1%} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=400, help="simulated configurations per row (default 400)")
    parser.add_argument("--design", metavar="CONFIG", help="size and calibrate the gone tier CONFIG designs (see above)")
    parser.add_argument("--shapes", metavar="CONFIG", help="every word at CONFIG's design for truths of every shape (see above)")
    args = parser.parse_args(argv)
    rng, start = np.random.default_rng(RNG_SEED), time.time()
    if args.shapes:
        lines = shape_lines(load_config([args.shapes]), args.sims, rng)
        print(f"# The gone rule at the design of `{args.shapes}`, for spreads of every shape\n")
        print(f"`PYTHONPATH=workflow .venv/bin/python benchmarks/gone_calibration.py --shapes {args.shapes}` ({time.time() - start:.0f} s "
              f"wall, one core; {args.sims} simulated configurations per row, each undecided one simulated again at 64 seeds of its "
              "own noise). The linear truths are the design's (`gone_calibration.md`); the others are written after the tier's runs, "
              "whose spread's largest difference is inside the grid: they change no verdict. A false word: gone at or above the "
              "edge (its one-sided 95% upper bound in brackets), above the zone at the edge.\n")
        print("\n".join(lines))
        return 0
    if args.design:
        sims = args.sims * 5
        lines = design_lines(load_config([args.design]), sims, rng)
        print(f"# The gone rule at the design of `{args.design}`\n")
        print(f"`PYTHONPATH=workflow .venv/bin/python benchmarks/gone_calibration.py --design {args.design}` ({time.time() - start:.0f} s "
              f"wall, one core; sizing: {sims} draws per cell; verdict words: {args.sims} simulated configurations per row, "
              "each undecided one simulated again at 64 seeds of its own noise). The rule, the truths and the noise models: "
              "`benchmarks/gone_calibration.md`.\n")
        print(BARS)
        print("\n".join(lines))
        return 0
    lines = []
    for n_test in (500, 10_000):
        cov = measured_covariance(n_test)
        sds = ", ".join(f"{100 * s:.2f}" for s in np.sqrt(np.diag(cov)))
        lines += [f"## {n_test:,} test images (the measured noise per sigma_w: {sds} pp)", "",
                  *TABLE_HEAD]
        for model in ("measured", "independent", "offset-t3"):
            for seeds in (7, FEASIBLE_SEEDS):
                for truth in TRUTHS_PP:
                    lines.append(row(model, seeds, truth, shares(truth, cov, model, seeds, args.sims, rng), args.sims))
        lines.append("")
    lines += recipe_rows(args.sims, rng)
    print("# The gone rule at the recipe tier's design\n")
    about = __doc__.split("\n", 2)[2].split("    PYTHONPATH")[0].strip()
    print(f"`PYTHONPATH=workflow .venv/bin/python benchmarks/gone_calibration.py > benchmarks/gone_calibration.md` "
          f"({time.time() - start:.0f} s wall, one core; {args.sims} simulated configurations per row). {about}\n")
    print(BARS)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
