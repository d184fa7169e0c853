"""Policy spec strings: the one way policies are named everywhere (CLI, configs, bot levels).

``random``, ``heuristic``, ``ismcts`` or ``ismcts:400`` (iterations per move), ``rollout:16`` (flat Monte-Carlo
over the heuristic), or the path of an exported bot file (or the name of a shipped one).
"""

from __future__ import annotations

import os

from .base import RandomPolicy

POLICY_SPECS = ("random", "heuristic", "ismcts[:ITERATIONS]", "rollout[:K]", "PATH to an exported bot file")


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
