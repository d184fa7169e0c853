"""``kahve demo``: one match between random players, printed as a game record.

The record is the engine's move log (:meth:`~kahve.envs.core.engine.State.move_texts`, the public view): every
move, marked "(only choice)" where every seat could tell it was forced (not an opponent's forced Pis Yedili
draw, which hinged on a hidden hand), and the table's events (new deals and hands, forced draws, each
deal's scoring in words, the result), the same text ``kahve play`` and ``kahve replay`` show.
"""

from __future__ import annotations

import random

from kahve import envs

from .common import add_game_arguments, parse_settings


def add_arguments(parser) -> None:
    add_game_arguments(parser, nargs="?")
    parser.set_defaults(game="pishti")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deal and of the random players")
    parser.add_argument("--table", action="store_true", help="also print the table before every decision")


def run(args) -> int:
    settings = parse_settings(args.game, args.settings)
    if args.game == "pishti":
        settings.setdefault("players", 2)
    game = envs.game_class(args.game)(**settings)
    # the same match as random players through the AEC env with this seed (the env seeds its engine so)
    state = game.new_state(random.Random(random.Random(args.seed).getrandbits(64)), move_log=True)
    rng = random.Random(args.seed)
    print(f"{game.title} {game!r}, seed {args.seed}: random players")
    shown = decisions = 0
    while True:
        for text in state.move_texts(None, shown):
            print(text)
        shown = len(state.move_log)
        if state.current_player is None:
            break
        if args.table:
            print(state.render(), end="\n\n")
        state.apply(rng.choice(state.legal_actions()))
        decisions += 1
    forced = sum(1 for m in state.move_log if m.forced and m.action is not None)
    print(f"== {decisions + forced} moves ({forced} forced); returns {[round(r, 3) for r in state.returns]}")
    return 0
