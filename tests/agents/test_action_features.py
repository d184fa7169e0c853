"""The action-feature head (agents/training/action_features.py): the same scores in torch, numpy and ONNX, for
PPO and DQN; it learns what the Pâsur heuristic weighs; and the configs that cannot use it say so."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from kahve import envs
from kahve.agents.policies.bot import Bot, bot_metadata, export_onnx, mlp_from_bot
from kahve.agents.policies.network import MLP
from kahve.agents.training.action_features import feature_layout
from kahve.agents.training.checkpoint import start_from_bot
from kahve.agents.training.config import resolve
from kahve.agents.training.opponents import OpponentPool
from kahve.agents.training.pretrain import behaviour_clone, collect_demonstrations
from kahve.agents.training.trainer import build_model, build_vec_env
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


def test_averaged_networks_hold_the_mean_of_every_weight_and_refuse_another_shape():
    """MLP.average (a model soup): every array, the action-feature head's included, is the mean; averaging a
    network with itself changes nothing; another shape, activation or head is refused."""
    rng = np.random.default_rng(0)

    def net(hidden=5, activation="tanh", features=True):
        extra = dict(feature_offset=4, feature_weights=rng.normal(size=2)) if features else {}
        return MLP([rng.normal(size=(hidden, 10)), rng.normal(size=(3, hidden))],
                   [rng.normal(size=hidden), rng.normal(size=3)], activation, **extra)

    a, b, c = net(), net(), net()
    mean = MLP.average([a, b, c])
    for key, value in mean.to_arrays().items():
        if key not in ("activation", "feature_offset"):
            assert np.allclose(value, (a.to_arrays()[key] + b.to_arrays()[key] + c.to_arrays()[key]) / 3, atol=1e-6)
    x = rng.normal(size=(6, 10)).astype(np.float32)
    assert not np.allclose(mean.forward(x), a.forward(x), atol=1e-2)
    assert np.allclose(MLP.average([a, a]).forward(x), a.forward(x), atol=1e-5)
    for other, message in [(net(hidden=6), "shape"), (net(activation="relu"), "activation"),
                           (net(features=False), "heads")]:
        with pytest.raises(ValueError, match=message):
            MLP.average([a, other])
    with pytest.raises(ValueError, match="at least one network"):
        MLP.average([])


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


def _perturbed(model) -> None:
    with th.no_grad():                                   # away from the zero start, so every part counts
        for p in model.policy.parameters():
            p.add_(th.randn_like(p) * 0.1)


def _centred(scores: np.ndarray) -> np.ndarray:
    return scores - scores.max(1, keepdims=True)


def test_move_layer_gives_the_trained_scores_in_numpy_and_onnx(tmp_path):
    model, vec = _model(tmp_path, "ppo", move_layer=8)
    _perturbed(model)
    mlp = MLP.from_sb3(model)
    assert mlp.move_layer["move_out"].shape == (8,)
    x = _observations(vec)
    np.testing.assert_allclose(_centred(mlp.forward(x)), _centred(_torch_scores(model, x)), atol=1e-4)
    without = MLP(mlp.weights, mlp.biases, mlp.activation, mlp.feature_offset, mlp.feature_weights)
    assert np.abs(without.forward(x) - mlp.forward(x)).max() > 0.1
    game = envs.game_class("pasur")(episode="deal")
    path = export_onnx(mlp, tmp_path / "bot.onnx", bot_metadata(game, "ppo", 0))
    np.testing.assert_allclose(Bot.load(path).batch_logits(x), mlp.forward(x), atol=1e-4)
    np.testing.assert_allclose(mlp_from_bot(path, game.action_feature_size).forward(x), mlp.forward(x), atol=1e-6)
    np.testing.assert_array_equal(MLP.from_arrays(mlp.to_arrays()).forward(x), mlp.forward(x))


def test_a_bot_gains_a_move_layer_that_starts_at_zero(tmp_path):
    plain, vec = _model(tmp_path, "ppo")
    _perturbed(plain)
    bot = MLP.from_sb3(plain)
    x = _observations(vec)
    model, _ = _model(tmp_path, "ppo", move_layer=8)
    start_from_bot(model, bot, "bot.onnx")               # no layer in the bot: the new one adds nothing yet
    np.testing.assert_allclose(MLP.from_sb3(model).forward(x), bot.forward(x), atol=1e-5)
    _perturbed(model)
    layered = MLP.from_sb3(model)
    again, _ = _model(tmp_path, "ppo", move_layer=8)
    start_from_bot(again, layered, "layered.onnx")       # a bot with the layer gives it whole
    np.testing.assert_allclose(MLP.from_sb3(again).forward(x), layered.forward(x), atol=1e-5)
    with pytest.raises(ValueError, match="per-move layer"):
        start_from_bot(_model(tmp_path, "ppo")[0], layered, "layered.onnx")
    with pytest.raises(ValueError, match="8 wide; this config.s network.move_layer is 4"):
        start_from_bot(_model(tmp_path, "ppo", move_layer=4)[0], layered, "layered.onnx")


@pytest.mark.parametrize("config", [{"algorithm": "dqn", "network": {"move_layer": 8}},
                                    {"network": {"move_layer": 8, "action_features": False}},
                                    {"game": "ish", "network": {"move_layer": 8}}])
def test_move_layer_needs_ppo_and_action_features(config):
    with pytest.raises(ValueError, match="network.move_layer"):
        resolve({"game": "pasur", **config})
