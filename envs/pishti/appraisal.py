"""What a Pişti move takes and leaves: the quantities a player weighs, from what the seat knows.

Whether a card captures, makes a pişti or hands the next player the pile depends on the top card's rank, on the
copies of each rank still unseen and on how many cards the next player holds. A network reading multi-hot card
blocks has to relearn those comparisons for every card id; so the observation also carries, for every legal
action, the few numbers below (:func:`move_features`), and the network's action-feature head (docs/design.md)
weighs them with weights every action shares. Pâsur's observation does the same (``envs/pasur/appraisal.py``).

A card counts by its *value*: its card points (§1d) and ``CARD_BONUS`` for being a card at all (the majority
bonus goes to the side with the most cards). A face-down card counts at the mean value of the cards the seat has
not seen. Only what the seat knows is read: its own hand, the face-up pile, the seen cards, the public counts
and the buried jacks (shown when buried); never another hand, the stock or a face-down card.

Speed. :func:`move_features` is the state's appraisal (``state.appraisal()``): computed once per state version,
for the player to act only, and shared by every reader of the decision; the plain observation
(``observation="plain"``) never computes it. :func:`appraise` works out what a decision's cards share once (the
pile's top and size, the next player's take from the pile any capture empties) and gives the reference's
numbers to the bit (``tests/envs/reference/pishti_appraisal.py``, the first implementation, kept as their
definition; tests/envs/test_appraisal.py compares the two over a corpus of states). NumPy does not pay here: a
decision has at most four cards, fewer numbers than a NumPy call costs.
"""

from __future__ import annotations

import functools

from kahve.envs.core.cards import JACK
from kahve.envs.core.odds import expected_best, p_none

from .tables import MOVE_FEATURES, PACKET, PLAYS_PER_DEAL

_FLIP = bytes.maketrans(b"\x00\x01", b"\x01\x00")      # a 0/1 byte string's complement
CARD_BONUS = 0.25            # a card's worth towards the majority bonus (3 for the most of 52 cards)

# ----- the per-action features (one row of MOVE_FEATURES numbers per action), in points / FEATURE_SCALE --------
FEATURE_SCALE = 10.0
(F_CAPTURE,      # 1: the card takes the pile
 F_PISTI,        # the pişti points it scores (0 on the deal's last play, PI-5)
 F_TAKEN,        # value of the cards it takes, the played card included (face-down cards at the mean unseen value)
 F_CARDS,        # how many cards it takes, the played card included
 F_JACK,         # 1: the card is a jack (a jack in hand takes any pile later)
 F_TRAILED,      # value of the card when it stays on the pile
 F_THREAT,       # expected value the next player takes from the pile left (a pişti included), next turn
 F_LEFTOVER,     # the deal's last play: the pile left, + when it goes to my side, - when to another
 ) = range(MOVE_FEATURES)


def knowledge(state, seat: int | None = None) -> dict:
    """What every move of ``seat``'s decision shares (default: the player to act): each card's value, the
    chance that the next player holds a card of each rank, and whether this is the deal's last play."""
    # (written for speed: rollouts and training build an observation, and so this, at every step)
    seat = state.current_player if seat is None else seat
    g = state.game
    value, scoring = card_values(g)
    hand = state.hands[seat]
    pile = state.pile
    # cards whose place the seat does not know, 1 per card: never seen and not in its hand ...
    placed = bytearray(state.seen)
    for c in hand:
        placed[c] = 1
    unseen = placed.translate(_FLIP)
    u = unseen.count(1)
    mean_value = sum([g.card_points[c] for c in scoring if unseen[c]]) / max(1, u)
    # ... and the buried jacks (seen when buried, PI-6) that no one has played yet
    live_jacks = 0
    for jack in state.buried_jacks:
        if jack not in hand and jack not in pile and not any(jack in cap for cap in state.captured):
            live_jacks += 1
    u += live_jacks
    nxt = (seat + 1) % g.num_players
    last_play = state.play_number + 1 == PLAYS_PER_DEAL
    # the next player's hand after my play: as now, or a new packet when my play empties the last hand
    h = len(state.hands[nxt])
    if (state.play_number + 1) % g.plays_per_round == 0:
        h = PACKET if state.stock else 0
    # P(the next player holds a card of rank r), for the ranks a reply can use: my cards' (one will top the
    # pile), the pile top's and the jack; card c is rank c % 13, so a rank's four cards are 13 apart
    p_rank = [0.0] * 13
    ranks = {c % 13 for c in hand}
    ranks.add(JACK)
    if pile:
        ranks.add(pile[-1] % 13)
    for r in ranks:
        live = unseen[r] + unseen[r + 13] + unseen[r + 26] + unseen[r + 39] + (live_jacks if r == JACK else 0)
        if live:
            p_rank[r] = 1.0 - p_none(u, live, h)
    down = state.pile_face_down
    return {"seat": seat, "value": value, "p_rank": p_rank, "last_play": last_play,
            "next_play_last": state.play_number + 2 == PLAYS_PER_DEAL,
            # what taking the pile is worth (face-down cards at the mean worth of the cards not seen)
            "pile_value": down * (mean_value + CARD_BONUS) + sum([value[c] for c in pile[down:]])}


@functools.lru_cache(maxsize=64)
def card_values(game) -> tuple[list, list]:
    """Each card's worth to take (its card points and ``CARD_BONUS``), and the cards that score points."""
    return [p + CARD_BONUS for p in game.card_points], [c for c, p in enumerate(game.card_points) if p]


def threat(state, known: dict, top: int | None, size: int, gain: float) -> float:
    """Expected value the next player takes from the pile after my move (``size`` cards, ``top`` on top, None
    when empty; worth ``gain``) on their turn: with a card of the top's rank or a jack, a pişti's points included
    when the pile is one card."""
    if known["last_play"]:
        return 0.0
    p_rank = known["p_rank"]
    if top is None:
        if not state.game.jack_on_empty_counts:
            return 0.0
        pisti = 0 if known["next_play_last"] else state._pisti_value(JACK, None)       # PI-4: a jack takes itself
        return p_rank[JACK] * (known["value"][JACK] + pisti)
    cands = []
    for r in {top % 13, JACK}:                         # the top's rank or a jack takes it
        if p_rank[r]:
            pisti = 0 if size > 1 or known["next_play_last"] else state._pisti_value(r, top)
            cands.append((gain + pisti, p_rank[r]))
    return expected_best(cands)


def features(state, known: dict, card: int) -> list:
    """The feature row of playing ``card`` (in points, unscaled)."""
    row = [0.0] * MOVE_FEATURES
    pile = state.pile
    rank = card % 13
    value = known["value"]
    if rank == JACK:
        row[F_JACK] = 1.0
    if pile and (rank == JACK or rank == pile[-1] % 13):
        row[F_CAPTURE] = 1.0
        if len(pile) == 1 and not known["last_play"]:
            row[F_PISTI] = float(state._pisti_value(card, pile[0]))
        row[F_TAKEN] = known["pile_value"] + value[card]
        row[F_CARDS] = len(pile) + 1.0
        row[F_THREAT] = threat(state, known, None, 0, 0.0)
        return row
    if not pile and rank == JACK and state.game.jack_on_empty_counts:          # PI-4: the jack takes itself
        row[F_CAPTURE] = 1.0
        if not known["last_play"]:
            row[F_PISTI] = float(state._pisti_value(card, None))
        row[F_TAKEN] = value[card]
        row[F_CARDS] = 1.0
        row[F_THREAT] = threat(state, known, None, 0, 0.0)
        return row
    row[F_TRAILED] = value[card]
    worth = known["pile_value"] + value[card]            # the pile left, with my card on top
    if known["last_play"]:                              # the pile goes to the last capturer (PI-10)
        row[F_LEFTOVER] = worth if state.last_capturer == state.game.sides[known["seat"]] else -worth
    else:
        row[F_THREAT] = threat(state, known, card, len(pile) + 1, worth)
    return row


def appraise(state, known: dict | None = None) -> dict:
    """For every legal action of the player to act, its feature row (in points, unscaled), computed anew: the
    rows of :func:`features` (with ``known``: exactly those). Without ``known``, the same numbers worked out for
    the whole decision at once: what its cards share (the pile's worth, the next player's hand, the take from the
    pile any capture empties) once, a reply's chance (:func:`knowledge`'s ``p_rank``) only for a rank some row
    reads, and :func:`threat` inline."""
    seat = state.current_player
    if seat is None:
        return {}
    hand = state.hands[seat]
    if known is not None:
        return {card: features(state, known, card) for card in hand}
    g = state.game
    value = card_values(g)[0]
    pile = state.pile
    down = state.pile_face_down
    size = len(pile)
    play = state.play_number + 1                          # the number of this play
    last_play = play == PLAYS_PER_DEAL
    # the cards whose place the seat does not know, as knowledge() counts them (never seen and not in its hand:
    # 0 in ``placed``), when a chance or a face-down card's worth needs them: on the deal's last play no reply
    # follows, and most piles have no face-down card. A rank's four cards are 13 apart: ``placed[r::13]``.
    if down or not last_play:
        placed = bytearray(state.seen)
        for c in hand:
            placed[c] = 1
        u = placed.count(0)
    # what taking the pile is worth (face-down cards at the mean worth of the cards not seen)
    if down:
        mean_value = sum([g.card_points[c] for c in card_values(g)[1] if not placed[c]]) / max(1, u)
        pile_value = down * (mean_value + CARD_BONUS) + sum(map(value.__getitem__, pile[down:]))
    else:
        pile_value = 0.0 + sum(map(value.__getitem__, pile))
    if not last_play:
        live_jacks = 0
        for jack in state.buried_jacks:
            if jack not in hand and jack not in pile and not any(jack in cap for cap in state.captured):
                live_jacks += 1
        u += live_jacks
        # the next player's hand after my play: as now, or a new packet when my play empties the last hand
        if play % g.plays_per_round == 0:
            h = PACKET if state.stock else 0
        else:
            h = len(state.hands[(seat + 1) % g.num_players])
        # P(the next player holds a card of rank r), by the number of live cards of the rank (p_rank, from the
        # table of 1 - p_none; 0.0 for none), and for the jack, which any pile left to them may meet (the jacks
        # not seen and any buried jack not played yet)
        p_some = (_P_SOME[h] if h <= PACKET else _p_some(h))[u]
        pj = p_some[placed[JACK::13].count(0) + live_jacks]
    rows = {}
    if not pile:                                         # every card trails, but a counting jack (PI-4)
        next_play_last = play + 1 == PLAYS_PER_DEAL
        for card in hand:
            rank = card % 13
            if rank == JACK and g.jack_on_empty_counts:  # it takes itself
                if last_play:
                    rows[card] = [1.0, 0.0, value[card], 1.0, 1.0, 0.0, 0.0, 0.0]
                    continue
                pisti = 0 if next_play_last else state._pisti_value(JACK, None)
                rows[card] = [1.0, float(state._pisti_value(card, None)), value[card], 1.0, 1.0, 0.0,
                              pj * (value[JACK] + pisti), 0.0]
                continue
            worth = 0.0 + value[card]                    # (pile_value + value[card], the pile being empty)
            jack = 1.0 if rank == JACK else 0.0
            if last_play:                                # the card goes to the last capturer (PI-10)
                rows[card] = [0.0, 0.0, 0.0, 0.0, jack, value[card], 0.0,
                              worth if state.last_capturer == g.sides[seat] else -worth]
                continue
            # threat(): a card of its rank or a jack takes it, a pişti but on the deal's last play
            cands = []
            for r in {rank, JACK}:
                p = pj if r == JACK else p_some[placed[r::13].count(0)]
                if p:
                    cands.append((worth + (0 if next_play_last else state._pisti_value(r, card)), p))
            rows[card] = [0.0, 0.0, 0.0, 0.0, jack, value[card], expected_best(cands), 0.0]
        return rows
    top_rank = pile[-1] % 13
    after_capture = None                                 # the next player's take from the emptied pile
    for card in hand:
        rank = card % 13
        if rank == JACK or rank == top_rank:             # it takes the pile
            if after_capture is None:                    # threat() of the empty pile
                if last_play or not g.jack_on_empty_counts:
                    after_capture = 0.0
                else:
                    pisti = 0 if play + 1 == PLAYS_PER_DEAL else state._pisti_value(JACK, None)
                    after_capture = pj * (value[JACK] + pisti)
            rows[card] = [1.0,
                          float(state._pisti_value(card, pile[0])) if size == 1 and not last_play else 0.0,
                          pile_value + value[card], size + 1.0, 1.0 if rank == JACK else 0.0, 0.0, after_capture,
                          0.0]
            continue
        worth = pile_value + value[card]                 # it stays on top: the pile left, with my card on top
        if last_play:                                    # the pile goes to the last capturer (PI-10)
            rows[card] = [0.0, 0.0, 0.0, 0.0, 0.0, value[card], 0.0,
                          worth if state.last_capturer == g.sides[seat] else -worth]
            continue
        # threat(): a card of my card's rank or a jack takes the pile left (no pişti: it holds 2 cards or
        # more); both are worth ``worth``, so expected_best() takes the likelier reply first (a missing reply,
        # chance 0.0, adds an exact 0.0)
        p = p_some[placed[rank::13].count(0)]
        first, second = (p, pj) if p >= pj else (pj, p)
        rows[card] = [0.0, 0.0, 0.0, 0.0, 0.0, value[card], worth * first + worth * second * (1.0 - first), 0.0]
    return rows


def _p_some(h: int) -> list:
    """1 - p_none(u, live, h) (0.0 for live = 0), by u (the cards whose place is unknown: up to 52 unseen and 4
    buried jacks) and live (those of them that make the reply: up to 4 and the buried jacks)."""
    return [[1.0 - p_none.__wrapped__(u, live, h) for live in range(9)] for u in range(57)]


_P_SOME = [_p_some(h) for h in range(PACKET + 1)]      # by the next player's hand, up to a packet


def move_features(state, known: dict | None = None) -> dict:
    """For every legal action of the player to act, its feature row (in points, unscaled): :func:`appraise`,
    computed once per state version and shared by every reader of the decision (``state.appraisal()``). The dict
    and its rows are shared: read them, never change them."""
    return state.appraisal() if known is None else appraise(state, known)
