"""``kahve league GAME POLICY...``: a round robin with Bradley-Terry (Elo-scale) ratings. Every option is checked
before the first match: the counts, and that --json and --markdown can be written."""

from __future__ import annotations

import json
import os

from kahve.agents.evaluation.league import format_table, league

from .common import add_game_arguments, check_output, parse_settings
from kahve.agents.progress import progress_bar


def add_arguments(parser) -> None:
    add_game_arguments(parser)
    parser.add_argument("policies", nargs="+", help="two or more policy specs")
    parser.add_argument("--games", type=int, default=100, help="matches per pair")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="write ratings and every pair's report as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="write the ratings table as Markdown")


def run(args) -> int:
    settings = parse_settings(args.game, args.settings)
    if args.games < 1:
        raise ValueError(f"--games must be at least 1, not {args.games}")
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, not {args.workers}")
    for path, option in ((args.json, "--json"), (args.markdown, "--markdown")):
        if path:
            check_output(path, option)
    with progress_bar("league") as update:
        result = league(args.game, args.policies, games=args.games, settings=settings, workers=args.workers,
                        seed=args.seed, progress=lambda k, done, total: update(done, total))
    print(f"{args.game} league, {args.games} matches per pair" + (f", settings {settings}" if settings else ""))
    print(format_table(result))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(format_table(result, markdown=True) + "\n")
    return 0
