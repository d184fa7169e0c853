"""``kahve evaluate GAME A B``: A against B with seats rotated and deals mirrored, with 95% intervals.

At a table of more than two sides, B fills every side but A's; with ``--others C ...``, the sides other than A's
take, in side order, B, then C, ...: one policy each (a table of N sides takes N - 2 after --others).
Every option is checked before the first match: the workers, the --others count, and that --json and --record
can be written."""

from __future__ import annotations

import json
import os

from kahve import envs
from kahve.agents.evaluation.evaluate import evaluate, format_report

from .common import add_game_arguments, check_output, parse_settings
from kahve.agents.progress import progress_bar


def add_arguments(parser) -> None:
    add_game_arguments(parser)
    parser.add_argument("a", help="policy A: random, heuristic, ismcts[:N] or a bot file")
    parser.add_argument("b", help="policy B (fills every side but A's unless --others is given)")
    parser.add_argument("--others", nargs="*", default=[], metavar="SPEC",
                        help="with more than two sides: the sides other than A's take, in order, B and then these, "
                             "one each (N - 2 of them at a table of N sides)")
    parser.add_argument("--games", type=int, default=200, help="matches to play (rounded up to whole rotations)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)),
                        help="worker processes (at least 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--record", metavar="DIR",
                        help="also save every match as a game record: one JSON-lines file in DIR (see kahve replay)")


def run(args) -> int:
    settings = parse_settings(args.game, args.settings)
    if args.games < 1:
        raise ValueError("--games must be at least 1")
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, not {args.workers}")
    others = []
    if args.others:                    # B is never dropped: the first side other than A's, --others the rest
        sides = envs.game_class(args.game)(**settings).num_sides
        if len(args.others) != sides - 2:
            raise ValueError(f"this table has {sides} sides: A's, B's and {sides - 2} more, so --others takes "
                             f"{sides - 2} policies, not {len(args.others)}" if sides > 2 else
                             "this table has 2 sides, A's and B's; --others is for tables of more sides")
        others = [args.b, *args.others]
    if args.json:
        check_output(args.json, "--json")
    if args.record:
        check_output(args.record, "--record", folder=True)
    with progress_bar(f"{args.a} vs {args.b}") as update:
        report = evaluate(args.game, args.a, args.b, games=args.games, settings=settings, workers=args.workers,
                          seed=args.seed, others=others, progress=update, record_dir=args.record)
    print(format_report(report))
    if args.record:
        print(f"  game records: {report['records']}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)   # (check_output allowed new folders)
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0
