"""Power from the rules' own simulation: the chance of a decision the library predicts must be the
chance the claim functions give on runs drawn from the same truth, and "would decide" must be a
number of seeds at which an undecided row is decided about half the time (never its own seeds)."""

import math

import numpy as np
import pytest

from initmem.claims.rows import Reading, row, would_decide
from initmem.stats import power as P
from initmem.stats import spreads as Sp
from initmem.stats import verdicts as V

SIGMAS = np.array([0.1, 0.5, 1.2, 2.5])


def _cell(values: np.ndarray, key: str = "x") -> V.Cell:
    return V.Cell(key, SIGMAS[: values.shape[0]], np.arange(values.shape[1]), values)


def _draw(means, sd, seeds, rng):
    """One set of runs: a seed effect shared by every sigma_w (it must cancel) plus run noise."""
    m = np.asarray(means, float)
    return m[:, None] + rng.normal(0, 0.05, seeds)[None, :] + sd * rng.standard_normal((len(m), seeds))


def _direct(decide, n_sims: int = 300, rng_seed: int = 1) -> float:
    rng = np.random.default_rng(rng_seed)
    return float(np.mean([decide(rng) in (V.REPRODUCED, V.NOT_REPRODUCED) for _ in range(n_sims)]))


# three rows like the undecided rows of the committed tiers: a small spread at 3 seeds, a spread
# contrast of two adaptive configurations, a contrast of accuracies
SPREAD = (0.8 - np.array([0.0, 0.004, 0.008, 0.012]), 0.01, V.greater(0))
CONTRAST = (0.8 - np.array([0.0, 0.01, 0.02, 0.03]), 0.8 - np.array([0.0, 0.003, 0.006, 0.009]), 0.01, V.greater(0))


@pytest.mark.parametrize("seeds", (4, 8))
def test_the_simulated_chance_of_a_spread_decision_is_the_claim_functions(seeds):
    means, sd, side = SPREAD
    predicted = P.spread_decision_rate(means, sd, seeds, side)
    direct = _direct(lambda rng: V.side_verdict(Sp.spread_estimate(_cell(_draw(means, sd, seeds, rng))), side))
    assert abs(predicted - direct) <= 0.10 and 0.05 < direct < 0.95  # a case where the rate is informative


def test_a_spread_whose_noise_grows_at_the_grid_end_is_planned_from_its_per_seed_covariance():
    """Noise that grows with sigma_w (0.5 pp a run at the first, 3 pp at the last) and a shared seed
    effect: the rate simulated from the per-seed covariance (:func:`initmem.stats.power.spread_truth_rate`,
    what a row's "would decide" and the planner read) is the claim functions' own on runs drawn from that
    truth; the pooled residual sd (one noise for every sigma_w) misplaces it."""
    means, sds, seeds, side = 0.4 - np.array([0.0, 0.01, 0.02, 0.03]), np.array([0.005, 0.01, 0.02, 0.03]), 8, V.greater(0)

    def draw(rng, n=seeds):
        return means[:, None] + rng.normal(0, 0.05, n)[None, :] + sds[:, None] * rng.standard_normal((4, n))

    direct = _direct(lambda rng: V.side_verdict(Sp.spread_estimate(_cell(draw(rng))), side), n_sims=400)
    C = P.centring(4, 1)
    covariance = P.spread_truth_rate(C @ means, C @ np.diag(sds ** 2) @ C.T, 4, seeds, side)
    pooled = P.spread_decision_rate(means, float(np.sqrt(np.mean(sds ** 2))), seeds, side)
    assert abs(covariance - direct) <= 0.07 and 0.1 < direct < 0.9
    assert abs(pooled - direct) > abs(covariance - direct)
    # a row measured on many seeds of that truth plans what the truth gives
    mean, cov, k = P.cell_truth(_cell(draw(np.random.default_rng(5), 400)))
    assert abs(P.spread_truth_rate(mean, cov, k, seeds, side) - direct) <= 0.08


@pytest.mark.parametrize("seeds", (5, 12))
def test_the_simulated_chance_of_a_contrast_decision_is_the_claim_functions(seeds):
    ma, mb, sd, side = CONTRAST
    predicted = P.contrast_decision_rate(ma, mb, sd, sd, seeds, side)

    def decide(rng):
        cells = [_cell(_draw(ma, sd, seeds, rng), "a"), _cell(_draw(mb, sd, seeds, rng), "b")]
        return V.side_verdict(Sp.contrast_estimate(cells), side)

    direct = _direct(decide)
    assert abs(predicted - direct) <= 0.10 and 0.05 < direct < 0.95


def test_the_simulated_chance_of_an_accuracy_contrast_is_the_claim_functions():
    effect, sd, seeds = 1.0, 2.0, 10   # pp; per-seed sd of the difference
    predicted = P.mean_decision_rate(effect, sd, seeds, V.greater(0))

    def decide(rng):
        a = 0.6 + rng.normal(0, 0.02 / math.sqrt(2), (1, seeds))
        b = 0.6 - effect / 100 + rng.normal(0, 0.02 / math.sqrt(2), (1, seeds))
        cells = [V.Cell("a", np.array([1.0]), np.arange(seeds), a), V.Cell("b", np.array([1.0]), np.arange(seeds), b)]
        return V.side_verdict(V.estimate(cells, lambda m: 100 * (m[0][:, 0] - m[1][:, 0])), V.greater(0))

    assert abs(predicted - _direct(decide)) <= 0.10


def test_would_decide_gives_an_even_chance_and_never_the_rows_own_seeds():
    """An undecided spread contrast at 3 seeds: its row says ~N seeds; runs drawn from its own fitted
    truth at N seeds are decided 40-60% of the time through the claim functions, and N > 3."""
    ma, mb, sd, side = CONTRAST
    rng = np.random.default_rng(4)
    for _ in range(100):  # the first draw whose 3-seed interval crosses 0 (most do)
        cells = [_cell(_draw(ma, sd, 3, rng), "a"), _cell(_draw(mb, sd, 3, rng), "b")]
        est = Sp.contrast_estimate(cells)
        if V.side_verdict(est, side) == V.INCONCLUSIVE:
            break
    r = would_decide([row("batch_raises_adam_spread", "direction", "q", math.nan, "", Reading(est, side=side, cells=cells, contrast=True))])[0]
    assert r["verdict"] == V.INCONCLUSIVE and "50% chance" in r["would_decide"]
    n = int(r["would_decide"].split("~")[1].split(" ")[0])
    assert n > 3
    assert "if the true effect equals the estimate" in r["would_decide"]   # post-hoc power, and it says so
    mean, cov, k = P.paired_truth(cells)   # the row's own fitted truth: both cells' seed-paired values
    root = np.linalg.cholesky(cov + 1e-15 * np.eye(len(mean)))

    def decide(rng):
        y = mean[:, None] + root @ rng.standard_normal((len(mean), n))
        drawn = [_cell(np.vstack([np.zeros((1, n)), y[: k - 1]]), "a"), _cell(np.vstack([np.zeros((1, n)), y[k - 1:]]), "b")]
        return V.side_verdict(Sp.contrast_estimate(drawn), side)

    assert 0.4 <= _direct(decide, rng_seed=9) <= 0.6


def test_a_design_question_gets_a_chance_of_a_decision():
    """The design use: assumed means per sigma_w, noise, seeds and grid in; P(decision) out, rising
    with the seeds, for a spread claim and a spread contrast."""
    sgd = 0.85 - np.linspace(0, 0.265, 25)
    adam = 0.88 - np.linspace(0, 0.043, 25)
    assert P.spread_decision_rate(sgd, 0.005, 10, V.greater(0)) == 1.0
    rates = [P.contrast_decision_rate(adam, 0.88 - np.linspace(0, 0.016, 25), 0.01, 0.01, n, V.greater(0)) for n in (3, 10, 30)]
    assert rates[0] < rates[1] < rates[2]


# a truth where each seed shares an effect across the two configurations (its init draws): the
# per-seed drops of a and b correlate 0.5, as the committed tiers' do (0.20-0.65)
W = (SIGMAS - SIGMAS.min()) / np.ptp(SIGMAS)
PAIRED = (0.8 - 0.03 * W, 0.8 - 0.02 * W, 0.01, 0.01 * math.sqrt(2))   # means a, b; run noise; shared seed effect


def _paired_cells(seeds: int, rng: np.random.Generator, centred: bool = False) -> list[V.Cell]:
    ma, mb, sd, tau = PAIRED
    shared = tau * rng.standard_normal(seeds)[None, :] * W[:, None]          # one seed's effect, in both configurations
    noise = [shared + sd * rng.standard_normal((len(W), seeds)) for _ in range(2)]
    if centred:   # a row whose seed means are the truth's: "if the true effect equals the estimate" holds exactly
        noise = [x - x.mean(1, keepdims=True) for x in noise]
    shift = rng.normal(0, 0.05, (2, 1, seeds))                                # a seed effect shared by a cell's sigma_w
    return [_cell(ma[:, None] + noise[0] + shift[0], "a"), _cell(mb[:, None] + noise[1] + shift[1], "b")]


def test_the_contrast_rate_is_simulated_from_the_seeds_own_pairing():
    """With correlated seeds the rate a row predicts (from its own seed-paired values) is the chance the
    claim functions decide runs drawn from its truth, within 5 pp; the independent-noise simulation was
    ~10-20 pp low (conservative) at these seeds."""
    cells = _paired_cells(200, np.random.default_rng(11), centred=True)
    da, db = (100 * (c.values[0] - c.values[-1]) for c in cells)
    assert 0.4 <= np.corrcoef(da, db)[0, 1] <= 0.6
    side = V.greater(0)
    rate = P.rate_for(Sp.contrast_estimate(cells), side, cells, contrast=True)
    for n in (16, 20):
        direct = _direct(lambda rng, n=n: V.side_verdict(Sp.contrast_estimate(_paired_cells(n, rng)), side), n_sims=1000, rng_seed=12)
        assert 0.2 < direct < 0.8 and abs(rate(n) - direct) <= 0.05, (n, rate(n), direct)


def test_a_design_can_state_the_correlation_of_its_seeds():
    """contrast_decision_rate (means and sd in: the design tool's form) with ``corr``, the correlation of
    one seed's runs at one sigma_w across the two configurations: the chance the claim functions decide
    runs drawn that way, within 5 pp; without it (independent configurations) the rate is lower here."""
    ma, mb, sd, _ = PAIRED
    stated = P.contrast_decision_rate(ma, mb, sd, sd, 16, V.greater(0), corr=0.5)

    def decide(rng):
        shared = rng.standard_normal((len(W), 16))            # half of each run's noise variance shared by the seed
        a = ma[:, None] + sd * (shared + rng.standard_normal((len(W), 16))) / math.sqrt(2)
        b = mb[:, None] + sd * (shared + rng.standard_normal((len(W), 16))) / math.sqrt(2)
        return V.side_verdict(Sp.contrast_estimate([_cell(a, "a"), _cell(b, "b")]), V.greater(0))

    assert abs(stated - _direct(decide, n_sims=1000, rng_seed=13)) <= 0.05
    assert P.contrast_decision_rate(ma, mb, sd, sd, 16, V.greater(0)) < stated - 0.05


def test_the_paired_covariance_is_positive_definite_with_fewer_seeds_than_values():
    """3 seeds, 2 x 25 sigma_w: the sample covariance has rank 2; shrunk towards the independent-noise model it is full rank."""
    rng = np.random.default_rng(14)
    grid = np.linspace(0.1, 2.5, 25)
    cells = [V.Cell(k, grid, np.arange(3), 0.8 - 0.02 * grid[:, None] + 0.01 * rng.standard_normal((25, 3))) for k in "ab"]
    mean, cov, k = P.paired_truth(cells)
    assert k == 25 and mean.shape == (48,) and np.linalg.eigvalsh(cov).min() > 0


def test_the_seeds_a_would_decide_text_states_are_read_back_by_the_module_that_writes_them():
    """The README's "what this size decides" reads the seeds for an even chance from the claims table's text."""
    from initmem.stats.power import seeds_for_half

    text = P.would_decide(lambda n: min(1.0, n / 20), 4)
    assert text.startswith("~10 seeds per configuration") and seeds_for_half(text) == 10
    assert seeds_for_half(P.would_decide(lambda n: 0.0, 4, max_seeds=50)) is None   # "more than 50 seeds"
    assert seeds_for_half("seeds x Sxx(sigma_w) >= 12 (now 3 x 4): ~9 seeds at this sigma_w grid") == 9
