"""Optimizers, architectures and data sources as one file each, found by name: the config accepts
exactly the files there (no second list), the names are read without torch, a new file is a valid
config value at once; Lion trains in packs as single runs do; CIFAR-100's local archive reads in the
official layout; ``data.resolution: 16`` is the 2x2 mean of the 32x32 pixels, in its own data folder."""

import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
import textwrap

import numpy as np
import pytest
from conftest import ROOT, tiny_config
from helpers.packs import PACK_RTOL, assert_same_records, pack_runs

from initmem.engine.data import DataError, build_splits
from initmem.pipeline.identity import data_folder, data_identity
from initmem.spec import ADAPTIVE, ARCHS, DATA_SOURCES, OPTIMIZERS, registry_folder

LIBRARY = ROOT / "workflow" / "initmem"


def test_the_names_are_the_files():
    # the shipped entries are there, and exactly the files are: a user's own file is one more name, not a failure
    assert {"adam", "adamw", "lion", "muon", "muon_full", "sgd", "sgd_momentum"} <= set(OPTIMIZERS)
    assert {"resnet110", "resnet56", "resnet9"} <= set(ARCHS)
    assert {"archive", "cifar100", "synthetic", "torchvision"} <= set(DATA_SOURCES)
    for kind, names in (("optimizer", OPTIMIZERS), ("arch", ARCHS), ("source", DATA_SOURCES)):
        assert names == tuple(sorted(p.stem for p in registry_folder(kind).glob("[!_]*.py")))
    assert {"adam", "adamw", "lion", "muon", "muon_full"} <= set(ADAPTIVE) and not {"sgd", "sgd_momentum"} & set(ADAPTIVE)
    schema = (ROOT / "config/schema.yaml").read_text()
    assert "muon_full" not in schema and "resnet110" not in schema  # no second list of names


def _python(code: str, library) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(library), "PATH": "/usr/bin:/bin"}, cwd=ROOT)


def test_a_new_entry_file_is_accepted_by_the_config_without_torch(tmp_path):
    """In a copy of the library: a file engine/optimizers/lamb.py makes `optimizer: [lamb]` valid for the
    schema and the grid, and reading every name and default imports no torch."""
    shutil.copytree(LIBRARY, tmp_path / "initmem", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "initmem/engine/optimizers/lamb.py").write_text('"""A new optimizer."""\n\nWEIGHT_DECAY = 0.01\nCLOCK = "T_adapt"\nSLOTS = {"m": "all"}\n')
    cfg = tiny_config({"s": {"grid": {"optimizer": ["lamb"], "sigma_w": [1.0], "seed": [0]}}})
    code = f"""
        import json, sys
        from initmem.pipeline.configfiles import check_schema
        from initmem.pipeline.grid import expand_studies
        from initmem.spec import ADAPTIVE
        cfg = json.loads({json.dumps(cfg)!r})
        check_schema(cfg, {str(ROOT / "config/schema.yaml")!r})
        runs = expand_studies(cfg)
        print(runs["s"][0].spec["optimizer"], runs["s"][0].spec["weight_decay"], "lamb" in ADAPTIVE, "torch" in sys.modules)
    """
    out = _python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["lamb", "0.01", "True", "False"]
    (tmp_path / "initmem/engine/optimizers/lamb.py").unlink()  # and without the file, the same config is refused
    out = _python(code, tmp_path)
    assert out.returncode != 0 and "lamb" in out.stderr and "is not one of" in out.stderr


def test_lion_packs_match_single_runs(tiny_tensors):
    from initmem.engine.packed import train_packed
    from initmem.engine.train import train_run

    runs = pack_runs(optimizer="lion", lr=1e-3, norm="layernorm", weight_decay=0.01)
    packed = train_packed(runs, tiny_tensors, log=None)
    single = [train_run(r["spec"], tiny_tensors, r["run_id"], log=None) for r in runs]
    assert_same_records(packed, single, rtol=PACK_RTOL)
    assert single[0]["history"]["T_wd"][-1] == pytest.approx(0.01 * single[0]["history"]["T_adapt"][-1])


def _cifar100_archive(path, n_train=60, n_test=20, parts=("train", "test")):
    """A small archive in the official CIFAR-100 layout: train and test pickles with b'fine_labels'."""
    rng = np.random.RandomState(0)
    with tarfile.open(path, "w:gz") as tar:
        for name, n in [(p, n_train if p == "train" else n_test) for p in parts]:
            batch = {b"data": rng.randint(0, 256, (n, 3072)).astype(np.uint8), b"fine_labels": list(rng.randint(0, 100, n)),
                     b"coarse_labels": [0] * n, b"filenames": [b"x.png"] * n}
            raw = pickle.dumps(batch)
            info = tarfile.TarInfo(f"cifar-100-python/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return rng


def test_cifar100_reads_its_official_archive_layout(tmp_path, monkeypatch):
    from initmem.engine.datasources import cifar100

    monkeypatch.setattr(cifar100, "HOLDOUT", 20)  # a small archive: 60 train images, 20 held out
    f = tmp_path / "cifar-100-python.tar.gz"
    _cifar100_archive(f)
    cfg = {"source": "cifar100", "archive": str(f), "verify_md5": False, "n_train": 40, "n_val": 20, "n_test": 20}
    with pytest.raises(DataError, match="expected 50000 / 10000"):  # the official sizes are checked
        build_splits(cfg)
    monkeypatch.setattr(cifar100, "POOL_IMAGES", 60)
    monkeypatch.setattr(cifar100, "TEST_IMAGES", 20)
    s = build_splits(cfg)
    with tarfile.open(f) as tar:
        train = pickle.loads(tar.extractfile("cifar-100-python/train").read(), encoding="bytes")
    perm = np.random.RandomState(42).permutation(60)
    assert s.x_train.shape == (40, 3, 32, 32) and s.meta["classes"] == 100
    assert s.y_val.tolist() == [train[b"fine_labels"][i] for i in perm[:20]]
    assert np.array_equal(s.x_train[0], train[b"data"][perm[20]].reshape(3, 32, 32))
    with pytest.raises(DataError, match=r"md5 [0-9a-f]+ is not the official cifar-100-python.tar.gz"):
        build_splits({**cfg, "verify_md5": True})
    _cifar100_archive(f, parts=("train",))
    with pytest.raises(DataError, match=r"\['test'\] not found.*cifar-100-python/train, test"):
        build_splits(cfg)
    assert data_identity({**cfg, "verify_md5": True})["origin"] == "cifar100-official"
    assert data_folder(data_identity({**cfg, "verify_md5": True}), "code").startswith("cifar100-40-20-20-")


def test_resolution_16_is_the_2x2_mean_and_has_its_own_data_identity():
    cfg = {"source": "synthetic", "n_train": 30, "n_val": 20, "n_test": 10}
    big, small = build_splits(cfg), build_splits({**cfg, "resolution": 16})
    for part in ("x_train", "x_val", "x_test"):
        x32, x16 = getattr(big, part).astype(np.float64) / 255, getattr(small, part).astype(np.float64) / 255
        assert x16.shape[-2:] == (16, 16)
        expected = (x32[..., 0::2, 0::2] + x32[..., 1::2, 0::2] + x32[..., 0::2, 1::2] + x32[..., 1::2, 1::2]) / 4
        assert np.abs(x16 - expected).max() < 1e-12
    assert np.array_equal(big.y_train, small.y_train) and small.meta["resolution"] == 16 and "resolution" not in big.meta
    # 32 (the default) is the identity it always was; 16 another, in another folder
    assert data_identity({**cfg, "resolution": 32}) == data_identity(cfg) == {"origin": "synthetic:0", "n_train": 30, "n_val": 20, "n_test": 10}
    assert data_folder(data_identity(cfg), "c") != data_folder(data_identity({**cfg, "resolution": 16}), "c")
    with pytest.raises(DataError, match="resolution"):
        build_splits({**cfg, "resolution": 8})


@pytest.mark.parametrize("arch", ["resnet9", "resnet56"])
def test_architectures_take_16x16_inputs(arch):
    import torch

    from initmem.engine.models import build_model

    model = build_model(arch, width=8).eval()
    assert model(torch.zeros(2, 3, 16, 16)).shape == (2, 10)
    assert build_model(arch, width=8, classes=100)(torch.zeros(2, 3, 16, 16)).shape == (2, 100)


def test_registries_load_by_name_with_a_clear_error():
    from initmem.engine.models import build_model

    with pytest.raises(ValueError, match=r"unknown arch 'vit'; choose one of \['resnet110', 'resnet56', 'resnet9'\]"):
        build_model("vit")
    with pytest.raises(DataError, match="data.source 'imagenet' is unknown"):
        build_splits({"source": "imagenet", "n_train": 1, "n_val": 1, "n_test": 1})


def test_a_failed_torchvision_download_names_the_dataset_and_the_offline_keys(tmp_path):
    from initmem.engine.data import DataError
    from initmem.engine.datasources.torchvision import load_torchvision

    def offline(root, train, download):
        raise OSError("no network")

    with pytest.raises(DataError, match=r"could not download CIFAR-100 into .*no network.*set data.archive: x"):
        load_torchvision(offline, "CIFAR-100", tmp_path, "data.archive: x")


def test_prepare_offers_every_data_source_file():
    """``python -m initmem prepare --source`` accepts exactly the data source files (CIFAR-100 too)."""
    out = subprocess.run([sys.executable, "-m", "initmem", "prepare", "--help"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")})  # this checkout's code, not the venv's
    assert out.returncode == 0, out.stderr
    assert "{" + ",".join(DATA_SOURCES) + "}" in out.stdout.replace("\n", "").replace(" ", "")
