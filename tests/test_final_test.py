"""The selected network evaluated once (``final_test: N``): each run keeps its weights and BatchNorm
buffers at tau_best, across checkpoints, and after training evaluates them on the first N test images
as the epochs' test evaluation does; a spec at the default is the spec it was."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import tiny_config, tiny_spec

from initmem.engine.loop import final_test_set
from initmem.engine.packed import train_packed
from initmem.engine.streams import Tensors
from initmem.engine.train import train_run
from initmem.pipeline.grid import expand_studies, final_test_size
from initmem.pipeline.identity import run_key
from initmem.pipeline.jobs import final_test_splits
from initmem.pipeline.planning import FINAL_TEST_ENV
from initmem.spec import ConfigError, resolve_spec, validate_spec

N_TEST = 48  # the tiny data's test images (conftest.tiny_splits)
STEPS = 3    # per epoch: 96 training images in batches of 32


def _pack(**overrides) -> list[dict]:
    """Three members whose least validation loss falls at epochs 2, 4 and 1 of 4 (Keras' moving
    statistics, lr 0.05: found by training them once), so the kept network is not the last one."""
    return [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=sw, seed=seed, epochs=4, final_test=N_TEST, **overrides)}
            for i, (sw, seed) in enumerate([(0.5, 0), (1.5, 1), (1.0, 3)])]


def _assert_final_is_the_selected_epochs_test(record: dict) -> None:
    summary, history = record["summary"], record["history"]
    i = history["epoch"].index(summary["tau_best"])
    assert summary["test_acc_final"] == summary["test_acc_best"] == history["test_acc"][i]
    assert summary["test_loss_final"] == history["test_loss"][i]


@pytest.mark.parametrize("engine", ["loop", "vmap"])
def test_final_on_the_epochs_test_images_is_the_selected_epochs_test(tiny_tensors, engine):
    """final_test = n_test: the same images, the same network, the same evaluation, bit for bit."""
    runs = _pack()
    records = (train_packed(runs, tiny_tensors, log=None) if engine == "vmap"
               else [train_run(r["spec"], tiny_tensors, r["run_id"], log=None) for r in runs])
    assert sorted(r["summary"]["tau_best"] for r in records) != [4, 4, 4]  # some selected network is not the last one
    for record in records:
        _assert_final_is_the_selected_epochs_test(record)


def test_final_reads_precise_statistics_and_stopped_members_as_the_epochs_did(tiny_tensors):
    runs = [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=sw, seed=seed, epochs=5, patience=1, lr=0.1, final_test=N_TEST,
                                                  bn_eval="precise")}
            for i, (sw, seed) in enumerate([(0.3, 0), (0.5, 0), (1.5, 2)])]
    records = train_packed(runs, tiny_tensors, log=None)
    for record in records:
        _assert_final_is_the_selected_epochs_test(record)


def test_a_diverged_run_without_an_epoch_reads_nan(tiny_tensors):
    record = train_run(tiny_spec(lr=1e6, final_test=N_TEST), tiny_tensors, "r", log=None)
    assert record["status"] == "diverged" and not record["history"]["epoch"]
    assert math.isnan(record["summary"]["test_acc_final"]) and math.isnan(record["summary"]["test_loss_final"])


@pytest.mark.parametrize("engine", ["loop", "vmap"])
def test_a_run_interrupted_after_its_best_epoch_resumes_to_the_same_final(tmp_path, tiny_tensors, stop_request, engine):
    runs = _pack()
    train = ((lambda ckpt: train_packed(runs, tiny_tensors, checkpoint=ckpt, log=None)) if engine == "vmap"
             else (lambda ckpt: [train_run(runs[0]["spec"], tiny_tensors, "r0", checkpoint=ckpt, log=None)]))
    reference = train(None)
    stop_after = 3 * STEPS + 1  # in epoch 4, after members' best epochs 1-2
    with stop_request.after_backward(stop_after), stop_request.stops("epoch 3 step 1"):
        train(tmp_path / "ckpt")
    resumed = train(tmp_path / "ckpt")
    strip = lambda recs: [{k: v for k, v in r.items() if k != "wall_seconds"} for r in recs]
    assert json.dumps(strip(resumed)) == json.dumps(strip(reference))
    assert [r["summary"]["test_acc_final"] for r in resumed] == [r["summary"]["test_acc_final"] for r in reference]


def test_a_spec_at_the_default_records_and_keys_what_it_did(tiny_tensors):
    spec = tiny_spec()
    said = resolve_spec(spec | {"final_test": 0})
    assert said == spec and "final_test" not in said
    data = {"origin": "synthetic:0", "n_train": 96, "n_val": 48, "n_test": 48}
    assert run_key(said, data, "t", "float32") == run_key(spec, data, "t", "float32")
    assert run_key(resolve_spec(spec | {"final_test": 48}), data, "t", "float32") != run_key(spec, data, "t", "float32")
    record = train_run(spec, tiny_tensors, "r", log=None)
    assert "test_acc_final" not in record["summary"] and "test_loss_final" not in record["summary"]


@pytest.mark.parametrize("value", [-1, 2.5, True, "all"])
def test_a_wrong_final_test_is_a_one_line_error(value):
    with pytest.raises(ConfigError, match=f"final_test = {value!r} must be an integer >= 0"):
        validate_spec(tiny_spec() | {"final_test": value}, "study main")


def test_the_final_set_is_the_test_splits_first_images(tiny_tensors):
    x, y = final_test_set(tiny_tensors, 10)
    assert torch.equal(x, tiny_tensors.x_test[:10]) and torch.equal(y, tiny_tensors.y_test[:10])
    larger = Tensors(**{**vars(tiny_tensors), "x_final": torch.cat([tiny_tensors.x_test] * 2),
                        "y_final": torch.cat([tiny_tensors.y_test] * 2)})
    assert len(final_test_set(larger, 2 * N_TEST)[0]) == 2 * N_TEST
    with pytest.raises(ValueError, match=f"final_test = {N_TEST + 1} but this job has {N_TEST} test images"):
        final_test_set(tiny_tensors, N_TEST + 1)


# --- the pipeline: final test images beyond the prepared data's ----------------------------------

def _fake_archive(monkeypatch) -> None:
    """The archive source reading a small made-up split: a pool of 10,040 blank images (its 10,000-image
    validation holdout leaves 40 to train on) and 30 test images numbered by their pixels."""
    from initmem.engine.registry import load_entry

    x_test = np.arange(30, dtype=np.uint8)[:, None, None, None] * np.ones((1, 3, 32, 32), dtype=np.uint8)
    split = (np.zeros((10_040, 3, 32, 32), np.uint8), np.arange(10_040) % 10, x_test, np.arange(30) % 10)
    monkeypatch.setattr(load_entry("source", "archive"), "load", lambda cfg, root: split)


def test_the_final_test_file_holds_the_first_images_of_the_same_test_split(tmp_path, monkeypatch):
    from initmem.cli import prepare_data, prepare_final_test
    from initmem.engine.data import load_prepared

    _fake_archive(monkeypatch)
    cfg = {"source": "archive", "archive": "x.tar.gz", "verify_md5": False, "n_train": 40, "n_val": 10_000, "n_test": 10}
    prepare_data(cfg, tmp_path / "data" / "cifar10.npz")
    prepare_final_test(cfg, 25, tmp_path / "final" / "test.npz")
    data, final = load_prepared(tmp_path / "data" / "cifar10.npz"), load_prepared(tmp_path / "final" / "test.npz")
    assert len(final.x_test) == 25 and len(final.x_train) == len(final.x_val) == 0
    assert (final.x_test[:10] == data.x_test).all() and (final.y_test[:10] == data.y_test).all()  # the epochs' test images come first
    runs = [{"run_id": "r", "spec": {"final_test": 25}}]
    assert final_test_splits([{"run_id": "r", "spec": {"final_test": 10}}], data, {}) is None  # the prepared test images serve
    with pytest.raises(ValueError, match="final_test = 25 but the prepared data has 10 test images and no file"):
        final_test_splits(runs, data, {})
    got = final_test_splits(runs, data, {FINAL_TEST_ENV: str(tmp_path / "final" / "test.npz")})
    assert (got.x_test == final.x_test).all()
    with pytest.raises(ValueError, match="final_test = 26 but .* holds 25 test images"):
        final_test_splits([{"run_id": "r", "spec": {"final_test": 26}}], data, {FINAL_TEST_ENV: str(tmp_path / "final" / "test.npz")})


def test_the_config_asks_final_test_images_beyond_n_test_only_of_a_fixed_split():
    config = tiny_config({"main": {"grid": {"sigma_w": [0.5, 1.0], "seed": [0]}}}, final_test=32)
    assert final_test_size(expand_studies(config), config["data"]) == 0  # n_test 32: the prepared test images serve
    config["defaults"]["final_test"] = 33
    with pytest.raises(ConfigError, match="final_test = 33 exceeds data.n_test = 32, and data.source synthetic draws"):
        expand_studies(config)
    config["data"] |= {"source": "archive", "archive": "x.tar.gz"}
    assert final_test_size(expand_studies(config), config["data"]) == 33


def test_runs_csv_reads_final_test_where_a_run_has_it(tmp_path, tiny_tensors):
    from initmem.claims.analysis import collect
    from initmem.io import write_json

    for name, spec in (("on", tiny_spec(epochs=1, final_test=N_TEST)), ("off", tiny_spec(epochs=1, seed=1))):
        record = train_run(spec, tiny_tensors, name, log=None)
        write_json(tmp_path / f"{name}.json", record)
    runs, _ = collect([tmp_path / "on.json", tmp_path / "off.json"], "main")
    on, off = runs.set_index("run_id").loc["on"], runs.set_index("run_id").loc["off"]
    assert on["test_acc_final"] == on["test_acc_best"] and on["final_test"] == N_TEST
    assert math.isnan(off["test_acc_final"]) and math.isnan(off["test_loss_final"]) and off["final_test"] == 0
