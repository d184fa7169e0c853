"""Baselines (random, heuristic, ismcts), policy specs, evaluation and ratings (issue: baselines)."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from kahve import envs
from kahve.agents import RandomPolicy, make_policy
from kahve.agents.evaluation.evaluate import (Matchup, evaluate, format_report, mean_interval, ratio_interval, summarize,
                                             wilson_interval)
from kahve.agents.policies.heuristics import heuristic_for
from kahve.agents.evaluation.ratings import fit_bradley_terry
from tests.helpers import random_game

#: a quick table per game for the sanity matches (episode="deal" keeps them short)
QUICK = {
    "pishti": dict(players=2, episode="deal"),
    "pasur": dict(episode="deal"),
    "pis_yedili": dict(players=2, episode="deal"),
    "pishe_pasha": dict(),
    "ish": dict(players=2, max_rounds=20, false_call_fine=1),
}


def quick_game(name):
    return envs.game_class(name)(**QUICK[name])


@pytest.mark.parametrize("game", envs.GAMES)
def test_heuristic_beats_random(game):
    r = evaluate(game, "heuristic", "random", games=120, settings=QUICK[game], seed=1)
    assert r["win_rate_ci95"][0] > 0.5, format_report(r)


@pytest.mark.parametrize("game", envs.GAMES)
def test_ismcts_beats_random(game):
    # Pis Yedili's deals swing by dozens of points (a hand's penalties): 12 deal seeds are too few to tell
    games = 80 if game == "pis_yedili" else 24
    r = evaluate(game, "ismcts:25", "random", games=games, settings=QUICK[game], seed=2)
    assert r["win_rate"] > 0.55 and r["points_per_deal"] > 0, format_report(r)


@pytest.mark.parametrize("game", envs.GAMES)
def test_heuristic_reads_only_what_its_seat_may_know(game):
    # re-dealing the hidden cards never changes the heuristic's choice
    g = quick_game(game)
    pol = heuristic_for(g, seed=0)
    rng = random.Random(0)
    checked = []

    def check(state):
        if len(checked) >= 150 or len(state.legal_actions()) < 2:
            return
        seat = state.current_player
        obs, mask = state.observation(seat), state.legal_mask()
        pol.rng.seed(7)
        a = pol.act(obs, mask, state)
        other = state.determinize(seat, rng)
        pol.rng.seed(7)
        assert pol.act(obs, mask, other) == a
        checked.append(a)

    for seed in range(30):
        random_game(g, seed, on_state=check)
    assert len(checked) >= 50


def test_reports_do_not_depend_on_the_number_of_workers():
    one = evaluate("pishti", "heuristic", "random", games=16, settings=QUICK["pishti"], seed=5, workers=1)
    two = evaluate("pishti", "heuristic", "random", games=16, settings=QUICK["pishti"], seed=5, workers=2)
    one.pop("timing"), two.pop("timing")
    assert one == two
    other_seed = evaluate("pishti", "heuristic", "random", games=16, settings=QUICK["pishti"], seed=6)
    other_seed.pop("timing")
    assert other_seed != one


def test_mirrored_deals_give_each_side_the_same_decks():
    # random against random with the same seed per seat: A's record is symmetric in expectation, and the
    # pairing shows directly: both rotations of a unit deal the same first deck
    from kahve.agents.evaluation.evaluate import _derive
    g = envs.game_class("pishti")(players=2, episode="deal")
    s1 = g.new_state(_derive(0, 3))
    s2 = g.new_state(_derive(0, 3))
    assert s1.to_dict() == s2.to_dict()


def test_four_player_tables_rotate_a_through_every_side():
    r = evaluate("pishti", "heuristic", "random", games=8, settings=dict(players=4, partnerships=False,
                                                                          episode="deal"), seed=1)
    assert r["games"] == 8 and r["units"] == 2
    r = evaluate("pishti", "heuristic", "random", games=8, settings=dict(players=4, episode="deal"), seed=1)
    assert r["games"] == 8 and r["units"] == 4


def test_bradley_terry_recovers_known_strengths():
    rng = np.random.default_rng(0)
    true = {"a": -200.0, "b": 0.0, "c": 150.0, "d": 300.0}
    names = list(true)
    results = []
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            p = 1 / (1 + 10 ** ((true[y] - true[x]) / 400))
            results.append((x, y, float(rng.binomial(2000, p)), 2000))
    fit = fit_bradley_terry(names, results)
    centre = np.mean(list(true.values()))
    for n in names:
        elo, se = fit[n]
        assert abs(elo - (true[n] - centre)) < 4 * se + 5, (n, elo, se)
        assert 0 < se < 15
    # a clean sweep still gives finite ratings, in the right order
    sweep = fit_bradley_terry(["x", "y"], [("x", "y", 50.0, 50)])
    assert sweep["x"][0] > 200 and np.isfinite(sweep["x"][0])


def test_points_per_deal_over_full_matches_counts_every_deal_once():
    """A side that wins by a lot plays short matches: a mean of per-match means would weigh its big deals more."""
    g = envs.game_class("pasur")()
    short_and_big = {"unit": 0, "a_side": 0, "winners": [0], "deal_points": [[40, 0]], "truncated": False}
    long_and_small = {"unit": 1, "a_side": 0, "winners": [0], "deal_points": [[10, 0]] * 3, "truncated": False}
    r = summarize(g, Matchup("pasur", {}, "x", "y", [], 0), [short_and_big, long_and_small], 1.0)
    assert r["deals"] == 4 and r["points_per_deal"] == pytest.approx(70 / 4)   # not (40 + 10) / 2
    lo, hi = r["points_per_deal_ci95"]
    assert lo < 70 / 4 < hi


def test_ratio_interval_is_the_mean_interval_when_every_unit_has_as_many_deals():
    totals = [3.0, -1.0, 7.5, 2.0, 0.5]
    assert ratio_interval(totals, [2] * 5) == pytest.approx(mean_interval([t / 2 for t in totals]))
    ratio, lo, hi = ratio_interval([10.0, 2.0, 6.0], [1, 2, 3])
    assert ratio == pytest.approx(3.0) and lo < 3.0 < hi
    assert math.isnan(ratio_interval([5.0], [2])[1])


def test_a_report_of_one_deal_seed_says_it_has_no_interval():
    r = evaluate("pishti", "heuristic", "random", games=2, settings={"players": 2, "episode": "deal"}, seed=3)
    assert r["units"] == 1 and "an interval needs 2 deal seeds or more" in format_report(r)
    assert "nan" not in format_report(r)


def test_wilson_interval():
    lo, hi = wilson_interval(50, 100)
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-9
    lo, hi = wilson_interval(100, 100)
    assert 0.95 < lo < 1 and hi == pytest.approx(1.0)


@pytest.mark.parametrize("spec,match", [
    ("rando", "unknown policy spec 'rando'; accepted: random, heuristic, ismcts"),
    ("ismcts:x", "positive iteration count"),
    ("ismcts:0", "positive iteration count"),
    ("rollout:-2", "positive number of worlds"),
    ("", "non-empty string"),
    ("no/such/bot.onnx", "no such file"),
])
def test_bad_specs(spec, match):
    g = envs.game_class("pishti")(players=2)
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        make_policy(spec, g)


@pytest.mark.parametrize("spec,ok", [
    ("ismcts:100000", True), ("ismcts:100001", "at most 100,000 iterations per move, not 100,001"),
    ("rollout:4096", True), ("rollout:4097", "at most 4,096 worlds per move, not 4,097"),
    ("rollout:8:ismcts:100001", "at most 100,000 iterations"),         # an inner search's budget too
    ("endgame:1024:heuristic", True), ("endgame:1025:heuristic", "at most 1,024 worlds per move, not 1,025"),
    ("rollout:2:rollout:2:heuristic", True),
    ("endgame:12:rollout:4:heuristic", True),                           # tests/agents/test_endgame.py's
    ("rollout:2:rollout:2:rollout:2:heuristic", "'rollout:2:rollout:2:rollout:2:heuristic': at most 2 searches"),
    ("ismcts:2:" * 1000 + "random", "at most 2 searches may nest"),   # refused at the third, the rest unread
    ("rollout:8:pishti/ppo_2p:hard", True),               # hard is a search (endgame): two in all
    ("rollout:8:ismcts:8:pishti/ppo_2p:hard", "'rollout:8:ismcts:8:pishti/ppo_2p:hard': at most 2 searches"),
])
def test_search_budgets_and_nesting_have_documented_maxima(spec, ok):
    """A spec comes from configs and other people: its work per move is bounded, each bound one line naming it
    (agents/policies/specs.py: MAX_BUDGET, MAX_SEARCH_NESTING). Building a search costs nothing until it moves,
    so the largest allowed ones are built here."""
    g = envs.game_class("pishti")(players=2)
    if ok is True:
        make_policy(spec, g, 0)
        return
    with pytest.raises(ValueError, match=re.escape(ok)) as err:
        make_policy(spec, g, 0)
    assert "\n" not in str(err.value)


def test_the_shipped_hard_levels_nest_within_the_maximum():
    from kahve.agents.policies.levels import HARD, HARD_DEFAULT, HARD_MORE_PLAYERS
    for game, spec in [*HARD.items(), ("pishe_pasha", HARD_DEFAULT)]:
        g = envs.game_class(game)(**({"players": 2} if game in ("pishti", "pis_yedili") else {}))
        make_policy(spec.format(bot="heuristic"), g, 0)
    for game, spec in HARD_MORE_PLAYERS.items():
        make_policy(spec.format(bot="heuristic"), envs.game_class(game)(players=4), 0)


def test_random_policy_is_seeded_and_legal():
    mask = np.zeros(52, dtype=np.int8)
    mask[[3, 9, 40]] = 1
    a = [RandomPolicy(1).act(None, mask) for _ in range(5)]
    b = [RandomPolicy(1).act(None, mask) for _ in range(5)]
    assert a == b and set(a) <= {3, 9, 40}
    seq = RandomPolicy(2)
    assert {seq.act(None, mask) for _ in range(60)} == {3, 9, 40}


def test_random_policy_draws_the_same_from_the_state_as_from_the_mask():
    g = envs.game_class("pis_yedili")(players=3)
    st = g.new_state(4)
    by_state, by_mask = RandomPolicy(5), RandomPolicy(5)
    while st.current_player is not None:
        a = by_state.act(None, st.legal_mask(), st)
        assert a == by_mask.act(None, st.legal_mask())
        st.apply(a)


def test_decide_builds_an_observation_and_a_mask_only_for_policies_that_read_them():
    from kahve.agents.policies.base import decide
    seen = []

    class Reader:
        def act(self, observation, action_mask, state=None):
            seen.append((observation, action_mask))
            return state.legal_actions()[0]

    class MaskAndState(Reader):
        reads_observation = False

    class StateOnly(Reader):
        reads_observation = False
        reads_mask = False

    g = envs.game_class("pishti")(players=2)
    st = g.new_state(0)
    for policy in (Reader(), MaskAndState(), StateOnly()):
        assert decide(policy, st) == st.legal_actions()[0]
    (obs, mask), (no_obs, mask_2), (no_obs_2, no_mask) = seen
    assert np.array_equal(obs, st.observation(st.current_player)) and no_obs is None and no_obs_2 is None
    assert np.array_equal(mask, st.legal_mask()) and np.array_equal(mask_2, st.legal_mask()) and no_mask is None
    for spec in ("random", "heuristic", "ismcts:2", "rollout:1"):   # none of the baselines reads either
        policy = make_policy(spec, g)
        assert policy.reads_observation is False and policy.reads_mask is False
    wrapped = make_policy("endgame:heuristic", g)                   # a wrapper reads what its policy reads
    assert wrapped.reads_observation is False and wrapped.reads_mask is False


def test_rollout_policy_improves_on_random_and_plays_legally():
    r = evaluate("pishti", "rollout:4", "random", games=16, settings=QUICK["pishti"], seed=3)
    assert r["win_rate"] > 0.6 and r["points_per_deal"] > 3, format_report(r)
    g = envs.game_class("pishe_pasha")()
    pol = make_policy("rollout:2", g, seed=0)
    st = g.new_state(1)
    while st.current_player is not None:
        a = pol.act(st.observation(st.current_player), st.legal_mask(), st)
        assert a in st.legal_actions()
        st.apply(a)


def test_packaged_config_and_bot_names_resolve():
    from kahve.agents.training import config as config_mod
    assert config_mod.load("pishti/ppo")["game"] == "pishti"
    with pytest.raises(FileNotFoundError, match="shipped configs: .*pishti/ppo.yaml"):
        config_mod.load("pishti/nope.yaml")


# ----- Pişti's greedy yardstick ---------------------------------------------------------------------------------
def test_greedy_pishti_captures_whenever_it_can_and_reads_only_its_seat():
    g = quick_game("pishti")
    greedy, rng = make_policy("greedy", g, seed=0), random.Random(3)
    seen = {"capture": 0, "trail": 0}

    def check(state):
        legal = state.legal_actions()
        if len(legal) < 2:
            return
        seat, pile = state.current_player, state.pile
        greedy.rng.seed(7)                      # ties break alike for the state and its re-deal
        a = greedy.act(state.observation(seat), state.legal_mask(), state)
        captures = [c for c in legal if pile and (c % 13 == 10 or c % 13 == pile[-1] % 13)]
        if captures:
            assert a in captures
            seen["capture"] += 1
        else:                                   # the rank it has seen most among its cards
            hand = state.hands[seat]
            count = {c: sum(1 for x in range(c % 13, 52, 13) if state.seen[x] or x in hand) for c in legal}
            assert count[a] == max(count.values())
            seen["trail"] += 1
        greedy.rng.seed(7)
        assert greedy.act(state.observation(seat), state.legal_mask(), state.determinize(seat, rng)) == a

    for seed in range(20):
        random_game(g, seed, on_state=check)
    assert seen["capture"] > 20 and seen["trail"] > 20


def test_greedy_is_for_pishti_only():
    with pytest.raises(ValueError, match="no greedy player for game 'pasur'"):
        make_policy("greedy", quick_game("pasur"))
