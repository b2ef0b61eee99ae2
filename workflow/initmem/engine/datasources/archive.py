"""CIFAR-10 from a local ``cifar-10-python.tar.gz`` or its extracted ``cifar-10-batches-py`` folder
(air-gapped clusters); md5-checked against the official archive unless ``data.verify_md5: false``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from initmem.engine.data import DataError, check_archive, read_pickle_archive

ORIGIN = "cifar10-official"  # with verify_md5 (the default): the same pixels as torchvision's download
HOLDOUT = 10_000
CLASSES = 10
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"  # official cifar-10-python.tar.gz
TRAIN_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]
TEST_BATCH = "test_batch"


def load_cifar10_archive(archive: str | Path, verify_md5: bool = True) -> tuple[np.ndarray, ...]:
    """Read a local CIFAR-10 python archive (.tar.gz) or extracted folder into (x50k, y50k, x10k, y10k)."""
    archive = Path(archive)
    check_archive(archive, verify_md5, CIFAR10_MD5, "cifar-10-python.tar.gz")
    batches = read_pickle_archive(archive, "cifar-10-batches-py", [*TRAIN_BATCHES, TEST_BATCH])
    x_pool = np.concatenate([batches[n][0] for n in TRAIN_BATCHES])
    y_pool = np.concatenate([batches[n][1] for n in TRAIN_BATCHES])
    x_test, y_test = batches[TEST_BATCH]
    if len(x_pool) != 50_000 or len(x_test) != 10_000:
        raise DataError(f"{archive}: {len(x_pool)} training / {len(x_test)} test images, expected 50000 / 10000")
    return x_pool, y_pool, x_test, y_test


def load(data_cfg: dict, download_root: Path) -> tuple[np.ndarray, ...]:
    """The archive ``data.archive`` names."""
    if not data_cfg.get("archive"):
        raise DataError("data.source is 'archive' but data.archive is not set; give the path of cifar-10-python.tar.gz")
    return load_cifar10_archive(data_cfg["archive"], bool(data_cfg.get("verify_md5", True)))
