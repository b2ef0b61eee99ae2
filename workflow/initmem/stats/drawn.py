"""A rule's simulations at one truth and design, drawn in order from one random stream, only as far as
a question needs: the whole share of decisions, or whether that share reaches a target.

Whether the share of ``n_sims`` simulations reaches a target is often settled before the last one is
drawn: with ``d`` decisions among the first ``m``, the final share lies in [d, d + n_sims - m] / n_sims.
:meth:`Drawn.reaches` stops there, and its answer is the one the whole simulation gives (it stops only
where both bounds lie a whole simulation away from the target; on the edge it draws them all). The
draws are the same whether a question stopped early or not (one stream, continued), so a later question
at the same truth and design continues where the last one stopped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Drawn:
    """The outcomes of ``n_sims`` simulations, drawn ``block`` at a time by ``draw(m)`` (the next ``m``
    outcomes of one random stream) as questions need them; ``decided(outcome)``: whether it is a decision."""

    draw: Callable[[int], Sequence]
    n_sims: int
    decided: Callable[[object], bool]
    block: int = 1
    outcomes: list = field(default_factory=list)

    def _more(self) -> None:
        self.outcomes.extend(self.draw(min(self.block, self.n_sims - len(self.outcomes))))

    def all(self) -> list:
        """Every simulation's outcome, in the stream's order."""
        while len(self.outcomes) < self.n_sims:
            self._more()
        return self.outcomes

    def share(self) -> float:
        """The share of decisions over all ``n_sims`` simulations."""
        outcomes = self.all()
        return sum(self.decided(o) for o in outcomes) / len(outcomes)

    def reaches(self, target: float, share: Callable[[], float] | None = None) -> bool:
        """Whether the share of decisions (``share()``, default :meth:`share`) is >= ``target``: the answer of
        the whole simulation, drawing only until no remaining outcome can change it."""
        need = math.ceil(target * self.n_sims - 1e-9)  # the fewest decisions whose share reaches the target
        while len(self.outcomes) < self.n_sims:
            done = sum(self.decided(o) for o in self.outcomes)
            if done > need or done + self.n_sims - len(self.outcomes) < need:
                return done > need
            self._more()
        return (share or self.share)() >= target
