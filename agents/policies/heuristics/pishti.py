"""Pişti heuristic: how a careful club player plays, from their own hand and the table.

1. Take a pişti whenever possible (a lone card of my rank, or a lone card with a jack when that scores).
2. Otherwise capture with a matching non-jack card if the pile holds points or several cards.
3. A jack captures only a pile worth it (at least 4 cards or 2+ points); otherwise keep it.
4. When trailing, trail the card least useful to the opponent: onto an empty pile prefer a rank whose other
   copies are mostly gone (fewer ways to be pişti'd), never a point card or a jack if something else will do,
   and avoid leaving a card the next player can take a big pile with.
"""

from __future__ import annotations

from kahve.envs.core.cards import JACK

from .base import ScoredHeuristic


def pile_value(state) -> float:
    """What taking the pile is worth: the points of its face-up cards and a quarter per card."""
    pts = state.game.card_points
    return sum(pts[c] for c in state.pile[state.pile_face_down:]) + 0.25 * len(state.pile)


def copies_seen(state, rank: int) -> int:
    """The cards of ``rank`` the player to act has seen or holds (the played card's own included)."""
    hand = state.hands[state.current_player]
    return sum(1 for c in range(rank, 52, 13) if state.seen[c] or c in hand)


class PishtiHeuristic(ScoredHeuristic):

    def score(self, state, card: int, known=None) -> float:
        pts = state.game.card_points
        pile = state.pile
        rank = card % 13
        if pile and (rank == JACK or rank == pile[-1] % 13):
            if len(pile) == 1 and state._pisti_value(card, pile[0]) > 0:
                return 100 + state._pisti_value(card, pile[0])
            value = pile_value(state)
            if rank != JACK:
                return 50 + value + pts[card]
            if len(pile) >= 4 or value >= 2:
                return 40 + value
            return -10                                   # a jack is wasted on a small pile
        # trailing
        seen_of_rank = copies_seen(state, rank) - 1
        value = -pts[card] * 3 - (20 if rank == JACK else 0)
        if not pile:
            value += 2 * seen_of_rank                    # fewer live copies, fewer pişti chances
        else:
            value -= 0.5 * len(pile) * (3 - seen_of_rank) / 3  # a live rank lets the next player take the pile
        return value


class PishtiGreedy(ScoredHeuristic):
    """A plain greedy Pişti player, the yardstick of docs/search.md: capture whenever a card can (a pişti
    first, then the pile worth most, a matching card before a jack), else trail the rank it has seen most
    (the copies least likely to come back as a pişti)."""

    name = "greedy"

    def score(self, state, card: int, known=None) -> float:
        pile = state.pile
        rank = card % 13
        if pile and (rank == JACK or rank == pile[-1] % 13):
            if len(pile) == 1 and state._pisti_value(card, pile[0]) > 0:
                return 1000 + state._pisti_value(card, pile[0])
            return 500 + pile_value(state) + (0 if rank == JACK else 0.1)
        return copies_seen(state, rank)
