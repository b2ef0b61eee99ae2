import gzip
import io
import pickle
import tarfile

import numpy as np
import pytest

from initmem.engine.data import DataError, build_splits, load_cifar10_archive, load_prepared, save_prepared, split_pool


def _write_fake_archive(path, n_per_batch=10, drop=None):
    with tarfile.open(path, "w:gz") as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            if name == drop:
                continue
            raw = pickle.dumps({b"data": np.zeros((n_per_batch, 3072), np.uint8), b"labels": [0] * n_per_batch})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))


def test_missing_archive_names_the_file(tmp_path):
    with pytest.raises(DataError, match="does not exist.*cifar-10-python.tar.gz"):
        load_cifar10_archive(tmp_path / "nope.tar.gz")


def test_wrong_md5_explains_the_way_out(tmp_path):
    f = tmp_path / "cifar-10-python.tar.gz"
    _write_fake_archive(f)
    with pytest.raises(DataError, match=r"md5 [0-9a-f]+ is not the official.*data\.verify_md5: false"):
        load_cifar10_archive(f, verify_md5=True)


def test_truncated_archive_is_reported(tmp_path):
    f = tmp_path / "cifar-10-python.tar.gz"
    _write_fake_archive(f)
    f.write_bytes(f.read_bytes()[:200])
    with pytest.raises(DataError, match="truncated or corrupt"):
        load_cifar10_archive(f, verify_md5=False)


def test_archive_missing_a_batch(tmp_path):
    f = tmp_path / "a.tar.gz"
    _write_fake_archive(f, drop="test_batch")
    with pytest.raises(DataError, match="test_batch"):
        load_cifar10_archive(f, verify_md5=False)


def test_not_a_tar(tmp_path):
    f = tmp_path / "a.tar.gz"
    f.write_bytes(gzip.compress(b"hello"))
    with pytest.raises(DataError, match="not a readable"):
        load_cifar10_archive(f, verify_md5=False)


def test_wrong_sizes_in_archive(tmp_path):
    f = tmp_path / "a.tar.gz"
    _write_fake_archive(f, n_per_batch=10)
    with pytest.raises(DataError, match="expected 50000 / 10000"):
        load_cifar10_archive(f, verify_md5=False)


def test_split_is_permutation_seed_42():
    x = np.arange(50).reshape(50, 1)
    y = np.arange(50)
    xt, yt, xv, yv = split_pool(x, y, 10)
    perm = np.random.RandomState(42).permutation(50)
    assert yv.tolist() == perm[:10].tolist() and yt.tolist() == perm[10:].tolist()


def test_synthetic_splits_and_prepared_roundtrip(tmp_path):
    s = build_splits({"source": "synthetic", "n_train": 30, "n_val": 20, "n_test": 10})
    assert (len(s.x_train), len(s.x_val), len(s.x_test)) == (30, 20, 10)
    assert s.x_train.dtype == np.uint8 and s.x_train.shape[1:] == (3, 32, 32)
    save_prepared(s, tmp_path / "d.npz")
    back = load_prepared(tmp_path / "d.npz")
    assert np.array_equal(back.x_val, s.x_val) and back.meta["n_train"] == 30


def test_empty_split_requested():
    with pytest.raises(DataError, match=r"data.n_train = 0 .*1\.\.0 allowed|data.n_train = 0"):
        build_splits({"source": "synthetic", "n_train": 0, "n_val": 10, "n_test": 10})


def test_missing_prepared_file_says_which_rule(tmp_path):
    with pytest.raises(DataError, match="prepare_data"):
        load_prepared(tmp_path / "cifar10.npz")


@pytest.mark.slow
def test_real_archive_reads_50k_10k(cifar_archive):
    x, y, xt, yt = load_cifar10_archive(cifar_archive, verify_md5=False)
    assert x.shape == (50000, 3, 32, 32) and xt.shape == (10000, 3, 32, 32)
    assert np.bincount(y).tolist() == [5000] * 10 and np.bincount(yt).tolist() == [1000] * 10
    with pytest.raises(DataError, match="md5"):
        load_cifar10_archive(cifar_archive, verify_md5=True)  # the JPEG copy is not the official archive
