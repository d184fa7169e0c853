"""Flat Monte-Carlo rollouts over a base policy: a policy-improvement operator (Tesauro & Galperin 1996).

For each legal action, the searcher samples K worlds consistent with what it has seen (``determinize``),
plays the action and finishes the current deal with the game's heuristic in every seat, and keeps the action
with the best total value of its side. All actions are compared on the same K worlds with the same rollout
random streams (common random numbers), so the comparison is paired and far less noisy than K suggests.
Generic over the games: it needs ``determinize``/``clone``/``apply`` and the game's heuristic.
"""

from __future__ import annotations

import random

from .heuristics import heuristic_for


class RolloutPolicy:
    DEFAULT_ROLLOUTS = 16
    reads_observation = False

    def __init__(self, game, rollouts: int = DEFAULT_ROLLOUTS, seed: int | None = None):
        self.game = game
        self.rollouts = rollouts
        self.rng = random.Random(seed)
        self.base = heuristic_for(game, seed)
        self.name = f"rollout:{rollouts}"

    def reset(self) -> None:
        pass

    def act(self, observation, action_mask, state=None) -> int:
        if state is None:
            raise ValueError("rollout needs the engine state (evaluation and play pass it as the third argument)")
        legal = state.legal_actions()
        if len(legal) == 1:
            return legal[0]
        seat = state.current_player
        worlds = [(state.determinize(seat, self.rng), self.rng.getrandbits(32)) for _ in range(self.rollouts)]
        totals = [sum(self._rollout(world, a, seed, seat) for world, seed in worlds) for a in legal]
        best = max(totals)
        return legal[totals.index(best)]

    def _rollout(self, world, action: int, seed: int, seat: int) -> float:
        sim = world.clone()
        deal = sim.deals_completed
        sim.apply(action)
        self.base.rng.seed(seed)
        while sim.current_player is not None and sim.deals_completed == deal:
            sim.apply(self.base.choose(sim, sim.legal_actions()))
        if sim.deals_completed == deal:
            return 0.0
        return sim.game.relative_points(sim.deal_report["deal_points"], seat)
