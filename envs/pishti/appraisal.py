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
"""

from __future__ import annotations

import functools

from kahve.envs.core.cards import JACK, NUM_CARDS
from kahve.envs.core.odds import expected_best, p_none

from .rules import MOVE_FEATURES, PACKET, PLAYS_PER_DEAL

ALL_CARDS = range(NUM_CARDS)
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
    seat = state.current_player if seat is None else seat
    g = state.game
    points = g.card_points
    hand = state.hands[seat]
    seen = state.seen
    # cards whose place the seat does not know: never seen and not in its hand, and the buried jacks (seen when
    # buried, PI-6) that no one has played yet
    unseen = [c for c in ALL_CARDS if not seen[c] and c not in hand]
    live = [0] * 13
    for c in unseen:
        live[c % 13] += 1
    u = len(unseen)
    mean_value = sum([points[c] for c in unseen]) / max(1, u)
    for jack in state.buried_jacks:
        if jack not in hand and jack not in state.pile and not any(jack in cap for cap in state.captured):
            live[JACK] += 1
            u += 1
    nxt = (seat + 1) % g.num_players
    last_play = state.play_number + 1 == PLAYS_PER_DEAL
    # the next player's hand after my play: as now, or a new packet when my play empties the last hand
    h = len(state.hands[nxt])
    if (state.play_number + 1) % g.plays_per_round == 0:
        h = PACKET if state.stock else 0
    # P(the next player holds a card of rank r), for the ranks a reply can use: my cards' (one will top the
    # pile), the pile top's and the jack
    p_rank = [0.0] * 13
    for r in {c % 13 for c in hand} | {JACK} | ({state.pile[-1] % 13} if state.pile else set()):
        if live[r]:
            p_rank[r] = 1.0 - p_none(u, live[r], h)
    value = card_values(tuple(points))
    pile = state.pile
    down = state.pile_face_down
    return {"seat": seat, "value": value, "p_rank": p_rank, "last_play": last_play,
            "next_play_last": state.play_number + 2 == PLAYS_PER_DEAL,
            # what taking the pile is worth (face-down cards at the mean worth of the cards not seen)
            "pile_value": down * (mean_value + CARD_BONUS) + sum([value[c] for c in pile[down:]])}


@functools.lru_cache(maxsize=16)
def card_values(points: tuple) -> list:
    """Each card's worth to take: its card points and ``CARD_BONUS``."""
    return [p + CARD_BONUS for p in points]


def threat(state, known: dict, pile: list, gain: float) -> float:
    """Expected value the next player takes from ``pile`` (the pile after my move, worth ``gain``) on their
    turn: with a card of the top's rank or a jack, a pişti's points included when the pile is one card."""
    if known["last_play"]:
        return 0.0
    p_rank = known["p_rank"]
    if not pile:
        if not state.game.jack_on_empty_counts:
            return 0.0
        pisti = 0 if known["next_play_last"] else state._pisti_value(JACK, None)       # PI-4: a jack takes itself
        return p_rank[JACK] * (known["value"][JACK] + pisti)
    top = pile[-1]
    cands = []
    for r in {top % 13, JACK}:                         # the top's rank or a jack takes it
        if p_rank[r]:
            pisti = 0 if len(pile) > 1 or known["next_play_last"] else state._pisti_value(r, top)
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
        row[F_THREAT] = threat(state, known, [], 0.0)
        return row
    if not pile and rank == JACK and state.game.jack_on_empty_counts:          # PI-4: the jack takes itself
        row[F_CAPTURE] = 1.0
        if not known["last_play"]:
            row[F_PISTI] = float(state._pisti_value(card, None))
        row[F_TAKEN] = value[card]
        row[F_CARDS] = 1.0
        row[F_THREAT] = threat(state, known, [], 0.0)
        return row
    row[F_TRAILED] = value[card]
    worth = known["pile_value"] + value[card]            # the pile left, with my card on top
    if known["last_play"]:                              # the pile goes to the last capturer (PI-10)
        row[F_LEFTOVER] = worth if state.last_capturer == state.game.sides[known["seat"]] else -worth
    else:
        row[F_THREAT] = threat(state, known, pile + [card], worth)
    return row


def move_features(state, known: dict | None = None) -> dict:
    """For every legal action of the player to act, its feature row (in points, unscaled)."""
    known = knowledge(state) if known is None else known
    return {card: features(state, known, card) for card in state.legal_actions()}
