"""What-if truths for the recipe tier's design: the planner's rules (initmem.planner.design.spread_rate / contrast_rate)
at the design's 7 seeds and 4 sigma_w, with the selected tier's SGD seeds as the noise (their per-seed covariance,
moved to the 10,000 final-test images; a contrast's second arm the same deviations in reversed seed order, so no
pairing is assumed), under truths smaller than the paper's (which the plan assumes).

    PYTHONPATH=workflow .venv/bin/python evidence/jpeg-cifar10-recipe/whatif.py
"""

import numpy as np

from initmem.claims.clock import RETAINED
from initmem.planner import design as D
from initmem.stats.verdicts import greater

SIGMAS, SEEDS, FINAL_TEST = (0.1, 0.5, 1.2, 2.5), 7, 10_000


def linear(spread_pp: float, level: float = 0.35) -> np.ndarray:
    s = np.asarray(SIGMAS)
    return level - spread_pp / 100 * (s - s[0]) / np.ptp(s)


def main() -> None:
    m = next(m for m in D.measured() if m.source == "jpeg-cifar10-selected" and m.spec["optimizer"] == "sgd")
    dev = D.seed_deviations([m], [SIGMAS], FINAL_TEST)
    print("| row | truth | P(decision) at 7 seeds |\n|---|---|---|")
    for a, b in ((16.2, 6.9), (16.2, 12.0), (16.2, 14.0)):
        t = D.Truth((linear(a), linear(b)), 0.0, "what if", deviations=np.vstack([dev, dev[:, ::-1]]))
        rate = D.contrast_rate(t, SIGMAS, greater(0))(SEEDS, SIGMAS)
        print(f"| `lr_reduces_sgd_b16_0.001_to_0.01` | lr 1e-3 {a:g} pp, lr 1e-2 {b:g} pp | {rate:.0%} |")
    for a in (12.4, 5.0, 2.0):
        t = D.Truth((linear(a),), 0.0, "what if", deviations=dev)
        print(f"| `l2_T_..._retains` (L2 0.0195) | {a:g} pp | {D.spread_rate(t, SIGMAS, RETAINED)(SEEDS, SIGMAS):.0%} |")
    for a, b in ((6.9, 0.7), (6.9, 4.0), (6.9, 5.5)):
        t = D.Truth((linear(a), linear(b)), 0.0, "what if", deviations=np.vstack([dev, dev[:, ::-1]]))
        print(f"| `l2_T_..._drops` (L2 0.1) | no L2 {a:g} pp, L2 {b:g} pp | {D.contrast_rate(t, SIGMAS, greater(0))(SEEDS, SIGMAS):.0%} |")


if __name__ == "__main__":
    main()
