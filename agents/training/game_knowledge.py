"""What a training mechanism needs to know of a game beyond the engine protocol, declared per game in one place.

The engine protocol (``clone``, ``apply``, ``legal_actions``, ``observation``) is enough to play and to search;
some mechanisms need more: which positions an exact solver can value, which observation input marks them, where
the cards sit in the observation (for a network that reads cards as a set), and which relabellings of the cards
change nothing in the game (to multiply examples). A game that declares these gets the mechanism; any other gets a
one-line error naming what it lacks. :data:`LAST_HAND` serves the ``expert`` stage (:mod:`.expert`): a second
network for a deal's last hand, fitted to the exact solver's values; :data:`LATE` the ``distill`` stage
(:mod:`.distill`): the positions where a search labels the moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..policies.card_attention import CardLayout


@dataclass(frozen=True)
class Symmetry:
    """Relabellings of the cards that keep every legal move and every value (with their cards renamed), as the
    ``expert`` and ``distill`` stages read them to multiply their examples.
    ``draw(rng)`` (a numpy Generator): index arrays ``(obs_source, action_source)`` of one random relabelling, so
    that the relabelled observation is ``obs[:, obs_source]`` and the relabelled per-action numbers (the legal mask,
    the values) ``row[:, action_source]``: the relabelled twin's action ``a`` is the original's ``action_source[a]``;
    ``applies(obs)``: per observation row (a numpy array or torch tensor), whether its relabelled twin is a decision
    the engine poses (else the row is kept as it is)."""
    draw: Callable
    applies: Callable


@dataclass(frozen=True)
class LastHand:
    """A game's last hand, where an exact solver values every legal move (:mod:`.expert`).

    ``solver``: an :class:`~kahve.agents.policies.endgame.exact.EngineSolver` whose ``applies(state)`` says the
    state is in the last hand, and whose states :func:`~kahve.agents.policies.endgame.exact.solve_lines` solves
    outright (two sides, perfect information). ``flag``: the observation input that is 1 exactly in the last hand
    (the bot file's ``expert_input``). ``layout``: the card-attention expert's view of the observation (None: only
    the MLP expert). ``cards_in_hands(obs)``: per observation row, the cards left in the two hands; rows with
    ``early_cards`` or more are the early, hard decisions (``fit.early_weight``). ``symmetry``: the relabellings
    ``fit.augment: suits`` draws (None: none declared)."""
    solver: type
    flag: int | None
    layout: CardLayout | None
    cards_in_hands: Callable
    early_cards: int
    symmetry: Symmetry | None


# ----- Pâsur ----------------------------------------------------------------------------------------------------
def _pasur() -> LastHand:
    from kahve.envs.pasur.rules import (MOVE_FEATURES, NUM_ACTIONS, NUM_CARDS, OBS_CLUBS, OBS_FINAL, OBS_MINE,
                                        OBS_PHASE, OBS_PICKED, OBS_PLAYED, OBS_POOL, OBS_REMAINING, OBS_SIZE,
                                        OBS_THEIRS, OBS_UNSEEN, PLAY, TAKE)

    from ..policies.endgame.exact import PasurLastHand

    # a token for every card in the own hand, the pool, the unseen block (in the last hand: the opponent's hand) or
    # the capture being chosen; it scores PLAY(card) and TAKE(card); the context token reads the clubs, surs,
    # points and flags (up to the played card), the remaining sum and both captured piles
    layout = CardLayout(cards=NUM_CARDS, ranks=13, zones=(0, OBS_POOL, OBS_UNSEEN, OBS_PLAYED, OBS_PICKED),
                        rows_at=OBS_SIZE - NUM_ACTIONS * MOVE_FEATURES, row=MOVE_FEATURES, actions=(PLAY, TAKE),
                        num_actions=NUM_ACTIONS, context=((OBS_CLUBS, OBS_PLAYED), (OBS_REMAINING, OBS_REMAINING + 1),
                                                          (OBS_MINE, OBS_UNSEEN)))
    card_blocks = (0, OBS_POOL, OBS_MINE, OBS_THEIRS, OBS_UNSEEN, OBS_PLAYED, OBS_PICKED)
    moves_at = OBS_SIZE - NUM_ACTIONS * MOVE_FEATURES

    def cards_in_hands(obs):
        # the own hand, and the unseen block, which in the last hand is exactly the opponent's hand
        return obs[:, :OBS_POOL].sum(1) + obs[:, OBS_UNSEEN:OBS_UNSEEN + NUM_CARDS].sum(1)

    def draw(rng):
        perm = suit_permutation(rng)
        inverse = np.argsort(perm)
        action_source = np.concatenate([PLAY + inverse, TAKE + inverse])   # new action a' is old action_source[a']
        obs_source = np.arange(OBS_SIZE)
        for start in card_blocks:
            obs_source[start:start + NUM_CARDS] = start + inverse
        obs_source[moves_at:] = moves_at + (action_source[:, None] * MOVE_FEATURES
                                            + np.arange(MOVE_FEATURES)).ravel()
        return obs_source, action_source

    def applies(obs):
        # a capture's picks come in card order, so a relabelled SELECT decision is not one the engine poses: only
        # PLAY decisions are relabelled
        return obs[:, OBS_PHASE] == 1

    return LastHand(PasurLastHand, OBS_FINAL, layout, cards_in_hands, 6, Symmetry(draw, applies))


def suit_permutation(rng) -> np.ndarray:
    """A random relabelling of the cards that changes nothing in Pâsur: within each rank, the suits other than
    clubs trade places, the ten of diamonds excepted. Captures read only ranks and values (docs/rules.md §2b) and
    the scoring only the clubs (the 7-clubs majority), the 2♣, the 10♦ and ranks (A, J) (§2d), so every value
    and every legal move is carried over with its cards: ``perm[c]`` is the card that ``c`` becomes."""
    from kahve.envs.core.cards import CLUBS, DIAMONDS, NUM_CARDS, TEN, card_id
    perm = np.arange(NUM_CARDS)
    for rank in range(13):
        suits = [s for s in range(4) if s != CLUBS and not (rank == TEN and s == DIAMONDS)]
        perm[[card_id(rank, s) for s in suits]] = [card_id(rank, s) for s in rng.permutation(suits)]
    return perm


#: the games whose last hand the ``expert`` stage can fit, by game name (built on first use: :func:`last_hand`)
LAST_HAND: dict[str, Callable[[], LastHand]] = {"pasur": _pasur}


def last_hand(game: str) -> LastHand:
    """The game's :class:`LastHand`; a game without one is a one-line ``ValueError`` naming what it lacks."""
    if game not in LAST_HAND:
        raise ValueError(f"{game} has no exact last-hand solver, last-hand flag or card layout declared for the "
                         f"expert stage (agents/training/game_knowledge.py LAST_HAND; declared: "
                         + ", ".join(sorted(LAST_HAND)) + ")")
    return LAST_HAND[game]()


# ----- late positions: where a search is affordable (the distill stage, :mod:`.distill`) ----------------------------------------------
@dataclass(frozen=True)
class LatePositions:
    """Where a search is affordable and gains (the distill stage labels there with a search), and the relabellings of
    the cards that the fit may draw (``fit.augment: suits``)."""
    #: (state, seat, legal) -> whether the decision is late: where the search gains and is affordable
    is_late: Callable
    symmetry: Symmetry | None = None


def _pis_yedili() -> LatePositions:
    from kahve.envs.pis_yedili.rules import (DRAW, FIRST_ROUND, MOVE_FEATURES, NUM_ACTIONS, OBS_DISCARD, OBS_MOVES,
                                             OBS_NAMED_SUIT, OBS_PHASE, OBS_SIZE, OBS_TOP, PLAY_J)

    def is_late(state, seat: int, legal: list[int]) -> bool:
        """A hand at three cards or fewer, or a jack among the legal moves (mostly shedding a jack, worth 25
        (PY-13), before the opponent goes out): where rollout:256 gains over the heuristic (docs/bots.md)."""
        return any(len(h) <= 3 for h in state.hands) or any(PLAY_J <= a < DRAW for a in legal)

    def draw(rng):
        """Every suit s renamed perm[s]: the cards, the top card, the discards, the suit named, and the moves
        (a jack's action is PLAY_J + 4 * its suit + the suit named (PY-4): both suits move)."""
        perm = rng.permutation(4)
        card = [13 * perm[c // 13] + c % 13 for c in range(52)]
        action = card + [PLAY_J + 4 * perm[k // 4] + perm[k % 4] for k in range(16)] + list(range(DRAW, NUM_ACTIONS))
        obs_source = np.arange(OBS_SIZE)
        for c in range(52):
            for start in (0, OBS_TOP, OBS_DISCARD):
                obs_source[start + card[c]] = start + c
        for suit in range(4):
            obs_source[OBS_NAMED_SUIT + perm[suit]] = OBS_NAMED_SUIT + suit
        action_source = np.argsort(action)            # the twin's action action[a] is the original's a
        for a in range(NUM_ACTIONS):
            obs_source[OBS_MOVES + action[a] * MOVE_FEATURES:OBS_MOVES + (action[a] + 1) * MOVE_FEATURES] = \
                np.arange(OBS_MOVES + a * MOVE_FEATURES, OBS_MOVES + (a + 1) * MOVE_FEATURES)
        return obs_source, action_source

    def applies(obs):
        """Not in round 1, where only clubs may be played (PY-9); after it every rule is the same for every suit."""
        return obs[:, OBS_PHASE + FIRST_ROUND] == 0

    return LatePositions(is_late, Symmetry(draw, applies))


#: the games whose late positions are declared, by name (a function, so a game's rules are imported only when used)
LATE: dict[str, Callable[[], LatePositions]] = {"pis_yedili": _pis_yedili}


def late_positions(game: str) -> LatePositions:
    """The game's :class:`LatePositions`; a game without them is a one-line ``ValueError``."""
    if game not in LATE:
        raise ValueError(f"config key 'game': a distill stage needs the game's late positions (where a search is "
                         f"affordable), declared for: {', '.join(LATE)} (agents/training/game_knowledge.py LATE), "
                         f"not {game!r}")
    return LATE[game]()
