"""The claim catalogue: one module per claim family, found by listing this folder (as timm finds its models).

A family module holds its claims (``CLAIMS``: :class:`initmem.claims.claim.Claim` objects with the
paper's sentence, section, side, regime and row id templates) and the rows it makes of a runs table
(``rows(runs, history) -> list[dict]``); ``ORDER`` places its rows in ``claims.csv``, and its claims in
the registry (:data:`REGISTRY`, :func:`registry_markdown`). A new family is a new file here; nothing else
lists it.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pandas as pd

from initmem.claims.claim import Claim
from initmem.claims.selection import Readable, Selection


def families() -> list[ModuleType]:
    """Every family module of this folder, in ``ORDER``."""
    found = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    missing = [m.__name__ for m in found if not all(hasattr(m, a) for a in ("ORDER", "CLAIMS", "rows"))]
    if missing:
        raise ImportError(f"claim catalogue: {', '.join(missing)} lack ORDER, CLAIMS or rows (a family module defines all three)")
    return sorted(found, key=lambda m: m.ORDER)


FAMILIES = families()
REGISTRY: list[Claim] = [c for m in FAMILIES for c in m.CLAIMS]


def lookup(cid: str) -> Claim | None:
    """The claim a claims.csv row id belongs to (None: a number, cell or clock row)."""
    return next((c for c in REGISTRY if c.matches(cid)), None)


def rows(runs: pd.DataFrame, history: pd.DataFrame) -> list[dict]:
    """Every family's rows (numbers, directions, cells, clocks), in ``ORDER``."""
    return [r for m in FAMILIES for r in m.rows(runs, history)]


def selections(read: Readable) -> list[Selection]:
    """Every family's selections (the claim rows it makes and what each reads) over ``read``: a runs table or a
    config's planned configurations, in ``ORDER``. A family that the planner plans defines ``selections(read)``."""
    return [s for m in FAMILIES if hasattr(m, "selections") for s in m.selections(read)]


def registry_markdown() -> str:
    """The registry as a Markdown table (claims.md and docs)."""
    lines = ["| claims (row ids) | family | the paper says | section | statistic | configurations | paper's side | regime |",
             "|---|---|---|---|---|---|---|---|"]
    for c in REGISTRY:
        cells = [f"`{c.id_patterns()}`", c.family, c.quote, c.section, c.statistic, c.configurations, c.side, c.regime_text()]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines) + "\n"
