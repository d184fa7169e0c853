"""What a Pâsur move takes and leaves: the quantities a player weighs, from what the seat knows.

A Pâsur card's worth in a move depends on subset sums over the pool (which capture options it has) and on what
the opponent can take from the pool left behind. A network reading multi-hot card blocks has to rediscover that
arithmetic for every card id separately (an MLP imitating the heuristic's card choice stalled at 86%), so the
appraised observation (``observation="appraised"``, the default) also carries, for every legal action, the few
numbers below (:func:`move_features`); the heuristic (:mod:`kahve.agents.policies.heuristics.pasur`) is a fixed
weighting of the same numbers, and a network's action-feature head (docs/design.md) learns its own.

Every card counts by its *value* in the round (docs/rules.md §2d): TD 3, 2C 2, each A and J 1, each club about 1
while the 7-clubs race is open (nothing once someone holds 7), and a little for any card (``COUNT_BONUS``: a
captured card thins the pool). Only what the seat knows is read: its hand, the pool, both captured piles, surs,
the card being played, and the public counts; never the opponent's hand or the stock.

Speed. :func:`move_features` is the state's appraisal (``state.appraisal()``): computed once per state version,
for the player to act only, and shared by the observation and the heuristic; the plain observation
(``observation="plain"``) never computes it. The numbers are the reference's to the bit
(``tests/envs/reference/pasur_appraisal.py``, the first implementation, kept as their definition;
tests/envs/test_appraisal.py compares the two over a corpus of states), so every float is added in the
reference's order: what is faster is how they are reached. The ranks I have seen are counted in one C-level sum
(each card adds one to its rank's byte of an int; the state keeps that sum for the round's public cards, so a
decision adds only its hand) and the opponent's chances looked up by those counts; a pool's
cards of a kind are picked by ``bytes.translate`` (one C call, not a loop); a card's options are weighed in one
pass that keeps the most valuable row. The knapsack of the threat is memoized by the *classes* of the pool's
numeric cards (value and worth, in card-id order: the order the reference adds them in), not by the cards: pools
of the same cards rarely come back (fewer than half within thousands of deals), pools of the same classes mostly
do. NumPy does not pay here: a decision weighs a handful of moves over pools of a few cards, where a NumPy call
costs more than the Python it replaces.
"""

from __future__ import annotations

from kahve.envs.core.cards import JACK, NUM_CARDS
from kahve.envs.core.odds import expected_best, p_none

from .tables import (CARD_POINTS, HANDS_PER_ROUND, IS_CLUB, MOVE_FEATURES, NOT_RANK, PHASE_SELECT,
                     QUEENS_KINGS, RANK, RANK_OF, RANK_UNIT, TAKE)

HAND = 4
COUNT_BONUS = 0.05          # a captured card thins the pool a little, whatever it is worth
CLUB_WEIGHT = 1.0           # a club while the 7-clubs race is open

# what each card is worth to take: while the race is open, once it is decided
CARD_VALUE = {w: [CARD_POINTS[c] + w * IS_CLUB[c] + COUNT_BONUS for c in range(NUM_CARDS)] for w in (0.0, CLUB_WEIGHT)}

# ----- the per-action features (one row of MOVE_FEATURES numbers per action), in points / FEATURE_SCALE --------
FEATURE_SCALE = 5.0
#: the largest pool on which no feature can leave [-10, 10] once scaled, so the observation need not clip: a move
#: takes, leaves or exposes at most the pool and the played card (each worth at most the dearest card value), the
#: opponent's reply adds at most a sur (``sur_value`` is at most 10); flags and card points are smaller
UNCLIPPED_POOL = int((10.0 * FEATURE_SCALE - 10) / max(max(v) for v in CARD_VALUE.values())) - 1
assert UNCLIPPED_POOL >= 8
(F_TAKEN,        # value of the cards a capture takes, the played card included
 F_POINTS,       # card points (§2d) a capture takes, the played card included
 F_SUR,          # 1: the capture scores a sur or cancels one of the opponent's
 F_CAPTURE,      # 1: a capture (0: a trail)
 F_JACK,         # 1: the card is a jack, hands 1-5 (a jack in hand is a reserve)
 F_JACK_FINAL,   # 1: the card is a jack, final hand
 F_JACK_SWEEP,   # 1: a jack's sweep
 F_TRAILED,      # value of a trailed card (given up to the pool)
 F_THREAT,       # expected value of the opponent's best capture on the pool left (0 at the round's last play)
 F_LEFTOVER,     # the round's last play: the pool left, + when it comes to me, - when to the opponent
 ) = range(MOVE_FEATURES)

_RANKS = range(13)
_QUEEN_KING = (JACK + 1, JACK + 2)
# for bytes.translate's delete (a pool's cards of a kind in one C call, in pool order): J, Q and K (with
# tables.QUEENS_KINGS and tables.NOT_RANK)
_NOT_NUMERIC = bytes(c for c in range(NUM_CARDS) if RANK[c] >= JACK)


def _card_classes(card_value: list, classes: dict) -> bytes:
    """A ``bytes.translate`` table naming each numeric card's (value, worth) by one byte, the same byte in every
    table made with ``classes``: cards of one class are the same to the knapsack (:func:`best_captures`)."""
    return bytes([classes.setdefault((RANK[c] + 1, card_value[c]), len(classes) + 1) if RANK[c] < JACK else 0
                  for c in range(NUM_CARDS)] + [0] * (256 - NUM_CARDS))


_CLASS_IDS: dict = {}
#: id(card value table) -> (the table, its card classes), for CARD_VALUE's tables
_CLASSES = {id(table): (table, _card_classes(table, _CLASS_IDS)) for table in CARD_VALUE.values()}
assert len(_CLASS_IDS) < 256
#: (the numeric pool cards' classes in card-id order, the sur bonus) -> [(r, the best capture of a card of rank r)
#: for the ranks r that capture anything]: the knapsack depends on these alone, and pools of the same classes
#: recur far more often than pools of the same cards (bounded: cleared when full, about 20 MB at most)
_TAKES: dict = {}
_TAKES_MAX = 30_000

#: (unseen cards, the opponent's next hand) -> P(they hold a rank) by how many of its cards I have seen
_P_SEEN: dict = {}


def best_captures(numeric, card_value: list, sur_bonus: float) -> list:
    """For targets 0..10, the most valuable subset of the numeric pool cards ``numeric`` (in card-id order)
    summing to the target (what a card of value 11 - target takes), 0 where none does; ``sur_bonus`` is added
    when the subset is the whole pool. An exact-sum knapsack over the pool (values 1-10, so 11 sums), not an
    enumeration of subsets: a pool of many small cards has thousands of those."""
    best = [-1.0] * 11                               # -1: no subset has this sum (every worth is positive)
    best[0] = 0.0
    total = 0
    for x in numeric:
        v, w = RANK[x] + 1, card_value[x]
        total += v
        for t in range(10, v - 1, -1):
            b = best[t - v]
            if b >= 0.0:
                b += w
                if b > best[t]:
                    best[t] = b
    if total <= 10:                                  # the only subset of that sum is the whole pool: a sur
        best[total] += sur_bonus
    return [b if b > 0.0 else 0.0 for b in best]


def knowledge(state, seat: int | None = None) -> dict:
    """What every move of ``seat``'s decision shares (default: the player to act): card values, the chance
    that the opponent holds each rank (from the unseen cards and their next hand's size), whether the
    opponent's sweep would be a sur, whether this is the round's last play, whether this is the final hand;
    and for the sur of my own captures, whether a full-pool capture with a numeric card, K or Q would count."""
    seat = state.current_player if seat is None else seat
    select = state.phase == PHASE_SELECT
    opp = 1 - seat
    hand = state.hands[seat]
    # how many cards of each rank I have seen: the round's public cards (the state keeps their count) and my hand;
    # each card adds one to its rank's byte of an int (a sum in C, no loop), whose bytes are then the counts
    # (while no count can pass 255)
    seen, ranks = state.public_ranks()
    seen += len(hand)
    ranks += sum(map(RANK_UNIT.__getitem__, hand))
    if seen < 256:
        ranks = ranks.to_bytes(13, "little")
    else:
        pool, captured = state.pool, state.captured
        seen_cards = hand + pool + captured[0] + captured[1] + ([state.sel_card] if select else [])
        ranks = [bytes(seen_cards).translate(RANK_OF).count(r) for r in _RANKS]
    unseen = NUM_CARDS - seen
    decided = state.clubs[0] >= 7 or state.clubs[1] >= 7
    my_hand_after = len(state.hands[seat]) - (0 if select else 1)
    opp_hand = len(state.hands[opp])
    hand_number = state.hand_number
    round_over = False
    if opp_hand == 0 and my_hand_after == 0:             # the next play comes from a new hand
        if state.stock:
            opp_hand = HAND
            hand_number += 1
        else:
            round_over = True
    s = state.settings
    sv = s.sur_value
    opp_sur = 0.0 if (state.sur_capped[opp] or (hand_number == HANDS_PER_ROUND and not s.sur_on_final_deal)) else sv
    # P(the opponent holds at least one card of each rank), by how many of the rank's cards I have seen
    p_seen = _P_SEEN.get((unseen, opp_hand))
    if p_seen is None:
        p_seen = _P_SEEN[(unseen, opp_hand)] = [1.0 - p_none(unseen, 4 - k, opp_hand) if k < 4 else 0.0
                                                 for k in range(5)]
    p_rank = list(map(p_seen.__getitem__, ranks))
    final_hand = state.hand_number == HANDS_PER_ROUND
    # a full-pool capture scores a sur or cancels one (PA-6, PA-7, PA-8: the engine's _sur_kind)
    my_sur = not state.sur_capped[seat] and not (final_hand and not s.sur_on_final_deal)
    card_value = CARD_VALUE[0.0 if decided else CLUB_WEIGHT]
    return {"seat": seat, "card_value": card_value, "classes": _CLASSES[id(card_value)][1], "p_rank": p_rank,
            "opp_sur": opp_sur, "round_over": round_over, "final_hand": final_hand, "my_sur": my_sur}


def value(known: dict, cards) -> float:
    """What ``cards`` are worth to take."""
    card_value = known["card_value"]
    return sum([card_value[c] for c in cards])


def threat(known: dict, pool: list) -> float:
    """Expected value of the opponent's best capture on ``pool`` next turn: for each rank they may hold, their
    best capture with it (a sur included), the expected best of these. ``known`` is :func:`knowledge`'s."""
    if not pool:
        return 0.0
    p_rank = known["p_rank"]
    card_value = known["card_value"]
    opp_sur = known["opp_sur"]
    cards = bytes(pool)
    numeric = cards.translate(None, _NOT_NUMERIC)
    if numeric:
        numeric = bytes(sorted(numeric))                # card-id order
        bonus = opp_sur if len(numeric) == len(pool) else 0.0
        key = (numeric.translate(known["classes"]), bonus)
        takes = _TAKES.get(key)
        if takes is None:
            if len(_TAKES) >= _TAKES_MAX:
                _TAKES.clear()
            takes = _TAKES[key] = _takes(numeric, card_value, bonus)
        # their card of rank r (value r + 1, the chance p_rank[r]) takes its best
        cands = [(b, p_rank[r]) for r, b in takes if p_rank[r]]
    else:
        cands = []
    sweep = cards.translate(None, QUEENS_KINGS)        # what a jack would take: numeric cards and jacks
    if sweep and p_rank[JACK]:
        cands.append((sum(map(card_value.__getitem__, sweep)), p_rank[JACK]))
    if len(sweep) < len(pool):
        for r in _QUEEN_KING:                           # Q, K: pair one
            p = p_rank[r]
            if p:
                same = cards.translate(None, NOT_RANK[r])
                if same:
                    cands.append((max(map(card_value.__getitem__, same)) + (opp_sur if len(pool) == 1 else 0.0), p))
    return expected_best(cands)


def _takes(numeric, card_value: list, sur_bonus: float) -> tuple:
    """(r, the best capture of a card of rank r) for every rank r < 10 with a capture on ``numeric``."""
    best = best_captures(numeric, card_value, sur_bonus)
    return tuple([(r, best[10 - r]) for r in range(10) if best[10 - r]])


def _capture_row(state, known: dict, card: int, option: tuple, jack: bool) -> list:
    """The feature row of capturing ``option`` with ``card`` (in points, unscaled)."""
    card_value = known["card_value"]
    pool = state.pool
    row = [0.0] * MOVE_FEATURES
    row[F_TAKEN] = sum(map(card_value.__getitem__, option)) + card_value[card]   # added in that order
    row[F_POINTS] = float(sum(map(CARD_POINTS.__getitem__, option)) + CARD_POINTS[card])
    if jack:
        row[F_JACK_FINAL if known["final_hand"] else F_JACK] = 1.0
        row[F_JACK_SWEEP] = 1.0
    elif len(option) == len(pool) and known["my_sur"]:
        row[F_SUR] = 1.0
    row[F_CAPTURE] = 1.0
    if len(option) == len(pool):
        rest = []
    elif len(option) == 1:
        taken = option[0]
        rest = [x for x in pool if x != taken]
    else:
        rest = [x for x in pool if x not in option]
    if known["round_over"]:
        row[F_LEFTOVER] = sum(map(card_value.__getitem__, rest))   # the leftover comes to me, the last capturer
    else:
        row[F_THREAT] = threat(known, rest)
    return row


def _best_capture_row(state, known: dict, card: int, options, sur_value: float) -> list:
    """The row of ``card``'s most valuable capture among ``options`` (the first of equals), by :func:`net_value`."""
    jack = RANK[card] == JACK
    if len(options) == 1:                               # (most captures: nothing to compare)
        return _capture_row(state, known, card, options[0], jack)
    best_row, best = None, None
    for option in options:
        row = _capture_row(state, known, card, option, jack)
        net = net_value(row, sur_value)
        if best_row is None or net > best:
            best_row, best = row, net
    return best_row


def trail_features(state, known: dict, card: int) -> list:
    """The feature row of trailing ``card`` (in points, unscaled)."""
    row = [0.0] * MOVE_FEATURES
    card_value = known["card_value"]
    row[F_TRAILED] = card_value[card]
    if RANK[card] == JACK:
        row[F_JACK_FINAL if known["final_hand"] else F_JACK] = 1.0
    rest = state.pool + [card]
    if known["round_over"]:
        lc = state.last_capturer
        left = sum(map(card_value.__getitem__, rest))
        row[F_LEFTOVER] = left if lc == known["seat"] else -left if lc is not None else 0.0
    else:
        row[F_THREAT] = threat(known, rest)
    return row


def capture_features(state, known: dict, card: int, option: tuple) -> list:
    """The feature row of capturing ``option`` with ``card`` (in points, unscaled)."""
    return _capture_row(state, known, card, option, RANK[card] == JACK)


def net_value(row: list, sur_value: float) -> float:
    """A capture's net worth with every quantity at weight one, in points: what picks the capture a row
    describes when a card or a pick leaves several (the heuristic weighs these terms at one too)."""
    return row[F_TAKEN] + row[F_SUR] * sur_value - row[F_THREAT] + row[F_LEFTOVER]


def appraise(state, known: dict | None = None) -> dict:
    """For every legal action of the player to act, its feature row (in points, unscaled): a card's trail or
    its most valuable capture (:func:`net_value`), or in SELECT the most valuable capture still reachable
    through the pick. Computed anew; :func:`move_features` is the cached one."""
    rows = {}
    if state.current_player is None:
        return rows
    known = knowledge(state) if known is None else known
    sur_value = state.settings.sur_value
    if state.phase == PHASE_SELECT:
        k, card, cand = len(state.picked), state.sel_card, state.cand
        for a in state.sel_legal:
            x = a - TAKE
            rows[a] = _best_capture_row(state, known, card, [o for o in cand if o[k] == x], sur_value)
        return rows
    for card in state.hands[state.current_player]:
        options = state.capture_options(card)
        rows[card] = (_best_capture_row(state, known, card, options, sur_value) if options
                      else trail_features(state, known, card))
    return rows


def move_features(state, known: dict | None = None) -> dict:
    """For every legal action of the player to act, its feature row (in points, unscaled): :func:`appraise`,
    computed once per state version and shared by every reader of this decision (``state.appraisal()``: the
    observation, the heuristic). The dict and its rows are shared: read them, never change them."""
    return state.appraisal() if known is None else appraise(state, known)
