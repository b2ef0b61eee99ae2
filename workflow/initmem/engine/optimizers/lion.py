"""Keras Lion (keras.optimizers.Lion, defaults learning_rate 1e-3, beta_1 0.9, beta_2 0.99,
weight_decay None, i.e. no decay): p <- p - eta sign(b1 m + (1 - b1) g), then m <- b2 m + (1 - b2) g.
The decoupled decay, where a spec sets one, is Keras' base-optimizer decay that every optimizer here
shares (p <- p - eta wd p before the update). Each coordinate moves by exactly eta (or 0), like Adam's
fixed-size step: its clock is the adaptive one, a prediction of the paper's argument (not measured)."""

from __future__ import annotations

LION_BETA1, LION_BETA2 = 0.9, 0.99
CLOCK = "T_adapt"
SLOTS = {"m": "all"}


def update(opt, p, g, lr, t) -> None:
    """p <- p - eta sign(b1 m + (1 - b1) g); m <- b2 m + (1 - b2) g."""
    m = opt.slots["m"]
    p.sub_((m * LION_BETA1 + g * (1 - LION_BETA1)).sign() * lr)
    m.mul_(LION_BETA2).add_(g * (1 - LION_BETA2))
