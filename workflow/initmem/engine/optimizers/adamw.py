"""Keras AdamW: Adam's step after the decoupled decay, which defaults to the paper's 1e-4
(Keras' own default is 0.004)."""

from __future__ import annotations

from initmem.engine.optimizers.adam import update  # noqa: F401  (the same step; only the default decay differs)

WEIGHT_DECAY = 1e-4
CLOCK = "T_adapt"
SLOTS = {"m": "all", "v": "elementwise"}
