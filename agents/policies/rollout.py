"""Flat Monte-Carlo rollouts over a base policy: a policy-improvement operator (Tesauro & Galperin 1996).

For each legal action, the searcher samples K worlds consistent with what it has seen (``determinize``),
plays the action and finishes the current deal with the base policy in every seat, and keeps the action with
the best total value of its side (:meth:`Game.relative_points`, penalties flipped). All actions are compared on
the same K worlds with the same rollout random streams (common random numbers), so the comparison is paired
and far less noisy than K suggests. Generic over the games: it needs ``determinize``/``clone``/``apply``.

The base policy (spec ``rollout:K:SPEC``, see :mod:`.specs`) is the game's heuristic by default, or any
policy: a network (a bot file, or an :class:`~.network.NetworkPolicy`) is run for all K x (legal actions)
rollouts in lock-step, one batched forward pass per step; any other policy is asked move by move through
:func:`~.base.decide`. Before each rollout the base policy's generator is reseeded from the world's seed, so
the common random numbers hold for stochastic base policies too.

``margin`` (spec option ``z=Z``, docs/search.md) makes the improvement conservative: the base policy's own
choice at the root is kept unless the best action's mean advantage over it, paired per world, exceeds ``margin``
standard errors. The plain argmax (``margin=0``, the default) picks whichever action was luckiest whenever the
values are noisy and the legal actions many (the winner's curse); in Pis Yedili, whose deal values are large and
heavy-tailed, that made ``rollout:16`` lose to the heuristic it searches over.

``drop`` (spec option ``drop=D``, with a margin) spends the worlds where the choice is still open: the worlds are
played in batches of :data:`DROP_BATCH`, and after each batch every action whose mean advantage over the base
policy's move, paired per world, is below ``-D`` standard errors is dropped from the later batches. Most moves are
settled after a batch or two (the base move kept), so a move costs about half as much, and the choice is the one
the full search makes in 97–98% of the decisions (docs/search.md, "Dropping settled moves"). The worlds and
their random streams are drawn as before, so every action still meets the same worlds.
"""

from __future__ import annotations

import math
import random

import numpy as np

from .base import decide
from .heuristics import heuristic_for


#: the worlds played between two looks at which actions to drop (``drop=D``)
DROP_BATCH = 8


class RolloutPolicy:
    DEFAULT_ROLLOUTS = 16
    reads_observation = False
    reads_mask = False          # with the state: state.legal_actions()

    def __init__(self, game, rollouts: int = DEFAULT_ROLLOUTS, seed: int | None = None, policy=None,
                 margin: float = 0.0, name: str | None = None, drop: float | None = None):
        """``policy``: the base policy object (None: the game's heuristic, seeded with ``seed``). ``drop``:
        stop playing an action's worlds once it trails the kept move by ``drop`` standard errors (needs a
        margin: the kept move is what it trails)."""
        if drop is not None and margin <= 0:
            raise ValueError("drop needs a margin: it drops the actions that trail the base policy's move "
                             "(e.g. rollout:32,z=1,drop=0.5)")
        self.game = game
        self.rollouts = rollouts
        self.margin = float(margin)
        self.drop = drop
        self.rng = random.Random(seed)
        self.base = heuristic_for(game, seed) if policy is None else policy
        self._choose = getattr(self.base, "choose", None)             # a heuristic: no observation needed
        self._scorer = network_scorer(self.base) if self._choose is None else None
        self.name = name or f"rollout:{rollouts}"

    def reset(self) -> None:
        if hasattr(self.base, "reset"):
            self.base.reset()

    def act(self, observation, action_mask, state=None) -> int:
        if state is None:
            raise ValueError("rollout needs the engine state (evaluation and play pass it as the third argument)")
        legal = state.legal_actions()
        if len(legal) == 1:
            return legal[0]
        seat = state.current_player
        if self.drop is not None:
            worlds = self._worlds(state, seat)
            base_action = self._base_choice(state, legal, self.rng.getrandbits(32))
            return self._dropping_choice(worlds, legal, seat, base_action)
        values = self.action_values(state, legal, seat)
        if self.margin <= 0:
            totals = [sum(v) for v in values]
            return legal[totals.index(max(totals))]
        base_action = self._base_choice(state, legal, self.rng.getrandbits(32))
        return margin_choice(values, legal, base_action, self.margin)[0]

    def action_values(self, state, legal: list[int], seat: int) -> list[list[float]]:
        """``seat``'s value of every legal action in each of K worlds drawn for it (the same worlds and rollout
        seeds for every action): ``values[i][w]``."""
        return self._values(self._worlds(state, seat), legal, seat)

    def _worlds(self, state, seat: int) -> list:
        """K worlds drawn for ``seat``, each with the seed of its rollouts' random stream."""
        return [(state.determinize(seat, self.rng), self.rng.getrandbits(32)) for _ in range(self.rollouts)]

    def _values(self, worlds: list, legal: list[int], seat: int) -> list[list[float]]:
        if self._scorer is not None:
            return self._lockstep(worlds, legal, seat)
        return [[self._rollout(world, a, seed, seat) for world, seed in worlds] for a in legal]

    def _dropping_choice(self, worlds: list, legal: list[int], seat: int, base_action: int) -> int:
        """The margin's choice over the actions still open after the worlds are played in batches, each batch
        dropping the actions that trail ``base_action`` by more than ``drop`` standard errors (``drop=D``)."""
        base = legal.index(base_action)
        values = [[] for _ in legal]
        open_ = list(range(len(legal)))
        for start in range(0, len(worlds), DROP_BATCH):
            batch = self._values(worlds[start:start + DROP_BATCH], [legal[i] for i in open_], seat)
            for i, v in zip(open_, batch):
                values[i] += v
            if start + DROP_BATCH >= len(worlds):
                break
            open_ = [i for i in open_ if i == base or not trails(values[i], values[base], self.drop)]
            if open_ == [base]:
                return base_action
        return margin_choice([values[i] for i in open_], [legal[i] for i in open_], base_action, self.margin)[0]

    # ----- the base policy ------------------------------------------------------------------------------
    def _base_choice(self, state, legal: list[int], seed: int) -> int:
        reseed(self.base, seed)
        if self._choose is not None:
            return self._choose(state, legal)
        return decide(self.base, state)

    def _rollout(self, world, action: int, seed: int, seat: int) -> float:
        """One rollout, move by move: ``action`` in ``world`` (a clone of it), then the base policy to the
        end of the deal; the value of ``seat``'s side."""
        sim = world.clone()
        deal = sim.deals_completed
        sim.apply(action)
        choose = self._choose
        if choose is not None:
            self.base.rng.seed(seed)
            while sim.current_player is not None and sim.deals_completed == deal:
                sim.apply(choose(sim, sim.legal_actions()))
        else:
            reseed(self.base, seed)
            base = self.base
            while sim.current_player is not None and sim.deals_completed == deal:
                sim.apply(decide(base, sim))
        return deal_value(sim, deal, seat)

    def _lockstep(self, worlds, legal: list[int], seat: int) -> list[list[float]]:
        """Every (action, world) rollout at once: one batched forward pass of the network per step."""
        scorer, temperature = self._scorer
        sims, rngs = [], []
        deal = worlds[0][0].deals_completed
        for a in legal:
            for world, seed in worlds:
                sim = world.clone()
                sim.apply(a)
                sims.append(sim)
                rngs.append(random.Random(seed) if temperature > 0 else None)
        active = [i for i, sim in enumerate(sims) if sim.current_player is not None and sim.deals_completed == deal]
        while active:
            obs = np.stack([sims[i].observation(sims[i].current_player) for i in active])
            mask = np.stack([sims[i].legal_mask() for i in active])
            choices = masked_choices(scorer(obs), mask, temperature, [rngs[i] for i in active])
            still = []
            for i, a in zip(active, choices):
                sim = sims[i]
                sim.apply(int(a))
                if sim.current_player is not None and sim.deals_completed == deal:
                    still.append(i)
            active = still
        k = len(worlds)
        return [[deal_value(sims[n * k + w], deal, seat) for w in range(k)] for n in range(len(legal))]


def margin_choice(values: list[list[float]], legal: list[int], base_action: int, margin: float):
    """(action, its mean gain): the action with the best total in ``values`` if its mean advantage over
    ``base_action``, paired per world, exceeds ``margin`` standard errors; else (``base_action``, 0.0)."""
    totals = [sum(v) for v in values]
    i, j = totals.index(max(totals)), legal.index(base_action)
    if i == j:
        return base_action, 0.0
    mean, se = paired_advantage(values[i], values[j])
    return (legal[i], mean) if mean > margin * se else (base_action, 0.0)


def paired_advantage(values: list[float], base_values: list[float]) -> tuple[float, float]:
    """An action's mean advantage over another, paired per world, and its standard error (0 from one world)."""
    diff = [x - y for x, y in zip(values, base_values)]
    k = len(diff)
    mean = sum(diff) / k
    sd = math.sqrt(sum((d - mean) ** 2 for d in diff) / (k - 1)) if k > 1 else 0.0
    return mean, sd / math.sqrt(k)


def trails(values: list[float], base_values: list[float], drop: float) -> bool:
    """Whether an action's mean advantage over the base move, paired per world, is below ``-drop`` standard
    errors (two worlds at least: one gives no spread)."""
    if len(values) < 2:
        return False
    mean, se = paired_advantage(values, base_values)
    return mean < -drop * se


def deal_value(sim, deal: int, seat: int) -> float:
    """``seat``'s side's relative points of the deal that ``sim`` has just finished (0 if it did not: a match
    truncated mid-deal)."""
    if sim.deals_completed == deal:
        return 0.0
    return sim.game.relative_points(sim.deal_report["deal_points"], seat)


def reseed(policy, seed: int) -> None:
    """Put a policy's generator (``rng``: a :class:`random.Random` or a numpy Generator) in a state given by
    ``seed``, so that the rollouts of every candidate action draw the same numbers."""
    rng = getattr(policy, "rng", None)
    if isinstance(rng, random.Random):
        rng.seed(seed)
    elif isinstance(rng, np.random.Generator):
        policy.rng = np.random.default_rng(seed)


def network_scorer(policy):
    """``(scores(observations [B, obs]) -> [B, actions], temperature)`` for a policy that is a network (an
    exported :class:`~.bot.Bot` or a :class:`~.network.NetworkPolicy`), else None."""
    from .bot import Bot
    from .network import NetworkPolicy
    if isinstance(policy, Bot):
        return policy.batch_logits, float(policy.temperature)
    if isinstance(policy, NetworkPolicy):
        return policy.mlp.forward, float(policy.temperature)
    return None


def masked_choices(scores: np.ndarray, mask: np.ndarray, temperature: float = 0.0, rngs=None) -> np.ndarray:
    """Row-wise :func:`~.network.masked_choice`: the best legal action of each row (temperature 0), or a
    sample from softmax(scores / temperature) over the legal ones, one uniform draw from each row's generator
    in ``rngs`` (:class:`random.Random`)."""
    s = np.where(mask, scores.astype(np.float64), -np.inf)
    if temperature <= 0:
        return s.argmax(axis=1)
    z = s - s.max(axis=1, keepdims=True)
    p = np.exp(z / temperature)
    c = np.cumsum(p, axis=1)
    u = np.array([r.random() for r in rngs]) * c[:, -1]
    out = (c <= u[:, None]).sum(axis=1)
    # a draw on the upper edge of the last legal action (rounding) must not land on an illegal trailing one
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)
    return np.minimum(out, last)
