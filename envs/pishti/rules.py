"""Pişti: the rules engine (docs/rules.md §1, from the source rule text described there).

Pişti is a Turkish fishing game for 2 players, 4 individuals or 4 in two partnerships (PI-1). A played card
captures the whole pile when it matches the rank of the top card; a jack captures the pile whatever shows.
Capturing a pile of exactly one card is a *pişti*, worth 10 (a jack taking a lone jack 20).

Deal (docs/rules.md §1a, deck index 0 is the top card, C-3)
    cards 0-2 face down on the pile, card 3 face up on top. A face-up jack is buried in the undealt rest of
    the deck at a uniformly random depth below its top card (PI-6, chance stream) and the rest's top card
    is turned up in its place, repeated while a jack shows. The pile is dealt before the hands (PI-7), so
    the burial happens in the rest of the deck before any hand is dealt. Then packets of 4 to each player
    from ``next(dealer)`` round to the dealer; the rest is the stock. When every hand is empty, packets
    of 4 again. 48 plays per deal; the dealer makes the 48th.

Turn (§1b): the player plays any card from hand (§1c). There is no obligation to capture.
    * capture if the pile is not empty and the card is a jack or matches the top card's rank;
      a pişti if the pile held exactly one card and this is not the 48th play (PI-5);
    * with ``jack_on_empty_counts``, a jack on an empty pile takes itself and scores a pişti (PI-4);
    * otherwise the card becomes the pile's top.
    DEAL_END (forced): the rest of the pile goes to the last capturer, with no pişti (PI-10: there always
    is one). The three face-down opening cards are never shown before DEAL_END (PI-11).

Hidden information (``determinize``): a buried jack was seen, so it is in a hand or the stock, never among
    the face-down cards; since the pile is dealt first (PI-7), any hand may hold it. No play shows anything
    about a hand: any card may be played and nobody must capture (§1c).

Scoring (§1d): each J and A 1, ``2C`` ``two_clubs_value``, ``TD`` ``ten_diamonds_value``, the majority bonus to
    the side with the unique most cards (PI-8), piştis by the ``jack_double`` table of §1d (PI-2, PI-3).
    The match ends after a deal in which a side reaches ``target_score``: the highest total wins; a tie at
    the top plays another deal (``tie_rule="extra_deal"``) or shares the win. ``max_deals`` truncates.

Actions: ``Discrete(52)``, the card id to play; the mask is the player's hand (§1h).

Observation (§1i), relative to the observer; S sides, N players:

    ====================================================================  ===========
    own hand (multi-hot)                                                  52
    pile top (one-hot, plus "empty")                                      53
    face-up cards now in the pile                                         52
    pile size / 52; face-down cards still in the pile / 3                 2
    cards seen face up this deal, own hand excluded                       52
    per side, own side first: captured count / 52, visible card points   4·S
      / 13, pişti points / 50, match total / target (each clipped at 10)
    stock / 52; hand index / hands per deal; hand sizes after me / 4      2 + (N−1)
    dealer position relative to me (one-hot)                              N
    last capturer: side relative to me, or none (one-hot)                 S + 1
    per action, my turn only: what the card takes and leaves (appraisal)  52 × 8
    ====================================================================  ===========

    Lengths: 643 (2 players), 657 (4 alone), 647 (4 in partnerships) with ``observation="appraised"`` (the
    default: the shipped bots read it); ``observation="plain"`` is every block but the last (the appraisal):
    227, 241, 231.

``to_dict()`` keys: ``game``, ``settings``, ``players``, ``dealer``, ``current_player``, ``hands`` (per seat),
``stock`` (top first), ``pile`` (bottom first), ``pile_face_down`` (how many of the pile's bottom cards are
face down), ``captured`` (per side), ``captured_face_down`` (per side), ``pistis`` and ``pisti_points`` (per
side, this deal), ``last_capturer`` (side or None), ``play_number``, ``hand_number``, ``scores`` (per side),
``deals_completed``, ``terminal``, ``truncated``, ``winners``.
"""

from __future__ import annotations

import functools
import random
import struct

import numpy as np

from ..core.cards import ACE, JACK, NUM_CARDS, card_id, card_str, cards_str
from ..core.docs import ActionRange, ObsBlock, fixed_offsets
from ..core.engine import Game, Move, State
from ..core.rng import seeded, shuffle
from ..core.settings import Choice, Flag, Int, Settings, SettingsSpec, common_settings, observation_setting

from . import appraisal
from .tables import (PLAYS_PER_DEAL, PACKET, MOVE_FEATURES, TWO_CLUBS, TEN_DIAMONDS, JACKS,
                     ACES)  # noqa: F401 (names of the rules, also imported from here)


SETTINGS = SettingsSpec("pishti", [
    Choice("players", 4, (2, 4), doc="2 or 4 players (PI-1)"),
    Flag("partnerships", True, doc="with 4 players: seats 0+2 against 1+3 (PI-1)"),
    Int("target_score", 151, 50, 500, doc="the match ends after a deal in which a side reaches it (§1d)"),
    Int("pisti_value", 10, 5, 20, doc="points of a pişti (§1d)"),
    Int("jack_pisti_value", 20, 10, 40, step=5, doc="points of a jack pişti, per jack_double (PI-2)"),
    Choice("jack_double", "jack_on_jack", ("never", "jack_on_jack", "any_jack"), doc="PI-2"),
    Int("majority_bonus", 3, 0, 10, doc="to the side with the unique most cards (PI-8)"),
    Flag("jack_on_empty_counts", False, doc="PI-4"),
    Flag("jack_on_lone_card_is_pisti", True, doc="PI-3"),
    Int("two_clubs_value", 2, 2, 3, doc="points of 2C"),
    Int("ten_diamonds_value", 3, 3, 4, doc="points of TD"),
    Choice("tie_rule", "extra_deal", ("extra_deal", "shared_win"), doc="a tie at the top: another deal, or shared"),
    *common_settings("max_deals", 40, 200),
    observation_setting(appraised=True),
])


class PishtiGame(Game):
    name = "pishti"
    space_settings = ("players", "partnerships", "observation")
    version = 1
    settings_spec = SETTINGS
    obs_low = -10.0
    obs_high = 10.0
    action_feature_size = MOVE_FEATURES

    # ----- documentation page (envs/core/docs.py) ---------------------------------------------------------
    title = "Pişti"
    rules_section = "§1"
    summary = ("Pişti is a Turkish fishing game for 2 players, 4 individuals or 4 in two partnerships, with one "
               "52-card pack. A played card captures the whole pile when it matches the rank of the top card, and a "
               "jack captures the pile whatever shows; capturing a lone card is a *pişti*, worth 10. Sides score "
               "jacks, aces, 2♣, 10♦, the majority of cards and their piştis; the first side to reach "
               "`target_score` (151) after a deal wins the match.")
    doc_tables = [dict(players=2), dict(players=4, partnerships=False), dict(players=4, partnerships=True)]
    action_ranges = [
        ActionRange(0, NUM_CARDS - 1, "play the card with this id (13·suit + rank; suits C D H S, ranks A 2 … K)",
                    text="`\"7H\"`, `\"JD takes 4 cards\"`, `\"7H takes 1 card (pişti)\"`"),
    ]
    action_notes = ("The mask is the player's hand (§1c): any card in hand may be played, there is no obligation "
                    "to capture. `parse_action` also accepts the bare card (`\"7H\"`) and `\"play 7H\"`.")
    observation_blocks = [
        ObsBlock("own hand (multi-hot)", NUM_CARDS, "0 or 1"),
        ObsBlock("pile top card (one-hot; the last entry: the pile is empty)", NUM_CARDS + 1, "0 or 1", key="pile_top"),
        ObsBlock("face-up cards now in the pile (multi-hot)", NUM_CARDS, "0 or 1", key="pile_face_up"),
        ObsBlock("pile size", 1, "cards / 52", key="pile_size"),
        ObsBlock("face-down cards still in the pile", 1, "cards / 3"),
        ObsBlock("cards seen face up this deal, own hand excluded (multi-hot)", NUM_CARDS, "0 or 1", key="seen"),
        ObsBlock("per side, own side first (S sides × 4): captured cards, card points of the captured cards seen "
                 "face up, pişti points, match total", lambda g: 4 * g.num_sides,
                 "/ 52, / 13, / 50, / `target_score`; each clipped at 10", key="sides"),
        ObsBlock("stock size", 1, "cards / 52"),
        ObsBlock("hands dealt so far this deal", 1, "/ hands per deal (6 with 2 players, 3 with 4)"),
        ObsBlock("hand sizes of the other players, in turn order after me", lambda g: g.num_players - 1, "cards / 4"),
        ObsBlock("dealer, relative to me (one-hot over seats)", lambda g: g.num_players, "0 or 1"),
        ObsBlock("last capturer: side relative to mine, or none (one-hot, the last entry: none)",
                 lambda g: g.num_sides + 1, "0 or 1"),
        ObsBlock("per action (52 rows of 8, zero for illegal actions and when not my turn): what playing the card "
                 "takes and leaves (envs/pishti/appraisal.py): capture, pişti points, value taken, cards taken, "
                 "jack, value trailed, the next player's expected take from the pile left, the pile left at the "
                 "deal's last play (+ to my side, − to another)", NUM_CARDS * MOVE_FEATURES, "points / 10",
                 key="moves", appraisal=True),
    ]
    observation_kinds_note = ("The appraised observation is the default because the shipped Pişti bots read it "
                              "(their action-feature head scores every card from its row), and a bot trained before "
                              "the `observation` setting existed is held to it. The plain one has v0's blocks: "
                              "for training from the view alone, and cheaper, since no appraisal is computed for it.")
    observation_notes = ("Hidden: the other hands, the stock order and the three face-down opening cards of the pile "
                         "(never shown before the deal ends, PI-11).")
    rewards_note = ("Deal points of a side (§1d): 1 per J and A, `two_clubs_value` for 2♣, `ten_diamonds_value` for "
                    "10♦, `majority_bonus` for the unique most cards, and its pişti points. The match ends after a "
                    "deal in which a side reaches `target_score`; `max_deals` truncates it.")
    version_history = [(0, "first release"),
                       (1, "observation: what every legal action takes and leaves (8 numbers each); "
                           "v1 also offers the observation without the appraisal (v0's blocks) as "
                           "`observation=\"plain\"` (a setting; the appraised one stays the default, so the bots "
                           "and playthroughs of v1 are unchanged)")]

    def house_settings(self) -> list[str]:
        """The settings in force, in words, for the player guide (envs/core/guide.py)."""
        s = self.settings
        table = ("2 players" if s.players == 2 else "4 players in two partnerships, players 0 and 2 against 1 and 3"
                 if self.partnerships else "4 players, each for themselves")
        jack = {"never": f"a jack pişti is worth {s.pisti_value} like any other",
                "jack_on_jack": f"a jack taking a lone jack: {s.jack_pisti_value}",
                "any_jack": f"any pişti made with a jack: {s.jack_pisti_value}"}[s.jack_double]
        out = [table, f"the first side to {s.target_score} points after a deal wins", f"a pişti: {s.pisti_value}",
               jack, "a jack taking a lone card of another rank " + ("is a pişti" if s.jack_on_lone_card_is_pisti
                                                                     else "takes it, but is no pişti")]
        if s.jack_on_empty_counts:
            out.append("a jack played on an empty pile takes itself and is a pişti")
        out += [f"the most cards: {s.majority_bonus}", f"2♣ {s.two_clubs_value}, 10♦ {s.ten_diamonds_value}",
                "a tie at the top " + ("plays another deal" if s.tie_rule == "extra_deal" else "shares the win"),
                f"at most {s.max_deals} deals"]
        return out

    def _configure(self) -> None:
        s = self.settings
        if s.players == 2 and s.partnerships:
            if "partnerships" in self._explicit:
                raise ValueError("setting 'partnerships': True is not allowed with players=2; "
                                 "partnerships need 4 players (PI-1)")
            self.settings = s = Settings({**s, "partnerships": False})
        self.num_players = s.players
        self.partnerships = s.players == 4 and s.partnerships
        self.sides = tuple(i % 2 for i in range(4)) if self.partnerships else tuple(range(s.players))
        n, ns = self.num_players, len(set(self.sides))
        self.num_actions = NUM_CARDS
        self.hands_per_deal = PLAYS_PER_DEAL // (PACKET * n)
        self.plays_per_round = PACKET * n                  # plays until every hand is empty
        self.jack_on_empty_counts = s.jack_on_empty_counts
        self.observation_size = 211 + 4 * ns + 2 + (n - 1) + n + ns + 1 + NUM_CARDS * MOVE_FEATURES
        # the observation's blocks that depend on the table (the fractions from OBS_SIDES, then two one-hots)
        self.sides_from = [tuple((side + k) % ns for k in range(ns)) for side in range(ns)]   # own side first
        self.seats_after = [tuple((seat + k) % n for k in range(1, n)) for seat in range(n)]
        self.obs_dealer = OBS_SIDES + 4 * ns + 2 + (n - 1)
        self.obs_last_capturer = self.obs_dealer + n
        self.card_points = [0] * NUM_CARDS
        for suit in range(4):
            self.card_points[card_id(JACK, suit)] = 1
            self.card_points[card_id(ACE, suit)] = 1
        self.card_points[TWO_CLUBS] = s.two_clubs_value
        self.card_points[TEN_DIAMONDS] = s.ten_diamonds_value

    def __init__(self, **settings):
        # partnerships defaults to True (the seed's table), which only makes sense with 4 players: with
        # players=2 an unspecified partnerships is simply off, an explicit True is an error.
        self._explicit = set(settings)
        super().__init__(**settings)
        if self.appraised:     # the appraised observation's divisor in float32 (PishtiState._observation)
            self.obs_divisor = np.ones(self.observation_size, dtype=np.float32)
            self.obs_divisor[self.plain_observation_size:] = appraisal.FEATURE_SCALE


# observation offsets, from the blocks' sizes (the table-dependent blocks follow OBS_SIDES in order)
_OFFSETS = fixed_offsets(PishtiGame.observation_blocks)
OBS_PILE_TOP, OBS_PILE_FACE_UP, OBS_PILE_SIZE, OBS_SEEN, OBS_SIDES = (
    _OFFSETS[k] for k in ("pile_top", "pile_face_up", "pile_size", "seen", "sides"))

# The observation is written as its float32 bytes (PishtiState._observation), little-endian like NumPy's float32
# here; ``struct`` rounds a float to float32 as NumPy does. 1.0 is the bytes 00 00 80 3F, so a string of 0/1 flags
# gives the bytes 2 and 3 of every float by one translation each (0 stays 0).
_F32 = np.dtype("<f4")
_F32_BYTE2 = bytes(0x80 if b == 1 else 0 for b in range(256))
_F32_BYTE3 = bytes(0x3F if b == 1 else 0 for b in range(256))
_AT_PILE_SIZE, _AT_SIDES = 4 * OBS_PILE_SIZE, 4 * OBS_SIDES      # byte offsets of those blocks
#: the pile size / 52 and the face-down count / 3 as float32 bytes, by face-down count and pile size
_PILE_SIZE_BYTES = [[struct.pack("<2f", size / 52, down / 3) for size in range(NUM_CARDS + 1)] for down in range(4)]
_PACK_ROW_INTO = struct.Struct(f"<{MOVE_FEATURES}f").pack_into    # an appraisal row, into the bytes


@functools.lru_cache(maxsize=None)
def _floats(k: int) -> struct.Struct:
    """``k`` numbers as float32 bytes."""
    return struct.Struct(f"<{k}f")


class PishtiState(State):

    # ----- the deal (§1a) ---------------------------------------------------------------------------
    def _start_deal(self, deck: list[int] | None) -> None:
        g = self.game
        deck = self._deal_order(deck)
        self.seen = bytearray(NUM_CARDS)           # 1 if face up at some moment of this deal
        pile, rest = deck[:4], deck[4:]
        self.buried_jacks: list[int] = []
        logging = self.move_log is not None
        if logging:
            self._log_event(f"deal {self.deals_completed + 1}: player {self.dealer} deals; 3 cards face down on "
                            f"the pile, then one face up")
        while pile[3] % 13 == JACK:                # PI-6: bury a face-up jack below the top of the rest
            jack = pile[3]
            self.seen[jack] = 1
            self.buried_jacks.append(jack)
            rest.insert(self.chance_rng.randint(1, len(rest)), jack)
            pile[3] = rest.pop(0)
            if logging:
                self._log_event(f"{card_str(jack)} turned up: a jack is buried in the stock, and "
                                f"{card_str(pile[3])} is turned up in its place")
        self.seen[pile[3]] = 1
        if logging and not self.buried_jacks:
            self._log_event(f"{card_str(pile[3])} turned up on the pile")
        self.pile = pile
        self.pile_face_down = 3
        self.stock = rest[::-1]                    # top of the stock at the end, so pop() draws it
        self.hands = [[] for _ in range(g.num_players)]
        self.captured = [[] for _ in range(g.num_sides)]
        self.captured_face_down = [0] * g.num_sides
        self.visible_points = [0] * g.num_sides    # card points of the captured cards that were seen
        self.pistis = [0] * g.num_sides
        self.pisti_points = [0] * g.num_sides
        self.last_capturer: int | None = None
        self.play_number = 0
        self.hand_number = 0
        self._deal_packets()
        self.current_player = (self.dealer + 1) % g.num_players

    def _deal_packets(self) -> None:
        n = self.game.num_players
        stock = self.stock
        for k in range(n):
            hand = self.hands[(self.dealer + 1 + k) % n]
            hand.extend(stock[-PACKET:])               # the top 4 (the end of the list)
            hand.sort()                                # hands stay sorted: legal_actions is a copy
            del stock[-PACKET:]
        self.hand_number += 1
        if self.move_log is not None:
            text = (f"hand {self.hand_number} of {self.game.hands_per_deal}: 4 cards to each player, "
                    f"{len(stock)} left in the stock")
            self._log_event(text, {p: f"{text}; your cards: {' '.join(cards_str(h))}"
                                   for p, h in enumerate(self.hands)})

    # ----- legal actions and play (§1b, §1c) --------------------------------------------------------
    def legal_actions(self) -> list[int]:
        if self.current_player is None:
            return []
        return self.hands[self.current_player][:]

    def _is_legal(self, action: int) -> bool:
        return action in self.hands[self.current_player]

    def _legal_view(self) -> list[int]:
        return self.hands[self.current_player]      # any card in hand may be played

    def _pisti_value(self, card: int, lone: int | None) -> int:
        """Points of a pişti made by ``card`` taking ``lone`` (None: a jack onto an empty pile), §1d."""
        s = self.settings
        p, jp = s.pisti_value, s.jack_pisti_value
        if card % 13 != JACK:
            return p
        if lone is None:                           # PI-4
            return jp if s.jack_double == "any_jack" else p
        if lone % 13 == JACK:
            return p if s.jack_double == "never" else jp
        if not s.jack_on_lone_card_is_pisti:       # PI-3, the traditional rule
            return 0
        return jp if s.jack_double == "any_jack" else p

    def _apply(self, card: int) -> None:
        p = self.current_player
        g = self.game
        self.hands[p].remove(card)
        self.seen[card] = 1
        self.play_number = play_number = self.play_number + 1
        pile = self.pile
        rank = card % 13
        if pile and (rank == JACK or rank == pile[-1] % 13):
            lone = pile[0] if len(pile) == 1 else -1
            pile.append(card)
            self._capture(g.sides[p], pile)
            if lone >= 0 and play_number != PLAYS_PER_DEAL:   # PI-5: a lone card, never on play 48
                self._score_pisti(g.sides[p], self._pisti_value(card, lone))
        elif not pile and rank == JACK and g.jack_on_empty_counts:
            self._capture(g.sides[p], [card])      # PI-4: the jack takes itself
            if play_number != PLAYS_PER_DEAL:
                self._score_pisti(g.sides[p], self._pisti_value(card, None))
        else:
            pile.append(card)
        if play_number % g.plays_per_round == 0:   # every hand is empty
            if self.stock:
                self._deal_packets()
            else:
                self._deal_end()
                return
        self.current_player = (p + 1) % g.num_players

    def _capture(self, side: int, taken: list[int]) -> None:
        """``side`` takes ``taken`` (the pile, with the capturing card on top); the pile is then empty."""
        seen_part = taken[self.pile_face_down:] if self.pile_face_down else taken
        self.visible_points[side] += sum(map(self.game.card_points.__getitem__, seen_part))
        self.captured[side].extend(taken)
        self.captured_face_down[side] += self.pile_face_down
        self.pile_face_down = 0
        self.pile = []
        self.last_capturer = side

    def _score_pisti(self, side: int, points: int) -> None:
        if points:
            self.pistis[side] += 1
            self.pisti_points[side] += points

    # ----- deal end and scoring (§1d) ---------------------------------------------------------------
    def _deal_end(self) -> None:
        assert self.last_capturer is not None, "PI-10: every deal has a capture"
        if self.pile and self.move_log is not None:
            n = len(self.pile)
            self._log_event(f"the {n} card{'s' if n > 1 else ''} left on the pile go{'es' if n == 1 else ''} to "
                            f"{self.side_name(self.last_capturer)}, the last to capture")
        if self.pile:
            self._capture(self.last_capturer, self.pile)
        g, s = self.game, self.settings
        counts = [len(c) for c in self.captured]
        most = max(counts)
        unique_most = counts.count(most) == 1
        majority = [s.majority_bonus if c == most and unique_most else 0 for c in counts]   # PI-8
        jacks, aces, two_clubs, ten_diamonds = [], [], [], []
        for cap in self.captured:
            taken = set(cap)
            jacks.append(len(JACKS & taken))
            aces.append(len(ACES & taken))
            two_clubs.append(s.two_clubs_value if TWO_CLUBS in taken else 0)
            ten_diamonds.append(s.ten_diamonds_value if TEN_DIAMONDS in taken else 0)
        card_points = [sum(p) for p in zip(jacks, aces, two_clubs, ten_diamonds)]   # 1 per J and A, 2C, TD
        side_points = [card_points[i] + majority[i] + self.pisti_points[i] for i in range(g.num_sides)]
        sides = g.sides

        def per_seat(values):
            return [values[side] for side in sides]

        breakdown = {
            "cards": per_seat(counts),
            "jacks": per_seat(jacks),
            "aces": per_seat(aces),
            "two_clubs": per_seat(two_clubs),
            "ten_diamonds": per_seat(ten_diamonds),
            "card_points": per_seat(card_points),
            "majority": per_seat(majority),
            "pistis": per_seat(self.pistis),
            "pisti_points": per_seat(self.pisti_points),
        }
        self.pile_face_down = 0
        self._end_deal(side_points, breakdown)
        if not self.is_terminal:
            self.dealer = (self.dealer + 1) % g.num_players   # PI-9
            self._start_deal(None)

    # ----- views ------------------------------------------------------------------------------------
    def _observation(self, seat: int) -> np.ndarray:
        # Written as its float32 bytes, with one NumPy call (a NumPy call costs as much as a dozen Python
        # operations): every 0/1 entry is first a byte of ``flags``, translated into the floats' bytes at once, the
        # fractions are packed by ``struct`` (see _F32).
        g = self.game
        hand, pile, down = self.hands[seat], self.pile, self.pile_face_down
        flags = bytearray(g.plain_observation_size)
        flags[OBS_SEEN:OBS_SEEN + NUM_CARDS] = self.seen   # seen face up this deal ...
        for c in hand:
            flags[c] = 1                                   # (the own hand block starts at 0)
            flags[OBS_SEEN + c] = 0                        # ... own hand excluded
        flags[OBS_PILE_TOP + (pile[-1] if pile else NUM_CARDS)] = 1
        for c in pile[down:]:
            flags[OBS_PILE_FACE_UP + c] = 1
        n, ns = g.num_players, g.num_sides
        my_side = g.sides[seat]
        flags[g.obs_dealer + (self.dealer - seat) % n] = 1
        lc = self.last_capturer
        flags[g.obs_last_capturer + ((lc - my_side) % ns if lc is not None else ns)] = 1
        out = bytearray(4 * g.observation_size)
        end = 4 * len(flags)
        out[2:end:4] = flags.translate(_F32_BYTE2)
        out[3:end:4] = flags.translate(_F32_BYTE3)
        out[_AT_PILE_SIZE:_AT_PILE_SIZE + 8] = _PILE_SIZE_BYTES[down][len(pile)]   # and the face-down count
        # per side, own side first, each fraction clipped at 10: min(x / d, 10.0) without a call (x <= 10 d)
        target = self.settings.target_score
        captured, visible, pisti_points, scores = self.captured, self.visible_points, self.pisti_points, self.scores
        values = []
        for side in g.sides_from[my_side]:
            v, p, t = visible[side], pisti_points[side], scores[side]
            values += (len(captured[side]) / 52, v / 13 if v <= 130 else 10.0, p / 50 if p <= 500 else 10.0,
                       t / target if t <= 10 * target else 10.0)
        values.append(len(self.stock) / 52)
        values.append(self.hand_number / g.hands_per_deal)
        hands = self.hands
        for p in g.seats_after[seat]:
            values.append(len(hands[p]) / 4)
        out[_AT_SIDES:4 * g.obs_dealer] = _floats(len(values)).pack(*values)
        obs = np.frombuffer(out, _F32)
        if self.current_player == seat and g.appraised:   # what each of my legal actions would take and leave
            rows = self.appraisal()
            if rows:
                # as State._write_action_rows writes them: each number rounded to float32, then divided by the scale
                # in float32. Its clipping to the bounds (±10, i.e. ±100 points) never acts here: a row's numbers
                # stay below 100 in size (at most 53 cards taken, piles worth at most 28 + 3 * 4.25 points taken or
                # left, piştis of at most 40 points).
                pack_row = _PACK_ROW_INTO
                for card, row in rows.items():
                    pack_row(out, end + 4 * MOVE_FEATURES * card, *row)
                obs /= g.obs_divisor                       # 1 for the view (x / 1 is x), the scale for the rows
        return obs

    def _appraise(self) -> dict:
        return appraisal.appraise(self)

    def forced_is_public(self, action: int) -> bool:
        """Any card in hand may be played, so a move is forced only with one card left: hand sizes are public."""
        return True

    def forced_note(self, action: int) -> str:
        return "last card"

    def _logged_move(self, seat: int, action: int, forced: bool) -> Move:
        """A capture says how many cards it took (and the pişti's points); a trail says where the card went."""
        card = card_str(action)
        pile = self.pile
        rank = action % 13
        if pile and (rank == JACK or rank == pile[-1] % 13):
            n = len(pile)
            text = f"{card} takes {n} card{'s' if n > 1 else ''}"
            if n == 1 and self.play_number + 1 != PLAYS_PER_DEAL:
                points = self._pisti_value(action, pile[0])
                if points:
                    text += f": pişti, {points} points"
        elif not pile and rank == JACK and self.settings.jack_on_empty_counts:
            last = self.play_number + 1 == PLAYS_PER_DEAL
            text = f"{card} takes itself" + ("" if last else f": pişti, {self._pisti_value(action, None)} points")
        else:
            text = f"{card} onto the pile" if pile else f"{card} onto the empty pile"
        return Move(seat, action, text, forced, self.deals_completed)

    def describe_deal(self, report: dict) -> list[str]:
        """Per side: its deal points, item by item (cards and the majority bonus, jacks, aces, 2♣, 10♦,
        piştis), and its match total."""
        g = self.game
        b = report["breakdown"]
        first = {g.sides[p]: p for p in reversed(range(g.num_players))}
        lines = [f"deal {self.deals_completed} over"]
        for side in range(g.num_sides):
            p = first[side]
            parts = [f"{b['cards'][p]} cards" + (f", most cards {b['majority'][p]}" if b["majority"][p] else "")]
            for key, label in (("jacks", "jacks"), ("aces", "aces")):
                if b[key][p]:
                    parts.append(f"{label} {b[key][p]}")
            if b["two_clubs"][p]:
                parts.append(f"2♣ {b['two_clubs'][p]}")
            if b["ten_diamonds"][p]:
                parts.append(f"10♦ {b['ten_diamonds'][p]}")
            if b["pistis"][p]:
                k = b["pistis"][p]
                parts.append(f"{k} pişti{'s' if k > 1 else ''} {b['pisti_points'][p]}")
            lines.append(f"  {self.side_name(side)}: {report['deal_points'][p]} points ({', '.join(parts)}); "
                         f"match total {report['scores'][p]} (target {self.settings.target_score})")
        return lines

    def _describe_action(self, action: int) -> str:
        card = card_str(action)
        pile = self.pile
        if pile and (action % 13 == JACK or action % 13 == pile[-1] % 13):
            n = len(pile)
            text = f"{card} takes {n} card{'s' if n > 1 else ''}"
            if n == 1 and self.play_number + 1 != PLAYS_PER_DEAL and self._pisti_value(action, pile[0]):
                text += " (pişti)"
            return text
        if not pile and action % 13 == JACK and self.settings.jack_on_empty_counts:
            last = self.play_number + 1 == PLAYS_PER_DEAL
            return f"{card} takes itself" + ("" if last else " (pişti)")
        return card

    def _action_aliases(self, action: int):
        return (card_str(action), f"play {card_str(action)}")

    def _determinize(self, seat: int, rng: random.Random) -> "PishtiState":
        """Re-deal what ``seat`` cannot see: other hands, the stock order, face-down pile cards and the
        face-down cards inside captured piles. Seen cards (a buried jack) go back only where they could be:
        a hand or the stock (the pile is dealt first and the jack buried before any hand is dealt, PI-6, PI-7,
        so any hand or place in the stock may hold it). No play tells anything about a hand: any card may be
        played and nobody must capture (§1c). The future chance (the next decks and burials) is drawn anew."""
        st = self.clone()
        g = self.game
        others = [p for p in range(g.num_players) if p != seat]
        hidden_captured = [[c for c in cap if not st.seen[c]] for cap in st.captured]
        face_down = st.pile[:st.pile_face_down]
        pool = [c for p in others for c in st.hands[p]] + st.stock + face_down + sum(hidden_captured, [])
        # a seen card (a buried jack) can only be in a hand or the stock; the "dark" places (face-down pile
        # cards, face-down captured cards) only hold cards nobody has seen
        unseen = [c for c in pool if not st.seen[c]]
        shuffle(rng, unseen)
        n_dark = len(face_down) + sum(len(h) for h in hidden_captured)
        dark, open_cards = unseen[:n_dark], unseen[n_dark:] + [c for c in pool if st.seen[c]]
        shuffle(rng, open_cards)
        for p in others:
            k = len(st.hands[p])
            st.hands[p], open_cards = sorted(open_cards[:k]), open_cards[k:]
        st.stock = open_cards
        st.pile[:st.pile_face_down], dark = dark[:st.pile_face_down], dark[st.pile_face_down:]
        for side, hidden in enumerate(hidden_captured):
            if hidden:
                st.captured[side] = [c for c in st.captured[side] if st.seen[c]] + dark[:len(hidden)]
                dark = dark[len(hidden):]
        st._chance_rng = None                      # the future chance (next decks, burials) is drawn anew
        st._chance_seed = rng.getrandbits(64)
        if self.settings.episode == "match":
            st.deck_rng = seeded(rng.getrandbits(64))
        st.move_log = None                         # it tells each seat its own cards: not in a re-dealt world
        return st

    def _state_dict(self) -> dict:
        return {
            "hands": [cards_str(sorted(h)) for h in self.hands],
            "stock": cards_str(reversed(self.stock)),
            "pile": cards_str(self.pile),
            "pile_face_down": self.pile_face_down,
            "captured": [cards_str(c) for c in self.captured],
            "captured_face_down": list(self.captured_face_down),
            "pistis": list(self.pistis),
            "pisti_points": list(self.pisti_points),
            "last_capturer": self.last_capturer,
            "play_number": self.play_number,
            "hand_number": self.hand_number,
        }

    def _render(self, seat: int | None) -> str:
        g = self.game
        over = self.is_terminal
        lines = [f"Pişti, {g.num_players} players" + (" in partnerships" if g.partnerships else "")
                 + f" | deal {self.deals_completed + (0 if over else 1)}, hand {self.hand_number} of "
                 f"{g.hands_per_deal}, {self.play_number} of 48 cards played | dealer: player {self.dealer} | "
                 f"stock: {len(self.stock)}"]
        up = self.pile[self.pile_face_down:]
        lines.append(f"pile: {len(self.pile)} card(s)"
                     + (f", {self.pile_face_down} face down" if self.pile_face_down else "")
                     + (f"; face up: {' '.join(cards_str(up))} (top {card_str(up[-1])})" if up else ""))
        for side in range(g.num_sides):
            who = ", ".join(f"player {p}" + (" = you" if p == seat else "")
                            for p in range(g.num_players) if g.sides[p] == side)
            lines.append(f"side {side} ({who}): score {self.scores[side]}, captured {len(self.captured[side])}, "
                         f"piştis {self.pistis[side]} ({self.pisti_points[side]} pts)")
        for p in range(g.num_players):
            me = " (you)" if p == seat else ""
            if seat is None or p == seat:
                lines.append(f"player {p}{me} hand: {' '.join(cards_str(sorted(self.hands[p]))) or '(empty)'}")
            else:
                lines.append(f"player {p} hand: {len(self.hands[p])} card(s)")
        if over:
            lines.append(("match stopped at the cap" if self.truncated else "match over") + "; winners: "
                         + ", ".join(f"player {w}" for w in self.winners))
        else:
            lines.append(f"to move: player {self.current_player}" + (" (you)" if self.current_player == seat else ""))
        return "\n".join(lines)


PishtiGame.state_class = PishtiState
