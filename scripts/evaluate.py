"""``kahve evaluate GAME A B``: A against B with seats rotated and deals mirrored, with 95% intervals."""

from __future__ import annotations

import json
import os

from kahve.agents.evaluation.evaluate import evaluate, format_report

from .common import add_game_arguments, parse_settings
from kahve.agents.progress import progress_bar


def add_arguments(parser) -> None:
    add_game_arguments(parser)
    parser.add_argument("a", help="policy A: random, heuristic, ismcts[:N] or a bot file")
    parser.add_argument("b", help="policy B (fills every other side unless --others is given)")
    parser.add_argument("--others", nargs="*", default=[], metavar="SPEC",
                        help="with more than two sides: the policies of the sides other than A's, in order")
    parser.add_argument("--games", type=int, default=200, help="matches to play (rounded up to whole rotations)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)), help="worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--record", metavar="DIR",
                        help="also save every match as a game record: one JSON-lines file in DIR (see kahve replay)")


def run(args) -> int:
    settings = parse_settings(args.game, args.settings)
    if args.games < 1:
        raise ValueError("--games must be at least 1")
    with progress_bar(f"{args.a} vs {args.b}") as update:
        report = evaluate(args.game, args.a, args.b, games=args.games, settings=settings, workers=args.workers,
                          seed=args.seed, others=args.others, progress=update, record_dir=args.record)
    print(format_report(report))
    if args.record:
        print(f"  game records: {report['records']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0
