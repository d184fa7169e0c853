"""Training: config validation, the single-agent view, masked DQN, smoke runs, resume, and learning Ish's
known optimum (issue: training from config files)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th

from kahve import envs
from kahve.agents.training import config as config_mod
from kahve.agents.training.sb3.dqn import masked_max, masked_td_target
from kahve.agents.training.view.opponents import OpponentPool
from kahve.agents.training.view.learner_env import LearnerEnv
from tests.helpers import HANG_S, popen_train

ROOT = Path(__file__).resolve().parents[2]
#: the configs of one training run (a recipe, with stages, is tests/agents/test_recipes.py's)
CONFIGS = sorted(p for p in (ROOT / "configs").glob("*/*.yaml") if "\nstages:" not in p.read_text())
TINY = ["total_timesteps=256", "n_envs=2", "vec_env=dummy", "ppo.n_steps=64", "ppo.batch_size=64",
        "dqn.learning_starts=64", "dqn.buffer_size=1000", "evaluation.games=2", "evaluation.every=0",
        "evaluation.workers=1", "checkpoint_every=128", "opponents.self_play.every=0", "pretrain.steps=0"]


# ----- config validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize("raw,match", [
    ({}, "'game' is required"),
    ({"game": "chess"}, "config key 'game': 'chess' is not allowed"),
    ({"game": "pishti", "algoritm": "ppo"}, "unknown config key 'algoritm' \\(did you mean 'algorithm'\\?\\)"),
    ({"game": "pishti", "ppo": {"n_step": 5}}, "unknown config key 'ppo.n_step'"),
    ({"game": "pishti", "ppo": {"n_steps": "many"}}, "'ppo.n_steps': expected int, got 'many'"),
    ({"game": "pishti", "ppo": {"learning_rate": 5.0}}, "'ppo.learning_rate': 5.0 is out of range"),
    ({"game": "pishti", "n_envs": 0}, "'n_envs': 0 is out of range"),
    ({"game": "pishti", "settings": {"players": 3}}, "'settings': setting 'players': 3"),
    ({"game": "pishti", "settings": {"colour": 1}}, "'settings': unknown setting 'colour'"),
    ({"game": "pishti", "opponents": {"pool": [{"policy": "randm"}]}}, "opponents.pool\\[0\\].policy.*randm"),
    ({"game": "pishti", "opponents": {"pool": [{"policy": "random", "weight": 0}]}}, "weight': expected a positive"),
    ({"game": "pishti", "network": {"hidden": []}}, "network.hidden"),
    ({"game": "pishti", "ppo": {"batch_size": 4096, "n_steps": 64}, "n_envs": 2}, "larger than one rollout"),
    ({"game": "pishti", "evaluation": {"opponents": ["ismcts:0"]}}, "evaluation.opponents\\[0\\]"),
    ({"game": "pishti", "ppo": []}, "'ppo': expected a mapping"),
])
def test_config_errors_name_the_key(raw, match):
    with pytest.raises(ValueError, match=match):
        config_mod.resolve(raw)


def test_config_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("game: [unclosed")
    with pytest.raises(ValueError, match="not valid YAML"):
        config_mod.load(bad)
    bad.write_text("- a list")
    with pytest.raises(ValueError, match="a config is a mapping"):
        config_mod.load(bad)
    with pytest.raises(FileNotFoundError):
        config_mod.load(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="key=value"):
        config_mod.apply_overrides({}, ["nonsense"])


def test_overrides_and_defaults():
    cfg = config_mod.resolve(config_mod.apply_overrides({"game": "pishti"}, ["ppo.learning_rate=1e-4",
                                                                              "settings.players=2", "seed=3"]))
    assert cfg["ppo"]["learning_rate"] == 1e-4 and cfg["settings"] == {"players": 2}
    assert cfg["output"] == "runs/pishti_ppo_3" and cfg["dqn"]["gamma"] == 0.99


@pytest.mark.parametrize("path", CONFIGS, ids=[f"{p.parent.name}/{p.name}" for p in CONFIGS])
def test_shipped_configs_are_valid(path):
    cfg = config_mod.load(path)
    assert cfg["game"] == path.parent.name
    if path.stem == "strong":             # the long path to a shipped bot: expert iteration, then league PPO
        assert cfg["pretrain"]["generations"] > 0 and cfg["opponents"]["league"]["weighting"] == "pfsp"
    elif path.stem == "finetune":         # goes on from a trained run (init_from, named on the command line)
        assert cfg["algorithm"] == "ppo" and not cfg["pretrain"]["steps"] and "init_from=" in path.read_text()
    else:
        assert path.stem in (cfg["algorithm"], cfg["backend"])   # rllib.yaml: backend


def test_every_game_ships_ppo_and_dqn_configs():
    have = {(p.parent.name, p.stem) for p in CONFIGS}
    assert {(g, a) for g in envs.GAMES for a in ("ppo", "dqn")} <= have


# ----- the single-agent view --------------------------------------------------------------------------------
@pytest.mark.parametrize("game,settings", [("pishti", dict(players=4, partnerships=True, episode="deal")),
                                           ("pishti", dict(players=2, episode="deal")),
                                           ("ish", dict(players=3, bankroll=5, max_rounds=10))])
def test_learner_env_masks_sides_and_rewards(game, settings):
    env = LearnerEnv(game, settings, OpponentPool([("random", 1.0)]), seed=0)
    g = env.game
    rng = np.random.default_rng(0)
    sides_seen = set()
    for episode in range(2 * g.num_sides):
        obs, info = env.reset()
        sides_seen.add(env.learner_side)
        total, done = 0.0, False
        while not done:
            st = env.state
            assert g.sides[st.current_player] == env.learner_side       # the learner only acts for its side
            mask = env.action_masks()
            assert np.array_equal(mask, st.legal_mask())
            assert np.array_equal(obs, st.observation(st.current_player))
            obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            total += r
            done = term or trunc
        seat = g.sides.index(env.learner_side)
        assert total == pytest.approx(env.state.returns[seat])         # its own reward, nothing else
    assert sides_seen == set(range(g.num_sides))                         # the side rotates


def test_learner_env_is_seeded_and_its_observations_fit_the_space():
    a, b = LearnerEnv("pishti", dict(players=2, episode="deal")), LearnerEnv("pishti", dict(players=2, episode="deal"))
    for env in (a, b):
        env.reset(seed=4)
    assert a.state.to_dict() == b.state.to_dict()
    obs, _ = a.reset(seed=5)
    assert a.observation_space.contains(obs) and a.action_space.n == 52
    with pytest.raises(ValueError, match="illegal action"):       # an illegal action is refused, never replaced
        a.step(int(np.flatnonzero(~a.action_masks())[0]))


# ----- masked DQN --------------------------------------------------------------------------------------------
def test_masked_target_differs_from_the_unmasked_one():
    # next state: action 0 legal with Q=1, action 1 illegal with Q=5. The true target uses Q=1.
    next_q = th.tensor([[1.0, 5.0], [2.0, -3.0]])
    masks = th.tensor([[True, False], [False, True]])
    rewards = th.tensor([[0.5], [1.0]])
    dones = th.tensor([[0.0], [1.0]])
    target = masked_td_target(rewards, dones, next_q, masks, 0.9)
    assert target[0, 0].item() == pytest.approx(0.5 + 0.9 * 1.0)
    unmasked = rewards + (1 - dones) * 0.9 * next_q.max(dim=1).values.reshape(-1, 1)
    assert unmasked[0, 0].item() == pytest.approx(0.5 + 0.9 * 5.0)       # what an unmasked DQN would learn
    assert target[1, 0].item() == pytest.approx(1.0)                     # terminal: no bootstrap, no NaN
    assert masked_max(next_q, masks).tolist() == [1.0, -3.0]


def test_masked_dqn_learns_the_legal_value_on_a_tiny_problem():
    # Two-step chain: s0 --a0--> s1 (mask: only action 1 legal, reward 1 then end). Action 0 of s1 is illegal
    # and would be worth nothing; an unmasked max would chase its (random) estimate. The masked DQN's
    # Q(s0, a0) must converge to gamma * 1.
    import gymnasium as gym
    from kahve.agents.training.sb3.dqn import MaskedDQN

    class Chain(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.t = 0
            return np.array([1, 0], np.float32), {}

        def action_masks(self):
            return np.array([True, False]) if self.t == 0 else np.array([False, True])

        def step(self, action):
            assert self.action_masks()[action], "illegal action taken"
            self.t += 1
            done = self.t == 2
            obs = np.array([0, 1], np.float32)
            return obs, (1.0 if done else 0.0), done, False, {}

    th.manual_seed(0)
    model = MaskedDQN("MlpPolicy", Chain(), learning_starts=50, buffer_size=1000, batch_size=32,
                      learning_rate=5e-3, target_update_interval=50, gamma=0.9, exploration_fraction=0.2,
                      policy_kwargs=dict(net_arch=[16]), seed=0, device="cpu")
    model.learn(3000)
    q = model.q_net(th.tensor([[1.0, 0.0], [0.0, 1.0]])).detach()
    assert q[0, 0].item() == pytest.approx(0.9, abs=0.1)
    assert q[1, 1].item() == pytest.approx(1.0, abs=0.1)
    action, _ = model.predict(np.array([0, 1], np.float32), deterministic=True, action_masks=np.array([False, True]))
    assert action == 1


def test_masked_dqn_stores_the_mask_of_each_next_observation():
    # Pişti: the first 52 observation entries are the own hand, which is exactly the legal mask
    from stable_baselines3.common.vec_env import DummyVecEnv

    from kahve.agents.training.sb3.dqn import MaskedDQN
    venv = DummyVecEnv([lambda i=i: LearnerEnv("pishti", dict(players=2, episode="deal"), seed=i) for i in range(2)])
    model = MaskedDQN("MlpPolicy", venv, learning_starts=10**6, buffer_size=2000, seed=0, device="cpu")
    model.learn(600)
    buf = model.replay_buffer
    rows = [(i, e) for i in range(buf.pos) for e in range(2) if not buf.dones[i, e]]
    assert len(rows) > 400
    for i, e in rows:
        assert np.array_equal(buf.next_action_masks[i, e], buf.next_observations[i, e, :52] > 0)


# ----- runs -----------------------------------------------------------------------------------------------------
def _train(args, cwd):
    return subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "train", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=HANG_S)


@pytest.mark.parametrize("path", CONFIGS, ids=[f"{p.parent.name}/{p.name}" for p in CONFIGS])
def test_smoke_run_of_every_shipped_config(path, tmp_path):
    if config_mod.load(path)["backend"] == "rllib":
        pytest.skip("a Ray run: tests/agents/test_rllib.py trains it (where the rllib extra is installed)")
    out = tmp_path / "run"
    pretrain = (["pretrain.steps=300", "pretrain.epochs=1", "pretrain.dagger_rounds=1", "pretrain.dagger_steps=100",
                 "pretrain.dagger_epochs=1", "pretrain.generation_steps=60"]
                if config_mod.load(path)["pretrain"]["steps"] else [])
    r = _train([str(path), "--no-progress", "--override", *TINY, *pretrain, f"output={out}"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] >= 256 and (out / "policy.npz").exists()
    assert (out / "checkpoints" / "latest" / "model.pt").exists() and (out / "tb").is_dir()
    assert set(summary["evaluation"]["results"]) == set(config_mod.load(path)["evaluation"]["opponents"])
    if config_mod.load(path)["pretrain"]["steps"]:
        pre = json.loads((out / "pretrain.json").read_text())
        assert pre["decisions"] >= 400 and len(pre["dagger"]) == 1 and 0 <= pre["dagger"][0]["played_like_teacher"] <= 1


def test_resume_continues_the_step_count(tmp_path):
    out = tmp_path / "run"
    cfg = ROOT / "configs" / "pishti" / "dqn.yaml"
    r = _train([str(cfg), "--no-progress", "--override", *TINY, f"output={out}"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    first = json.loads((out / "checkpoints" / "latest" / "state.json").read_text())["steps"]
    r = _train(["--resume", str(out), "--no-progress", "--override", "total_timesteps=512"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] >= 512 and summary["steps_this_session"] == summary["steps"] - first
    assert (out / "checkpoints" / "latest" / "replay_buffer.npz").exists()
    r = _train([str(cfg), "--no-progress", "--override", *TINY, f"output={out}"], tmp_path)
    assert r.returncode == 2 and "already holds a run" in r.stderr


@pytest.mark.parametrize("game", ["pasur", "pishti", "pis_yedili"])
def test_a_bot_trains_and_plays_on_the_plain_observation(game, tmp_path):
    # the shipped configs train on the appraised observation (the smoke runs above); a config that asks for the
    # plain one makes a bot that records it, plays at a plain table and is refused at an appraised one
    from kahve.agents.policies.bot import Bot, BotFileError
    out = tmp_path / "run"
    r = _train([f"{game}/ppo", "--no-progress", "--override", *TINY, "settings.observation=plain", f"output={out}"],
               tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "export", str(out), "-o", str(tmp_path / "b.onnx")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stderr[-3000:]
    settings = config_mod.load(out / "config.yaml")["settings"]
    plain = envs.game_class(game)(**settings)
    appraised = envs.game_class(game)(**{**settings, "observation": "appraised"})
    assert plain.observation_size < appraised.observation_size
    bot = Bot.load(tmp_path / "b.onnx", game=plain)
    assert bot.metadata["settings"]["observation"] == "plain"
    assert bot.metadata["observation_size"] == plain.observation_size
    state = plain.new_state(3)
    while state.current_player is not None:
        seat = state.current_player
        state.apply(bot.act(state.observation(seat), state.legal_mask(), state))
    with pytest.raises(BotFileError, match="expects observations of"):
        Bot.load(tmp_path / "b.onnx", game=appraised)


def test_ish_ppo_learns_the_minimum_stake():
    # docs/rules.md §5e: with the pot payout, the minimum stake is strictly dominant
    from kahve.agents.training.backends import train
    cfg = config_mod.resolve({
        "game": "ish", "settings": {"players": 2, "episode": "deal", "false_call_fine": 1},
        "algorithm": "ppo", "total_timesteps": 6000, "n_envs": 2, "vec_env": "dummy", "seed": 1,
        "ppo": {"n_steps": 128, "batch_size": 128, "learning_rate": 0.003, "ent_coef": 0.0},
        "network": {"hidden": [32]}, "opponents": {"pool": [{"policy": "random", "weight": 1}]},
        "evaluation": {"every": 0, "games": 2, "opponents": ["random"], "workers": 1},
        "checkpoint_every": 10**9, "output": "unused"})
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        cfg["output"] = d + "/run"
        train(cfg, progress=True, log=lambda *a: None)        # the progress bar's packages are installed
        from kahve.agents.policies.network import MLP, NetworkPolicy
        pol = NetworkPolicy(MLP.load(Path(d) / "run" / "policy.npz"))
    game = envs.game_class("ish")(players=2, episode="deal", false_call_fine=1)
    stakes = []
    for seed in range(40):
        st = game.new_state(seed)
        seat = st.current_player
        stakes.append(pol.act(st.observation(seat), st.legal_mask(), st))
    assert np.mean(np.array(stakes) == 0) >= 0.9, stakes


def test_behaviour_cloning_moves_the_policy_towards_the_teacher():
    from sb3_contrib import MaskablePPO
    from kahve.agents.training.pretrain import behaviour_clone, collect_demonstrations
    pool = OpponentPool([("random", 1.0)])
    data = collect_demonstrations("pishti", dict(players=2, episode="deal"), pool, "heuristic", 3000, 0.99, seed=0)
    assert len(data["actions"]) >= 3000 and data["masks"][np.arange(len(data["actions"])), data["actions"]].all()
    env = LearnerEnv("pishti", dict(players=2, episode="deal"), pool, seed=0)
    th.manual_seed(0)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, policy_kwargs=dict(net_arch=[64]), seed=0,
                        device="cpu")
    before = behaviour_clone(model, data, 1, 256, 0.0, seed=0, log=lambda *a: None)["accuracy"]
    after = behaviour_clone(model, data, 6, 256, 3e-3, seed=0, log=lambda *a: None)["accuracy"]
    assert after > before + 0.2 and after > 0.6, (before, after)


def test_dagger_collection_lets_the_clone_play_and_the_teacher_label():
    from kahve.agents.policies.network import MLP
    from kahve.agents.training.pretrain import collect_demonstrations
    pool = OpponentPool([("random", 1.0)])
    settings = dict(players=2, episode="deal")
    size = envs.game_class("pishti")(**settings).observation_size
    rng = np.random.default_rng(0)
    actor = MLP([rng.normal(size=(52, size))], [np.zeros(52)], "tanh")      # an arbitrary (bad) player
    teacher_only = collect_demonstrations("pishti", settings, pool, "heuristic", 400, 0.99, seed=1)
    dagger = collect_demonstrations("pishti", settings, pool, "heuristic", 400, 0.99, seed=1, workers=2,
                                    actor=actor)
    assert teacher_only["agree"].all()
    assert 0.05 < dagger["agree"].mean() < 0.95          # the actor played; where it differs, the label stayed
    labels = dagger["actions"]
    assert dagger["masks"][np.arange(len(labels)), labels].all()
    # the actor's own choices are what it would play on those observations; the labels differ exactly there
    greedy = [int(np.flatnonzero(m)[np.argmax(actor.forward(o)[np.flatnonzero(m)])])
              for o, m in zip(dagger["obs"], dagger["masks"])]
    assert np.array_equal(np.array(greedy) == labels, dagger["agree"])


def test_demonstrations_in_parallel_are_reproducible():
    from kahve.agents.training.pretrain import collect_demonstrations
    pool = OpponentPool([("random", 1.0)])
    a = collect_demonstrations("pishe_pasha", {}, pool, "heuristic", 300, 0.99, seed=4, workers=2)
    b = collect_demonstrations("pishe_pasha", {}, pool, "heuristic", 300, 0.99, seed=4, workers=2)
    assert len(a["actions"]) >= 300 and all(np.array_equal(a[k], b[k]) for k in a)


def test_learner_env_skips_episodes_without_a_decision_for_the_learner():
    # Pishe Pasha: with skip_single_choice a deal can end before the learner has any real choice (with this
    # seed, once in the first 2,000 episodes); reset() must then move on to the next episode
    env = LearnerEnv("pishe_pasha", {"reward": "points"}, OpponentPool([("random", 1.0), ("heuristic", 3.0)]), seed=1)
    for _ in range(2000):
        obs, info = env.reset()
        assert env.state.current_player is not None and env.action_masks().any()
    assert env._episodes > 2000


def test_ctrl_c_saves_a_checkpoint(tmp_path):
    import signal
    import time
    out = tmp_path / "run"
    cfg = ROOT / "configs" / "pishe_pasha" / "dqn.yaml"
    proc = popen_train([str(cfg), "--no-progress", "--override", "total_timesteps=10000000", "n_envs=1",
                        "checkpoint_every=100000000", "evaluation.every=0", "pretrain.steps=0", f"output={out}"],
                       tmp_path)
    deadline = time.time() + HANG_S                 # TensorBoard's folder: learning has started
    while not (out / "tb").is_dir() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
    assert (out / "tb").is_dir(), proc.communicate()[1][-3000:] if proc.poll() is not None else "no tb folder"
    time.sleep(4)                                   # let it train a little
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and summary["steps"] > 0
    state = json.loads((out / "checkpoints" / "latest" / "state.json").read_text())
    assert state["steps"] == summary["steps"] and "--resume" in stdout


@pytest.mark.parametrize("workers", [1, 2])
def test_labelling_reports_its_progress_up_to_the_whole_count(workers):
    from kahve.agents.training.pretrain import collect_demonstrations
    calls = []
    data = collect_demonstrations("pishti", dict(players=2, episode="deal"), OpponentPool([("random", 1.0)]),
                                  "heuristic", 600, 0.99, seed=3, workers=workers,
                                  progress=lambda done, total: calls.append((done, total)))
    assert len(data["actions"]) >= 600
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and calls[-1] == (calls[-1][1], calls[-1][1]) and calls[-1][1] >= 600
    if workers == 1:     # in process: every few decisions, not only at the end
        assert len(calls) >= 600 // 64


def test_fitting_demonstrations_counts_every_minibatch():
    from sb3_contrib import MaskablePPO
    from kahve.agents.training.pretrain import collect_demonstrations, fit_demonstrations
    pool = OpponentPool([("random", 1.0)])
    data = collect_demonstrations("pishti", dict(players=2, episode="deal"), pool, "heuristic", 500, 0.99, seed=0)
    env = LearnerEnv("pishti", dict(players=2, episode="deal"), pool, seed=0)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, policy_kwargs=dict(net_arch=[32]), seed=0,
                        device="cpu")
    calls = []
    fit_demonstrations(model, data, 3, 128, 1e-3, seed=0, log=lambda *a: None,
                       progress=lambda done, total: calls.append((done, total)))
    batches = -(-len(data["actions"]) // 128)
    assert calls == [(k, 3 * batches) for k in range(3 * batches)]


def test_periodic_evaluation_logs_both_intervals():
    """The trainer's evaluations are a few hundred matches: the log gives the points' interval beside the win
    rate's, so a lucky reading is not taken for a gain."""
    from kahve import checkpoints
    from kahve.agents.training.session import evaluate_against
    cfg = config_mod.resolve({"game": "pishti", "settings": {"players": 2, "episode": "deal"},
                              "evaluation": {"games": 8, "opponents": ["random"], "workers": 1}})
    lines, scalars = [], {}
    kept = evaluate_against(cfg, checkpoints.find("pishti/ppo_2p"), 1000, scalars.__setitem__, log=lines.append)
    lo, hi = kept["results"]["random"]["points_per_deal_ci95"]
    assert lo < hi
    assert re.search(r"points/deal [+-]\d+\.\d\d " + re.escape(f"({lo:+.2f}..{hi:+.2f})") + "$", lines[0]), lines[0]
    assert set(scalars) == {"eval/random/win_rate", "eval/random/points_per_deal"}
