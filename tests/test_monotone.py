"""Spread contrasts read the paper's spread (max - min over the sweep) in both cells: a peak or a dip
that the end values of sigma_w do not show never inverts a contrast, a monotone truth is still
decided, and a non-monotone profile is named in the row's note (seed-paired tests throughout)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from initmem.claims.rows import spread_gap
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V

SIGMAS = np.array([0.1, 0.5, 1.2, 2.5])   # the decisive tier's grid
NOISE, SEEDS, SIMS = 0.03, 16, 400         # its run noise and main seeds


def _linear(pp: float) -> np.ndarray:
    return 0.8 - pp / 100 * (SIGMAS - SIGMAS.min()) / np.ptp(SIGMAS)


def _bump(pp: float, up: bool) -> np.ndarray:
    """Ends equal, the middle of the grid higher (a peak) or lower (a dip): max - min is ``pp``."""
    tri = 1 - np.abs(2 * (SIGMAS - SIGMAS.min()) / np.ptp(SIGMAS) - 1)
    return 0.8 + (1 if up else -1) * pp / 100 * tri / tri.max()


def _cell(means: np.ndarray, rng: np.random.Generator, key: str, seeds: int = SEEDS) -> V.Cell:
    """One configuration: the means, a seed effect shared by every sigma_w (it must cancel), run noise."""
    values = means[:, None] + rng.normal(0, 0.05, seeds)[None, :] + NOISE * rng.standard_normal((len(means), seeds))
    return V.Cell(key, SIGMAS, np.arange(seeds), values, label=key)


def _verdicts(ma: np.ndarray, mb: np.ndarray, rng_seed: int) -> list[str]:
    rng = np.random.default_rng(rng_seed)
    return [V.side_verdict(Sp.contrast_estimate([_cell(ma, rng, "a"), _cell(mb, rng, "b")]), V.greater(0)) for _ in range(SIMS)]


@pytest.mark.parametrize("up", (True, False), ids=("peak", "dip"))
def test_a_non_monotone_profile_with_the_larger_spread_is_never_read_not_reproduced(up):
    """a's spread (max - min 22.8 pp) exceeds b's (4.3 pp) but a's ends are equal: the drops' rule read
    "not reproduced" in every simulation at 16 seeds."""
    v = _verdicts(_bump(22.8, up), _linear(4.3), 1)
    assert np.mean([x == V.NOT_REPRODUCED for x in v]) <= 0.05


@pytest.mark.parametrize("up", (True, False), ids=("peak", "dip"))
def test_a_non_monotone_profile_with_the_larger_spread_is_never_out_spread_by_a_smaller_one(up):
    """b's spread (22.8 pp, ends equal) exceeds a's (4.3 pp): the drops' rule read "reproduced" almost always."""
    v = _verdicts(_linear(4.3), _bump(22.8, up), 2)
    assert np.mean([x == V.REPRODUCED for x in v]) <= 0.05


def test_monotone_spreads_are_still_decided():
    v = _verdicts(_linear(22.8), _linear(4.3), 3)
    assert np.mean([x == V.REPRODUCED for x in v]) >= 0.95
    v = _verdicts(_linear(4.3), _linear(22.8), 4)
    assert np.mean([x == V.NOT_REPRODUCED for x in v]) >= 0.95


def test_the_contrast_reads_max_minus_min_and_its_interval_brackets_it():
    rng = np.random.default_rng(5)
    a, b = _cell(_bump(10.0, True), rng, "a"), _cell(_linear(4.3), rng, "b")
    est = Sp.contrast_estimate([a, b])
    observed = 100 * (np.ptp(a.values.mean(1)) - np.ptp(b.values.mean(1)))
    assert est.effect == pytest.approx(observed, rel=1e-12) and est.low <= est.effect <= est.high


def test_the_monotonicity_test_is_scipys_paired_t_bonferroni_and_holds_its_level():
    rng = np.random.default_rng(6)
    values = _bump(6.0, True)[:, None] + NOISE * rng.standard_normal((4, 8))
    m = Sp.monotone_test(values)
    p = [max(stats.ttest_rel(values[i], values[0], alternative=alt).pvalue, stats.ttest_rel(values[i], values[-1], alternative=alt).pvalue)
         for alt in ("greater", "less") for i in (1, 2)]
    assert float(m["p"]) == pytest.approx(min(1.0, 4 * min(p)), rel=1e-9)
    # a monotone profile with a plateau (an interior mean equal to an end) is called non-monotone <= 5% of the time
    plateau = np.array([0.8, 0.8, 0.75, 0.7])[None, :, None] + NOISE * rng.standard_normal((4000, 4, SEEDS))
    assert Sp.monotone_test(plateau)["detected"].mean() <= 0.05
    assert Sp.monotone_test(_bump(22.8, False)[None, :, None] + NOISE * rng.standard_normal((400, 4, SEEDS)))["detected"].mean() >= 0.95


def _runs(means: np.ndarray, optimizer: str, rng: np.random.Generator) -> pd.DataFrame:
    values = means[:, None] + NOISE * rng.standard_normal((len(means), SEEDS))
    return pd.DataFrame([{"study": "main", "optimizer": optimizer, "batch_size": 16, "lr": 1e-3, "sigma_w": s, "seed": j,
                          "test_acc_best": values[i, j], "run_id": f"{optimizer}-{s}-{j}"}
                         for i, s in enumerate(SIGMAS) for j in range(SEEDS)])


def test_the_row_names_the_non_monotone_cell():
    rng = np.random.default_rng(7)
    r = spread_gap(None, "x_gt_y", "a minus b spread (pp)", float("nan"), _runs(_bump(22.8, True), "adam", rng), _runs(_linear(4.3), "sgd", rng),
                   V.greater(0), "")
    assert r["verdict"] != V.NOT_REPRODUCED
    assert "Adam b=16 lr=0.001: its sigma_w profile is not monotone (sigma_w 1.2 lies above both ends" in r["note"]
    assert "the end-to-end drop is not its spread" in r["note"]


def test_a_missing_run_leaves_only_its_pairs_and_complete_values_give_the_same_bounds_either_way():
    rng = np.random.default_rng(8)
    a, b = (m[:, None] + NOISE * rng.standard_normal((4, 6)) for m in (_bump(8.0, True), _linear(4.3)))
    fast, slow = Sp._moment_bounds(100 * a, 100 * b), Sp._pair_bounds(100 * a, 100 * b)
    assert np.allclose(fast, slow, rtol=1e-10)
    a[1, 2] = np.nan   # one interior run lost: the other pairs keep all six seeds
    _, low, high = Sp.contrast_arrays(a, b)
    assert np.isfinite([low, high]).all() and low < high
