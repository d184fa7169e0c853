"""The Policy protocol (DESIGN.md "Policies, bots, configs") and policy spec strings.

A policy is anything with ``act(observation, action_mask, state=None) -> int`` and optionally ``reset()``
(called at the start of every match) and ``reads_observation`` (default true): a policy that decides from the
engine state and the mask alone (random, the heuristics, the searches) sets it false, and :func:`decide` then
skips building an observation it would not read (most of an opponent move's cost in the training view).
Evaluation and play pass the engine ``state`` of the seat to move; a search policy uses only
``state.clone()``/``state.determinize(seat, rng)`` from it, and the rule-based heuristics read only what their
seat may know (tests check both by re-dealing hidden cards).

Spec strings name policies everywhere (CLI, configs): ``random``, ``heuristic``, ``ismcts`` or ``ismcts:400``
(iterations per move), ``rollout:16`` (flat Monte-Carlo over the heuristic), or the path of an exported bot file.
"""

from __future__ import annotations

import os
import random
from typing import Protocol, runtime_checkable

import numpy as np

POLICY_SPECS = ("random", "heuristic", "ismcts[:ITERATIONS]", "rollout[:K]", "PATH to an exported bot file")


@runtime_checkable
class Policy(Protocol):
    def act(self, observation: np.ndarray, action_mask: np.ndarray, state=None) -> int:
        ...


class RandomPolicy:
    """Uniform over the legal actions, from its own seeded generator."""

    name = "random"
    reads_observation = False

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
    seat = state.current_player
    observation = state.observation(seat) if getattr(policy, "reads_observation", True) else None
    return policy.act(observation, state.legal_mask(), state)


def make_policy(spec: str, game, seed: int | None = None):
    """Build the policy named by ``spec`` for ``game`` (a :class:`kahve.envs.core.Game`)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a policy spec must be a non-empty string; accepted: {', '.join(POLICY_SPECS)}")
    spec = spec.strip()
    name, _, arg = spec.partition(":")
    if name == "random" and not arg:
        return RandomPolicy(seed)
    if name == "heuristic" and not arg:
        from .heuristics import heuristic_for
        return heuristic_for(game, seed)
    if name == "ismcts":
        from .ismcts import ISMCTS
        n = _positive(spec, arg, ISMCTS.DEFAULT_ITERATIONS, "ismcts takes a positive iteration count, e.g. ismcts:200")
        return ISMCTS(game, iterations=n, seed=seed)
    if name == "rollout":
        from .rollout import RolloutPolicy
        n = _positive(spec, arg, RolloutPolicy.DEFAULT_ROLLOUTS,
                      "rollout takes a positive number of worlds, e.g. rollout:16")
        return RolloutPolicy(game, rollouts=n, seed=seed)
    if os.path.sep in spec or spec.endswith(".onnx") or os.path.exists(spec):
        if not os.path.exists(spec):
            from kahve import checkpoints
            shipped = checkpoints.find(spec)
            if shipped is not None:
                from .bot import Bot
                return Bot.load(shipped, game=game)
            raise FileNotFoundError(f"policy spec {spec!r} looks like a bot file, but there is no such file")
        from .bot import Bot
        return Bot.load(spec, game=game)
    raise ValueError(f"unknown policy spec {spec!r}; accepted: {', '.join(POLICY_SPECS)}")


def _positive(spec: str, arg: str, default: int, usage: str) -> int:
    """The count after the colon of a spec (``ismcts:200``), or the default when there is none."""
    try:
        n = int(arg) if arg else default
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"bad policy spec {spec!r}: {usage}")
    return n
