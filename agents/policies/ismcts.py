"""Information-set Monte-Carlo tree search (single-observer ISMCTS, Cowling, Powley & Whitehouse 2012).

Generic over every game: it needs only the engine protocol — ``determinize(seat, rng)`` to sample a world
consistent with what the searching seat has seen, and ``legal_actions``/``apply``/``current_player``.

Each iteration samples a determinization, descends the one tree of the searcher's information set choosing
among the actions legal in that world by UCB with availability counts, expands one node, finishes the
*current deal* with random play (or a base policy, below), and backs up each player's value. A node stores the value of the player
who made the move into it. The search horizon is the end of the current deal (a deal, round or Ish round):
a match may be many deals long, and deal points are what a move can influence. The value of a rollout for a
seat is its side's deal points minus the mean of the other sides' (penalties flipped, as in ``reward="points"``),
scaled by the running mean magnitude seen in this search and clipped to [-1, 1]; a rollout that ends the
match adds the match outcome.

A base policy (spec ``ismcts:N:SPEC``, see :mod:`.specs`; any policy: the heuristic, a bot file) replaces the
random rollouts; its generator is reseeded for every iteration from the search's own. With ``prior`` (spec
option ``prior``) it also guides the tree, as a progressive bias (Chaslot et al. 2008): among the untried
actions of a node the one the policy prefers is expanded first, and the selection value of an action gains
``bias * P(a) / (1 + visits)``, where P is the policy's distribution over the actions legal in the sampled world
(a network: softmax of its logits; any other policy: all mass on its choice). docs/search.md lists both forms.
"""

from __future__ import annotations

import math
import random

from .base import decide
from .rollout import network_scorer, reseed


class _Node:
    __slots__ = ("children", "visits", "avail", "total")

    def __init__(self):
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.avail = 1
        self.total = 0.0


class ISMCTS:
    DEFAULT_ITERATIONS = 200
    reads_observation = False
    reads_mask = False          # with the state: state.legal_actions()

    DEFAULT_BIAS = 1.0

    def __init__(self, game, iterations: int = DEFAULT_ITERATIONS, seed: int | None = None,
                 exploration: float = 0.7, policy=None, prior: bool = False, bias: float = DEFAULT_BIAS,
                 name: str | None = None):
        """``policy``: the rollout policy (None: uniformly random moves from the search's generator);
        ``prior``: also use it as a progressive bias of weight ``bias`` in the tree (needs ``policy``)."""
        if prior and policy is None:
            raise ValueError("an ISMCTS prior needs a base policy (ismcts:N,prior:SPEC)")
        self.game = game
        self.iterations = iterations
        self.exploration = exploration
        self.rng = random.Random(seed)
        self.base = policy
        self.prior = prior
        self.bias = float(bias)
        self._choose = getattr(policy, "choose", None) if policy is not None else None
        self._scorer = network_scorer(policy) if policy is not None and self._choose is None else None
        self.name = name or f"ismcts:{iterations}"

    def reset(self) -> None:
        if self.base is not None and hasattr(self.base, "reset"):
            self.base.reset()

    def act(self, observation, action_mask, state=None) -> int:
        if state is None:
            raise ValueError("ismcts needs the engine state (evaluation and play pass it as the third argument)")
        legal = state.legal_actions()
        if len(legal) == 1:
            return legal[0]
        seat = state.current_player
        root = _Node()
        scale = [0.0, 0]  # running sum of |relative points| and its count
        for _ in range(self.iterations):
            self._iterate(state.determinize(seat, self.rng), root, scale)
        return max(legal, key=lambda a: (root.children[a].visits if a in root.children else -1))

    def _iterate(self, world, root: _Node, scale: list) -> None:
        """One iteration: selection by UCB (with ``prior``, plus the base policy's progressive bias), expansion of
        one untried move, a rollout to the end of the deal (random moves, or the base policy's), backup. Without a
        base policy it draws exactly the random numbers it always drew (``ismcts:N`` plays as before)."""
        rng, c, bias = self.rng, self.exploration, self.bias
        if self.base is not None:
            self._reseed(rng.getrandbits(32))
        deal = world.deals_completed
        node, path, movers = root, [], []
        # selection and expansion
        while world.current_player is not None and world.deals_completed == deal:
            legal = world.legal_actions()
            player = world.current_player
            prior = self._prior(world, legal) if self.prior else None
            untried = [a for a in legal if a not in node.children]
            if untried:
                if prior is not None:
                    top = max(prior.get(a, 0.0) for a in untried)
                    untried = [a for a in untried if prior.get(a, 0.0) == top]
                a = untried[rng.randrange(len(untried))]
                child = node.children[a] = _Node()
                for b in legal:
                    if b != a and b in node.children:
                        node.children[b].avail += 1
                world.apply(a)
                path.append(child)
                movers.append(player)
                break
            best, best_value = None, -math.inf
            for a in legal:
                ch = node.children[a]
                ch.avail += 1
                value = ch.total / ch.visits + c * math.sqrt(math.log(ch.avail) / ch.visits)
                if prior is not None:
                    value += bias * prior.get(a, 0.0) / (1 + ch.visits)
                if value > best_value:
                    best, best_value = a, value
            world.apply(best)
            node = node.children[best]
            path.append(node)
            movers.append(player)
        # rollout to the end of the deal
        choose, base = self._choose, self.base
        while world.current_player is not None and world.deals_completed == deal:
            legal = world.legal_actions()
            if base is None:
                world.apply(legal[rng.randrange(len(legal))])
            else:
                world.apply(choose(world, legal) if choose is not None else decide(base, world))
        values = self._values(world, deal, scale)
        for node, player in zip(path, movers):
            node.visits += 1
            node.total += values[player]

    def _reseed(self, seed: int) -> None:
        reseed(self.base, seed)

    def _prior(self, world, legal: list[int]) -> dict:
        """The base policy's distribution over ``legal`` for the player to move in ``world``."""
        if self._scorer is not None:
            scorer, _ = self._scorer
            logits = scorer(world.observation(world.current_player)[None, :])[0]
            z = [float(logits[a]) for a in legal]
            top = max(z)
            e = [math.exp(v - top) for v in z]
            total = sum(e)
            return {a: v / total for a, v in zip(legal, e)}
        if self._choose is not None:
            return {self._choose(world, legal): 1.0}
        return {decide(self.base, world): 1.0}

    def _values(self, world, deal: int, scale: list) -> list[float]:
        g = world.game
        n = world.num_players
        if world.deals_completed == deal or world.deal_report is None:
            return [0.0] * n                            # the match was cut short (truncation) mid-deal
        points = world.deal_report["deal_points"]
        rel = [g.relative_points(points, seat) for seat in range(n)]
        scale[0] += sum(abs(r) for r in rel) / n
        scale[1] += 1
        mean_abs = scale[0] / scale[1] or 1.0
        values = [max(-1.0, min(1.0, r / (2 * mean_abs))) for r in rel]
        if world.is_terminal and world.winners is not None:
            values = [v + (1.0 if seat in world.winners else -1.0) for seat, v in enumerate(values)]
        return values
