"""Pishe Pasha heuristic: the seed's advice, "always give".

1. GIVE whenever it is legal (getting rid of cards is the whole game, and a give never costs a turn).
2. PLACE a pending card on the opponent's pile rather than KEEP it (the turn goes on, PP-1).
3. Otherwise TURN.

``docs/bots.md`` ("pishe_pasha/ppo") gives what always-give won against two hold-back policies.
"""

from __future__ import annotations

from kahve.envs.pishe_pasha.rules import GIVE, KEEP, PLACE, TURN

from .base import ScoredHeuristic

PREFERENCE = {GIVE: 3, PLACE: 2, TURN: 1, KEEP: 0}


class PishePashaHeuristic(ScoredHeuristic):

    def score(self, state, action: int, known=None) -> float:
        return PREFERENCE[action]
