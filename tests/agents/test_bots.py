"""Exported bots (ONNX + metadata), loading them anywhere, and playing against them in the terminal."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from kahve import envs
from kahve.agents.policies.bot import Bot, BotFileError, bot_metadata, export_onnx
from kahve.agents.policies.network import MLP, NetworkPolicy
from kahve.agents.policies.specs import make_policy
from tests.helpers import HANG_S, random_game

ROOT = Path(__file__).resolve().parents[2]


def random_mlp(game, seed=0, activation="tanh"):
    rng = np.random.default_rng(seed)
    sizes = [game.observation_size, 32, 16, game.num_actions]
    return MLP([rng.normal(0, 0.3, (o, i)) for i, o in zip(sizes, sizes[1:])],
               [rng.normal(0, 0.1, o) for o in sizes[1:]], activation)


@pytest.fixture
def pishti_bot(tmp_path):
    game = envs.game_class("pishti")(players=2, episode="deal")
    mlp = random_mlp(game)
    path = export_onnx(mlp, tmp_path / "bot.onnx", bot_metadata(game, "ppo", 1234, {"random": {"win_rate": 0.9}}))
    return game, mlp, path


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_onnx_graph_computes_what_the_network_computes(tmp_path, activation):
    game = envs.game_class("pishe_pasha" if "pishe_pasha" in envs.GAMES else "pishti")()
    mlp = random_mlp(game, 1, activation)
    path = export_onnx(mlp, tmp_path / "b.onnx", bot_metadata(game, "dqn", 10))
    bot = Bot.load(path, game=game)
    st = game.new_state(3)
    obs = st.observation(st.current_player)
    assert np.allclose(bot.logits(obs), mlp.forward(obs), atol=1e-4)
    assert bot.metadata["algorithm"] == "dqn" and bot.metadata["training_steps"] == 10


def test_bot_plays_only_legal_actions_greedy_and_sampled(pishti_bot):
    game, mlp, path = pishti_bot
    greedy = Bot.load(path, game=game)
    hot = Bot.load(path, game=game, temperature=2.0, seed=1)
    numpy_twin = NetworkPolicy(mlp)
    seen = set()

    def check(st):
        seat = st.current_player
        obs, mask = st.observation(seat), st.legal_mask()
        a = greedy.act(obs, mask, st)
        assert mask[a] and a == numpy_twin.act(obs, mask)
        b = hot.act(obs, mask, st)
        assert mask[b]
        seen.add(b != a)

    for seed in range(5):
        random_game(game, seed, on_state=check)
    assert True in seen                      # sampling with a temperature really departs from greedy


def test_bot_is_a_policy_spec(pishti_bot):
    game, _, path = pishti_bot
    assert isinstance(make_policy(str(path), game), Bot)


def test_bot_refuses_another_game_and_other_spaces(pishti_bot, tmp_path):
    game, _, path = pishti_bot
    with pytest.raises(BotFileError, match="is a bot for pishti, not pasur"):
        Bot.load(path, game=envs.game_class("pasur")())
    with pytest.raises(BotFileError, match="expects observations of 643"):
        Bot.load(path, game=envs.game_class("pishti")(players=4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Bot.load(path, game=envs.game_class("pishti")(players=2, target_score=101))
    assert any("target_score=151" in str(w.message) for w in caught)


def test_bot_refuses_corrupt_and_foreign_files(pishti_bot, tmp_path):
    _, _, path = pishti_bot
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(path.read_bytes()[:500])
    with pytest.raises(BotFileError, match="not a readable kahve bot file"):
        Bot.load(broken)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x80\x04pickle? no thanks" * 10)
    with pytest.raises(BotFileError, match="not a readable kahve bot file"):
        Bot.load(junk)
    import onnx
    model = onnx.load(str(path))
    del model.metadata_props[:]
    foreign = tmp_path / "foreign.onnx"
    onnx.save(model, str(foreign))
    with pytest.raises(BotFileError, match="not a readable kahve bot file|not a kahve bot"):
        Bot.load(foreign)
    with pytest.raises(FileNotFoundError):
        Bot.load(tmp_path / "missing.onnx")


def test_loading_a_bot_needs_neither_torch_nor_stable_baselines(pishti_bot):
    _, _, path = pishti_bot
    code = ("import sys\n"
            "for m in ('torch', 'stable_baselines3', 'sb3_contrib'): sys.modules[m] = None\n"
            "from kahve.agents import Bot\n"
            "from kahve import envs\n"
            "g = envs.game_class('pishti')(players=2)\n"
            f"b = Bot.load({str(path)!r}, game=g)\n"
            "st = g.new_state(1)\n"
            "print(b.act(st.observation(st.current_player), st.legal_mask(), st) in st.legal_actions())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr


def test_mlp_npz_round_trip_without_pickle(tmp_path):
    game = envs.game_class("pishti")(players=2)
    mlp = random_mlp(game)
    mlp.save(tmp_path / "p.npz")
    back = MLP.load(tmp_path / "p.npz")
    x = np.random.default_rng(0).random(game.observation_size).astype(np.float32)
    assert np.array_equal(back.forward(x), mlp.forward(x))
    with pytest.raises(ValueError, match="do not fit|inputs"):
        MLP([np.zeros((3, 4)), np.zeros((2, 5))], [np.zeros(3), np.zeros(2)], "tanh")


# ----- kahve play, driven through stdin -------------------------------------------------------------------
def kahve(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "kahve.scripts.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=HANG_S)


def test_play_a_full_match_through_stdin():
    r = kahve("play", "pishti", "--settings", "players=2", "target_score=50", "--seed", "2", "--bot", "random",
              stdin="0\n" * 3000)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "your moves: [0]" in out and "player 1: " in out and "deal 1 over" in out
    assert "match over after" in out and "player 0 (you) hand:" in out


def test_play_reprompts_on_bad_input_shows_rules_and_quits():
    r = kahve("play", "pishti", "--settings", "players=2", "--seed", "2", stdin="?\nfoo\n77\nplay KS KS\nq\n")
    out = r.stdout
    assert "PIŞTI: HOW TO PLAY" in out and "== Scoring ==" in out  # '?': the player guide
    assert "not understood: 'foo' is not a legal action here; legal:" in out
    assert "no move [77]" in out and "you left the match" in out and r.returncode == 1


def test_play_accepts_move_text(tmp_path):
    game = envs.game_class("pishti")(players=2)
    st = game.new_state(2)
    # seat 0 is the dealer: the bot (seat 1) moves first; read seat 0's hand from the deal with the same seed
    hand = sorted(st.hands[0])
    from kahve.envs.core.cards import card_str
    r = kahve("play", "pishti", "--settings", "players=2", "--seed", "2", "--bot", "random",
              stdin=f"{card_str(hand[0])}\nq\n")
    assert f"player 0 (you): {card_str(hand[0])}" in r.stdout     # the seat named one way (issue 58)


def test_play_rejects_a_bot_for_another_game(pishti_bot):
    _, _, path = pishti_bot
    r = kahve("play", "pasur", "--bot", str(path))
    assert r.returncode == 2 and "is a bot for pishti, not pasur" in r.stderr


def test_play_hides_moves_the_other_seats_cannot_see():
    # Ish calls are secret until RESOLVE (IS-1): the terminal shows that a bot decided, not what (the round's
    # summary tells every call once it is resolved)
    r = kahve("play", "ish", "--settings", "players=3", "max_rounds=2", "--seat", "2", "--seed", "1", "--bot",
              "heuristic", stdin="0\n" * 50)
    assert r.returncode == 0, r.stderr
    bot_lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("player 0:", "player 1:"))]
    assert any("calls or stays silent (shown when the round is resolved)" in ln for ln in bot_lines)
    assert not any("Paoy" in ln or "Kath" in ln or "stay silent" in ln for ln in bot_lines)
