"""How a registry entry is shown: its label, line style and colour, read from the entry's file or
derived from it, so that a new file needs no second list anywhere (its cost facts:
:mod:`initmem.costs.facts`).

An entry file may declare, as module-level literals (read without importing it, :func:`initmem.spec.entry_info`):

- ``LABEL``: its name in figures and tables (default: the file's name);
- ``STYLE``: its matplotlib line style and marker, e.g. ``{"ls": "--", "marker": "v"}`` (optimizers;
  default: a dotted line and a marker of its own);
- ``COLOR``: its colour, e.g. ``"#1f77b4"`` (optimizers; default: the palette's next colour).

The paper's own entries keep their look in :data:`PAPER_LOOK` rather than in their files: a run's key
hashes its entries' files, so writing these constants there would retrain every existing run (and this
module is in no run's key: an edit here retrains nothing).
Torch- and matplotlib-free: the estimate and the tables read it too.
"""

from __future__ import annotations

from typing import Any

from initmem.spec import entry_info, entry_names

# The paper's entries as its figures show them: label, and for optimizers a line style and marker (Adam
# and AdamW at weight decay 0, or Muon and its full variant, can draw the same curve: a solid line
# alone would hide the one under it). Colours follow the palette in OPTIMIZER order.
PAPER_LOOK: dict[str, dict[str, Any]] = {
    "sgd": {"LABEL": "SGD", "STYLE": {"ls": "-", "marker": "o"}},
    "sgd_momentum": {"LABEL": "SGD+mom.", "TABLE_LABEL": "SGD-momentum", "STYLE": {"ls": "-.", "marker": "s"}},
    "adam": {"LABEL": "Adam", "STYLE": {"ls": "-", "marker": "^"}},
    "adamw": {"LABEL": "AdamW", "STYLE": {"ls": "--", "marker": "v", "mfc": "none"}},
    "muon": {"LABEL": "Muon", "STYLE": {"ls": "-", "marker": "D"}},
    "muon_full": {"LABEL": "Muon (full)", "STYLE": {"ls": "--", "marker": "d", "mfc": "none"}},
    "lion": {"LABEL": "Lion", "STYLE": {"ls": ":", "marker": "P"}},
    "resnet9": {"LABEL": "ResNet-9"}, "resnet56": {"LABEL": "ResNet-56"}, "resnet110": {"LABEL": "ResNet-110"},
}
# Names that are not registry entries but label panels all the same (a study's variants, the norms)
OTHER_LABELS = {"r9avg": "R9-AvgPool", "batchnorm": "BatchNorm", "layernorm": "LayerNorm"}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
EXTRA_MARKERS = "XhH*p"  # for optimizers with no style of their own, in turn


def optimizer_order() -> list[str]:
    """The paper's optimizers in its order, then every other optimizer file by name (a new one is drawn too)."""
    paper = [o for o in ("sgd", "sgd_momentum", "adam", "adamw", "muon", "muon_full", "lion") if o in entry_names("optimizer")]
    return paper + [o for o in entry_names("optimizer") if o not in paper]


def _fact(kind: str, name: str, key: str) -> Any:
    """``key`` of entry ``name``: its file's constant, else the paper's look, else None."""
    own = entry_info(kind, name).get(key)
    return own if own is not None else PAPER_LOOK.get(name, {}).get(key)


def _kind_of(name: str) -> str | None:
    return next((kind for kind in ("optimizer", "arch", "source") if name in entry_names(kind)), None)


def label(name: str) -> str:
    """What figures call an optimizer, architecture, data source, norm or variant ``name``."""
    kind = _kind_of(name)
    found = _fact(kind, name, "LABEL") if kind else OTHER_LABELS.get(name)
    return str(found) if found is not None else name


def table_label(name: str) -> str:
    """What the claims table calls ``name`` (its figure label unless the paper's text words it otherwise)."""
    kind = _kind_of(name)
    own = entry_info(kind, name).get("LABEL") if kind else None
    return str(own) if own is not None else PAPER_LOOK.get(name, {}).get("TABLE_LABEL") or label(name)


def style(optimizer: str) -> dict[str, Any]:
    """Matplotlib keywords (line style, marker) of ``optimizer``'s curves."""
    found = _fact("optimizer", optimizer, "STYLE")
    if found is not None:
        return dict(found)
    others = [o for o in optimizer_order() if _fact("optimizer", o, "STYLE") is None]
    return {"ls": ":", "marker": EXTRA_MARKERS[others.index(optimizer) % len(EXTRA_MARKERS)]}


def color(optimizer: str) -> str:
    """``optimizer``'s colour: its file's COLOR, else the palette's colour at its place in :func:`optimizer_order`."""
    own = entry_info("optimizer", optimizer).get("COLOR")
    return str(own) if own is not None else PALETTE[optimizer_order().index(optimizer) % len(PALETTE)]
