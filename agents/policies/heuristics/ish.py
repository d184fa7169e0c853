"""Ish heuristic: the known optimum of docs/rules.md §5e.

Stake the minimum (the lowest level of the ladder), take any free slot (every choice is pure chance), and
call exactly when eligible: holding the Crown, or the table's highest result when no Crown was drawn.
"""

from __future__ import annotations

from .base import ScoredHeuristic


class IshHeuristic(ScoredHeuristic):

    def score(self, state, action: int, known=None) -> float:
        levels = state.settings.bet_levels
        if action < levels:
            return -action                                   # the lowest stake
        if action < levels + 40:
            return -action                                   # any slot: the lowest free one
        calls = action == levels + 41
        eligible = state.eligible[state.current_player]
        return 1.0 if calls == eligible else 0.0
