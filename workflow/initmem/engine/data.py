"""CIFAR-10 loading, the paper's fixed split, and the compact prepared file.

Sources: ``torchvision`` (download, md5-checked by torchvision), ``archive`` (a local
``cifar-10-python.tar.gz`` or extracted ``cifar-10-batches-py`` folder, for air-gapped clusters),
``synthetic`` (small generated images with learnable class structure, for tests).

The 50,000 training images are split with ``numpy.random.RandomState(42).permutation``: the first
10,000 permuted indices are validation, the rest training (40k/10k/10k with the 10k test set).
``n_train/n_val/n_test`` keep the first n of each part.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from initmem.io import atomic_path

CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"  # official cifar-10-python.tar.gz
SPLIT_SEED = 42
N_VAL_HOLDOUT = 10_000
TRAIN_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]
TEST_BATCH = "test_batch"


class DataError(RuntimeError):
    """A data source is missing, corrupt or inconsistent; the message says which file and what to do."""


@dataclass
class Splits:
    """uint8 images in NCHW layout and int64 labels for the train/val/test parts."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    meta: dict


def md5sum(path: Path, chunk: int = 1 << 20) -> str:
    """md5 hex digest of a file."""
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _unpickle_batch(raw: bytes, name: str, origin: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        batch = pickle.loads(raw, encoding="bytes")
    except Exception as exc:  # a truncated or foreign file
        raise DataError(f"{origin}: cannot read CIFAR-10 batch {name!r} ({exc}); re-create the archive") from exc
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    data = np.asarray(batch.get("data"), dtype=np.uint8)
    labels = np.asarray(batch.get("labels"), dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3072 or len(labels) != len(data):
        raise DataError(f"{origin}: batch {name!r} has shape {data.shape}, expected (N, 3072) with N labels")
    return data.reshape(-1, 3, 32, 32), labels


def _read_batches(archive: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    wanted = [*TRAIN_BATCHES, TEST_BATCH]
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if archive.is_dir():
        folder = archive / "cifar-10-batches-py" if (archive / "cifar-10-batches-py").is_dir() else archive
        for name in wanted:
            f = folder / name
            if f.is_file():
                found[name] = _unpickle_batch(f.read_bytes(), name, str(f))
    else:
        try:
            with tarfile.open(archive, "r:*") as tar:
                for member in tar:
                    name = Path(member.name).name
                    if member.isfile() and name in wanted:
                        found[name] = _unpickle_batch(tar.extractfile(member).read(), name, str(archive))
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise DataError(
                f"{archive}: not a readable tar.gz archive ({exc}); the file is truncated or corrupt. "
                "Download cifar-10-python.tar.gz again or point data.archive at an extracted "
                "cifar-10-batches-py folder."
            ) from exc
    missing = [n for n in wanted if n not in found]
    if missing:
        raise DataError(
            f"{archive}: CIFAR-10 batches {missing} not found; expected the official "
            "cifar-10-python layout (cifar-10-batches-py/data_batch_1..5, test_batch)"
        )
    return found


def load_cifar10_archive(archive: str | Path, verify_md5: bool = True) -> tuple[np.ndarray, ...]:
    """Read a local CIFAR-10 python archive (.tar.gz) or extracted folder into (x50k, y50k, x10k, y10k)."""
    archive = Path(archive)
    if not archive.exists():
        raise DataError(
            f"data.archive {archive} does not exist; give the path of cifar-10-python.tar.gz "
            "(or its extracted cifar-10-batches-py folder), or use data.source: torchvision"
        )
    if verify_md5 and archive.is_file():
        got = md5sum(archive)
        if got != CIFAR10_MD5:
            raise DataError(
                f"{archive}: md5 {got} is not the official CIFAR-10 archive's {CIFAR10_MD5}. "
                "The file is truncated, corrupt or a different copy; download it again, or set "
                "data.verify_md5: false if you trust this copy (results then are not on the official pixels)."
            )
    batches = _read_batches(archive)
    x_pool = np.concatenate([batches[n][0] for n in TRAIN_BATCHES])
    y_pool = np.concatenate([batches[n][1] for n in TRAIN_BATCHES])
    x_test, y_test = batches[TEST_BATCH]
    if len(x_pool) != 50_000 or len(x_test) != 10_000:
        raise DataError(f"{archive}: {len(x_pool)} training / {len(x_test)} test images, expected 50000 / 10000")
    return x_pool, y_pool, x_test, y_test


def load_cifar10_torchvision(root: str | Path) -> tuple[np.ndarray, ...]:
    """Download (md5-checked by torchvision) and read CIFAR-10 into (x50k, y50k, x10k, y10k)."""
    from torchvision.datasets import CIFAR10

    try:
        train = CIFAR10(str(root), train=True, download=True)
        test = CIFAR10(str(root), train=False, download=True)
    except Exception as exc:
        raise DataError(
            f"torchvision could not download CIFAR-10 into {root} ({exc}). Without internet, set "
            "data.source: archive and data.archive: /path/to/cifar-10-python.tar.gz"
        ) from exc
    to_nchw = lambda a: np.ascontiguousarray(np.asarray(a, dtype=np.uint8).transpose(0, 3, 1, 2))  # noqa: E731
    return (to_nchw(train.data), np.asarray(train.targets, dtype=np.int64),
            to_nchw(test.data), np.asarray(test.targets, dtype=np.int64))


def make_synthetic(n_pool: int, n_test: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Small CIFAR-shaped data with learnable class structure: a smooth per-class template plus noise."""
    rng = np.random.RandomState(seed)
    coarse = rng.uniform(0, 1, size=(10, 3, 4, 4))
    templates = np.kron(coarse, np.ones((1, 1, 8, 8)))  # 10 x 3 x 32 x 32, blocky class patterns

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.arange(n) % 10
        rng.shuffle(y)
        x = 0.6 * templates[y] + 0.4 * rng.uniform(0, 1, size=(n, 3, 32, 32))
        return (np.clip(x, 0, 1) * 255).round().astype(np.uint8), y.astype(np.int64)

    x_pool, y_pool = draw(n_pool)
    x_test, y_test = draw(n_test)
    return x_pool, y_pool, x_test, y_test


def split_pool(x_pool: np.ndarray, y_pool: np.ndarray, n_val_holdout: int) -> tuple[np.ndarray, ...]:
    """The paper's fixed split: permutation seed 42, first ``n_val_holdout`` indices are validation."""
    perm = np.random.RandomState(SPLIT_SEED).permutation(len(x_pool))
    val, train = perm[:n_val_holdout], perm[n_val_holdout:]
    return x_pool[train], y_pool[train], x_pool[val], y_pool[val]


def build_splits(data_cfg: dict, download_root: str | Path = "results/data/download") -> Splits:
    """Load the configured source and return the first n of each part of the fixed split."""
    source = data_cfg["source"]
    n_train, n_val, n_test = int(data_cfg["n_train"]), int(data_cfg["n_val"]), int(data_cfg["n_test"])
    if source == "synthetic":
        holdout = n_val
        x_pool, y_pool, x_test, y_test = make_synthetic(n_train + n_val, n_test, seed=int(data_cfg.get("seed", 0)))
    elif source == "archive":
        if not data_cfg.get("archive"):
            raise DataError("data.source is 'archive' but data.archive is not set; give the path of cifar-10-python.tar.gz")
        holdout = N_VAL_HOLDOUT
        x_pool, y_pool, x_test, y_test = load_cifar10_archive(data_cfg["archive"], bool(data_cfg.get("verify_md5", True)))
    elif source == "torchvision":
        holdout = N_VAL_HOLDOUT
        x_pool, y_pool, x_test, y_test = load_cifar10_torchvision(download_root)
    else:
        raise DataError(f"data.source {source!r} is unknown; use torchvision, archive or synthetic")
    x_tr, y_tr, x_va, y_va = split_pool(x_pool, y_pool, holdout)
    for part, want, have in (("n_train", n_train, len(x_tr)), ("n_val", n_val, len(x_va)), ("n_test", n_test, len(x_test))):
        if want > have or want < 1:
            raise DataError(f"data.{part} = {want} but the {source} split has {have} images (1..{have} allowed)")
    meta = {"source": source, "archive": str(data_cfg.get("archive")), "n_train": n_train, "n_val": n_val,
            "n_test": n_test, "split_seed": SPLIT_SEED}
    return Splits(x_tr[:n_train], y_tr[:n_train], x_va[:n_val], y_va[:n_val], x_test[:n_test], y_test[:n_test], meta)


def save_prepared(splits: Splits, path: str | Path) -> None:
    """Write the compact prepared file (uint8 images, labels, split metadata) atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, x_train=splits.x_train, y_train=splits.y_train, x_val=splits.x_val, y_val=splits.y_val,
                     x_test=splits.x_test, y_test=splits.y_test, meta=np.array(json.dumps(splits.meta)))


def load_prepared(path: str | Path) -> Splits:
    """Read a prepared file written by :func:`save_prepared`."""
    path = Path(path)
    try:
        with np.load(path) as z:
            arrays = {k: z[k] for k in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")}
            meta = json.loads(str(z["meta"]))
    except FileNotFoundError:
        raise DataError(f"prepared data {path} is missing; run the prepare_data rule (snakemake {path})") from None
    except Exception as exc:
        raise DataError(f"prepared data {path} is unreadable ({exc}); delete it and run snakemake again") from exc
    return Splits(**arrays, meta=meta)
