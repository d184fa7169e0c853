"""Exact values by the engine itself: negamax with alpha-beta over ``clone()``/``apply()`` to the end of the deal.

Generic over two-sided games, and slow per node (a clone is tens of microseconds), so it serves where the rest of
a deal is one small perfect-information tree: Pâsur's last hand (:class:`PasurLastHand`). A leaf's value is the
deal's points as the engine scores them, :meth:`Game.relative_points` of the side that was to act at the root.
"""

from __future__ import annotations


TIE = 1e-6              # deal points are whole numbers: values within this are equal


def played(state, action: int):
    """(a copy of ``state`` after ``action``, the deal's points per seat if that action ended the deal, else None)."""
    nxt = state.clone()
    deal = nxt.deals_completed
    nxt.apply(action)
    if nxt.current_player is None or nxt.deals_completed != deal:
        return nxt, nxt.deal_report["deal_points"]
    return nxt, None


class EngineSolver:
    """The exact value of every legal action of the player to act, both sides playing perfectly afterwards."""

    single_world = False            # True where the hand solved hides no card (``determinize`` deals the truth)

    @staticmethod
    def fits(game) -> bool:
        return game.num_sides == 2

    @staticmethod
    def applies(state) -> bool:
        """The stock is empty: the deal's last hand."""
        return not state.stock and state.current_player is not None

    def __init__(self, game):
        self.game = game

    def move_values(self, world) -> dict[int, float]:
        side = self.game.sides[world.current_player]
        return {a: self._after(world, a, side, -1e9, 1e9) for a in world.legal_actions()}

    def tiebreak_values(self, world, moves) -> dict[int, float]:
        """For each of ``moves`` (moves equal against perfect play), its mean points for the side to act when the
        opponent plays uniformly at random and the side goes on choosing as here: its best moves against perfect
        play, and among them the one worth most against random (:func:`solve_lines`). A move that is no worse
        against a perfect opponent and gives a fallible one more ways to go wrong is worth more (docs/search.md,
        "What it gives")."""
        side = self.game.sides[world.current_player]
        sign = 1 if side == 0 else -1                   # side 0's values -> the acting side's
        return {a: sign * lines[side] for a, (_, lines) in move_lines(self.game, world, moves).items()}

    def _after(self, state, action: int, side: int, alpha: float, beta: float) -> float:
        """The value for ``side`` of ``action`` in ``state``, within the window (alpha, beta) of ``side``."""
        seat = state.current_player
        nxt, points = played(state, action)
        if points is not None:
            return self.game.relative_points(points, seat) * (1 if self.game.sides[seat] == side else -1)
        if self.game.sides[nxt.current_player] == side:
            return self._best(nxt, side, alpha, beta)
        return -self._best(nxt, 1 - side, -beta, -alpha)

    def _best(self, state, side: int, alpha: float, beta: float) -> float:
        """The value for ``side`` (to act in ``state``) of its best action."""
        best = -1e9
        for a in state.legal_actions():
            value = self._after(state, a, side, alpha, beta)
            if value > best:
                best = value
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        return best


class PasurLastHand(EngineSolver):
    """Pâsur's last hand is a game of perfect information: the stock is empty, every card on the pool and every
    captured card was played face up, so the opponent's hand is exactly the cards the seat has not seen
    (``determinize`` can only deal it back). The rest of the round is at most 8 plays and their captures, which the
    engine solves outright (a few to a few tens of milliseconds); the round's scoring is the engine's own."""

    single_world = True             # every world ``determinize`` draws here is the true one: one is enough

    @staticmethod
    def fits(game) -> bool:
        return game.name == "pasur"


def solve_lines(game, state, nodes: list | None = None) -> tuple[float, list[float]]:
    """Plain negamax without pruning (every move's value exact) over a two-sided perfect-information rest of a deal:
    (the minimax value of ``state``, [its value when side 0 keeps to its best moves and, among them, takes the one
    worth most against random while side 1 plays uniformly at random (every legal action alike, each pick of a
    capture included), the same with the sides swapped]), all three for side 0. With ``nodes``, every decision node
    with more than one legal move is appended as (state, seat, {action: value}, {action: value against random}),
    values for the seat, children before parents (the expert stage keeps them as examples: agents/training/expert.py)."""
    seat = state.current_player
    side = game.sides[seat]
    sign = 1 if side == 0 else -1                   # side 0's values -> the acting side's
    children = move_lines(game, state, nodes=nodes)
    perfect = {a: sign * c[0] for a, c in children.items()}           # the acting side's values
    best = max(perfect.values())
    top = [a for a in children if perfect[a] >= best - TIE]
    vs_random = [0.0, 0.0]
    # the acting side keeps to its best moves and, among them, takes the one worth most against random play...
    vs_random[side] = sign * max(sign * children[a][1][side] for a in top)
    # ...and is the random player in the other side's line
    vs_random[1 - side] = sum(c[1][1 - side] for c in children.values()) / len(children)
    if nodes is not None and len(children) > 1:
        nodes.append((state, seat, perfect, {a: sign * c[1][side] for a, c in children.items()}))
    return sign * best, vs_random


def move_lines(game, state, moves=None, nodes: list | None = None) -> dict[int, tuple[float, list[float]]]:
    """For each of ``moves`` (default: every legal one) of ``state``, what :func:`solve_lines` gives for the state
    after it: (its minimax value, [its value on side 0's line against random, on side 1's]), all for side 0; a move
    that ends the deal is worth its points on every line. ``nodes`` as in :func:`solve_lines`."""
    children = {}
    for a in state.legal_actions() if moves is None else moves:
        nxt, points = played(state, a)
        if points is not None:
            v = game.relative_points(points, game.sides.index(0))
            children[a] = (v, [v, v])
        else:
            children[a] = solve_lines(game, nxt, nodes)
    return children
