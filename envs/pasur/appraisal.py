"""What a Pâsur move takes and leaves: the quantities a player weighs, from what the seat knows.

A Pâsur card's worth in a move depends on subset sums over the pool (which capture options it has) and on what
the opponent can take from the pool left behind. A network reading multi-hot card blocks has to rediscover that
arithmetic for every card id separately (an MLP imitating the heuristic's card choice stalled at 86%), so the
observation also carries, for every legal action, the few numbers below (:func:`move_features`); the heuristic
(:mod:`kahve.agents.policies.heuristics.pasur`) is a fixed weighting of the same numbers, and a network's
action-feature head (docs/design.md) learns its own.

Every card counts by its *value* in the round (docs/rules.md §2d): TD 3, 2C 2, each A and J 1, each club about 1
while the 7-clubs race is open (nothing once someone holds 7), and a little for any card (``COUNT_BONUS``: a
captured card thins the pool). Only what the seat knows is read: its hand, the pool, both captured piles, surs,
the card being played, and the public counts; never the opponent's hand or the stock.
"""

from __future__ import annotations

from kahve.envs.core.cards import JACK, NUM_CARDS
from kahve.envs.core.odds import expected_best, p_none

from .tables import CARD_POINTS, HANDS_PER_ROUND, IS_CLUB, MOVE_FEATURES, PHASE_SELECT, RANK, TAKE

HAND = 4
COUNT_BONUS = 0.05          # a captured card thins the pool a little, whatever it is worth
CLUB_WEIGHT = 1.0           # a club while the 7-clubs race is open

# what each card is worth to take: while the race is open, once it is decided
CARD_VALUE = {w: [CARD_POINTS[c] + w * IS_CLUB[c] + COUNT_BONUS for c in range(NUM_CARDS)] for w in (0.0, CLUB_WEIGHT)}

# ----- the per-action features (one row of MOVE_FEATURES numbers per action), in points / FEATURE_SCALE --------
FEATURE_SCALE = 5.0
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


def best_captures(numeric: tuple, card_value: list, sur_bonus: float) -> list:
    """For targets 0..10, the most valuable subset of the numeric pool cards ``numeric`` summing to the target
    (what a card of value 11 - target takes), 0 where none does; ``sur_bonus`` is added when the subset is the
    whole pool. An exact-sum knapsack over the pool (values 1-10, so 11 sums), not an enumeration of subsets:
    a pool of many small cards has thousands of those."""
    best = [-1.0] * 11                               # -1: no subset has this sum (every worth is positive)
    best[0] = 0.0
    total = 0
    for x in numeric:
        v, w = RANK[x] + 1, card_value[x]
        total += v
        for t in range(10, v - 1, -1):
            if best[t - v] >= 0.0 and best[t - v] + w > best[t]:
                best[t] = best[t - v] + w
    if total <= 10:                                  # the only subset of that sum is the whole pool: a sur
        best[total] += sur_bonus
    return [b if b > 0.0 else 0.0 for b in best]


def knowledge(state, seat: int | None = None) -> dict:
    """What every move of ``seat``'s decision shares (default: the player to act): card values, the chance
    that the opponent holds each rank (from the unseen cards and their next hand's size), whether the
    opponent's sweep would be a sur, whether this is the round's last play, whether this is the final hand."""
    seat = state.current_player if seat is None else seat
    card = state.sel_card if state.phase == PHASE_SELECT else None
    opp = 1 - seat
    seen = [False] * NUM_CARDS
    for block in (state.hands[seat], state.pool, state.captured[0], state.captured[1]):
        for c in block:
            seen[c] = True
    if card is not None:
        seen[card] = True
    unseen_by_rank = [0] * 13
    for c in range(NUM_CARDS):
        if not seen[c]:
            unseen_by_rank[RANK[c]] += 1
    unseen = sum(unseen_by_rank)
    decided = state.clubs[0] >= 7 or state.clubs[1] >= 7
    my_hand_after = len(state.hands[seat]) - (0 if state.phase == PHASE_SELECT else 1)
    opp_hand = len(state.hands[opp])
    hand_number = state.hand_number
    round_over = False
    if opp_hand == 0 and my_hand_after == 0:             # the next play comes from a new hand
        if state.stock:
            opp_hand = HAND
            hand_number += 1
        else:
            round_over = True
    sv = state.settings.sur_value
    opp_sur = 0.0 if (state.sur_capped[opp] or (hand_number == HANDS_PER_ROUND
                                                  and not state.settings.sur_on_final_deal)) else sv
    # P(the opponent holds at least one card of each rank)
    p_rank = [1.0 - p_none(unseen, k, opp_hand) if k else 0.0 for k in unseen_by_rank]
    return {"seat": seat, "card_value": CARD_VALUE[0.0 if decided else CLUB_WEIGHT], "p_rank": p_rank,
            "opp_sur": opp_sur, "round_over": round_over, "final_hand": state.hand_number == HANDS_PER_ROUND}


def value(known: dict, cards) -> float:
    """What ``cards`` are worth to take."""
    card_value = known["card_value"]
    return sum([card_value[c] for c in cards])


def threat(known: dict, pool: list) -> float:
    """Expected value of the opponent's best capture on ``pool`` next turn: for each rank they may hold, their
    best capture with it (a sur included), the expected best of these."""
    if not pool:
        return 0.0
    p_rank = known["p_rank"]
    numeric = sorted(x for x in pool if RANK[x] < JACK)
    all_numeric = len(numeric) == len(pool)
    opp_sur = known["opp_sur"]
    cands = []
    if numeric:
        best = best_captures(tuple(numeric), known["card_value"], opp_sur if all_numeric else 0.0)
        for r in range(10):                             # their card of value r + 1
            p = p_rank[r]
            if p and best[10 - r]:
                cands.append((best[10 - r], p))
    sweep = [x for x in pool if RANK[x] <= JACK]
    if sweep and p_rank[JACK]:
        cands.append((value(known, sweep), p_rank[JACK]))
    for r in (JACK + 1, JACK + 2):                      # Q, K: pair one
        p = p_rank[r]
        if p:
            same = [x for x in pool if RANK[x] == r]
            if same:
                g = max(value(known, (x,)) for x in same) + (opp_sur if len(pool) == 1 else 0.0)
                cands.append((g, p))
    return expected_best(cands)


def _jack_flags(known: dict, card: int, row: list) -> None:
    if RANK[card] == JACK:
        row[F_JACK_FINAL if known["final_hand"] else F_JACK] = 1.0


def capture_features(state, known: dict, card: int, option: tuple) -> list:
    """The feature row of capturing ``option`` with ``card`` (in points, unscaled)."""
    row = [0.0] * MOVE_FEATURES
    taken = (*option, card)
    row[F_TAKEN] = value(known, taken)
    row[F_POINTS] = float(sum([CARD_POINTS[x] for x in taken]))
    row[F_SUR] = 1.0 if state._sur_kind(known["seat"], card, option) in ("sur", "cancel") else 0.0
    row[F_CAPTURE] = 1.0
    _jack_flags(known, card, row)
    if RANK[card] == JACK:
        row[F_JACK_SWEEP] = 1.0
    left = set(option)
    rest = [x for x in state.pool if x not in left]
    if known["round_over"]:
        row[F_LEFTOVER] = value(known, rest)           # the leftover comes to me, the last capturer
    else:
        row[F_THREAT] = threat(known, rest)
    return row


def trail_features(state, known: dict, card: int) -> list:
    """The feature row of trailing ``card`` (in points, unscaled)."""
    row = [0.0] * MOVE_FEATURES
    row[F_TRAILED] = value(known, (card,))
    _jack_flags(known, card, row)
    rest = state.pool + [card]
    if known["round_over"]:
        lc = state.last_capturer
        left = value(known, rest)
        row[F_LEFTOVER] = left if lc == known["seat"] else -left if lc is not None else 0.0
    else:
        row[F_THREAT] = threat(known, rest)
    return row


def net_value(row: list, sur_value: float) -> float:
    """A capture's net worth with every quantity at weight one, in points: what picks the capture a row
    describes when a card or a pick leaves several (the heuristic weighs these terms at one too)."""
    return row[F_TAKEN] + row[F_SUR] * sur_value - row[F_THREAT] + row[F_LEFTOVER]


def move_features(state, known: dict | None = None) -> dict:
    """For every legal action of the player to act, its feature row (in points, unscaled): a card's trail or
    its most valuable capture (:func:`net_value`), or in SELECT the most valuable capture still reachable
    through the pick."""
    known = knowledge(state) if known is None else known
    sur_value = state.settings.sur_value
    rows = {}
    for a in state.legal_actions():
        if a >= TAKE:
            k, x, card = len(state.picked), a - TAKE, state.sel_card
            options = [o for o in state.cand if o[k] == x]
        else:
            card = a
            options = state.capture_options(card)
            if not options:
                rows[a] = trail_features(state, known, card)
                continue
        rows[a] = max((capture_features(state, known, card, o) for o in options),
                      key=lambda row: net_value(row, sur_value))
    return rows
