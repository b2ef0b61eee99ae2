"""Golden records (tools/golden_records.py): a tiny fixed-seed float64 run per optimizer and per
architecture reproduces the numbers pinned for the trainer's version, so "this code computes the same
numbers as that version" (identity.SAME_NUMBERS_AS) is checked, not declared."""

import json
import re

import pytest
from conftest import script

G = script("tools/golden_records.py")
REGENERATE = "PYTHONPATH=workflow .venv/bin/python tools/golden_records.py --write"


@pytest.fixture(scope="module")
def pinned() -> dict:
    return json.loads(G.PINNED.read_text())


@pytest.fixture(scope="module")
def margins() -> dict:
    """Each case's sign margin (G.sign_margin), filled by the ``now`` fixture's runs."""
    return {}


@pytest.fixture(scope="module")
def now(margins) -> dict:
    return G.current(margins=margins)


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


def test_no_case_takes_a_sign_within_rounding_of_zero(now, margins):
    assert set(margins) == set(now["records"])
    assert G.sign_problems(margins) == []
    assert margins["optimizer=lion"] is not None and margins["optimizer=lion"] >= G.SIGN_MARGIN


def test_the_sign_check_finds_lion_under_batchnorm():
    """Under BatchNorm a conv bias's gradient is rounding residue: the check the Lion case is chosen by must see it."""
    margin = G.sign_margin({"optimizer": "lion", "norm": "batchnorm"})
    assert margin is not None and margin < 1e-15
    assert G.sign_problems({"optimizer=lion": margin}) and not G.sign_problems({"optimizer=sgd": None})


@pytest.mark.slow
def test_the_records_hold_on_every_vector_path_and_thread_count(pinned):
    """ATEN_CPU_CAPABILITY=default and avx2 (this process runs on the machine's own) and 2 threads give
    the pinned numbers within RTOL: a record no CPU can break (CI runs on whatever machine it gets)."""
    across = G.records_across(G.VARIANTS[1:])
    assert list(across) == ["ATEN_CPU_CAPABILITY=default, 1 thread", "ATEN_CPU_CAPABILITY=avx2, 1 thread", "ATEN_CPU_CAPABILITY=own, 2 threads"]
    found = {variant: [line for line in G.differences(pinned, records) if not line.startswith("the trainer's version")]
             for variant, records in across.items()}
    assert found == {variant: [] for variant in across}, found


def test_write_keeps_the_records_the_code_reproduces(pinned, now):
    """--write pins only new or moved records: another CPU's last digits are not a change to commit."""
    wobbled = json.loads(json.dumps(now))
    wobbled["records"]["optimizer=adam"]["history"]["train_loss"][1] *= 1 + 1e-10
    wobbled["records"]["optimizer=sgd"]["history"]["train_loss"][1] *= 1 + 1e-3
    new = G.to_pin(pinned, wobbled)
    assert new["records"]["optimizer=adam"] == pinned["records"]["optimizer=adam"]
    assert new["records"]["optimizer=sgd"] == wobbled["records"]["optimizer=sgd"]
    assert G.to_pin(pinned | {"trainer_version": "another"}, wobbled) == wobbled


def test_a_record_that_differs_between_cpus_is_named():
    rec = {"records": {"optimizer=lion": {"history": {"test_loss": [16.51]}}}}
    moved = {"records": {"optimizer=lion": {"history": {"test_loss": [16.38]}}}}
    assert G.cpu_dependence({"own": rec, "default": moved, "avx2": rec}) == [
        "optimizer=lion: 1 of 1 numbers differ under default from own, first history.test_loss[0]"]


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
