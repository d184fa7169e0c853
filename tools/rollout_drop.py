"""How often `rollout:K,z=Z,drop=D` makes the full search's choice, and how many of its rollouts it plays.

The `hard` level's rollout search (agents/policies/levels.py, HARD) plays the game's shipped bot against the
heuristic; at each of its decisions (more than one legal move; in Pâsur, hands 1-5: the last hand is solved
exactly) the search's K worlds are played out for every legal move, once. Then, for each D, the search's own
dropping code (:meth:`RolloutPolicy._dropping_choice`) is run over those values, served from memory instead of
played again, so each D sees the same worlds: the share of decisions where it chooses what the full search
chooses (:func:`margin_choice` over every move and world), the share of the full search's rollouts it plays,
and the median of that share over the decisions (a move's time is about its rollouts).

    python tools/rollout_drop.py pasur --deals 16 --seed 9300           # about 3 min
    python tools/rollout_drop.py pis_yedili --deals 20 --seed 9300 --drop 0 0.5 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SETTINGS = {"pasur": {"episode": "deal"}, "pis_yedili": {"players": 2, "episode": "deal"}}
BOTS = {"pasur": "pasur/ppo", "pis_yedili": "pis_yedili/distilled_2p"}


def decisions(game_name: str, deals: int, seed: int) -> tuple[object, list]:
    """The hard search and, for each of its decisions in ``deals`` deals against the heuristic, ``(legal, the
    base policy's move, values[move][world])``."""
    from kahve import envs
    from kahve.agents import make_policy
    from kahve.agents.policies.base import decide
    from kahve.agents.policies.endgame import EndgamePolicy
    from kahve.agents.policies.heuristics import heuristic_for
    from kahve.agents.policies.levels import hard_spec

    game = envs.game_class(game_name)(**SETTINGS[game_name])
    hard = make_policy(hard_spec(game, BOTS[game_name]), game, 0)
    search, solver = (hard.policy, hard.solver) if isinstance(hard, EndgamePolicy) else (hard, None)
    other = heuristic_for(game, 1)
    rows = []
    for s in range(seed, seed + deals):
        state = game.new_state(s)
        while state.current_player is not None:
            legal = state.legal_actions()
            if state.current_player == 0 and len(legal) > 1 and not (solver and solver.applies(state)):
                values = search.action_values(state, legal, 0)
                rows.append((legal, search._base_choice(state, legal, search.rng.getrandbits(32)), values))
            state.apply(decide(other, state))
        print(f"deal {s}: {len(rows)} decisions so far", file=sys.stderr, flush=True)
    return search, rows


def full_choice(search, row) -> int:
    """The full search's choice at a decision: the margin rule over every move and world."""
    from kahve.agents.policies.rollout import margin_choice
    legal, base, values = row
    return margin_choice(values, legal, base, search.margin)[0]


def replay(search, rows: list, drop: float) -> tuple[float, float, float]:
    """(share of the full search's choices made, share of its rollouts played, median share a decision)."""
    search.drop = drop
    same, played, shares = 0, 0, []
    for legal, base, values in rows:
        used = []

        def served(worlds, actions, seat, values=values, legal=legal, used=used):
            used.append(len(worlds) * len(actions))
            return [values[legal.index(a)][worlds[0]:worlds[0] + len(worlds)] for a in actions]
        search._values = served                     # the rows' values, the worlds named by their numbers
        choice = search._dropping_choice(list(range(len(values[0]))), legal, 0, base)
        same += choice == full_choice(search, (legal, base, values))
        played += sum(used)
        shares.append(sum(used) / (len(legal) * len(values[0])))
    del search._values
    total = sum(len(legal) * len(values[0]) for legal, _, values in rows)
    return same / len(rows), played / total, statistics.median(shares)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("game", choices=sorted(SETTINGS))
    parser.add_argument("--deals", type=int, default=16)
    parser.add_argument("--seed", type=int, default=9300)
    parser.add_argument("--drop", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    args = parser.parse_args(argv)
    search, rows = decisions(args.game, args.deals, args.seed)
    print(f"{args.game}: {len(rows)} decisions of `{search.name}` over {BOTS[args.game]}, deals {args.seed}-"
          f"{args.seed + args.deals - 1}; the full search keeps the network's move in "
          f"{sum(full_choice(search, r) == r[1] for r in rows)} of them")
    print("| drop | the full search's choice | rollouts played | median a decision |")
    print("| --- | --- | --- | --- |")
    for d in args.drop:
        same, played, median = replay(search, rows, d)
        print(f"| {d:g} | {same:.1%} | {played:.2f} | {median:.2f} |")


if __name__ == "__main__":
    main()
