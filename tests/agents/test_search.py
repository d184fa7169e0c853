"""Searches over any policy (rollout:K:SPEC, ismcts:N:SPEC), their options, and the difficulty levels
(issue 17, docs/search.md). Budgets are tiny: the strength figures are docs/search.md's, not these tests'."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest

from kahve import checkpoints, envs
from kahve.agents import make_policy
from kahve.agents.evaluation.evaluate import evaluate, format_report
from kahve.agents.policies.base import RandomPolicy, decide
from kahve.agents.policies.bot import Bot
from kahve.agents.policies.endgame import EndgamePolicy
from kahve.agents.policies.heuristics import heuristic_for
from kahve.agents.policies.ismcts import ISMCTS
from kahve.agents.policies.levels import EASY_TEMPERATURE, LEVELS, first_shipped_bot, hard_spec, shipped_bot
from kahve.agents.policies.rollout import RolloutPolicy, deal_value, masked_choices, trails

PISHTI = dict(players=2, episode="deal")
BOT = "pishti/ppo_2p"


def pishti():
    return envs.game_class("pishti")(**PISHTI)


def play(policy, game, seed=0, other=None, limit=None):
    """A deal with ``policy`` in seat 0 and ``other`` (default: the heuristic) in seat 1; every move checked."""
    other = other or heuristic_for(game, 99)
    st = game.new_state(seed)
    moves = []
    while st.current_player is not None and (limit is None or len(moves) < limit):
        pol = policy if st.current_player == 0 else other
        a = decide(pol, st)
        assert a in st.legal_actions()
        if st.current_player == 0:
            moves.append(a)
        st.apply(a)
    return moves


# ----- the spec grammar ----------------------------------------------------------------------------------
def test_search_specs_take_any_policy_after_the_second_colon():
    g = pishti()
    r = make_policy(f"rollout:4:{BOT}", g, 1)
    assert isinstance(r, RolloutPolicy) and isinstance(r.base, Bot) and r.rollouts == 4 and r.margin == 0
    assert isinstance(make_policy("rollout:3:random", g, 1).base, RandomPolicy)
    i = make_policy("ismcts:20,prior,bias=2,c=1.5:heuristic", g, 1)
    assert isinstance(i, ISMCTS) and i.iterations == 20 and i.prior and i.bias == 2 and i.exploration == 1.5
    assert make_policy("rollout:8,z=1.5", g).margin == 1.5
    easy_inner = make_policy(f"rollout:2:{BOT}:easy", g, 1).base       # a level is a spec too
    assert isinstance(easy_inner, Bot) and easy_inner.temperature == EASY_TEMPERATURE
    # the plain forms are what they always were
    assert make_policy("rollout", g).rollouts == RolloutPolicy.DEFAULT_ROLLOUTS
    assert make_policy("ismcts:7", g).base is None and make_policy("ismcts", g).iterations == ISMCTS.DEFAULT_ITERATIONS


def test_a_bot_path_with_colons_is_split_on_the_first_two_only(tmp_path):
    folder = tmp_path / "run:3"
    folder.mkdir()
    path = folder / "bot.onnx"
    shutil.copy(checkpoints.find(BOT), path)
    g = pishti()
    pol = make_policy(f"rollout:2:{path}", g, 0)
    assert isinstance(pol.base, Bot) and pol.base.path == str(path)
    assert isinstance(make_policy(f"{path}:medium", g, 0), Bot)
    assert play(pol, g, limit=3)


@pytest.mark.parametrize("spec,match", [
    ("rollout:8,q=1", "unknown option 'q=1'"),
    ("rollout:8,z", "option z takes a value"),
    ("ismcts:8,prior=2:heuristic", "option prior takes no value"),
    ("ismcts:8,prior", "the prior option needs a policy"),
    ("rollout:8,z=x", "option z takes a number"),
    ("rollout:8:", "nothing after the last colon"),
    ("rollout:0:heuristic", "positive number of worlds"),
    ("ismcts:x:heuristic", "positive iteration count"),
    ("rollout:4:rando", "unknown policy spec 'rando'"),
    ("heuristic:hard", "a level takes a bot file"),
    ("rollout:8,by=heuristic", "unknown option 'by=heuristic'"),
    ("random:easy", "a level takes a bot file"),
    ("rollout:8,drop=0.5", "needs a margin"),
    ("rollout:8,z=1,drop=x", "option drop takes a number"),
])
def test_bad_search_and_level_specs_name_the_accepted_forms(spec, match):
    with pytest.raises(ValueError, match=match) as err:
        make_policy(spec, pishti())
    assert "rollout[:K[,z=Z][,drop=D][:SPEC]]" in str(err.value) and "BOT:easy|medium|hard" in str(err.value)


def test_a_missing_inner_bot_is_a_missing_file():
    with pytest.raises(FileNotFoundError, match="no such file"):
        make_policy("rollout:4:no/such/bot.onnx", pishti())


# ----- rollouts over a policy ----------------------------------------------------------------------------
def test_rollout_over_the_named_heuristic_is_the_default_rollout():
    g = envs.game_class("pis_yedili")(players=2, episode="deal")
    a, b = make_policy("rollout:3", g, 5), make_policy("rollout:3:heuristic", g, 5)
    st = g.new_state(2)
    other = heuristic_for(g, 1)
    for _ in range(12):
        if st.current_player is None:
            break
        assert a.act(None, None, st) == b.act(None, None, st)
        st.apply(decide(other, st))


def test_lockstep_network_rollouts_equal_move_by_move_rollouts_on_common_worlds():
    # the batched path gives every (action, world) the value the one-at-a-time path gives it: the same
    # worlds and seeds for every candidate action (common random numbers), the same greedy network moves
    g = pishti()
    pol = make_policy(f"rollout:3:{BOT}", g, 4)
    st = g.new_state(3)
    st.apply(st.legal_actions()[0])
    seat = st.current_player
    rng = random.Random(1)
    worlds = [(st.determinize(seat, rng), rng.getrandbits(32)) for _ in range(3)]
    legal = st.legal_actions()
    batched = pol._lockstep(worlds, legal, seat)
    single = [[pol._rollout(w, a, s, seat) for w, s in worlds] for a in legal]
    assert batched == single
    assert len({tuple(v) for v in batched}) > 1          # the actions really differ somewhere


def test_stochastic_inner_policies_are_reseeded_per_world():
    g = pishti()
    one, two = make_policy(f"rollout:2:{BOT}:easy", g, 8), make_policy(f"rollout:2:{BOT}:easy", g, 8)
    assert play(one, g, seed=4) == play(two, g, seed=4)
    rnd = make_policy("rollout:2:random", g, 3)
    st = g.new_state(1)
    world = st.determinize(st.current_player, random.Random(0))
    a = st.legal_actions()[0]
    assert rnd._rollout(world, a, 17, 0) == rnd._rollout(world, a, 17, 0)


def test_a_huge_margin_keeps_the_base_policys_move_and_zero_is_the_plain_argmax():
    g = envs.game_class("pis_yedili")(players=2, episode="deal")
    keep = make_policy("rollout:4,z=1000", g, 2)
    plain, zero = make_policy("rollout:4", g, 2), make_policy("rollout:4,z=0", g, 2)
    base = heuristic_for(g, 0)
    st = g.new_state(6)
    checked = 0
    while st.current_player is not None and checked < 10:
        legal = st.legal_actions()
        if len(legal) > 1:
            a = keep.act(None, None, st)
            # the base's own choice, with the seed the search gave it (its last draw)
            assert a in legal and base.score(st, a, base.knowledge(st)) == max(
                base.score(st, b, base.knowledge(st)) for b in legal)
            assert plain.act(None, None, st) == zero.act(None, None, st)
            checked += 1
        st.apply(base.choose(st, legal))
    assert checked >= 5


def counting_rollouts(policy) -> list:
    """Count the policy's rollouts (one per action and world): a list whose length grows by one each."""
    calls, rollout = [], policy._rollout
    policy._rollout = lambda *args: calls.append(1) or rollout(*args)
    return calls


def test_dropping_settled_actions_plays_fewer_worlds_for_the_same_choices():
    # drop=D: an action trailing the kept move by D standard errors plays no more worlds. With a huge D no
    # action is dropped and every choice is the full search's; with D=0.5 most of the full search's choices are
    # kept on fewer rollouts
    g = envs.game_class("pis_yedili")(players=2, episode="deal")
    full, never, drop = (make_policy(s, g, 2) for s in ("rollout:32,z=1", "rollout:32,z=1,drop=1000",
                                                          "rollout:32,z=1,drop=0.5"))
    assert full.drop is None and never.drop == 1000 and drop.drop == 0.5
    full_calls, drop_calls = counting_rollouts(full), counting_rollouts(drop)
    other = heuristic_for(g, 1)
    same = decisions = 0
    for seed in (3, 4):
        st = g.new_state(seed)
        while st.current_player is not None:
            legal = st.legal_actions()
            if st.current_player == 0 and len(legal) > 1:
                chosen = full.act(None, None, st)
                assert never.act(None, None, st) == chosen
                dropped = drop.act(None, None, st)
                assert dropped in legal
                same += dropped == chosen
                decisions += 1
            st.apply(decide(other, st))
    assert decisions >= 10 and same >= 0.8 * decisions
    assert len(drop_calls) < 0.8 * len(full_calls)


def test_an_action_trails_when_its_paired_advantage_is_below_minus_drop_standard_errors():
    # advantages -3 and -1: mean -2, standard error 1
    assert trails([0.0, 2.0], [3.0, 3.0], 1.5) and not trails([0.0, 2.0], [3.0, 3.0], 2.5)
    assert trails([1.0, 1.0], [2.0, 2.0], 1000)        # behind in every world by the same amount
    assert not trails([0.0, 2.0], [1.0, 1.0], 0.0)     # level on average
    assert not trails([0.0], [9.0], 0.0)               # one world gives no spread


def test_deal_values_flip_penalties():
    # Pis Yedili points are penalties: the seat that went out has the positive value
    g = envs.game_class("pis_yedili")(players=2, episode="deal")
    h = heuristic_for(g, 0)
    for seed in range(4):
        st = g.new_state(seed)
        while st.current_player is not None:
            st.apply(h.choose(st, st.legal_actions()))
        points = st.deal_report["deal_points"]
        if points[0] != points[1]:
            better = 0 if points[0] < points[1] else 1
            assert deal_value(st, 0, better) > 0 > deal_value(st, 0, 1 - better)
            return
    pytest.fail("no deal with unequal penalties")


def test_rollout_over_the_heuristic_with_a_margin_beats_random():
    r = evaluate("pishti", "rollout:3,z=1", "random", games=12, settings=PISHTI, seed=4)
    assert r["points_per_deal"] > 0, format_report(r)


def test_masked_choices():
    mask = np.zeros((3, 6), dtype=bool)
    mask[0, [1, 4]] = mask[1, [0]] = mask[2, [2, 3, 5]] = True
    scores = np.array([[9, 0, 9, 9, 1, 9], [0, 5, 5, 5, 5, 5], [0, 0, 3, 1, 0, 0]], dtype=np.float32)
    assert masked_choices(scores, mask).tolist() == [4, 0, 2]
    rngs = [random.Random(k) for k in range(3)]
    seen = [set() for _ in range(3)]
    for _ in range(200):
        for row, a in enumerate(masked_choices(scores, mask, 1.0, rngs)):
            assert mask[row, a]
            seen[row].add(int(a))
    assert seen == [{1, 4}, {0}, {2, 3, 5}]


# ----- ISMCTS over a policy --------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["ismcts:20:heuristic", "ismcts:20,prior:heuristic", f"ismcts:12:{BOT}",
                                  f"ismcts:12,prior:{BOT}"])
def test_ismcts_over_a_policy_plays_legally_and_is_seeded(spec):
    g = pishti()
    assert play(make_policy(spec, g, 3), g, seed=2, limit=6) == play(make_policy(spec, g, 3), g, seed=2, limit=6)


def test_the_network_prior_is_a_distribution_over_the_legal_actions():
    g = pishti()
    pol = make_policy(f"ismcts:4,prior:{BOT}", g, 0)
    st = g.new_state(5)
    prior = pol._prior(st, st.legal_actions())
    assert set(prior) == set(st.legal_actions()) and abs(sum(prior.values()) - 1) < 1e-9


# ----- difficulty levels ---------------------------------------------------------------------------------
def test_levels_of_a_bot():
    g = pishti()
    medium = make_policy(f"{BOT}:medium", g, 1)
    greedy = make_policy(BOT, g, 1)
    assert isinstance(medium, Bot) and medium.temperature == 0 and medium.name == f"{BOT}:medium"
    st = g.new_state(0)
    assert decide(medium, st) == decide(greedy, st)
    easy = make_policy(f"{BOT}:easy", g, 1)
    assert easy.temperature == EASY_TEMPERATURE
    assert play(easy, g, 3) == play(make_policy(f"{BOT}:easy", g, 1), g, 3)        # seeded
    hard = make_policy(f"{BOT}:hard", g, 1)
    same = make_policy(hard_spec(g, BOT), g, 1)                      # what docs/search.md measures
    assert type(hard) is type(same) and hard.name == f"{BOT}:hard"
    assert play(hard, g, 1) == play(same, g, 1)
    yedili = envs.game_class("pis_yedili")(players=2, episode="deal")   # Pis Yedili's: the rollout search
    rollout = make_policy("pis_yedili/distilled_2p:hard", yedili, 1)
    assert isinstance(rollout, RolloutPolicy) and isinstance(rollout.base, Bot) and rollout.margin > 0
    assert rollout.drop is not None                                  # settled moves play no more worlds
    pasur = envs.game_class("pasur")(episode="deal")                 # Pâsur's: the same, with the solved last hand
    both = make_policy("pasur/ppo:hard", pasur, 1)
    assert isinstance(both, EndgamePolicy) and isinstance(both.policy, RolloutPolicy) and both.policy.margin > 0
    assert both.policy.drop is not None


def test_a_bare_level_is_the_shipped_bot_that_fits_the_table():
    g = pishti()
    assert shipped_bot(g) == BOT
    for level in LEVELS:
        assert make_policy(level, g, 0).name == f"{BOT}:{level}"
    # each Pişti table has its own bot; no shipped bot reads Pis Yedili's plain observation
    assert shipped_bot(envs.game_class("pishti")(players=4)) == "pishti/ppo_4p_partners"
    assert shipped_bot(envs.game_class("pishti")(players=4, partnerships=False)) == "pishti/ppo_4p"
    with pytest.raises(ValueError, match="no shipped pis_yedili bot fits these settings"):
        make_policy("hard", envs.game_class("pis_yedili")(players=4, observation="plain"))


def test_a_bare_level_takes_a_policy_network_before_a_dqn(tmp_path, monkeypatch):
    # a distilled network's scores are a policy, as PPO's are; a DQN's are Q-values. Named so that the DQN
    # comes first by name, the distilled network must still be chosen
    from kahve import checkpoints
    (tmp_path / "pis_yedili").mkdir()
    shutil.copy(checkpoints.ROOT / "pis_yedili" / "dqn_2p.onnx", tmp_path / "pis_yedili" / "a.onnx")
    shutil.copy(checkpoints.ROOT / "pis_yedili" / "distilled_2p.onnx", tmp_path / "pis_yedili" / "b.onnx")
    monkeypatch.setattr(checkpoints, "ROOT", tmp_path)
    assert shipped_bot(envs.game_class("pis_yedili")(players=2)) == "pis_yedili/b"
    assert first_shipped_bot("pis_yedili") == "pis_yedili/b"

