"""Ish: the rules engine (docs/rules.md §5, from the source rule text described there).

Ish is a betting game of pure luck for 2 to 20 players on a 40-card sun deck. Everyone stakes, draws two
face-down cards, the dealer calls "Ish" and every card is turned up. The highest *result* wins, but only if its
holder calls "Paoy" (the Crown's holder: "Kath"); ties go to the fastest caller. Its optimal policy is known
(§5e: stake the minimum, call exactly when eligible), which makes it a calibration environment.

Deck (§5a): suits Rising ``R``, Risen ``N``, Setting ``S``, values 0 (the Moon) to 12, id = 13·suit + value,
    plus the Crown ``CR`` = 39. Card text is ``<value><suit>``: ``"12R"``, ``"0N"``, ``"CR"``.
    Result of two cards (a, b): a + b if that is 12 or less, else a + b − 12. The Crown has no result and wins.

One round (§5b), in seat order from ``next(dealer)`` among the players still in (C-2):

    BET      decision: each active player picks a level k of the stake ladder,
             stake_k = min_bet + round_half_up(k·(max_bet − min_bet)/(bet_levels − 1)), stake ≤ bankroll
             (IS-4). Stakes are public as they are made.
    SELECT   the 40 cards lie face down in slots 0..39 (slot k holds deck card k, C-3): two passes of one
             card each. ``card_selection="auto"``: forced, the lowest free slot; ``"agent"``: a decision,
             any free slot. Who took which slot is public; the cards are not (IS-5).
    REVEAL   forced ("Ish"): every drawn card is turned up. Eligible E = {the Crown holder} if the Crown
             was drawn, else everyone holding the highest result.
    CALL     decision: each active player chooses CALL or NO_CALL without seeing the others' choices
             (the calls are hidden from every observation, IS-1).
    RESOLVE  forced: V = E ∩ callers (the Crown holder counts as a caller when ``crown_must_call=False``,
             IS-3). V empty: the round is void and every stake (and fine) is returned. Otherwise the member
             of V with the smallest τ_i = reflex_i · U(0,1) (``chance_rng``) wins (IS-2).
    PAYOUT   ``"pot"``: the winner takes every stake; ``"matched"``: each loser j pays min(b_j, b_winner),
             the rest is returned (IS-6). A caller outside E pays ``false_call_fine`` (capped at his
             bankroll left after the stake) to the winner (IS-7).
    END      a player whose bankroll is below ``min_bet`` is out (``out[seat]``; the AEC adapter terminates
             that agent, the others play on). The dealer moves to the next player still in. The match ends
             when one player is left (that player wins), or after ``max_rounds`` (truncation: the highest
             bankroll wins, ties share). A later round is dealt from a fresh ``deck_rng`` shuffle.

One round is one core "deal": the chip changes are the deal points, so ``scores`` are net chips won and
bankroll = ``bankroll`` setting + score.

Rewards. ``reward="chips"`` (default): every seat's bankroll change, paid on the step that ends the round
(zero-sum: chips are conserved, fines included). ``reward="outcome"`` (C-7 with eliminations): every seat that
ends the match as a loser receives −1/(N−1) (N = the table size), and the winners share what the losers paid
equally. A player who goes broke is a certain loser, so he is paid −1/(N−1) on the step he goes out (the
adapter removes his agent afterwards, a later reward would never reach him); the others are paid at the match
end. With one winner this is exactly C-7 (+1 against −1/(N−1) each); when everyone ties everyone gets 0; a
win shared by k of N at truncation gives each winner (N−k)/(k·(N−1)) instead of C-7's 1/k (the losers' share
cannot depend on a k that is unknown when the first of them leaves). Always zero-sum. With
``episode="deal"`` the round's winner (highest chip change) wins, and a void round is a tie.

Decisions beyond docs/rules.md:
    * a stake on the ladder is rounded half up; duplicate stakes (when max_bet − min_bet < bet_levels − 1)
      are different actions with the same effect, and their text names the level ("bet 2 (level 1)");
    * the reaction times are drawn only for the members of V, in seat order from ``next(dealer)``;
    * the Crown holder is offered CALL / NO_CALL even with ``crown_must_call=False`` (his choice is then
      irrelevant), so every active player has the same decision in CALL;
    * the last round's cards, results and outcome stay visible after it is resolved, until the next BET;
    * observation "round / max_rounds" counts the rounds completed.
    * hidden information (``determinize``): before REVEAL no card is seen and no choice depends on one (IS-5),
      after it every drawn card is face up; a call is hidden until RESOLVE and nothing shows it before, so
      the other seats' calls so far are re-drawn at random (every combination is possible).

Actions: ``Discrete(L + 42)``, L = ``bet_levels`` (§5g):

    =========  ==========================================================
    0..L−1     BET level k ("bet 5")
    L..L+39    SELECT slot k, only with ``card_selection="agent"`` ("select slot 3")
    L+40       NO_CALL ("stay silent")
    L+41       CALL ("call Paoy", or "call Kath" for the Crown holder)
    =========  ==========================================================

    Bare forms accepted by ``parse_action``: "level 4", "stake 5", "slot 3", "select 3", "call", "paoy",
    "kath", "silent", "no call", "pass" (no bare numbers: "5" could be a stake, a level or a slot).

Observation (§5h), float32, length 386 whatever the table size; seats relative to the observer (self,
``next(self)``, ...), padded to 20:

    ==================================================================================  ======
    phase: BET, SELECT, CALL (one-hot; all zero when the match is over)                 3
    per seat (5 each): bankroll / total chips, still in, this round's stake / max_bet,  5×20
      has bet, is dealer
    per seat after REVEAL (14 each): result 0..12 one-hot, or the Crown                 14×20
    I am eligible (after REVEAL)                                                        1
    rounds completed / max_rounds; players still in / 20                                2
    ==================================================================================  ======

    No card is visible before REVEAL, not even one's own (IS-5); no call is ever visible.

``to_dict()`` keys: ``game``, ``settings``, ``players``, ``round`` (1-based number of the current round),
``phase`` ("BET", "SELECT", "CALL" or "OVER"), ``dealer``, ``current_player``, ``order`` (this round's seat
order), ``bankrolls``, ``out``, ``stakes``, ``has_bet``, ``slots`` (the 40 cards in slot order),
``picks`` (per seat, the slots taken), ``hands`` (per seat, the cards in those slots), ``results`` (per seat:
0..12, "CR" or None), ``eligible`` (seats), ``calls`` (per seat: True, False or None), ``last_round`` (the
latest resolved round: ``winner``, ``void``, ``reaction_times``, ``deltas``, ``fines``), ``scores`` (net chips
per seat), ``deals_completed``, ``terminal``, ``truncated``, ``winners``.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections import Counter

import numpy as np

from ..core import cards as _cards
from ..core.docs import ActionRange, ObsBlock
from ..core.engine import Game, Move, State
from ..core.rng import shuffle
from ..core.settings import Choice, Custom, Flag, Int, SettingsSpec, common_settings, observation_setting

NUM_CARDS = 40
CROWN = 39
SUITS = "RNS"
SUIT_NAMES = ("Rising", "Risen", "Setting")
MAX_SEATS = 20
CROWN_RESULT = 13                      # index of the Crown in the 14-wide result one-hot
BET, SELECT, CALL, OVER = 0, 1, 2, 3
PHASE_NAMES = ("BET", "SELECT", "CALL", "OVER")

# observation offsets (§5h)
OBS_SEATS = 3
SEAT_WIDTH = 5
OBS_RESULTS = OBS_SEATS + SEAT_WIDTH * MAX_SEATS          # 103
RESULT_WIDTH = 14
OBS_ELIGIBLE = OBS_RESULTS + RESULT_WIDTH * MAX_SEATS     # 383
OBS_ROUND = OBS_ELIGIBLE + 1                              # 384
OBS_SIZE = OBS_ROUND + 2                                  # 386

CARD_STRINGS = tuple(f"{v}{s}" for s in SUITS for v in range(13)) + ("CR",)


def card_str(card: int) -> str:
    """``card_str(12) == "12R"``, ``card_str(39) == "CR"``."""
    return CARD_STRINGS[card]


def cards_str(cards) -> list[str]:
    return [CARD_STRINGS[c] for c in cards]


def parse_card(text) -> int:
    """Parse ``"12R"``, ``"0n"``, ``"CR"`` (or ``"crown"``) or an id 0..39 to a card id; ``ValueError`` otherwise."""
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        if 0 <= text < NUM_CARDS:
            return int(text)
        raise ValueError(f"card id {text} is out of range 0..39")
    if isinstance(text, str):
        s = text.strip().upper()
        if s in ("CR", "CROWN"):
            return CROWN
        if 2 <= len(s) <= 3 and s[:-1].isdigit() and s[-1] in SUITS:
            value = int(s[:-1])
            if value <= 12 and str(value) == s[:-1]:
                return 13 * SUITS.index(s[-1]) + value
    raise ValueError(f"not an Ish card: {text!r}; a card is a value 0-12 followed by a suit R (Rising), "
                     f"N (Risen) or S (Setting), e.g. '12R', '0N', or 'CR' for the Crown")


def result_of(a: int, b: int) -> int:
    """Result of two cards (§5a): 0..12, or ``CROWN_RESULT`` (13) when one of them is the Crown."""
    if a == CROWN or b == CROWN:
        return CROWN_RESULT
    s = a % 13 + b % 13
    return s if s <= 12 else s - 12


#: RESULT[a][b], precomputed for the hot path
RESULT = tuple(tuple(result_of(a, b) for b in range(NUM_CARDS)) for a in range(NUM_CARDS))


def _check_reflex(value, nested: bool = False):
    """A positive number (every seat), or a flat list of positive numbers (one per seat)."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        if not value > 0 or value == float("inf"):
            raise ValueError(value)
        return float(value)
    if not nested and isinstance(value, (list, tuple, np.ndarray)) and 2 <= len(value) <= MAX_SEATS:
        return tuple(_check_reflex(v, nested=True) for v in value)
    raise ValueError(value)


def _parse_reflex(text: str):
    parts = [p for p in text.replace("[", " ").replace("]", " ").replace(",", " ").split() if p]
    nums = [float(p) for p in parts]
    return nums[0] if len(nums) == 1 else nums


SETTINGS = SettingsSpec("ish", [
    Int("players", 4, 2, MAX_SEATS, doc="table size"),
    Int("bankroll", 100, 1, 10_000, doc="chips each player starts with"),
    Int("min_bet", 1, 1, 10_000, doc="the lowest stake; a bankroll below it is out"),
    Int("max_bet", 10, 1, 10_000, doc="the highest stake (at least min_bet)"),
    Int("bet_levels", 10, 2, 20, doc="steps of the stake ladder, spaced linearly (§5g)"),
    Choice("payout", "pot", ("pot", "matched"), doc="IS-6"),
    Choice("card_selection", "auto", ("auto", "agent"),
           doc="the engine takes the lowest free slots, or the agents choose (IS-5)"),
    Flag("crown_must_call", True, doc="IS-3"),
    Custom("reflex", 1.0, _check_reflex, "a positive number, or a list of one positive number per player "
           "(a larger value means slower)", parser=_parse_reflex, doc="IS-2"),
    Int("false_call_fine", 0, 0, 10_000, doc="IS-7; at most max_bet"),
    *common_settings("max_rounds", 100, 100_000, reward_options=("chips", "outcome"), reward_default="chips"),
    observation_setting(appraised=False),
])


# The observation is gathered from the state's *view* (State._views): the same blocks as the observation, but
# with seat p's blocks at p's own place (absolute, not relative to the reader), every seat's eligibility bit after
# them, and the padding left zero. One view serves every reader; it is kept up to date move by move, so an
# observation is a single gather (``np.take``) instead of a loop over the seats.
VIEW_ELIGIBLE = OBS_SIZE                                  # the view's eligibility bit of seat p: VIEW_ELIGIBLE + p


def _view_index(n: int) -> tuple:
    """For each reading seat, where each entry of its observation is read from the view: the seat and result
    blocks turned so that the reader comes first, its own eligibility bit, the rest (phase, padding, round,
    players still in) in place."""
    seats = np.arange(n)
    turned = (seats[:, None] + seats) % n                 # turned[s, k]: the seat k places after s
    index = np.tile(np.arange(OBS_SIZE), (n, 1))
    index[:, OBS_SEATS:OBS_SEATS + SEAT_WIDTH * n] = \
        (OBS_SEATS + SEAT_WIDTH * turned[:, :, None] + np.arange(SEAT_WIDTH)).reshape(n, -1)
    index[:, OBS_RESULTS:OBS_RESULTS + RESULT_WIDTH * n] = \
        (OBS_RESULTS + RESULT_WIDTH * turned[:, :, None] + np.arange(RESULT_WIDTH)).reshape(n, -1)
    index[:, OBS_ELIGIBLE] = VIEW_ELIGIBLE + seats
    return tuple(index)


class IshGame(Game):
    name = "ish"
    space_settings = ("players", "bet_levels", "card_selection", "min_bet", "max_bet", "observation")
    version = 0
    settings_spec = SETTINGS
    cap_setting = "max_rounds"

    # ----- documentation page (envs/core/docs.py) ---------------------------------------------------------
    title = "Ish"
    rules_section = "§5"
    summary = ("Ish is a betting game of pure luck for 2 to 20 players on a 40-card sun deck. Everyone stakes, draws "
               "two face-down cards, every card is turned up, and the highest *result* wins the pot, but only if "
               "its holder calls \"Paoy\" (the Crown's holder: \"Kath\"); ties go to the fastest caller. A player "
               "whose bankroll falls below `min_bet` is out. Its optimal policy is known (stake the minimum, call "
               "exactly when eligible), which makes it a calibration environment.")
    doc_tables = [dict(players=2), dict(players=4), dict(players=20), dict(players=4, bet_levels=4)]
    action_ranges = [
        ActionRange(0, lambda g: g.select_base - 1, "BET level k of the stake ladder (L = `bet_levels` levels, "
                    "IS-4: only stakes within the bankroll)", ("BET",), text="`\"bet 5\"`, `\"bet 2 (level 1)\"`"),
        ActionRange(lambda g: g.select_base, lambda g: g.no_call - 1, "SELECT slot k = id − L of the 40 face-down "
                    "cards, only with `card_selection=\"agent\"`", ("SELECT",), text="`\"select slot 3\"`"),
        ActionRange(lambda g: g.no_call, lambda g: g.no_call, "NO_CALL", ("CALL",), text="`\"stay silent\"`"),
        ActionRange(lambda g: g.call, lambda g: g.call, "CALL (Paoy, or Kath for the Crown's holder)", ("CALL",),
                    text="`\"call Paoy\"`, `\"call Kath\"`"),
    ]
    action_notes = ("`Discrete(L + 42)` with L = `bet_levels` (10 by default: `Discrete(52)`). Bare forms accepted by "
                    "`parse_action`: `\"level 4\"`, `\"stake 5\"`, `\"slot 3\"`, `\"select 3\"`, `\"call\"`, "
                    "`\"paoy\"`, `\"kath\"`, `\"silent\"`, `\"no call\"`, `\"pass\"` (no bare numbers).")
    observation_blocks = [
        ObsBlock("phase (one-hot BET, SELECT, CALL; all zero when the match is over)", 3, "0 or 1"),
        ObsBlock(f"per seat, self first, padded to {MAX_SEATS} (5 each): bankroll, still in, this round's stake, "
                 "has bet, is dealer", SEAT_WIDTH * MAX_SEATS, "/ total chips, 0 or 1, / `max_bet`, 0 or 1, 0 or 1"),
        ObsBlock(f"per seat after REVEAL, padded to {MAX_SEATS} (14 each): result 0..12 (one-hot), or the Crown",
                 RESULT_WIDTH * MAX_SEATS, "0 or 1"),
        ObsBlock("I am eligible (after REVEAL)", 1, "0 or 1"),
        ObsBlock("rounds completed", 1, "/ `max_rounds`, clipped at 1"),
        ObsBlock("players still in", 1, f"/ {MAX_SEATS}"),
    ]
    observation_notes = ("The length is the same for every table size. No card is visible before REVEAL, not even "
                         "one's own (IS-5); no call is ever visible (IS-1). The last round's cards, results and "
                         "outcome stay visible until the next BET.")
    reward_texts = {
        "chips": "every seat's bankroll change, paid on the step that ends the round (zero-sum: chips are "
                 "conserved, fines included).",
        "outcome": "C-7 with eliminations: every seat that ends the match as a loser receives −1/(N−1) (N = the "
                   "table size), paid on the step it goes broke (or at the match end), and the winners share what "
                   "the losers paid; everyone 0 when all tie. Always zero-sum.",
    }
    rewards_note = ("One round is one core deal: the chip changes are the deal points, `scores` are net chips won, "
                    "and bankroll = `bankroll` + score. A player who goes broke is terminated while the others play "
                    "on. The match ends when one player is left, or after `max_rounds` (truncation: the highest "
                    "bankroll wins, ties share). With `episode=\"deal\"` the round's winner (highest chip change) "
                    "wins, and a void round is a tie.")
    version_history = [(0, "first release")]

    def house_settings(self) -> list[str]:
        """The settings in force, in words, for the player guide (envs/core/guide.py)."""
        s = self.settings
        ladder = sorted(set(self.stakes))
        out = [f"{s.players} players, {s.bankroll} chips each", "stakes " + ", ".join(str(b) for b in ladder),
               "the winner takes every stake" if s.payout == "pot"
               else "each loser pays the winner at most the winner's own stake, the rest goes back",
               "the cards are taken for you, in turn" if s.card_selection == "auto"
               else "each player picks the two face-down cards they take",
               "the Crown's holder must call Kath to win" if s.crown_must_call
               else "the Crown wins even without a call"]
        if isinstance(s.reflex, tuple):
            out.append("reaction speeds per player: " + ", ".join(f"{r:g}" for r in s.reflex) + " (larger is slower)")
        else:
            out.append("every player is equally fast, so ties among callers are settled by chance")
        out += [f"a wrong call costs {s.false_call_fine}" if s.false_call_fine else "a wrong call costs nothing",
                f"at most {s.max_rounds} rounds"]
        return out

    def _configure(self) -> None:
        s = self.settings
        n = self.num_players = s.players
        if s.min_bet > s.max_bet:
            raise ValueError(f"setting 'min_bet': {s.min_bet} is not allowed with max_bet={s.max_bet}; "
                             f"min_bet must be at most max_bet")
        if s.bankroll < s.min_bet:
            raise ValueError(f"setting 'bankroll': {s.bankroll} is not allowed with min_bet={s.min_bet}; "
                             f"the bankroll must be at least min_bet")
        if s.false_call_fine > s.max_bet:
            raise ValueError(f"setting 'false_call_fine': {s.false_call_fine} is not allowed with "
                             f"max_bet={s.max_bet}; allowed: 0 to max_bet")
        if isinstance(s.reflex, tuple):
            if len(s.reflex) != n:
                raise ValueError(f"setting 'reflex': a list of {len(s.reflex)} values is not allowed with "
                                 f"players={n}; give one value per player, or a single number")
            self.reflex = list(s.reflex)
        else:
            self.reflex = [s.reflex] * n
        L = s.bet_levels
        span, den = s.max_bet - s.min_bet, 2 * (L - 1)
        #: stake of each ladder level, rounded half up (§5g), nondecreasing
        self.stakes = [s.min_bet + (2 * k * span + L - 1) // den for k in range(L)]
        counts = Counter(self.stakes)
        self.stake_unique = [counts[b] == 1 for b in self.stakes]
        self.select_base = L
        self.no_call = L + NUM_CARDS
        self.call = L + NUM_CARDS + 1
        self.num_actions = L + 42
        self.observation_size = OBS_SIZE
        self.total_chips = n * s.bankroll
        #: for each dealer, every seat in turn order from next(dealer), the dealer last (C-2)
        self.turn_orders = [tuple((d + 1 + k) % n for k in range(n)) for d in range(n)]
        self.view_index = _view_index(n)
        # legal_mask() copies one of these: BET with the k cheapest levels affordable, and CALL
        self.bet_masks = []
        for k in range(L + 1):
            mask = np.zeros(self.num_actions, dtype=bool)
            mask[:k] = True
            self.bet_masks.append(mask)
        self.call_mask = np.zeros(self.num_actions, dtype=bool)
        self.call_mask[[self.no_call, self.call]] = True

    def full_deck(self) -> list[int]:
        return list(range(NUM_CARDS))             # the sun deck (§5a)

    def check_deck(self, deck) -> list[int]:
        return _cards.check_deck(deck, parse_card, Counter(range(NUM_CARDS)), card_str, "the 40-card sun deck")


class IshState(State):

    deal_word = "round"
    card_str = staticmethod(card_str)
    parse_card = staticmethod(parse_card)
    # _views (State): the one view every seat's observation is gathered from (see ``_view_index``), made when first
    # read, then kept up to date by the moves; None until then (a new round, a resolved one, a copy)

    def __init__(self, game, rng, deck, move_log=False):
        s = game.settings
        self.bankroll = [s.bankroll] * game.num_players
        self.outcome_paid = [False] * game.num_players
        self.last_round: dict | None = None
        super().__init__(game, rng, deck, move_log)

    # ----- a round (§5b) ----------------------------------------------------------------------------
    def _start_deal(self, deck: list[int] | None) -> None:
        n = self.num_players
        deck = self._deal_order(deck)
        self.slots = deck                              # slot k holds deck card k (C-3)
        self.taken = [False] * NUM_CARDS
        self.picks = [[] for _ in range(n)]
        self.stakes = [0] * n
        self.has_bet = [False] * n
        self.results: list[int | None] = [None] * n
        self.eligible = [False] * n
        self.calls: list[bool | None] = [None] * n
        out, turn = self.out, self.game.turn_orders[self.dealer]
        self.order = [p for p in turn if not out[p]] if True in out else list(turn)   # C-2, the dealer last
        self.phase = BET
        self.turn = 0                                  # index into order (BET, CALL) or pick number (SELECT)
        self.current_player = self.order[0]
        self._views = None
        if self.move_log is not None:
            s = self.settings
            self._log_event(f"round {self.deals_completed + 1}: player {self.dealer} deals; every player still in "
                            f"stakes {s.min_bet} to {s.max_bet} chips, from player {self.order[0]}")

    def legal_actions(self) -> list[int]:
        p = self.current_player
        if p is None:
            return []
        g = self.game
        if self.phase == BET:
            return list(range(bisect_right(g.stakes, self.bankroll[p])))       # IS-4
        if self.phase == SELECT:
            base, taken = g.select_base, self.taken
            return [base + k for k in range(NUM_CARDS) if not taken[k]]
        return [g.no_call, g.call]

    def legal_mask(self) -> np.ndarray:
        """``legal_actions()`` as a mask: a copy of a mask made once per game, but in SELECT."""
        p = self.current_player
        if p is not None and self.phase != SELECT:
            g = self.game
            if self.phase == BET:
                return g.bet_masks[bisect_right(g.stakes, self.bankroll[p])].copy()       # IS-4
            return g.call_mask.copy()
        return super().legal_mask()

    def _is_legal(self, action: int) -> bool:
        if self.current_player is None:
            return False
        g = self.game
        if self.phase == BET:
            return 0 <= action < g.select_base and g.stakes[action] <= self.bankroll[self.current_player]
        if self.phase == SELECT:
            k = action - g.select_base
            return 0 <= k < NUM_CARDS and not self.taken[k]
        return action == g.no_call or action == g.call

    def _auto_play(self) -> None:
        """C-4, asked after every move: a look at the phase first spares listing the actions where no decision
        can be a single choice: a call never (calling and silence are both always legal), a bet only when the
        bankroll covers the lowest stake alone (IS-4)."""
        p = self.current_player
        if p is None or self.phase == CALL or (self.phase == BET and self.bankroll[p] >= self.game.stakes[1]):
            return
        super()._auto_play()

    def _apply(self, action: int) -> None:
        if self.phase == BET:
            self._apply_bet(action)
        elif self.phase == SELECT:
            self._take_slot(action - self.game.select_base)
        else:
            self._apply_call(action == self.game.call)

    def _apply_bet(self, level: int) -> None:
        p = self.current_player
        stake = self.stakes[p] = self.game.stakes[level]
        self.has_bet[p] = True
        view = self._views
        if view is not None:
            o = OBS_SEATS + SEAT_WIDTH * p
            view[o + 2] = stake / self.settings.max_bet
            view[o + 3] = 1.0
        self.turn += 1
        if self.turn < len(self.order):
            self.current_player = self.order[self.turn]
            return
        self.phase, self.turn = SELECT, 0
        if view is not None:
            view[BET], view[SELECT] = 0.0, 1.0
        if self.settings.card_selection == "auto":
            self._auto_select()
        else:
            self.current_player = self.order[0]

    def _auto_select(self) -> None:
        """SELECT with ``card_selection="auto"`` (forced): two passes, the lowest free slot each."""
        order, m = self.order, len(self.order)
        for i, p in enumerate(order):
            self.picks[p] = [i, m + i]
            self.taken[i] = self.taken[m + i] = True
        if self.move_log is not None:
            self._log_event("each player takes two cards face down (nobody may look)")
        self._reveal()

    def _take_slot(self, slot: int) -> None:
        """SELECT with ``card_selection="agent"``: the player takes a free slot (a choice among face-down cards)."""
        self.picks[self.current_player].append(slot)
        self.taken[slot] = True
        self.turn += 1
        m = len(self.order)
        if self.turn < 2 * m:
            self.current_player = self.order[self.turn % m]
        else:
            self._reveal()

    def _reveal(self) -> None:
        """REVEAL (forced, "Ish"): results and the eligible set E."""
        order, slots, results, eligible = self.order, self.slots, self.results, self.eligible
        for p in order:
            a, b = self.picks[p]
            results[p] = RESULT[slots[a]][slots[b]]
        top = max([results[p] for p in order])
        for p in order:
            eligible[p] = results[p] == top            # the Crown (13) beats every result; it is unique
        self.phase, self.turn = CALL, 0
        self.current_player = order[0]
        view = self._views
        if view is not None:
            view[SELECT], view[CALL] = 0.0, 1.0
            for p in order:
                view[OBS_RESULTS + RESULT_WIDTH * p + results[p]] = 1.0
                if eligible[p]:
                    view[VIEW_ELIGIBLE + p] = 1.0
        if self.move_log is not None:
            shown = ", ".join(f"player {p} {' '.join(cards_str(slots[k] for k in self.picks[p]))} "
                              f"({'the Crown' if results[p] == CROWN_RESULT else results[p]})" for p in self.order)
            best = [p for p in self.order if self.eligible[p]]
            self._log_event(f"Ish! every card is turned up: {shown}; "
                            + ("the Crown wins" if top == CROWN_RESULT else f"the highest result is {top}")
                            + f", held by {', '.join(f'player {p}' for p in best)}; now every player calls or "
                            "stays silent")

    def _apply_call(self, calls: bool) -> None:
        self.calls[self.current_player] = calls
        self.turn += 1
        if self.turn < len(self.order):
            self.current_player = self.order[self.turn]
        else:
            self._resolve()

    def _resolve(self) -> None:
        """RESOLVE, PAYOUT, fines and END (all forced)."""
        g, s, n = self.game, self.settings, self.num_players
        order, stakes, eligible, calls = self.order, self.stakes, self.eligible, self.calls
        crown_free = not s.crown_must_call
        # IS-1, IS-3: only a call by an eligible player counts; a Crown holder may win without calling
        valid = [p for p in order if eligible[p] and (calls[p] or (crown_free and self.results[p] == CROWN_RESULT))]
        deltas = [0] * n
        fines = [0] * n
        taus = {}
        winner = None
        if valid:                                      # IS-2: the fastest valid caller
            rnd, reflex = self.chance_rng.random, g.reflex
            best = 2.0 * max([reflex[p] for p in valid])
            for p in valid:
                tau = reflex[p] * rnd()
                taus[p] = tau
                if tau < best:
                    best, winner = tau, p
            if s.payout == "pot":                      # IS-6
                for p in order:
                    if p != winner:
                        deltas[p] = -stakes[p]
                        deltas[winner] += stakes[p]
            else:
                bw = stakes[winner]
                for p in order:
                    if p != winner:
                        pay = min(stakes[p], bw)
                        deltas[p] = -pay
                        deltas[winner] += pay
            if s.false_call_fine:                      # IS-7: refunded (never charged) in a void round
                for p in order:
                    if calls[p] and not eligible[p]:
                        fine = min(s.false_call_fine, self.bankroll[p] - stakes[p])
                        fines[p] = fine
                        deltas[p] -= fine
                        deltas[winner] += fine
        bankroll, out = self.bankroll, self.out
        gone = []
        for p in order:                                # END: broke players are out
            bankroll[p] += deltas[p]
            if bankroll[p] < s.min_bet:
                out[p] = True
                gone.append(p)
        if s.reward == "chips":
            self._pay(deltas)
        elif gone:                                     # a certain loser leaves now: pay his outcome share
            self._pay_losers(gone)
        self.last_round = {
            "winner": winner,
            "void": winner is None,
            "reaction_times": {str(p): t for p, t in taus.items()},
            "deltas": list(deltas),
            "fines": list(fines),
        }
        breakdown = {
            "stakes": list(stakes),
            "results": [None if r is None else ("CR" if r == CROWN_RESULT else r) for r in self.results],
            "eligible": [p for p in order if eligible[p]],
            "calls": [None if c is None else bool(c) for c in calls],
            "reaction_times": [taus.get(p) for p in range(n)],
            "winner": winner,
            "void": winner is None,
            "fines": list(fines),
            "bankrolls": list(bankroll),
            "out": [p for p in range(n) if out[p]],
            "eliminated": gone,
        }
        self.phase = OVER
        self.current_player = None
        self._views = None                             # bankrolls, players in, rounds: made anew when read
        self._end_deal(deltas, breakdown)
        if not self.is_terminal:
            self.dealer = next(p for p in g.turn_orders[self.dealer] if not out[p])   # C-2
            self._start_deal(None)

    # ----- match end and rewards ----------------------------------------------------------------------
    def _match_winners(self) -> list[int] | None:
        alive = [p for p in range(self.num_players) if not self.out[p]]
        return alive if len(alive) == 1 else None

    def _pay_losers(self, seats) -> None:
        """``reward="outcome"``: a loser's share, −1/(N−1), paid once (see the module docstring)."""
        n = self.num_players
        per = [0.0] * n
        for p in seats:
            if not self.outcome_paid[p]:
                self.outcome_paid[p] = True
                per[p] = -1.0 / (n - 1)
        self._pay(per)

    def _finish(self, winning_sides, report=None, truncated=False) -> None:
        """Match end; a seat already paid its loss when it went broke cannot be among the winners."""
        winners = [p for p in winning_sides if not self.outcome_paid[p]] or list(winning_sides)
        super()._finish(winners, report, truncated)
        self.phase = OVER

    def _pay_outcome(self, winning: set) -> None:
        """Replaces the core's C-7 payment by the elimination-aware scheme of the docstring."""
        n = self.num_players
        losers = [p for p in range(n) if p not in winning]
        self._pay_losers(losers)
        if losers:
            share = len(losers) / ((n - 1) * len(winning))
            self._pay([share if p in winning else 0.0 for p in range(n)])

    # ----- views ------------------------------------------------------------------------------------
    def _observation(self, seat: int) -> np.ndarray:
        view = self._views
        if view is None or self._views_version != self._version:
            view = self._views = self._make_view()
            self._views_version = self._version
        return view.take(self.game.view_index[seat])

    def _make_view(self) -> np.ndarray:
        """The view of this state (see ``_view_index``); the moves keep it up to date after this."""
        n = self.num_players
        view = np.zeros(VIEW_ELIGIBLE + n, dtype=np.float32)
        if self.phase != OVER:
            view[self.phase] = 1.0
        total, max_bet = self.game.total_chips, self.settings.max_bet
        bankroll, out, stakes, has_bet, results = self.bankroll, self.out, self.stakes, self.has_bet, self.results
        for p in range(n):
            o = OBS_SEATS + SEAT_WIDTH * p
            view[o] = bankroll[p] / total
            if not out[p]:
                view[o + 1] = 1.0
            if has_bet[p]:
                view[o + 2] = stakes[p] / max_bet
                view[o + 3] = 1.0
            if p == self.dealer:
                view[o + 4] = 1.0
            r = results[p]
            if r is not None:                          # set at REVEAL, never before (IS-5)
                view[OBS_RESULTS + RESULT_WIDTH * p + r] = 1.0
            if self.eligible[p]:
                view[VIEW_ELIGIBLE + p] = 1.0
        view[OBS_ROUND] = min(self.deals_completed / self.settings.max_rounds, 1.0)
        view[OBS_ROUND + 1] = (n - sum(out)) / MAX_SEATS
        return view

    def _holds_crown(self, seat) -> bool:
        return seat is not None and self.results[seat] == CROWN_RESULT

    def is_public_action(self, action: int) -> bool:
        """Calls are hidden until RESOLVE (IS-1); stakes and slots are public."""
        return action < self.game.no_call

    def forced_is_public(self, action: int) -> bool:
        """The stakes allowed follow from the public bankrolls, the free slots are in sight, and a call is never
        forced (calling and silence are always both legal)."""
        return True

    def _logged_move(self, seat: int, action: int, forced: bool) -> Move:
        """A call or silence is seen by the others only when the round is resolved (IS-1)."""
        if action >= self.game.no_call:
            return Move(seat, action, "calls or stays silent (shown when the round is resolved)", forced,
                        self.deals_completed, {seat: self.describe_action(action)})
        return Move(seat, action, self.describe_action(action), forced, self.deals_completed)

    def describe_deal(self, report: dict) -> list[str]:
        """The outcome (the winner and the pot, or a void round), then each player's stake, result, call, chip
        change and bankroll."""
        b = report["breakdown"]
        w = b["winner"]
        n = self.deals_completed
        if w is None:
            lines = [f"round {n} over: no eligible player called, so the round is void and every stake goes back"]
        else:
            lines = [f"round {n} over: player {w} called first among the eligible and wins "
                     f"{report['deal_points'][w]} chips"]
        for p in range(self.num_players):
            if b["calls"][p] is None:
                continue
            r = b["results"][p]
            call = ("called " + ("Kath" if r == "CR" else "Paoy")) if b["calls"][p] else "stayed silent"
            fine = f", fined {b['fines'][p]}" if b["fines"][p] else ""
            change = report["deal_points"][p]
            lines.append(f"  player {p}: stake {b['stakes'][p]}, result {'the Crown' if r == 'CR' else r}, {call}"
                         f"{fine}: {'+' if change > 0 else ''}{change} chips, bankroll {b['bankrolls'][p]}")
        for p in b["eliminated"]:
            lines.append(f"  player {p} has fewer than {self.settings.min_bet} chips left and is out")
        return lines

    def describe_match(self, seat: int | None = None) -> str:
        """The result with every bankroll (the match totals are net chips)."""
        head = super().describe_match(seat).split("; totals: ")[0]
        return head + "; bankrolls: " + ", ".join(f"player {p} {b}" for p, b in enumerate(self.bankroll))

    def _describe_action(self, action: int) -> str:
        g = self.game
        if 0 <= action < g.select_base:
            text = f"bet {g.stakes[action]}"
            return text if g.stake_unique[action] else f"{text} (level {action})"
        if action < g.no_call:
            return f"select slot {action - g.select_base}"
        if action == g.no_call:
            return "stay silent"
        if action == g.call:
            return "call Kath" if self._holds_crown(self.current_player) else "call Paoy"
        raise ValueError(f"action {action} is outside 0..{g.num_actions - 1}")

    def _action_aliases(self, action: int):
        g = self.game
        if action < g.select_base:
            return (f"bet {g.stakes[action]}", f"stake {g.stakes[action]}", f"level {action}")
        if action < g.no_call:
            k = action - g.select_base
            return (f"slot {k}", f"select {k}", f"take slot {k}")
        if action == g.no_call:
            return ("silent", "no call", "no_call", "pass", "stay")
        return ("call", "paoy", "kath", "call paoy", "call kath")

    def _determinize(self, seat: int, rng: random.Random) -> "IshState":
        """Re-deal what ``seat`` cannot see: before REVEAL every card (the slot order, so the drawn cards
        too); after it the undrawn cards; in CALL the calls already made by the others; and the future (the
        shuffles and reaction times of both random streams)."""
        st = self.clone()
        if st.phase in (BET, SELECT):
            shuffle(rng, st.slots)
        else:
            free = [k for k in range(NUM_CARDS) if not st.taken[k]]
            cards = [st.slots[k] for k in free]
            shuffle(rng, cards)
            for k, c in zip(free, cards):
                st.slots[k] = c
        if st.phase == CALL:
            for p in st.order[:st.turn]:
                if p != seat:
                    st.calls[p] = rng.random() < 0.5
        st.deck_rng.seed(rng.getrandbits(64))
        st.chance_rng.seed(rng.getrandbits(64))
        st.move_log = None                             # it shows each seat its own call: not in a re-dealt world
        return st

    def clone(self) -> "IshState":
        st = object.__new__(type(self))
        d = self._copy_core()
        for key in ("bankroll", "outcome_paid", "slots", "taken", "stakes", "has_bet", "results", "eligible",
                    "calls", "order"):
            d[key] = list(d[key])
        d["picks"] = [list(p) for p in self.picks]
        if self.last_round is not None:
            d["last_round"] = _copy_plain(self.last_round)
        st.__dict__ = d
        return st

    def _result_text(self, p):
        r = self.results[p]
        return None if r is None else ("CR" if r == CROWN_RESULT else r)

    def _state_dict(self) -> dict:
        n = self.num_players
        return {
            "round": self.deals_completed + (0 if self.is_terminal else 1),
            "phase": PHASE_NAMES[self.phase],
            "order": list(self.order),
            "bankrolls": list(self.bankroll),
            "out": list(self.out),
            "stakes": list(self.stakes),
            "has_bet": list(self.has_bet),
            "slots": cards_str(self.slots),
            "picks": [list(p) for p in self.picks],
            "hands": [cards_str(self.slots[k] for k in p) for p in self.picks],
            "results": [self._result_text(p) for p in range(n)],
            "eligible": [p for p in range(n) if self.eligible[p]],
            "calls": list(self.calls),
            "last_round": _copy_plain(self.last_round),
        }

    _PHASE_WORDS = ("betting", "taking cards", "calling", "round over")

    def _render(self, seat: int | None) -> str:
        """An ansi table; with ``seat`` only what that seat sees (cards after REVEAL, calls after RESOLVE)."""
        s, n = self.settings, self.num_players
        over = self.phase == OVER
        head = (f"Ish, {n} players, {s.payout} payout | round {self.deals_completed + (0 if over else 1)}"
                f" of at most {s.max_rounds} | dealer: player {self.dealer} | now: {self._PHASE_WORDS[self.phase]}")
        lines = [head, f"{'seat':<9}{'bankroll':>9}{'stake':>7}  {'cards':<10}{'result':>7}  call"]
        for p in range(n):
            mark = "*" if p == self.current_player else " "
            name = f"p{p}" + (" you" if p == seat else "")
            if self.out[p] and p not in self.order:
                lines.append(f"{name:<7}{mark} {self.bankroll[p]:>9}  out")
                continue
            stake = str(self.stakes[p]) if self.has_bet[p] else "-"
            if self.results[p] is not None or seat is None:
                cards = " ".join(cards_str(self.slots[k] for k in self.picks[p])) or "-"
            else:
                cards = "face down" if self.picks[p] else "-"
            r = self._result_text(p)
            result = "-" if r is None else str(r)
            c = self.calls[p]
            if c is None:
                call = "-"
            elif over or seat is None or seat == p:
                call = "call" if c else "silent"
            else:
                call = "made"
            lines.append(f"{name:<7}{mark} {self.bankroll[p]:>9}{stake:>7}  {cards:<10}{result:>7}  {call}")
        lr = self.last_round
        if lr is not None:
            if lr["void"]:
                lines.append("last round: void, every stake returned")
            else:
                w = lr["winner"]
                lines.append(f"last round: player {w} won {lr['deltas'][w]} chips")
        if self.is_terminal:
            lines.append(("match stopped at the cap" if self.truncated else "match over") + "; winners: "
                         + ", ".join(f"player {w}" for w in self.winners))
        else:
            lines.append(f"to move: player {self.current_player}" + (" (you)" if self.current_player == seat else ""))
        return "\n".join(lines)


def _copy_plain(x):
    """A copy of JSON-like data (dicts, lists, scalars)."""
    if isinstance(x, dict):
        return {k: _copy_plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy_plain(v) for v in x]
    return x


IshGame.state_class = IshState
