"""The planner's inputs (initmem.planner.design) for its tests (tests/test_design.py) and the check
of its plans against what happened (tests/test_design_check.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import tiny_config

from initmem.planner import design as D


def measured_configuration(source: str, optimizer: str = "sgd", b: int = 16, spread_pp: float = 10.0, sd: float = 0.02, n_test: int = 500,
                           steps_to_fit: float = np.nan, steps: int = 1000, n_train: int = 1000, resolution: int = 16, lr: float = 1e-3,
                           deviations: np.ndarray | None = None) -> D.Measured:
    """A measured configuration: 8 seeds of independent noise ``sd`` about a linear fall of ``spread_pp``
    (or the given per-seed ``deviations``, sigma_w x seeds)."""
    sigmas = np.array([0.1, 0.5, 1.2, 2.5])
    means = 0.5 - spread_pp / 100 * (sigmas - 0.1) / 2.4
    spec = {"optimizer": optimizer, "lr": lr, "batch_size": b, "epochs": 10, "l2": 0.0, "n_train": n_train, "n_test": n_test}
    if deviations is None:
        deviations = sd * np.random.default_rng(len(source) + b).standard_normal((4, 8))
    values = pd.DataFrame(means[:, None] + deviations, index=sigmas)
    return D.Measured(source, spec, resolution, sigmas, means, sd, values.shape[1], steps, np.full(4, steps_to_fit), values)


def planner_config(seeds: int = 4, lr_l2_seeds: int = 4, **data) -> dict:
    """A config for the planner to plan: a main study (SGD and Adam at b 16, 4 sigma_w x ``seeds``) and an
    lr_l2 study (SGD at two lr, 2 sigma_w x ``lr_l2_seeds``), 10 epochs on synthetic 16x16 data (``data``
    overrides its keys)."""
    grid = {"optimizer": ["sgd", "adam"], "batch_size": [16], "sigma_w": [0.1, 0.5, 1.2, 2.5], "seed": list(range(seeds))}
    lr_l2 = {"set": {"optimizer": "sgd", "batch_size": 16}, "grid": {"lr": [1e-3, 1e-1], "sigma_w": [0.1, 2.5], "seed": list(range(lr_l2_seeds))}}
    return tiny_config({"main": {"grid": grid}, "lr_l2": lr_l2},
                       data={"source": "synthetic", "n_train": 256, "n_val": 100, "n_test": 500, "resolution": 16, **data}, lr=1e-3, epochs=10)
