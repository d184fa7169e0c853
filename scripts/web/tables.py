"""The tables of the web server: one engine state per table, its bots, its record, its expiry.

The rules engine is the one authority: a table holds the engine state, applies the person's moves after
checking them against ``legal_actions()``, and lets the bots choose theirs server-side through the policy
specs and the one match loop everyone uses (:func:`kahve.agents.policies.specs.make_policy`,
:class:`kahve.agents.evaluation.match.Match`).
What goes back to the page is built by :mod:`.views` from what the person's seat may see.

A table belongs to the browser session that made it (its owner token) and has an unguessable id; a request
from another session finds nothing. Tables expire after ``idle_seconds`` without a request, and are then
dropped with everything they hold. Every refused request raises :class:`WebError` (status and message) before
anything of the table has changed.

A trained bot's onnxruntime sessions are loaded once per process and shared by every table that plays it
(:func:`kahve.agents.policies.specs.load_bot`); a table holds only its own small ``Bot`` (a generator), so an
extra table costs its engine state and log, well under 1 MB.
"""

from __future__ import annotations

import random
import secrets
import threading
import time
import warnings
from collections import OrderedDict
from pathlib import Path

from kahve import envs

from . import views

#: search strengths offered at the table (ISMCTS iterations per move)
ISMCTS_LEVELS = (100, 400)
#: difficulty-level specs that policy specs may offer (the bots issue); offered once make_policy accepts them
LEVEL_SPECS = ("easy", "medium", "hard")
LEVEL_LABELS = {"easy": "easy (the trained bot, with slips now and then)", "medium": "medium (the trained bot)",
                "hard": "hard (the trained bot, thinking ahead: slower)"}
MAX_ACTIONS_PER_MOVE = 64


class WebError(Exception):
    """A refused request: an HTTP status and a message for the person or the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# ----- opponents ---------------------------------------------------------------------------------------------
_BOT_META: dict[str, dict] = {}
_LEVELS_OK: dict[tuple, bool] = {}


def _bot_metadata(path: Path) -> dict | None:
    key = str(path)
    if key not in _BOT_META:
        from kahve.agents.policies.bot import Bot
        try:
            _BOT_META[key] = Bot.read_metadata(path)[1]
        except (ValueError, FileNotFoundError):
            _BOT_META[key] = None
    return _BOT_META[key]


def shipped_bots(game_name: str) -> list[Path]:
    from kahve import checkpoints
    return sorted((checkpoints.ROOT / game_name).glob("*.onnx"))


def opponent_choices(game_name: str, game=None) -> list[dict]:
    """The opponents a person can pick for ``game_name`` (and, with ``game``, whether each fits its settings):
    the difficulty levels when the policy specs know them, the shipped bots, the rule-based player, the
    searches, random. Every entry is ``{"spec", "label", "fits", "reason"}``; ``spec`` is a policy spec.

    New kinds of opponent appear here as they are added to the policy specs (one list, built in one place)."""
    from kahve.agents.policies.bot import fit
    from kahve.agents.policies.specs import make_policy

    out = []
    probe_game = game if game is not None else envs.game_class(game_name)()
    for level in LEVEL_SPECS:
        key = (game_name, level, repr(probe_game))
        if key not in _LEVELS_OK:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    make_policy(level, probe_game, 0)
                _LEVELS_OK[key] = True
            except Exception:  # a spec that policy specs do not know (yet), or that does not fit these settings
                _LEVELS_OK[key] = False
        if _LEVELS_OK[key]:
            out.append({"spec": level, "label": LEVEL_LABELS[level], "fits": True, "reason": None})
    for path in shipped_bots(game_name):
        meta = _bot_metadata(path)
        spec = f"{game_name}/{path.stem}"
        if meta is None:
            continue
        trained = _trained_for(game_name, meta)
        words = lambda k, v: f"{v} players" if k == "players" else f"{k.replace('_', ' ')} {v}"  # noqa: E731
        label = f"trained bot “{path.stem}”" + (" (" + ", ".join(words(k, v) for k, v in trained.items()) + ")"
                                               if trained else "")
        fits, reason = True, None
        if game is not None:
            verdict = fit(meta, game, spec)
            if not verdict.ok:
                fits = False
                reason = ("trained for " + ", ".join(words(k, trained[k]) for k in verdict.shaping if k in trained)
                          + "; this table has " + ", ".join(words(k, h) for k, (_, h) in verdict.shaping.items())
                          ) if verdict.shaping else verdict.reason
        out.append({"spec": spec, "label": label, "fits": fits, "reason": reason})
    out.append({"spec": "heuristic", "label": "rule-based player (plays by rules of thumb, quick)", "fits": True,
                "reason": None})
    for n in ISMCTS_LEVELS:
        out.append({"spec": f"ismcts:{n}", "label": f"searching player, {n} tries a move (slow: seconds a move)",
                    "fits": True, "reason": None})
    out.append({"spec": "random", "label": "random player (any legal move)", "fits": True, "reason": None})
    return out


def _trained_for(game_name: str, meta: dict) -> dict:
    """The tables a bot was trained for, in words' values, by the settings that shape its observations: ``{"players":
    "2–20"}`` for a bot of several tables, ``{"players": 2}`` for one; another setting at its default (the stake
    ladder, the appraised observation) is left out."""
    game_cls = envs.game_class(game_name)
    defaults = game_cls.settings_spec.defaults()
    tables = meta.get("tables") or [meta.get("settings", {})]
    out = {}
    for k in game_cls.space_settings:
        values = sorted({t[k] for t in tables if k in t}, key=lambda v: (str(type(v)), v))
        if not values or (k not in ("players", "partnerships") and values == [defaults.get(k)]):
            continue
        if len(values) == 1:
            out[k] = values[0]
        elif all(isinstance(v, int) for v in values) and values == list(range(values[0], values[-1] + 1)):
            out[k] = f"{values[0]}–{values[-1]}"
        else:
            out[k] = " or ".join(map(str, values))
    return out


def default_opponent(choices: list[dict]) -> str:
    """The opponent the setup form starts on, among ``choices`` (:func:`opponent_choices`): the game's trained bot at
    level ``medium`` where one fits the table (the level is offered only there), else the rule-based player."""
    return "medium" if any(c["spec"] == "medium" and c["fits"] for c in choices) else "heuristic"


def opponent_label(game_name: str, spec: str) -> str:
    """The opponent as the setup form named it ("trained bot ppo", "hard (difficulty level)")."""
    for choice in opponent_choices(game_name):
        if choice["spec"] == spec:
            return choice["label"]
    return spec


def make_game(game_name: str, settings) -> object:
    """The engine game for a settings dict from the page: values may be typed or text (``"101"``, ``"true"``)."""
    if not isinstance(game_name, str) or game_name not in envs.GAMES:
        raise WebError(400, f"unknown game {game_name!r}; known games: {', '.join(envs.GAMES)}")
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise WebError(400, "\"settings\" must be an object of setting names and values")
    spec = envs.game_class(game_name).settings_spec
    values = {}
    for k, v in settings.items():
        if k in views.HIDDEN_SETTINGS:
            raise WebError(400, f"setting {k!r} is fixed at the web table")
        if k not in spec.by_name:
            try:
                spec.resolve({k: None})
            except ValueError as err:
                raise WebError(400, str(err)) from None
        if isinstance(v, str):
            try:
                v = spec.by_name[k].from_string(v)
            except ValueError as err:
                raise WebError(400, views.player_words(game_name, f"setting {k!r}: {err}")) from None
        values[k] = v
    values.update(views.FIXED_SETTINGS)
    try:
        return envs.game_class(game_name)(**values)
    except (ValueError, TypeError) as err:
        raise WebError(400, views.player_words(game_name, str(err))) from None


# ----- one table ---------------------------------------------------------------------------------------------
class Table:
    """One match between a person (``seat``) and bots, with everything needed to answer the page."""

    def __init__(self, table_id: str, owner: str, game, settings: dict, seat: int, opponent: str,
                 seed: int | None = None):
        from kahve.agents.policies.specs import make_policy
        self.id = table_id
        self.owner = owner
        self.game = game
        self.settings = settings
        self.seat = seat
        self.opponent = opponent
        self.opponent_label = opponent_label(game.name, opponent)
        self.seed = random.SystemRandom().randrange(2 ** 32) if seed is None else seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # a bot trained with another target score plays on
            self.bots = {p: make_policy(opponent, game, self.seed * 100 + p)
                         for p in range(game.num_players) if p != seat}
        from kahve.agents.evaluation.match import Match
        # the one match loop (bots' moves with the log off, every chosen action kept for the record)
        self.match = Match(game, [self.bots.get(p) for p in range(game.num_players)], self.seed, move_log=True)
        self.state = self.match.state
        self.actions = self.match.actions      # every chosen action (forced ones are the engine's), for the record
        self.extra: dict = {}                  # what the seat saw that the state no longer shows (Ish's last cards)
        self.lock = threading.Lock()
        self.touched = time.monotonic()

    @property
    def names(self) -> list[str]:
        return views.seat_names(self.game.num_players, self.seat, list(self.game.sides))

    def view(self) -> dict:
        v = views.seat_view(self.state, self.seat, self.extra)
        v["step"] = len(self.actions)
        v["table"] = self.id
        v["opponent"] = self.opponent
        v["opponent_label"] = self.opponent_label
        return v

    def summary(self) -> dict:
        """One line of the session's list of tables (to go back to one)."""
        st = self.state
        over = st.current_player is None
        word = getattr(st, "deal_word", "deal")
        where = ("finished" if over else
                 f"{word} {st.deals_completed + 1}, " + ("your turn" if st.current_player == self.seat else
                                                         "waiting for the bots"))
        return {"table": self.id, "game": self.game.name, "title": self.game.title, "players": self.game.num_players,
                "opponent": self.opponent_label, "over": over, "where": where,
                "step": len(self.actions)}

    # the one place where the state changes
    def _apply(self, action: int) -> dict:
        st = self.state
        start = len(st.move_log)
        deals = st.deals_completed
        if self.game.name == "ish":
            d = st.to_dict()
            if d["phase"] == "CALL":            # every drawn card is face up until the round is resolved
                self.extra["ish_pending_cards"] = [list(h) if p in d["order"] else None
                                                   for p, h in enumerate(d["hands"])]
        self.match.apply(action)
        return self._event(start, deals)

    def _event(self, start: int, deals_before: int) -> dict:
        st = self.state
        event = {"entries": views.log_entries(st, self.seat, start, self.names), "deal_end": None}
        if st.deals_completed > deals_before and st.deal_report is not None:
            if self.game.name == "ish":
                self.extra["ish_last_cards"] = self.extra.pop("ish_pending_cards", None)
            event["deal_end"] = views.deal_end(st, self.seat, st.deal_report, st.deals_completed, self.extra)
        event["view"] = self.view()
        return event

    def start_events(self) -> list[dict]:
        """The events of a fresh match: what the engine did by itself, then the bots up to the person's turn."""
        events = [self._event(0, 0)]
        return events + self.run_bots()

    def run_bots(self) -> list[dict]:
        events = []
        st = self.state
        while st.current_player is not None and st.current_player != self.seat:
            events.append(self._apply(self.match.bot_action()))
        return events

    def check_moves(self, actions: list[int]) -> None:
        """Refuse (WebError, nothing changed) unless every action is legal in turn for the person's seat."""
        st = self.state
        if st.current_player is None:
            raise WebError(409, "the match is over; start a new match")
        if st.current_player != self.seat:
            raise WebError(409, f"it is player {st.current_player}'s turn, not yours")
        probe = None
        for k, a in enumerate(actions):
            s = st if probe is None else probe
            if s.current_player != self.seat:
                raise WebError(409, f"move {k + 1} of {len(actions)}: it would no longer be your turn")
            if a not in s.legal_actions():
                what = ""
                if 0 <= a < self.game.num_actions:
                    try:
                        what = f" ({s.describe_action(a)})"
                    except Exception:  # an action that makes no sense here may not be describable
                        what = ""
                legal = "; ".join(f"{x} {s.describe_action(x)}" for x in s.legal_actions())
                raise WebError(409, f"illegal move: action {a}{what} is not legal here; legal: {legal}")
            if k + 1 < len(actions):
                if probe is None:
                    probe = st.clone()
                    probe.move_log = None
                probe.apply(a)

    def play(self, actions: list[int]) -> list[dict]:
        self.check_moves(actions)
        events = [self._apply(a) for a in actions]
        return events + self.run_bots()

    def record(self) -> str:
        from kahve.agents.evaluation.records import dumps, make_record
        if self.state.current_player is not None:
            raise WebError(409, "the match is not over yet; its record can be downloaded when it ends")
        players = ["you" if p == self.seat else self.opponent for p in range(self.game.num_players)]
        return dumps(make_record(self.game, self.seed, self.actions, self.state, players=players)) + "\n"


# ----- all tables --------------------------------------------------------------------------------------------
class TableManager:
    """Every live table, by id; thread-safe. Tables idle for ``idle_seconds`` expire; a session keeps at most
    ``per_session`` tables (its least recently used finished one makes room; a running match is never dropped
    to make room: the session is asked to close one), the server at most ``max_tables``."""

    def __init__(self, idle_seconds: float = 1800.0, max_tables: int = 500, per_session: int = 12, clock=None):
        self.idle_seconds = float(idle_seconds)
        self.max_tables = int(max_tables)
        self.per_session = int(per_session)
        self.clock = clock or time.monotonic
        self.tables: "OrderedDict[str, Table]" = OrderedDict()
        self.expired: "OrderedDict[str, None]" = OrderedDict()   # recently expired ids, to say so
        self.lock = threading.Lock()

    # --- lookup and expiry ---
    def sweep(self) -> None:
        now = self.clock()
        with self.lock:
            for tid in [t for t, tab in self.tables.items() if now - tab.touched > self.idle_seconds]:
                self._drop(tid, expired=True)

    def _drop(self, tid: str, expired: bool) -> None:
        self.tables.pop(tid, None)
        if expired:
            self.expired[tid] = None
            while len(self.expired) > 10_000:
                self.expired.popitem(last=False)

    def get(self, owner: str | None, tid: str) -> Table:
        self.sweep()
        with self.lock:
            table = self.tables.get(tid)
            if table is None or owner is None or not secrets.compare_digest(table.owner, owner):
                if table is None and tid in self.expired:
                    raise WebError(410, "this table has expired after a long pause; start a new match")
                raise WebError(404, "no such table (unknown id, or a table of another browser session)")
            table.touched = self.clock()
            self.tables.move_to_end(tid)
            return table

    # --- requests ---
    def create(self, owner: str, body: dict) -> dict:
        game = make_game(body.get("game"), body.get("settings"))
        seat = body.get("seat", 0)
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < game.num_players:
            raise WebError(400, f"\"seat\" must be a seat number from 0 to {game.num_players - 1}")
        choices = {c["spec"]: c for c in opponent_choices(game.name, game)}
        opponent = body.get("opponent")
        if opponent is None:                   # as the setup form would start: the trained bot where one fits
            opponent = default_opponent(list(choices.values()))
        if opponent not in choices:
            raise WebError(400, f"unknown opponent {opponent!r}; offered: {', '.join(choices)}")
        if not choices[opponent]["fits"]:
            raise WebError(400, f"opponent {opponent!r} does not fit these settings: {choices[opponent]['reason']}")
        seed = body.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 63):
            raise WebError(400, "\"seed\" must be a non-negative integer")
        self.sweep()
        settings = {k: v for k, v in (body.get("settings") or {}).items()}
        table = Table(secrets.token_urlsafe(18), owner, game, settings, seat, opponent, seed)
        table.touched = self.clock()
        with self.lock:
            mine = [t for t, tab in self.tables.items() if tab.owner == owner]
            if len(mine) >= self.per_session:
                done = [t for t in mine if self.tables[t].state.current_player is None]
                if not done:
                    raise WebError(409, f"you already have {len(mine)} matches going at this server; go back to "
                                        "one of them, or close one, before opening another")
                self._drop(done[0], expired=False)
            if len(self.tables) >= self.max_tables:
                raise WebError(503, f"the server already holds {self.max_tables} tables; try again later")
            self.tables[table.id] = table
        with table.lock:
            events = table.start_events()
            return self._answer(table, events)

    def new_match(self, owner: str, tid: str, body: dict | None = None) -> dict:
        old = self.get(owner, tid)
        if not old.lock.acquire(blocking=False):
            raise WebError(409, "the table is busy with another request")
        try:
            table = Table(old.id, owner, old.game, old.settings, old.seat, old.opponent)
            table.touched = self.clock()
            with self.lock:
                if tid in self.tables:
                    self.tables[tid] = table
        finally:
            old.lock.release()
        with table.lock:
            return self._answer(table, table.start_events())

    def move(self, owner: str, tid: str, body: dict) -> dict:
        table = self.get(owner, tid)
        actions = parse_move(body, table)
        if not table.lock.acquire(blocking=False):
            raise WebError(409, "the table is busy with another request")
        try:
            step = body.get("step")
            if step is not None and step != len(table.actions):
                raise WebError(409, f"stale move: the table is at step {len(table.actions)}, the move was made "
                               f"at step {step}; reload the table")
            events = table.play(actions)
            return self._answer(table, events)
        finally:
            table.touched = self.clock()
            table.lock.release()

    def listing(self, owner: str | None) -> list[dict]:
        """The session's tables, the most recently used first."""
        self.sweep()
        if owner is None:
            return []
        with self.lock:
            mine = [tab for tab in self.tables.values() if secrets.compare_digest(tab.owner, owner)]
        return [tab.summary() for tab in reversed(mine)]

    def close(self, owner: str | None, tid: str) -> None:
        table = self.get(owner, tid)
        with self.lock:
            if self.tables.get(tid) is table:
                self._drop(tid, expired=False)

    def show(self, owner: str, tid: str) -> dict:
        table = self.get(owner, tid)
        if not table.lock.acquire(blocking=False):
            raise WebError(409, "the table is busy with another request")
        try:
            # a bot left to move (its move failed in an earlier request) moves now, so the table goes on
            answer = self._answer(table, table.run_bots())
            answer["log"] = views.log_entries(table.state, table.seat, 0, table.names)
            return answer
        finally:
            table.lock.release()

    def record(self, owner: str, tid: str) -> tuple[str, str]:
        table = self.get(owner, tid)
        with table.lock:
            return table.record(), f"kahve_{table.game.name}_{table.seed}.jsonl"

    @staticmethod
    def _answer(table: Table, events: list[dict]) -> dict:
        view = events[-1]["view"] if events else table.view()     # the last event's view is the table's now
        return {"table": table.id, "seat": table.seat, "events": events, "view": view,
                "settings": dict(table.settings)}


def parse_move(body: dict, table: Table) -> list[int]:
    """The action ids of a move request ``{"actions": [...], "seat": k, "step": n}`` (or ``"action": a``);
    a malformed one is a 400, a move for another seat a 403."""
    if "seat" in body:
        seat = body["seat"]
        if not isinstance(seat, int) or isinstance(seat, bool):
            raise WebError(400, "\"seat\" must be an integer")
        if seat != table.seat:
            raise WebError(403, f"you play seat {table.seat} at this table; seat {seat} is not yours")
    if "step" in body and (not isinstance(body["step"], int) or isinstance(body["step"], bool)):
        raise WebError(400, "\"step\" must be an integer")
    if "actions" in body:
        actions = body["actions"]
        if not isinstance(actions, list) or not actions:
            raise WebError(400, "\"actions\" must be a non-empty list of action ids")
    elif "action" in body:
        actions = [body["action"]]
    else:
        raise WebError(400, "a move needs \"action\" (an action id) or \"actions\" (a list of them)")
    if len(actions) > MAX_ACTIONS_PER_MOVE:
        raise WebError(400, f"at most {MAX_ACTIONS_PER_MOVE} actions in one move")
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in actions):
        raise WebError(400, "action ids must be integers")
    n = table.game.num_actions
    bad = [a for a in actions if not 0 <= a < n]
    if bad:
        raise WebError(400, f"action {bad[0]} is outside 0..{n - 1} for this table")
    unknown = sorted(set(body) - {"actions", "action", "seat", "step"})
    if unknown:
        raise WebError(400, f"unknown field(s) {', '.join(map(repr, unknown))} in a move")
    return actions
