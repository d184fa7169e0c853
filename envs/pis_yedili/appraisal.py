"""What a Pis Yedili move sheds, keeps and risks: the quantities a player weighs, from what the seat knows.

Whether a card is worth playing now depends on comparisons a network reading multi-hot card blocks would have
to relearn for every card id: how much the card costs if it stays in hand, whether the next player can play on
it, how close they are to going out and how much is at stake when they do. So the observation also carries, for
every legal action, the numbers below (:func:`move_features`), and the network's action-feature head
(docs/design.md) weighs them with weights every action shares (as Pâsur's and Pişti's observations do).

The next player's hand is taken to be dealt at random from the cards the seat has not seen (neither in its hand
nor on the discard pile). Only what the seat knows is read: its hand, the discard pile, the top card and named
suit, the hand sizes, the pending penalty, the direction and the settings; never another hand or the stock.

Speed. :func:`move_features` is the state's appraisal (``state.appraisal()``): computed once per state version,
for the player to act only, and shared by every reader of the decision; the plain observation
(``observation="plain"``) never computes it. A decision counts the cards it reads in one integer per hand or pile
(``tables.COUNTS``): the seat's hand summed in C, the discard pile's sum kept by the state as the pile grows
(``_pile_counts``), the unseen cards the packs less both (:func:`unseen_counts`); the chance that the next player
can follow is kept per pool and hand size (:class:`_Chances`). Each row is one list display, in the order of the
features. The numbers are the reference's to the bit (``tests/envs/reference/pis_yedili_appraisal.py``, the first
implementation, kept as their definition; tests/envs/test_appraisal.py compares the two over a corpus of states).
NumPy does not pay here: a decision weighs a handful of moves, fewer numbers than a NumPy call costs.
"""

from __future__ import annotations

import struct

from kahve.envs.core.cards import ACE, JACK, NUM_CARDS, SEVEN, TEN
from kahve.envs.core.odds import p_none

from .tables import (CARD_AT, COUNTS, COUNTS_SIZE, DRAW, JACK_IDS, MATCH, MOVE_FEATURES, ORDINARY, PACK_COUNTS, PLAY_J,
                     RANK, RANK_AT, SIGN_BITS, SUIT_AT, SUIT_VALUE_AT, TAKE_PENALTY, VALUE, VALUE_AT)

FEATURE_SCALE = 1.0           # the features below are already fractions
HAND_SCALE = 100.0            # a hand's penalty value, in these units
SHED_SCALE = 25.0             # a card's value (a J, the costliest card, is 1)

(F_PLAY,         # 1: a card is played (a J included)
 F_VALUE,        # the penalty value the move sheds (card value / 25); a draw: minus the mean unseen card's
 F_JACK,         # 1: a J
 F_SEVEN,        # 1: a 7 (the next player draws 3 or answers)
 F_ACE,          # 1: an A (every other player draws 1, then I play again)
 F_OUT,          # 1: the move empties my hand (I go out)
 F_FOLLOW,       # after an A or a twin: +1 I hold a card to follow with, -1 I must draw
 F_SUIT_KEPT,    # cards of the played suit (a J: the named suit) left in my hand, / 7: something to follow with
 F_RANK_KEPT,    # cards of the played rank left in my hand, / 4
 F_FOLLOWS,      # the chance the next player can play on what I leave (its suit or rank, the named suit, a J;
                 # facing a 7: a 7 of theirs)
 F_KEPT,         # my hand's penalty value after the move, / 100 (a draw adds the mean unseen card)
 F_EXPOSED,      # what the next player may make me pay soon: F_KEPT x F_FOLLOWS x how close they are to going
                 # out (1 with one card left, 1/2 with two, 1/4 with three, else 0)
 F_LAST,         # with two cards, the one kept for last: a J +1 (x2 when it goes out), a 7 +1/2, an A -1 (never)
 F_LAST_SEVEN,   # my last 7 played: the chance the next player holds a 7 (kept, it would answer theirs)
 F_DRAWN,        # cards the move draws (a draw 1, the penalty the pending cards), / 10
 F_BOUNCE,       # a 10 under the bounce rule (3+ players): how much closer to out the next player is than the
                 # previous one, / 4
 ) = range(MOVE_FEATURES)

_CLOSE = (1.0, 1.0, 0.5, 0.25)     # F_EXPOSED's weight by the next player's hand size (0 cards: the deal is over)


_SUIT_VALUES = struct.Struct("<4H")


def unseen_counts(state, seat: int) -> tuple:
    """``(mine, unseen, pool, my value, their value)``: the counts of ``seat``'s hand and of the cards it has not
    seen (the packs less its hand and the discard pile), both in ``tables.COUNTS``'s layout (read ``mine[RANK_AT +
    r]``, ``unseen[SUIT_AT + s]``, ...), how many cards it has not seen, and the penalty values of both."""
    hand = state.hands[seat]
    packs = state.game.packs
    counts = sum(map(COUNTS.__getitem__, hand))
    pile = state._pile_counts()
    unseen = PACK_COUNTS[packs] - pile - counts
    mine = counts.to_bytes(COUNTS_SIZE, "little")
    pool = NUM_CARDS * packs - len(state.discard) - len(hand)
    if unseen >= 0 and not unseen & SIGN_BITS:
        return mine, unseen.to_bytes(COUNTS_SIZE, "little"), pool, counts >> 8 * VALUE_AT, unseen >> 8 * VALUE_AT
    # more copies in the hand and on the pile than the packs hold (a state set up by hand): count by count, below
    # zero where it goes (only the one-byte counts are read from the list, the values are taken apart)
    full, pile_bytes = PACK_COUNTS[packs].to_bytes(COUNTS_SIZE, "little"), pile.to_bytes(COUNTS_SIZE, "little")
    unseen = [f - p - m for f, p, m in zip(full, pile_bytes, mine)]
    value = counts >> 8 * VALUE_AT
    return mine, unseen, pool, value, (PACK_COUNTS[packs] >> 8 * VALUE_AT) - (pile >> 8 * VALUE_AT) - value


class Known:
    """What every move of a decision shares: the seat's hand and the unseen cards, counted once (the heuristic,
    agents/policies/heuristics/pis_yedili.py, reads the same)."""

    __slots__ = ("hand", "n", "next_size", "prev_size", "_unseen", "unseen_suit", "unseen_rank", "pool",
                 "hand_value", "mean_unseen", "suit_count", "suit_value", "rank_count")

    def __init__(self, state, seat: int):
        n = state.num_players
        d = state.direction
        hands = state.hands
        self.hand, self.n = hands[seat], n
        self.next_size = len(hands[(seat + d) % n])
        self.prev_size = len(hands[(seat - d) % n])
        mine, unseen, pool, value, unseen_value = unseen_counts(state, seat)
        self._unseen = unseen
        self.unseen_suit = list(unseen[SUIT_AT:SUIT_AT + 4])        # a J follows anything: counted apart
        self.unseen_rank = list(unseen[RANK_AT:RANK_AT + 13])
        self.pool = pool
        self.mean_unseen = unseen_value / pool if pool else 0.0
        self.hand_value = value
        self.suit_count = list(mine[SUIT_AT:SUIT_AT + 4])
        self.suit_value = list(_SUIT_VALUES.unpack_from(mine, SUIT_VALUE_AT))
        self.rank_count = list(mine[RANK_AT:RANK_AT + 13])

    @property
    def unseen(self) -> list[int]:
        """The unseen copies of each card."""
        return list(self._unseen[CARD_AT:CARD_AT + NUM_CARDS])

    def followers(self, card: int, named: int | None = None) -> int:
        """How many unseen cards could be played on ``card``: any J, and a card of its suit or rank (on a J: of
        the suit ``named``)."""
        if named is not None:
            return self.unseen_suit[named] + self.unseen_rank[JACK]
        return (self.unseen_suit[card // 13] + self.unseen_rank[card % 13] - self._unseen[CARD_AT + card]
                + self.unseen_rank[JACK])

    def p_misses(self, k: int) -> float:
        """The chance that the next player holds none of k given unseen cards (their hand drawn from the pool)."""
        pool, h = self.pool, self.next_size
        if k <= 0:
            return 1.0
        if h + k > pool:
            return 0.0
        return p_none(pool, k, h)

    def p_holds(self, k: int) -> float:
        """The chance that the next player holds at least one of k given unseen cards."""
        return 1.0 - self.p_misses(k)


def move_features(state, seat: int | None = None) -> dict:
    """{legal action: its MOVE_FEATURES numbers} for the player to act (``seat``, default the player to act):
    :func:`appraise`, computed once per state version and shared by every reader of the decision
    (``state.appraisal()``). The dict and its rows are shared: read them, never change them."""
    if seat is None or seat == state.current_player:
        return state.appraisal()
    return appraise(state, seat)


def appraise(state, seat: int | None = None) -> dict:
    """{legal action: its MOVE_FEATURES numbers} for the player to act (``seat``, default the player to act),
    computed anew.

    :class:`Known`'s numbers, read straight from the counts they come from (only the few each move needs), and
    each row written out whole, in the order of the features (a list display costs less than sixteen stores);
    every number is the reference's expression, so the rows are its to the bit."""
    seat = state.current_player if seat is None else seat
    legal = state._legal                            # legal_actions() without the copy
    if legal is None:
        legal = state.legal_actions()
    if not legal:
        return {}
    n, d, hands = state.num_players, state.direction, state.hands
    hand = hands[seat]
    size = len(hand)
    next_size = len(hands[(seat + d) % n])
    mine, unseen, pool, value, unseen_value = unseen_counts(state, seat)
    my_suits, my_ranks = mine[SUIT_AT:SUIT_AT + 4], mine[RANK_AT:RANK_AT + 13]    # (a suit's: its J left out)
    suits, ranks = unseen[SUIT_AT:SUIT_AT + 4], unseen[RANK_AT:RANK_AT + 13]        # unseen[c]: card c's
    unseen_jacks = ranks[JACK]
    chances = _CHANCES.get((pool, next_size))        # k -> the chance the next player holds one of k cards
    if chances is None:
        chances = _chances(pool, next_size)
    close = _CLOSE[next_size] if next_size < len(_CLOSE) else 0.0
    out = float(size == 1)
    top = state.discard[-1] if state.discard else -1
    # the plays after which I play again: an A, or an ordinary card on its twin (PY-5, PY-6)
    twin_card = twin_rank = -1
    if top >= 0 and ORDINARY[top % 13]:
        if state.game.twin == 1:
            twin_card = top
        elif state.game.twin == 2:
            twin_rank = top % 13
    bounce_rule = state.game.bounce and n > 2
    rows = {}
    for action in legal:
        if action < PLAY_J:                                        # a card other than a J
            card = action
            rank, suit = card % 13, card // 13
            kept = (value - VALUE[card]) / HAND_SCALE
            if rank == SEVEN:                                 # a 7 on top: only a 7 answers it (PY-3, PY-4)
                follows = chances[ranks[SEVEN]]
                rows[action] = [
                    1.0, VALUE[card] / SHED_SCALE, 0.0, 1.0, 0.0, out, 0.0,
                    (my_suits[suit] - 1) / 7, (my_ranks[SEVEN] - 1) / 4, follows, kept, kept * follows * close,
                    _last(hand, card) if size == 2 else 0.0, follows if my_ranks[SEVEN] == 1 else 0.0, 0.0, 0.0]
                continue
            # its suit or rank, or any J (Known.followers)
            follows = chances[suits[suit] + ranks[rank] - unseen[card] + unseen_jacks]
            follow = 0.0
            if (rank == ACE or card == twin_card or rank == twin_rank) and size > 1:
                follow = 1.0 if _ready(hand, card) else -1.0    # I play again: a follow-up card, or a forced draw
                follows = 0.0                                   # the next player does not play on this card
            bounce = 0.0
            if rank == TEN and bounce_rule:                     # the bounce (PY-1, PY-2)
                bounce = (max(0, 4 - next_size) - max(0, 4 - len(hands[(seat - d) % n]))) / 4
            rows[action] = [
                1.0, VALUE[card] / SHED_SCALE, 0.0, 0.0, 1.0 if rank == ACE else 0.0, out, follow,
                (my_suits[suit] - 1) / 7, (my_ranks[rank] - 1) / 4, follows, kept, kept * follows * close,
                _last(hand, card) if size == 2 else 0.0, 0.0, 0.0, bounce]
        elif action < DRAW:                                        # a J naming a suit (PY-4)
            a = action - PLAY_J
            card, named = JACK_IDS[a >> 2], a & 3
            follows = chances[suits[named] + unseen_jacks]
            kept = (value - VALUE[card]) / HAND_SCALE
            rows[action] = [
                1.0, VALUE[card] / SHED_SCALE, 1.0, 0.0, 0.0, out, 0.0,
                my_suits[named] / 7, (my_ranks[JACK] - 1) / 4, follows, kept, kept * follows * close,
                _last(hand, card) if size == 2 else 0.0, 0.0, 0.0, 0.0]
        else:                                                      # a draw, a pass, the penalty taken
            drawn = 1 if action == DRAW else state.pending if action == TAKE_PENALTY else 0
            # what the next player faces: the top card as it is (a pass or a draw leaves it; after the penalty,
            # the 7 no longer binds)
            if top < 0:
                follows = 1.0
            elif top % 13 == JACK:
                named = state.ctx // 13
                follows = chances[suits[named] + unseen_jacks]
            else:
                suit, rank = top // 13, top % 13
                follows = chances[suits[suit] + ranks[rank] - unseen[top] + unseen_jacks]
            mean_unseen = unseen_value / pool if pool else 0.0
            kept = (value + drawn * mean_unseen) / HAND_SCALE
            rows[action] = [
                0.0, -drawn * mean_unseen / SHED_SCALE, 0.0, 0.0, 0.0, 0.0, 0.0,
                0.0, 0.0, follows, kept, kept * follows * close,
                0.0, 0.0, drawn / 10, 0.0]
    return rows


class _Chances(dict):
    """k -> :meth:`Known.p_holds`: the chance that the next player, ``hand`` cards dealt from the ``pool`` unseen
    ones, holds at least one of k given unseen cards; each computed on first use and kept. A decision reads a
    few, and a lookup in p_none's own cache (tens of thousands of entries, kept in order of use) costs about as
    much as the rest of a move's row."""

    __slots__ = ("pool", "hand")

    def __init__(self, pool: int, hand: int):
        super().__init__()
        self.pool, self.hand = pool, hand

    def __missing__(self, k: int) -> float:
        p = self[k] = _p_holds(self.pool, self.hand, k)
        return p


_CHANCES: dict = {}             # (pool, next player's hand size) -> its _Chances


def _chances(pool: int, hand: int) -> _Chances:
    if len(_CHANCES) >= 4096:   # a bound on the memory (a few thousand pairs occur, most of them rarely)
        _CHANCES.clear()
    chances = _CHANCES[pool, hand] = _Chances(pool, hand)
    return chances


def _p_holds(pool: int, hand: int, k: int) -> float:
    """:meth:`Known.p_holds` for the next player's ``hand`` cards from the ``pool`` of unseen ones: the chance
    that they hold at least one of k given unseen cards."""
    if k <= 0:
        return 0.0                                # 1 - 1
    if hand + k > pool:
        return 1.0                                # 1 - 0
    return 1.0 - p_none(pool, k, hand)


def _ready(hand: list, card: int) -> bool:
    """Whether, ``card`` played, the rest of the hand holds a card to follow it with (any J, its suit or rank;
    never out on an A, PY-7)."""
    rest = list(hand)
    rest.remove(card)
    ok = MATCH[card]
    return any(RANK[c] == JACK or (ok[c] and not (len(rest) == 1 and RANK[c] == ACE)) for c in rest)


def _last(hand: list, card: int) -> float:
    """With two cards, the one kept for last: a J +1, a 7 +1/2, an A -1 (never out on it, PY-7)."""
    last = RANK[hand[0] if hand[1] == card else hand[1]]
    return 1.0 if last == JACK else 0.5 if last == SEVEN else -1.0 if last == ACE else 0.0
