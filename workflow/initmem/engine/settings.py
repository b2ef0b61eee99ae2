"""A training job's settings: how it trains, not what (its runs' specs say that).

:class:`TrainSettings` is built once from the job's settings JSON (the ``--settings`` of
``python -m initmem train-plan``, which the train rule passes from ``INITMEM_TRAIN_SETTINGS``:
``TRAIN_SETTINGS_JSON`` in workflow/rules/common.smk) and handed down as one object: job
(:mod:`initmem.pipeline.jobs`) -> trainer (:func:`initmem.engine.train.train_run`,
:func:`initmem.engine.packed.train_packed`) -> loop (:func:`initmem.engine.loop.train_loop`).
Every field is bookkeeping but ``precision``, which the run's key holds on its own (docs/reruns.md).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

# The keys a job's settings JSON must give (an older job failed on a missing one too): precision is
# part of every run's key, so it never falls back to a default that the key may not hold.
REQUIRED = ("device", "engine", "precision", "compile")


@dataclass(frozen=True)
class TrainSettings:
    """How a job trains its runs (config keys in brackets).

    ``device`` the choice (``compute.device``: auto, cpu, cuda, cuda:N), resolved by
    :func:`initmem.engine.device.pick_device`; ``engine`` vmap or loop (``pack.engine``); ``precision``
    float32, tf32 or bf16 (``compute.precision``); ``compile`` False, True or "step"
    (``compute.compile``); ``memory_format`` contiguous or channels_last (``compute.memory_format``);
    ``max_images`` models x images of an evaluation chunk, None: no bound (``pack.max_images``);
    ``checkpoint_every`` epochs and ``checkpoint_minutes`` wall minutes between saves, 0: never
    (``checkpoint.every_epochs``, ``checkpoint.every_minutes``); ``keep_checkpoints`` keep them after the
    pack is kept (``checkpoint.keep``); ``attempts`` a Slurm job's attempts (``compute.attempts``).
    """

    device: str = "auto"
    engine: str = "vmap"
    precision: str = "float32"
    compile: bool | str = False
    memory_format: str = "contiguous"
    max_images: int | None = None
    checkpoint_every: int = 0
    checkpoint_minutes: float = 0
    keep_checkpoints: bool = False
    attempts: int = 1

    @classmethod
    def from_dict(cls, settings: dict[str, Any]) -> TrainSettings:
        """The settings of a job's JSON object; a key that is no field, or a missing :data:`REQUIRED`
        one, is a ValueError of one line naming them."""
        if not isinstance(settings, dict):
            raise ValueError(f"train settings: expected a JSON object, got {settings!r:.80}")
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise ValueError(f"train settings: unknown {', '.join(unknown)} (known: {', '.join(known)})")
        missing = [k for k in REQUIRED if k not in settings]
        if missing:
            raise ValueError(f"train settings: missing {', '.join(missing)}")
        return cls(device=settings["device"], engine=settings["engine"], precision=settings["precision"],
                   compile=settings["compile"], memory_format=settings.get("memory_format", "contiguous"),
                   max_images=settings.get("max_images"), checkpoint_every=int(settings.get("checkpoint_every", 0)),
                   checkpoint_minutes=float(settings.get("checkpoint_minutes") or 0),
                   keep_checkpoints=bool(settings.get("keep_checkpoints", False)), attempts=int(settings.get("attempts", 1)))

    @classmethod
    def from_json(cls, text: str) -> TrainSettings:
        """:meth:`from_dict` of a JSON text (``--settings``)."""
        return cls.from_dict(json.loads(text))


DEFAULTS = TrainSettings()  # what a trainer called without settings uses (tests, benchmarks): float32, eager, no checkpoints
