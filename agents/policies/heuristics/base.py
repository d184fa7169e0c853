"""What every heuristic shares: seeded tie-breaking among the best-scored legal actions."""

from __future__ import annotations

import random



class ScoredHeuristic:
    """Scores every legal action with :meth:`score` (higher is better) and plays the best, breaking ties
    at random from its own seeded generator. What a decision's scores share (what the seat knows, counted once)
    comes from :meth:`knowledge`."""

    name = "heuristic"
    reads_observation = False
    reads_mask = False          # with the state: state.legal_actions()

    def __init__(self, game, seed: int | None = None):
        self.game = game
        self.rng = random.Random(seed)

    def reset(self) -> None:
        pass

    def act(self, observation, action_mask, state=None) -> int:
        if state is None:
            raise ValueError(f"the {self.game.name} heuristic needs the engine state as its third argument")
        return self.choose(state, state.legal_actions())      # the mask's nonzero entries, sorted

    def choose(self, state, legal: list[int]) -> int:
        """The best-scored of ``legal`` (the legal actions of ``state``); no observation needed, which
        makes the heuristic cheap enough to be the rollout policy of a search."""
        if len(legal) == 1:
            return legal[0]
        known = self.knowledge(state)
        scores = [self.score(state, a, known) for a in legal]
        best = max(scores)
        return self.rng.choice([a for a, s in zip(legal, scores) if s == best])

    def knowledge(self, state):
        """Whatever every action's score of this decision needs (default: nothing)."""
        return None

    def score(self, state, action: int, known) -> float:
        raise NotImplementedError
