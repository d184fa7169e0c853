"""The engine protocol every game implements (docs/design.md, "The engine protocol").

A game subclasses :class:`Game` (settings, sizes, deck check) and :class:`State` (the state machine).
The base classes hold what all five games share, so no game re-implements it:

* two random streams from one seed: ``deck_rng`` only shuffles decks, so the deck of every deal depends on
  the seed alone and a deal can be replayed with seats swapped (mirrored evaluation); ``chance_rng`` serves
  every other chance event (jack burial, Muamele, reaction times, a random first dealer);
* checked ``apply`` (an illegal action raises :class:`IllegalActionError` naming it and the legal ones), and
  ``skip_single_choice`` (docs/rules.md C-4): a decision with one legal action is applied by the engine;
* deal and match bookkeeping: match totals per side, the deal report that the AEC adapter puts in
  ``infos``, match end and truncation, rewards per docs/rules.md C-7 (``"outcome"`` and ``"points"``);
* ``parse_action`` on top of the game's ``describe_action`` and bare forms.

An engine imports nothing from PettingZoo, Gymnasium or torch.
"""

from __future__ import annotations

import random
import re
from itertools import chain
from typing import Any, NamedTuple, Sequence

import numpy as np

from . import cards as _cards
from .rng import copy_rng, seeded, shuffle
from .settings import APPRAISED, PLAIN, Settings, SettingsSpec, short


#: what a copy of a state (``clone``, ``_copy_core``) starts without: the cached appraisal and the kept views
_NOT_CLONED = ("_appraisal", "_views")


def _copy_value(v):
    t = type(v)
    if t is list:
        return [_copy_value(x) for x in v] if any(type(x) in _CONTAINERS for x in v) else v[:]
    if t is dict:
        return {k: _copy_value(x) for k, x in v.items()}
    if t is set:
        return set(v)
    if t is bytearray:
        return bytearray(v)
    if t is random.Random:
        return copy_rng(v)
    if t is np.ndarray:
        return v.copy()
    if t is tuple and any(type(x) in _CONTAINERS for x in v):
        return tuple(_copy_value(x) for x in v)
    return v


_CONTAINERS = (list, dict, set, bytearray, tuple, np.ndarray, random.Random)


class Move(NamedTuple):
    """One entry of a state's move log (:meth:`State.start_move_log`): an applied action, forced or chosen,
    or an event the table does by itself (``action`` is ``None``: a forced draw, a deal starting, a deal's
    scoring, the match result).

    ``text`` is the public wording, what every seat sees; ``private`` maps the seats that see more (the mover's
    own drawn card, an Ish call, the cards dealt to a hand) to their wording. :meth:`State.move_texts` and
    :meth:`text_for` pick a seat's view. No text names a card its reader could not see at that moment.

    ``forced`` is the engine's own fact (it played a single legal action, C-4). Whether a seat is *told* so is
    :meth:`forced_for`: the mover always, the others only when they could work it out themselves
    (``forced_public``, :meth:`State.forced_is_public`). A Pis Yedili draw may be chosen (PY-8), so "draws (only
    choice)" would tell the others that the drawer held no playable card."""

    seat: int | None       # who acted (None for a table event)
    action: int | None     # the action id, or None for an event
    text: str              # what every seat sees
    forced: bool           # applied by the engine (a single legal action, C-4) or a table event
    deal: int              # deals completed before this move
    private: dict | None = None   # seat -> what that seat sees instead of ``text``
    forced_public: bool = False   # a forced move: every seat can tell it was the only legal choice
    note: str = "only choice"     # a forced move's label, for the seats told of it ("last card")

    def text_for(self, seat: int | None) -> str:
        """The wording ``seat`` sees (``None``: the public one), without the "player k:" prefix."""
        if self.private and seat in self.private:
            return self.private[seat]
        return self.text

    def forced_for(self, seat: int | None) -> bool:
        """Whether ``seat`` (``None``: a spectator who sees what every seat sees) may be told that this move was
        forced: a table event always is the table's; a player's forced move only to the mover, or to everyone
        when everyone could tell (``forced_public``)."""
        if not self.forced:
            return False
        return self.seat is None or self.forced_public or (seat is not None and seat == self.seat)


#: "player 3" (or "player 3's") in a log text, not already marked "(you)"
_PLAYER_WORD = re.compile(r"\bplayer (\d+)\b('s\b)?(?! \(you\))")


def mark_you(text: str, seat: int | None) -> str:
    """``text`` as ``seat`` reads it: every "player k" that is ``seat`` becomes "player k (you)" ("player k's":
    "your"), so a seat is called the same in every line (never "you" here and "player 0" there)."""
    if seat is None or "player" not in text:
        return text

    def one(m):
        if int(m.group(1)) != seat:
            return m.group(0)
        return "your" if m.group(2) else f"player {seat} (you)"

    return _PLAYER_WORD.sub(one, text)


def move_line(m: "Move", seat: int | None, names: dict | None = None) -> str:
    """One log entry as ``seat`` reads it (:meth:`State.move_texts`): "player 1: 7H takes 4C (only choice)"."""
    text = mark_you(m.text_for(seat), seat)
    if m.seat is None:
        return text
    who = names[m.seat] if names and m.seat in names else mark_you(f"player {m.seat}", seat)
    return f"{who}: {text}" + (f" ({m.note})" if m.forced_for(seat) else "")


class IllegalActionError(ValueError):
    """An action that is not legal in the current state."""


class Game:
    """Validated settings and the fixed sizes of one game variant."""

    name: str = ""
    version: int = 0
    settings_spec: SettingsSpec
    state_class: type
    #: observation bounds (every entry of every observation lies in [obs_low, obs_high])
    obs_low: float = 0.0
    obs_high: float = 1.0
    #: +1 when deal points are good (most games), -1 when they are penalties (Pis Yedili)
    points_sign: int = 1
    #: name of the truncation-cap setting (deals or rounds per match)
    cap_setting: str = "max_deals"
    #: the settings that change what the observations and actions are or mean (table size, stake ladder): a bot
    #: trained under other values of these cannot play this table
    space_settings: tuple = ()
    #: when > 0, the observation ends with ``num_actions`` rows of this many numbers, row ``a`` describing what
    #: action ``a`` would do (zeros for an illegal one); a network's action-feature head scores every action
    #: from its row with weights shared by all actions (agents/policies/network.py). Only in the appraised
    #: observation: a plain one (``observation="plain"``) sets it to 0 on the instance
    action_feature_size: int = 0

    num_players: int
    num_actions: int
    observation_size: int

    # documentation page (envs/core/docs.py renders it; tests/envs/test_docs.py checks it against the code)
    title: str = ""
    summary: str = ""
    rules_section: str = ""
    doc_tables: list = []            # settings dicts of the representative tables
    action_ranges: list = []         # docs.ActionRange, covering 0 .. num_actions - 1 exactly once
    observation_blocks: list = []    # docs.ObsBlock, in order, summing to observation_size (the appraised layout;
    #                                  an instance with the plain observation keeps the blocks without ``appraisal``)
    observation_kinds_note: str = ""  # why the default observation kind is the default (the env page says it)
    action_notes: str = ""
    observation_notes: str = ""
    rewards_note: str = ""
    reward_texts: dict = {}          # reward option -> text, overriding docs.REWARD_TEXTS
    version_history: list = []       # [(version, what changed)], the last one is ``version``

    def __init__(self, **settings: Any):
        self.settings: Settings = self.settings_spec.resolve(settings)
        self.num_players = 2
        self.sides: tuple = ()
        self._configure()
        if not self.sides:
            self.sides = tuple(range(self.num_players))
        self.num_sides = max(self.sides) + 1
        fd = self.settings.first_dealer
        if fd != "random" and fd >= self.num_players:
            raise ValueError(f"setting 'first_dealer': {fd!r} is not allowed; allowed: a seat number below "
                             f"{self.num_players} (the number of players), or 'random'")
        self._choose_observation()

    def _choose_observation(self) -> None:
        """The ``observation`` setting (:func:`.settings.observation_setting`): ``"appraised"`` keeps every block
        of :attr:`observation_blocks`; ``"plain"`` drops the appraisal blocks (``ObsBlock.appraisal``, the
        layout's last), so the plain observation is the appraised one's beginning, and an appraisal is never
        computed for it."""
        self.appraised = self.settings.get("observation", PLAIN) == APPRAISED
        cut = sum(b.size_for(self) for b in self.observation_blocks if b.appraisal)
        #: the length of the plain observation, where the appraised one's appraisal block starts
        self.plain_observation_size = self.observation_size - cut
        if not self.appraised:
            self.observation_size = self.plain_observation_size
            self.observation_blocks = self._plain_blocks()
            self.action_feature_size = 0

    @classmethod
    def _plain_blocks(cls) -> list:
        """The observation blocks of the plain observation: the appraised one's less its appraisal blocks."""
        return [b for b in cls.observation_blocks if not b.appraisal]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        # the plain observation's own list of blocks: their sizes are lambdas, which pickle cannot hold
        state.pop("observation_blocks", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if not self.appraised:
            self.observation_blocks = self._plain_blocks()

    def space_changes(self, settings: dict) -> list[str]:
        """The names of :attr:`space_settings` on which ``settings`` (a mapping, e.g. a bot's or another run's)
        differs from this game's; a name ``settings`` lacks counts as the same. (A bot trained before the
        ``observation`` setting existed lacks it: its observation is the default one, and at a table of the other
        kind the observation sizes differ, which the bot checks tell first.)"""
        return [k for k in self.space_settings if k in settings and settings[k] != self.settings[k]]

    def _configure(self) -> None:
        """Check settings that depend on each other; set ``num_players``, ``sides``, ``num_actions``,
        ``observation_size``."""
        raise NotImplementedError

    def side_relative_points(self, side_points: Sequence[float], side: int) -> float:
        """How well ``side`` did in a deal: its points minus the mean of the other sides' points, with the sign
        of :attr:`points_sign` so that more is always better (penalties flipped). The one definition behind
        ``reward="points"``, evaluation's points per deal and the searches' leaf values."""
        others = [v for s, v in enumerate(side_points) if s != side]
        return self.points_sign * (side_points[side] - sum(others) / len(others))

    def relative_points(self, seat_points: Sequence[float], seat: int) -> float:
        """:meth:`side_relative_points` for ``seat``, from per-seat points as a deal report gives them."""
        side_points = [0.0] * self.num_sides
        for s, p in enumerate(seat_points):
            side_points[self.sides[s]] = p
        return self.side_relative_points(side_points, self.sides[seat])

    def house_settings(self) -> list[str]:
        """The settings in force as short phrases for people ("the first side to 151 points after a deal wins"),
        shown under the player guide (:func:`kahve.envs.core.guide.player_guide`). A game overrides it."""
        return []

    def full_deck(self) -> list[int]:
        """Every card id of one deal, in id order: one pack (Pis Yedili with 3-4 players: two, Ish: the sun
        deck)."""
        return list(range(_cards.NUM_CARDS))

    def check_deck(self, deck: Sequence) -> list[int]:
        """Parse and validate a preset deck (docs/rules.md C-3); ``ValueError`` names the offending cards."""
        return _cards.check_standard_deck(deck, 1)

    def new_state(self, rng: random.Random | int | None = None, deck: Sequence | None = None,
                  move_log: bool = False) -> "State":
        """A fresh match (or deal, with ``episode="deal"``). ``deck`` fixes the first deal's card order;
        ``move_log`` turns the move log on from the first card (:meth:`State.start_move_log`)."""
        ids = self.check_deck(deck) if deck is not None else None
        return self.state_class(self, rng, ids, move_log)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.settings.items() if v != self.settings_spec.by_name[k].default}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"


class State:
    """Base of every game state. Subclasses implement the ``_start_deal``/``legal_actions``/``_apply`` state
    machine and the views (``observation``, ``describe_action``, ``to_dict``, ``render``, ``determinize``)."""

    #: the state version: bumped by every :meth:`apply`, so that what is computed from a state once (the
    #: appraisal) is known to be current. A state changed by hand (a test's constructed position) after its
    #: appraisal was read must bump it too; a clone starts without the appraisal.
    _version = 0
    #: the cached appraisal, ``(version, rows)``: a plain tuple (a NamedTuple cost a microsecond a decision more).
    #: A clone starts without it (a copy may be changed by hand, and a re-dealt world, ``determinize``, has other
    #: hands)
    _appraisal: tuple[int, dict] | None = None
    #: what a game keeps of its seats' observations, up to date move by move (Pâsur: each seat's view; Ish: one
    #: view that every seat's observation is gathered from), built when first read, and the state version it is for:
    #: :meth:`apply` carries the version on when they were current before the move, so views made stale by a change
    #: by hand (which bumps the version) stay stale and are built again when read. A clone and a pickle start
    #: without them
    _views: list | np.ndarray | None = None
    _views_version = -1

    #: what one core deal is called at this table ("round" in Pâsur and Ish), for the texts of the move log
    deal_word = "deal"
    # card text, for describe/parse; Ish overrides with its own deck
    card_str = staticmethod(_cards.card_str)
    parse_card = staticmethod(_cards.parse_card)

    def __init__(self, game: Game, rng: random.Random | int | None, deck: list[int] | None, move_log: bool = False):
        self.game = game
        self.settings = game.settings
        # a generator, an integer seed (any integer type; seeded() explains negative ones), or None: from the OS
        seeder = rng if isinstance(rng, random.Random) else random.Random() if rng is None else seeded(rng)
        self.deck_rng = seeded(seeder.getrandbits(64))
        self._chance_seed = seeder.getrandbits(64)
        self._chance_rng: random.Random | None = None   # made on first use: most deals never draw from it
        n = game.num_players
        self.num_players = n
        self.rewards = [0.0] * n                      # of the latest apply, forced steps included
        self._paid = False
        self.returns = [0.0] * n
        self.scores = [0] * game.num_sides           # match totals per side
        self.deals_completed = 0
        self.deal_report: dict | None = None         # the latest finished deal (for infos)
        self.winners: list[int] | None = None        # seats, at match end or truncation
        self.terminal = False
        self.truncated = False
        self.out = [False] * n                       # seats that left the match early (Ish)
        self.move_log: list[Move] | None = [] if move_log else None   # see start_move_log()
        self._skip_single_choice = self.settings.skip_single_choice
        fd = self.settings.first_dealer
        self.dealer = self.chance_rng.randrange(n) if fd == "random" else fd
        self._start_deal(deck)
        self._auto_play()
        if self.move_log is not None and self.current_player is None:
            self._log_match_end()

    def _deal_order(self, deck: list[int] | None) -> list[int]:
        """The card order of a new deal, top card first: a copy of the preset deck (the first deal's, C-3),
        else the game's whole deck shuffled by ``deck_rng`` (C-5: the shuffles' own stream)."""
        if deck is not None:
            return list(deck)
        cards = self.game.full_deck()
        shuffle(self.deck_rng, cards)
        return cards

    # ----- what a game implements -------------------------------------------------------------------
    current_player: int | None

    def _start_deal(self, deck: list[int] | None) -> None:
        raise NotImplementedError

    def legal_actions(self) -> list[int]:
        """Sorted legal action ids for the player to move (empty when terminal)."""
        raise NotImplementedError

    def _apply(self, action: int) -> None:
        raise NotImplementedError

    def _observation(self, seat: int) -> np.ndarray:
        raise NotImplementedError

    def _appraise(self) -> dict:
        """{legal action: its appraisal row} for the player to act, computed anew (a game with an appraisal
        module returns its rows; default: none)."""
        return {}

    def _describe_action(self, action: int) -> str:
        raise NotImplementedError

    def _determinize(self, seat: int, rng: random.Random) -> "State":
        raise NotImplementedError

    def _render(self, seat: int | None) -> str:
        raise NotImplementedError

    # ----- the views, with their arguments checked (a game implements the underscored methods) ------------
    def _check_seat(self, seat, what: str) -> int:
        if isinstance(seat, bool) or not hasattr(seat, "__index__") or not 0 <= seat < self.num_players:
            raise ValueError(f"{what}: seat {seat!r} is not a seat of this {self.game.name} table "
                             f"(0 to {self.num_players - 1})")
        return int(seat)

    def _write_action_rows(self, obs: np.ndarray, rows: dict, scale: float) -> None:
        """Write ``rows`` ({legal action: its numbers}, the appraisal) into the appraised observation's last block
        (``num_actions`` rows of ``Game.action_feature_size``): each number rounded to float32, divided by
        ``scale`` in float32 and clipped to the observation's bounds, in four NumPy calls over all the rows."""
        g = self.game
        if rows:
            size = g.action_feature_size
            block = obs[len(obs) - g.num_actions * size:].reshape(g.num_actions, size)   # a view
            # float32 from the rows' floats (one rounding each), then scaled and clipped in float32
            values = np.fromiter(chain.from_iterable(rows.values()), np.float32, len(rows) * size)
            values = values.reshape(len(rows), size)
            values /= scale
            # the ufuncs in place: np.clip's Python wrapper cost more than the clipping (an observation per step)
            np.minimum(values, g.obs_high, out=values)
            np.maximum(values, g.obs_low, out=values)
            block[list(rows)] = values

    def appraisal(self) -> dict:
        """{legal action: its appraisal row (``Game.action_feature_size`` numbers, unscaled)} for the player to act
        (:meth:`_appraise`; empty once the game is over), computed once per state version and shared by every
        reader of the decision: the appraised observation, the heuristic. Read it, never change it."""
        cached = self._appraisal
        if cached is not None and cached[0] == self._version:
            return cached[1]
        rows = self._appraise() if self.current_player is not None else {}
        self._appraisal = (self._version, rows)
        return rows

    def observation(self, seat: int) -> np.ndarray:
        """What ``seat`` sees and remembers, as a float32 vector (never a hidden card)."""
        if type(seat) is not int or not 0 <= seat < self.num_players:     # the hot path: one comparison
            seat = self._check_seat(seat, "observation")
        return self._observation(seat)

    def describe_action(self, action: int) -> str:
        """Action ``action`` in words, in this state ("7H takes 4C")."""
        if type(action) is not int or not 0 <= action < self.game.num_actions:
            if isinstance(action, bool) or not hasattr(action, "__index__") \
                    or not 0 <= action < self.game.num_actions:
                raise ValueError(f"describe_action: {short(action)} is not an action id of {self.game.name} "
                                 f"(an int or NumPy integer from 0 to {self.game.num_actions - 1}; parse_action "
                                 "reads a move's text)")
            action = int(action)
        return self._describe_action(action)

    def determinize(self, seat: int, rng: random.Random) -> "State":
        """A copy whose hidden cards are re-dealt consistently with what ``seat`` has seen (docs/design.md)."""
        return self._determinize(self._check_seat(seat, "determinize"), rng)

    def render(self, seat: int | None = None) -> str:
        """The table as text: as ``seat`` sees it, or every hand with ``seat=None``."""
        return self._render(None if seat is None else self._check_seat(seat, "render"))

    def is_public_action(self, action: int) -> bool:
        """Whether the other seats see this action when it is made (an Ish call is only seen at RESOLVE).
        Interfaces that show moves as they happen (``kahve play``) hide the others."""
        return True

    def _logged_move(self, seat: int, action: int, forced: bool) -> Move:
        """The move-log entry of ``action`` by ``seat``, made *before* it is applied (so the text is
        state-aware). Default: :meth:`describe_action` for everyone when :meth:`is_public_action`, else only
        the mover sees it and the others read "player k: decides (shown later)". A game overrides this where an
        action shows less to the others than to the mover (a draw: the drawer sees the card), or to say more
        than the action's name (what a capture took, where a turned card went). The text has no "player k:"
        prefix (:meth:`move_texts` adds it) and never names a card its reader cannot see."""
        text = self.describe_action(action)
        if self.is_public_action(action):
            return Move(seat, action, text, forced, self.deals_completed)
        return Move(seat, action, "decides (shown later)", forced, self.deals_completed, {seat: text})

    def forced_is_public(self, action: int) -> bool:
        """Whether every seat, seeing ``action`` made now as the single legal action, could tell that it was the
        only choice: the legal actions follow from what everyone sees (hand sizes, face-up cards, the phase).
        Asked before the forced action is applied. Default: no, so only the mover is told (a game whose
        choices depend on a hidden hand must say no; one whose do not overrides this)."""
        return False

    def forced_note(self, action: int) -> str:
        """The label of ``action`` played by the engine as the single legal action (default "only choice")."""
        return "only choice"

    def _log_move(self, seat: int, action: int, forced: bool) -> None:
        """Append the move-log entry of ``action`` (before it is applied), with who may be told it was forced."""
        m = self._logged_move(seat, action, forced)
        if forced:
            m = m._replace(forced=True, forced_public=bool(self.forced_is_public(action)),
                           note=self.forced_note(action))
        self.move_log.append(m)

    def _log_event(self, text: str, private: dict | None = None) -> None:
        """Note a table event (a forced draw, a card turned by the rules, a new deal, the deal's scoring) in the
        move log, if it is on. ``text`` is a whole sentence that names the seats it is about; ``private`` maps
        a seat to the wording it sees instead (its own drawn cards)."""
        if self.move_log is not None:
            self.move_log.append(Move(None, None, text, True, self.deals_completed, private))

    def _action_aliases(self, action: int) -> Sequence[str]:
        """Other texts accepted by ``parse_action`` for a legal action (the bare form)."""
        return ()

    def to_dict(self) -> dict:
        """The whole state, hidden parts included, as plain JSON-able data: the keys every game shares
        (``game``, ``settings``, ``players``, ``dealer``, ``current_player``, then the game's own keys from
        :meth:`_state_dict`, documented in its module docstring, then ``scores`` per side,
        ``deals_completed``, ``terminal``, ``truncated``, ``winners``)."""
        return {
            "game": self.game.name,
            "settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.settings.items()},
            "players": self.num_players,
            "dealer": self.dealer,
            "current_player": self.current_player,
            **self._state_dict(),
            "scores": list(self.scores),
            "deals_completed": self.deals_completed,
            "terminal": self.terminal,
            "truncated": self.truncated,
            "winners": None if self.winners is None else list(self.winners),
        }

    def _state_dict(self) -> dict:
        """The game's own part of :meth:`to_dict`."""
        raise NotImplementedError

    def _is_legal(self, action: int) -> bool:
        return action in self.legal_actions()

    # ----- shared mechanics --------------------------------------------------------------------------
    @property
    def chance_rng(self) -> random.Random:
        """The chance stream (every chance event but the shuffles). Seeding a generator costs as much as a
        few moves, and in most deals no such event happens, so it is created when first drawn from; the
        numbers it draws are the same either way."""
        if self._chance_rng is None:
            self._chance_rng = seeded(self._chance_seed)
        return self._chance_rng

    def start_move_log(self) -> list[Move]:
        """Turn on the move log: from now on every applied action, forced ones included, and every table event
        the game notes is appended to :attr:`move_log` (one mechanism for play, replay, demo, records and the
        web table). Off by default, so training and search pay nothing for it. :meth:`clone` copies it;
        ``new_state(..., move_log=True)`` logs from the first card, the deal itself included."""
        if self.move_log is None:
            self.move_log = []
        return self.move_log

    def move_texts(self, seat: int | None, start: int = 0, names: dict | None = None) -> list[str]:
        """The move log from entry ``start`` on as ``seat`` saw it (``None``: the public view). A move is
        prefixed with who acted ("player 1: 7H takes 4C"; ``names`` may rename seats), the reader's own seat
        is "player k (you)" throughout (:func:`mark_you`), and a forced move is marked "(only choice)" (or its
        own note) only where the reader could tell that it was forced (:meth:`Move.forced_for`); a table
        event (``seat`` None) is its text alone."""
        return [move_line(m, seat, names) for m in self.move_log[start:]]

    # ----- deal and match results in words (logged as table events; the screens show them) -------------
    def side_name(self, side: int) -> str:
        """"player 2", or "players 0 and 2" for a partnership."""
        seats = [p for p in range(self.num_players) if self.game.sides[p] == side]
        if len(seats) == 1:
            return f"player {seats[0]}"
        return "players " + ", ".join(str(p) for p in seats[:-1]) + f" and {seats[-1]}"

    def describe_deal(self, report: dict) -> list[str]:
        """The end of a deal in words, one line per side (a game overrides it with its scoring breakdown).
        Logged as table events when the deal ends, so every screen shows it once."""
        g = self.game
        first = {g.sides[p]: p for p in reversed(range(self.num_players))}
        word = "penalty points" if g.points_sign < 0 else "points"
        lines = [f"{self.deal_word} {self.deals_completed} over"]
        for side in range(g.num_sides):
            p = first[side]
            lines.append(f"  {self.side_name(side)}: {report['deal_points'][p]} {word}, "
                         f"total {report['scores'][p]}")
        return lines

    def describe_match(self, seat: int | None = None) -> str:
        """The match result in one line, as ``seat`` reads it ("you win"; ``None``: the public wording)."""
        g = self.game
        deals = self.deals_completed
        how = f"after {deals} {self.deal_word}{'s' if deals != 1 else ''}"
        head = ("match stopped at the cap " if self.truncated else "match over ") + how
        winners = self.winners or []
        sides = sorted({g.sides[p] for p in winners})
        totals = ", ".join(f"{self.side_name(sd)} {self.scores[sd]}" for sd in range(g.num_sides))
        if not sides or len(sides) == g.num_sides:
            result = "nobody wins (a draw)" if not sides or g.num_sides > 1 else ""
        elif seat is not None and g.sides[seat] in sides:
            result = "you win" if len(sides) == 1 else "you share the win with " + ", ".join(
                self.side_name(sd) for sd in sides if sd != g.sides[seat])
        else:
            names = " and ".join(self.side_name(sd) for sd in sides)
            result = f"{names} win{'s' if len(sides) == 1 and len(winners) == 1 else ''}"
            if seat is not None:
                result += " (you lose)"
        return f"{head}: {result}; totals: {totals}"

    def _log_match_end(self) -> None:
        """The match result as the last table event (each seat reads "you win" or "you lose")."""
        self._log_event(self.describe_match(), {p: self.describe_match(p) for p in range(self.num_players)})

    @property
    def is_terminal(self) -> bool:
        return self.terminal or self.truncated

    def _legal_view(self) -> list[int]:
        """The legal actions without a copy, for the engine's own reads (the mask, forced moves): a game whose
        ``legal_actions()`` copies a list it keeps (a hand) returns that list here. Read it, never change it."""
        return self.legal_actions()

    def legal_mask(self) -> np.ndarray:
        mask = np.zeros(self.game.num_actions, dtype=bool)
        if self.current_player is None:
            return mask
        legal = self._legal_view()
        if len(legal) < 16:              # a few items one by one: cheaper than numpy's list indexing
            for a in legal:
                mask[a] = True
        else:
            mask[legal] = True
        return mask

    def apply(self, action: int) -> None:
        """Apply one legal action, then any forced single-choice decisions (C-4)."""
        if self.current_player is None:
            raise IllegalActionError(f"the {self.game.name} game is over; no action can be applied")
        if type(action) is not int:  # the common case first: this is the hot path of every rollout
            if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
                raise IllegalActionError(f"an action must be an integer id, not {short(action)}")
            action = int(action)
        if not self._is_legal(action):
            raise IllegalActionError(self._illegal_message(action))
        if self._paid:                       # rewards of the previous step are cleared only when there were any
            self.rewards = [0.0] * self.num_players
            self._paid = False
        version = self._version
        if self._views_version == version:   # kept views current before the move follow it (the moves update them)
            self._views_version = version + 1
        self._version = version + 1
        if self.move_log is not None:
            self._log_move(self.current_player, action, False)
            self._apply(action)
            if self._skip_single_choice:
                self._auto_play()
            if self.current_player is None:
                self._log_match_end()
            return
        self._apply(action)
        if self._skip_single_choice:
            self._auto_play()

    def _illegal_message(self, action: int) -> str:
        legal = self.legal_actions()
        if 0 <= action < self.game.num_actions:
            try:
                what = f" ({self.describe_action(action)})"
            except Exception:  # an action that makes no sense here may not be describable
                what = ""
        else:
            what = f" (outside 0..{self.game.num_actions - 1})"
        listing = ", ".join(f"{a} {self.describe_action(a)}" for a in legal)
        return (f"illegal action {action}{what} for player {self.current_player} in {self.game.name}; "
                f"legal: {listing}")

    def _auto_play(self) -> None:
        if not self._skip_single_choice:
            return
        while self.current_player is not None:
            legal = self._legal_view()
            if len(legal) != 1:
                return
            if self.move_log is not None:
                self._log_move(self.current_player, legal[0], True)
            self._apply(legal[0])

    def _copy_core(self, streams: bool = True) -> dict:
        """The start of a game's own fast ``clone()``: a shallow copy of the attributes with every field the base
        class keeps made independent (rewards, returns, scores, out, winners, the move log, and with
        ``streams`` the random streams); the game then copies its own mutable fields. ``deal_report`` is
        shared: it is replaced when a deal ends, never changed once stored."""
        d = self.__dict__.copy()
        for name in _NOT_CLONED:                    # a copy is appraised and observed anew (it may be changed by
            d.pop(name, None)                       # hand; a search's copies are not observed)
        for name in ("rewards", "returns", "scores", "out"):
            d[name] = d[name][:]
        if self.winners is not None:
            d["winners"] = self.winners[:]
        if self.move_log is not None:               # the clone's own log from here on
            d["move_log"] = self.move_log[:]
        if streams:
            d.update(self._copied_streams())
        return d

    def _copied_streams(self) -> dict:
        """Independent copies of the random streams, for a game's own ``clone()`` (the chance stream only if it
        was made)."""
        streams = {"deck_rng": copy_rng(self.deck_rng)}
        if self._chance_rng is not None:
            streams["_chance_rng"] = copy_rng(self._chance_rng)
        return streams

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()                # pickled without the views (memoryviews): built if read
        state.pop("_views", None)
        return state

    def clone(self) -> "State":
        """An independent copy, fast enough for search (thousands per move).

        Every attribute is copied by :func:`_copy_value`: builtin containers recursively, random generators
        and numpy arrays by value. Anything else (the game, the settings) is shared, so a state must keep its
        mutable data in builtin containers. A move log is copied too (the clone's own from then on); a search
        that clones a logged state should turn the copy's log off (``move_log = None``) so that it costs nothing.
        """
        new = object.__new__(type(self))
        new.__dict__ = {k: _copy_value(v) for k, v in self.__dict__.items() if k not in _NOT_CLONED}
        return new

    # ----- deals, match end, rewards (C-6, C-7) ------------------------------------------------------
    def side_of(self, seat: int) -> int:
        return self.game.sides[seat]

    def _pay(self, per_seat: Sequence[float]) -> None:
        self._paid = True
        for i, r in enumerate(per_seat):
            self.rewards[i] += r
            self.returns[i] += r

    def _end_deal(self, side_points: Sequence[float], breakdown: dict) -> None:
        """Score a finished deal: add to the match totals, pay ``"points"`` rewards, decide match end or
        truncation. The game then starts the next deal if :attr:`is_terminal` is still false."""
        g, n = self.game, self.num_players
        for side, p in enumerate(side_points):
            self.scores[side] += p
        self.deals_completed += 1
        if self.settings.reward == "points":
            self._pay([g.side_relative_points(side_points, g.sides[i]) for i in range(n)])
        report = {
            "deal_points": [side_points[g.sides[i]] for i in range(n)],
            "breakdown": breakdown,
            "scores": [self.scores[g.sides[i]] for i in range(n)],
        }
        if self.settings.episode == "deal":
            self._finish(self._best_sides(side_points), report)
        else:
            winning = self._match_winners()
            if winning is not None:
                self._finish(winning, report)
            elif self.deals_completed >= self.settings[g.cap_setting]:
                self._finish(self._best_sides(self.scores), report, truncated=True)
        self.deal_report = report
        if self.move_log is not None:
            for line in self.describe_deal(report):
                self._log_event(line)

    def _best_sides(self, totals: Sequence[float]) -> list[int]:
        best = max(totals) if self.game.points_sign > 0 else min(totals)
        return [s for s, t in enumerate(totals) if t == best]

    def _match_winners(self) -> list[int] | None:
        """Winning sides if the match is over after this deal, else ``None``. Default: the highest total
        wins once some side reaches ``target_score``; a tie at the top continues (``tie_rule`` with
        an extra deal) or is shared."""
        target = self.settings.target_score
        if max(self.scores) < target:
            return None
        best = self._best_sides(self.scores)
        if len(best) > 1 and self._tie_continues():
            return None
        return best

    def _tie_continues(self) -> bool:
        return self.settings.tie_rule in ("extra_deal", "extra_round")

    def _finish(self, winning_sides: Sequence[int], report: dict | None = None, truncated: bool = False) -> None:
        """End the match: outcome rewards (C-7), winners, terminal or truncated."""
        g = self.game
        winning = set(winning_sides)
        if self.settings.reward == "outcome":
            self._pay_outcome(winning)
        self.winners = [i for i in range(self.num_players) if g.sides[i] in winning]
        if report is not None:
            report["winners"] = list(self.winners)
        if truncated:
            self.truncated = True
        else:
            self.terminal = True
        self.current_player = None

    def _pay_outcome(self, winning: set) -> None:
        """C-7: the winning sides share +1, the others share -1; every seat receives its side's value."""
        g = self.game
        k = len(winning)
        if 0 < k < g.num_sides:
            win, lose = 1.0 / k, -1.0 / (g.num_sides - k)
            self._pay([win if g.sides[i] in winning else lose for i in range(self.num_players)])

    # ----- action text ------------------------------------------------------------------------------
    _TOKEN = re.compile(r"[^\s,;()]+")

    def _normalize(self, text: str) -> str:
        words = []
        for tok in self._TOKEN.findall(str(text)):
            try:
                words.append(self.card_str(self.parse_card(tok)))
            except ValueError:
                words.append(tok.lower())
        return " ".join(words)

    def parse_action(self, text: str) -> int:
        """The legal action that ``text`` names: what :meth:`describe_action` printed, or a bare form."""
        if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
            if self._is_legal(int(text)):
                return int(text)
            raise IllegalActionError(self._illegal_message(int(text)))
        want = self._normalize(text)
        legal = self.legal_actions()
        for a in legal:
            if want == self._normalize(self.describe_action(a)):
                return a
        for a in legal:
            if any(want == self._normalize(alias) for alias in self._action_aliases(a)):
                return a
        listing = "; ".join(self.describe_action(a) for a in legal) or "none (the game is over)"
        raise ValueError(f"{short(text)} is not a legal action here; legal: {listing}")
