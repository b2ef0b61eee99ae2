"""The shared core of the data sources: the paper's fixed split, the resolution, the compact prepared file.

Sources are files of :mod:`initmem.engine.datasources`, found by ``data.source``: ``torchvision``
(CIFAR-10 download, md5-checked by torchvision), ``archive`` (a local ``cifar-10-python.tar.gz`` or
extracted ``cifar-10-batches-py`` folder, for air-gapped clusters), ``cifar100`` (CIFAR-100 through
torchvision's loader, or its local ``cifar-100-python.tar.gz``), ``synthetic`` (small generated
images with learnable class structure, for tests).

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

from initmem.engine.registry import load_entry
from initmem.io import atomic_path
from initmem.spec import entry_names

SPLIT_SEED = 42
N_VAL_HOLDOUT = 10_000
RESOLUTIONS = (32, 16)  # data.resolution: the image side after preparation (16: 2x2 mean pooling)

# Names of one data source's file, importable from here as before (read from its file on first use)
_FROM_ENTRIES = {"load_cifar10_archive": "archive", "CIFAR10_MD5": "archive", "TRAIN_BATCHES": "archive",
                 "TEST_BATCH": "archive", "load_cifar10_torchvision": "torchvision", "make_synthetic": "synthetic"}


def __getattr__(name: str):
    if name in _FROM_ENTRIES:
        return getattr(load_entry("source", _FROM_ENTRIES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DataError(RuntimeError):
    """A data source is missing, corrupt or inconsistent; the message says which file and what to do."""


@dataclass
class Splits:
    """Images in NCHW layout (uint8 pixels; float32 pixel values 0..255 after a 2x2 mean pooling) and
    int64 labels for the train/val/test parts."""

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


def _unpickle_batch(raw: bytes, name: str, origin: str, label_key: str = "labels") -> tuple[np.ndarray, np.ndarray]:
    try:
        batch = pickle.loads(raw, encoding="bytes")
    except Exception as exc:  # a truncated or foreign file
        raise DataError(f"{origin}: cannot read CIFAR batch {name!r} ({exc}); re-create the archive") from exc
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    data = np.asarray(batch.get("data"), dtype=np.uint8)
    labels = np.asarray(batch.get(label_key), dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3072 or len(labels) != len(data):
        raise DataError(f"{origin}: batch {name!r} has shape {data.shape} and {labels.size} {label_key!r}, "
                        "expected (N, 3072) with N labels")
    return data.reshape(-1, 3, 32, 32), labels


def read_pickle_archive(archive: Path, folder: str, wanted: list[str], label_key: str = "labels") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The batches ``wanted`` of a CIFAR python archive (.tar.gz) or its extracted ``folder``
    (images as (N, 3, 32, 32) uint8, labels under ``label_key``)."""
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if archive.is_dir():
        root = archive / folder if (archive / folder).is_dir() else archive
        for name in wanted:
            f = root / name
            if f.is_file():
                found[name] = _unpickle_batch(f.read_bytes(), name, str(f), label_key)
    else:
        try:
            with tarfile.open(archive, "r:*") as tar:
                for member in tar:
                    name = Path(member.name).name
                    if member.isfile() and name in wanted:
                        found[name] = _unpickle_batch(tar.extractfile(member).read(), name, str(archive), label_key)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise DataError(
                f"{archive}: not a readable tar.gz archive ({exc}); the file is truncated or corrupt. "
                f"Download it again or point data.archive at an extracted {folder} folder."
            ) from exc
    missing = [n for n in wanted if n not in found]
    if missing:
        raise DataError(f"{archive}: batches {missing} not found; expected the official layout ({folder}/{', '.join(wanted)})")
    return found


def check_archive(archive: Path, verify_md5: bool, official_md5: str, name: str) -> None:
    """A clear error for a missing archive, or (``verify_md5``) one that is not the official file."""
    if not archive.exists():
        raise DataError(
            f"data.archive {archive} does not exist; give the path of {name} "
            "(or its extracted folder), or use data.source: torchvision"
        )
    if verify_md5 and archive.is_file():
        got = md5sum(archive)
        if got != official_md5:
            raise DataError(
                f"{archive}: md5 {got} is not the official {name}'s {official_md5}. "
                "The file is truncated, corrupt or a different copy; download it again, or set "
                "data.verify_md5: false if you trust this copy (results then are not on the official pixels)."
            )


def downsample(x: np.ndarray, resolution: int) -> np.ndarray:
    """Images (N, C, 32, 32) at ``resolution``: 32 as they are; 16 by 2x2 mean pooling of the pixels,
    kept as float32 pixel values (0..255, quarter steps: exact) so that /255 gives the mean of the
    [0, 1] pixels with no rounding to uint8."""
    if resolution not in RESOLUTIONS:
        raise DataError(f"data.resolution = {resolution!r} is unknown; choose one of {list(RESOLUTIONS)}")
    if resolution == x.shape[-1]:
        return x
    f = x.shape[-1] // resolution
    n, c, h, w = x.shape
    return x.reshape(n, c, h // f, f, w // f, f).astype(np.float32).mean(axis=(3, 5), dtype=np.float32)


def split_pool(x_pool: np.ndarray, y_pool: np.ndarray, n_val_holdout: int) -> tuple[np.ndarray, ...]:
    """The paper's fixed split: permutation seed 42, first ``n_val_holdout`` indices are validation."""
    perm = np.random.RandomState(SPLIT_SEED).permutation(len(x_pool))
    val, train = perm[:n_val_holdout], perm[n_val_holdout:]
    return x_pool[train], y_pool[train], x_pool[val], y_pool[val]


def build_splits(data_cfg: dict, download_root: str | Path = "results/data/download") -> Splits:
    """Load the configured source (a file of :mod:`initmem.engine.datasources`), split it, keep the
    first n of each part and bring the images to ``data.resolution`` (default 32)."""
    source = data_cfg["source"]
    n_train, n_val, n_test = int(data_cfg["n_train"]), int(data_cfg["n_val"]), int(data_cfg["n_test"])
    resolution = int(data_cfg.get("resolution", 32))
    if source not in entry_names("source"):
        raise DataError(f"data.source {source!r} is unknown; use one of {', '.join(entry_names('source'))}")
    entry = load_entry("source", source)
    x_pool, y_pool, x_test, y_test = entry.load(data_cfg, Path(download_root))
    holdout = n_val if getattr(entry, "HOLDOUT", None) is None else entry.HOLDOUT
    x_tr, y_tr, x_va, y_va = split_pool(x_pool, y_pool, holdout)
    for part, want, have in (("n_train", n_train, len(x_tr)), ("n_val", n_val, len(x_va)), ("n_test", n_test, len(x_test))):
        if want > have or want < 1:
            raise DataError(f"data.{part} = {want} but the {source} split has {have} images (1..{have} allowed)")
    meta = {"source": source, "archive": str(data_cfg.get("archive")), "n_train": n_train, "n_val": n_val,
            "n_test": n_test, "split_seed": SPLIT_SEED, "classes": int(getattr(entry, "CLASSES", 10))}
    if resolution != 32:  # recorded only where it differs: a 32x32 file's metadata is as it always was
        meta["resolution"] = resolution
    small = lambda x: downsample(x, resolution)
    return Splits(small(x_tr[:n_train]), y_tr[:n_train], small(x_va[:n_val]), y_va[:n_val], small(x_test[:n_test]), y_test[:n_test], meta)


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
