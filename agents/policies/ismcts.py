"""Information-set Monte-Carlo tree search (single-observer ISMCTS, Cowling, Powley & Whitehouse 2012).

Generic over every game: it needs only the engine protocol — ``determinize(seat, rng)`` to sample a world
consistent with what the searching seat has seen, and ``legal_actions``/``apply``/``current_player``.

Each iteration samples a determinization, descends the one tree of the searcher's information set choosing
among the actions legal in that world by UCB with availability counts, expands one node, finishes the
*current deal* with random play, and backs up each player's value. A node stores the value of the player
who made the move into it. The search horizon is the end of the current deal (a deal, round or Ish round):
a match may be many deals long, and deal points are what a move can influence. The value of a rollout for a
seat is its side's deal points minus the mean of the other sides' (penalties flipped, as in ``reward="points"``),
scaled by the running mean magnitude seen in this search and clipped to [-1, 1]; a rollout that ends the
match adds the match outcome.
"""

from __future__ import annotations

import math
import random


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

    def __init__(self, game, iterations: int = DEFAULT_ITERATIONS, seed: int | None = None,
                 exploration: float = 0.7):
        self.game = game
        self.iterations = iterations
        self.exploration = exploration
        self.rng = random.Random(seed)
        self.name = f"ismcts:{iterations}"

    def reset(self) -> None:
        pass

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
        rng, c = self.rng, self.exploration
        deal = world.deals_completed
        node, path, movers = root, [], []
        # selection and expansion
        while world.current_player is not None and world.deals_completed == deal:
            legal = world.legal_actions()
            player = world.current_player
            untried = [a for a in legal if a not in node.children]
            if untried:
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
                if value > best_value:
                    best, best_value = a, value
            world.apply(best)
            node = node.children[best]
            path.append(node)
            movers.append(player)
        # rollout to the end of the deal
        while world.current_player is not None and world.deals_completed == deal:
            legal = world.legal_actions()
            world.apply(legal[rng.randrange(len(legal))])
        values = self._values(world, deal, scale)
        for node, player in zip(path, movers):
            node.visits += 1
            node.total += values[player]

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
