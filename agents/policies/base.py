"""The Policy protocol (docs/design.md "Policies, bots, configs"), the random policy, and :func:`decide`.

A policy is anything with ``act(observation, action_mask, state=None) -> int`` and optionally ``reset()``
(called at the start of every match), ``reads_observation`` and ``reads_mask`` (each default true): a policy that
decides from the engine state and the mask alone sets ``reads_observation`` false, one that decides from the state
alone (random, the heuristics, the searches) sets both false, and :func:`decide` then skips building what it
would not read (most of an opponent move's cost in the training view), passing ``None`` in its place.
Evaluation and play pass the engine ``state`` of the seat to move; a search policy uses only
``state.clone()``/``state.determinize(seat, rng)`` from it, and the rule-based heuristics read only what their
seat may know (tests check both by re-dealing hidden cards).
"""

from __future__ import annotations

import random
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Policy(Protocol):
    def act(self, observation: np.ndarray, action_mask: np.ndarray, state=None) -> int:
        ...


class RandomPolicy:
    """Uniform over the legal actions, from its own seeded generator."""

    name = "random"
    reads_observation = False
    reads_mask = False          # when it has the state: its legal actions are the mask's nonzero entries

    def __init__(self, seed: int | None = None):
        self.rng = random.Random(seed)

    def act(self, observation, action_mask, state=None) -> int:
        # the state's sorted legal actions are the mask's nonzero entries, without the numpy round trip
        legal = state.legal_actions() if state is not None else np.flatnonzero(action_mask)
        if len(legal) == 0:
            raise ValueError("no legal action in the mask")
        return int(legal[self.rng.randrange(len(legal))])

    def reset(self) -> None:
        pass


def decide(policy, state) -> int:
    """The action of ``policy`` for the player to move in ``state``: every caller that holds the engine state
    (evaluation, the training view, play, reports) asks through here, so an observation is built only for a
    policy that reads it."""
    observation = state.observation(state.current_player) if getattr(policy, "reads_observation", True) else None
    return policy.act(observation, state.legal_mask() if getattr(policy, "reads_mask", True) else None, state)
