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
    rows of :func:`features`, with what the cards of one decision share (the pile's top and size, the next
    player's take after any capture, which empties the pile) worked out once."""
    if state.current_player is None:
        return {}
    known = knowledge(state) if known is None else known
    pile = state.pile
    value = known["value"]
    last_play = known["last_play"]
    rows = {}
    if not pile:                                         # every card but a counting jack trails
        for card in state.hands[state.current_player]:
            rows[card] = features(state, known, card)
        return rows
    top_rank = pile[-1] % 13
    size = len(pile)
    pile_value = known["pile_value"]
    after_capture = None                                 # the next player's take from the emptied pile
    for card in state.hands[state.current_player]:
        rank = card % 13
        row = [0.0] * MOVE_FEATURES
        if rank == JACK or rank == top_rank:             # it takes the pile
            if rank == JACK:
                row[F_JACK] = 1.0
            row[F_CAPTURE] = 1.0
            if size == 1 and not last_play:
                row[F_PISTI] = float(state._pisti_value(card, pile[0]))
            row[F_TAKEN] = pile_value + value[card]
            row[F_CARDS] = size + 1.0
            if after_capture is None:
                after_capture = threat(state, known, None, 0, 0.0)
            row[F_THREAT] = after_capture
        else:                                            # it stays on top
            row[F_TRAILED] = value[card]
            worth = pile_value + value[card]
            if last_play:                                # the pile goes to the last capturer (PI-10)
                row[F_LEFTOVER] = worth if state.last_capturer == state.game.sides[known["seat"]] else -worth
            else:
                row[F_THREAT] = threat(state, known, card, size + 1, worth)
        rows[card] = row
    return rows


def move_features(state, known: dict | None = None) -> dict:
    """For every legal action of the player to act, its feature row (in points, unscaled): :func:`appraise`,
    computed once per state version and shared by every reader of the decision (``state.appraisal()``). The dict
    and its rows are shared: read them, never change them."""
    return state.appraisal() if known is None else appraise(state, known)
