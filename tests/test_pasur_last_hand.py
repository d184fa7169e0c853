"""tools/pasur_last_hand.py, the experiment behind docs/search.md's "Pâsur against random": what it collects is
what the solver says of every legal last-hand move, widening keeps the network's function, and a tiny fit runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch as th

from kahve import envs

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("pasur_last_hand", ROOT / "tools" / "pasur_last_hand.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def test_collect_keeps_a_value_for_exactly_the_legal_last_hand_moves(tmp_path):
    out = tmp_path / "lh.npz"
    tool.collect(rounds=6, seed=3, out=str(out))
    data = np.load(out)
    masks, values = data["last_mask"], data["last_values"]
    assert len(masks) > 0 and len(data["mid_obs"]) > 0
    assert (masks.sum(1) > 1).all()                                  # only decisions with a choice
    assert (np.isfinite(values) == masks).all()                      # a value for every legal move, no other
    assert (np.abs(values[np.isfinite(values)]) <= 40).all()        # a round's points, not a sentinel
    game = envs.game_class("pasur")(**tool.SETTINGS)
    net = tool.shipped_network(game)
    assert np.allclose(data["mid_logits"], net.forward(data["mid_obs"]), atol=1e-4)


def test_widening_starts_as_the_same_function():
    game = envs.game_class("pasur")(**tool.SETTINGS)
    net = tool.shipped_network(game)
    layers = tool.widened(net, 16, th.Generator().manual_seed(0))
    assert [w.shape[0] for w, _ in layers[:-1]] == [w.shape[0] + 16 for w in net.weights[:-1]]
    x = np.random.default_rng(0).random((5, net.input_size), dtype=np.float32)
    h = th.tensor(x)
    for k, (w, b) in enumerate(layers):
        h = h @ w.T + b
        h = th.tanh(h) if k < len(layers) - 1 else h
    plain = net.forward(x) - (x[:, net.feature_offset:].reshape(5, net.output_size, -1) @ net.feature_weights)
    assert np.allclose(h.detach().numpy(), plain, atol=1e-4)


def test_a_tiny_fit_reports_every_epoch(tmp_path, capsys):
    out = tmp_path / "lh.npz"
    tool.collect(rounds=12, seed=5, out=str(out))
    tool.fit([str(out)], epochs=1, extra=4, anchor=1.0, lr=1e-3, seed=0, pair=8)
    lines = capsys.readouterr().out.splitlines()
    # widened and with the pair head, the network starts as the shipped one: it keeps every earlier move
    assert "earlier: the old move 100.0%" in lines[-2]
    assert lines[-2].startswith("the shipped network: held out, last hand: a best move")
    assert lines[-1].startswith("epoch 1: held out") and "trained-on last hand" in lines[-1]
