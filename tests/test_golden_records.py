"""Golden records (tools/golden_records.py): a tiny fixed-seed float64 run per optimizer and per
architecture reproduces the numbers pinned for the trainer's version, so "this code computes the same
numbers as that version" (identity.SAME_NUMBERS_AS) is checked, not declared."""

import importlib.util
import json
import re

import pytest
from conftest import ROOT

_spec = importlib.util.spec_from_file_location("golden_records", ROOT / "tools" / "golden_records.py")
G = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(G)
REGENERATE = "PYTHONPATH=workflow .venv/bin/python tools/golden_records.py --write"


@pytest.fixture(scope="module")
def pinned() -> dict:
    return json.loads(G.PINNED.read_text())


@pytest.fixture(scope="module")
def now() -> dict:
    return G.current()


def test_every_optimizer_and_architecture_file_has_a_golden_record(pinned):
    from initmem.spec import entry_names

    missing = sorted(set(G.cases()) - set(pinned["records"]))
    assert not missing, f"no golden record for {missing}: pin them with {REGENERATE}"
    assert {f"optimizer={o}" for o in entry_names("optimizer")} | {f"arch={a}" for a in entry_names("arch") if a != "resnet9"} == set(G.cases())


def test_the_records_are_pinned_for_the_trainers_version(pinned):
    """A trainer edit that computes the same numbers maps onto the pinned version (SAME_NUMBERS_AS);
    any other edit changes every run's key, and its numbers are pinned anew."""
    from initmem.pipeline.identity import trainer_version

    assert pinned["trainer_version"] == trainer_version(), (
        f"the trainer's code is version {trainer_version()}, the golden records are pinned for {pinned['trainer_version']}: "
        f"if the next test passes the edit computes the same numbers (declare it in identity.SAME_NUMBERS_AS); "
        f"otherwise every run trains again, and {REGENERATE} pins the new numbers")


def test_the_code_computes_the_pinned_numbers(pinned, now):
    found = [line for line in G.differences(pinned, now) if not line.startswith("the trainer's version")]
    assert found == [], "\n".join(found)


def test_a_moved_number_or_a_missing_record_is_a_difference(pinned, now):
    moved = json.loads(json.dumps(pinned))
    moved["records"]["optimizer=adam"]["history"]["train_loss"][1] *= 1 + 1e-6
    del moved["records"]["optimizer=sgd"]
    found = G.differences(moved, now)
    assert any(re.match(r"optimizer=adam: 1 of \d+ numbers differ, first history.train_loss\[1\]", line) for line in found), found
    assert "optimizer=sgd: no golden record pinned" in found
    # rounding far below the tolerance is not a difference
    close = json.loads(json.dumps(pinned))
    close["records"]["optimizer=adam"]["history"]["train_loss"][1] *= 1 + 1e-10
    assert [line for line in G.differences(close, now) if line.startswith("optimizer=adam")] == []
