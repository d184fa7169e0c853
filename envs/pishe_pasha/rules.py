"""Pishe Pasha: the rules engine (docs/rules.md §4, from the source rule text described there).

Pishe Pasha (Pisha Pasha) is a two-player competitive patience: each player races to empty a face-down
**stock** of 26 and a face-up **discard pile**, onto four shared **suit piles** (built A up to K, one per
suit) or onto the opponent's discard pile. Ace is low, ranks A=1 .. K=13.

Deal (§4a, deck index 0 is the top card, C-3)
    cards 0-25 are the non-dealer's stock (card 0 on top), cards 26-51 the dealer's (card 26 on top). Both
    discard piles and all suit piles start empty. The non-dealer moves first; the dealer changes every deal.
    A card *fits a suit pile* if it is the ace of an empty suit pile or the next rank of that suit's top.
    A card *fits the opponent's pile* if that pile is not empty and its rank is one above or below the
    pile's top rank, any suit, with no wrap-around between K and A (PP-3; setting ``rank_wrap``).

Turn (§4b); only MAIN and PENDING are decisions, everything else is done by the engine (C-4):

    CLOSURE(p)   forced: while p's discard top fits a suit pile, it goes there (PP-2); check for a win
    MAIN(p)      TURN: with an empty stock, p's discard pile is first turned over as one block into the
                       stock, oldest card on top (PP-5). Take the stock's top card x:
                         x fits a suit pile      -> it goes there (PP-4), check for a win, CLOSURE, MAIN
                         x fits only their pile  -> PENDING(p, x)
                         otherwise               -> x goes on p's discard pile; the turn ends
                 GIVE (p's discard top fits the opponent's pile): it goes there; check; CLOSURE; MAIN
    PENDING(p,x) PLACE: x goes on the opponent's pile; check; CLOSURE; MAIN (the turn continues, PP-1)
                 KEEP:  x goes on p's discard pile; the turn ends
    turn end     the opponent's CLOSURE, then the opponent's MAIN

    Check for a win (PP-6, PP-7): the acting player has no stock, no discard pile and no pending card. It is
    checked after every card that leaves the acting player's piles, so a deal can end in the middle of a
    turn (after a suit-pile move, a GIVE, a PLACE, or inside CLOSURE).

Scoring (§4d): the deal's winner scores the cards left in the opponent's stock plus discard pile. Match
    (``match_target``): ``"one_deal"`` (PP-8), or the first player to reach 50 or 100 points. Only the winner
    of a deal scores, so a match cannot end tied at the top, except for a drawn deal (below).

Settings (§4e): ``match_target``, ``give_compulsory`` (Sam Caron's variant: when GIVE is legal it is the only
    legal MAIN action, and PENDING offers only PLACE; with ``skip_single_choice`` these become forced steps
    of the engine), ``rank_wrap``, ``max_turns`` (turns per deal), and the §0 settings ``max_deals`` (the
    core's cap on deals per match), ``episode``, ``reward``, ``first_dealer``, ``skip_single_choice``.

Decisions beyond docs/rules.md (ours)
    * A *turn* for ``max_turns`` is one player's turn, counted when it ends (a card went to the player's own
      discard pile). When a deal reaches ``max_turns`` completed turns without a winner it is a **drawn
      deal worth 0 points to both** (§4d): scored through the core's ``_end_deal([0, 0], ...)`` with
      ``breakdown["truncated"] = True``, so a 50/100 match goes on with the next deal (dealer rotated) and
      ``max_deals`` still caps it. If the match (or, with ``episode="deal"``, the episode) ends on a drawn
      deal, nobody has won: every seat "wins" equally, the outcome reward is 0, and the episode is reported
      as **truncated**, not terminated (it was cut short, not played out).
    * ``_match_winners``: one_deal: the deal's winner (both seats after a drawn deal); 50/100: the seat that
      reached the target (only one can, see above), else the match goes on.
    * The observation's "phase" block is one-hot (MAIN, PENDING) and all zero once the game is over. The
      match-score block divides by the target (52, the most one deal can score, for ``"one_deal"``) and is
      clipped at 1 (a total reaches the target only when the match is over).
    * ``max_turns`` allows 1..100000 and ``max_deals`` 1..1000 (small values are useful in tests).
    * ``give_compulsory=True`` with ``skip_single_choice=True`` leaves no decision at all: every step is forced,
      so ``new_state`` plays the whole match and returns a finished state. That is allowed for the engine
      (e.g. to simulate the variant); as an AEC environment use ``skip_single_choice=False``, where each forced
      step is offered as the single legal action (PettingZoo requires a live game after ``reset``).
    * Hidden information (``determinize``): nobody sees an unturned stock, its owner included, and every
      decision depends on face-up cards only, so no play shows anything about the unturned cards: any
      re-deal of them between the two original stocks (sizes kept) is possible.
    * ``rank_wrap`` is implemented as specified, but it never changes play: an ace always fits its (empty)
      suit pile, so a turned ace goes there (PP-4) and no ace ever lies on a discard pile; hence neither
      "A onto K" nor "K onto A" can arise. A test plays identical deals with and without it.

Actions (§4h): ``Discrete(4)``. In MAIN 0 and 1 can be legal, in PENDING 2 and 3.

    ====  =======  ==============================================  ==============================
    id    name     meaning                                         text (bare form)
    ====  =======  ==============================================  ==============================
    0     TURN     turn the top stock card (recycle first if       ``"turn"``
                   the stock is empty)
    1     GIVE     move my discard top onto the opponent's pile    ``"give 7H onto player 1's 8C"``
                                                                   (``"give"``, ``"give 7H"``,
                                                                   ``"give 7H onto 8C"``)
    2     PLACE    put the pending card on the opponent's pile     ``"place 9D onto player 1's 8C"``
                                                                   (``"place"``, ``"place 9D"``)
    3     KEEP     put the pending card on my discard pile         ``"keep 9D"`` (``"keep"``)
    ====  =======  ==============================================  ==============================

Observation (§4i), relative to the observer (hidden: the unturned cards of both original stocks; a stock made
by turning over a discard pile has a publicly known order, so its cards are located exactly):

    ===========================================================================  ======  =======
    block                                                                        size    offset
    ===========================================================================  ======  =======
    where each card is, one-hot over 7 per card (card-major, ``7*card + k``):    52×7    0
      0 unseen (an unturned original stock), 1 suit pile, 2 my discard,
      3 their discard, 4 my stock in known order, 5 their stock in known order,
      6 pending
    each card's depth from the top of its pile / 52 (top card 0; suit piles,     52      364
      discard piles, known stocks; 0 for unseen and pending cards)
    suit pile levels / 13 (C, D, H, S)                                           4       416
    my stock, my discard, their stock, their discard sizes / 52                  4       420
    my discard top, their discard top, pending card (each one-hot, 52 = none)    3×53    424
    phase (one-hot MAIN, PENDING; zero when over)                                2       583
    match scores / target (mine, theirs; target 52 for "one_deal"; clip at 1)    2       585
    ===========================================================================  ======  =======

    Length 587.

``to_dict()`` keys: ``game``, ``settings``, ``players``, ``dealer``, ``current_player``, ``phase`` ("MAIN", "PENDING" or None),
``stocks`` (per seat, top first), ``stock_known`` (per seat: is the stock's order public, PP-5), ``discards``
(per seat, bottom first), ``suit_piles`` (per suit C, D, H, S, ace first), ``pending`` (card or None),
``turn_number`` (turns completed this deal), ``scores`` (per seat), ``deals_completed``, ``terminal``,
``truncated``, ``winners``.

Deal report (``infos`` on the step that ends a deal): ``deal_points`` per seat and ``breakdown`` with
``winner`` (seat or None), ``stock`` and ``discard`` (cards left per seat), ``turns`` and ``truncated``.
"""

from __future__ import annotations

import random
import struct

import numpy as np

from ..core.cards import NUM_CARDS, SUITS, card_str, cards_str
from ..core.docs import ActionRange, ObsBlock
from ..core.engine import Game, Move, State
from ..core.rng import copy_rng, seeded, shuffle
from ..core.settings import Choice, Flag, Int, SettingsSpec, common_settings, observation_setting

# actions (§4h)
TURN, GIVE, PLACE, KEEP = 0, 1, 2, 3
NUM_ACTIONS = 4
# phases (§4b; CLOSURE is forced and never a decision point)
MAIN, PENDING = 0, 1
PHASE_NAMES = ("MAIN", "PENDING")
NO_CARD = -1
STOCK_SIZE = 26

# observation layout (§4i)
LOC_UNSEEN, LOC_SUIT, LOC_MY_DISCARD, LOC_THEIR_DISCARD, LOC_MY_STOCK, LOC_THEIR_STOCK, LOC_PENDING = range(7)
OBS_DEPTH = 7 * NUM_CARDS            # 364
OBS_LEVELS = OBS_DEPTH + NUM_CARDS   # 416
OBS_SIZES = OBS_LEVELS + 4           # 420
OBS_TOPS = OBS_SIZES + 4             # 424: my discard top, their discard top, pending (53 each)
OBS_PHASE = OBS_TOPS + 3 * 53        # 583
OBS_SCORES = OBS_PHASE + 2           # 585
OBS_SIZE = OBS_SCORES + 2            # 587

SUIT = [c // 13 for c in range(NUM_CARDS)]
RANK = [c % 13 for c in range(NUM_CARDS)]

# The observation without a Python loop over the cards (it is read at every step of an env). Every card gets a key
# byte: its pile's base key (KEY_*) + its depth from the pile's top, so that one row of a table per key gives the
# card's location one-hots (relative to the observer: one table per seat) and its depth / 52. Listing the piles
# bottom first (a card per byte) beside the keys of their positions (precomputed runs, one per pile size),
# bytes.maketrans turns the two into a table card -> key; two NumPy takes then give the card blocks.
KEY_UNSEEN, KEY_PENDING = 0, 1
KEY_SUIT = 2                                  # + depth 0..12
KEY_DISCARD = (15, 68)                        # + depth 0..52: seat 0's and seat 1's discard pile
KEY_STOCK = (121, 174)                        # + depth 0..52: seat 0's and seat 1's stock in known order (PP-5)


def _key_runs(base: int, most: int) -> list[bytes]:
    """The keys of a pile of n cards (0 <= n <= most) at key ``base``, bottom first: depths n-1 .. 0."""
    return [bytes(range(base + n - 1, base - 1, -1)) for n in range(most + 1)]


_SUIT_PILE_CARDS = [[bytes(range(13 * s, 13 * s + n)) for n in range(14)] for s in range(4)]   # [suit][level]
_SUIT_PILE_KEYS = _key_runs(KEY_SUIT, 13)
_DISCARD_KEYS = (_key_runs(KEY_DISCARD[0], NUM_CARDS), _key_runs(KEY_DISCARD[1], NUM_CARDS))
_STOCK_KEYS = (_key_runs(KEY_STOCK[0], NUM_CARDS), _key_runs(KEY_STOCK[1], NUM_CARDS))
_UNSEEN_KEYS = [bytes(n) for n in range(NUM_CARDS + 1)]     # KEY_UNSEEN is 0
_PENDING_KEY = bytes((KEY_PENDING,))


def _key_tables() -> tuple[list[np.ndarray], np.ndarray]:
    """Per seat, key -> the card's 7 location one-hots (relative to the seat); key -> its depth / 52."""
    depths = np.zeros(256, np.float32)
    locations = [np.zeros((256, 7), np.float32), np.zeros((256, 7), np.float32)]
    for seat in (0, 1):
        for base, n, loc in ((KEY_UNSEEN, 1, LOC_UNSEEN), (KEY_PENDING, 1, LOC_PENDING), (KEY_SUIT, 13, LOC_SUIT),
                             (KEY_DISCARD[seat], 53, LOC_MY_DISCARD), (KEY_DISCARD[1 - seat], 53, LOC_THEIR_DISCARD),
                             (KEY_STOCK[seat], 53, LOC_MY_STOCK), (KEY_STOCK[1 - seat], 53, LOC_THEIR_STOCK)):
            locations[seat][base:base + n, loc] = 1.0
            depths[base:base + n] = np.arange(n, dtype=np.float32) / np.float32(52)
    return locations, depths


_LOCATION_ROWS, _DEPTHS = _key_tables()
# the blocks after the depths as float32 bytes: a suit pile level / 13, a pile size / 52, the one-hots
_LEVEL = [(np.float32(n) / np.float32(13)).tobytes() for n in range(14)]
_SIZE = [(np.float32(n) / np.float32(52)).tobytes() for n in range(NUM_CARDS + 1)]
_ONE = np.float32(1.0).tobytes()
_CARD_ONE_HOT = [bytes(4 * i) + _ONE + bytes(4 * (52 - i)) for i in range(53)]   # a card, or 52: none
_PHASE_ONE_HOT = (_ONE + bytes(4), bytes(4) + _ONE)
_NO_PHASE = _NO_SCORES = bytes(8)
_SCORES = struct.Struct("<2f")                # float32, rounded as NumPy rounds a float written into float32
# dtype objects (np.frombuffer reads them faster than the types); take() is faster with intp indices than with uint8
_UINT8, _INTP, _FLOAT32 = np.dtype(np.uint8), np.dtype(np.intp), np.dtype(np.float32)


def _mask(*actions: int) -> np.ndarray:
    mask = np.zeros(NUM_ACTIONS, dtype=bool)
    mask[list(actions)] = True
    return mask


# legal_mask(): the masks of the legal-action lists there are (§4c)
_NO_MASK, _MASK_TURN, _MASK_TURN_GIVE, _MASK_GIVE = _mask(), _mask(TURN), _mask(TURN, GIVE), _mask(GIVE)
_MASK_PLACE_KEEP, _MASK_PLACE = _mask(PLACE, KEEP), _mask(PLACE)

SETTINGS = SettingsSpec("pishe_pasha", [
    Choice("match_target", "one_deal", ("one_deal", 50, 100), doc="one deal, or first to 50 / 100 points (PP-8)"),
    Flag("give_compulsory", False, doc="Sam Caron's variant: GIVE forced when legal, PLACE forced over KEEP"),
    Flag("rank_wrap", False, doc="K and A are one rank apart for fitting the opponent's pile (PP-3)"),
    Int("max_turns", 1000, 1, 100_000, doc="turns per deal; reaching it is a drawn deal worth 0 (§4d)"),
    *common_settings("max_deals", 40, 1000),
    observation_setting(appraised=False),
])


class PishePashaGame(Game):
    name = "pishe_pasha"
    space_settings = ("observation",)
    version = 0
    settings_spec = SETTINGS

    # ----- documentation page (envs/core/docs.py) ---------------------------------------------------------
    title = "Pishe Pasha"
    rules_section = "§4"
    summary = ("Pishe Pasha (Pisha Pasha) is a two-player competitive patience with one 52-card pack: each player "
               "races to empty a face-down stock of 26 and a face-up discard pile onto four shared suit piles (A up "
               "to K) or onto the opponent's discard pile (one rank up or down). The deal's winner scores the cards "
               "the opponent has left; a match is one deal or first to 50 / 100 points (`match_target`).")
    doc_tables = [dict()]
    action_ranges = [
        ActionRange(TURN, TURN, "TURN: turn the top stock card (the discard pile is turned over first when the "
                    "stock is empty)", ("MAIN",), text="`\"turn\"`"),
        ActionRange(GIVE, GIVE, "GIVE: move my discard top onto the opponent's discard pile", ("MAIN",),
                    text="`\"give 7H onto player 1's 8C\"` (`\"give\"`, `\"give 7H\"`, `\"give 7H onto 8C\"`)"),
        ActionRange(PLACE, PLACE, "PLACE: put the pending card on the opponent's discard pile", ("PENDING",),
                    text="`\"place 9D onto player 1's 8C\"` (`\"place\"`, `\"place 9D\"`)"),
        ActionRange(KEEP, KEEP, "KEEP: put the pending card on my discard pile (the turn ends)", ("PENDING",),
                    text="`\"keep 9D\"` (`\"keep\"`)"),
    ]
    action_notes = ("Only MAIN and PENDING are decisions; everything else (suit-pile moves, CLOSURE) is done by the "
                    "engine. With `give_compulsory=True` GIVE is the only MAIN action when legal and PENDING offers "
                    "only PLACE; with `skip_single_choice=True` every step is then forced, so an AEC environment of "
                    "that variant needs `skip_single_choice=False` (each forced step is offered as the single legal "
                    "action).")
    observation_blocks = [
        ObsBlock("where each card is, one-hot over 7 per card (`7·card + k`): 0 unseen (an unturned original "
                 "stock), 1 suit pile, 2 my discard, 3 their discard, 4 my stock in known order, 5 their stock in "
                 "known order, 6 pending", 7 * NUM_CARDS, "0 or 1"),
        ObsBlock("each card's depth from the top of its pile (top card 0; 0 for unseen and pending cards)",
                 NUM_CARDS, "/ 52"),
        ObsBlock("suit pile levels (C, D, H, S)", 4, "cards / 13"),
        ObsBlock("my stock, my discard, their stock, their discard sizes", 4, "cards / 52"),
        ObsBlock("my discard top (one-hot; the last entry: none)", NUM_CARDS + 1, "0 or 1"),
        ObsBlock("their discard top (one-hot; the last entry: none)", NUM_CARDS + 1, "0 or 1"),
        ObsBlock("pending card (one-hot; the last entry: none)", NUM_CARDS + 1, "0 or 1"),
        ObsBlock("phase (one-hot MAIN, PENDING; all zero when the game is over)", 2, "0 or 1"),
        ObsBlock("match scores, mine and theirs", 2, "/ target (52 for `\"one_deal\"`), clipped at 1"),
    ]
    observation_notes = ("Hidden: the unturned cards of both original stocks. A stock made by turning over a discard "
                         "pile has a publicly known order, so its cards are located exactly.")
    rewards_note = ("Deal points (§4d): the deal's winner scores the cards left in the opponent's stock and discard "
                    "pile; the loser scores 0. A deal that reaches `max_turns` is drawn, worth 0 to both; a match "
                    "(or episode) ending on a drawn deal has no winner (outcome reward 0) and is reported as "
                    "truncated.")
    version_history = [(0, "first release")]

    def house_settings(self) -> list[str]:
        """The settings in force, in words, for the player guide (envs/core/guide.py)."""
        s = self.settings
        out = ["2 players", "the match is one deal" if s.match_target == "one_deal"
               else f"the first to {s.match_target} points wins the match"]
        if s.give_compulsory:
            out.append("give and place are compulsory whenever they are possible")
        else:
            out.append("give and place are optional")
        out.append("a king and an ace are one rank apart" if s.rank_wrap else "a king and an ace are not neighbours")
        out += [f"a deal of {s.max_turns} turns without a winner is drawn, worth 0", f"at most {s.max_deals} deals"]
        return out

    def _configure(self) -> None:
        s = self.settings
        self.num_players = 2
        self.num_actions = NUM_ACTIONS
        self.observation_size = OBS_SIZE
        self.target = 52 if s.match_target == "one_deal" else s.match_target
        # adj[x][y]: card x fits on a pile whose top is card y (PP-3, rank_wrap)
        gap = (1, 12) if s.rank_wrap else (1,)
        self.adj = [[abs(RANK[x] - RANK[y]) in gap for y in range(NUM_CARDS)] for x in range(NUM_CARDS)]


class PishePashaState(State):

    # ----- the deal (§4a) ---------------------------------------------------------------------------
    def _start_deal(self, deck: list[int] | None) -> None:
        deck = self._deal_order(deck)
        first = 1 - self.dealer                     # the non-dealer moves first
        stocks = [None, None]
        stocks[first] = deck[STOCK_SIZE - 1::-1]    # top of a stock at the end, so pop() turns it
        stocks[self.dealer] = deck[:STOCK_SIZE - 1:-1]
        self.stocks = stocks
        self.stock_known = [False, False]           # a stock made from a discard pile is public (PP-5)
        self.discards = [[], []]                    # bottom first
        self.levels = [0, 0, 0, 0]                  # cards on each suit pile (its next rank)
        self.pending = NO_CARD
        self.phase = MAIN
        self.turn_number = 0
        self.current_player = first
        self._deal_winner: int | None = None
        # CLOSURE(first) has nothing to do: both discard piles are empty
        if self.move_log is not None:
            self._log_event(f"deal {self.deals_completed + 1}: player {self.dealer} deals 26 cards face down to "
                            f"each player's stock; player {first} starts")

    # ----- legal actions (§4c) ----------------------------------------------------------------------
    def _can_give(self, p: int) -> bool:
        mine, theirs = self.discards[p], self.discards[1 - p]
        return bool(mine) and bool(theirs) and self.game.adj[mine[-1]][theirs[-1]]

    def legal_actions(self) -> list[int]:
        p = self.current_player
        if p is None:
            return []
        if self.phase == PENDING:
            return [PLACE] if self.settings.give_compulsory else [PLACE, KEEP]
        if self._can_give(p):
            return [GIVE] if self.settings.give_compulsory else [TURN, GIVE]
        return [TURN]

    def legal_mask(self) -> np.ndarray:
        """legal_actions() as a mask: a copy of one of the few masks there are (read every step of an env)."""
        p = self.current_player
        if p is None:
            mask = _NO_MASK
        elif self.phase == PENDING:
            mask = _MASK_PLACE if self.settings.give_compulsory else _MASK_PLACE_KEEP
        elif self._can_give(p):
            mask = _MASK_GIVE if self.settings.give_compulsory else _MASK_TURN_GIVE
        else:
            mask = _MASK_TURN
        return mask.copy()

    def _is_legal(self, action: int) -> bool:
        p = self.current_player
        if self.phase == PENDING:
            return action == PLACE or (action == KEEP and not self.settings.give_compulsory)
        if action == GIVE:
            return self._can_give(p)
        if action == TURN:
            return not (self.settings.give_compulsory and self._can_give(p))
        return False

    # ----- play (§4b) -------------------------------------------------------------------------------
    def _apply(self, action: int) -> None:
        p = self.current_player
        if action == TURN:
            self._turn(p)
        elif action == GIVE:
            card = self.discards[p].pop()
            self.discards[1 - p].append(card)
            if not self._won(p):
                self._closure(p)                     # PP-2
        elif action == PLACE:
            card, self.pending, self.phase = self.pending, NO_CARD, MAIN
            self.discards[1 - p].append(card)
            if not self._won(p):
                self._closure(p)                     # PP-1: the turn continues
        else:  # KEEP
            card, self.pending, self.phase = self.pending, NO_CARD, MAIN
            self.discards[p].append(card)
            self._end_turn(p)

    def _auto_play(self) -> None:
        """C-4: a decision with one legal action is played by the engine. Without ``give_compulsory`` the only such
        decision is a MAIN where GIVE is not legal (TURN alone), played here without building legal-action lists
        (about three forced turns a decision); the core's general loop otherwise, and with the move log on."""
        if not self._skip_single_choice:
            return
        if self.settings.give_compulsory or self.move_log is not None:
            super()._auto_play()
            return
        while True:
            p = self.current_player
            if p is None or self.phase != MAIN or self._can_give(p):     # GIVE is legal: a decision
                return
            self._turn(p)

    def _turn(self, p: int) -> None:
        stock = self.stocks[p]
        if not stock:                                # PP-5: turn the discard pile over, oldest card on top
            stock = self.discards[p]
            stock.reverse()
            self.stocks[p] = stock
            self.discards[p] = []
            self.stock_known[p] = True
        x = stock.pop()
        levels = self.levels
        suit = SUIT[x]
        if levels[suit] == RANK[x]:                  # PP-4: a suit pile first, even if their pile fits too
            levels[suit] += 1
            if not self._won(p):
                self._closure(p)
            return
        theirs = self.discards[1 - p]
        if theirs and self.game.adj[x][theirs[-1]]:
            self.pending = x
            self.phase = PENDING
            return
        self.discards[p].append(x)
        self._end_turn(p)

    def _closure(self, p: int) -> bool:
        """CLOSURE(p): move p's discard top to its suit pile while it fits (PP-2); True if p went out."""
        if self.move_log is not None:
            return self._logged_closure(p)
        pile, levels = self.discards[p], self.levels
        while pile:
            c = pile[-1]
            if levels[SUIT[c]] != RANK[c]:
                return False
            pile.pop()
            levels[SUIT[c]] += 1
        return self._won(p)

    def _logged_closure(self, p: int) -> bool:
        """CLOSURE with the move log on: the same moves, then one table event naming the cards that went up."""
        pile, levels = self.discards[p], self.levels
        moved = []
        while pile and levels[SUIT[pile[-1]]] == RANK[pile[-1]]:
            c = pile.pop()
            levels[SUIT[c]] += 1
            moved.append(c)
        if moved:
            self._log_event(f"player {p}'s discard top goes up to the suit piles: {' '.join(cards_str(moved))}")
        return self._won(p) if not pile else False

    def _won(self, p: int) -> bool:
        """Check for a win (PP-6, PP-7): no stock, no discard pile, no pending card -> p wins the deal now."""
        if self.stocks[p] or self.discards[p] or self.pending != NO_CARD:
            return False
        self._deal_end(p)
        return True

    def _end_turn(self, p: int) -> None:
        self.turn_number += 1
        if self.turn_number >= self.settings.max_turns:
            self._deal_end(None)                     # truncated: a drawn deal worth 0 (§4d)
            return
        o = 1 - p
        self.current_player = o
        self.phase = MAIN
        pile = self.discards[o]
        if not pile or self.levels[SUIT[pile[-1]]] == RANK[pile[-1]]:    # else CLOSURE(o) has nothing to do
            self._closure(o)

    # ----- deal end, scoring, match end (§4d) -------------------------------------------------------
    def _deal_end(self, winner: int | None) -> None:
        points = [0, 0]
        if winner is not None:
            loser = 1 - winner
            points[winner] = len(self.stocks[loser]) + len(self.discards[loser])
        breakdown = {
            "winner": winner,
            "stock": [len(s) for s in self.stocks],
            "discard": [len(d) for d in self.discards],
            "turns": self.turn_number,
            "truncated": winner is None,
        }
        self._deal_winner = winner
        self.current_player = None
        self._end_deal(points, breakdown)
        if self.terminal and winner is None:         # the match ended on a drawn deal: cut short, not won
            self.terminal, self.truncated = False, True
        if not self.is_terminal:
            self.dealer = 1 - self.dealer
            self._start_deal(None)

    def _match_winners(self) -> list[int] | None:
        if self.settings.match_target == "one_deal":
            w = self._deal_winner
            return [0, 1] if w is None else [w]
        if max(self.scores) >= self.settings.match_target:
            return self._best_sides(self.scores)
        return None

    # ----- views ------------------------------------------------------------------------------------
    def _observation(self, seat: int) -> np.ndarray:
        other = 1 - seat
        l0, l1, l2, l3 = self.levels
        (d0, d1), (s0, s1) = discards, stocks = self.discards, self.stocks
        known0, known1 = self.stock_known
        p = self.pending
        # every card (the discard piles and stocks bottom first, the pending card, the suit piles) and its key, in
        # the same order; then card -> key
        if p == NO_CARD:
            cards, pending_key = bytearray(d0 + d1 + s0 + s1), b""
        else:
            cards, pending_key = bytearray(d0 + d1 + s0 + s1 + [p]), _PENDING_KEY
        cards = b"".join((cards, _SUIT_PILE_CARDS[0][l0], _SUIT_PILE_CARDS[1][l1], _SUIT_PILE_CARDS[2][l2],
                          _SUIT_PILE_CARDS[3][l3]))
        keys = b"".join((_DISCARD_KEYS[0][len(d0)], _DISCARD_KEYS[1][len(d1)],
                         (_STOCK_KEYS[0] if known0 else _UNSEEN_KEYS)[len(s0)],
                         (_STOCK_KEYS[1] if known1 else _UNSEEN_KEYS)[len(s1)], pending_key,
                         _SUIT_PILE_KEYS[l0], _SUIT_PILE_KEYS[l1], _SUIT_PILE_KEYS[l2], _SUIT_PILE_KEYS[l3]))
        card_keys = np.frombuffer(bytes.maketrans(cards, keys), _UINT8, NUM_CARDS).astype(_INTP)
        mine, theirs = discards[seat], discards[other]
        scores = self.scores
        if scores[0] or scores[1]:                   # (both 0 until a deal is scored: most observations)
            target = self.game.target
            score_bytes = _SCORES.pack(min(scores[seat] / target, 1.0), min(scores[other] / target, 1.0))
        else:
            score_bytes = _NO_SCORES
        # the blocks in order (§4i) as float32 bytes, joined into a bytearray that the returned array uses (so it is
        # writable without another copy)
        return np.frombuffer(bytearray().join((
            _LOCATION_ROWS[seat].take(card_keys, 0), _DEPTHS.take(card_keys),
            _LEVEL[l0], _LEVEL[l1], _LEVEL[l2], _LEVEL[l3],
            _SIZE[len(stocks[seat])], _SIZE[len(mine)], _SIZE[len(stocks[other])], _SIZE[len(theirs)],
            _CARD_ONE_HOT[mine[-1] if mine else 52], _CARD_ONE_HOT[theirs[-1] if theirs else 52],
            _CARD_ONE_HOT[p if p != NO_CARD else 52],
            _NO_PHASE if self.current_player is None else _PHASE_ONE_HOT[self.phase], score_bytes)), _FLOAT32)

    _SUIT_WORDS = ("clubs", "diamonds", "hearts", "spades")

    def forced_is_public(self, action: int) -> bool:
        """The legal actions follow from the face-up discard tops, the turned card and the settings alone."""
        return True

    def _logged_move(self, seat: int, action: int, forced: bool) -> Move:
        """TURN says which card came up and where it went (a suit pile, the pending choice, one's own discard
        pile, which ends the turn); KEEP says that the turn ends."""
        if action == TURN:
            o = 1 - seat
            stock = self.stocks[seat]
            first = "" if stock else "turn the discard pile over into the stock, then "
            x = stock[-1] if stock else self.discards[seat][0]
            theirs = self.discards[o]
            if self.levels[SUIT[x]] == RANK[x]:
                where = f": onto the {self._SUIT_WORDS[SUIT[x]]} suit pile"
            elif theirs and self.game.adj[x][theirs[-1]]:
                where = f", which fits only player {o}'s {card_str(theirs[-1])}: place it there or keep it"
            else:
                where = ": onto own discard pile; the turn ends"
            text = f"{first}turn {card_str(x)}{where}"
        elif action == KEEP:
            text = f"keep {card_str(self.pending)} on own discard pile; the turn ends"
        else:                                        # GIVE, PLACE: onto the opponent's discard top
            text = self.describe_action(action)
        return Move(seat, action, text, forced, self.deals_completed)

    def describe_deal(self, report: dict) -> list[str]:
        """Who emptied their piles (or a drawn deal), the points: the cards the loser has left."""
        b = report["breakdown"]
        w = b["winner"]
        n = self.deals_completed
        target = self.settings.match_target
        goal = "one deal" if target == "one_deal" else f"first to {target}"
        if w is None:
            lines = [f"deal {n} is drawn: {b['turns']} turns without a winner, 0 points to both"]
        else:
            lo = 1 - w
            lines = [f"deal {n} over after {b['turns']} turns: player {w} emptied stock and discard pile",
                     f"  player {w}: {report['deal_points'][w]} points (player {lo} has {b['stock'][lo]} cards "
                     f"left in stock and {b['discard'][lo]} in the discard pile)"]
        lines.append(f"  match totals: player 0 {report['scores'][0]}, player 1 {report['scores'][1]} ({goal})")
        return lines

    def _describe_action(self, action: int) -> str:
        """``"turn"``; ``"give 7H onto player 1's 8C"`` and ``"place 9D onto player 1's 8C"`` name the pile they
        go to; ``"keep 9D"``."""
        p = self.current_player
        if action == TURN:
            return "turn"
        if action == GIVE:
            if p is None or not self.discards[p] or not self.discards[1 - p]:
                return "give"
            return f"give {card_str(self.discards[p][-1])} onto player {1 - p}'s {card_str(self.discards[1 - p][-1])}"
        if action == PLACE:
            if self.pending == NO_CARD:
                return "place"
            if p is None or not self.discards[1 - p]:
                return f"place {card_str(self.pending)}"
            return f"place {card_str(self.pending)} onto player {1 - p}'s {card_str(self.discards[1 - p][-1])}"
        if action == KEEP:
            return f"keep {card_str(self.pending)}" if self.pending != NO_CARD else "keep"
        raise ValueError(f"action {action} is outside 0..{NUM_ACTIONS - 1} (0 turn, 1 give, 2 place, 3 keep)")

    def _action_aliases(self, action: int):
        p = self.current_player
        if action == TURN:
            return ("turn", "draw")
        if action == GIVE:
            if p is not None and self.discards[p]:
                mine = card_str(self.discards[p][-1])
                out = ["give", f"give {mine}"]
                if self.discards[1 - p]:
                    out.append(f"give {mine} onto {card_str(self.discards[1 - p][-1])}")
                return out
            return ("give",)
        if action == PLACE:
            if self.pending == NO_CARD:
                return ("place",)
            out = ["place", f"place {card_str(self.pending)}"]
            if p is not None and self.discards[1 - p]:
                out.append(f"place {card_str(self.pending)} onto {card_str(self.discards[1 - p][-1])}")
            return out
        return ("keep",)

    def _determinize(self, seat: int, rng: random.Random) -> "PishePashaState":
        """Re-deal what ``seat`` cannot see: the unturned cards of the original stocks (both players' — nobody
        sees a stock, its owner included), keeping each stock's size. Known (recycled) stocks stay. No choice
        tells anything about the unturned cards (every decision depends on face-up cards only), so every
        re-deal of them is possible. When another deal can follow, its deck is drawn anew (the clone shares
        the generators otherwise, and they are never drawn from again)."""
        st = self.clone()
        hidden = [p for p in (0, 1) if not st.stock_known[p]]
        pool = [c for p in hidden for c in st.stocks[p]]
        shuffle(rng, pool)
        k = 0
        for p in hidden:
            n = len(st.stocks[p])
            st.stocks[p] = pool[k:k + n]
            k += n
        if self.settings.episode == "match" and self.settings.match_target != "one_deal":
            st.deck_rng = seeded(rng.getrandbits(64))   # a new generator: never reseed a shared one
        st.move_log = None                          # the real history's texts: not in a re-dealt world
        return st

    def clone(self) -> "PishePashaState":
        st = object.__new__(type(self))
        d = self._copy_core(streams=False)
        # chance_rng is only drawn from at the match start (a random first dealer), and deck_rng only when a
        # new deal starts: the clone gets its own copy of deck_rng when another deal can still follow, and
        # otherwise shares these two generators, which will never be drawn from again (copying them costs
        # more than the rest of the state).
        if self.settings.episode == "match" and self.settings.match_target != "one_deal":
            d["deck_rng"] = copy_rng(self.deck_rng)
        d["stocks"] = [self.stocks[0][:], self.stocks[1][:]]
        d["discards"] = [self.discards[0][:], self.discards[1][:]]
        for name in ("levels", "stock_known"):
            d[name] = d[name][:]
        st.__dict__.update(d)
        return st

    def suit_piles(self) -> list[list[int]]:
        return [[13 * s + r for r in range(lv)] for s, lv in enumerate(self.levels)]

    def _state_dict(self) -> dict:
        return {
            "phase": PHASE_NAMES[self.phase] if self.current_player is not None else None,
            "stocks": [cards_str(reversed(s)) for s in self.stocks],
            "stock_known": list(self.stock_known),
            "discards": [cards_str(d) for d in self.discards],
            "suit_piles": [cards_str(p) for p in self.suit_piles()],
            "pending": card_str(self.pending) if self.pending != NO_CARD else None,
            "turn_number": self.turn_number,
        }

    def _render(self, seat: int | None) -> str:
        s = self.settings
        over = self.is_terminal
        target = "one deal" if s.match_target == "one_deal" else f"first to {s.match_target}"
        lines = [f"Pishe Pasha ({target}) | deal {self.deals_completed + (0 if over else 1)}, turn "
                 f"{self.turn_number + (0 if over else 1)} | dealer: player {self.dealer} | "
                 f"scores: {self.scores[0]}-{self.scores[1]}"]
        piles = []
        for su, pile in enumerate(self.suit_piles()):
            piles.append(f"{SUITS[su]}: {card_str(pile[-1]) if pile else '--'}")
        lines.append("suit piles  " + "  ".join(piles))
        for p in (0, 1):
            stock = self.stocks[p]
            if self.stock_known[p]:
                st_text = f"{len(stock)} (known, top first: {' '.join(cards_str(reversed(stock)))})" if stock else "0"
            else:
                st_text = f"{len(stock)} face down"
            disc = self.discards[p]
            d_text = (f"{len(disc)}: {' '.join(cards_str(disc))} (top {card_str(disc[-1])})" if disc else "0")
            me = " (you)" if seat == p else ""
            lines.append(f"player {p}{me}  stock {st_text} | discard {d_text}")
        if over:
            lines.append(("match stopped" if self.truncated else "match over") + "; winners: "
                         + ", ".join(f"player {w}" for w in self.winners))
        else:
            p = self.current_player
            me = " (you)" if seat == p else ""
            if self.pending != NO_CARD:
                text = (f"to move: player {p}{me}, who turned {card_str(self.pending)}: it fits only player "
                        f"{1 - p}'s pile, so place it there or keep it")
            else:
                text = f"to move: player {p}{me}: turn the next card" + (
                    ", or give the discard top to the opponent" if self._can_give(p) else "")
            text += " | legal: " + ", ".join(self.describe_action(a) for a in self.legal_actions())
            lines.append(text)
        return "\n".join(lines)


PishePashaGame.state_class = PishePashaState
