"""The action-feature head (agents/training/sb3/action_features.py): the same scores in torch, numpy and ONNX, for
PPO and DQN; it learns what the Pâsur heuristic weighs; and the configs that cannot use it say so."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from kahve import envs
from kahve.agents.policies.bot import Bot, bot_metadata, export_onnx, mlp_from_bot
from kahve.agents.policies.network import MLP
from kahve.agents.training.sb3.action_features import feature_layout
from kahve.agents.training.config import resolve
from kahve.agents.training.view.opponents import OpponentPool
from kahve.agents.training.pretrain import behaviour_clone, collect_demonstrations
from kahve.agents.training.sb3.session import build_model, build_vec_env
from kahve.envs.pasur import appraisal


def _model(tmp_path, algorithm: str, **network):
    cfg = resolve({"game": "pasur", "algorithm": algorithm, "n_envs": 2, "settings": {"episode": "deal"},
                   "network": {"hidden": [32], **network}})
    vec = build_vec_env(cfg, OpponentPool([("random", 1.0)]))
    return build_model(cfg, vec, tmp_path), vec


def _torch_scores(model, x: np.ndarray) -> np.ndarray:
    with th.no_grad():
        if hasattr(model.policy, "q_net"):
            return model.policy.q_net(th.as_tensor(x)).numpy()
        return model.policy.get_distribution(th.as_tensor(x)).distribution.logits.numpy()


def _observations(vec, n: int = 40) -> np.ndarray:
    rows, obs = [], vec.reset()
    rng = np.random.default_rng(0)
    while len(rows) < n:
        rows.extend(obs)
        masks = vec.env_method("action_masks") if not hasattr(vec, "action_masks") else vec.action_masks()
        obs, *_ = vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
    return np.array(rows[:n], dtype=np.float32)


@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_exported_network_gives_the_trained_scores(tmp_path, algorithm):
    model, vec = _model(tmp_path, algorithm)
    with th.no_grad():                                   # away from the zero start, so the head counts
        for p in model.policy.parameters():
            p.add_(th.randn_like(p) * 0.1)
    mlp = MLP.from_sb3(model)
    game = envs.game_class("pasur")(episode="deal")
    assert mlp.feature_offset == feature_layout(game)[0] == 390 and len(mlp.feature_weights) == 10
    x = _observations(vec)
    want = _torch_scores(model, x)
    got = mlp.forward(x)
    if algorithm == "ppo":                               # logits up to a constant per row
        want, got = want - want.max(1, keepdims=True), got - got.max(1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=1e-4)
    plain = MLP(mlp.weights, mlp.biases, mlp.activation)  # without the head the scores differ
    assert np.abs(plain.forward(x) - mlp.forward(x)).max() > 0.1
    bot = Bot.load(export_onnx(mlp, tmp_path / "bot.onnx", bot_metadata(game, algorithm, 0)))
    np.testing.assert_allclose(bot.logits(x[3]), mlp.forward(x[3]), atol=1e-4)
    again = MLP.from_arrays(mlp.to_arrays())
    np.testing.assert_array_equal(again.forward(x), mlp.forward(x))


def test_head_can_be_turned_off(tmp_path):
    model, vec = _model(tmp_path, "ppo", action_features=False)
    assert MLP.from_sb3(model).feature_weights is None


def test_mlp_refuses_rows_that_do_not_end_the_input():
    w = [np.zeros((4, 10), np.float32)]
    with pytest.raises(ValueError, match="do not end the 10 inputs"):
        MLP(w, [np.zeros(4, np.float32)], "tanh", feature_offset=0, feature_weights=np.ones(3))


def test_cloning_learns_what_the_heuristic_weighs(tmp_path):
    model, _ = _model(tmp_path, "ppo")
    data = collect_demonstrations("pasur", {"episode": "deal", "reward": "points"},
                                  OpponentPool([("heuristic", 1.0)]), "heuristic", 3000, 0.99, seed=1)
    behaviour_clone(model, data, epochs=4, batch_size=256, learning_rate=1e-3, seed=0, log=lambda *_: None)
    w = MLP.from_sb3(model).feature_weights
    # the heuristic gains what a capture takes and loses the opponent's expected reply
    assert w[appraisal.F_TAKEN] > 1.0 and w[appraisal.F_THREAT] < -1.0


def test_rllib_refuses_the_head():
    with pytest.raises(ValueError, match="network.action_features"):
        resolve({"game": "pasur", "backend": "rllib"})
    assert resolve({"game": "pasur", "backend": "rllib", "network": {"action_features": False}})


def test_a_bot_file_with_the_removed_per_move_layer_is_not_read_as_its_mlp_alone(tmp_path):
    """network.move_layer was removed: such a file's graph adds that layer's scores, so reading back only the MLP
    (init_from) would train another network than the file plays."""
    import onnx
    from onnx import numpy_helper

    from kahve.agents.policies.bot import BotFileError
    model, _ = _model(tmp_path, "ppo")
    game = envs.game_class("pasur")(episode="deal")
    path = export_onnx(MLP.from_sb3(model), tmp_path / "bot.onnx", bot_metadata(game, "ppo", 0))
    assert mlp_from_bot(path, game.action_feature_size).feature_weights is not None
    graph = onnx.load(str(path))
    graph.graph.initializer.append(numpy_helper.from_array(np.zeros(8, np.float32), "move_out"))
    onnx.save(graph, str(path))
    with pytest.raises(BotFileError, match="per-move layer"):
        mlp_from_bot(path, game.action_feature_size)
