"""``kahve play GAME``: a person plays a full match in the terminal against bots.

The table is shown from the person's seat (own hand, piles, scores); the bots' moves are printed as they
happen. Legal moves are listed with numbers; type a number, or the move as text ("7H", "7H takes 5 cards",
"give"), ``?`` for the rules summary, ``q`` to quit. Invalid input is explained and asked again.
"""

from __future__ import annotations

import random
import sys

from kahve import envs
from kahve.agents.policies.base import decide
from kahve.agents.policies.specs import make_policy

from .common import add_game_arguments, parse_settings


def add_arguments(parser) -> None:
    add_game_arguments(parser)
    parser.add_argument("--bot", default="heuristic",
                        help="the opponents: heuristic (default), random, ismcts:N or a bot file")
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the deal (default: random)")
    parser.add_argument("--record", metavar="FILE",
                        help="append the finished match to FILE as a JSON-lines game record (see kahve replay)")


def rules_summary(game: str) -> str:
    doc = sys.modules[envs.game_class(game).__module__].__doc__ or ""
    paragraphs = doc.strip().split("\n\n")
    return "\n\n".join(paragraphs[:3])


def play(game: str, settings: dict, bot: str, seat: int, seed: int | None, inp=input, out=print,
         record: str | None = None) -> int:
    g = envs.game_class(game)(**settings)
    if not 0 <= seat < g.num_players:
        raise ValueError(f"--seat must be from 0 to {g.num_players - 1} for this table")
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 32)   # drawn here so that a record can name it
    state = g.new_state(seed)
    actions = []
    bots = {p: make_policy(bot, g, (seed or 0) * 100 + p) for p in range(g.num_players) if p != seat}
    out(f"{game}: you are player {seat}; opponents: {bot}. Type a number or a move, '?' for the rules, 'q' to quit.")
    deals_seen = 0
    while state.current_player is not None:
        p = state.current_player
        if p != seat:
            action = decide(bots[p], state)
            shown = state.describe_action(action) if state.is_public_action(action) else "(decided, hidden until later)"
            out(f"player {p}: {shown}")
            state.apply(action)
            actions.append(int(action))
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
                if answer.lower() in ("q", "quit", "exit"):
                    out("you left the match")
                    return 1
                if answer == "?":
                    out(rules_summary(game))
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
                    out(f"not understood: {err}")
            out(f"you: {state.describe_action(action)}")
            state.apply(action)
            actions.append(int(action))
        if state.deals_completed != deals_seen:
            deals_seen = state.deals_completed
            r = state.deal_report
            out(f"-- deal over: points {r['deal_points']}, match totals {r['scores']}")
    out(state.render(seat))
    won = seat in state.winners
    out("== match over: " + ("you won" if won and len(state.winners) == 1 else
                             "shared win" if won else f"winners: {', '.join(f'player {w}' for w in state.winners)}"))
    if record:
        from kahve.agents.evaluation.records import make_record, write_records
        players = ["you" if p == seat else bot for p in range(g.num_players)]
        write_records(record, [make_record(g, seed, actions, state, players=players)], append=True)
        out(f"match recorded in {record} (seed {seed}); replay it with: kahve replay {record}")
    return 0


def run(args) -> int:
    settings = parse_settings(args.game, args.settings)
    return play(args.game, settings, args.bot, args.seat, args.seed, record=args.record)
