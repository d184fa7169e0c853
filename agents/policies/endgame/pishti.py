"""Exact play of a Pişti deal's last hand, in one world where every card is known (docs/search.md, "The last hand").

With 2 players the stock is empty once the sixth hand is dealt, so the rest of the deal is at most 8 plays by two
players who alternate, and a world from ``determinize`` fixes the opponent's hand and the face-down cards. The
tree is small enough to solve outright: negamax with alpha-beta over plays, where two cards of the same rank and
the same card points are the same move (nothing in the rules tells them apart, §1c/§1d). Leaves are the deal's
score as the engine computes it (`_deal_end`): the pile left goes to the last capturer (PI-10), the majority
bonus to the side with the unique most cards (PI-8), and the value is the acting side's points minus the other's
(:meth:`Game.side_relative_points` for two sides). A pişti never scores on the 48th play (PI-5); the pişti values
follow the table's ``jack_double`` settings through the engine's own ``_pisti_value``.

The solver reads a state through the same attributes the engine keeps (``hands``, ``pile``, ``captured``,
``pisti_points``, ``last_capturer``, ``play_number``); ``tests/agents/test_endgame.py`` checks its value of every
line against the engine playing that line out.
"""

from __future__ import annotations

from kahve.envs.core.cards import JACK
from kahve.envs.pishti.rules import PLAYS_PER_DEAL

EMPTY = -1          # the pile's top rank when the pile is empty


class PishtiLastHand:
    """The values of the moves of the player to act in a fully known world, from that player's side."""

    single_world = False            # the opponent's hand and the face-down cards stay hidden in the last hand

    @staticmethod
    def fits(game) -> bool:
        return game.name == "pishti" and game.num_players == 2

    @staticmethod
    def applies(state) -> bool:
        """The stock is empty: what is left of the deal is the last hand."""
        return not state.stock and state.current_player is not None

    def __init__(self, game):
        s = game.settings
        self.points = game.card_points
        self.majority = s.majority_bonus
        self.jack_on_empty = s.jack_on_empty_counts
        probe = game.new_state(0)                 # only for the engine's own pişti table (_pisti_value)
        jack, other = JACK, 0                     # card ids of a jack and a non-jack (clubs)
        # (the capturing card is a jack, the lone card is a jack) -> the pişti's points
        self.pisti_on = {(a == jack, b == jack): probe._pisti_value(a, b) for a in (jack, other) for b in (jack, other)}
        self.pisti_empty = probe._pisti_value(jack, None)

    def move_values(self, world) -> dict[int, float]:
        """Exact value (the mover's side's deal points minus the other side's) of every card the player to act in
        ``world`` may play, with both players playing perfectly afterwards."""
        me = world.current_player
        side = world.game.sides
        mine, theirs = tuple(world.hands[me]), tuple(world.hands[1 - me])
        pile = world.pile
        pts = self.points
        top = pile[-1] % 13 if pile else EMPTY
        my_side, their_side = side[me], side[1 - me]
        my_n, their_n = len(world.captured[my_side]), len(world.captured[their_side])
        my_pts = sum(pts[c] for c in world.captured[my_side]) + world.pisti_points[my_side]
        their_pts = sum(pts[c] for c in world.captured[their_side]) + world.pisti_points[their_side]
        last = world.last_capturer
        last_rel = 0 if last is None else (1 if last == my_side else -1)
        pile_pts = sum(pts[c] for c in pile)
        by_class = {}
        for card in self._distinct(mine):
            child = self._play(card, mine, theirs, top, len(pile), pile_pts, my_n, my_pts, their_n,
                               their_pts, last_rel, world.play_number)
            by_class[(card % 13, pts[card])] = -self._negamax(*child, -1e9, 1e9)
        return {card: by_class[(card % 13, pts[card])] for card in mine}

    # ----- the search -----------------------------------------------------------------------------------
    def _distinct(self, hand):
        """One card per (rank, points) class."""
        seen, out = set(), []
        pts = self.points
        for c in hand:
            key = (c % 13, pts[c])
            if key not in seen:
                seen.add(key)
                out.append(c)
        return out

    def _play(self, card, mine, theirs, top, pile_n, pile_pts, my_n, my_pts, their_n, their_pts,
              last_rel, play):
        """The position after the mover plays ``card``, seen from the other player (who moves next): the tuple
        of :meth:`_negamax`'s arguments."""
        rank = card % 13
        p = self.points[card]
        play += 1
        rest = list(mine)
        rest.remove(card)
        rest = tuple(rest)
        if pile_n and (rank == JACK or rank == top):                  # a capture (§1c)
            my_n += pile_n + 1
            my_pts += pile_pts + p
            if pile_n == 1 and play != PLAYS_PER_DEAL:                # a pişti, never on the 48th play (PI-5)
                my_pts += self.pisti_on[(rank == JACK, top == JACK)]          # the lone card is the top
            top, pile_n, pile_pts, last_rel = EMPTY, 0, 0, 1
        elif not pile_n and rank == JACK and self.jack_on_empty:      # PI-4: the jack takes itself
            my_n += 1
            my_pts += p + (self.pisti_empty if play != PLAYS_PER_DEAL else 0)
            last_rel = 1
        else:                                                          # a trail
            top, pile_n, pile_pts = rank, pile_n + 1, pile_pts + p
        return (theirs, rest, top, pile_n, pile_pts, their_n, their_pts, my_n, my_pts, -last_rel, play)

    def _negamax(self, mine, theirs, top, pile_n, pile_pts, my_n, my_pts, their_n, their_pts, last_rel,
                 play, alpha, beta) -> float:
        if not mine:                     # the players alternate, so the mover's empty hand ends the deal
            return self._leaf(pile_n, pile_pts, my_n, my_pts, their_n, their_pts, last_rel)
        # the alpha-beta step of exact.EngineSolver._best, written out here: this loop runs a few hundred times a
        # world, and a shared helper would cost a call per child
        best = -1e9
        for card in self._distinct(mine):
            child = self._play(card, mine, theirs, top, pile_n, pile_pts, my_n, my_pts, their_n,
                               their_pts, last_rel, play)
            value = -self._negamax(*child, -beta, -alpha)
            if value > best:
                best = value
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        return best

    def _leaf(self, pile_n, pile_pts, my_n, my_pts, their_n, their_pts, last_rel) -> float:
        if pile_n:                                                     # PI-10: the pile to the last capturer
            if last_rel > 0:
                my_n, my_pts = my_n + pile_n, my_pts + pile_pts
            elif last_rel < 0:
                their_n, their_pts = their_n + pile_n, their_pts + pile_pts
        if my_n > their_n:                                             # PI-8: the unique most cards
            my_pts += self.majority
        elif their_n > my_n:
            their_pts += self.majority
        return float(my_pts - their_pts)
