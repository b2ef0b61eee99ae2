"""Muon that also orthogonalises conv kernels, flattened to (out, in*kh*kw); otherwise Keras Muon."""

from __future__ import annotations

from initmem.engine.optimizers.muon import update  # noqa: F401  (the same step over more tensors)

WEIGHT_DECAY = 1e-4
MOMENTUM = 0.95
CLOCK = "T_adapt"
SLOTS = {"m": "all", "v": "elementwise"}
ORTHOGONALISES = (2, 4)
