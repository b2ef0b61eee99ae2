"""What periodic checkpoints cost a training campaign, and the interval that costs least.

A pack's trainer saves its state every ``checkpoint.every_minutes`` (and on SIGTERM/SIGINT: a Slurm time
limit, a preemption or ``scancel`` loses nothing). The periodic saves only insure against a stop that
gives no warning (a node failure, a kill without SIGTERM): each save costs its seconds of the job's GPU
time, each such stop the work since the last save. Young's first-order optimum of that trade
(J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974) is
``sqrt(2 x save seconds x mean time between unwarned stops)``, where the two costs are equal; no library
we depend on has it, so it is written here.

The save time is measured (:data:`SAVE_MIB_PER_S`); the rate of unwarned stops is an assumption
(:data:`UNWARNED_STOP_DAYS`), and the estimate says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

# One save of the paper's largest pack (64 x ResNet-9 width 64 + Adam, 4,817 MiB: hashed, written and fsync'ed) took
# 18.9 s on this project's CPU machine with a local disk (benchmarks/checkpoint_memory.md): its MiB/s. A cluster
# filesystem can be slower or faster; each timed save's line in a job's log gives its seconds there.
SAVE_MIB_PER_S = 4817 / 18.9
# Assumed: one stop without warning (node failure, a kill without SIGTERM) per job every this many days of training.
UNWARNED_STOP_DAYS = 30.0


def save_seconds(state_mib: float, mib_per_s: float = SAVE_MIB_PER_S) -> float:
    """Seconds one save of ``state_mib`` takes at ``mib_per_s``."""
    return state_mib / mib_per_s


def young_minutes(save_s: float, unwarned_stop_days: float = UNWARNED_STOP_DAYS) -> float:
    """Young's optimum interval between saves (minutes) for a save of ``save_s`` seconds and one unwarned stop
    every ``unwarned_stop_days`` days: the saves' cost and the expected loss are then equal."""
    return math.sqrt(2 * save_s * unwarned_stop_days * 86400) / 60


def campaign_cost(packs: Iterable[tuple[float, float]], every_minutes: float,
                  unwarned_stop_days: float = UNWARNED_STOP_DAYS) -> dict[str, float]:
    """Periodic checkpoints of ``packs`` (each (GPU-hours, state MiB)) saved every ``every_minutes`` (0: never):
    the saves' GPU-hours and TiB written, and the GPU-hours an unwarned stop per job every
    ``unwarned_stop_days`` days of training loses in expectation (half an interval each, at most half the job)."""
    saves_h = written = lost_h = 0.0
    for hours, mib in packs:
        saves = math.floor(hours * 60 / every_minutes) if every_minutes > 0 else 0
        saves_h += saves * save_seconds(mib) / 3600
        written += saves * mib / 2**20
        stops = hours / (unwarned_stop_days * 24)
        lost_h += stops * min(every_minutes / 60 if every_minutes > 0 else hours, hours) / 2
    return {"save hours": saves_h, "TiB written": written, "lost hours": lost_h}
