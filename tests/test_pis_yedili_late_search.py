"""tools/pis_yedili_late_search.py, which built the shipped Pis Yedili network: the suit permutation it trains
under is a true symmetry of the v1 observation, and labelling then fitting on a tiny budget writes a bot file
that loads and plays."""

from __future__ import annotations

import importlib.util
import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from kahve import envs
from kahve.agents.policies.bot import Bot
from kahve.envs.pis_yedili.rules import FIRST_ROUND

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("late_search", ROOT / "tools" / "pis_yedili_late_search.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def permuted_state(state, perm):
    """The same deal with every card's suit s replaced by perm[s] (white-box: hands, pile, stock, context)."""
    card = lambda c: 13 * perm[c // 13] + c % 13          # noqa: E731
    other = state.clone()
    other.hands = [[card(c) for c in h] for h in state.hands]
    other.discard = [card(c) for c in state.discard]
    other.stock = [card(c) for c in state.stock]
    other.ctx = card(state.ctx) if state.ctx >= 0 else -1
    other._legal = None
    other.__dict__.pop("_dcache", None)
    return other


def test_a_suit_permutation_maps_the_observation_mask_and_actions_of_the_permuted_deal():
    game = envs.game_class("pis_yedili")(players=2, episode="deal")
    perms = list(itertools.permutations(range(4)))
    rng = random.Random(4)
    checked = 0
    for seed in range(12):
        state = game.new_state(seed)
        while state.current_player is not None and state.deals_completed == 0:
            if state.phase != FIRST_ROUND and rng.random() < 0.3:
                perm = rng.choice(perms[1:])
                src, mask_src, action = tool.suit_maps(perm, game.observation_size)
                other = permuted_state(state, perm)
                seat = state.current_player
                assert np.array_equal(state.observation(seat)[src], other.observation(seat))
                assert np.array_equal(state.legal_mask()[mask_src], other.legal_mask())
                assert sorted(action[a] for a in state.legal_actions()) == other.legal_actions()
                checked += 1
            state.apply(rng.choice(state.legal_actions()))
    assert checked >= 50


def test_label_then_fit_writes_a_bot_that_plays(tmp_path):
    early, late, bot = tmp_path / "early.npz", tmp_path / "late.npz", tmp_path / "bot.onnx"
    tool.main(["label", "--seed", "1", "--count", "40", "--worlds", "0", "--out", str(early)])
    tool.main(["label", "--seed", "2", "--count", "12", "--worlds", "4", "--late-only", "--out", str(late)])
    with np.load(late) as f:
        assert len(f["actions"]) == 12 and f["late"].all()
        assert f["masks"][np.arange(12), f["actions"]].all()           # every label is a legal move
        assert (f["gain"][~f["dev"]] == 0).all()
    tool.main(["fit", str(early), str(late), "--epochs", "1", "--hidden", "16", "--out", str(bot)])
    b = Bot.load(bot)
    assert b.metadata["algorithm"] == "distilled" and b.metadata["env_version"] == 1
    game = envs.game_class("pis_yedili")(players=2, episode="deal")
    state = game.new_state(3)
    seat = state.current_player
    assert state.legal_mask()[b.act(state.observation(seat), state.legal_mask())]


def test_fit_can_start_from_a_bot_file_and_refuses_another_shape(tmp_path):
    early, first, again = tmp_path / "early.npz", tmp_path / "first.onnx", tmp_path / "again.onnx"
    tool.main(["label", "--seed", "1", "--count", "30", "--worlds", "0", "--out", str(early)])
    tool.main(["fit", str(early), "--epochs", "1", "--hidden", "16", "--out", str(first)])
    tool.main(["fit", str(early), "--epochs", "0", "--hidden", "16", "--init", str(first), "--seed", "5",
               "--out", str(again)])
    with np.load(early) as f:
        obs = f["obs"]
    a, b = Bot.load(first).batch_logits(obs), Bot.load(again).batch_logits(obs)
    assert np.allclose(a, b, atol=1e-5)                   # no epoch: the same function as the file it started from
    assert f"--init {first}" in Bot.load(again).metadata["command"]      # the report can give the whole recipe
    fresh = tmp_path / "fresh.onnx"
    tool.main(["fit", str(early), "--epochs", "0", "--hidden", "16", "--seed", "5", "--out", str(fresh)])
    assert not np.allclose(a, Bot.load(fresh).batch_logits(obs), atol=1e-3)   # without --init it would differ
    with pytest.raises(SystemExit, match="not a 8x8 tanh network"):
        tool.main(["fit", str(early), "--epochs", "0", "--hidden", "8", "--init", str(first),
                   "--out", str(tmp_path / "x.onnx")])


def test_early_share_fits_a_part_of_the_heuristic_labels(tmp_path, capsys):
    early = tmp_path / "early.npz"
    tool.main(["label", "--seed", "1", "--count", "200", "--worlds", "0", "--out", str(early)])
    counts = []
    for share in ("1.0", "0.5"):
        capsys.readouterr()
        tool.main(["fit", str(early), "--epochs", "0", "--hidden", "8", "--early-share", share,
                   "--out", str(tmp_path / f"{share}.onnx")])
        counts.append(int(capsys.readouterr().out.split(" early (the first file)")[0].split()[-1]))
    with np.load(early) as f:
        assert counts[0] == int((~f["late"]).sum())
    assert 0.3 * counts[0] < counts[1] < 0.7 * counts[0]


def test_a_bot_as_the_base_plays_the_deals_and_its_moves_are_the_labels_the_search_keeps(tmp_path):
    early, bot, labels = tmp_path / "early.npz", tmp_path / "bot.onnx", tmp_path / "next.npz"
    tool.main(["label", "--seed", "1", "--count", "60", "--worlds", "0", "--out", str(early)])
    tool.main(["fit", str(early), "--epochs", "1", "--hidden", "16", "--out", str(bot)])
    tool.main(["label", "--seed", "2", "--count", "40", "--worlds", "4", "--base", str(bot), "--out", str(labels)])
    with np.load(labels) as f:
        obs, masks, actions, dev = f["obs"], f["masks"], f["actions"], f["dev"]
    greedy = np.where(masks, Bot.load(bot).batch_logits(obs), -np.inf).argmax(1)
    assert (actions[~dev] == greedy[~dev]).all()          # the bot's move, wherever the search kept it
    assert (actions[dev] != greedy[dev]).all()
    with pytest.raises(SystemExit, match="--base"):
        tool.main(["label", "--seed", "2", "--count", "4", "--base", "no_such_bot.onnx", "--out", str(labels)])
