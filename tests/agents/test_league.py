"""League self-play weights (issue 17): prioritised fictitious self-play moves the pool's weights towards the
opponents the learner loses to, in training, through every vector-env layout, and across a resume."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kahve.agents.training import config as config_mod
from kahve.agents.training.view.league import League
from kahve.agents.training.view.learner_env import LearnerEnv
from kahve.agents.training.view.opponents import OpponentPool
from kahve.agents.training.backends import train
from kahve.agents.policies.network import MLP
from kahve.scripts.cli import main as kahve

ROOT = Path(__file__).resolve().parents[2]


def test_weights_move_towards_the_opponents_the_learner_loses_to():
    league = League(power=2.0, floor=0.05, window=100)
    assert league.weights(["random", "heuristic"], [1.0, 1.0]) == [0.3, 0.3]     # not met yet: p = 0.5 each
    for _ in range(60):
        league.record("random", True)
        league.record("heuristic", False)
    w_random, w_heuristic = league.weights(["random", "heuristic"], [1.0, 1.0])
    assert w_heuristic > 10 * w_random and w_random > 0                           # beaten ones stay in the mix
    assert league.weights(["random", "heuristic"], [3.0, 1.0])[0] == pytest.approx(3 * w_random)
    for _ in range(300):                               # the learner has caught up: the old losses fade
        league.record("heuristic", True)
    assert league.win_rate("heuristic") > 0.9
    league.forget_all_but(["heuristic"])               # random left the pool: its counts go with it
    assert set(league.state()) == {"heuristic"}


def test_episode_infos_name_the_pool_entries_drawn():
    pool = OpponentPool([("random", 1.0), ("heuristic", 1.0)])
    env = LearnerEnv("pishti", dict(players=4, episode="deal"), pool, seed=0)
    seen = set()
    for _ in range(20):
        env.reset()
        done, info = False, {}
        while not done:
            _, _, term, trunc, info = env.step(int(env.action_masks().nonzero()[0][0]))
            done = term or trunc
        drawn = {k for k in env._entries if k is not None}
        assert info["opponent_entries"] == sorted(drawn)
        seen |= drawn
    assert seen == {0, 1}


def test_the_pools_draws_are_random_choices_draws():
    """A pool draws an entry as ``random.choices`` with its cumulative weights would (so a seed deals the same
    opponents as before the faster draw), and in proportion to the weights."""
    import random
    for weights in ([1.0], [1, 3], [0.5, 2.5, 1, 7], [1e-3, 1, 2]):
        pool = OpponentPool([("random", w) for w in weights])
        ours, theirs = random.Random(5), random.Random(5)
        drawn = [pool.draw_index(ours) for _ in range(4000)]
        assert drawn == [theirs.choices(range(len(weights)), weights=weights)[0] for _ in range(4000)]
        shares = np.bincount(drawn, minlength=len(weights)) / len(drawn)
        assert np.allclose(shares, np.array(weights) / sum(weights), atol=0.03)


def test_snapshot_ids_stay_when_old_snapshots_leave_and_survive_a_save(tmp_path):
    mlp = MLP([np.zeros((3, 2))], [np.zeros(3)], "tanh")
    pool = OpponentPool([("heuristic", 1.0)])
    for _ in range(4):
        pool = pool.with_snapshot(mlp, 1.0, max_snapshots=2)
    assert pool.ids == ["heuristic", "snapshot@2", "snapshot@3"] and pool.names()[1:] == ["snapshot_0", "snapshot_1"]
    pool.with_weights([1.0, 0.5, 0.25]).save(tmp_path)
    loaded = OpponentPool.load(tmp_path)
    assert loaded.ids == pool.ids and [w for _, w in loaded.entries] == [1.0, 0.5, 0.25]


@pytest.mark.parametrize("vec_env", ["batched", "dummy"])
def test_training_with_pfsp_meets_the_heuristic_more_than_random(tmp_path, capsys, vec_env):
    out = tmp_path / "run"
    overrides = ["total_timesteps=1536", "n_envs=4", f"vec_env={vec_env}", "ppo.n_steps=128", "ppo.batch_size=128",
                 "evaluation.games=2", "evaluation.every=0", "evaluation.workers=1", "checkpoint_every=768",
                 "opponents.self_play.every=0", "pretrain.steps=0", "network.hidden=[16]",
                 "opponents.pool=[{policy: random, weight: 1}, {policy: heuristic, weight: 1}]",
                 "opponents.league.weighting=pfsp", "opponents.league.every=256", "opponents.league.window=200",
                 f"output={out}"]
    cfg = config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", overrides)
    train(cfg, progress=False, log=lambda *a: None)
    state = json.loads((out / "checkpoints" / "latest" / "state.json").read_text())
    wins_r, n_r = state["league"]["random"]
    wins_h, n_h = state["league"]["heuristic"]
    assert n_r > 0 and n_h > 0 and wins_h / n_h < wins_r / n_r     # an untrained learner: it loses to the heuristic
    pool = json.loads((out / "checkpoints" / "latest" / "opponents" / "pool.json").read_text())
    weights = {e["id"]: e["weight"] for e in pool}
    assert weights["heuristic"] > weights["random"]
    # a resume continues from the same counts
    rc = kahve(["train", "--resume", str(out), "--no-progress", "--override", "total_timesteps=2048"])
    assert rc == 0, capsys.readouterr().err
    after = json.loads((out / "checkpoints" / "latest" / "state.json").read_text())["league"]
    assert after["heuristic"][1] > n_h * 0.9
