"""Small CIFAR-shaped data with learnable class structure (a smooth per-class template plus noise),
for tests and the tiny tier: no download, ``data.seed`` picks the draw."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HOLDOUT = None  # the pool is drawn n_train + n_val large: data.n_val of it is validation
CLASSES = 10


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


def load(data_cfg: dict, download_root: Path) -> tuple[np.ndarray, ...]:
    """n_train + n_val pool images and n_test test images."""
    return make_synthetic(int(data_cfg["n_train"]) + int(data_cfg["n_val"]), int(data_cfg["n_test"]), seed=int(data_cfg.get("seed", 0)))
