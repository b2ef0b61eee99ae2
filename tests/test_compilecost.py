"""``compute.compile`` in a training job's request: compile minutes in its runtime and the compile
workers' memory in its mem_mb, by exactly the stated constants, and in the pack sizing, so a planned
pack still fits its attempt; with compile off, plans and requests are what they were."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT, tiny_config

from initmem.costs.compilecost import COMPILE_MINUTES_PER_GRAPH, COMPILE_WORKERS_MB, compile_minutes, compiled_graphs
from initmem.pipeline.grid import expand_studies
from initmem.pipeline.planning import plan_studies
from initmem.pipeline.targets import job_mem_mb, job_runtime_minutes, pack_mem_mb, pack_rate, pack_runtime_minutes
from initmem.spec import ConfigError


def _paper(compile: bool | str) -> dict:
    config = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    config["compute"]["compile"] = compile
    return config


def _packs(config: dict) -> dict:
    """Every planned pack of ``config`` from scratch: name -> its specs."""
    return {name: [s for _, s in pack.members]
            for packs, _ in plan_studies(config, expand_studies(config)).values() for name, pack in packs.items()}


def _requests(config: dict) -> dict:
    """Every planned pack's (runtime, mem_mb) request."""
    compute = config["compute"]
    return {name: (job_runtime_minutes(specs, compute), job_mem_mb(specs, compute)) for name, specs in _packs(config).items()}


def test_compiled_graphs_count_the_static_shapes():
    spec = {"batch_size": 128, "n_train": 40_000}  # 40,000 = 312 x 128 + 64: a last partial batch
    assert compiled_graphs(spec, False) == 0
    assert compiled_graphs(spec, True) == 2 + 3  # training batch and partial batch, three evaluation shapes
    assert compiled_graphs(spec, "step") == 2 + 3 + 1  # and the optimizer update
    assert compiled_graphs({"batch_size": 16, "n_train": 40_000}, "step") == 1 + 3 + 1
    assert compiled_graphs({"batch_size": 16, "n_train": 40_000, "train_eval": True}, True) == 1 + 4


def test_compile_off_leaves_every_paper_plan_and_request_as_it_was():
    """compile false: the requests are the pre-compile formulas (pack_runtime_minutes capped, pack_mem_mb)."""
    config = _paper(False)
    compute = config["compute"]
    cap = compute["max_runtime_minutes"]
    packs = _packs(config)
    for specs in packs.values():
        assert compile_minutes(specs, compute) == 0
        assert job_runtime_minutes(specs, compute) == min(pack_runtime_minutes(specs, pack_rate(specs, compute).central), cap)
        assert job_mem_mb(specs, compute) == pack_mem_mb(specs, compute["device"])
    unset = copy.deepcopy(config)
    del unset["compute"]["compile"]
    assert _packs(unset) == packs


@pytest.mark.parametrize("compile", [True, "step"])
def test_compile_on_adds_exactly_the_stated_minutes_and_memory(compile):
    off, on = _requests(_paper(False)), _requests(_paper(compile))
    assert on.keys() == off.keys()  # the paper's packs do not move: no pack is near an attempt's boundary
    config = _paper(compile)
    compute, cap = config["compute"], config["compute"]["max_runtime_minutes"]
    added = {16: 12, 128: 15} if compile is True else {16: 15, 128: 18}  # 3 minutes x (4 or 5, and the update)
    seen = set()
    for name, specs in _packs(config).items():
        b = int(specs[0]["batch_size"])
        minutes = COMPILE_MINUTES_PER_GRAPH * compiled_graphs(specs[0], compile)
        if b in added:
            assert minutes == added[b]
            seen.add(b)
        runtime_off, mem_off = off[name]
        uncapped = pack_runtime_minutes(specs, pack_rate(specs, compute).central)
        assert on[name][0] == min(uncapped + minutes, cap)
        if uncapped + minutes <= cap:
            assert on[name][0] == runtime_off + minutes
        assert on[name][1] == mem_off + COMPILE_WORKERS_MB
    assert seen == {16, 128}


def _slow_pack_config(compile: bool | str) -> dict:
    """Eight runs of ~27 minutes each (1.5x margin, +5) under a 60-minute limit and one attempt:
    two fit one job with compile off (48 minutes), one with compile step (15 compile minutes)."""
    config = tiny_config({"main": {"grid": {"optimizer": ["sgd"], "batch_size": [32], "sigma_w": [0.5], "seed": list(range(8))}}},
                         pack=8, epochs=100)
    config["compute"].update(images_per_second=10, max_runtime_minutes=60, attempts=1, compile=compile)
    return config


def test_pack_sizing_leaves_each_attempt_its_compile_minutes():
    off, step = _packs(_slow_pack_config(False)), _packs(_slow_pack_config("step"))
    assert sorted(len(s) for s in off.values()) == [2] * 4
    assert sorted(len(s) for s in step.values()) == [1] * 8
    compute = _slow_pack_config("step")["compute"]
    for specs in step.values():
        assert compile_minutes(specs, compute) == 15  # 64 = 2 x 32: one training shape, 3 evaluation, the update
        assert job_runtime_minutes(specs, compute) == 27 + 15 <= 60  # the pack fits its attempt, compiles included


def test_compile_minutes_that_fill_the_attempt_are_refused():
    config = _slow_pack_config("step")
    config["compute"]["max_runtime_minutes"] = 15
    with pytest.raises(ConfigError, match="compile needs ~15 minutes per attempt"):
        _packs(config)
