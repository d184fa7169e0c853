"""Pis Yedili ("Dirty Seven"): the rules engine (docs/rules.md §3, from the source rule text described there).

A shedding game for 2 to 4 players: follow the top card's suit or rank, get rid of every card; the cards left in
the other hands are penalty points. 2 players use one pack, 3 or 4 players two packs (104 cards, so identical
twins exist). Points are PENALTIES: the lowest total wins (``Game.points_sign = -1``).

Deal (§3a; deck index 0 is the top card, C-3)
    7 cards each, one at a time: card k (k < 7N) goes to seat ``next(dealer) + k mod N``; the rest is the stock,
    its top card first (38, 83 or 76 cards). No card is turned up: the discard pile starts empty. Each deal
    starts with the direction of play d = +1; the dealer moves to ``next(dealer)`` after every deal (C-2).

Phases (§3c): FIRST_ROUND, NORMAL, FACING_SEVEN, POST_DRAW, FOLLOW_UP are decisions; DEAL_END is forced.
    FIRST_ROUND   the first N turns, from ``next(dealer)`` (PY-9). Forced: while the player holds no club of
                  rank 2-6, 8, 9, Q or K, they draw 1. Then they must play one such club (never draw while
                  holding one). No effects, no twin. After N plays the next player is in NORMAL.
    NORMAL        PLAY a legal card | DRAW 1 (then POST_DRAW; at most one voluntary draw a turn, PY-8)
    FACING_SEVEN  PLAY any 7 | TAKE_PENALTY: draw all pending cards, then POST_DRAW (``after_seven_penalty=
                  "continue"``, PY-3) or the turn passes (``"lose_turn"``). ``must_answer_seven`` removes
                  TAKE_PENALTY while the player holds a 7.
    POST_DRAW     PLAY a legal card | PASS (the turn ends)
    FOLLOW_UP     after an A or a twin (PY-5): PLAY a legal card; DRAW only when none is legal (then POST_DRAW)
    Legal card: any J; on a J a card of the named suit; otherwise a card of the top card's suit or rank; an A
    never as the player's only card (PY-7).
    Resolving PLAY(c): c goes on the discard pile; an empty hand ends the deal at once (PY-7). Otherwise
        7  pending += 3, ``next(p)`` is in FACING_SEVEN;          J  the named suit is active, ``next(p)`` plays;
        10 ``ten_rule="bounce"``: ``prev(p)`` plays, d unchanged (PY-1, PY-2); ``"reverse"``: d = -d, then next;
        A  every other player draws 1, in turn order from ``next(p)`` (forced), then p is in FOLLOW_UP;
        an ordinary card (2-6, 8, 9, Q, K) on its twin (PY-6; ``twin_rule``) -> p is in FOLLOW_UP;
        else ``next(p)`` plays. ``next``/``prev`` follow the current direction d.
    Stock exhaustion (PY-10): ``stock_end="when_empty"`` (default): the moment the stock becomes empty, whatever
        the draw (voluntary, penalty, ace, first round, follow-up), the draw stops, possibly part-way, and the deal
        ends; so the stock is never empty while the deal runs. ``"on_failed_draw"``: the stock may run empty;
        the deal ends when a card must be drawn from the empty stock (the draw in progress stops there). DRAW
        stays offered on an empty stock, so every decision state keeps a legal action; choosing it ends the deal.

Scoring (§3d). Card values (PY-13): 2-10 face value, Q K 10, A 11, J 25.
    Someone went out on card c: m = ``jack_out_multiplier`` for a J, ``seven_out_multiplier`` for a 7, else 1.
    Every other player scores m x hand + Muamele (PY-11): in turn order from ``next(winner)``, a player with
    k sevens draws 3k cards blind (chance) from the stock, then, once it is empty, from the rest of the discard
    pile (all but its top card) shuffled with the chance stream; every 7 drawn adds 3 draws; when both sources
    are used up the remaining draws lapse. Muamele points are not multiplied unless ``muamele_multiplied``.
    Drawn Muamele cards are kept apart (``muamele_cards``), not added to the hand.
    Stock exhausted: every player scores their hand, no multiplier, no Muamele (with ``muamele_on_exhaustion``
    every player does Muamele too, in turn order from the player to move).
    Totals add up; the match ends after a deal in which someone reaches ``game_end_penalty``; the lowest total
    wins, ties share (PY-12). ``max_deals`` truncates (the lowest total wins).

Decisions beyond docs/rules.md (ours):
    * The twin rule compares with the card that was on top before the play; a play just after round 1 onto a
      first-round card can be a twin (the rule only never fires on round-1 plays themselves).
    * ``twin_rule="same_rank"``: an ordinary card on a card of the same rank, any suit (works with one pack).
    * A FOLLOW_UP draw is compulsory (no legal card), so it is allowed even after this turn's voluntary draw.
    * Muamele's "turn order" follows the current direction d; with ``muamele_on_exhaustion`` it starts with the
      player to move when the stock ran out.
    * ``stock_end="on_failed_draw"``: a draw that finds the stock empty ends the deal (first-round, ace and
      penalty draws included); cards already drawn by that draw stay in the hand and are scored.
    * A J is written "JD names spades"; the bare forms name the suit after the card (see Actions). A plain
      "JD" is ambiguous (four actions) and is not accepted.
    * Match totals in the observation are divided by ``game_end_penalty`` (docs/rules.md writes /101, the default)
      and clipped at 10; at match end they may exceed 1.
    * ``muamele_multiplied`` or ``muamele_on_exhaustion`` set with ``muamele=False`` is a ValueError.

Hidden information (``determinize``): what the other seats can infer from public play, and every re-dealt world
    keeps. Three draws are only allowed without a card of some kind, so they show a hand that held none:
      * round 1 (PY-9): each forced draw shows no club of rank 2-6, 8, 9, Q, K (so a player who had to draw
        and then played the club that came holds no other one);
      * FOLLOW_UP (PY-5): a draw shows no legal card: no J, nothing of the top card's suit or rank (a lone
        ace excepted, PY-7);
      * with ``must_answer_seven`` (PY-3), taking the penalty shows no 7.
    Cards drawn later may be anything, so each inference is kept as a limit ``(mask, cap)`` in ``limits``
    (at most cap of the player's cards in mask, see ``_limit``: exact, not an approximation). Under
    ``skip_single_choice`` the engine plays a single legal action itself, but the others are told so only
    where they could know it (:meth:`State.forced_is_public`), and only that is kept: an engine-played draw,
    pass, penalty or round-1 club reads to them as a chosen one, and shows nothing. And the player to move
    keeps a legal action: in round 1 a club to play; under ``skip_single_choice`` two legal actions (with one
    the engine would have played it). Not kept, because
    they carry no certain information: a chosen draw in NORMAL (PY-8 allows it with a playable card), a
    chosen PASS after a draw, a chosen 7 penalty when answering is optional, which of several legal cards
    was played.

Actions: ``Discrete(71)`` (§3h)

    =======  ==================================================================  ======================
    id       action                                                              text
    =======  ==================================================================  ======================
    0-51     PLAY(card id), any card but a J (J ids 10, 23, 36, 49 never legal)  ``"7H"``
    52-67    PLAY_J: jack of suit s naming suit d = 52 + 4s + d                  ``"JD names spades"``
    68       DRAW one card (NORMAL; FOLLOW_UP without a legal card)               ``"draw"``
    69       PASS (POST_DRAW only)                                               ``"pass"``
    70       TAKE_PENALTY (FACING_SEVEN only)                                    ``"take 6"``
    =======  ==================================================================  ======================

    Bare forms accepted by ``parse_action``: ``"play 7H"``; ``"JD spades"``, ``"JD S"``, ``"JD ♠"``,
    ``"play JD names spades"``; ``"take"``, ``"take penalty"``.

Observation (§3i), relative to the observer: ``observation="appraised"`` (the default: the shipped bots read it)
has every block, length 1,319; ``observation="plain"`` stops before the appraisal, length 183 (``PLAIN_OBS_SIZE``,
v0's blocks):

    ==========================================================================  ====  =======
    block                                                                       size  offset
    ==========================================================================  ====  =======
    own hand counts / 2                                                         52    0
    top card (one-hot, plus "empty")                                            53    52
    named suit when a J is on top (4, plus "none")                              5     105
    pending penalty / 24                                                        1     110
    phase one-hot (FIRST_ROUND, NORMAL, FACING_SEVEN, POST_DRAW, FOLLOW_UP)     5     111
    follow-up reason (ace, twin)                                                2     116
    the player to move has drawn this turn                                      1     118
    discard pile counts / 2                                                     52    119
    hand sizes of next(self), ... / 30 (clipped at 1), padded to 3              3     171
    stock / 83 (clipped at 1)                                                   1     174
    match totals self, next(self), ... / game_end_penalty (clipped at 10), pad  4     175
    player count one-hot (2, 3, 4)                                              3     179
    direction of play (+1 / -1)                                                 1     182
    per action, my turn only: what the move sheds, keeps and risks (appraisal)  1136  183
    ==========================================================================  ====  =======

``to_dict()`` keys: ``game``, ``settings``, ``players``, ``dealer``, ``current_player``, ``phase``,
``direction``, ``hands`` (per seat, sorted), ``stock`` (top first), ``discard`` (bottom first), ``top``,
``named_suit``, ``pending``, ``follow_up`` (None, "ace" or "twin"), ``drawn``, ``first_round_left``,
``muamele_cards`` (per seat, drawn at the end of the latest deal; visible only at match end), ``scores``,
``deals_completed``, ``terminal``, ``truncated``, ``winners``.

Deal report (``infos``): ``deal_points`` and ``scores`` per seat; ``breakdown`` with per-seat lists
``hand_value``, ``multiplier``, ``muamele_cards``, ``muamele_points``, ``total``, ``went_out``, and
``end`` ("went_out" or "stock_exhausted") and ``last_card`` (the card that went out, or None).
"""

from __future__ import annotations

import random
import struct
from math import comb

import numpy as np

from ..core.cards import ACE, JACK, NUM_CARDS, SEVEN, SUIT_NAMES, SUITS, TEN, card_str, cards_str, \
    check_standard_deck
from ..core.docs import ActionRange, ObsBlock, fixed_offsets
from ..core.engine import Game, Move, State
from ..core.rng import seeded, shuffle
from ..core.settings import Choice, Flag, Int, SettingsSpec, common_settings, observation_setting

from . import appraisal
from .tables import (HAND_SIZE, PLAY_J, DRAW, PASS, TAKE_PENALTY, NUM_ACTIONS, MOVE_FEATURES, OBS_SIZE,
                     PLAIN_OBS_SIZE, RANK,
                     ORDINARY, VALUE, FIRST_OK, IS_JACK, JACK_IDS, MATCH,
                     JACK_ACTIONS, COUNTS)  # noqa: F401 (names of the rules, also imported from here)

FIRST_ROUND, NORMAL, FACING_SEVEN, POST_DRAW, FOLLOW_UP, DEAL_END = range(6)
# determinize: re-deals (then exact draws) tried per hand, builds of the whole deal, exchanges per card at last
_REDEAL_TRIES, _BUILD_TRIES, _MIX_STEPS = 4, 6, 4
_LEVELS: dict = {}                 # nested masks of a hand's limits -> each card's level (_sample_hand)
PHASE_NAMES = ("FIRST_ROUND", "NORMAL", "FACING_SEVEN", "POST_DRAW", "FOLLOW_UP", "DEAL_END")
NO_FOLLOW, FOLLOW_ACE, FOLLOW_TWIN = 0, 1, 2
FOLLOW_NAMES = (None, "ace", "twin")

# card sets as bitmasks over the 52 ids (both copies of a card share its bit), for the hand limits (determinize)
FIRST_MASK = sum(1 << c for c in range(NUM_CARDS) if FIRST_OK[c])
JACK_MASK = sum(1 << c for c in JACK_IDS)
ACE_MASK = sum(1 << c for c in range(NUM_CARDS) if RANK[c] == ACE)
SEVEN_MASK = sum(1 << c for c in range(NUM_CARDS) if RANK[c] == SEVEN)
# FOLLOW_MASK[ctx]: the cards legal in FOLLOW_UP after the play ctx (any J, its suit or its rank)
FOLLOW_MASK = [JACK_MASK | sum(1 << c for c in range(NUM_CARDS) if MATCH[ctx][c]) for ctx in range(NUM_CARDS)]

SETTINGS = SettingsSpec("pis_yedili", [
    Choice("players", 4, (2, 3, 4), doc="2 to 4 players; 3-4 play with two packs (§3a)"),
    Int("game_end_penalty", 101, 50, 500, doc="the match ends after a deal in which someone reaches it (PY-12)"),
    Choice("ten_rule", "bounce", ("bounce", "reverse"), doc="PY-2"),
    Choice("after_seven_penalty", "continue", ("continue", "lose_turn"), doc="PY-3"),
    Flag("must_answer_seven", False, doc="PY-3"),
    Choice("twin_rule", "identical", ("identical", "same_rank", "off"), doc="PY-6"),
    Int("jack_out_multiplier", 2, 1, 5, doc="hand penalties are multiplied when the deal is won with a J"),
    Int("seven_out_multiplier", 3, 1, 5, doc="hand penalties are multiplied when the deal is won with a 7"),
    Flag("muamele", True, doc="PY-11"),
    Flag("muamele_multiplied", False, doc="PY-11"),
    Flag("muamele_on_exhaustion", False, doc="PY-10"),
    Choice("stock_end", "when_empty", ("when_empty", "on_failed_draw"), doc="PY-10"),
    *common_settings("max_deals", 60, 500),
    observation_setting(appraised=True),
])


class PisYediliGame(Game):
    name = "pis_yedili"
    space_settings = ("players", "observation")
    version = 1
    settings_spec = SETTINGS
    obs_low = -10.0
    obs_high = 10.0
    points_sign = -1
    cap_setting = "max_deals"
    action_feature_size = MOVE_FEATURES

    # ----- documentation page (envs/core/docs.py) ---------------------------------------------------------
    title = "Pis Yedili"
    rules_section = "§3"
    summary = ("Pis Yedili (\"Dirty Seven\") is a shedding game for 2 to 4 players: follow the top card's suit or "
               "rank and get rid of every card. A 7 makes the next player draw 3 (or answer with a 7), a J names a "
               "suit, a 10 bounces or reverses play, an A makes everyone else draw. 2 players use one pack, 3 or 4 "
               "players two packs. The cards left in the other hands are penalty points: the lowest total wins once "
               "someone reaches `game_end_penalty` (101).")
    doc_tables = [dict(players=2), dict(players=3), dict(players=4)]
    _CARD_PHASES = ("FIRST_ROUND", "NORMAL", "FACING_SEVEN", "POST_DRAW", "FOLLOW_UP")
    action_ranges = [
        ActionRange(0, PLAY_J - 1, "PLAY(card id), any card but a J (the J ids 10, 23, 36, 49 are never legal)",
                    _CARD_PHASES, text="`\"7H\"`"),
        ActionRange(PLAY_J, DRAW - 1, "PLAY_J: the jack of suit s naming suit d, id = 52 + 4·s + d (suits C D H S)",
                    ("NORMAL", "POST_DRAW", "FOLLOW_UP"), text="`\"JD names spades\"`"),
        ActionRange(DRAW, DRAW, "DRAW one card (NORMAL; FOLLOW_UP without a legal card)", ("NORMAL", "FOLLOW_UP"),
                    text="`\"draw\"`"),
        ActionRange(PASS, PASS, "PASS: end the turn after a draw", ("POST_DRAW",), text="`\"pass\"`"),
        ActionRange(TAKE_PENALTY, TAKE_PENALTY, "TAKE_PENALTY: draw every pending card after a 7", ("FACING_SEVEN",),
                    text="`\"take 6\"`"),
    ]
    action_notes = ("A legal card (§3c): any J; on a J a card of the named suit; otherwise a card of the top card's "
                    "suit or rank; never an A as the player's only card (PY-7). In FIRST_ROUND only a club of rank "
                    "2-6, 8, 9, Q or K (PY-9); facing a 7 only a 7 (PY-3). Bare forms accepted by `parse_action`: "
                    "`\"play 7H\"`; `\"JD spades\"`, `\"JD S\"`, `\"JD ♠\"`, `\"play JD names spades\"`; "
                    "`\"take\"`, `\"take penalty\"` (a plain `\"JD\"` is ambiguous and not accepted).")
    observation_blocks = [
        ObsBlock("own hand, per card id", NUM_CARDS, "copies held / 2"),
        ObsBlock("top card of the discard pile (one-hot; the last entry: empty)", NUM_CARDS + 1, "0 or 1", key="top"),
        ObsBlock("suit named by a J on top (one-hot C D H S; the last entry: none)", 5, "0 or 1", key="named_suit"),
        ObsBlock("pending penalty cards (after 7s)", 1, "cards / 24", key="pending"),
        ObsBlock("phase (one-hot FIRST_ROUND, NORMAL, FACING_SEVEN, POST_DRAW, FOLLOW_UP; zero at the deal end)",
                 5, "0 or 1", key="phase"),
        ObsBlock("follow-up reason (ace, twin)", 2, "0 or 1", key="follow"),
        ObsBlock("the player to move has drawn this turn", 1, "0 or 1", key="drawn"),
        ObsBlock("discard pile, per card id", NUM_CARDS, "copies / 2", key="discard"),
        ObsBlock("hand sizes of next(self), next(next(self)), ..., padded to 3", 3, "cards / 30, clipped at 1", key="hand_sizes"),
        ObsBlock("stock size", 1, "cards / 83, clipped at 1", key="stock"),
        ObsBlock("match totals of self, next(self), ..., padded to 4", 4, "/ `game_end_penalty`, clipped at 10", key="totals"),
        ObsBlock("player count (one-hot 2, 3, 4)", 3, "0 or 1", key="players"),
        ObsBlock("direction of play", 1, "+1 or −1", key="direction"),
        ObsBlock("per action, my turn only: what the move sheds, keeps and risks (envs/pis_yedili/appraisal.py): "
                 "a card played, value shed, J, 7, A, goes out, follow-up ready, suit kept, rank kept, the chance "
                 "the next player follows, hand value kept, that value exposed to the next player going out, the "
                 "card kept for last, the last 7 played, cards drawn, the bounce", NUM_ACTIONS * MOVE_FEATURES,
                 "fractions (appraisal.py)", key="moves", appraisal=True),
    ]
    observation_kinds_note = ("The appraised observation is the default because the shipped Pis Yedili bots read it "
                              "(their action-feature head scores every move from its row), and a bot trained before "
                              "the `observation` setting existed is held to it. The plain one has v0's blocks: "
                              "for training from the view alone, and cheaper, since no appraisal is computed for it.")
    observation_notes = "Hidden: the other hands and the stock order."
    rewards_note = ("Deal points are penalties (§3d): the cards left in a hand (2-10 face value, Q K 10, A 11, J 25), "
                    "times `jack_out_multiplier` or `seven_out_multiplier` when the deal was won with a J or a 7, "
                    "plus Muamele draws (PY-11). The match ends after a deal in which someone reaches "
                    "`game_end_penalty`; the lowest total wins, ties share (PY-12); `max_deals` truncates.")
    version_history = [(0, "first release"),
                       (1, "the observation ends with every legal move's appraisal (16 numbers per action); "
                           "v1 also offers the observation without the appraisal (v0's blocks) as "
                           "`observation=\"plain\"` (a setting; the appraised one stays the default, so the bots "
                           "and playthroughs of v1 are unchanged)")]

    def house_settings(self) -> list[str]:
        """The settings in force, in words, for the player guide (envs/core/guide.py)."""
        s = self.settings
        out = [f"{s.players} players with {'one pack' if self.packs == 1 else 'two packs'}",
               f"the match ends after a deal in which someone reaches {s.game_end_penalty} penalty points",
               "a 10 sends the turn back one player, the direction stays" if s.ten_rule == "bounce"
               else "a 10 reverses the direction of play",
               "after taking the cards of a 7 you may still play or pass" if s.after_seven_penalty == "continue"
               else "taking the cards of a 7 ends your turn",
               "holding a 7, you must answer a 7" if s.must_answer_seven else "answering a 7 is up to you",
               {"identical": "a twin is the identical card", "same_rank": "a twin is any card of the same rank",
                "off": "no twins"}[s.twin_rule],
               f"going out on a jack: ×{s.jack_out_multiplier}, on a 7: ×{s.seven_out_multiplier}"]
        if s.muamele:
            out.append("Muamele for sevens left in hand" + (", multiplied too" if s.muamele_multiplied else "")
                       + (", also when the stock runs out" if s.muamele_on_exhaustion else ""))
        else:
            out.append("no Muamele")
        out += ["the deal ends as soon as the stock is empty" if s.stock_end == "when_empty"
                else "the deal ends when a card must be drawn from an empty stock",
                f"at most {s.max_deals} deals"]
        return out

    def _configure(self) -> None:
        s = self.settings
        if not s.muamele:
            for name in ("muamele_multiplied", "muamele_on_exhaustion"):
                if s[name]:
                    raise ValueError(f"setting {name!r}: True is not allowed with muamele=False; "
                                     f"it only changes how Muamele is scored (PY-10, PY-11)")
        self.num_players = s.players
        self.packs = 1 if s.players == 2 else 2
        self.num_actions = NUM_ACTIONS
        self.observation_size = OBS_SIZE
        # plain attributes for the hot path (Settings attribute access is slower)
        self.bounce = s.ten_rule == "bounce"
        self.lose_turn = s.after_seven_penalty == "lose_turn"
        self.must_answer = s.must_answer_seven
        self.twin = {"identical": 1, "same_rank": 2, "off": 0}[s.twin_rule]
        self.on_failed_draw = s.stock_end == "on_failed_draw"
        self.target = s.game_end_penalty
        n = self.num_players
        # per seat, (observation index, seat) of the hand sizes of next(seat), next(next(seat)), ... and of the
        # match totals of seat, next(seat), ...; the player count's index
        self.hand_size_slots = [tuple((OBS_HAND_SIZES + k - 1, (seat + k) % n) for k in range(1, n))
                                for seat in range(n)]
        self.total_slots = [tuple((OBS_TOTALS + k, (seat + k) % n) for k in range(n)) for seat in range(n)]
        self.player_count_slot = OBS_PLAYERS + n - 2

    def full_deck(self) -> list[int]:
        return list(range(NUM_CARDS)) * self.packs   # two packs with 3-4 players (§3a)

    def check_deck(self, deck):
        return check_standard_deck(deck, packs=self.packs)


# observation offsets, from the blocks' sizes (docs/envs/pis_yedili.md lists the blocks)
_OFFSETS = fixed_offsets(PisYediliGame.observation_blocks)
(OBS_TOP, OBS_NAMED_SUIT, OBS_PENDING, OBS_PHASE, OBS_FOLLOW, OBS_DRAWN, OBS_DISCARD, OBS_HAND_SIZES, OBS_STOCK,
 OBS_TOTALS, OBS_PLAYERS, OBS_DIRECTION, OBS_MOVES) = (_OFFSETS[k] for k in (
    "top", "named_suit", "pending", "phase", "follow", "drawn", "discard", "hand_sizes", "stock", "totals",
    "players", "direction", "moves"))
assert OBS_MOVES == PLAIN_OBS_SIZE and OBS_SIZE == OBS_MOVES + NUM_ACTIONS * MOVE_FEATURES
# one action's appraisal row, packed into the float32 observation (struct rounds a float to float32 as NumPy
# does), at the byte offset of that action's row; the features need no scaling
_MOVE_ROW = struct.Struct(f"={MOVE_FEATURES}f")
_MOVES_AT = [4 * (OBS_MOVES + MOVE_FEATURES * a) for a in range(NUM_ACTIONS)]
_LOW, _HIGH = PisYediliGame.obs_low, PisYediliGame.obs_high
assert appraisal.FEATURE_SCALE == 1.0 and np.dtype(np.float32).itemsize == 4


class PisYediliState(State):

    # ----- the deal (§3a) ---------------------------------------------------------------------------
    def _start_deal(self, deck: list[int] | None) -> None:
        g = self.game
        n = g.num_players
        deck = self._deal_order(deck)
        first = (self.dealer + 1) % n
        self.hands = [[] for _ in range(n)]
        for k in range(HAND_SIZE * n):
            self.hands[(first + k) % n].append(deck[k])
        self.stock = deck[HAND_SIZE * n:][::-1]     # top of the stock last, so pop() draws it
        self.discard: list[int] = []
        self.ctx = -1                               # 13 * suit + rank to follow; -1: empty pile
        self.pending = 0
        self.direction = 1
        self.follow = NO_FOLLOW
        self.drawn = False
        self.first_round_left = n
        self.muamele_cards = [[] for _ in range(n)]
        self.limits: list[tuple] = [()] * n         # per seat: public hand limits (see _limit)
        self._legal = None
        if self.move_log is not None:
            text = (f"deal {self.deals_completed + 1}: player {self.dealer} deals 7 cards to each player, "
                    f"{len(self.stock)} left in the stock")
            self._log_event(text, {p: f"{text}; your cards: {' '.join(cards_str(sorted(h)))}"
                                   for p, h in enumerate(self.hands)})
        self._first_round_turn(first)

    # ----- turns ------------------------------------------------------------------------------------
    def _turn(self, p: int, phase: int) -> None:
        self.current_player = p
        self.phase = phase
        self.follow = NO_FOLLOW
        self.drawn = False

    def _first_round_turn(self, p: int) -> None:
        """PY-9: forced draws until p holds a club of rank 2-6, 8, 9, Q or K."""
        self._turn(p, FIRST_ROUND)
        hand = self.hands[p]
        while not any(FIRST_OK[c] for c in hand):
            self._limit(p, FIRST_MASK)                  # everyone sees that p holds no such club
            if self.move_log is not None:
                self._log_draw(p, 1, "round 1: no club of 2-6, 8, 9, Q or K to open with")
            if not self._draw(p, 1):
                return

    # ----- public hand limits (what every other seat can infer; used by determinize) ------------------
    def _limit(self, p: int, mask: int) -> None:
        """Record that p holds no card of ``mask`` now (a draw that is only allowed without one).

        ``limits[p]`` is a tuple of ``(mask, cap)``: at most ``cap`` of p's cards lie in ``mask``, for the
        hand that p holds at any later moment. It is exact, not an approximation: with the limits recorded at
        times t1 < t2 < ... and F_i the set of t_i, the entry of t_j has mask U_j = F_j | F_j+1 | ... and cap =
        (cards p drew since t_j) - (cards of U_j that p played since t_j), and by Hall's theorem (every card
        of the hand must have arrived by a draw after the latest limit that excludes it, and the slots form
        nested intervals) a hand is consistent with the public history iff it satisfies every entry. An entry
        whose cap reaches the hand size limits nothing and is dropped; one implied by the new entry too."""
        kept = [(m | mask, cap) for m, cap in self.limits[p] if m | mask != mask]
        kept.append((mask, 0))
        self.limits[p] = tuple(kept)

    def _only_choice(self, action: int) -> None:
        """A single legal action that the engine plays (C-4), where the others know it was one
        (:meth:`forced_is_public`): the hand holds no legal card, or none but copies of the card played (a J
        would give four actions)."""
        p, phase = self.current_player, self.phase
        if phase == FIRST_ROUND:
            mask = FIRST_MASK
        elif phase == FACING_SEVEN:
            mask = SEVEN_MASK
        else:
            mask = FOLLOW_MASK[self.ctx]
            if len(self.hands[p]) == 1:                 # PY-7: a lone ace is no legal card
                mask &= ~ACE_MASK
        if action < PLAY_J:
            mask &= ~(1 << action)
        self._limit(p, mask)

    def _draw(self, p: int, k: int) -> bool:
        """p draws k cards from the stock. False if the stock ran out and the deal ended (PY-10); the caller
        must then stop, as a new deal (or the match end) has already been set up."""
        stock, hand = self.stock, self.hands[p]
        limits = self.limits[p]
        if limits:                                      # k more cards that may be anything (a deal that
            self.limits[p] = tuple([(m, cap + k) for m, cap in limits])   # ends here resets the limits)
        if self.game.on_failed_draw:
            for _ in range(k):
                if not stock:
                    self._deal_exhausted()
                    return False
                hand.append(stock.pop())
            return True
        for _ in range(k):
            hand.append(stock.pop())
            if not stock:                               # PY-10: the deal ends as the stock becomes empty
                self._deal_exhausted()
                return False
        return True

    # ----- legal actions (§3c) ----------------------------------------------------------------------
    def legal_actions(self) -> list[int]:
        leg = self._legal
        if leg is None:
            leg = self._legal = self._compute_legal()
        return list(leg)

    def _is_legal(self, action: int) -> bool:
        leg = self._legal
        if leg is None:
            leg = self._legal = self._compute_legal()
        return action in leg

    def _legal_view(self) -> list[int]:
        leg = self._legal
        if leg is None:
            leg = self._legal = self._compute_legal()
        return leg

    def _compute_legal(self) -> list[int]:
        p = self.current_player
        if p is None:
            return []
        phase = self.phase
        hand = self.hands[p]
        if phase == FIRST_ROUND:                        # PY-9
            return sorted({c for c in hand if FIRST_OK[c]})
        if phase == FACING_SEVEN:                       # PY-3: only 7s answer a pending 7 (PY-4)
            res = sorted({c for c in hand if RANK[c] == SEVEN})
            if not (res and self.game.must_answer):
                res.append(TAKE_PENALTY)
            return res
        ok = MATCH[self.ctx]
        cards = set()
        jacks = 0
        for c in hand:
            if IS_JACK[c]:
                jacks |= 1 << (c // 13)
            elif ok[c]:
                cards.add(c)
        if len(hand) == 1 and cards and RANK[hand[0]] == ACE:   # PY-7: never out on an ace
            cards = ()
        res = sorted(cards)
        if jacks:
            res += JACK_ACTIONS[jacks]
        if phase == NORMAL:
            res.append(DRAW)
        elif phase == POST_DRAW:
            res.append(PASS)
        elif not res:                                   # FOLLOW_UP without a legal card (PY-5)
            res.append(DRAW)
        return res

    # ----- applying actions -------------------------------------------------------------------------
    def _apply(self, action: int) -> None:
        leg = self._legal
        if leg is not None and len(leg) == 1 and self._skip_single_choice and self.forced_is_public(action):
            self._only_choice(action)           # what the others may infer is what they are told (C-8)
        self._legal = None
        if action < PLAY_J:
            self._play(action, -1)
        elif action < DRAW:
            k = action - PLAY_J
            self._play(JACK_IDS[k >> 2], k & 3)
        elif action == DRAW:
            self._draw_one()
        elif action == PASS:
            p = self.current_player
            self._turn((p + self.direction) % self.num_players, NORMAL)
        else:
            self._take_penalty()

    def _play(self, card: int, named: int) -> None:
        p = self.current_player
        n = self.num_players
        hand = self.hands[p]
        hand.remove(card)
        limits = self.limits[p]
        if limits:                                      # a card of a mask must have been one of its cap
            h = len(hand)
            self.limits[p] = tuple([(m, cap - 1 if m >> card & 1 else cap) for m, cap in limits
                                    if (cap - 1 if m >> card & 1 else cap) < h])
        discard = self.discard
        prev_top = discard[-1] if discard else -1
        discard.append(card)
        if not hand:                                    # PY-7: going out ends the deal at once
            self._went_out(p, card)
            return
        rank = RANK[card]
        if self.phase == FIRST_ROUND:                   # PY-9: no effects, no twin
            self.ctx = card
            self.first_round_left -= 1
            if self.first_round_left:
                self._first_round_turn((p + 1) % n)
            else:
                self._turn((p + 1) % n, NORMAL)
            return
        d = self.direction
        if rank == SEVEN:                               # PY-3
            self.ctx = card
            self.pending += 3
            self._turn((p + d) % n, FACING_SEVEN)
        elif rank == JACK:                              # PY-4
            self.ctx = 13 * named + JACK
            self._turn((p + d) % n, NORMAL)
        elif rank == TEN:
            self.ctx = card
            if self.game.bounce:                        # PY-1, PY-2: one step to prev(p), d unchanged
                self._turn((p - d) % n, NORMAL)
            else:
                self.direction = d = -d
                self._turn((p + d) % n, NORMAL)
        elif rank == ACE:                               # every other player draws 1, then FOLLOW_UP (PY-5)
            self.ctx = card
            for k in range(1, n):
                if self.move_log is not None:
                    self._log_draw((p + k * d) % n, 1, f"player {p} played an ace")
                if not self._draw((p + k * d) % n, 1):
                    return
            self.phase = FOLLOW_UP
            self.follow = FOLLOW_ACE
        else:
            self.ctx = card
            twin = self.game.twin
            if twin and ORDINARY[rank] and prev_top >= 0 and (
                    prev_top == card if twin == 1 else RANK[prev_top] == rank):   # PY-6
                self.phase = FOLLOW_UP
                self.follow = FOLLOW_TWIN
            else:
                self._turn((p + d) % n, NORMAL)

    def _draw_one(self) -> None:
        """DRAW in NORMAL (voluntary, PY-8) or in FOLLOW_UP (no legal card, PY-5); then POST_DRAW."""
        p = self.current_player
        if self.phase == FOLLOW_UP:                     # PY-5: only allowed without a legal card (PY-7: a
            mask = FOLLOW_MASK[self.ctx]                # lone ace is no legal card)
            self._limit(p, mask & ~ACE_MASK if len(self.hands[p]) == 1 else mask)
        if not self._draw(p, 1):
            return
        self.phase = POST_DRAW
        self.follow = NO_FOLLOW
        self.drawn = True

    def _take_penalty(self) -> None:
        """PY-3: draw every pending card; the penalty draw is this turn's draw."""
        k, self.pending = self.pending, 0
        p = self.current_player
        if self.game.must_answer:                       # PY-3: taking is only allowed without a 7
            self._limit(p, SEVEN_MASK)
        if not self._draw(p, k):
            return
        if self.game.lose_turn:
            self._turn((p + self.direction) % self.num_players, NORMAL)
        else:
            self.phase = POST_DRAW
            self.drawn = True

    # ----- deal end and scoring (§3d) ---------------------------------------------------------------
    def _muamele(self, q: int) -> list[int]:
        """PY-11: blind draws for q's sevens, from the stock, then the reshuffled discard pile (chance)."""
        todo = 3 * sum(1 for c in self.hands[q] if RANK[c] == SEVEN)
        drawn = []
        stock, discard = self.stock, self.discard
        while todo > 0:
            if not stock:
                if len(discard) <= 1:
                    break                               # both sources used up: the draws lapse
                rest = discard[:-1]
                del discard[:-1]
                shuffle(self.chance_rng, rest)
                stock.extend(rest)
            c = stock.pop()
            drawn.append(c)
            todo -= 1
            if RANK[c] == SEVEN:
                todo += 3
        self.muamele_cards[q] = drawn
        if drawn and self.move_log is not None:
            k = len(drawn)
            self._log_event(f"Muamele: player {q} draws {k} card{'s' if k > 1 else ''} blind for the sevens in "
                            f"hand, {sum(VALUE[c] for c in drawn)} more points")
        return drawn

    def _went_out(self, w: int, last: int) -> None:
        s, n = self.settings, self.num_players
        rank = RANK[last]
        m = s.jack_out_multiplier if rank == JACK else s.seven_out_multiplier if rank == SEVEN else 1
        hand_value = [sum(VALUE[c] for c in h) for h in self.hands]
        mu_points = [0] * n
        if s.muamele:
            for k in range(1, n):
                q = (w + k * self.direction) % n
                mu_points[q] = sum(VALUE[c] for c in self._muamele(q))
        mm = m if s.muamele_multiplied else 1
        totals = [0 if q == w else m * hand_value[q] + mm * mu_points[q] for q in range(n)]
        self._score(totals, hand_value, [m] * n, mu_points, w, last)

    def _deal_exhausted(self) -> None:
        """PY-10: everyone scores their hand, no multiplier (Muamele only with ``muamele_on_exhaustion``)."""
        s, n = self.settings, self.num_players
        if self.move_log is not None:
            self._log_event("the stock has run out: the deal ends, and every player scores the cards in hand")
        hand_value = [sum(VALUE[c] for c in h) for h in self.hands]
        mu_points = [0] * n
        if s.muamele and s.muamele_on_exhaustion:
            start = self.current_player
            for k in range(n):
                q = (start + k * self.direction) % n
                mu_points[q] = sum(VALUE[c] for c in self._muamele(q))
        totals = [hand_value[q] + mu_points[q] for q in range(n)]
        self._score(totals, hand_value, [1] * n, mu_points, None, None)

    def _score(self, totals, hand_value, mult, mu_points, winner, last) -> None:
        n = self.num_players
        breakdown = {
            "hand_value": [0 if q == winner else hand_value[q] for q in range(n)],
            "multiplier": mult,
            "muamele_cards": [cards_str(m) for m in self.muamele_cards],
            "muamele_points": mu_points,
            "total": list(totals),
            "went_out": [q == winner for q in range(n)],
            "end": "went_out" if winner is not None else "stock_exhausted",
            "last_card": card_str(last) if last is not None else None,
        }
        self.phase = DEAL_END
        self.pending = 0
        self._legal = None
        self._end_deal(totals, breakdown)
        if self.is_terminal:
            self.current_player = None
        else:
            self.dealer = (self.dealer + 1) % n     # C-2
            self._start_deal(None)

    def _match_winners(self) -> list[int] | None:
        """PY-12: the match ends after a deal in which someone reaches ``game_end_penalty``; the lowest
        total wins and ties share."""
        if max(self.scores) < self.settings.game_end_penalty:
            return None
        return self._best_sides(self.scores)

    # ----- views ------------------------------------------------------------------------------------
    def _observation(self, seat: int) -> np.ndarray:
        # the zeros, the discard counts' slice, then only the non-zero entries one by one: an observation is built
        # at every step, and a NumPy call costs more than a handful of Python stores
        g = self.game
        obs = np.zeros(g.observation_size, dtype=np.float32)
        hand = self.hands[seat]
        if g.packs == 1:                            # counts / 2: one copy is 0.5 ...
            for c in hand:
                obs[c] = 0.5
        else:                                       # ... and a twin (two packs) makes it 1.0
            held = set()
            for c in hand:
                obs[c] = 1.0 if c in held else 0.5
                held.add(c)
        discard = self.discard
        if discard:
            top = discard[-1]
            obs[OBS_TOP + top] = 1.0
            obs[OBS_NAMED_SUIT + (self.ctx // 13 if IS_JACK[top] else 4)] = 1.0
            obs[OBS_DISCARD:OBS_DISCARD + NUM_CARDS] = self._discard_counts()
        else:
            obs[OBS_TOP + NUM_CARDS] = 1.0             # the pile is empty
            obs[OBS_NAMED_SUIT + 4] = 1.0              # no suit named
        if self.pending:
            obs[OBS_PENDING] = self.pending / 24
        if self.phase < DEAL_END:
            obs[OBS_PHASE + self.phase] = 1.0
        if self.follow:
            obs[OBS_FOLLOW + self.follow - 1] = 1.0     # follow is 1 (ace) or 2 (twin)
        if self.drawn:
            obs[OBS_DRAWN] = 1.0
        hands = self.hands
        for i, q in g.hand_size_slots[seat]:        # next(self), next(next(self)), ...
            size = len(hands[q])
            obs[i] = size / 30 if size < 30 else 1.0
        size = len(self.stock)
        obs[OBS_STOCK] = size / 83 if size < 83 else 1.0
        scores = self.scores
        if any(scores):                             # all zero in a match's first deal (and a deal episode)
            target = g.target
            for i, q in g.total_slots[seat]:        # self, next(self), ...
                v = scores[q] / target
                obs[i] = v if v < 10.0 else 10.0
        obs[g.player_count_slot] = 1.0
        obs[OBS_DIRECTION] = self.direction
        if self.current_player == seat and g.appraised:   # what each of my legal actions sheds, keeps, risks
            self._write_moves(obs, self.appraisal())
        return obs

    @staticmethod
    def _write_moves(obs: np.ndarray, rows: dict) -> None:
        """The appraisal rows into the observation's last block, as ``State._write_action_rows`` writes them
        (float32, divided by ``FEATURE_SCALE`` = 1, clipped to the bounds), a row at a time: a decision has a
        few legal actions, and one ``struct`` store per row costs less than building a NumPy array of them.
        Only a draw's row can leave the bounds, by the cards it takes (F_VALUE, F_KEPT and F_EXPOSED, which is
        at most F_KEPT, F_DRAWN); every other number is a chance, a flag, cards / 7 or / 4 (at most 24 cards of a
        suit but its J, 8 of a rank), or a hand's value / 100 (at most 8.8: two packs are worth 880)."""
        pack = _MOVE_ROW.pack_into
        for action, row in rows.items():
            if action >= DRAW and (row[appraisal.F_VALUE] < _LOW or row[appraisal.F_KEPT] > _HIGH
                                   or row[appraisal.F_DRAWN] > _HIGH):
                row = [_HIGH if v > _HIGH else _LOW if v < _LOW else v for v in row]
            pack(obs, _MOVES_AT[action], *row)

    def _appraise(self) -> dict:
        return appraisal.appraise(self)

    def _discard_counts(self) -> np.ndarray:
        """Discard pile counts / 2, updated lazily: during a deal the pile only grows (a new deal or Muamele
        replaces or shrinks it, and a clone has its own list, which all trigger a rebuild)."""
        discard = self.discard
        cache = self.__dict__.get("_dcache")
        if cache is None or cache[0] is not discard or cache[1] > len(discard):
            cache = self._dcache = [discard, 0, np.zeros(NUM_CARDS, dtype=np.float32)]
        counts = cache[2]
        for c in discard[cache[1]:]:
            counts[c] += 0.5
        cache[1] = len(discard)
        return counts

    def _pile_counts(self) -> int:
        """The discard pile's cards counted in one integer (``tables.COUNTS``), where the appraisal's count of the
        cards a seat has not seen starts (``appraisal.unseen_counts``). Updated lazily like
        :meth:`_discard_counts`: during a deal the pile only grows (a new deal or Muamele replaces or shrinks it,
        and a clone has its own list, which all trigger a recount)."""
        discard = self.discard
        cache = self.__dict__.get("_pcache")
        if cache is None or cache[0] is not discard or cache[1] > len(discard):
            cache = self._pcache = [discard, 0, 0]
        if cache[1] < len(discard):
            cache[2] += sum(map(COUNTS.__getitem__, discard[cache[1]:]))
            cache[1] = len(discard)
        return cache[2]

    # ----- the move log ---------------------------------------------------------------------------
    def _next_cards(self, k: int) -> list[int]:
        """The next k cards a draw takes (fewer if the stock has fewer)."""
        stock = self.stock
        return [stock[-1 - i] for i in range(min(k, len(stock)))]

    def _log_draw(self, p: int, k: int, why: str) -> None:
        """A forced draw by p as a table event; p alone reads which cards."""
        cards = self._next_cards(k)
        many = f"{len(cards)} cards" if len(cards) != 1 else "a card"
        self._log_event(f"player {p} draws {many} ({why})",
                        {p: f"player {p} (you) draws {' '.join(cards_str(cards)) or 'nothing'} ({why})"})

    def forced_is_public(self, action: int) -> bool:
        """Whether the others could tell that the engine's single choice was one. Mostly not: what is legal
        depends on the hidden hand, and a draw may be chosen (PY-8), so "draw a card (only choice)" would tell
        that the drawer held no playable card (and a forced pass, 7 penalty or round-1 club likewise). Public
        only where the rules or the hand in sight settle it: a follow-up draw, only allowed without a legal card
        (PY-5); taking a 7's penalty when a 7 must be answered (PY-3); the last card of a hand, seen as played."""
        if action == DRAW and self.phase == FOLLOW_UP:
            return True
        if action == TAKE_PENALTY and self.game.must_answer:
            return True
        return action < DRAW and len(self.hands[self.current_player]) == 1

    def _logged_move(self, seat: int, action: int, forced: bool) -> Move:
        """A play says its effect (the penalty for the next player, a bounce, a follow-up, going out); a draw
        names the card to the drawer alone."""
        deal = self.deals_completed
        if action == DRAW:
            cards = self._next_cards(1)
            return Move(seat, action, "draw a card", forced, deal,
                        {seat: f"draw {card_str(cards[0])}" if cards else "draw: the stock is empty"})
        if action == TAKE_PENALTY:
            k = self.pending
            cards = self._next_cards(k)
            return Move(seat, action, f"take the {k} penalty cards", forced, deal,
                        {seat: f"take the {k} penalty cards: {' '.join(cards_str(cards))}"})
        if action == PASS:
            return Move(seat, action, "pass", forced, deal)
        text = self.describe_action(action)
        card = action if action < PLAY_J else JACK_IDS[(action - PLAY_J) >> 2]
        rank, n, d = RANK[card], self.num_players, self.direction
        if len(self.hands[seat]) == 1:
            m = (self.settings.jack_out_multiplier if rank == JACK
                 else self.settings.seven_out_multiplier if rank == SEVEN else 1)
            text += ": goes out" + (f" (the others' hands count ×{m})" if m > 1 else "")
        elif self.phase == FIRST_ROUND:
            pass
        elif rank == SEVEN:
            text += f": player {(seat + d) % n} must answer with a 7 or take {self.pending + 3} cards"
        elif rank == TEN and n > 2:
            nxt = (seat - d) % n
            text += (f": the turn bounces back to player {nxt}" if self.game.bounce
                     else f": play changes direction, player {nxt} is next")
        elif rank == ACE:
            text += ": every other player draws a card, and this player plays again"
        elif (self.game.twin and ORDINARY[rank] and self.discard
              and (self.discard[-1] == card if self.game.twin == 1 else RANK[self.discard[-1]] == rank)):
            text += ": a twin, so this player plays again"
        return Move(seat, action, text, forced, deal)

    def describe_deal(self, report: dict) -> list[str]:
        """How the deal ended, then per player: the hand's value, the multiplier, Muamele, the match total."""
        b = report["breakdown"]
        n = self.num_players
        if b["end"] == "went_out":
            w = b["went_out"].index(True)
            m = b["multiplier"][0]
            head = (f"deal {self.deals_completed} over: player {w} went out with {b['last_card']}"
                    + (f", so the other hands count ×{m}" if m > 1 else ""))
        else:
            head = f"deal {self.deals_completed} over: the stock ran out, every hand counts once"
        lines = [head]
        for p in range(n):
            if b["went_out"][p]:
                what = "went out"
            else:
                m = b["multiplier"][p]
                what = f"hand {b['hand_value'][p]}" + (f" ×{m}" if m > 1 else "")
                if b["muamele_points"][p]:
                    what += f", Muamele {b['muamele_points'][p]}"
            lines.append(f"  player {p}: {report['deal_points'][p]} penalty points ({what}); match total "
                         f"{report['scores'][p]}")
        if not self.is_terminal:
            lines.append(f"  the match ends after a deal in which someone reaches {self.settings.game_end_penalty}; "
                         "the lowest total wins")
        return lines

    def _describe_action(self, action: int) -> str:
        if 0 <= action < PLAY_J:
            return card_str(action)
        if action < DRAW:
            k = action - PLAY_J
            return f"{card_str(JACK_IDS[k >> 2])} names {SUIT_NAMES[k & 3]}"
        if action == DRAW:
            return "draw"
        if action == PASS:
            return "pass"
        if action == TAKE_PENALTY:
            return f"take {self.pending}"
        raise ValueError(f"action {action} is outside 0..{NUM_ACTIONS - 1}")

    def _action_aliases(self, action: int):
        if action < PLAY_J:
            return (f"play {card_str(action)}",)
        if action < DRAW:
            k = action - PLAY_J
            j, d = card_str(JACK_IDS[k >> 2]), k & 3
            return (f"{j} {SUIT_NAMES[d]}", f"{j} {SUITS[d]}", f"{j} {'♣♦♥♠'[d]}",
                    f"play {j} names {SUIT_NAMES[d]}", f"{j} names {SUITS[d]}")
        if action == TAKE_PENALTY:
            return ("take", "take penalty", "take_penalty", f"take {self.pending} cards")
        return ()

    def clone(self) -> "PisYediliState":
        st = object.__new__(type(self))
        d = self._copy_core()
        d["hands"] = [h[:] for h in self.hands]
        d["stock"] = self.stock[:]
        d["discard"] = self.discard[:]
        d["muamele_cards"] = [m[:] for m in self.muamele_cards]
        d["limits"] = self.limits[:]                    # tuples of tuples: shared, never mutated
        d.pop("_dcache", None)
        d.pop("_pcache", None)
        st.__dict__ = d
        return st

    def _determinize(self, seat: int, rng: random.Random) -> "PisYediliState":
        """Re-deal what ``seat`` cannot see: the other hands (sizes kept) and the stock order, among the worlds
        that the public play leaves possible: every hand keeps its public limits (``limits``, see
        :meth:`_limit`), and the player to move, if not ``seat``, keeps as many legal actions as a decision
        needs (one; two under ``skip_single_choice``, which plays any single choice itself; PY-9: a first-round
        player holds a club to play). The future chance (the next decks, Muamele's reshuffles) is drawn anew.

        One shuffle deals everything; each limited hand that it does not fit is dealt again from the cards not
        yet settled, uniformly among the hands within its limits (:meth:`_redeal`). In the rare case where that
        fails (an earlier hand took cards a later one needs) the limited hands are built card by card within
        their limits (:meth:`_build`), and as a last resort the real deal is mixed by random exchanges that keep
        every limit (:meth:`_mix`; always possible, since the real deal satisfies them). Nothing loops without
        a bound."""
        st = self.clone()
        st._legal = None
        n = self.num_players
        others = [p for p in range(n) if p != seat]
        hands = st.hands
        pool = [c for p in others for c in hands[p]] + st.stock
        sizes = [len(hands[p]) for p in others]
        mover = st.current_player
        need = 0
        if mover is not None and mover != seat:
            need = 2 if st._skip_single_choice else 1 if st.phase == FIRST_ROUND else 0
            if need:
                need = min(need, len(self.legal_actions()))
        checked = [i for i, p in enumerate(others) if st.limits[p] or (need and p == mover)]
        deal = None
        shuffle(rng, pool)
        if not checked:
            deal = pool
        else:
            spans, i = [], 0
            for k in sizes:
                spans.append((i, i + k))
                i += k
            if st._redeal(rng, pool, others, spans, checked, need):
                deal = pool
            else:
                for _ in range(_BUILD_TRIES):
                    deal = st._build(rng, pool, others, sizes, spans, checked, need)
                    if deal is not None:
                        break
                else:
                    deal = st._mix(rng, [c for p in others for c in self.hands[p]] + self.stock, others, spans,
                                   checked, need)
        i = 0
        for p, k in zip(others, sizes):
            hands[p] = deal[i:i + k]
            i += k
        st.stock = deal[i:]
        st._legal = None
        st._chance_rng = None                           # the future chance is unknown too
        st._chance_seed = rng.getrandbits(64)
        if self.settings.episode == "match":
            st.deck_rng = seeded(rng.getrandbits(64))
        st.move_log = None                              # it tells each seat its own cards: not in a re-dealt world
        return st

    def _fits(self, p: int, hand: list[int], need: int) -> bool:
        """Whether ``hand`` keeps p's public limits, and gives p at least ``need`` legal actions if p is to move
        (on a clone: it sets the hand)."""
        for m, cap in self.limits[p]:
            if cap < len(hand):
                k = 0
                for c in hand:
                    if m >> c & 1:
                        k += 1
                if k > cap:
                    return False
        if need and p == self.current_player:
            self.hands[p] = hand
            self._legal = None
            return len(self._compute_legal()) >= need
        return True

    def _redeal(self, rng, pool, others, spans, checked, need) -> bool:
        """Each checked hand of the shuffled ``pool`` in turn is dealt again, if it does not fit, from the cards
        not yet settled (its own, the unchecked hands', the stock's), uniformly among the hands within its
        limits (:meth:`_sample_hand`; plain re-deals for a player to move without limits), repeated while the
        player to move lacks the legal actions it needs. The other hands and the stock stay a uniformly random
        deal of the rest. (Exactly uniform over the possible worlds with one limited hand; with several, each
        is uniform given those settled before it.) False if some hand could not be dealt."""
        settled = set()
        limits = self.limits
        for i in checked:
            a, b = spans[i]
            p = others[i]
            if self._fits(p, pool[a:b], need):
                settled.add(i)
                continue
            free = list(range(a, b))
            for j, (x, y) in enumerate(spans):
                if j != i and j not in settled:
                    free.extend(range(x, y))
            free.extend(range(spans[-1][1], len(pool)))
            lim = limits[p]
            top = len(free)
            randbelow = rng.randrange
            for _ in range(_REDEAL_TRIES):
                if lim:
                    if not self._sample_hand(rng, pool, free, b - a, lim):
                        return False
                else:
                    for k in range(b - a):          # a uniformly random hand from the free cards
                        x, y = free[k], free[randbelow(k, top)]
                        pool[x], pool[y] = pool[y], pool[x]
                if self._fits(p, pool[a:b], need):
                    break
            else:
                return False
            settled.add(i)
        return True

    @staticmethod
    def _sample_hand(rng, pool, free, h, limits) -> bool:
        """Deal the positions ``free[:h]`` of ``pool`` again, uniformly among the hands within ``limits`` that
        the cards at the positions ``free`` allow, by exchanges with the other positions of ``free`` (so the
        rest stays in a random order). The masks of ``limits`` are nested (each older one contains the newer
        ones), so a card's level is the number of masks holding it and a hand fits iff it has at most cap_j
        cards of level j or more for each entry j: the counts per level are drawn in proportion to their
        number of hands (a product of binomials), then the cards of each level. False if no hand fits."""
        masks = tuple([m for m, _ in limits])
        caps = [min(cap, h) for _, cap in limits]
        depth = len(masks)
        level = _LEVELS.get(masks)
        if level is None:
            if len(_LEVELS) >= 4096:
                _LEVELS.clear()
            level = _LEVELS[masks] = [sum(m >> c & 1 for m in masks) for c in range(NUM_CARDS)]
        groups = [[] for _ in range(depth + 1)]
        for x in free:
            groups[level[pool[x]]].append(x)
        sizes = [len(g) for g in groups]
        # ways[j][s]: hands of s cards from the levels j and deeper (j >= 1) keeping the caps of those levels
        ways = [None] * (depth + 2)
        ways[depth + 1] = [1]
        deeper = 0                                  # cards of the levels j and deeper
        for j in range(depth, 0, -1):
            below = ways[j + 1]
            deeper += sizes[j]
            top = min(caps[j - 1], deeper)
            row = [comb(sizes[j], k) for k in range(top + 1)]
            ways[j] = [sum(row[k] * below[s - k] for k in range(max(0, s - len(below) + 1), s + 1))
                       for s in range(top + 1)]

        def pick(weights):
            r = rng.randrange(sum(weights))
            for k, w in enumerate(weights):
                if r < w:
                    return k
                r -= w

        first = ways[1]
        weights = [comb(sizes[0], h - s) * first[s] for s in range(len(first))]
        if not any(weights):
            return False
        s = pick(weights)
        chosen = rng.sample(groups[0], h - s)
        for j in range(1, depth + 1):
            below = ways[j + 1]
            k = pick([comb(sizes[j], k) * below[s - k] if s - k < len(below) else 0 for k in range(s + 1)])
            chosen += rng.sample(groups[j], k)
            s -= k
        inside = set(free[:h])
        picked = set(chosen)
        incoming = [x for x in chosen if x not in inside]
        leaving = [x for x in free[:h] if x not in picked]
        for x, y in zip(incoming, leaving):
            pool[x], pool[y] = pool[y], pool[x]
        return True

    def _build(self, rng, pool, others, sizes, spans, checked, need):
        """A deal built hand by hand: each checked hand takes, in a random order, the cards that keep it within
        its limits (the player to move first takes cards until it has ``need`` legal actions). None if some
        hand could not be filled."""
        rest = pool[:]
        shuffle(rng, rest)
        got = {}
        order = sorted(checked, key=lambda i: others[i] != self.current_player)
        for i in order:
            p, h = others[i], sizes[i]
            lim = self.limits[p]
            masks = [m for m, _ in lim]
            caps = [cap for _, cap in lim]
            chosen, skipped = [], []
            witness = need and p == self.current_player
            for c in rest:
                if len(chosen) == h or not all(caps[j] or not m >> c & 1 for j, m in enumerate(masks)):
                    skipped.append(c)
                    continue
                if witness:                             # only cards that add legal plays, until enough
                    self.hands[p] = chosen
                    self._legal = None
                    base = sum(1 for a in self._compute_legal() if a < DRAW)
                    self.hands[p] = chosen + [c]
                    self._legal = None
                    legal = self._compute_legal()
                    if sum(1 for a in legal if a < DRAW) <= base:
                        skipped.append(c)
                        continue
                    if len(legal) >= need:
                        witness = False
                chosen.append(c)
                for j, m in enumerate(masks):
                    if m >> c & 1:
                        caps[j] -= 1
            if witness or len(chosen) < h:
                # fill from the skipped cards (witnesses taken, or not enough cards after them)
                rest2 = []
                for c in skipped:
                    if len(chosen) < h and all(caps[j] or not m >> c & 1 for j, m in enumerate(masks)):
                        chosen.append(c)
                        for j, m in enumerate(masks):
                            if m >> c & 1:
                                caps[j] -= 1
                    else:
                        rest2.append(c)
                skipped = rest2
            if len(chosen) < h or not self._fits(p, chosen, need):
                return None
            got[i] = chosen
            rest = skipped
        deal = []
        k = 0
        for i in range(len(others)):
            if i in got:
                deal += got[i]
            else:
                deal += rest[k:k + sizes[i]]
                k += sizes[i]
        return deal + rest[k:]

    def _mix(self, rng, deal, others, spans, checked, need):
        """The last resort: the real deal, mixed by random exchanges of two cards that keep every checked hand
        possible (a Metropolis walk on the possible worlds, started from one of them)."""
        owner = [len(others)] * len(deal)
        for i, (a, b) in enumerate(spans):
            for k in range(a, b):
                owner[k] = i
        check = set(checked)
        size = len(deal)
        for _ in range(_MIX_STEPS * size):
            x, y = rng.randrange(size), rng.randrange(size)
            ox, oy = owner[x], owner[y]
            if ox == oy or deal[x] == deal[y]:
                continue
            deal[x], deal[y] = deal[y], deal[x]
            for o in (ox, oy):
                if o in check and not self._fits(others[o], deal[spans[o][0]:spans[o][1]], need):
                    deal[x], deal[y] = deal[y], deal[x]
                    break
        return deal

    def _state_dict(self) -> dict:
        top = self.discard[-1] if self.discard else None
        return {
            "phase": PHASE_NAMES[self.phase],
            "direction": self.direction,
            "hands": [cards_str(sorted(h)) for h in self.hands],
            "stock": cards_str(reversed(self.stock)),
            "discard": cards_str(self.discard),
            "top": card_str(top) if top is not None else None,
            "named_suit": SUIT_NAMES[self.ctx // 13] if top is not None and IS_JACK[top] else None,
            "pending": self.pending,
            "follow_up": FOLLOW_NAMES[self.follow],
            "drawn": self.drawn,
            "first_round_left": self.first_round_left,
            "muamele_cards": [cards_str(m) for m in self.muamele_cards],
        }

    def _render(self, seat: int | None) -> str:
        g = self.game
        n = self.num_players
        over = self.is_terminal
        top = self.discard[-1] if self.discard else None
        head = (f"Pis Yedili, {n} players ({g.packs} pack{'s' if g.packs > 1 else ''})"
                f" | deal {self.deals_completed + (0 if over else 1)} | dealer: player {self.dealer}"
                f" | direction: {'+1' if self.direction > 0 else '-1'} | stock: {len(self.stock)}")
        lines = [head]
        if top is None:
            lines.append("discard: empty")
        else:
            named = f", named suit {SUIT_NAMES[self.ctx // 13]}" if IS_JACK[top] else ""
            lines.append(f"discard: {len(self.discard)} card(s), top {card_str(top)}{named}")
        if not over:
            lines.append(f"now: {self._phase_words()}")
        for p in range(n):
            me = " (you)" if p == seat else ""
            if seat is None or p == seat:
                hand = " ".join(cards_str(sorted(self.hands[p]))) or "(no cards)"
            else:
                hand = f"{len(self.hands[p])} card(s)"
            lines.append(f"player {p}{me}, penalty {self.scores[p]}: {hand}")
        if over:
            lines.append(("match stopped at the cap" if self.truncated else "match over") + "; winners: "
                         + ", ".join(f"player {w}" for w in self.winners))
        else:
            lines.append(f"to move: player {self.current_player}" + (" (you)" if self.current_player == seat else ""))
        return "\n".join(lines)

    def _phase_words(self) -> str:
        """The phase as a player reads it (what the player to move may do)."""
        phase = self.phase
        if phase == FIRST_ROUND:
            return "first round: open with a club of rank 2-6, 8, 9, Q or K"
        if phase == FACING_SEVEN:
            return f"facing a 7: answer with a 7, or take the {self.pending} penalty cards"
        if phase == POST_DRAW:
            return "after drawing: play a card, or pass"
        if phase == FOLLOW_UP:
            return f"play again after {'an ace' if self.follow == FOLLOW_ACE else 'a twin'} (draw only without a card to play)"
        if phase == NORMAL:
            return "play a card, or draw one"
        return "the deal is over"


PisYediliGame.state_class = PisYediliState
