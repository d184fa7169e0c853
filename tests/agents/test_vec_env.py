"""kahve's vector envs (agents/training/sb3/vec_env.py, issue 19): the same trajectories as N single LearnerEnvs,
masks that are the engine's legal actions, observations that a later step never changes, network opponents
decided in one forward pass, SB3's algorithms on top, and the config keys (vec_env, env_workers, device)."""

from __future__ import annotations

import numpy as np
import pytest

from kahve import envs
from kahve.agents.policies.network import MLP, NetworkPolicy, masked_choice
from kahve.agents.training import config as config_mod
from kahve.agents.training.view.learner_env import LearnerEnv
from kahve.agents.training.view.opponents import OpponentPool, batch_group, decide_batch
from kahve.agents.training.sb3.vec_env import BatchedVecEnv, SharedMemoryVecEnv, split


def _mlp(game, settings, seed=0, hidden=16):
    g = envs.game_class(game)(**settings)
    r = np.random.default_rng(seed)
    return MLP([r.normal(size=(hidden, g.observation_size)), r.normal(size=(g.num_actions, hidden))],
               [np.zeros(hidden), np.zeros(g.num_actions)], "tanh")


def _pool(game, settings, network=True):
    entries = [("random", 1.0), ("heuristic", 1.0)]
    return OpponentPool(entries + ([(_mlp(game, settings), 2.0)] if network else []))


#: (game, settings): two and more opponent sides, partnerships, deals a learner may never act in, a 2-step action
CASES = [("pishti", dict(players=2, episode="deal", reward="points")),
         ("pishti", dict(players=4, partnerships=True, episode="deal")),
         ("pasur", dict(episode="deal", reward="points")),
         ("pis_yedili", dict(players=3, episode="deal")),
         ("pishe_pasha", dict(reward="points")),
         ("ish", dict(players=3, bankroll=5, max_rounds=10))]


def _compare(vec, singles, steps, seed=0):
    """Step ``vec`` and the single envs with the same random legal actions; every result must be equal."""
    rng = np.random.default_rng(seed)
    obs = vec.reset()
    for i, env in enumerate(singles):
        assert np.array_equal(obs[i], env.reset()[0])
    ended = 0
    for step in range(steps):
        masks = vec.env_method("action_masks")
        assert masks.shape == (vec.num_envs, vec.action_space.n) and masks.dtype == bool
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, dones, infos = vec.step(actions)
        for i, env in enumerate(singles):
            assert np.array_equal(masks[i], env.action_masks())
            o, r, term, trunc, info = env.step(int(actions[i]))
            assert dones[i] == (term or trunc) and rewards[i] == np.float32(r), (step, i)
            if term or trunc:
                ended += 1
                assert np.array_equal(infos[i]["terminal_observation"], o)
                assert infos[i]["TimeLimit.truncated"] == (trunc and not term)
                assert {k: infos[i][k] for k in info} == info
                o, _ = env.reset()
            else:
                assert infos[i] == {}                          # no per-step infos
            assert np.array_equal(obs[i], o), (step, i)
    return ended


@pytest.mark.parametrize("game,settings", CASES, ids=[f"{g}-{len(s)}" for g, s in CASES])
def test_batched_env_gives_the_trajectories_of_single_envs(game, settings):
    pool = _pool(game, settings)
    seeds = [11, 12, 13, 14, 15]
    vec = BatchedVecEnv(game, settings, pool, seeds)
    singles = [LearnerEnv(game, settings, pool, seed=s) for s in seeds]
    assert _compare(vec, singles, 120) > 0


def test_shared_memory_env_gives_the_trajectories_of_single_envs():
    game, settings = "pishti", dict(players=2, episode="deal", reward="points")
    pool = _pool(game, settings)
    seeds = [3, 4, 5, 6, 7]
    vec = SharedMemoryVecEnv(game, settings, pool, seeds, workers=2)
    try:
        assert [len(s) for s in vec.spans] == [2, 3]
        singles = [LearnerEnv(game, settings, pool, seed=s) for s in seeds]
        assert _compare(vec, singles, 150) > 0
        # env_method reaches each game's own env, in the order asked, across workers
        states = vec.env_method("get_rng_state", indices=[4, 0, 2])
        assert [s["episodes"] for s in states] == [singles[i].get_rng_state()["episodes"] for i in (4, 0, 2)]
        assert vec.get_attr("learner_side") == [e.learner_side for e in singles]
    finally:
        vec.close()
    assert vec.closed and not any(p.is_alive() for p in vec.processes)


def test_layouts_deal_the_same_games_from_sb3s_seeding():
    # VecEnv.seed(s) seeds env i with s + i at the next reset, as DummyVecEnv does
    from stable_baselines3.common.vec_env import DummyVecEnv
    game, settings = "pis_yedili", dict(players=2, episode="deal")
    pool = _pool(game, settings, network=False)
    vec = BatchedVecEnv(game, settings, pool, [0, 1, 2])
    dummy = DummyVecEnv([lambda i=i: LearnerEnv(game, settings, pool, seed=i) for i in range(3)])
    for v in (vec, dummy):
        v.seed(40)
    assert np.array_equal(vec.reset(), dummy.reset())
    rng = np.random.default_rng(2)
    for _ in range(60):
        masks = vec.env_method("action_masks")
        assert np.array_equal(masks, np.stack(dummy.env_method("action_masks")))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        a, b = vec.step(actions), dummy.step(actions)
        assert all(np.array_equal(x, y) for x, y in zip(a[:3], b[:3]))


@pytest.mark.parametrize("game", envs.GAMES)
def test_masks_are_the_engines_legal_actions(game):
    settings = dict(CASES[[c[0] for c in CASES].index(game)][1])
    vec = BatchedVecEnv(game, settings, _pool(game, settings), [0, 1, 2, 3])
    vec.reset()
    rng = np.random.default_rng(1)
    for _ in range(80):
        masks = vec.action_masks()
        for i, env in enumerate(vec.envs):
            st = env.state
            assert env.game.sides[st.current_player] == env.learner_side
            assert np.flatnonzero(masks[i]).tolist() == st.legal_actions()
        vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))


def test_what_it_hands_out_is_never_changed_by_a_later_step():
    game, settings = "pishti", dict(players=2, episode="deal")
    vec = BatchedVecEnv(game, settings, _pool(game, settings), [0, 1, 2])
    kept = [vec.reset()]
    masks_kept = []
    rng = np.random.default_rng(0)
    for _ in range(60):
        masks = vec.env_method("action_masks")
        masks_kept.append(masks)
        masks_kept.append(vec.action_masks())
        obs, rewards, dones, infos = vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
        kept += [obs, rewards, dones] + [info["terminal_observation"] for info in infos if info]
    copies = [k.copy() for k in kept + masks_kept]
    for _ in range(30):
        vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in vec.action_masks()]))
    assert all(np.array_equal(a, b) for a, b in zip(kept + masks_kept, copies))
    assert len({id(k) for k in kept}) == len(kept)


def test_games_waiting_on_one_network_share_a_forward_pass(monkeypatch):
    game, settings = "pishti", dict(players=4, partnerships=False, episode="deal")
    mlp = _mlp(game, settings)
    calls = []
    forward = mlp.forward
    monkeypatch.setattr(mlp, "forward", lambda x: calls.append(np.asarray(x).shape) or forward(x))
    vec = BatchedVecEnv(game, settings, OpponentPool([(mlp, 1.0)]), list(range(8)))
    vec.reset()
    calls.clear()
    rng = np.random.default_rng(0)
    for _ in range(10):
        vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in vec.action_masks()]))
    decisions = sum(shape[0] for shape in calls)
    # 3 opponents move between two learner moves: about 3 passes a step for 8 games, never one per game
    assert decisions >= 8 * 10 and len(calls) <= 4 * 10 and max(shape[0] for shape in calls) == 8


def test_a_batched_decision_is_each_policys_own():
    game, settings = "pishti", dict(players=2, episode="deal")
    g = envs.game_class(game)(**settings)
    mlp = _mlp(game, settings, hidden=8)
    rng = np.random.default_rng(5)
    states = [g.new_state(s) for s in range(6)]
    obs = np.stack([st.observation(st.current_player) for st in states])
    masks = np.stack([st.legal_mask() for st in states])
    for temperature in (0.0, 1.5):
        batch = [NetworkPolicy(mlp, temperature, seed=k) for k in range(6)]
        alone = [NetworkPolicy(mlp, temperature, seed=k) for k in range(6)]
        assert len({batch_group(p) for p in batch}) == 1
        got = decide_batch(batch, obs, masks)
        assert got == [p.act(o, m) for p, o, m in zip(alone, obs, masks)]
        assert all(masks[j, a] for j, a in enumerate(got))
    assert batch_group(OpponentPool([("random", 1.0)]).draw(__import__("random").Random(0), g)) is None
    assert masked_choice(np.zeros(3), np.array([False, True, True])) == 1


# ----- SB3 on top -------------------------------------------------------------------------------------------
def test_maskable_ppo_trains_on_the_batched_env():
    import torch as th
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor
    game, settings = "pishe_pasha", dict(reward="points")
    vec = VecMonitor(BatchedVecEnv(game, settings, _pool(game, settings), list(range(8))))
    th.manual_seed(0)
    model = MaskablePPO("MlpPolicy", vec, n_steps=16, batch_size=128, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs=dict(net_arch=[16]))
    model.learn(256)
    assert model.num_timesteps >= 256 and len(model.ep_info_buffer) > 0


def test_masked_dqn_stores_each_next_mask_from_the_batched_env():
    # Pişti: the first 52 observation entries are the own hand, which is exactly the legal mask
    from kahve.agents.training.sb3.dqn import MaskedDQN
    game, settings = "pishti", dict(players=2, episode="deal")
    vec = BatchedVecEnv(game, settings, _pool(game, settings), [0, 1])
    model = MaskedDQN("MlpPolicy", vec, learning_starts=10**6, buffer_size=2000, seed=0, device="cpu",
                      policy_kwargs=dict(net_arch=[16]))
    model.learn(400)
    buf = model.replay_buffer
    rows = [(i, e) for i in range(buf.pos) for e in range(2) if not buf.dones[i, e]]
    assert len(rows) > 300
    for i, e in rows:
        assert np.array_equal(buf.next_action_masks[i, e], buf.next_observations[i, e, :52] > 0)


def test_a_failing_worker_is_an_error_naming_it():
    game, settings = "pishti", dict(players=2, episode="deal")
    vec = SharedMemoryVecEnv(game, settings, OpponentPool([("random", 1.0)]), [0, 1], workers=2)
    try:
        vec.reset()
        illegal = np.array([np.flatnonzero(~m)[0] for m in vec.action_masks()])
        with pytest.raises(RuntimeError, match="(?s)env worker 0 .*failed.*illegal action"):
            vec.step(illegal)
    finally:
        vec.close()


def test_split_spreads_games_evenly():
    assert [list(r) for r in split(5, 2)] == [[0, 1], [2, 3, 4]]
    assert [len(r) for r in split(64, 16)] == [4] * 16 and len(split(3, 8)) == 3


# ----- config --------------------------------------------------------------------------------------------------
def test_vec_env_and_worker_keys():
    for layout in config_mod.VEC_ENVS:
        assert config_mod.resolve({"game": "pishti", "vec_env": layout})["vec_env"] == layout
    with pytest.raises(ValueError, match="'vec_env': 'gpu' is not allowed; allowed: 'batched'"):
        config_mod.resolve({"game": "pishti", "vec_env": "gpu"})
    with pytest.raises(ValueError, match="'env_workers': -1 is out of range"):
        config_mod.resolve({"game": "pishti", "env_workers": -1})


def test_device_cuda_without_cuda_is_a_config_error(monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="config key 'device': 'cuda', but torch .* (without CUDA|finds no CUDA)"):
        config_mod.resolve({"game": "pishti", "device": "cuda"})
    assert config_mod.resolve({"game": "pishti", "device": "auto"})["device"] == "auto"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "a mocked GPU")
    assert config_mod.resolve({"game": "pishti", "device": "cuda"})["device"] == "cuda"


# ----- training runs ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["batched", "shared"])
def test_a_run_with_self_play_checkpoints_and_resumes(layout, tmp_path):
    import json

    from kahve.agents.training.backends import train
    raw = {"game": "pishe_pasha", "settings": {"reward": "points"}, "algorithm": "ppo", "seed": 2,
           "total_timesteps": 256, "n_envs": 4, "vec_env": layout, "env_workers": 2,
           "ppo": {"n_steps": 16, "batch_size": 64, "n_epochs": 1}, "network": {"hidden": [16]},
           "opponents": {"pool": [{"policy": "random", "weight": 1}],
                         "self_play": {"every": 64, "weight": 1, "max_snapshots": 2}},
           "evaluation": {"every": 0, "games": 2, "opponents": ["random"], "workers": 1},
           "checkpoint_every": 128, "output": str(tmp_path / "run")}
    train(config_mod.resolve(raw), progress=False, log=lambda *a: None)
    latest = tmp_path / "run" / "checkpoints" / "latest"
    state = json.loads((latest / "state.json").read_text())
    assert state["steps"] >= 256 and len(state["env_states"]) == 4
    assert all(s["episodes"] > 0 for s in state["env_states"])
    pool = json.loads((latest / "opponents" / "pool.json").read_text())
    assert sum("snapshot" in e for e in pool) == 2                  # self-play reached the envs through set_pool
    cfg = config_mod.for_resume(config_mod.read_yaml((tmp_path / "run" / "config.yaml").read_text(), "config"),
                                ["total_timesteps=384"])
    summary = train(cfg, resume_dir=str(tmp_path / "run"), progress=False, log=lambda *a: None)
    assert summary["steps"] >= 384 and summary["resumed_from"] == state["steps"]


@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_training_on_batched_envs_is_training_on_dummy_envs(algorithm, tmp_path):
    # the same seeds deal the same games and the model sees the same observations, so it learns the same weights
    import torch as th

    from kahve.agents.training.sb3.session import build_model, build_vec_env
    from kahve.agents.training.session import pool_from_config
    weights = []
    for layout in ("dummy", "batched"):
        cfg = config_mod.resolve({"game": "pishti", "settings": {"players": 2, "episode": "deal"},
                                  "algorithm": algorithm, "n_envs": 3, "vec_env": layout, "network": {"hidden": [16]},
                                  "ppo": {"n_steps": 32, "batch_size": 48, "n_epochs": 2},
                                  "dqn": {"learning_starts": 64, "buffer_size": 500, "batch_size": 32},
                                  "output": str(tmp_path / layout)})
        vec = build_vec_env(cfg, pool_from_config(cfg))
        model = build_model(cfg, vec, tmp_path / layout)
        model.learn(288)
        weights.append([p.detach().clone() for p in model.policy.parameters()])
        vec.close()
    assert all(th.equal(a, b) for a, b in zip(*weights))


def test_a_bot_file_opponent_is_loaded_once_and_decides_in_batches():
    game, settings = "pishti", dict(players=2, episode="deal", reward="points")
    pool = OpponentPool([("pishti/ppo_2p", 1.0)])
    vec = BatchedVecEnv(game, settings, pool, list(range(6)))
    singles = [LearnerEnv(game, settings, pool, seed=s) for s in range(6)]
    assert _compare(vec, singles, 60) > 0
    bots = [e._opponents[1 - e.learner_side] for e in vec.envs]
    assert len({id(b) for b in bots}) == 6 and len({id(b.session) for b in bots}) == 1   # one session, own rngs
    assert len({batch_group(b) for b in bots}) == 1


def test_numpys_blas_runs_one_thread_after_limit_threads():
    # network opponents decide in numpy matrix products; OpenBLAS's thread per core made them 8x slower on a busy
    # 2-core machine, and it reads OPENBLAS_NUM_THREADS only when numpy loads
    from kahve.agents import threads
    before = threads.blas_threads()
    try:
        threads.limit_threads(1)
        assert all(n == 1 for n in threads.blas_threads())
    finally:
        for n in before[:1]:
            threads.set_blas_threads(n)


def test_ppo_reward_scale_scales_what_the_learner_sees_not_the_episode_logs(tmp_path):
    from kahve.agents.training.sb3.session import build_model, build_vec_env
    from kahve.agents.training.session import pool_from_config
    seen = {}
    for scale in (1.0, 0.02):
        cfg = config_mod.resolve({"game": "pishti", "settings": {"players": 2, "episode": "deal", "reward": "points"},
                                  "algorithm": "ppo", "n_envs": 3, "network": {"hidden": [16]},
                                  "ppo": {"n_steps": 32, "batch_size": 48, "reward_scale": scale},
                                  "output": str(tmp_path / str(scale))})
        vec = build_vec_env(cfg, pool_from_config(cfg))
        assert build_model(cfg, vec, tmp_path / str(scale)).reward_scale == scale   # cloning's value targets
        vec.seed(7)
        vec.reset()
        rng = np.random.default_rng(0)
        rewards, episodes = [], []
        for _ in range(60):                          # a 2-player deal is 24 learner steps: episodes end
            masks = np.array(vec.env_method("action_masks"))
            _, r, _, infos = vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
            rewards.append(r.copy())
            episodes += [info["episode"]["r"] for info in infos if "episode" in info]
        seen[scale] = (np.array(rewards), episodes)
        vec.close()
    (r1, e1), (r2, e2) = seen[1.0], seen[0.02]
    assert np.abs(r1).sum() > 0 and np.allclose(r2, 0.02 * r1)
    assert e1 and e2 == e1                           # episode returns stay in game points


def test_ppo_reward_scale_is_refused_with_rllib():
    with pytest.raises(ValueError, match="config key 'ppo.reward_scale'"):
        config_mod.load("configs/pishti/rllib.yaml", ["ppo.reward_scale=0.05"])
