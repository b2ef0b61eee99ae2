"""Keras SGD with momentum (Keras keeps eta inside the velocity): v <- mu v - eta g, p <- p + v."""

from __future__ import annotations

MOMENTUM = 0.9
CLOCK = "T_sgd"
SLOTS = {"velocity": "all"}


def update(opt, p, g, lr, t) -> None:
    """v <- mu v - eta g, p <- p + v."""
    v = opt.slots["velocity"]
    v.mul_(opt.momentum).sub_(g * lr)
    p.add_(v)
