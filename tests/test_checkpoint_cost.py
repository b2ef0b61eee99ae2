"""What periodic checkpoints cost a campaign (initmem.costs.checkpoints) and the line `estimate` prints of it."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT

from initmem.costs import checkpoints as K


def test_youngs_interval_is_where_the_saves_cost_what_the_expected_loss_costs():
    save_s, days = 18.9, 30.0
    minutes = K.young_minutes(save_s, days)
    assert minutes == pytest.approx(math.sqrt(2 * 18.9 * 30 * 86400) / 60)   # ~165 min
    one_pack = [(1000.0, K.SAVE_MIB_PER_S * save_s)]    # 1,000 GPU-h of one pack whose save takes save_s
    at = K.campaign_cost(one_pack, minutes, days)
    assert at["save hours"] == pytest.approx(at["lost hours"], rel=0.01)
    # the optimum: a shorter or a longer interval costs more in all
    total = lambda m: sum(K.campaign_cost(one_pack, m, days)[k] for k in ("save hours", "lost hours"))
    assert total(minutes) < min(total(minutes / 4), total(minutes * 4))


def test_no_saves_cost_nothing_to_write_and_lose_at_most_half_a_job_to_each_stop():
    cost = K.campaign_cost([(10.0, 100.0)], 0, 30.0)
    assert cost["save hours"] == cost["TiB written"] == 0
    assert cost["lost hours"] == pytest.approx(10 / (30 * 24) * 10 / 2)
    # an interval longer than the job saves nothing and loses no more than half the job either
    assert K.campaign_cost([(10.0, 100.0)], 24 * 60, 30.0) == cost


def test_estimate_prints_the_configs_interval_beside_youngs():
    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.estimate import checkpoint_line

    line = checkpoint_line(load_config([ROOT / "config" / "paper.yaml"]))
    assert line.startswith("checkpoints every 165 min (`checkpoint.every_minutes`): saves ")
    assert "Young's interval for the largest pack (4,816 MiB: 18.9 s a save" in line and ": 165 min, saves" in line
