"""``kahve replay FILE``: step through a recorded game (``kahve play --record``, ``kahve evaluate --record``).

Shows the table before each recorded decision (every hand, or one seat's view with ``--seat K``) and the move
made, in words, followed by what the engine did next by itself: forced moves (a hand's last card, a single
legal action, marked "(only choice)") and the table's events (new hands, forced draws, a deal's scoring, the
result), all from the engine's move log (:func:`~kahve.agents.evaluation.records.replay_moves`), as the chosen
seat saw them: with ``--seat K`` a move is marked forced only where seat K could tell (:meth:`Move.forced_for`). Commands: Enter or ``n`` next, ``p`` previous, a number to jump to the position after that many
moves, ``s K`` to see seat K's view, ``a`` to see all hands, ``q`` to quit. Reads commands from standard input.

The file is checked before anything is shown (:mod:`~kahve.agents.evaluation.records`): only a regular file of at
most ``MAX_FILE_BYTES`` is read, a record changed after kahve wrote it (its checksum) or dealt from a deck its
seed does not deal is refused in one line, and a record without a checksum (an older kahve's) is noted.
"""

from __future__ import annotations

from kahve.agents.evaluation.records import load_records, replay_moves, replay_states

HELP = ("commands: Enter or n = next move, p = previous, a number = jump to the position after that many moves, "
        "s K = seat K's view, a = all hands, q = quit")


def add_arguments(parser) -> None:
    parser.add_argument("file", help="a game record file (JSON lines)")
    parser.add_argument("--game-index", type=int, default=0, metavar="N",
                        help="which game of the file to replay, from 0 (default 0)")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--seat", type=int, default=None, metavar="K", help="show the table as seat K sees it")
    view.add_argument("--all", action="store_true", help="show every hand (the default)")


def _view_name(seat: int | None) -> str:
    return "all hands" if seat is None else f"player {seat}'s view"


def replay(record: dict, seat: int | None = None, inp=input, out=print, where: str = "") -> int:
    """Step through one record interactively (replaying it checks every action and the result)."""
    states = replay_states(record, where)
    moves, marks = replay_moves(record, where, game=states[0].game)
    actions = record["actions"]
    n_players = states[0].num_players
    if seat is not None and not 0 <= seat < n_players:
        raise ValueError(f"--seat must be from 0 to {n_players - 1} for this record")
    players = record.get("players")
    who = (lambda p: f"player {p} ({players[p]})") if players else (lambda p: f"player {p}")
    out(f"{record['game']} v{record['env_version']}, seed {record['seed']}, {len(actions)} moves"
        + (f", players: {', '.join(players)}" if players else ""))
    out(HELP)
    pos, last = 0, len(actions)

    def text(m) -> str:
        """An entry as the current view reads it (all hands: the mover's own wording, every forced move marked,
        since that view sees every hand; one seat's view: that seat's wording, forced where it could tell)."""
        t = m.text_for(m.seat if seat is None else seat)
        if m.seat is None:
            return t
        forced = m.forced if seat is None else m.forced_for(seat)
        return f"{who(m.seat)}: {t}" + (f" ({m.note})" if forced else "")

    def show() -> None:
        st = states[pos]
        out("")
        out(f"== position {pos}/{last} ({_view_name(seat)})")
        if pos == 0:
            for m in moves[:marks[0]]:
                out("  " + text(m))
        out(st.render(seat))
        if pos < last:
            first, *rest = moves[marks[pos]:marks[pos + 1]]
            out(f"move {pos + 1}: {text(first)}")
            for m in rest:
                out("  " + text(m))
        else:
            res = record["result"]
            out(f"== game over: winners {', '.join(f'player {w}' for w in res['winners']) or 'none'}; "
                f"scores {', '.join(str(x) for x in res['scores'])}")

    show()
    while True:
        try:
            answer = inp("> ").strip().lower()
        except EOFError:
            return 0
        if answer in ("q", "quit", "exit"):
            return 0
        if answer in ("", "n", "next"):
            if pos == last:
                out("at the end of the game (p = previous, a number = jump, q = quit)")
                continue
            pos += 1
        elif answer in ("p", "prev", "previous"):
            if pos == 0:
                out("at the start of the game")
                continue
            pos -= 1
        elif answer.isdigit():
            if int(answer) > last:
                out(f"no position {answer}; positions are 0 to {last}")
                continue
            pos = int(answer)
        elif answer in ("a", "all"):
            seat = None
        elif answer.split()[0] in ("s", "seat"):
            parts = answer.split()
            if len(parts) != 2 or not parts[1].isdigit() or int(parts[1]) >= n_players:
                out(f"write s K with K a seat from 0 to {n_players - 1}")
                continue
            seat = int(parts[1])
        else:
            out(HELP)
            continue
        show()


def run(args) -> int:
    problems = []                      # a damaged line is skipped and named; the good games still replay
    records = load_records(args.file, replay=False, problems=problems)   # the chosen game is replayed below
    for problem in problems:
        print(f"skipped: {problem}")
    if not 0 <= args.game_index < len(records):
        raise ValueError(f"--game-index must be from 0 to {len(records) - 1}: {args.file} holds "
                         f"{len(records)} game(s)")
    record = records[args.game_index]
    if "checksum" not in record:       # a record of a kahve before checksums: it loads, but say what is not checked
        print("note: this record has no checksum (an older kahve wrote it), so a change to it cannot be detected")
    return replay(record, None if args.all else args.seat, where=f"{args.file}, game {args.game_index}")
