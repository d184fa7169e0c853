"""PPO with ``async_rollouts`` (agents/training/sb3/async_rollouts.py, issue 19): the collector's first rollout is the
one a synchronous run collects; every later update learns from the rollout of the weights one update earlier, with
the log-probabilities of the policy that acted; env calls reach the collector's envs; runs checkpoint and resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from kahve.agents.training import config as config_mod
from kahve.agents.training.sb3.async_rollouts import ROLLOUT_ARRAYS, CollectorVecEnv
from kahve.agents.training.view.opponents import OpponentPool
from kahve.agents.training.sb3.session import build_model, build_vec_env
from kahve.agents.training.session import pool_from_config
from tests.helpers import HANG_S


def _cfg(tmp_path, **over):
    raw = {"game": "pishti", "settings": {"players": 2, "episode": "deal", "reward": "points"}, "seed": 3,
           "n_envs": 3, "network": {"hidden": [16]}, "ppo": {"n_steps": 32, "batch_size": 48, "n_epochs": 2},
           "opponents": {"pool": [{"policy": "random", "weight": 1}, {"policy": "heuristic", "weight": 1}]},
           "output": str(tmp_path / "run"), **over}
    return config_mod.resolve(raw)


def _built(cfg, tmp_path):
    vec = build_vec_env(cfg, pool_from_config(cfg))
    return vec, build_model(cfg, vec, tmp_path)


def test_the_first_rollout_is_the_one_a_synchronous_run_collects(tmp_path):
    from stable_baselines3.common.callbacks import BaseCallback

    class Nothing(BaseCallback):
        def _on_step(self):
            return True
    vec, sync = _built(_cfg(tmp_path), tmp_path / "s")
    try:
        sync._setup_learn(10**6, None, True, "run", False)
        callback = Nothing()
        callback.init_callback(sync)
        sync.collect_rollouts(sync.env, callback, sync.rollout_buffer, sync.n_steps)
    finally:
        vec.close()
    collector_env, overlapped = _built(_cfg(tmp_path, async_rollouts=True), tmp_path / "a")
    try:
        assert all(th.equal(a, b) for a, b in zip(sync.policy.parameters(), overlapped.policy.parameters()))
        collector = collector_env.unwrapped
        assert isinstance(collector, CollectorVecEnv)
        collector.start(overlapped.policy)
        collector.finish(overlapped.rollout_buffer)
    finally:
        collector_env.close()
    for name in ROLLOUT_ARRAYS:
        mine, theirs = getattr(overlapped.rollout_buffer, name), getattr(sync.rollout_buffer, name)
        assert mine.shape == theirs.shape and np.array_equal(mine, theirs), name
    assert overlapped.rollout_buffer.full and np.any(overlapped.rollout_buffer.rewards != 0)


def test_each_update_learns_from_the_rollout_of_the_weights_one_update_earlier(tmp_path):
    vec, model = _built(_cfg(tmp_path, async_rollouts=True), tmp_path)
    seen = []                                    # (weights before this update, its rollout's arrays)
    train = model.train

    def recording_train():
        buf = model.rollout_buffer
        seen.append(([p.detach().clone() for p in model.policy.parameters()],
                     {k: getattr(buf, k).copy() for k in ("observations", "actions", "action_masks", "log_probs")}))
        train()
    model.train = recording_train
    try:
        model.learn(4 * 96)
        assert len(model.ep_info_buffer) > 0 and model.num_timesteps == 4 * 96
    finally:
        vec.close()
    assert len(seen) == 4

    def log_probs(weights, arrays):
        for p, w in zip(model.policy.parameters(), weights):
            p.data.copy_(w)
        flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in arrays.items()}
        with th.no_grad():
            _, lp, _ = model.policy.evaluate_actions(th.as_tensor(flat["observations"]),
                                                     th.as_tensor(flat["actions"]).flatten(),
                                                     action_masks=flat["action_masks"])
        return lp.numpy().reshape(arrays["log_probs"].shape)
    # updates 1 and 2 learn from rollouts of the first weights; update k >= 3 from those before update k - 1
    for k, behaviour in [(0, 0), (1, 0), (2, 1), (3, 2)]:
        arrays = seen[k][1]
        assert np.allclose(log_probs(seen[behaviour][0], arrays), arrays["log_probs"], atol=1e-5), k
        if k != behaviour:   # and not the weights the update itself starts from
            assert not np.allclose(log_probs(seen[k][0], arrays), arrays["log_probs"], atol=1e-5), k


def test_env_calls_reach_the_collectors_envs(tmp_path):
    vec, model = _built(_cfg(tmp_path, async_rollouts=True), tmp_path)
    try:
        pool = OpponentPool([("random", 1.0)], ids=["only-random"])
        vec.env_method("set_pool", pool)
        assert [p.ids for p in vec.get_attr("pool")] == [["only-random"]] * 3
        model.learn(96)                          # a rollout in flight: calls are answered after it
        states = vec.env_method("get_rng_state")
        assert len(states) == 3 and all(s["episodes"] > 0 for s in states)
        assert vec.unwrapped._finished is not None       # the rollout that arrived meanwhile is kept
        with pytest.raises(RuntimeError, match="(?s)the rollout collector process failed:.*no_such_method"):
            vec.env_method("no_such_method")
        model.learn(96, reset_num_timesteps=False)       # the collector goes on after a failed call
        assert model.num_timesteps == 192
    finally:
        vec.close()
    assert not vec.unwrapped.process.is_alive()


@pytest.mark.parametrize("layout", ["batched", "shared"])      # shared: env worker processes inside the collector
def test_a_run_with_async_rollouts_self_plays_checkpoints_and_resumes(layout, tmp_path):
    import json

    from kahve.agents.training.backends import train
    raw = {"game": "pishe_pasha", "settings": {"reward": "points"}, "algorithm": "ppo", "seed": 2,
           "total_timesteps": 256, "n_envs": 4, "async_rollouts": True, "vec_env": layout, "env_workers": 2,
           "ppo": {"n_steps": 16, "batch_size": 64, "n_epochs": 1}, "network": {"hidden": [16]},
           "opponents": {"pool": [{"policy": "random", "weight": 1}],
                         "self_play": {"every": 64, "weight": 1, "max_snapshots": 2}},
           "evaluation": {"every": 0, "games": 2, "opponents": ["random"], "workers": 1},
           "checkpoint_every": 128, "output": str(tmp_path / "run")}
    summary = train(config_mod.resolve(raw), progress=False, log=lambda *a: None)
    assert summary["steps"] == 256 and summary["evaluation"]["results"]["random"]["games"] == 2
    latest = tmp_path / "run" / "checkpoints" / "latest"
    state = json.loads((latest / "state.json").read_text())
    assert state["steps"] == 256 and len(state["env_states"]) == 4
    assert all(s["episodes"] > 0 for s in state["env_states"])
    pool = json.loads((latest / "opponents" / "pool.json").read_text())
    assert sum("snapshot" in e for e in pool) == 2
    cfg = config_mod.for_resume(config_mod.read_yaml((tmp_path / "run" / "config.yaml").read_text(), "config"),
                                ["total_timesteps=384"])
    summary = train(cfg, resume_dir=str(tmp_path / "run"), progress=False, log=lambda *a: None)
    assert summary["steps"] == 384 and summary["resumed_from"] == 256


def test_async_rollouts_is_refused_for_dqn_and_left_to_rllibs_runners(tmp_path):
    with pytest.raises(ValueError, match="config key 'async_rollouts': only PPO collects rollouts in a second"):
        _cfg(tmp_path, async_rollouts=True, algorithm="dqn")
    rllib = _cfg(tmp_path, async_rollouts=True, backend="rllib", network={"hidden": [16], "action_features": False})
    assert rllib["async_rollouts"]          # `--override backend=rllib` on a shipped PPO config is not refused


def test_a_learner_that_never_closes_its_collector_still_exits(tmp_path):
    import subprocess
    import sys
    script = f"""
from kahve.agents.training import config
from kahve.agents.training.sb3.session import build_model, build_vec_env
from kahve.agents.training.session import pool_from_config
if __name__ == "__main__":
    cfg = config.resolve({{"game": "pishe_pasha", "n_envs": 2, "async_rollouts": True, "network": {{"hidden": [8]}},
                          "ppo": {{"n_steps": 16, "batch_size": 32, "n_epochs": 1}}, "output": {str(tmp_path)!r}}})
    vec = build_vec_env(cfg, pool_from_config(cfg))
    build_model(cfg, vec, None).learn(64)
    print("learned", flush=True)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0 and "learned" in done.stdout, done.stderr
