"""Pâsur: the rules engine (docs/rules.md §2, from the source rule text described there).

Pâsur (Haft-o Chahâr Yâzdah, "seven and four, eleven") is a Persian fishing game for 2 players (PA-10).
A numeric card (A=1 … T=10) captures pool cards whose values bring the sum to 11; a K takes a K, a Q a Q;
a J sweeps every numeric card and jack but never K or Q. Emptying the pool with a non-jack capture is a
*sur*, worth 5.

Round deal (§2a, deck index 0 is the top card, C-3)
    cards 0-3 to the non-dealer, 4-7 to the dealer, 8-11 face up to the pool, 12-51 the stock (40 cards,
    PA-11). Pool check (PA-5): 2+ J, or (with ``redeal_rule="standard"``) 3+ Q or 3+ K in the pool: the
    whole pack is reshuffled (``deck_rng``) and dealt again. Exactly 1 J: it is buried in the stock at a
    uniformly random position below the stock's top card (``chance_rng``) and the stock's top card
    replaces it in the pool; a replacement J, or a now-forbidden Q/K count, redeals. When both hands are
    empty and the stock is not, 4 more to the non-dealer, then 4 to the dealer: 6 hands per round, the
    sixth is the *final deal* (PA-6). The non-dealer plays first; the dealer alternates every round.

Turn (§2b, §2c)
    PLAY: any card in hand (mandatory capture is per card, PA-1). The card's capture options:
      * numeric c: each subset S of the pool's numeric cards with value(c) + Σ value(S) = 11 (PA-2, PA-3);
      * K / Q: each pool card of the same rank (one card per capture);
      * J: a single option, every numeric card and jack in the pool (PA-4); with none, it trails.
    No option: the card trails onto the pool. One option: it is captured at once. Two or more: SELECT.
    SELECT: TAKE(x) picks the next pool card of the capture, in increasing card-id order (§2h), until one
    option is left; that option is captured.
    Sur (PA-6, PA-7): a non-J capture that empties the pool in hands 1-5 (also the final hand with
    ``sur_on_final_deal``). With ``sur_cancellation`` a sur cancels one of the opponent's net surs if they
    have any, else it is the capturer's. With ``sur_cap`` a player whose match total at the START of the
    round is at least ``sur_cap_threshold`` is capped: their sweep neither scores nor cancels (PA-8).
    ROUND_END (forced): the pool goes to the last capturer, never a sur (PA-9); nobody captured: the
    cards go unscored.

Scoring (§2d): 7+ clubs 7, ``TD`` 3, ``2C`` 2, each A and J 1 (card points total 20), each net sur
    ``sur_value``. After a round in which someone reaches ``target_score`` the higher total wins; equal
    totals play another round (``tie_rule="extra_round"``) or draw (``"draw"``). ``max_rounds`` truncates:
    the higher total wins, a tie is a draw. One "deal" of the core (``_end_deal``, ``deals_completed``,
    ``episode="deal"``) is one Pâsur round.

Actions: ``Discrete(104)`` (§2h)

    =========  ==============================================  ===========================
    0-51       PLAY(card id)                                    PLAY: the cards in hand
    52-103     TAKE(pool card id = action - 52)                 SELECT: the next pick
    =========  ==============================================  ===========================

    Text (``describe_action``): ``"7H takes 4C"`` for a capture decided by the play itself (``" (sur)"`` is
    added for a counting sur), ``"play 6D"`` when a choice follows, ``"7H trails"`` for a trail,
    ``"take 5S"`` in SELECT. ``parse_action`` also accepts the bare card (``"7H"``, ``"5S"``), ``"play 7H"``,
    and in SELECT the finished capture (``"6D takes 5S"``) for the pick that completes it.

Observation (§2i), relative to the observer; all values within [0, 10] (ratios clipped) but the appraisal's:

    =======================================================================================  ===========
    own hand; pool; my captured cards; opponent's captured cards; unseen cards (multi-hot)   5×52   0
    clubs captured by me / 13, by the opponent / 13; net surs mine / 5, theirs / 5;          6      260
      points so far this round (cards + haft khâj if 7+ clubs + surs) mine / 20, theirs / 20
    hand number 1-6 (one-hot); final-deal flag; stock / 40; opponent's hand size / 4;        12     266
      last capturer (me, opponent, none)
    match totals / target, mine and theirs; sur-cap flags mine and theirs; I am the dealer   5      278
    phase (PLAY, SELECT); card being played (one-hot); cards picked so far (multi-hot);     2+52+52+1  283
      remaining sum to 11 / 10 (numeric card in SELECT only)
    per action, my turn only: what it takes and leaves (appraisal.py), 104 rows of 10        1040   390
    =======================================================================================  ===========

    ``observation="appraised"`` (the default, length 1430: the shipped bots read it) is every block;
    ``observation="plain"`` (length 390, ``PLAIN_OBS_SIZE``) is the same without the per-action appraisal.
    "Unseen" is every card not in my hand, the pool, a captured pile or being played: the opponent's hand
    and the stock (a buried jack included).

Decisions beyond docs/rules.md
    * The pool keeps the order cards arrived in; the text of a capture lists the taken cards in pool order
      (E1: ``"JD takes 3H AC"``); ``parse_action`` also accepts them in card-id order.
    * ``sur_cap_threshold`` must not exceed ``target_score`` when given; when it is left at its default
      (50) and the target is lower, it becomes the target.
    * A SELECT step whose candidates all share the next pick has one legal TAKE; like any single choice it
      is applied by the engine under ``skip_single_choice`` and offered as an action otherwise (C-4).
    * Observation ratios (match totals / target, surs / 5, points / 20) are clipped at 10.
    * "Points so far this round" count captured card points, the haft khâj once a player holds 7 clubs,
      and net surs; the leftover pool is not counted before it is taken (PA-9).
    * Hidden information (``determinize``): a buried jack is in the stock during hand 1 (the hands are dealt
      before the pool, §2a), anywhere unseen from hand 2 on. No play shows anything about the opponent's
      hand: any card may be played (PA-1); what it captures depends on the card and the public pool only.

Speed: capture options depend only on the played value and the values of the pool's numeric cards in
card-id order, so their enumeration is cached per such pool shape (E3's 100 options are computed once).

``to_dict()`` keys: ``game``, ``settings``, ``players``, ``dealer``, ``current_player``, ``phase``, ``hands`` (per seat,
sorted), ``pool`` (arrival order), ``stock`` (top first), ``captured`` (per seat, in capture order),
``surs`` (net, per seat), ``sur_capped`` (per seat), ``last_capturer``, ``hand_number``, ``selecting``
(``None`` or ``{"card", "picked", "options"}``), ``turns`` (this round's finished plays, each
``{"player", "card", "took", "sur", "text"}`` with ``sur`` one of ``None``, ``"sur"``, ``"cancel"``,
``"capped"``), ``leftover`` (``None`` or ``{"player", "cards"}`` once the round ended), ``buried_jacks``
and ``redeals`` (this round's deal), ``round_start_scores``, ``scores``, ``deals_completed`` (rounds completed),
``terminal``, ``truncated``, ``winners``.
"""

from __future__ import annotations

import random
import struct

import numpy as np

from ..core.cards import ACE, JACK, KING, NUM_CARDS, QUEEN, card_str, cards_str
from ..core.docs import ActionRange, ObsBlock, fixed_offsets
from ..core.engine import Game, Move, State
from ..core.rng import seeded, shuffle
from ..core.settings import Choice, Flag, Int, Settings, SettingsSpec, common_settings, observation_setting

from . import appraisal
from .tables import (PLAY, TAKE, NUM_ACTIONS, PHASE_PLAY, PHASE_SELECT, PHASE_NAMES, HAND, HANDS_PER_ROUND,
                     STOCK_SIZE, MOVE_FEATURES, OBS_SIZE, PLAIN_OBS_SIZE, TWO_CLUBS, TEN_DIAMONDS, HAFT_KHAJ,
                     HAFT_KHAJ_POINTS, CARD_POINTS, IS_CLUB, NOT_RANK, QUEENS_KINGS, RANK_OF,
                     RANK, RANK_UNIT)  # noqa: F401 (names of the rules, also imported from here)


def _enumerate_subsets(values: tuple, target: int) -> tuple:
    """Index tuples (increasing, sorted) of the subsets of ``values`` (card values, each >= 1) that sum
    to ``target``."""
    out = []
    n = len(values)

    def walk(start: int, left: int, chosen: tuple) -> None:
        for i in range(start, n):
            v = values[i]
            if v == left:
                out.append(chosen + (i,))
            elif v < left:
                walk(i + 1, left - v, chosen + (i,))

    walk(0, target, ())
    return tuple(sorted(out))


#: (target, values of the candidate pool cards in card-id order) -> _enumerate_subsets; capture options
#: depend only on this key, so the enumeration runs once per distinct pool shape (bounded; cleared when full)
_SUBSETS: dict = {}
_SUBSETS_MAX = 200_000


def sum_subsets(values: tuple, target: int) -> tuple:
    """Index tuples (increasing) of the subsets of ``values`` (card values, each >= 1) that sum to
    ``target``: the numeric captures of §2b, for the engine and for players that plan captures. Cached per
    ``(target, values)``."""
    found = _SUBSETS.get((target, values))
    if found is None:
        if len(_SUBSETS) >= _SUBSETS_MAX:
            _SUBSETS.clear()
        found = _SUBSETS[(target, values)] = _enumerate_subsets(values, target)
    return found

#: (target, the pool's numeric cards of value <= target in card-id order, as bytes) -> capture options (card-id
#: tuples): a card's options depend on these alone (bounded: cleared when full, a few MB at most)
_OPTIONS: dict = {}
_OPTIONS_MAX = 30_000
# for bytes.translate's delete: the cards of a value above each target (value = rank + 1)
_VALUE_ABOVE = [bytes(c for c in range(NUM_CARDS) if RANK[c] >= target) for target in range(11)]

SETTINGS = SettingsSpec("pasur", [
    Int("target_score", 62, 20, 200, doc="the match ends after a round in which someone reaches it (§2d)"),
    Int("sur_value", 5, 0, 10, doc="points of a net sur"),
    Flag("sur_on_final_deal", False, doc="PA-6"),
    Flag("sur_cancellation", True, doc="a sur cancels one of the opponent's net surs (PA-7)"),
    Flag("sur_cap", False, doc="PA-8: a player on sur_cap_threshold or more at the round's start scores no sur"),
    Int("sur_cap_threshold", 50, 1, 200, doc="at most target_score"),
    Choice("redeal_rule", "standard", ("standard", "jacks_only"), doc="PA-5"),
    Choice("tie_rule", "extra_round", ("extra_round", "draw"), doc="equal totals at the end: another round, or a draw"),
    *common_settings("max_rounds", 30, 200),
    observation_setting(appraised=True),
])


class PasurGame(Game):
    name = "pasur"
    version = 1
    settings_spec = SETTINGS
    obs_low = -10.0
    obs_high = 10.0
    cap_setting = "max_rounds"
    space_settings = ("observation",)
    action_feature_size = MOVE_FEATURES

    # ----- documentation page (envs/core/docs.py) ---------------------------------------------------------
    title = "Pâsur"
    rules_section = "§2"
    summary = ("Pâsur (Haft-o Chahâr Yâzdah, \"seven and four, eleven\") is a Persian fishing game for 2 players "
               "with one 52-card pack. A numeric card captures pool cards whose values bring the sum to 11, a K "
               "takes a K, a Q a Q, and a J sweeps every numeric card and jack; emptying the pool with a non-jack "
               "capture is a *sur*. Players score clubs (7 or more), 10♦, 2♣, aces, jacks and surs; the first to "
               "`target_score` (62) after a round wins. One core \"deal\" is one Pâsur round.")
    doc_tables = [dict()]
    action_ranges = [
        ActionRange(PLAY, PLAY + NUM_CARDS - 1, "PLAY(card id): play a card from hand (13·suit + rank)", ("PLAY",),
                    text="`\"7H takes 4C\"`, `\"7H takes 4C (sur)\"`, `\"play 6D\"`, `\"7H trails\"`"),
        ActionRange(TAKE, TAKE + NUM_CARDS - 1, "TAKE(pool card id = action − 52): the next pool card of the "
                    "capture being chosen, in increasing card-id order (§2h)", ("SELECT",), text="`\"take 5S\"`"),
    ]
    action_notes = ("PLAY: any card in hand (mandatory capture is per card, PA-1). A card with no capture option "
                    "trails, one with exactly one is captured at once, one with several opens SELECT, where TAKE "
                    "picks the capture's cards until one option is left. `parse_action` also accepts the bare card "
                    "(`\"7H\"`, `\"5S\"`), `\"play 7H\"`, and in SELECT the finished capture (`\"6D takes 5S\"`) "
                    "for the pick that completes it.")
    observation_blocks = [
        ObsBlock("own hand (multi-hot)", NUM_CARDS, "0 or 1"),
        ObsBlock("pool (multi-hot)", NUM_CARDS, "0 or 1", key="pool"),
        ObsBlock("my captured cards (multi-hot)", NUM_CARDS, "0 or 1", key="mine"),
        ObsBlock("opponent's captured cards (multi-hot)", NUM_CARDS, "0 or 1", key="theirs"),
        ObsBlock("unseen cards (multi-hot): not in my hand, the pool, a captured pile or being played",
                 NUM_CARDS, "0 or 1", key="unseen"),
        ObsBlock("clubs captured, mine and the opponent's", 2, "/ 13", key="clubs"),
        ObsBlock("net surs, mine and the opponent's", 2, "/ 5, clipped at 10"),
        ObsBlock("points so far this round (cards + haft khâj once 7+ clubs + surs), mine and theirs", 2,
                 "/ 20, clipped at 10"),
        ObsBlock("hand number 1-6 (one-hot)", HANDS_PER_ROUND, "0 or 1", key="hand_number"),
        ObsBlock("final-deal flag (hand 6)", 1, "0 or 1", key="final"),
        ObsBlock("stock size", 1, "cards / 40", key="stock"),
        ObsBlock("opponent's hand size", 1, "cards / 4"),
        ObsBlock("last capturer: me, the opponent, none (one-hot)", 3, "0 or 1", key="last_capturer"),
        ObsBlock("match totals, mine and the opponent's", 2, "/ `target_score`, clipped at 10", key="totals"),
        ObsBlock("sur-cap flags, mine and the opponent's (PA-8)", 2, "0 or 1", key="sur_cap"),
        ObsBlock("I am the dealer", 1, "0 or 1", key="dealer"),
        ObsBlock("phase (one-hot PLAY, SELECT; all zero when the game is over)", 2, "0 or 1", key="phase"),
        ObsBlock("card being played (one-hot, SELECT only)", NUM_CARDS, "0 or 1", key="played"),
        ObsBlock("cards picked so far (multi-hot, SELECT only)", NUM_CARDS, "0 or 1", key="picked"),
        ObsBlock("remaining sum to 11 (a numeric card in SELECT only)", 1, "/ 10", key="remaining"),
        ObsBlock("per action (104 rows of 10, zero for illegal actions): what it takes and leaves "
                 "(envs/pasur/appraisal.py): value taken, card points taken, sur, capture, jack (hands 1-5), "
                 "jack (final hand), jack sweep, value trailed, the opponent's expected best reply on the pool "
                 "left, the leftover pool at the round's last play (+ mine, − theirs); a card's row is its most "
                 "valuable capture, a TAKE's the most valuable capture still reachable through it",
                 NUM_ACTIONS * MOVE_FEATURES, "points / 5", key="moves", appraisal=True),
    ]
    observation_kinds_note = ("The appraised observation is the default because the shipped Pâsur bots read it: their "
                              "action-feature head scores every move from its row (docs/bots.md), and a bot trained "
                              "before the `observation` setting existed is held to it. The plain one has v0's blocks: "
                              "for training from the view alone, and cheaper, since no appraisal is computed for it.")
    observation_notes = ("Hidden: the opponent's hand and the stock order; \"unseen\" is the opponent's hand and "
                         "the stock together (a buried jack included).")
    rewards_note = ("Deal (round) points (§2d): 7 for 7 or more clubs (haft khâj), 3 for 10♦, 2 for 2♣, 1 per A "
                    "and J (card points total 20), `sur_value` per net sur. After a round in which someone reaches "
                    "`target_score` the higher total wins; `tie_rule` decides equal totals; `max_rounds` "
                    "truncates.")
    version_history = [(0, "first release"),
                       (1, "observation: what every legal action takes and leaves (10 numbers each); "
                           "v1 also offers the observation without the appraisal (v0's blocks) as "
                           "`observation=\"plain\"` (a setting; the appraised one stays the default, so the bots "
                           "and playthroughs of v1 are unchanged)")]

    def __init__(self, **settings):
        self._explicit = set(settings)
        super().__init__(**settings)
        if self.appraised:     # the appraised observation's divisor in float32 (PasurState._observation)
            self.obs_divisor = np.ones(self.observation_size, dtype=np.float32)
            self.obs_divisor[OBS_MOVES:] = appraisal.FEATURE_SCALE

    def house_settings(self) -> list[str]:
        """The settings in force, in words, for the player guide (envs/core/guide.py)."""
        s = self.settings
        out = ["2 players", f"the first to {s.target_score} points after a round wins", f"a sur: {s.sur_value}",
               "a sur is possible in the final hand" if s.sur_on_final_deal else "no sur in the final hand",
               "a sur cancels one of the opponent's surs" if s.sur_cancellation else "surs are never cancelled"]
        if s.sur_cap:
            out.append(f"a player with {s.sur_cap_threshold} points or more when a round starts scores no sur in it")
        out += ["a pool is dealt again for two jacks" + ("" if s.redeal_rule == "jacks_only"
                                                         else ", three queens or three kings"),
                "equal totals at the end " + ("play another round" if s.tie_rule == "extra_round" else "are a draw"),
                f"at most {s.max_rounds} rounds"]
        return out

    def _configure(self) -> None:
        s = self.settings
        if s.sur_cap_threshold > s.target_score:
            if "sur_cap_threshold" in self._explicit:
                raise ValueError(f"setting 'sur_cap_threshold': {s.sur_cap_threshold!r} is not allowed with "
                                 f"target_score={s.target_score}; allowed: 1 to target_score")
            self.settings = Settings({**s, "sur_cap_threshold": s.target_score})
        self.num_players = 2
        self.num_actions = NUM_ACTIONS
        self.observation_size = OBS_SIZE


# observation offsets, from the blocks' sizes (docs/envs/pasur.md lists the blocks)
_OFFSETS = fixed_offsets(PasurGame.observation_blocks)
# (the last block, "moves", is written by State._write_action_rows: the appraised observation's end; the plain
# observation stops where it starts)
(OBS_POOL, OBS_MINE, OBS_THEIRS, OBS_UNSEEN, OBS_CLUBS, OBS_HAND_NUMBER, OBS_FINAL, OBS_STOCK, OBS_LAST_CAPTURER,
 OBS_TOTALS, OBS_SUR_CAP, OBS_DEALER, OBS_PHASE, OBS_PLAYED, OBS_PICKED, OBS_REMAINING, OBS_MOVES) = (
    _OFFSETS[k] for k in ("pool", "mine", "theirs", "unseen", "clubs", "hand_number", "final", "stock",
                          "last_capturer", "totals", "sur_cap", "dealer", "phase", "played", "picked", "remaining",
                          "moves"))
assert OBS_MOVES == PLAIN_OBS_SIZE and OBS_SIZE == OBS_MOVES + NUM_ACTIONS * MOVE_FEATURES

OBS_OPP_HAND = OBS_STOCK + 1                    # the opponent's hand size

# The observation as float32 bytes (PasurState._views and _observation)
#: a seat's view (the observation up to its phase block) before any card is placed: every card unseen
_VIEW_START = np.array([OBS_UNSEEN <= i < OBS_UNSEEN + NUM_CARDS for i in range(OBS_PHASE)], np.float32).tobytes()
#: the phase block (OBS_PHASE .. OBS_MOVES) in a PLAY decision (its flag, nothing selected), once the game is over
_PHASE_PLAY = np.eye(1, OBS_MOVES - OBS_PHASE, dtype=np.float32).tobytes()
_PHASE_OVER = bytes(4 * (OBS_MOVES - OBS_PHASE))
_NO_MOVES = bytes(4 * (OBS_SIZE - OBS_MOVES))   # the appraisal block of a seat not to move
_ROW = 4 * MOVE_FEATURES                        # an action's row in the appraisal block, in bytes
_AT_MOVES = 4 * OBS_MOVES                       # the appraisal block's first byte
_PACK_ROW_INTO = struct.Struct(f"={MOVE_FEATURES}f").pack_into      # an appraisal row, into the bytes
# runs of numbers written into a view by struct (float32, rounded as NumPy rounds; flags as 0 or 1)
_PACK_HAND = struct.Struct(f"={HANDS_PER_ROUND + 3}f")   # OBS_HAND_NUMBER: hand number, final deal, stock, their hand
_PACK_ROUND = struct.Struct("=5f")              # OBS_TOTALS: match totals, sur-cap flags, I am the dealer
_PACK_LAST = struct.Struct("=3f")               # OBS_LAST_CAPTURER: me, the opponent, none
assert (OBS_FINAL == OBS_HAND_NUMBER + HANDS_PER_ROUND and OBS_STOCK == OBS_FINAL + 1
        and OBS_SUR_CAP == OBS_TOTALS + 2 and OBS_DEALER == OBS_SUR_CAP + 2)


class PasurState(State):

    deal_word = "round"
    # _views (State): each seat's observation up to its phase block, kept up to date by the moves; ``None`` until
    # first read in a round (see _build_views)

    # ----- the round deal (§2a, PA-5) ---------------------------------------------------------------
    def _start_deal(self, deck: list[int] | None) -> None:
        s = self.settings
        standard = s.redeal_rule == "standard"
        self.redeals = 0
        while True:
            deck = self._deal_order(deck)
            pool = deck[8:12]
            stock = deck[12:]                       # top first for now
            buried = []
            ranks = [c % 13 for c in pool]
            ok = ranks.count(JACK) <= 1 and not (standard and (ranks.count(QUEEN) >= 3 or ranks.count(KING) >= 3))
            if ok and JACK in ranks:                # PA-5: bury the single jack, replace it from the stock
                i = ranks.index(JACK)
                jack = pool[i]
                stock.insert(self.chance_rng.randint(1, len(stock)), jack)
                pool[i] = stock.pop(0)
                buried.append(jack)
                ranks = [c % 13 for c in pool]
                ok = JACK not in ranks and not (standard and (ranks.count(QUEEN) >= 3 or ranks.count(KING) >= 3))
            if ok:
                break
            self.redeals += 1                       # PA-5: reshuffle everything from the deck stream
            deck = None
        non_dealer = 1 - self.dealer
        self.hands = [None, None]
        self.hands[non_dealer] = sorted(deck[0:4])
        self.hands[self.dealer] = sorted(deck[4:8])
        self.pool = pool
        self.stock = stock[::-1]                    # top of the stock at the end, so pop() draws it
        self.buried_jacks = buried
        self.captured = [[], []]
        self.clubs = [0, 0]
        self.points = [0, 0]                        # card points captured this round (clubs bonus apart)
        self.surs = [0, 0]                          # net surs this round (own counts without cancellation)
        self.round_start_scores = list(self.scores)
        cap = s.sur_cap
        self.sur_capped = [cap and sc >= s.sur_cap_threshold for sc in self.scores]   # PA-8
        self.last_capturer: int | None = None
        self.hand_number = 1
        self.turns: list[tuple] = []                # (player, card, taken cards in pool order, sur)
        self.leftover: tuple | None = None          # (player or None, cards) once the round ended
        self.phase = PHASE_PLAY
        self.sel_card = -1
        self.picked: list[int] = []
        self.cand: list[tuple] = []
        self.sel_legal: list[int] = []
        self.current_player = non_dealer
        self._views = None                          # a new round: built when first read
        if self.move_log is not None:
            why = (f"; {self.redeals} redeal{'s' if self.redeals > 1 else ''} first (too many jacks, queens or "
                   f"kings in the pool)" if self.redeals else "")
            self._log_event(f"round {self.deals_completed + 1}: player {self.dealer} deals{why}")
            for jack in buried:
                self._log_event(f"{card_str(jack)} turned up in the pool: a jack is buried in the stock, and the "
                                f"stock's top card replaces it")
            self._log_hands(f"4 cards to each player, pool {' '.join(cards_str(pool))}")

    # ----- capture options (§2b) --------------------------------------------------------------------
    def capture_options(self, card: int) -> list[tuple]:
        """The capture options of ``card`` against the current pool, each a tuple of pool card ids in
        increasing id order; the list sorted. A J has at most one option (its sweep); none means a trail."""
        # the pool's cards of a kind are picked by bytes.translate's delete (one C call, not a loop)
        r = RANK[card]
        if r < JACK:
            target = 10 - r                         # 11 - value, value = rank + 1
            cs = bytes(self.pool).translate(None, _VALUE_ABOVE[target])   # the numeric cards of value <= target
            if not cs:
                return []
            key = (target, bytes(sorted(cs)))       # in card-id order
            found = _OPTIONS.get(key)
            if found is None:
                if len(_OPTIONS) >= _OPTIONS_MAX:
                    _OPTIONS.clear()
                cs = key[1]
                found = _OPTIONS[key] = tuple([tuple([cs[i] for i in o])
                                               for o in sum_subsets(tuple([RANK[x] + 1 for x in cs]), target)])
            return list(found)
        if r == JACK:
            take = bytes(self.pool).translate(None, QUEENS_KINGS)   # every numeric card and jack
            return [tuple(sorted(take))] if take else []
        return [(x,) for x in sorted(bytes(self.pool).translate(None, NOT_RANK[r]))]

    # ----- legal actions and play (§2c, §2h) --------------------------------------------------------
    def legal_actions(self) -> list[int]:
        if self.current_player is None:
            return []
        if self.phase == PHASE_PLAY:
            return self.hands[self.current_player][:]
        return self.sel_legal[:]

    def _legal_view(self) -> list[int]:
        return self.hands[self.current_player] if self.phase == PHASE_PLAY else self.sel_legal

    def _is_legal(self, action: int) -> bool:
        if self.phase == PHASE_PLAY:
            return action in self.hands[self.current_player]
        return action in self.sel_legal

    def _apply(self, action: int) -> None:
        if action < TAKE:
            self._play(action)
        else:
            self._take(action - TAKE)

    def _play(self, card: int) -> None:
        p = self.current_player
        hand = self.hands[p]
        hand.remove(card)
        views = self._views
        if views is not None:                      # out of my hand; the opponent sees it (trail, capture, SELECT)
            self._public_count += 1
            self._public_units += RANK_UNIT[card]
            views[p][card] = 0.0
            theirs = views[1 - p]
            theirs[OBS_UNSEEN + card] = 0.0
            theirs[OBS_OPP_HAND] = len(hand) / HAND
        opts = self.capture_options(card)
        if not opts:                               # trail (I4: no option existed)
            self.pool.append(card)
            if views is not None:
                views[0][OBS_POOL + card] = views[1][OBS_POOL + card] = 1.0
            self.turns.append((p, card, (), None))
            self._next_turn(p)
        elif len(opts) == 1:                       # forced capture
            self._capture(p, card, opts[0])
        else:                                      # a choice: SELECT (§2h)
            self.phase = PHASE_SELECT
            self.sel_card = card
            self.picked = []
            self.cand = opts
            self.sel_legal = sorted({TAKE + o[0] for o in opts})

    def _take(self, x: int) -> None:
        picked = self.picked
        picked.append(x)
        k = len(picked)
        cand = [o for o in self.cand if o[k - 1] == x]
        if len(cand) == 1:
            card = self.sel_card
            self.phase = PHASE_PLAY
            self.sel_card = -1
            self.picked = []
            self.cand = []
            self.sel_legal = []
            self._capture(self.current_player, card, cand[0])
        else:
            self.cand = cand
            self.sel_legal = sorted({TAKE + o[k] for o in cand})

    def _sur_kind(self, p: int, card: int, option: tuple) -> str | None:
        """What a capture of ``option`` by ``card`` does for surs (PA-6, PA-7, PA-8)."""
        if RANK[card] == JACK or len(option) != len(self.pool):
            return None
        if self.hand_number == HANDS_PER_ROUND and not self.settings.sur_on_final_deal:
            return None
        if self.sur_capped[p]:
            return "capped"
        if self.settings.sur_cancellation and self.surs[1 - p] > 0:
            return "cancel"
        return "sur"

    def _capture(self, p: int, card: int, option: tuple) -> None:
        pool = self.pool
        sur = None                                 # only a sweep may be a sur (_sur_kind)
        if len(option) == len(pool):
            sur = self._sur_kind(p, card, option)
            taken = tuple(pool)
            self.pool = []
        elif len(option) == 1:
            taken = option
            pool.remove(option[0])
        else:
            taken = tuple([x for x in pool if x in option])
            self.pool = [x for x in pool if x not in option]
        cap = self.captured[p]
        cap.append(card)
        cap.extend(taken)
        clubs, points = IS_CLUB[card], CARD_POINTS[card]
        for x in taken:
            clubs += IS_CLUB[x]
            points += CARD_POINTS[x]
        self.clubs[p] += clubs
        self.points[p] += points
        last = self.last_capturer
        self.last_capturer = p
        if sur == "sur":
            self.surs[p] += 1
        elif sur == "cancel":                      # sur cancellation
            self.surs[1 - p] -= 1
        views = self._views
        if views is not None:                      # from the pool (and the hand) to my pile; I captured last
            mine, theirs = views[p], views[1 - p]
            mine[OBS_MINE + card] = theirs[OBS_THEIRS + card] = 1.0
            for x in taken:
                mine[OBS_POOL + x] = theirs[OBS_POOL + x] = 0.0
                mine[OBS_MINE + x] = theirs[OBS_THEIRS + x] = 1.0
            if clubs or points or sur:
                self._write_scores(views, p)
                if sur == "cancel":
                    self._write_scores(views, 1 - p)
            if last != p:
                _PACK_LAST.pack_into(mine, 4 * OBS_LAST_CAPTURER, 1.0, 0.0, 0.0)     # me
                _PACK_LAST.pack_into(theirs, 4 * OBS_LAST_CAPTURER, 0.0, 1.0, 0.0)   # the opponent
        self.turns.append((p, card, taken, sur))
        self._next_turn(p)

    def _next_turn(self, p: int) -> None:
        hands = self.hands
        if not hands[0] and not hands[1]:
            if self.stock:
                stock = self.stock
                non_dealer = 1 - self.dealer
                hands[non_dealer] = sorted([stock.pop(), stock.pop(), stock.pop(), stock.pop()])
                hands[self.dealer] = sorted([stock.pop(), stock.pop(), stock.pop(), stock.pop()])
                self.hand_number += 1
                views = self._views
                if views is not None:              # each seat sees its new cards, the hand number moves on
                    for seat in (0, 1):
                        view = views[seat]
                        for c in hands[seat]:
                            view[c] = 1.0
                            view[OBS_UNSEEN + c] = 0.0
                    self._write_hand(views)
                if self.move_log is not None:
                    final = " (the final hand: no sur)" if (self.hand_number == HANDS_PER_ROUND
                                                           and not self.settings.sur_on_final_deal) else ""
                    self._log_hands(f"hand {self.hand_number} of {HANDS_PER_ROUND}: 4 cards to each player, "
                                    f"{len(stock)} left in the stock{final}")
            else:
                self._round_end()
                return
        self.current_player = 1 - p

    # ----- round end and scoring (§2d) --------------------------------------------------------------
    def _log_hands(self, text: str) -> None:
        """A deal of new hands as a table event; each player also reads its own cards."""
        self._log_event(text, {p: f"{text}; your cards: {' '.join(cards_str(h))}" for p, h in enumerate(self.hands)})

    def _round_end(self) -> None:
        lc = self.last_capturer
        left = self.pool
        if left and self.move_log is not None:
            cards = " ".join(cards_str(left))
            self._log_event(f"the pool's last cards ({cards}) go to player {lc}, the last to capture"
                            if lc is not None else f"nobody captured this round: the pool ({cards}) goes unscored")
        self.leftover = (lc, tuple(left))
        if lc is not None and left:                # PA-9: no sur
            self.captured[lc].extend(left)
            self.clubs[lc] += sum(IS_CLUB[x] for x in left)
            self.points[lc] += sum(CARD_POINTS[x] for x in left)
            self.pool = []
            views = self._views
            if views is not None:                  # from the pool to the last capturer's pile
                mine, theirs = views[lc], views[1 - lc]
                for x in left:
                    mine[OBS_POOL + x] = theirs[OBS_POOL + x] = 0.0
                    mine[OBS_MINE + x] = theirs[OBS_THEIRS + x] = 1.0
                self._write_scores(views, lc)
        s = self.settings
        cap = self.captured
        seven = [HAFT_KHAJ_POINTS if c >= HAFT_KHAJ else 0 for c in self.clubs]
        card_points = [self.points[i] + seven[i] for i in range(2)]
        sur_points = [n * s.sur_value for n in self.surs]
        breakdown = {
            "cards": [len(c) for c in cap],
            "clubs": list(self.clubs),
            "seven_clubs": seven,
            "ten_diamonds": [3 if TEN_DIAMONDS in c else 0 for c in cap],
            "two_clubs": [2 if TWO_CLUBS in c else 0 for c in cap],
            "aces": [bytes(c).translate(RANK_OF).count(ACE) for c in cap],
            "jacks": [bytes(c).translate(RANK_OF).count(JACK) for c in cap],
            "surs": list(self.surs),
            "sur_points": sur_points,
            "card_points": card_points,
        }
        self.phase = PHASE_PLAY
        self._end_deal([card_points[i] + sur_points[i] for i in range(2)], breakdown)
        if not self.is_terminal:
            self.dealer = 1 - self.dealer          # the dealer changes every round
            self._start_deal(None)
        elif self._views is not None:              # the match totals after the round
            for seat in (0, 1):
                self._write_round(self._views[seat], seat)

    def round_points(self, seat: int) -> int:
        """Points of ``seat`` so far this round: captured card points, the haft khâj once 7+ clubs, surs."""
        return (self.points[seat] + (HAFT_KHAJ_POINTS if self.clubs[seat] >= HAFT_KHAJ else 0)
                + self.surs[seat] * self.settings.sur_value)

    # ----- views ------------------------------------------------------------------------------------
    def _build_views(self) -> list:
        """Each seat's view (``_views``): its observation up to the phase block, as float32 in a bytearray written
        through a memoryview, which _observation joins with the phase and appraisal blocks.

        Written from scratch, an observation costs more than the rest of a step (a seen card is two writes, and
        some 30 are seen), while a move changes a few cards and numbers: so the moves keep both views up to date
        (_play, _capture, _next_turn, _round_end), and the views are built here only when first read in a round,
        or when the state has changed other than by its moves since they were (its version moved on without them:
        a state changed by hand must bump ``_version``, as for the appraisal). A clone, a re-dealt world
        (determinize) and an unpickled state have none, so a search's copies pay nothing for them."""
        views = []
        unseen = OBS_UNSEEN
        for seat in (0, 1):
            opp = 1 - seat
            view = memoryview(bytearray(_VIEW_START)).cast("f")
            for c in self.hands[seat]:              # a seen card: marked in its block, no longer unseen
                view[c] = 1.0
                view[unseen + c] = 0.0
            for at, cards in ((OBS_POOL, self.pool), (OBS_MINE, self.captured[seat]), (OBS_THEIRS, self.captured[opp])):
                for c in cards:
                    view[at + c] = 1.0
                    view[unseen + c] = 0.0
            if self.sel_card >= 0:                  # the card being played is not unseen either
                view[unseen + self.sel_card] = 0.0
            lc = self.last_capturer
            view[OBS_LAST_CAPTURER + (2 if lc is None else (0 if lc == seat else 1))] = 1.0
            self._write_round(view, seat)
            views.append(view)
        self._write_scores(views, 0)
        self._write_scores(views, 1)
        self._write_hand(views)
        self._public_count, self._public_units = self._count_public()
        self._views = views
        self._views_version = self._version
        return views

    def public_ranks(self) -> tuple[int, int]:
        """(how many, their ``RANK_UNIT`` sum) of the cards face up on the table this round: the pool, both
        captured piles and the card being played (what the appraisal's knowledge counts besides a hand). Kept by
        the moves along with the views (only a play puts a card face up: a capture moves cards between face-up
        places), counted from the cards otherwise."""
        if self._views is not None and self._views_version == self._version:
            return self._public_count, self._public_units
        return self._count_public()

    def _count_public(self) -> tuple[int, int]:
        public = self.pool + self.captured[0] + self.captured[1] + ([self.sel_card] if self.sel_card >= 0 else [])
        return len(public), sum(map(RANK_UNIT.__getitem__, public))

    def _write_scores(self, views: list, seat: int) -> None:
        """``seat``'s clubs, surs and round points into both seats' views (its own "mine", the other's "theirs")."""
        clubs, surs = self.clubs[seat], self.surs[seat]
        mine, theirs = views[seat], views[1 - seat]
        mine[OBS_CLUBS] = theirs[OBS_CLUBS + 1] = clubs / 13
        mine[OBS_CLUBS + 2] = theirs[OBS_CLUBS + 3] = min(surs / 5, 10.0)
        mine[OBS_CLUBS + 4] = theirs[OBS_CLUBS + 5] = min(
            (self.points[seat] + (HAFT_KHAJ_POINTS if clubs >= HAFT_KHAJ else 0) + surs * self.settings.sur_value) / 20,
            10.0)

    def _write_round(self, view, seat: int) -> None:
        """The match totals, the sur-cap flags and the dealer flag (the round's own numbers) into ``seat``'s view."""
        target, scores, capped = self.settings.target_score, self.scores, self.sur_capped
        _PACK_ROUND.pack_into(view, 4 * OBS_TOTALS, min(scores[seat] / target, 10.0),
                              min(scores[1 - seat] / target, 10.0), capped[seat], capped[1 - seat], self.dealer == seat)

    def _write_hand(self, views: list) -> None:
        """The hand number (one-hot), the final-deal flag, the stock and the opponent's hand size, into both seats'
        views."""
        hn = self.hand_number
        flags = [hn == k for k in range(1, HANDS_PER_ROUND + 1)] + [hn == HANDS_PER_ROUND, len(self.stock) / STOCK_SIZE]
        for seat in (0, 1):
            _PACK_HAND.pack_into(views[seat], 4 * OBS_HAND_NUMBER, *flags, len(self.hands[1 - seat]) / HAND)

    def _observation(self, seat: int) -> np.ndarray:
        # the seat's view, the phase block and (appraised) the appraisal block, joined as float32 bytes that NumPy
        # then reads in place
        views = self._views
        if views is None or self._views_version != self._version:
            views = self._build_views()
        if self.phase == PHASE_SELECT:              # the card being played, the picks so far, the sum left
            phase = bytearray(_PHASE_OVER)
            numbers = memoryview(phase).cast("f")
            card = self.sel_card
            numbers[1] = 1.0                        # SELECT
            numbers[OBS_PLAYED - OBS_PHASE + card] = 1.0
            for x in self.picked:
                numbers[OBS_PICKED - OBS_PHASE + x] = 1.0
            if RANK[card] < JACK:
                numbers[OBS_REMAINING - OBS_PHASE] = (10 - RANK[card] - sum(RANK[x] + 1 for x in self.picked)) / 10
        else:
            phase = _PHASE_PLAY if self.current_player is not None else _PHASE_OVER
        if not self.game.appraised:
            return np.frombuffer(bytearray().join((views[seat], phase)), np.float32)
        out = bytearray().join((views[seat], phase, _NO_MOVES))
        obs = np.frombuffer(out, np.float32)
        if self.current_player == seat:             # what each of my legal actions takes and leaves
            rows = self.appraisal()
            if rows:
                # as State._write_action_rows writes them: each number rounded to float32 (struct rounds as NumPy
                # does), then divided by the scale in float32 (one NumPy division: x / 1 is x in the view) and
                # clipped to the bounds, which below UNCLIPPED_POOL no number can reach
                pack_row = _PACK_ROW_INTO
                for action, row in rows.items():
                    pack_row(out, _AT_MOVES + _ROW * action, *row)
                obs /= self.game.obs_divisor
                if len(self.pool) > appraisal.UNCLIPPED_POOL:
                    moves = obs[OBS_MOVES:]
                    np.minimum(moves, self.game.obs_high, out=moves)
                    np.maximum(moves, self.game.obs_low, out=moves)
        return obs

    def _appraise(self) -> dict:
        return appraisal.appraise(self)

    @staticmethod
    def _took_text(card: int, taken) -> str:
        return f"{card_str(card)} takes {' '.join(card_str(x) for x in taken)}"

    def _pool_order(self, option: tuple) -> tuple:
        return tuple(x for x in self.pool if x in option)

    _SUR_TEXT = {None: "", "sur": " (sur)", "cancel": " (sur: cancels one of the opponent's)",
                 "capped": " (a sweep, but no sur: capped)"}

    def forced_is_public(self, action: int) -> bool:
        """Any card in hand may be played (a forced play is a hand's last card, and hand sizes are public), and
        the captures a card allows follow from it and the pool, both face up: everyone sees a single choice."""
        return True

    def forced_note(self, action: int) -> str:
        # the last card of a hand, not the capture it makes (which may still be a choice: "play A♣, which can
        # take 5S or 3H 2D" is followed by the pick)
        return "last card" if action < TAKE else "only choice"

    def _logged_move(self, seat: int, action: int, forced: bool) -> Move:
        """A play says what it takes (or that it trails, or that a choice of capture follows); the pick that
        completes a capture is logged as the whole capture."""
        if action >= TAKE:
            x = action - TAKE
            k = len(self.picked)
            cand = [o for o in self.cand if o[k] == x]
            if len(cand) == 1:
                option = cand[0]
                text = (self._took_text(self.sel_card, self._pool_order(option))
                        + self._SUR_TEXT[self._sur_kind(seat, self.sel_card, option)])
            else:
                text = f"pick {card_str(x)} for {card_str(self.sel_card)}"
        else:
            opts = self.capture_options(action)
            if not opts:
                text = f"{card_str(action)} trails"
            elif len(opts) == 1:
                text = (self._took_text(action, self._pool_order(opts[0]))
                        + self._SUR_TEXT[self._sur_kind(seat, action, opts[0])])
            else:
                text = f"play {card_str(action)}, which can take " + " or ".join(
                    " ".join(cards_str(self._pool_order(o))) for o in opts)
        return Move(seat, action, text, forced, self.deals_completed)

    def describe_deal(self, report: dict) -> list[str]:
        """Per player: the round's points item by item (clubs, 10♦, 2♣, aces, jacks, surs) and the match total."""
        b = report["breakdown"]
        lines = [f"round {self.deals_completed} over"]
        for p in range(2):
            parts = [f"{b['cards'][p]} cards", f"{b['clubs'][p]} clubs" + (f" = {b['seven_clubs'][p]}"
                                                                          if b["seven_clubs"][p] else "")]
            if b["ten_diamonds"][p]:
                parts.append(f"10♦ {b['ten_diamonds'][p]}")
            if b["two_clubs"][p]:
                parts.append(f"2♣ {b['two_clubs'][p]}")
            for key in ("aces", "jacks"):
                if b[key][p]:
                    parts.append(f"{key} {b[key][p]}")
            if b["surs"][p]:
                k = b["surs"][p]
                parts.append(f"{k} sur{'s' if k > 1 else ''} {b['sur_points'][p]}")
            lines.append(f"  player {p}: {report['deal_points'][p]} points ({', '.join(parts)}); "
                         f"match total {report['scores'][p]} (target {self.settings.target_score})")
        return lines

    def _describe_action(self, action: int) -> str:
        if action >= TAKE:
            return f"take {card_str(action - TAKE)}"
        if self.phase == PHASE_SELECT or self.current_player is None \
                or action not in self.hands[self.current_player]:
            return f"play {card_str(action)}"
        opts = self.capture_options(action)
        if not opts:
            return f"{card_str(action)} trails"
        if len(opts) > 1:
            return f"play {card_str(action)}"
        text = self._took_text(action, self._pool_order(opts[0]))
        if self._sur_kind(self.current_player, action, opts[0]) in ("sur", "cancel"):
            text += " (sur)"
        return text

    def _action_aliases(self, action: int):
        c = card_str(action % NUM_CARDS)
        if action >= TAKE:                         # bare card; the finished capture for a completing pick
            out = [c]
            k = len(self.picked)
            done = [o for o in self.cand if o[k] == action - TAKE]
            if len(done) == 1:
                out.append(self._took_text(self.sel_card, done[0]))
                out.append(self._took_text(self.sel_card, self._pool_order(done[0])))
            return out
        out = [c, f"play {c}"]
        if self.phase == PHASE_PLAY:
            opts = self.capture_options(action)
            if len(opts) == 1:
                out.append(self._took_text(action, opts[0]))
        return out

    def _determinize(self, seat: int, rng: random.Random) -> "PasurState":
        """Re-deal what ``seat`` cannot see: the opponent's hand and the stock order. A buried jack (PA-5) is
        somewhere among them, at a uniformly random place, except in hand 1: the hands are dealt before the
        pool, so nobody's first hand can hold it and it is still in the stock (any place there). Every hand
        after the first comes from the stock below the burial, so from hand 2 on it may be anywhere unseen.
        No play tells anything about the opponent's hand (any card may be played, PA-1). The future chance
        (the next rounds' decks and burials) is drawn anew."""
        st = self.clone()
        opp = 1 - seat
        unknown = st.hands[opp] + st.stock
        n = len(st.hands[opp])
        if st.hand_number == 1 and st.buried_jacks:
            buried = [c for c in unknown if c in st.buried_jacks]
            free = [c for c in unknown if c not in st.buried_jacks]
            shuffle(rng, free)
            st.hands[opp] = sorted(free[:n])
            st.stock = free[n:] + buried
            shuffle(rng, st.stock)
        else:
            shuffle(rng, unknown)
            st.hands[opp] = sorted(unknown[:n])
            st.stock = unknown[n:]
        st._chance_rng = None
        st._chance_seed = rng.getrandbits(64)
        if self.settings.episode == "match":
            st.deck_rng = seeded(rng.getrandbits(64))
        st.move_log = None                          # it tells each seat its own cards: not in a re-dealt world
        return st

    def clone(self) -> "PasurState":
        st = object.__new__(type(self))
        d = self._copy_core()
        for k in ("pool", "stock", "buried_jacks", "clubs", "points", "surs", "round_start_scores",
                  "sur_capped", "turns", "picked", "cand", "sel_legal"):
            d[k] = list(d[k])
        d["hands"] = [list(h) for h in self.hands]
        d["captured"] = [list(c) for c in self.captured]
        st.__dict__ = d
        return st

    def _turn_dict(self, t: tuple) -> dict:
        p, card, taken, sur = t
        text = self._took_text(card, taken) if taken else f"{card_str(card)} trails"
        if sur in ("sur", "cancel"):
            text += " (sur)"
        return {"player": p, "card": card_str(card), "took": cards_str(taken), "sur": sur, "text": text}

    def _state_dict(self) -> dict:
        sel = None
        if self.phase == PHASE_SELECT:
            sel = {"card": card_str(self.sel_card), "picked": cards_str(self.picked),
                   "options": [cards_str(o) for o in self.cand]}
        left = None
        if self.leftover is not None:
            left = {"player": self.leftover[0], "cards": cards_str(self.leftover[1])}
        return {
            "phase": PHASE_NAMES[self.phase],
            "hands": [cards_str(h) for h in self.hands],
            "pool": cards_str(self.pool),
            "stock": cards_str(reversed(self.stock)),
            "captured": [cards_str(c) for c in self.captured],
            "surs": list(self.surs),
            "sur_capped": list(self.sur_capped),
            "last_capturer": self.last_capturer,
            "hand_number": self.hand_number,
            "selecting": sel,
            "turns": [self._turn_dict(t) for t in self.turns],
            "leftover": left,
            "buried_jacks": cards_str(self.buried_jacks),
            "redeals": self.redeals,
            "round_start_scores": list(self.round_start_scores),
        }

    def _render(self, seat: int | None) -> str:
        over = self.is_terminal
        lines = [f"Pâsur | round {self.deals_completed + (0 if over else 1)}, hand {self.hand_number} of "
                 f"{HANDS_PER_ROUND} | dealer: player {self.dealer} | stock: {len(self.stock)} | "
                 f"target {self.settings.target_score}"]
        lines.append("pool: " + (" ".join(cards_str(self.pool)) or "(empty)"))
        for p in range(2):
            me = " (you)" if p == seat else ""
            lines.append(f"player {p}{me} | score {self.scores[p]}, captured {len(self.captured[p])} "
                         f"({self.clubs[p]} clubs), surs {self.surs[p]}, round points {self.round_points(p)}"
                         + (" [sur capped]" if self.sur_capped[p] else ""))
        for p in range(2):
            me = " (you)" if p == seat else ""
            if seat is None or p == seat:
                lines.append(f"player {p}{me} hand: {' '.join(cards_str(self.hands[p])) or '(empty)'}")
            else:
                lines.append(f"player {p} hand: {len(self.hands[p])} card(s)")
        if self.turns:
            t = self.turns[-1]
            lines.append(f"last play: {self._turn_dict(t)['text']} (player {t[0]})")
        me = " (you)" if self.current_player == seat else ""
        if over:
            lines.append(("match stopped at the cap" if self.truncated else "match over") + "; winners: "
                         + (", ".join(f"player {w}" for w in self.winners) or "none"))
        elif self.phase == PHASE_SELECT:
            lines.append(f"to move: player {self.current_player}{me}, choosing what {card_str(self.sel_card)} "
                         "takes" + (f" (picked {' '.join(cards_str(self.picked))})" if self.picked else ""))
        else:
            lines.append(f"to move: player {self.current_player}{me}")
        return "\n".join(lines)


PasurGame.state_class = PasurState
