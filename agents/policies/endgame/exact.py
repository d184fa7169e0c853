"""Exact values by the engine itself: negamax with alpha-beta over ``clone()``/``apply()`` to the end of the deal.

Generic over two-sided games, and slow per node (a clone is tens of microseconds), so it serves where the rest of
a deal is one small perfect-information tree: Pâsur's last hand (:class:`PasurLastHand`). A leaf's value is the
deal's points as the engine scores them, :meth:`Game.relative_points` of the side that was to act at the root.
"""

from __future__ import annotations


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

    def _after(self, state, action: int, side: int, alpha: float, beta: float) -> float:
        """The value for ``side`` of ``action`` in ``state``, within the window (alpha, beta) of ``side``."""
        nxt = state.clone()
        deal = nxt.deals_completed
        seat = nxt.current_player
        nxt.apply(action)
        if nxt.current_player is None or nxt.deals_completed != deal:
            return self.game.relative_points(nxt.deal_report["deal_points"], seat) * (
                1 if self.game.sides[seat] == side else -1)
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
