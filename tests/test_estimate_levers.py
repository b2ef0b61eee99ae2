"""`estimate` prints the central GPU-hours in the precision the config chooses and the levers it
assumes (precision, memory layout, compile, cuDNN algorithms, pack sizes, the GPU, early stopping),
each measured, default or assumed; a measured rate table names the versions it was measured with,
and `estimate` warns where they differ from this environment's or a rate is above 3x the default."""

from __future__ import annotations

import csv
import io
import re

import pytest
from conftest import ROOT, script

from initmem.costs.rates import RateModel
from initmem.costs.versions import version_lines
from initmem.pipeline.configfiles import load_config
from initmem.pipeline.estimate import cluster_config, estimate_table

STATUSES = r"measured|default|assumed|measured for [\d,]+ of [\d,]+ h, default for the rest"
LEVERS = ["precision", "memory format", "compile", "cuDNN algorithms", "pack size", "GPU", "early stopping"]
HEADER = "arch,width,batch_size,family,pack,precision,images_per_s"


def paper() -> dict:
    """config/paper.yaml as `estimate config/paper.yaml` prices it."""
    return cluster_config(load_config([ROOT / "config" / "paper.yaml"]))


def _levers(text: str) -> dict[str, list[str]]:
    """The levers table of `estimate`'s output: lever -> (setting, status, what it takes)."""
    start = text.splitlines().index("| lever | setting | status | the estimate takes |")
    rows = {}
    for line in text.splitlines()[start + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def _central(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("| all |")).strip("|").split("|")[4].strip()


@pytest.mark.parametrize("precision", [None, "bf16"])
def test_estimate_prints_the_chosen_precision_s_central_hours_and_what_it_assumes(precision):
    config = paper()
    if precision:
        config["compute"]["precision"] = precision
    chosen = config["compute"]["precision"]
    text = estimate_table(config)
    assert f"central: {_central(text)} H200-hours in {chosen} (compute.precision, the config's choice)" in text.splitlines()
    levers = _levers(text)
    assert list(levers) == LEVERS
    assert all(re.fullmatch(STATUSES, status) for _, status, _ in levers.values())
    assert levers["precision"][:2] == [f"{chosen} (compute.precision)", "default"]  # the stated defaults, nothing measured
    assert levers["memory format"][0] == f"{config['compute']['memory_format']} (compute.memory_format)"
    assert levers["early stopping"][1] == "assumed" and levers["GPU"][0] == "one H200 per job"


@pytest.mark.slow
def test_each_lever_says_what_carries_it(tmp_path):
    """A table measuring one kind of job carries part of the hours; channels_last and compile, which no
    row measures, are assumed; a flat images/s assumes every lever's rate."""
    table = tmp_path / "rates.csv"
    table.write_text(f"{HEADER}\nresnet9,64,128,sgd,1,tf32,11000\nresnet9,64,128,sgd,16,tf32,36000\n")
    config = paper()
    config["compute"].update(rate_table=str(table), precision="tf32")
    levers = _levers(estimate_table(config))
    assert re.fullmatch(r"measured for [\d,]+ of [\d,]+ h, default for the rest", levers["precision"][1])
    config["compute"].update(memory_format="channels_last", compile="step")
    levers = _levers(estimate_table(config))
    assert levers["memory format"][1] == "assumed" and "gain is not counted" in levers["memory format"][2]
    assert levers["compile"][1] == "assumed" and "compile's gain not counted" in levers["compile"][2]
    config["compute"].update(images_per_second=5000, memory_format="contiguous", compile=False)
    levers = _levers(estimate_table(config))
    assert {status for _, status, _ in levers.values()} == {"assumed"}


def test_a_rate_table_from_another_torch_or_cuda_is_flagged():
    here = {"torch": "2.14.1+cu130", "cuda": "13.0"}

    def model(*envs):
        return RateModel({("resnet9", 64, 128, "sgd", "tf32"): {1: 11000.0}}, "measured: t", frozenset(envs))

    same = version_lines(model(("NVIDIA H200", "2.14.1+cu130", "13.0", "92400")), here)
    assert same == ["versions: rates measured with NVIDIA H200: torch 2.14.1+cu130, CUDA 13.0, cuDNN 92400"]
    other = version_lines(model(("NVIDIA H200", "2.13.0+cu128", "12.8", "91000")), here)
    assert other[1].startswith("WARNING: the rate table was measured with CUDA 12.8, torch 2.13.0+cu128, but this environment "
                               "trains with torch 2.14.1+cu130, CUDA 13.0")
    mixed = version_lines(model(("NVIDIA H200", "2.14.1+cu130", "13.0", "92400"), ("NVIDIA A100", "2.14.1+cu130", "13.0", "92400")), here)
    assert any(line.startswith("WARNING: the rate table's rows were measured in 2 different environments") for line in mixed)
    unnamed = version_lines(model(("NVIDIA H200", "", "", "")), here)
    assert unnamed[0].startswith("versions: the rate table names no torch, CUDA or cuDNN version")
    assert version_lines(RateModel(), here) == []  # the stated defaults: nothing was measured


def test_a_rate_above_three_times_the_default_is_flagged(tmp_path):
    table = tmp_path / "rates.csv"
    table.write_text(f"{HEADER}\nresnet9,64,128,sgd,1,tf32,11000\nresnet9,64,16,sgd,1,tf32,90000\n")
    lines = version_lines(RateModel.from_csv(table), {})
    flagged = [line for line in lines if "above 3x the stated default" in line]
    assert len(flagged) == 1 and "ResNet-9 b16 sgd tf32 x1" in flagged[0] and "b128" not in flagged[0]
    config = paper()
    config["compute"]["rate_table"] = str(table)
    assert flagged[0] in estimate_table(config).splitlines()


def test_the_device_check_records_the_versions_estimate_compares(tmp_path):
    check = script("benchmarks/device_check.py")
    row = {"kind": "train", "arch": "resnet9", "width": 64, "b": 128, "opt": "sgd", "pack": 16, "precision": "tf32",
           "compile": False, "images_per_s": 36000.0}
    text = check.rates_text([row], "NVIDIA H200", {"torch": "2.14.1+cu130", "cuda": "13.0", "cudnn": "92400"})
    written = list(csv.DictReader(io.StringIO(text)))
    assert {k: written[0][k] for k in ("device", "torch", "cuda", "cudnn")} == {
        "device": "NVIDIA H200", "torch": "2.14.1+cu130", "cuda": "13.0", "cudnn": "92400"}
    (tmp_path / "rates.csv").write_text(text)
    model = RateModel.from_csv(tmp_path / "rates.csv")
    assert model.environments == {("NVIDIA H200", "2.14.1+cu130", "13.0", "92400")}
    assert set(check.software_versions()) == {"torch", "cuda", "cudnn"}  # what a real check writes
