"""CIFAR-10 through torchvision's loader (downloaded, md5-checked by torchvision)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from initmem.engine.data import DataError

ORIGIN = "cifar10-official"
HOLDOUT = 10_000
CLASSES = 10


def to_nchw(images) -> np.ndarray:
    """torchvision's NHWC uint8 images as NCHW."""
    return np.ascontiguousarray(np.asarray(images, dtype=np.uint8).transpose(0, 3, 1, 2))


def load_torchvision(dataset, name: str, root: str | Path, offline: str) -> tuple[np.ndarray, ...]:
    """Download (md5-checked by torchvision) and read one of torchvision's CIFAR datasets into
    (x50k, y50k, x10k, y10k); ``offline`` says which config keys to set without internet."""
    try:
        train = dataset(str(root), train=True, download=True)
        test = dataset(str(root), train=False, download=True)
    except Exception as exc:
        raise DataError(f"torchvision could not download {name} into {root} ({exc}). Without internet, set {offline}") from exc
    return (to_nchw(train.data), np.asarray(train.targets, dtype=np.int64),
            to_nchw(test.data), np.asarray(test.targets, dtype=np.int64))


def load_cifar10_torchvision(root: str | Path) -> tuple[np.ndarray, ...]:
    """Download (md5-checked by torchvision) and read CIFAR-10 into (x50k, y50k, x10k, y10k)."""
    from torchvision.datasets import CIFAR10

    return load_torchvision(CIFAR10, "CIFAR-10", root, "data.source: archive and data.archive: /path/to/cifar-10-python.tar.gz")


def load(data_cfg: dict, download_root: Path) -> tuple[np.ndarray, ...]:
    """CIFAR-10's 50,000 training and 10,000 test images."""
    return load_cifar10_torchvision(download_root)
