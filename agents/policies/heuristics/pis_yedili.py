"""Pis Yedili heuristic: how a sensible player sheds, from their own hand and the table (docs/rules.md §3).

Points are penalties (lower is better): a card left in hand costs its value (J 25, A 11, 10/Q/K 10, 2-9 face
value, so a 7 is 7) when someone goes out, times 2 if they went out on a J and 3 on a 7, and every 7 left in
hand also costs a blind Muamele draw of 3 cards. The rules, in order of priority:

1. Go out whenever the last card can be played (the only card a player may never go out on is an A).
2. Facing a pending 7, answer it with a 7 whenever one is held (the one of the suit held most); take the
   penalty only without one.
3. Prefer playing to drawing, and after a voluntary draw play whatever is legal; pass only with nothing to
   play. (Drawing rather than playing a lone J was measured: it loses about 1 point a deal with 2 players
   and 5 with 4, as the J is worth 25.)
4. Shed the most expensive cards first: the score of a play grows with the card's penalty value, and a 7
   also counts its Muamele risk (a 7 kept is the costliest card when someone goes out).
5. Keep a 7 to answer a 7: the last 7 in hand loses priority while the next player may still hold one
   (from the count of unseen 7s and their hand size). (An extra bonus for the 7 as an attack on the next
   player was measured and lost points: the 7s are shed early enough by their value and Muamele risk.)
6. Keep jacks as wild cards: a J is played only to go out or when no other card is legal. Its
   named suit is the one the rest of the hand is worth most in (value-weighted count), preferring suits
   with few unseen cards left, which the next player is less likely to follow.
7. Play an A (every other player draws 1) when there is a follow-up card to play after it: a card of its
   suit or rank, or a J. With two cards left an A goes first, as it can never be the last card. A twin (an
   ordinary card on its identical twin, two packs) is played the same way, for the extra turn.
8. Plan the last card: with two cards left keep a J (x2, and playable on anything) or a 7 (x3) for last,
   and never keep an A for last.
9. Keep suit control: prefer cards whose suit (or rank) the rest of the hand holds more of, so there is
   something to follow with; and block: prefer cards the next player is unlikely to follow (few unseen cards
   of that suit or rank), the more so the closer they are to going out.
10. With the bounce rule (3+ players) a 10 sends the next turn back to the previous player: play it when the
    next player is close to going out and the previous one is not.
11. Round 1 (any club 2-6, 8, 9, Q, K): shed the most valuable one.

Only what the seat knows is read: its hand, the discard pile (so the unseen cards: neither in the hand nor in
the pile), the top card, the phase, the sizes of the other hands, the direction and the settings; never the
other hands or the stock order.
"""

from __future__ import annotations

from kahve.envs.core.cards import ACE, JACK, SEVEN, TEN
from kahve.envs.pis_yedili.appraisal import Known
from kahve.envs.pis_yedili.rules import (DRAW, FACING_SEVEN, FIRST_ROUND, JACK_IDS, MATCH, ORDINARY, PASS,
                                         PLAY_J, RANK, TAKE_PENALTY, VALUE)

from .base import ScoredHeuristic


# weights (points of penalty, roughly)
W_VALUE = 1.0                          # rule 4: per point of value shed
SEVEN_MUAMELE = 6.0                    # rule 4: extra cost of a 7 kept (Muamele risk)
KEEP_LAST_SEVEN = 10.0                 # rule 5: cost of giving up the last 7 while one may be aimed at us
ACE_PER_PLAYER = 5.0                   # rule 7: each other player draws one card
FOLLOW_OK = 10.0                       # rule 7: a follow-up play is ready (an extra card shed)
FOLLOW_MISS = 10.0                     # rule 7: no follow-up: a forced draw
LAST_J = 20.0                          # rule 8
LAST_7 = 10.0                          # rule 8
LAST_A = 60.0                          # rule 8
W_SUIT = 2.0                           # rule 9: per other card of the played card's suit kept
W_RANK = 1.5                           # rule 9: per other card of its rank kept
W_BLOCK = 6.0                          # rule 9: the next player cannot follow (times urgency)
W_NAME_VALUE = 0.3                     # rule 6: per point of value held in the named suit
W_NAME_COUNT = 3.0                     # rule 6: per card held in the named suit
W_BOUNCE = 6.0                         # rule 10

# tiers (rules 1-3, 6): going out > answering a 7 > any other card > a J > a draw > a pass or taking the
# penalty; each tier's own terms stay well inside its band
OUT = 100_000.0
ANSWER = 10_000.0
PLAY_BASE = 1_000.0
JACK_BASE = 600.0
DRAW_SCORE = 200.0


class _View(Known):
    """What the seat knows, computed once per decision: the appraisal's counts (envs/pis_yedili/appraisal.py)
    and a few more."""

    __slots__ = ("seat", "sevens", "jacks")

    def __init__(self, state):
        seat = state.current_player
        super().__init__(state, seat)
        self.seat = seat
        self.sevens = self.rank_count[SEVEN]
        self.jacks = self.rank_count[JACK]

    def p_no_follow(self, k: int) -> float:
        """Chance that the next player holds none of k given unseen cards (their hand drawn from the pool)."""
        return self.p_misses(k)

    def p_next_holds(self, rank: int) -> float:
        return 1.0 - self.p_no_follow(self.unseen_rank[rank])

    def urgency(self) -> float:
        """How much blocking the next player matters: more as their hand shrinks."""
        h = self.next_size
        return 3.0 if h <= 1 else 2.0 if h == 2 else 1.0 if h <= 4 else 0.4


class PisYediliHeuristic(ScoredHeuristic):

    def knowledge(self, state) -> _View:
        return _View(state)                                  # what the seat knows, once per decision

    def score(self, state, action: int, known=None) -> float:
        v = known if known is not None else _View(state)
        hand = v.hand
        phase = state.phase
        if action == TAKE_PENALTY:
            return 0.0
        if action == PASS:
            return 0.0
        if action == DRAW:
            return DRAW_SCORE
        if action >= PLAY_J:
            k = action - PLAY_J
            return self._jack(state, v, JACK_IDS[k >> 2], k & 3)
        card = action
        rank = RANK[card]
        if len(hand) == 1:                                   # rule 1
            return OUT + (100.0 * state.settings.seven_out_multiplier if rank == SEVEN else 0.0)
        if phase == FACING_SEVEN:                            # rule 2
            return ANSWER + v.suit_count[card // 13]
        if phase == FIRST_ROUND:                             # rule 11
            return VALUE[card] + W_RANK * (v.rank_count[rank] - 1)
        return self._play(state, v, card, rank)

    # ----- a non-jack card ----------------------------------------------------------------------------
    def _play(self, state, v: _View, card: int, rank: int) -> float:
        hand = v.hand
        s = PLAY_BASE + W_VALUE * VALUE[card]
        suit = card // 13
        if rank == SEVEN:                                    # rules 4, 5
            s += SEVEN_MUAMELE
            if v.sevens == 1:
                s -= KEEP_LAST_SEVEN * v.p_next_holds(SEVEN)
        follow = False
        if rank == ACE:                                      # rule 7
            s += ACE_PER_PLAYER * (v.n - 1)
            follow = True
        elif ORDINARY[rank] and state.discard and state.game.twin and (
                state.discard[-1] == card if state.game.twin == 1 else RANK[state.discard[-1]] == rank):
            follow = True
        if follow:
            rest = list(hand)
            rest.remove(card)
            ok = MATCH[card]
            nxt = [c for c in rest if RANK[c] == JACK or (ok[c] and not (len(rest) == 1 and RANK[c] == ACE))]
            if nxt:
                s += FOLLOW_OK
                if len(rest) == 1:                           # the follow-up goes out
                    s += OUT / 2
            else:
                s -= FOLLOW_MISS
        if rank == TEN and state.game.bounce and v.n > 2:    # rule 10
            s += W_BOUNCE * (max(0, 4 - v.next_size) - max(0, 4 - v.prev_size))
        if len(hand) == 2:                                   # rule 8
            last = hand[0] if hand[1] == card else hand[1]
            lr = RANK[last]
            s += LAST_J if lr == JACK else LAST_7 if lr == SEVEN else -LAST_A if lr == ACE else 0.0
        # rule 9: suit control and blocking
        s += W_SUIT * (v.suit_count[suit] - 1) + W_RANK * (v.rank_count[rank] - 1)
        s += W_BLOCK * v.urgency() * v.p_no_follow(v.followers(card))
        return s

    # ----- a jack -------------------------------------------------------------------------------------
    def _jack(self, state, v: _View, jack: int, named: int) -> float:
        hand = v.hand
        if len(hand) == 1:                                   # rule 1
            return OUT + 100.0 * state.settings.jack_out_multiplier
        s = JACK_BASE
        if len(hand) == 2:
            last = hand[0] if hand[1] == jack else hand[1]
            if RANK[last] == ACE:
                s -= LAST_A
            elif RANK[last] == JACK:
                s += LAST_J
        # rule 6: the named suit
        s += W_NAME_VALUE * v.suit_value[named] + W_NAME_COUNT * v.suit_count[named]
        s += W_BLOCK * v.urgency() * v.p_no_follow(v.followers(jack, named))
        return s
