"""The familywise error of a tier's directional rows after Holm (:func:`initmem.stats.multiplicity.holm`),
measured: every row of the regime tier's tested family put at the boundary of its side, where either
decision is false, simulated at that tier's design and read by the claims table's own functions (the
estimates and their tests, the verdict rule, the decision p, Holm).

The family (``evidence/jpeg-cifar10-regime``): ``sgd_keeps_spread_b16`` (a linear spread of exactly 1 pp
against the gone zone [0, 1 pp)), ``sgd_gt_adam_b16`` and ``lr_reduces_sgd_b16_0.001_to_0.1`` (two
spreads of 1 pp each: the contrast at 0), ``beta_flat_sgd_b16`` and ``beta_level_sgd_b16`` (|beta(t)|
at 0.1 and, in the last tenth of the run, 10^0.5 x 0.1: the settled range exactly +0.5 orders and the
last tenth exactly on the band's upper edge). The spread rows read one value per run (a seed effect
shared by every sigma_w plus independent run noise) and ``sgd_keeps_spread_b16`` and ``sgd_gt_adam_b16``
share the SGD runs, as the tier's rows do; the |beta| rows read per-epoch validation accuracy with
run noise either **independent** from epoch to epoch or **persistent** along a run: a run offset plus
AR(1) noise, their sizes and the lag-1 correlation measured on the tier's own SGD b=16 history
(:func:`measured_persistence`). Fixed RNG seeds: the same numbers on every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from initmem import tiers
from initmem.claims.clock import RETAINED
from initmem.planner.calibration import EVIDENCE, SEED_SD, Design, designs, linear
from initmem.stats import multiplicity as M
from initmem.stats import shapes as Sh
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V

TIER = tiers.the_one("familywise").folder   # the tier with the role "familywise" (initmem.tiers): the regime tier
SIGMAS = (0.1, 0.5, 1.2, 2.5)
MAIN_SEEDS, LR_SEEDS, EPOCHS = 16, 8, 300     # the tier's main (SGD, Adam b=16) and lr_l2 configurations
SPREAD_PP = 1.0                               # every spread at the gone zone's edge; the contrasts at 0
FLAT_LEVEL = Sh.PAPER_FLAT_LEVEL
RULES = ("sgd_keeps_spread_b16", "sgd_gt_adam_b16", "lr_reduces_sgd_b16_0.001_to_0.1", "beta_flat_sgd_b16", "beta_level_sgd_b16")


@dataclass(frozen=True)
class Noise:
    """Per-epoch validation noise of one run: ``offset`` (sd of a level held over the whole run),
    ``ar_sd`` and ``phi`` (AR(1) noise of stationary sd ``ar_sd``); ``phi`` 0 and no offset: independent."""

    name: str
    offset: float
    ar_sd: float
    phi: float


def measured_persistence(history: pd.DataFrame) -> tuple[float, float, float]:
    """(run offset sd, within-run sd, lag-1 correlation within a run) of one configuration's per-epoch
    validation accuracy, from the residuals of the seed-blocked model at each epoch (sigma_w + seed: a
    seed effect shared by every sigma_w cancels in every slope, so it is no part of the run's noise),
    the residual sds scaled by sqrt(k n / ((k - 1)(n - 1))) for the model's degrees of freedom."""
    grid = history.pivot_table(index=["sigma_w", "seed"], columns="epoch", values="val_acc")
    cube = np.stack([grid.xs(s, level="sigma_w").to_numpy(float) for s in sorted(set(grid.index.get_level_values("sigma_w")))])
    k, n = cube.shape[:2]
    resid = cube - np.nanmean(cube, axis=1, keepdims=True) - np.nanmean(cube, axis=0, keepdims=True) + np.nanmean(cube, axis=(0, 1), keepdims=True)
    resid = resid.reshape(k * n, -1) * math.sqrt(k * n / ((k - 1) * (n - 1)))
    offset = np.nanmean(resid, axis=1, keepdims=True)
    within = resid - offset
    lag1 = float(np.nanmean([np.corrcoef(r[:-1], r[1:])[0, 1] for r in within]))
    return float(np.nanstd(offset)), float(np.nanstd(within)), lag1


def noises(tier: str = TIER) -> list[Noise]:
    """The two noise models at the tier's measured sizes: independent (the same total sd per epoch) and persistent."""
    history = pd.read_csv(EVIDENCE / tier / "tables" / "history.csv.gz")
    sgd = history[(history["study"] == "main") & (history["optimizer"] == "sgd") & (history["batch_size"] == 16)]
    offset, within, phi = measured_persistence(sgd)
    total = math.hypot(offset, within)
    return [Noise(f"independent from epoch to epoch (sd {100 * total:.2g} pp)", 0.0, total, 0.0),
            Noise(f"persistent along a run (offset sd {100 * offset:.2g} pp + AR(1) sd {100 * within:.2g} pp, phi {phi:.2f})",
                  offset, within, phi)]


def run_noise(tier: str = TIER) -> float:
    """The tier's run noise (the median residual sd of the seed-blocked model over its configurations)."""
    return designs(tiers.by_folder(tier).name)[0].noise


def _runs(rng: np.random.Generator, seeds: int, sd: float) -> np.ndarray:
    """(k, seeds) one value per run: a linear spread of :data:`SPREAD_PP`, a seed effect, run noise."""
    return linear(Design("family", SIGMAS, seeds, sd, EPOCHS), SPREAD_PP)[:, None] + SEED_SD * rng.standard_normal(seeds) + sd * rng.standard_normal((len(SIGMAS), seeds))


def beta_truth(epochs: int = EPOCHS) -> np.ndarray:
    """|beta| per epoch: :data:`FLAT_LEVEL`, and 10^FLAT_ORDERS times it in the last tenth of the run."""
    t = np.arange(epochs) / max(epochs - 1, 1)
    return np.where(t >= 0.9 + 1e-9, FLAT_LEVEL * 10 ** Sh.FLAT_ORDERS, FLAT_LEVEL)


def curve_values(rng: np.random.Generator, noise: Noise, seeds: int = MAIN_SEEDS) -> np.ndarray:
    """(epoch, sigma_w, seed) validation accuracy 1 - |beta(t)| sigma_w + a seed effect + the run's noise."""
    k, e = len(SIGMAS), EPOCHS
    ar = np.empty((e, k, seeds))
    ar[0] = rng.standard_normal((k, seeds))
    innovation = math.sqrt(1 - noise.phi**2)
    for i in range(1, e):
        ar[i] = noise.phi * ar[i - 1] + innovation * rng.standard_normal((k, seeds))
    s = np.asarray(SIGMAS)
    return (1.0 - beta_truth(e)[:, None, None] * s[None, :, None] + SEED_SD * rng.standard_normal(seeds)
            + noise.offset * rng.standard_normal((k, seeds)) + noise.ar_sd * ar)


def _cell(values: np.ndarray, epochs: np.ndarray | None = None) -> V.Cell:
    return V.Cell("sim", np.asarray(SIGMAS, float), np.arange(values.shape[-1]), values, epochs,
                  {"epoch": epochs} if epochs is not None else {})


def _direction(cid: str, est: V.Estimate, side: V.Side, word: str | None = None) -> dict:
    word = word or V.side_verdict(est, side)
    return {"id": cid, "kind": "direction", "verdict": word, "p_decision": M.decision_p(est, side, word)}


def family(rng: np.random.Generator, noise: Noise, sd: float) -> pd.DataFrame:
    """One simulated tier: its five tested rows (verdict, p_decision) and Holm over them."""
    sgd, adam = _runs(rng, MAIN_SEEDS, sd), _runs(rng, MAIN_SEEDS, sd)
    slow, fast = _runs(rng, LR_SEEDS, sd), _runs(rng, LR_SEEDS, sd)
    curve = _cell(curve_values(rng, noise), np.arange(1, EPOCHS + 1, dtype=float))
    word, _, change, _ = Sh.flat_decision(curve)
    level = V.estimate([curve], lambda m: Sh.beta_shape(*m[0], curve.epochs).last, prepare=lambda c, s: c.fits(s))
    band = V.between(FLAT_LEVEL * 10 ** -Sh.LEVEL_ORDERS, FLAT_LEVEL * 10 ** Sh.LEVEL_ORDERS)
    rows = [_direction(RULES[0], Sp.spread_estimate(_cell(sgd)), RETAINED),
            _direction(RULES[1], Sp.contrast_estimate([_cell(sgd), _cell(adam)]), V.greater(0)),
            _direction(RULES[2], Sp.contrast_estimate([_cell(slow), _cell(fast)]), V.greater(0)),
            _direction(RULES[3], change, V.between(-Sh.FLAT_ORDERS, Sh.FLAT_ORDERS), word),
            _direction(RULES[4], level, band)]
    return M.holm(pd.DataFrame(rows))


DECIDED = (V.REPRODUCED, V.NOT_REPRODUCED, V.PARTLY_TESTED)


def familywise(n_sims: int, rng_seed: int, tier: str = TIER) -> pd.DataFrame:
    """Per noise model: the share of simulated tiers with any decision (every one false at the boundary)
    by the intervals alone (``any_alone``) and after Holm (``any_holm``), and each row's share of both."""
    sd, out = run_noise(tier), []
    for j, noise in enumerate(noises(tier)):
        rng = np.random.default_rng(rng_seed + j)
        alone, holm = np.zeros((n_sims, len(RULES)), bool), np.zeros((n_sims, len(RULES)), bool)
        for i in range(n_sims):
            t = family(rng, noise, sd)
            alone[i], holm[i] = t["verdict"].isin(DECIDED).to_numpy(), t["verdict_holm"].isin(DECIDED).to_numpy()
        out.append({"noise": noise.name, "n_sims": n_sims, "any_alone": float(alone.any(1).mean()), "any_holm": float(holm.any(1).mean()),
                    **{f"alone {cid}": float(a) for cid, a in zip(RULES, alone.mean(0), strict=True)},
                    **{f"holm {cid}": float(h) for cid, h in zip(RULES, holm.mean(0), strict=True)}})
    return pd.DataFrame(out)
