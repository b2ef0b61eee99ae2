"""CIFAR-100 (fine labels, 100 classes) through torchvision's loader, or, where ``data.archive`` is
set, from a local ``cifar-100-python.tar.gz`` or its extracted ``cifar-100-python`` folder (the
official layout: ``train`` and ``test`` pickles with ``fine_labels``), md5-checked unless
``data.verify_md5: false``. The same fixed split as CIFAR-10: 10,000 of the 50,000 training images
held out for validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from initmem.engine.data import DataError, check_archive, read_pickle_archive

ORIGIN = "cifar100-official"
HOLDOUT = 10_000
CLASSES = 100
CIFAR100_MD5 = "eb9058c3a382ffc7106e4002c42a8d85"  # official cifar-100-python.tar.gz (torchvision's tgz_md5)
POOL_IMAGES, TEST_IMAGES = 50_000, 10_000  # the official archive's sizes: anything else is a damaged copy


def load_cifar100_archive(archive: str | Path, verify_md5: bool = True) -> tuple[np.ndarray, ...]:
    """Read a local CIFAR-100 python archive (.tar.gz) or extracted folder into (x50k, y50k, x10k, y10k)."""
    archive = Path(archive)
    check_archive(archive, verify_md5, CIFAR100_MD5, "cifar-100-python.tar.gz")
    batches = read_pickle_archive(archive, "cifar-100-python", ["train", "test"], label_key="fine_labels")
    (x_pool, y_pool), (x_test, y_test) = batches["train"], batches["test"]
    if len(x_pool) != POOL_IMAGES or len(x_test) != TEST_IMAGES:
        raise DataError(f"{archive}: {len(x_pool)} training / {len(x_test)} test images, expected {POOL_IMAGES} / {TEST_IMAGES}")
    return x_pool, y_pool, x_test, y_test


def load_cifar100_torchvision(root: str | Path) -> tuple[np.ndarray, ...]:
    """Download (md5-checked by torchvision) and read CIFAR-100 into (x50k, y50k, x10k, y10k)."""
    from torchvision.datasets import CIFAR100

    from initmem.engine.datasources.torchvision import load_torchvision

    return load_torchvision(CIFAR100, "CIFAR-100", root, "data.archive: /path/to/cifar-100-python.tar.gz")


def load(data_cfg: dict, download_root: Path) -> tuple[np.ndarray, ...]:
    """The local archive where ``data.archive`` is set, else torchvision's download."""
    if data_cfg.get("archive"):
        return load_cifar100_archive(data_cfg["archive"], bool(data_cfg.get("verify_md5", True)))
    return load_cifar100_torchvision(download_root)
