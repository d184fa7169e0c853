"""Game records: finished games saved as JSON lines, loaded with validation, and replayed exactly.

One game per line, one JSON object::

    {"format": "kahve-record", "version": 1,
     "game": "pishti", "env_version": 0,            # the engine's Game.version when it was played
     "settings": {...every setting...},             # the full resolved settings
     "seed": 123,                                   # the seed passed to game.new_state
     "deck": ["7H", ...],                           # optional: the first deal's preset card order
     "actions": [13, 40, ...],                      # every decision, in order (forced ones are not listed
                                                    #   when skip_single_choice is on: the engine plays them)
     "result": {"winners": [seats], "scores": [match total per seat], "returns": [per seat]},
     "players": ["you", "heuristic"],               # optional: who played each seat
     "checksum": "sha256:..."}                      # optional: see below; kahve writes it into every record

The record keeps the chosen actions only; :func:`replay_moves` gives the whole move log of the game (forced
moves and table events included, as ``kahve play`` announced them), for ``kahve replay`` and other screens.

A record replays exactly because the engine draws every chance event from its seed (``deck_rng`` and
``chance_rng``, :mod:`kahve.envs.core.engine`): the same seed, settings and actions give the same states.
Loading checks the shape, the game, its version, the settings, every action and the result, and every problem
is a ``ValueError`` naming the file, the line and what is wrong.

Records are files that people hand each other, so loading also refuses what was changed by hand:

* ``checksum``: ``"sha256:"`` and the SHA-256 of the record's canonical JSON without the checksum (:func:`checksum`:
  keys sorted, no spaces, ASCII). Every record kahve makes carries one (:func:`build_record`, :func:`make_record`);
  a record whose content no longer gives it is refused as "changed after it was written", even where the change
  is another legal move with the same outcome. It detects a changed file, it is no signature: whoever edits a
  record can compute a new one. A record without one (written by a kahve before checksums) still loads.
* ``deck``: a preset deck (``make_record(..., deck=...)``) is carried only by checksummed records. In a record
  without a checksum the seed is the only authority on the cards, so a deck must be exactly the one the seed
  deals at the record's table (:func:`seed_deck`); any other (two face-down cards swapped, the stocks exchanged)
  is refused as tampered with.
* the file: only a regular file of at most :data:`MAX_FILE_BYTES` bytes is read (never ``/dev/zero``, a pipe or
  a folder), as UTF-8, a byte-order mark at the start of a line ignored.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import sys
from typing import Any, Iterable, Sequence

from kahve import envs

FORMAT = "kahve-record"
VERSION = 1
REQUIRED_KEYS = ("format", "version", "game", "env_version", "settings", "seed", "actions", "result")
OPTIONAL_KEYS = ("deck", "players", "checksum")
RESULT_KEYS = ("winners", "scores", "returns")


def _plain(value: Any) -> Any:
    """Settings values as JSON data (tuples become lists, numpy scalars plain numbers)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value


def result_of(state) -> dict:
    """The result part of a record for a finished state: winners, match totals per seat, returns per seat."""
    g = state.game
    return {"winners": list(state.winners or []),
            "scores": [_plain(state.scores[g.sides[i]]) for i in range(state.num_players)],
            "returns": [float(r) for r in state.returns]}


def build_record(game, seed: int, actions: Sequence[int], result: dict | None, deck: Sequence | None = None,
                 players: Sequence[str] | None = None) -> dict:
    """A record from its parts, with its checksum, without checking it (see :func:`make_record`,
    :func:`check_record`)."""
    record = {
        "format": FORMAT, "version": VERSION,
        "game": game.name, "env_version": game.version,
        "settings": {k: _plain(v) for k, v in game.settings.items()},
        "seed": int(seed),
    }
    if deck is not None:
        record["deck"] = [str(c) for c in deck]
    record["actions"] = [int(a) for a in actions]
    record["result"] = None if result is None else {k: _plain(list(result[k])) for k in RESULT_KEYS}
    if players is not None:
        record["players"] = [str(p) for p in players]
    record["checksum"] = checksum(record)
    return record


def make_record(game, seed: int, actions: Sequence[int], state=None, deck: Sequence | None = None,
                players: Sequence[str] | None = None) -> dict:
    """The record of one game of ``game`` (an engine :class:`~kahve.envs.core.Game`) started with
    ``game.new_state(seed, deck)`` and played with ``actions``. ``state`` is the finished state (replayed
    from the actions when not given)."""
    if not _is_int(seed):
        raise ValueError(f"a record needs an integer seed, not {seed!r}")
    record = build_record(game, seed, actions, None, deck, players)
    if state is None:
        state = replay_states(record, check_result=False, game=game)[-1]
    if state.current_player is not None:
        raise ValueError(f"a record is for a finished game; this {game.name} game still has player "
                         f"{state.current_player} to move")
    record["result"] = result_of(state)
    record["checksum"] = checksum(record)
    return record


def checksum(record: dict) -> str:
    """``"sha256:"`` and the hex SHA-256 of ``record`` without its ``"checksum"``, as canonical JSON (keys sorted, no
    spaces, ASCII escapes: the same whatever wrote the file or how its keys are ordered)."""
    body = {k: v for k, v in record.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def seed_deck(game, seed: int) -> list[int]:
    """The first deal's card order (card ids, top first) that ``game.new_state(seed)`` shuffles: the engine's
    ``deck_rng`` is seeded from the first draw of the seed's generator (:class:`~kahve.envs.core.engine.State`),
    and shuffles the game's whole deck (tests/agents/test_records.py checks that the two agree for every game)."""
    from kahve.envs.core.rng import seeded, shuffle
    cards = game.full_deck()
    shuffle(seeded(seeded(seed).getrandbits(64)), cards)
    return cards


def dumps(record: dict) -> str:
    """One record as one line of JSON (no newline)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def write_records(path: str, records: Iterable[dict], append: bool = False) -> str:
    """Write records to ``path`` (one per line); ``append`` adds to an existing file. Returns the path."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for r in records:
            f.write(dumps(r) + "\n")
    return path


# ----- loading and validation --------------------------------------------------------------------------------
def _fail(where: str, problem: str) -> ValueError:
    return ValueError(f"{where}: {problem}" if where else problem)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_record(record: Any, where: str = "", replay: bool = True):
    """Validate one record; ``where`` (e.g. ``"games.jsonl line 3"``) prefixes every error message.

    Checks the keys, the format and its version, the game and its env version, the settings, the seed and
    deck, and (with ``replay``) that every action is legal on replay and the game ends with the recorded
    result. Returns the game (an engine :class:`~kahve.envs.core.Game`)."""
    if not isinstance(record, dict):
        raise _fail(where, f"a record is a JSON object, not {type(record).__name__}")
    if record.get("format") != FORMAT:
        got = record.get("format")
        raise _fail(where, f"not a kahve game record (its \"format\" is {got!r}, expected {FORMAT!r})"
                    if "format" in record else "not a kahve game record (no \"format\": \"kahve-record\")")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise _fail(where, f"the record lacks {', '.join(repr(k) for k in missing)}")
    unknown = sorted(set(record) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(repr(k) for k in unknown)}; a record has "
                    + ", ".join(REQUIRED_KEYS + OPTIONAL_KEYS))
    v = record["version"]
    if v != VERSION:
        raise _fail(where, f"record format version {v!r} is not supported (this kahve reads version {VERSION})")
    name = record["game"]
    if not isinstance(name, str) or name not in envs.GAMES:
        raise _fail(where, f"unknown game {name!r}; known games: {', '.join(envs.GAMES)}")
    cls = envs.game_class(name)
    if record["env_version"] != cls.version:
        raise _fail(where, f"the record was made with {name} v{record['env_version']!r}, but this kahve has "
                    f"{name} v{cls.version}; its rules or actions may differ, so it cannot be replayed")
    settings = record["settings"]
    if not isinstance(settings, dict):
        raise _fail(where, "\"settings\" must be a JSON object of setting names and values")
    try:
        game = cls(**settings)
    except ValueError as err:
        raise _fail(where, f"invalid settings: {err}") from None
    if not _is_int(record["seed"]):
        raise _fail(where, f"\"seed\" must be an integer, not {record['seed']!r}")
    deck = record.get("deck")
    if deck is not None:
        if not isinstance(deck, list):
            raise _fail(where, "\"deck\" must be a list of card strings")
        try:
            game.check_deck(deck)
        except ValueError as err:
            raise _fail(where, f"invalid deck: {err}") from None
    actions = record["actions"]
    if not isinstance(actions, list) or not all(_is_int(a) for a in actions):
        raise _fail(where, "\"actions\" must be a list of integer action ids")
    result = record["result"]
    if not isinstance(result, dict) or any(k not in result for k in RESULT_KEYS):
        raise _fail(where, "\"result\" must be an object with " + ", ".join(repr(k) for k in RESULT_KEYS))
    for key in RESULT_KEYS:
        values = result[key]
        if not isinstance(values, list) or not all(_is_number(v) for v in values):
            raise _fail(where, f"\"result\".{key!r} must be a list of numbers, not {_short(values)}")
    players = record.get("players")
    if players is not None and (not isinstance(players, list) or len(players) != game.num_players
                                or not all(isinstance(p, str) for p in players)):
        raise _fail(where, f"\"players\" must list one name (a string) per seat ({game.num_players}), "
                    f"not {_short(players)}")
    changed = _changed(record, where)
    if deck is not None and changed is None and "checksum" not in record:
        dealt, given = seed_deck(game, record["seed"]), list(game.check_deck(deck))
        if given != dealt:
            k = next(i for i, (a, b) in enumerate(zip(given, dealt)) if a != b)
            name = game.state_class.card_str
            raise _fail(where, f"tampered with: its \"deck\" is not the one seed {record['seed']} deals at this "
                        f"table (card {k + 1} is {name(given[k])}, the seed deals {name(dealt[k])}), and the "
                        "record has no checksum to show that kahve wrote it with a preset deck")
    if replay:
        try:
            replay_states(record, game=game)
        except ValueError as err:       # a changed record that no longer replays: both facts, the change first
            raise _fail(where, f"{changed}: {err}" if changed else str(err)) from None
    if changed:
        raise _fail(where, changed)
    return game


def _changed(record: dict, where: str) -> str | None:
    """What to say of a record whose checksum its content does not give (None: it does, or it has none). A record
    has one or has none: ``"checksum": null`` is neither, and refused (else it would pass as a checksummed record's
    preset deck without a check, and as an older kahve's record without the note that says so)."""
    if "checksum" not in record:
        return None
    stored = record["checksum"]
    if not (isinstance(stored, str) and len(stored) == 71 and stored.startswith("sha256:")
            and all(c in "0123456789abcdef" for c in stored[7:])):
        raise _fail(where, f"\"checksum\" must be \"sha256:\" and 64 hex digits, not {_short(stored)}")
    actual = checksum(record)
    if actual == stored:
        return None
    return (f"the record was changed after it was written (checksum {stored[:19]}..., its content gives "
            f"{actual[:19]}...)")


def replay_states(record: dict, where: str = "", check_result: bool = True, game=None) -> list:
    """Re-create the game of a record: ``states[k]`` is the state after ``k`` actions (``states[0]`` the
    start, ``states[-1]`` the end). An illegal action, a game that ends too early or not at all, or a result
    that differs from the recorded one is a ``ValueError``."""
    if game is None:
        game = check_record(record, where, replay=False)
    state = game.new_state(record["seed"], record.get("deck"))
    states = [state.clone()]
    actions = record["actions"]
    for k, action in enumerate(actions):
        if state.current_player is None:
            raise _fail(where, f"the game is over after {k} of the {len(actions)} recorded actions")
        try:
            state.apply(action)
        except ValueError as err:  # IllegalActionError is a ValueError
            raise _fail(where, f"action {k} ({action}) is illegal on replay: {err}") from None
        states.append(state.clone())
    if state.current_player is not None:
        raise _fail(where, f"the game is not over after all {len(actions)} recorded actions "
                    f"(player {state.current_player} to move)")
    if check_result:
        got, want = result_of(state), record["result"]
        same = (got["winners"] == want["winners"] and got["scores"] == want["scores"]
                and len(got["returns"]) == len(want["returns"])
                and all(isinstance(w, (int, float)) and math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-9)
                        for g, w in zip(got["returns"], want["returns"])))
        if not same:
            raise _fail(where, f"the replay ends with {got}, but the record says {want}")
    return states


def replay_moves(record: dict, where: str = "", game=None) -> tuple[list, list[int]]:
    """The game of a record as its move log (:meth:`~kahve.envs.core.engine.State.start_move_log`): every
    applied action, the forced ones the record does not list included, and the table's events (deals, forced
    draws, scoring, the result). Returns ``(moves, marks)``: ``moves`` the log of the whole game, ``marks[k]``
    the log's length after ``k`` recorded actions (``marks[0]``: what happened before the first decision), so
    ``moves[marks[k]:marks[k + 1]]`` is the ``k+1``-th recorded action and what followed it. The record format
    is unchanged; call :func:`replay_states` (or :func:`check_record`) first to validate it."""
    if game is None:
        game = check_record(record, where, replay=False)
    state = game.new_state(record["seed"], record.get("deck"), move_log=True)
    marks = [len(state.move_log)]
    for k, action in enumerate(record["actions"]):
        try:
            state.apply(action)
        except ValueError as err:  # IllegalActionError is a ValueError
            raise _fail(where, f"action {k} ({action}) is illegal on replay: {err}") from None
        marks.append(len(state.move_log))
    return state.move_log, marks


#: a record line longer than this is refused unread (a real record is a few kB: one int per decision)
MAX_LINE = 10_000_000
#: a record file larger than this is refused unread (100 MB: tens of thousands of games; ``kahve evaluate --record``
#: writes one file per evaluation)
MAX_FILE_BYTES = 100_000_000


def parse_records(lines: Iterable[str], source: str = "<records>", replay: bool = True,
                  problems: list | None = None) -> list[dict]:
    """Records from JSON lines (blank lines skipped), each validated by :func:`check_record`. A bad line is a
    ``ValueError`` naming it; with a ``problems`` list, each bad line's error goes there instead and the good
    records are still returned (one damaged line does not cost the others)."""
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            out.append(_parse_line(line, where, replay))
        except ValueError as err:
            if problems is None:
                raise
            problems.append(str(err))
    return out


def _parse_line(line: str, where: str, replay: bool) -> dict:
    line = line.removeprefix("\ufeff")   # a byte-order mark (some editors write one; files joined by cat): no content
    if len(line) > MAX_LINE:
        raise _fail(where, f"a line of {len(line):,} characters is not a game record")
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise _fail(where, f"not valid JSON ({err.msg} at column {err.colno}); a record file has one "
                    "JSON object per line") from None
    except RecursionError:
        raise _fail(where, "JSON nested too deeply to be a game record") from None
    except ValueError:      # Python's own limit on the digits of an integer (sys.get_int_max_str_digits)
        raise _fail(where, f"a number of more than {sys.get_int_max_str_digits():,} digits is not in a game "
                    "record") from None
    check_record(record, where, replay=replay)
    return record


def load_records(path: str, replay: bool = True, problems: list | None = None) -> list[dict]:
    """All records of a JSON-lines file, validated (and replayed, with ``replay``). An empty file, a
    malformed line or a foreign record is a ``ValueError`` naming the file and line; with a ``problems`` list,
    bad lines are reported there and the good records returned (an error only if none is good)."""
    if os.path.isdir(path):
        files = sorted(n for n in os.listdir(path) if n.endswith(".jsonl"))
        raise ValueError(f"{path} is a folder; give one of its record files"
                         + (f", e.g. {os.path.join(path, files[0])}" if files else " (it holds no .jsonl files)"))
    text = _read_limited(path)
    records = parse_records(text.splitlines(), path, replay=replay, problems=problems)
    if not records:
        raise ValueError(f"{path}: no game records in the file" + (f" ({problems[0]})" if problems else ""))
    return records


def _read_limited(path: str) -> str:
    """The text of a record file: a regular file of at most :data:`MAX_FILE_BYTES` bytes, read no further (a device
    such as /dev/zero, a pipe, or a file that grows while read is refused in one line, never read to its end)."""
    too_large = f"{path}: larger than {MAX_FILE_BYTES:,} bytes, the most a record file may have"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError(f"{path}: not a regular file, so not a kahve record file")
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise ValueError(too_large)
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(too_large)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file, so not a kahve record file") from None


def record_file(path: str, game: str, seed: int) -> str:
    """Where ``--record PATH`` writes: ``PATH`` itself, or a file inside it when it is a folder (checked before
    a match is played, so a finished match is never lost to a bad path)."""
    if os.path.isdir(path):
        return os.path.join(path, f"{game}_{seed}.jsonl")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"--record {path}: {folder} is not a folder")
    return path
