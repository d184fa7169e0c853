"""Bot reports (kahve export --report): the Ish policy check that a report cites."""

from __future__ import annotations

from kahve import envs
from kahve.agents import make_policy
from kahve.agents.evaluation.report import ish_policy_check


def test_ish_policy_check_tells_the_optimum_from_random_play():
    settings = {"players": 4, "false_call_fine": 1}
    game = envs.game_class("ish")(**settings)
    best = ish_policy_check(make_policy("heuristic", game, 0), settings, rounds=30)
    assert best["bets"] > 0 and best["call_decisions"] > 0
    assert best["min_stake_rate"] == 1.0 and best["correct_call_rate"] == 1.0
    rand = ish_policy_check(make_policy("random", game, 0), settings, rounds=30)
    assert rand["min_stake_rate"] < 0.5 and rand["correct_call_rate"] < 0.9
