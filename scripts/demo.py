"""``kahve demo``: one match between random players, printed as a game record."""

from __future__ import annotations

import random

import numpy as np

from kahve import envs

from .common import add_game_arguments, parse_settings


def add_arguments(parser) -> None:
    add_game_arguments(parser, nargs="?")
    parser.set_defaults(game="pishti")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deal and of the random players")
    parser.add_argument("--table", action="store_true", help="also print the table before every move")


def run(args) -> int:
    settings = parse_settings(args.game, args.settings)
    if args.game == "pishti":
        settings.setdefault("players", 2)
    env = envs.make(args.game, render_mode="ansi", **settings)
    env.reset(seed=args.seed)
    rng = random.Random(args.seed)
    raw = env.unwrapped
    print(f"{raw.metadata['name']} {raw.game!r}, seed {args.seed}: random players")
    moves = 0
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        if args.table:
            print(env.render(), end="\n\n")
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        text = raw.describe_action(action)
        deals_before = raw.state.deals_completed
        env.step(action)
        moves += 1
        print(f"{agent}: {text}")
        if raw.state.deals_completed != deals_before:
            report = raw.state.deal_report
            print(f"-- deal {raw.state.deals_completed} over: points {report['deal_points']}, "
                  f"match totals {report['scores']}")
    st = raw.state
    how = "truncated" if st.truncated else "over"
    print(f"== match {how} after {moves} moves; winners: {', '.join(f'player_{w}' for w in st.winners)}; "
          f"returns {[round(r, 3) for r in st.returns]}")
    return 0
