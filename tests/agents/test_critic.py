"""A critic that sees the other hands in training, an actor that never does (``network.critic: hands``,
agents/training/critic.py): what the learner's observation carries, that the actor and the exported bot read the
seat's observation alone while the value reads the hands, every layout alike, and the config's refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th

from kahve import envs
from kahve.agents.policies.bot import Bot
from kahve.agents.policies.network import MLP
from kahve.agents.training import config as config_mod
from kahve.agents.training.critic import critic_view
from kahve.agents.training.learner_env import LearnerEnv
from kahve.agents.training.opponents import OpponentPool
from kahve.agents.training.trainer import build_model, build_vec_env
from kahve.agents.training.vec_env import BatchedVecEnv, SharedMemoryVecEnv
from kahve.envs.core.cards import NUM_CARDS

ROOT = Path(__file__).resolve().parents[2]
CASES = [("pishti", dict(players=2, episode="deal", reward="points")),
         ("pasur", dict(episode="deal", reward="points")),
         ("pis_yedili", dict(players=2, episode="deal", reward="points")),
         ("pis_yedili", dict(players=4, episode="deal"))]          # two packs, three other hands


def _counts(hand) -> np.ndarray:
    out = np.zeros(NUM_CARDS)
    for c in hand:
        out[c] += 1
    return out


@pytest.mark.parametrize("game,settings", CASES, ids=[f"{g}-{s.get('players', 2)}" for g, s in CASES])
def test_the_learners_observation_is_the_seats_then_the_other_hands(game, settings):
    env = LearnerEnv(game, settings, OpponentPool([("heuristic", 1.0)]), seed=5, critic="hands")
    g = env.game
    size = g.observation_size
    assert env.observation_space.shape == (size + (g.num_players - 1) * NUM_CARDS,)
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    hidden_seen = 0
    for _ in range(300):
        st, seat = env.state, env._my_seat
        assert obs.shape == env.observation_space.shape and env.observation_space.contains(obs)
        assert np.array_equal(obs[:size], st.observation(seat))
        others = obs[size:].reshape(g.num_players - 1, NUM_CARDS) * 2
        for k in range(1, g.num_players):
            assert np.array_equal(others[k - 1], _counts(st.hands[(seat + k) % g.num_players]))
        hidden_seen += int(others.sum())
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if term or trunc:
            obs, _ = env.reset()
    assert hidden_seen > 300                              # the other hands were there to check


def test_a_hidden_hand_is_in_the_critics_view_and_nowhere_in_the_seats():
    # the seat's observation does not change when the other hand is re-dealt; the critic's view does
    env = LearnerEnv("pishti", dict(players=2, episode="deal"), OpponentPool([("random", 1.0)]), seed=1,
                     critic="hands")
    env.reset()
    st, seat = env.state, env._my_seat
    other = st.determinize(seat, __import__("random").Random(3))
    assert other.hands[1 - seat] != st.hands[1 - seat]
    assert np.array_equal(other.observation(seat), st.observation(seat))
    assert not np.array_equal(critic_view(other, seat), critic_view(st, seat))


def _cfg(game="pis_yedili", settings=None, **network):
    return config_mod.resolve({"game": game, "settings": settings or dict(players=2, episode="deal"),
                               "n_envs": 2, "vec_env": "dummy", "ppo": {"n_steps": 16, "batch_size": 32},
                               "network": {"hidden": [32, 32], **network}})


@pytest.mark.parametrize("action_features", [False, True])
def test_the_actor_reads_the_seats_observation_alone_and_the_critic_the_hands(action_features, tmp_path):
    game = "pasur" if action_features else "pis_yedili"
    settings = dict(episode="deal") if action_features else None
    cfg = _cfg(game, settings, critic="hands", action_features=action_features)
    vec = build_vec_env(cfg, OpponentPool([("random", 1.0)]))
    model = build_model(cfg, vec, tmp_path)
    g = envs.game_class(game)(**cfg["settings"])
    size = g.observation_size
    obs = np.stack([vec.reset()[0]] * 2)
    masks = np.ones((2, g.num_actions), dtype=bool)
    obs[1, size:] = np.random.default_rng(0).random(obs.shape[1] - size)    # other hands, same seat's view
    policy = model.policy
    with th.no_grad():
        x = th.as_tensor(obs)
        logits = policy.get_distribution(x, action_masks=masks).distribution.logits
        values = policy.predict_values(x)
    assert th.equal(logits[0], logits[1])                # the actor never reads past the seat's observation
    assert not th.isclose(values[0], values[1]).all()    # the critic does
    exported = MLP.from_sb3(model)
    assert exported.weights[0].shape[1] == size          # a bot file takes the seat's observation
    scores = th.log_softmax(th.as_tensor(exported.forward(obs[:1, :size])[0]), dim=0)   # the same policy
    assert th.allclose(scores, logits[0], atol=1e-4)
    assert (exported.feature_offset is not None) == action_features
    vec.close()


def test_every_layout_hands_out_the_single_envs_observations():
    game, settings = "pis_yedili", dict(players=2, episode="deal")
    pool = OpponentPool([("heuristic", 1.0)])
    seeds = [3, 4, 5]
    for layout in (BatchedVecEnv, SharedMemoryVecEnv):
        vec = layout(game, settings, pool, seeds, **({"workers": 2} if layout is SharedMemoryVecEnv else {}),
                     critic="hands")
        singles = [LearnerEnv(game, settings, pool, seed=s, critic="hands") for s in seeds]
        try:
            obs = vec.reset()
            rng = np.random.default_rng(1)
            for i, env in enumerate(singles):
                assert np.array_equal(obs[i], env.reset()[0])
            for _ in range(40):
                actions = [int(rng.choice(np.flatnonzero(m))) for m in vec.env_method("action_masks")]
                obs, _, dones, _ = vec.step(np.array(actions))
                for i, env in enumerate(singles):
                    o, _, term, trunc, _ = env.step(actions[i])
                    if term or trunc:
                        o, _ = env.reset()
                    assert np.array_equal(obs[i], o)
        finally:
            vec.close()


@pytest.mark.parametrize("raw,match", [
    ({"game": "pis_yedili", "algorithm": "dqn", "network": {"critic": "hands"}}, "algorithm ppo and backend sb3"),
    ({"game": "ish", "network": {"critic": "hands"}}, "ish keeps no hands"),
    ({"game": "pishe_pasha", "network": {"critic": "hands"}}, "pishe_pasha keeps no hands"),
    ({"game": "pishti", "network": {"critic": "all"}}, "'network.critic': 'all' is not allowed"),
])
def test_the_config_refuses_a_critic_it_cannot_train(raw, match):
    with pytest.raises(ValueError, match=match):
        config_mod.resolve(raw)


def test_a_run_with_the_hands_critic_clones_trains_and_exports_a_bot_of_the_seats_view(tmp_path):
    out = tmp_path / "run"
    args = [str(ROOT / "configs" / "pis_yedili" / "ppo.yaml"), "--no-progress", "--override", "total_timesteps=256",
            "n_envs=2", "ppo.n_steps=64", "ppo.batch_size=64", "evaluation.games=2", "evaluation.every=0",
            "evaluation.workers=1", "opponents.self_play.every=128", "pretrain.steps=200", "pretrain.epochs=1",
            "pretrain.dagger_rounds=1", "pretrain.dagger_steps=100", "pretrain.dagger_epochs=1",
            "network.critic=hands", f"output={out}"]
    r = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "train", *args], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["steps"] >= 256
    pre = json.loads((out / "pretrain.json").read_text())
    assert len(pre["dagger"]) == 1                       # DAgger's clone played on the seat's view
    r = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "export", str(out), "-o",
                        str(tmp_path / "bot.onnx")], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    g = envs.game_class("pis_yedili")(players=2)
    bot = Bot.load(tmp_path / "bot.onnx", game=g)
    st = g.new_state(__import__("random").Random(0))
    assert st.legal_mask()[bot.act(st.observation(st.current_player), st.legal_mask())]


@pytest.mark.parametrize("game,settings", CASES[:3], ids=[g for g, _ in CASES[:3]])
def test_hands_stock_also_shows_the_next_stock_cards_top_first(game, settings):
    from kahve.agents.training.critic import STOCK_SHOWN
    env = LearnerEnv(game, settings, OpponentPool([("heuristic", 1.0)]), seed=2, critic="hands_stock")
    g = env.game
    others = (g.num_players - 1) * NUM_CARDS
    assert env.observation_space.shape == (g.observation_size + others + STOCK_SHOWN * NUM_CARDS,)
    rng = np.random.default_rng(3)
    obs, _ = env.reset()
    short_stock = False
    for _ in range(200):
        st, seat = env.state, env._my_seat
        assert np.array_equal(obs[:g.observation_size + others], np.concatenate(
            [st.observation(seat), critic_view(st, seat, "hands")]))
        rows = obs[g.observation_size + others:].reshape(STOCK_SHOWN, NUM_CARDS)
        top = list(reversed(st.stock))[:STOCK_SHOWN]             # the card the next draw takes first
        assert [int(np.flatnonzero(r)[0]) for r in rows[:len(top)]] == top and rows.sum() == len(top)
        short_stock |= len(top) < STOCK_SHOWN
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if term or trunc:
            obs, _ = env.reset()
    assert short_stock                                           # the zero rows past the stock's end were seen
