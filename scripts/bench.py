"""``kahve bench``: throughput of the engines, the AEC loop, the training view and MaskablePPO, as ratios to
references measured in the same run (the measurements: :mod:`kahve.agents.evaluation.bench`)."""

from __future__ import annotations

import json
import math
import os

from kahve import envs

from .common import check_output, parse_settings


def add_arguments(parser) -> None:
    parser.add_argument("games", nargs="*", help="games to measure (default: all): " + ", ".join(envs.GAMES))
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one timed run (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure (default 3)")
    parser.add_argument("--settings", nargs="*", default=[], metavar="KEY=VALUE",
                        help="settings for the engine, AEC and training-view figures of every game measured "
                             "(e.g. players=2); --ppo runs each shipped config with its own settings")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--ppo", action="store_true",
                        help="also measure MaskablePPO training as configs/<game>/ppo.yaml runs it (slower)")
    parser.add_argument("--scaling", action="store_true",
                        help="also measure the shared layout (vec_env: shared) with one worker process and with one "
                             "per core: how the games' stepping scales with cores")
    parser.add_argument("--no-peers", action="store_true", help="skip the peer libraries")


def run(args) -> int:
    from kahve.agents.evaluation.bench import run_benchmarks
    if not (math.isfinite(args.seconds) and args.seconds > 0):
        raise ValueError(f"--seconds must be a positive number, not {args.seconds}")
    if args.repeats < 1:
        raise ValueError(f"--repeats must be at least 1, not {args.repeats}")
    for game in args.games or list(envs.GAMES):            # an unknown game or setting fails now, not after the others
        parse_settings(game, args.settings)
    if args.json:
        check_output(args.json, "--json")
    results = run_benchmarks(args.games or list(envs.GAMES), lambda game: parse_settings(game, args.settings),
                             args.seconds, args.repeats, ppo=args.ppo, peers=not args.no_peers,
                             scaling=args.scaling)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0
