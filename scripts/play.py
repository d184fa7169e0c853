"""``kahve play GAME``: a person plays a full match in the terminal against bots.

The table is shown from the person's seat (own hand, piles, scores) whenever it is their turn. Every move is
announced as the engine's move log has it (:meth:`~kahve.envs.core.engine.State.move_texts`): chosen and forced
moves alike, the table's own events (a new deal, forced draws, a deal's scoring, the match result), and only
what the person's seat can see (an opponent's draw is "draws a card"; "(only choice)" only where the person
could tell, never on an opponent's move that hinged on their hidden cards). The person is "player k (you)" in
every line. Legal moves are
listed with numbers; type a number, or the move as text ("7H", "7H takes 5 cards", "give"), ``?`` for the
player guide of the game, ``q`` to quit. Invalid input is explained and asked again.

Without ``--bot`` the opponents are the game's trained bot at level ``medium`` wherever a shipped bot fits the
table (:func:`default_opponent`), and the heuristic otherwise; one line says which.

With a bot file as the opponent, the bot's own settings (read from the file) are the table's defaults, so
``kahve play pishti --bot checkpoints/pishti/ppo_2p.onnx`` plays the 2-player table it was trained for;
``--settings`` still overrides them. A setting that changes what the bot's observations mean is refused in one
line naming the fix; any other difference from its training is one plain note.
"""

from __future__ import annotations

import os
import random
import warnings

from kahve import envs
from kahve.agents.evaluation.match import Match
from kahve.agents.policies.specs import make_policy
from kahve.envs.core.guide import player_guide, plain

from .common import add_game_arguments, parse_settings

HINT = "type the number of a move, or the move itself; '?' shows the rules, 'q' quits"


def add_arguments(parser) -> None:
    add_game_arguments(parser)
    parser.add_argument("--bot", default=None,
                        help="the opponents: heuristic, random, ismcts:N, rollout:K, a bot file or a "
                             "shipped bot's name (whose settings become the table's defaults), or a difficulty "
                             "level: easy, medium, hard (the game's shipped bot) or BOT:easy|medium|hard "
                             "(default: the game's trained bot at medium where one fits the table, else heuristic)")
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the deal (default: random)")
    parser.add_argument("--record", metavar="FILE",
                        help="append the finished match to FILE as a JSON-lines game record (see kahve replay)")


def rules_summary(game) -> str:
    """The player guide of ``game`` (a game name, or a Game with its settings) for the terminal: turn, legal
    plays, scoring, match end and the house settings in force."""
    if isinstance(game, str):
        game = envs.game_class(game)()
    return plain(player_guide(game))


def _bot_file(spec: str, game: str, settings: dict):
    """The path of the bot file that ``spec`` names (a level ``BOT:LEVEL`` or ``LEVEL`` included), or None when it
    names another kind of policy."""
    if not isinstance(spec, str):
        return None
    from kahve.agents.policies.levels import LEVELS, shipped_bot
    head, _, tail = spec.rpartition(":")
    if spec in LEVELS:                 # the shipped bot that fits the table, else the game's first one
        try:
            return _bot_file(shipped_bot(envs.game_class(game)(**settings)), game, settings)
        except ValueError:
            from kahve.agents.policies.levels import first_shipped_bot
            first = first_shipped_bot(game)
            return None if first is None else _bot_file(first, game, settings)
    if head and tail in LEVELS:
        spec = head
    if ":" in spec or spec in ("random", "heuristic", "ismcts", "rollout"):
        return None
    if os.path.exists(spec):
        return spec
    if "/" in spec or os.path.sep in spec or spec.endswith(".onnx"):
        from kahve import checkpoints
        found = checkpoints.find(spec)
        return str(found) if found is not None else None   # make_policy names a missing file
    return None


def default_opponent(game: str, settings: dict) -> tuple[str, list[str]]:
    """The opponents when ``--bot`` is not given, and the lines that say so: the game's shipped bot at level
    ``medium`` (``pasur/ppo:medium``) where one fits the table, else the heuristic. The table stays the one the
    person asked for (``settings`` over the game's defaults): unlike a named bot, a default one does not bring
    its training settings to the table, and a setting it was not trained with is one note."""
    from kahve import checkpoints
    from kahve.agents.policies.bot import Bot, fit
    from kahve.agents.policies.levels import first_shipped_bot, shipped_bot
    g = envs.game_class(game)(**settings)
    try:
        bot = shipped_bot(g)
    except ValueError:                         # no shipped bot fits: say what of this table none was trained for
        first = first_shipped_bot(game)
        if first is None:
            return "heuristic", [f"no trained {game} bot is shipped; opponents: heuristic"]
        verdict = fit(Bot.read_metadata(checkpoints.find(first))[1], g, first)
        words = [f"{here} players" if k == "players" else
                 ("in partnerships" if here else "without partnerships") if k == "partnerships" else
                 f"{k}={_plain(here)}" for k, (_, here) in verdict.shaping.items()]
        why = " ".join(words) if words else verdict.reason
        return "heuristic", [f"no trained {game} bot fits this table ({why}); opponents: heuristic"]
    other = fit(Bot.read_metadata(checkpoints.find(bot))[1], g, bot).other
    lines = [f"opponents: {bot} (medium)"]
    if other:
        lines.append(f"note: the bot was trained with {', '.join(f'{k}={_plain(t)}' for k, (t, _) in other.items())}; "
                     f"this table plays {', '.join(f'{k}={_plain(h)}' for k, (_, h) in other.items())}")
    return f"{bot}:medium", lines


def table_settings(game: str, settings: dict, bot: str) -> tuple[dict, list[str]]:
    """The table's settings: a bot file's training settings as defaults under ``settings`` (the ones given on
    the command line), and the lines to show about them. A table the bot cannot play is a ``ValueError`` in
    one line that names the setting to change."""
    path = _bot_file(bot, game, settings)
    if path is None:
        return dict(settings), []
    from kahve.agents.policies.bot import NOT_IMPOSED, Bot, BotFileError
    _, meta = Bot.read_metadata(path)
    if meta.get("game") != game:
        raise BotFileError(f"{path} is a bot for {str(meta.get('game'))[:80]}, not {game}")
    game_class = envs.game_class(game)
    spec, shaping_settings = game_class.settings_spec, game_class.space_settings
    trained = {k: v for k, v in meta.get("settings", {}).items() if k in spec.by_name and k not in NOT_IMPOSED}
    table = {**trained, **settings}
    given = [k for k in settings if k in trained and settings[k] != trained[k]]
    shaping = [k for k in given if k in shaping_settings]
    fix = " ".join(f"{k}={_plain(trained[k])}" for k in trained if k in shaping_settings)
    if shaping:
        raise ValueError(f"{path} was trained for {', '.join(f'{k}={_plain(trained[k])}' for k in shaping)}; "
                         f"drop {' '.join(f'{k}={_plain(settings[k])}' for k in shaping)} from --settings "
                         f"(the bot's table is --settings {fix}) or choose another --bot")
    try:
        g = game_class(**table)
    except ValueError as err:
        raise ValueError(f"{err} (the bot {path} sets the table to --settings {fix})") from None
    if (meta.get("observation_size"), meta.get("num_actions")) != (g.observation_size, g.num_actions):
        raise ValueError(f"{path} expects observations of {meta.get('observation_size')} and "
                         f"{meta.get('num_actions')} actions, which this table does not give; play it with "
                         f"--settings {fix}")
    try:                                       # what the table would be without the bot file
        defaults = envs.game_class(game)(**settings).settings
    except ValueError:
        defaults = envs.game_class(game)().settings
    adopted = [k for k in trained if k not in settings and trained[k] != defaults[k]]
    notes = []
    if adopted:
        notes.append(f"table settings from the bot file: {', '.join(f'{k}={_plain(trained[k])}' for k in adopted)}")
    if given:
        notes.append(f"note: the bot was trained with {', '.join(f'{k}={_plain(trained[k])}' for k in given)}; "
                     f"this table plays {', '.join(f'{k}={_plain(settings[k])}' for k in given)}")
    return table, notes


def _plain(value) -> str:
    """A setting's value as ``--settings`` takes it (one read from a bot file shown in part past 200 characters)."""
    if isinstance(value, (list, tuple)):
        text = ",".join(_plain(v) for v in value)
    else:
        text = str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 200 else text[:195] + " …" + text[-3:]


def _ambiguous(state, answer: str, texts: list[str]) -> list[int]:
    """The moves that ``answer`` begins but does not settle (a Pis Yedili "JC": which suit it names), by index;
    empty when it begins none."""
    want = state._normalize(answer)           # the parser's own reading of card names and case
    return [i for i, t in enumerate(texts) if want and state._normalize(t).startswith(want + " ")]


def make_bots(bot: str, g, seat: int, seed: int) -> tuple[dict, list[str]]:
    """One policy per seat but ``seat``; a warning raised while loading becomes a plain line (the bot's
    training settings are told by :func:`table_settings` already)."""
    from kahve.agents.policies.bot import BotSettingsWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bots = {p: make_policy(bot, g, seed * 100 + p) for p in range(g.num_players) if p != seat}
    lines = []
    for w in caught:
        if issubclass(w.category, BotSettingsWarning):
            continue
        text = f"note: {w.message}"
        if text not in lines:
            lines.append(text)
    return bots, lines


def play(game: str, settings: dict, bot: str | None, seat: int, seed: int | None, inp=input, out=print,
         record: str | None = None) -> int:
    if bot is None:
        bot, notes = default_opponent(game, settings)
    else:
        settings, notes = table_settings(game, settings, bot)
    g = envs.game_class(game)(**settings)
    if not 0 <= seat < g.num_players:
        raise ValueError(f"--seat must be from 0 to {g.num_players - 1} for this table")
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 32)   # drawn here so that a record can name it
    if record:
        from kahve.agents.evaluation.records import record_file

        from .common import check_output
        record = record_file(record, game, seed)        # a bad --record path fails now, not after the match
        check_output(record, "--record")                # (/proc, a folder of /sys, a read-only disk...)
    bots, more = make_bots(bot, g, seat, seed)
    for line in notes + more:
        out(line)
    out(f"{g.__class__.title or game}, {g.num_players} players: you are player {seat}; opponents: {bot}. "
        "Type a number or a move, '?' for the rules, 'q' to quit.")
    match = Match(g, [None if p == seat else bots[p] for p in range(g.num_players)], seed, move_log=True)
    state = match.state
    shown = 0

    def announce() -> None:
        nonlocal shown
        log = state.move_log
        for m, text in zip(log[shown:], state.move_texts(seat, shown)):
            out(text if m.seat is not None else "  " + text)
        shown = len(log)

    while True:
        announce()
        p = state.current_player
        if p is None:
            break
        if p != seat:
            action = match.bot_action()
        else:
            out("")
            out(state.render(seat))
            legal = state.legal_actions()
            texts = [state.describe_action(a) for a in legal]
            out("your moves: " + "   ".join(f"[{i}] {t}" for i, t in enumerate(texts)))
            while True:
                try:
                    answer = inp("> ").strip()
                except EOFError:
                    out("input ended; leaving the match")
                    return 1
                if not answer:
                    out(f"{HINT} (0 to {len(legal) - 1})")
                    continue
                if answer.lower() in ("q", "quit", "exit"):
                    out("you left the match")
                    return 1
                if answer in ("?", "help", "h"):
                    out(rules_summary(g))
                    out("your moves: " + "   ".join(f"[{i}] {t}" for i, t in enumerate(texts)))
                    continue
                if answer.isdigit():
                    if int(answer) < len(legal):
                        action = legal[int(answer)]
                        break
                    out(f"no move [{answer}]; choose 0 to {len(legal) - 1}")
                    continue
                try:
                    action = state.parse_action(answer)
                    break
                except ValueError as err:
                    which = _ambiguous(state, answer, texts)
                    out(f"{answer!r} could be " + " or ".join(f"[{i}] {texts[i]}" for i in which)
                        + ": type the number, or the whole move" if which else f"not understood: {err}")
        match.apply(action)
    if record:
        from kahve.agents.evaluation.records import dumps, make_record, write_records
        players = ["you" if q == seat else bot for q in range(g.num_players)]
        finished = make_record(g, seed, match.actions, state, players=players)
        try:
            write_records(record, [finished], append=True)
        except OSError as err:                            # the match is not lost: the record goes to the screen
            out(f"could not write {record} ({err.strerror}); the record, to save as a .jsonl file:")
            out(dumps(finished))
            return 1
        out(f"match recorded in {record} (seed {seed}); replay it with: kahve replay {record}")
    return 0


def run(args) -> int:
    settings = parse_settings(args.game, args.settings)
    return play(args.game, settings, args.bot, args.seat, args.seed, record=args.record)
