"""The |beta| shape rules read on many simulated cells at once (initmem.stats.shape_power) and drawn lazily
(initmem.stats.drawn): the same verdicts as the claims table's rule, cell for cell, and the same answers
as the whole simulation."""

from __future__ import annotations

import numpy as np
import pytest

from initmem.planner import calibration as Cal
from initmem.stats import shape_power as SP
from initmem.stats import shapes as Sh
from initmem.stats.drawn import Drawn
from initmem.stats.verdicts import NOT_REPRODUCED, REPRODUCED, Cell

DESIGNS = (Cal.Design("two sigma_w, 3 seeds", (0.1, 2.5), 3, 0.01, 30), Cal.Design("three sigma_w, 8 seeds", (0.1, 1.3, 2.5), 8, 0.002, 40))


def _code(verdict: str) -> int:
    return 1 if verdict == REPRODUCED else -1 if verdict == NOT_REPRODUCED else 0


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: d.name)
def test_the_batched_shape_rules_give_the_rules_verdict_cell_for_cell(design):
    """Every truth of the calibration (flat, falls, a hump, a spike), 40 cells each: decay_codes and flat_codes are
    decay_decision's and flat_decision's verdicts, and the cells between them reach every verdict of both rules."""
    rng = np.random.default_rng(3)
    e, s = np.arange(1, design.epochs + 1, dtype=float), np.asarray(design.sigmas, float)
    seen = {"decay": set(), "flat": set()}
    for f, *_ in Cal.beta_truths().values():
        values = Cal.beta_cells(design, f((e - 1) / (design.epochs - 1)), 40, rng)
        cells = [Cell("sim", s, np.arange(design.seeds), v, e, {"epoch": e}) for v in values]
        decay = [_code(Sh.decay_decision(c, floor_is_enough=False)[0]) for c in cells]
        flat = [_code(Sh.flat_decision(c)[0]) for c in cells]
        assert SP.decay_codes(values, s, e).tolist() == decay
        assert SP.flat_codes(values, s, e).tolist() == flat
        seen["decay"] |= set(decay)
        seen["flat"] |= set(flat)
    if design.seeds >= 8:
        assert seen == {"decay": {-1, 0, 1}, "flat": {-1, 0, 1}}


def test_cells_drawn_in_one_block_are_the_cells_drawn_one_by_one():
    """beta_cells continues the stream as successive beta_cell calls do: the planner's chances keep their draws."""
    design, beta, rng = DESIGNS[1], np.full(DESIGNS[1].epochs, 0.05), np.random.default_rng(9)
    one_by_one = np.stack([Cal.beta_cell(design, beta, rng).values for _ in range(3)])
    assert np.array_equal(Cal.beta_cells(design, beta, 3, np.random.default_rng(9)), one_by_one)


@pytest.mark.parametrize("decided", [0, 18, 79, 80, 81, 100])
def test_reaches_answers_as_the_whole_simulation_and_draws_less_when_settled(decided):
    """100 outcomes, the first ``decided`` of them decisions: whether 80% is reached is the whole share's answer,
    whatever the order the stream draws them in; a share far from the target is settled before the last draw."""
    for order in (np.arange(100) < decided, np.arange(100) >= 100 - decided):
        stream = iter(order.tolist())
        drawn = Drawn(lambda m, stream=stream: [next(stream) for _ in range(m)], 100, bool, block=5)
        assert drawn.reaches(0.8) == (decided >= 80)
        if decided in (0, 100):
            assert len(drawn.outcomes) < 100
        assert drawn.share() == decided / 100 and len(drawn.outcomes) == 100
