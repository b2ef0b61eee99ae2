"""Run files never collide across configs (initmem.pipeline.runfiles): a run id whose plain metrics file
holds another configuration's record gets a tagged file of its own, and a pack that trained a spec
under another id gives its record to the run renamed since (initmem.pipeline.records)."""

from __future__ import annotations

from pathlib import Path

import pytest

from initmem.engine.metrics import METRICS_FORMAT
from initmem.io import write_json
from initmem.pipeline.grid import Run
from initmem.pipeline.planning import trained_plan_files, write_plan
from initmem.pipeline.records import RecordError, extract_run, load_record, write_pack
from initmem.pipeline.runfiles import configuration_tag, run_file_stems, run_of_file

RUN_ID = "sgd_b16_sw0.5_s0"
DATA = {"source": "synthetic", "n_train": 64}
OTHER_DATA = {"source": "archive", "n_train": 64}


def _spec(epochs: int) -> dict:
    return {"optimizer": "sgd", "batch_size": 16, "epochs": epochs, "sigma_w": 0.5, "seed": 0}


def _record(run_id: str, key: str, epochs: int = 1) -> dict:
    return {"format": METRICS_FORMAT, "run_id": run_id, "spec": _spec(epochs), "status": "ok", "history": {},
            "summary": {"tau_best": 1, "test_acc_best": 0.5}, "env": {}, "wall_seconds": 1.0, "key": key}


def _trained(root: Path, pack: str, epochs: int, key: str, data: dict) -> None:
    """A trained pack of one config: its plan and its pack file."""
    write_plan(root / "plans/main" / f"{pack}.json", [{"run_id": RUN_ID, "spec": _spec(epochs), "key": key}], data_id=data)
    write_pack(root / "packs/main" / f"{pack}.json", [_record(RUN_ID, key, epochs)])


def _stem(root: Path, pack: str, epochs: int, data: dict = DATA) -> str:
    """The metrics file name this config (its run of ``epochs``, in ``pack``) gives the run."""
    run = Run("main", RUN_ID, "sgd_b16", _spec(epochs))
    plans = trained_plan_files(root / "plans", root / "packs", "main")
    return run_file_stems([run], {RUN_ID: pack}, plans, data, root / "runs/main")[RUN_ID]


def test_two_configs_with_one_run_id_keep_both_records(tmp_path):
    """The default trained and cut sgd_b16_sw0.5_s0 (1 epoch); another config names it too (2 epochs):
    the other's record goes beside it, tagged, and each config keeps finding its own."""
    _trained(tmp_path, "default", epochs=1, key="k1", data=DATA)
    write_json(tmp_path / f"runs/main/{RUN_ID}.json", _record(RUN_ID, "k1", epochs=1))
    assert _stem(tmp_path, "default", epochs=1) == RUN_ID  # alone in the checkout: the plain file
    other = _stem(tmp_path, "paper", epochs=2)
    assert other == f"{RUN_ID}~{configuration_tag(_spec(2), DATA)}" != RUN_ID
    # the other config trained and cut its run: neither moves
    _trained(tmp_path, "paper", epochs=2, key="k2", data=DATA)
    write_json(tmp_path / f"runs/main/{other}.json", _record(RUN_ID, "k2", epochs=2))
    assert _stem(tmp_path, "default", epochs=1) == RUN_ID and _stem(tmp_path, "paper", epochs=2) == other
    # the same spec on other data is another configuration too
    assert _stem(tmp_path, "copy", epochs=1, data=OTHER_DATA) == f"{RUN_ID}~{configuration_tag(_spec(1), OTHER_DATA)}"
    # a tagged file stays where it was cut, whatever becomes of the plain one
    (tmp_path / f"runs/main/{RUN_ID}.json").unlink()
    assert _stem(tmp_path, "paper", epochs=2) == other
    assert run_of_file(other) == RUN_ID == run_of_file(RUN_ID)


def test_a_run_retrained_in_its_own_config_keeps_its_file(tmp_path):
    """A new key for the same configuration (the trainer's code or the precision changed): no other
    configuration names the id, so the run is cut again into its plain file, as before; and an id
    no other plan names is never read from disk."""
    _trained(tmp_path, "mine", epochs=1, key="k-old", data=DATA)
    write_json(tmp_path / f"runs/main/{RUN_ID}.json", _record(RUN_ID, "k-old"))
    assert _stem(tmp_path, "mine", epochs=1) == RUN_ID
    (tmp_path / f"runs/main/{RUN_ID}.json").write_text("{ not json")  # not read: nothing collides
    assert _stem(tmp_path, "mine", epochs=1) == RUN_ID


def test_a_run_renamed_since_its_pack_trained_is_cut_from_its_record_under_the_new_id(tmp_path):
    """sgd_b16_sw0.5_s0 renamed sgd_b16_lr0.01_sw0.5_s0 (a default stated in a grid list): the same
    spec, the same key; its file is cut from the record of that key, under the new id."""
    pack = tmp_path / "pack.json"
    write_pack(pack, [_record(RUN_ID, "k1")])
    renamed = "sgd_b16_lr0.01_sw0.5_s0"
    extract_run(pack, renamed, tmp_path / "out.json", tmp_path / "out.log", key="k1")
    record = load_record(tmp_path / "out.json")
    assert record["run_id"] == renamed and record["key"] == "k1" and record["spec"] == _spec(1)
    assert (tmp_path / "out.log").read_text().startswith(f"{renamed}: ok")
    with pytest.raises(RecordError, match=f"holds no run {renamed}"):  # another key is another run
        extract_run(pack, renamed, tmp_path / "other.json", key="k2")
    assert not (tmp_path / "other.json").exists()
