"""A training job's settings: one frozen TrainSettings built from the job's JSON (the workflow's
INITMEM_TRAIN_SETTINGS), which names exactly its fields; an unknown or missing key is one line."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from conftest import ROOT

from initmem.engine.settings import TrainSettings


def _workflow_keys() -> list[str]:
    """The keys of TRAIN_SETTINGS_JSON in workflow/rules/common.smk (what every train job is given)."""
    text = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    block = re.search(r"^TRAIN_SETTINGS_JSON = json\.dumps\(dict\((.*?)^\)\)", text, re.S | re.M)
    assert block, "TRAIN_SETTINGS_JSON not found in common.smk"
    return re.findall(r"^\s+(\w+)=", block.group(1), re.M)


def test_the_workflows_settings_json_names_exactly_the_fields():
    assert sorted(_workflow_keys()) == sorted(f.name for f in dataclasses.fields(TrainSettings))


def test_the_json_reads_as_the_job_read_it():
    text = json.dumps({"device": "cpu", "engine": "loop", "precision": "bf16", "compile": "step", "memory_format": "channels_last",
                       "max_images": 4096, "checkpoint_every": "2", "checkpoint_minutes": None, "keep_checkpoints": 1, "attempts": 3})
    assert TrainSettings.from_json(text) == TrainSettings(device="cpu", engine="loop", precision="bf16", compile="step",
                                                          memory_format="channels_last", max_images=4096, checkpoint_every=2,
                                                          checkpoint_minutes=0.0, keep_checkpoints=True, attempts=3)
    least = TrainSettings.from_dict({"device": "cpu", "engine": "vmap", "precision": "float32", "compile": False})
    assert least == TrainSettings(device="cpu")
    with pytest.raises(dataclasses.FrozenInstanceError):
        least.device = "cuda"  # type: ignore[misc]


def test_an_unknown_or_missing_key_is_one_line_naming_it():
    with pytest.raises(ValueError, match=r"^train settings: unknown checkpoint_evry, devcie \(known: device, ") as info:
        TrainSettings.from_dict({"devcie": "cpu", "checkpoint_evry": 1, "engine": "loop", "precision": "float32", "compile": False})
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"^train settings: missing device, precision$"):
        TrainSettings.from_dict({"engine": "loop", "compile": False})


def test_train_plan_refuses_an_unknown_setting_in_one_line(tmp_path, capsys):
    from initmem.cli import main

    settings = json.dumps({"device": "cpu", "engine": "loop", "precision": "float32", "compile": False, "chekpoint_every": 1})
    with pytest.raises(SystemExit) as exited:
        main(["train-plan", str(tmp_path / "p.plan.json"), str(tmp_path / "d.npz"), str(tmp_path / "p.json"), "--settings", settings])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("initmem train-plan: error: train settings: unknown chekpoint_every (known:")
    assert not list(tmp_path.iterdir())
