"""What a claim row reads, chosen once, before anything is read (:class:`Selection`), from either side
of the project: a runs table (the claims table decides it) or a config's planned configurations (the
planner sizes it). Both are a :class:`Readable`: a table with the same settings columns (``study``,
``optimizer``, ``lr``, ``batch_size``, ``l2``, ``epochs``, ...) and the clock studies' configurations,
so a family's ``selections`` is one function and its rows and its plans are the same loop over it.

The statistic a selection's rule reads (:data:`STATISTICS`) is what the planner simulates for it:

- ``spread``: one configuration's sigma_w spread against a side;
- ``flat`` / ``decay``: one configuration's |beta(t)| range over the settled run / fall from its held peak;
- ``contrast``: the first part's spread minus the second's, seed-paired;
- ``align``: the exponents of the clock under which the parts' |beta| curves align.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import pandas as pd

from initmem.claims.analysis import CONFIG_KEYS
from initmem.claims.claim import Claim
from initmem.claims.clock import CLOCK_STUDIES, ClockCell, clock_cells
from initmem.claims.rows import label_of
from initmem.engine.clocks import run_clocks
from initmem.stats.verdicts import Side

SPREAD, CONTRAST, FLAT, DECAY, ALIGN = "spread", "contrast", "flat", "decay", "align"
STATISTICS = (SPREAD, FLAT, CONTRAST, DECAY, ALIGN)  # in the order a plan lists one configuration's claims


class ClockConfiguration(Protocol):
    """One configuration of the clock studies, whichever side it comes from (a
    :class:`initmem.claims.clock.ClockCell` of runs, or a :class:`PlannedConfiguration`)."""

    label: str
    settings: dict

    @property
    def n_train(self) -> int: ...

    def end_clock(self, name: str) -> float: ...


@dataclass(frozen=True)
class Selection:
    """One row of a claim: its id, the statistic its rule reads, and each part's configuration: rows
    of the table it was chosen from (a DataFrame) or a clock configuration. ``fields`` holds what the
    family's row maker reads back (a batch size, an optimizer's name); ``rule`` is the rule in words,
    as a plan prints it."""

    claim: Claim
    cid: str
    statistic: str
    parts: tuple[Any, ...]
    side: Side | None = None
    rule: str = ""
    fields: dict = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(f"{self.cid}: statistic {self.statistic!r} is none of {', '.join(STATISTICS)}")

    @property
    def complete(self) -> bool:
        """Every part holds a configuration (a row of a config that lacks one part reads ``not measured``)."""
        return all(not (isinstance(p, pd.DataFrame) and p.empty) for p in self.parts)


class Readable(Protocol):
    """What a family's ``selections`` reads: the table and the clock studies' configurations."""

    table: pd.DataFrame

    def clock_configurations(self) -> list[ClockConfiguration]: ...


@dataclass
class RunsRead:
    """A runs table (``runs.csv``: one row per run) and its history (one row per epoch)."""

    table: pd.DataFrame
    history: pd.DataFrame = field(default_factory=pd.DataFrame)

    @cached_property
    def _cells(self) -> list[ClockCell]:
        return clock_cells(self.table, self.history)

    def clock_configurations(self) -> list[ClockCell]:
        return self._cells


@dataclass(frozen=True)
class PlannedConfiguration:
    """A planned configuration of the clock studies (its runs not trained): the clocks its spec reaches."""

    label: str
    settings: dict
    spec: dict = field(hash=False)
    planned: Any = None   # what the planner planned it as (initmem.planner.design.Planned)

    @property
    def n_train(self) -> int:
        return int(self.spec["n_train"])

    def end_clock(self, name: str) -> float:
        return float(run_clocks({**self.spec, "sigma_w": 1.0, "seed": 0}).get(name, math.nan))


@dataclass
class PlannedRead:
    """A config's planned configurations, one table row each (``planned``: the object each row stands for)."""

    table: pd.DataFrame

    @classmethod
    def of(cls, specs: Sequence[dict], studies: Sequence[str], planned: Sequence[Any]) -> PlannedRead:
        return cls(pd.DataFrame([{**s, "study": st, "planned": p} for s, st, p in zip(specs, studies, planned, strict=True)]))

    def clock_configurations(self) -> list[PlannedConfiguration]:
        """The clock studies' configurations, each once (the first study that plans it), in the config's order."""
        t = self.table
        if t.empty:
            return []
        t = t[t["study"].isin(CLOCK_STUDIES)]
        keys = [k for k in CONFIG_KEYS if k in t.columns]
        out = []
        for _, g in t.groupby(keys, dropna=False, sort=False):
            first = g.iloc[0]
            settings = {k: first[k] for k in ("optimizer", "lr", "batch_size", "epochs", "l2", "weight_decay") if k in g}
            spec = {k: v for k, v in first.items() if k not in ("study", "planned")}
            out.append(PlannedConfiguration(label_of(g), settings, spec, first["planned"]))
        return out


def planned_of(part: Any) -> list[Any]:
    """The planned configurations a selection's part stands for (planner side)."""
    if isinstance(part, pd.DataFrame):
        return list(part["planned"])
    return [part.planned]
