"""Keras SGD: p <- p - eta g."""

from __future__ import annotations

CLOCK = "T_sgd"
SLOTS: dict[str, str] = {}


def update(opt, p, g, lr, t) -> None:
    """p <- p - eta g."""
    p.sub_(g * lr)
