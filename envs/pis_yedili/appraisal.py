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
(``observation="plain"``) never computes it. :class:`Known`'s counts of the unseen cards start from the copies not
on the discard pile, which the state keeps up to date as the pile grows (``_discard_unseen``), so a decision
counts only its own hand instead of the whole deck and pile. The numbers are the reference's to the bit
(``tests/envs/reference/pis_yedili_appraisal.py``, the first implementation, kept as their definition;
tests/envs/test_appraisal.py compares the two over a corpus of states). NumPy does not pay here: a decision
weighs a handful of moves, fewer numbers than a NumPy call costs.
"""

from __future__ import annotations

from kahve.envs.core.cards import ACE, JACK, NUM_CARDS, SEVEN, TEN
from kahve.envs.core.odds import p_none

from .tables import DRAW, JACK_IDS, MATCH, MOVE_FEATURES, ORDINARY, PLAY_J, RANK, TAKE_PENALTY, VALUE

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


class Known:
    """What every move of a decision shares: the seat's hand and the unseen cards, counted once (the heuristic,
    agents/policies/heuristics/pis_yedili.py, reads the same)."""

    __slots__ = ("hand", "n", "next_size", "prev_size", "unseen", "unseen_suit", "unseen_rank", "pool",
                 "hand_value", "mean_unseen", "suit_count", "suit_value", "rank_count")

    def __init__(self, state, seat: int):
        n = state.num_players
        d = state.direction
        hand = state.hands[seat]
        self.hand, self.n = hand, n
        self.next_size = len(state.hands[(seat + d) % n])
        self.prev_size = len(state.hands[(seat - d) % n])
        # the copies not on the discard pile, kept by the state as the pile grows; then my hand taken out
        _, _, left, suits, ranks, total = state._discard_unseen()
        unseen, us, ur = left[:], suits[:], ranks[:]
        sc, sv, rc = [0] * 4, [0] * 4, [0] * 13
        value = 0
        for c in hand:
            s, r, v = c // 13, c % 13, VALUE[c]
            unseen[c] -= 1
            us[s] -= 1
            ur[r] -= 1
            total -= v
            rc[r] += 1
            value += v
            if r != JACK:
                sc[s] += 1
                sv[s] += v
        for s in range(4):                       # a J follows anything: counted apart from its suit
            us[s] -= unseen[13 * s + JACK]
        self.unseen, self.unseen_suit, self.unseen_rank = unseen, us, ur
        self.pool = sum(ur)
        self.mean_unseen = total / self.pool if self.pool else 0.0
        self.hand_value, self.suit_count, self.suit_value, self.rank_count = value, sc, sv, rc

    def followers(self, card: int, named: int | None = None) -> int:
        """How many unseen cards could be played on ``card``: any J, and a card of its suit or rank (on a J: of
        the suit ``named``)."""
        if named is not None:
            return self.unseen_suit[named] + self.unseen_rank[JACK]
        return self.unseen_suit[card // 13] + self.unseen_rank[card % 13] - self.unseen[card] + self.unseen_rank[JACK]

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
    computed anew."""
    seat = state.current_player if seat is None else seat
    legal = state.legal_actions()
    if not legal:
        return {}
    k = Known(state, seat)
    close = _CLOSE[k.next_size] if k.next_size < len(_CLOSE) else 0.0
    rows = {}
    for action in legal:
        row = [0.0] * MOVE_FEATURES
        if action < DRAW:
            _play_row(state, k, action, row)
        else:
            _draw_row(state, k, action, row)
        row[F_EXPOSED] = row[F_KEPT] * row[F_FOLLOWS] * close
        rows[action] = row
    return rows


def _play_row(state, k: Known, action: int, row: list) -> None:
    hand = k.hand
    if action >= PLAY_J:
        a = action - PLAY_J
        card, named = JACK_IDS[a >> 2], a & 3
        row[F_JACK] = 1.0
        row[F_SUIT_KEPT] = k.suit_count[named] / 7
        row[F_FOLLOWS] = k.p_holds(k.followers(card, named))
    else:
        card = action
        rank, suit = RANK[card], card // 13
        row[F_SEVEN] = float(rank == SEVEN)
        row[F_ACE] = float(rank == ACE)
        row[F_SUIT_KEPT] = (k.suit_count[suit] - 1) / 7
        if rank == SEVEN:                                 # a 7 on top: only a 7 answers it (PY-3, PY-4)
            follows = k.unseen_rank[SEVEN]
            if k.rank_count[SEVEN] == 1:
                row[F_LAST_SEVEN] = k.p_holds(follows)
        else:
            follows = k.followers(card)
        row[F_FOLLOWS] = k.p_holds(follows)
        again = rank == ACE or (ORDINARY[rank] and state.discard and state.game.twin and (     # PY-5, PY-6
            state.discard[-1] == card if state.game.twin == 1 else RANK[state.discard[-1]] == rank))
        if again and len(hand) > 1:                       # I play again: a follow-up card, or a forced draw
            rest = list(hand)
            rest.remove(card)
            ok = MATCH[card]
            # never out on an A (PY-7)
            ready = any(RANK[c] == JACK or (ok[c] and not (len(rest) == 1 and RANK[c] == ACE)) for c in rest)
            row[F_FOLLOW] = 1.0 if ready else -1.0
            row[F_FOLLOWS] = 0.0                          # the next player does not play on this card
        if rank == TEN and state.game.bounce and k.n > 2:  # the bounce (PY-1, PY-2)
            row[F_BOUNCE] = (max(0, 4 - k.next_size) - max(0, 4 - k.prev_size)) / 4
    row[F_PLAY] = 1.0
    row[F_VALUE] = VALUE[card] / SHED_SCALE
    row[F_RANK_KEPT] = (k.rank_count[RANK[card]] - 1) / 4
    row[F_OUT] = float(len(hand) == 1)
    row[F_KEPT] = (k.hand_value - VALUE[card]) / HAND_SCALE
    if len(hand) == 2:
        last = RANK[hand[0] if hand[1] == card else hand[1]]
        row[F_LAST] = 1.0 if last == JACK else 0.5 if last == SEVEN else -1.0 if last == ACE else 0.0


def _draw_row(state, k: Known, action: int, row: list) -> None:
    drawn = 1 if action == DRAW else state.pending if action == TAKE_PENALTY else 0
    row[F_DRAWN] = drawn / 10
    row[F_VALUE] = -drawn * k.mean_unseen / SHED_SCALE
    row[F_KEPT] = (k.hand_value + drawn * k.mean_unseen) / HAND_SCALE
    # what the next player faces: the top card as it is (a pass or a draw leaves it; after the penalty, the 7
    # no longer binds)
    if state.discard:
        top = state.discard[-1]
        follows = k.followers(top, state.ctx // 13 if RANK[top] == JACK else None)
        row[F_FOLLOWS] = k.p_holds(follows)
    else:
        row[F_FOLLOWS] = 1.0
