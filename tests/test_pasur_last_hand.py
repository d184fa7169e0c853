"""tools/pasur_last_hand.py, what makes the last-hand expert of pasur/ppo (docs/bots.md): what it
collects is what the solver says of every legal last-hand move, widening keeps the network's function, and a tiny
fit runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch as th

from kahve import envs
from tests.helpers import against_random

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


def test_tree_nodes_carry_exact_values_that_agree_with_the_engine_solver(tmp_path):
    from kahve.agents.policies.endgame.exact import PasurLastHand
    from kahve.agents.training.view.learner_env import LearnerEnv
    from kahve.agents.training.view.opponents import OpponentPool
    env = LearnerEnv("pasur", tool.SETTINGS, OpponentPool([("random", 1.0)]), seed=4)
    env.reset()
    while env.state.stock:
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    nodes = []
    value = tool.solve_tree(env.game, env.state, nodes)
    state, seat, values, _ = nodes[-1]                                # the root comes last
    assert state is env.state and seat == env.state.current_player and value == max(values.values())
    solver = PasurLastHand(env.game)
    for state, _, values, _ in nodes[-1:] + nodes[:5]:                # alpha-beta agrees on every best value
        assert max(solver.move_values(state).values()) == max(values.values())
    out = tmp_path / "tree.npz"
    tool.collect_trees(rounds=3, seed=2, keep=10, out=str(out))
    data = np.load(out)
    assert data["root"].sum() == 3 and len(data["obs"]) <= 3 * 11
    assert (data["mask"].sum(1) > 1).all() and (np.isfinite(data["values"]) == data["mask"]).all()
    assert (np.isfinite(data["vs_random"]) == data["mask"]).all()


def test_tree_values_against_random_break_ties_among_the_best_moves_only():
    from kahve.agents.training.view.learner_env import LearnerEnv
    from kahve.agents.training.view.opponents import OpponentPool
    checked = narrowed = 0
    for seed in range(8):
        env = LearnerEnv("pasur", tool.SETTINGS, OpponentPool([("random", 1.0)]), seed=seed)
        env.reset()
        rng = np.random.default_rng(seed)
        while env.state.stock:
            env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        nodes = []
        tool.solve_tree(env.game, env.state, nodes)
        for state, seat, values, vs_random in nodes[-1:] + nodes[:3]:     # the root and a few deeper nodes
            side = env.game.sides[seat]
            for a in values:
                perfect, random_value = against_random(env.game, state, a, side)
                assert values[a] == perfect and vs_random[a] == pytest.approx(random_value)
                checked += 1
            legal = sorted(values)
            row = np.full((1, 104), np.nan)
            tie = row.copy()
            row[0, legal], tie[0, legal] = [values[a] for a in legal], [vs_random[a] for a in legal]
            plain, broken = tool.best_moves(row)[0], tool.best_moves(row, tie)[0]
            assert broken.any() and not (broken & ~plain).any()           # a subset of the best, never empty
            narrowed += broken.sum() < plain.sum()
    assert checked > 50 and narrowed > 0                                  # the tie-break did choose somewhere


def test_the_bots_own_decisions_carry_both_values_of_every_legal_move(tmp_path):
    from kahve.agents.policies.endgame.exact import PasurLastHand
    from kahve.envs.pasur.rules import OBS_FINAL
    from kahve.agents.training.view.learner_env import LearnerEnv
    from kahve.agents.training.view.opponents import OpponentPool
    out = tmp_path / "decisions.npz"
    tool.collect_decisions(rounds=3, seed=5, out=str(out))
    data = np.load(out)
    assert len(data["obs"]) >= 3 and set(data["round"].tolist()) == {0, 1, 2}
    assert data["root"].sum() == 3 and data["root"][0]          # one first decision a round (it comes first)
    assert (data["obs"][:, OBS_FINAL] == 1).all() and (data["mask"].sum(1) > 1).all()
    for key in ("values", "vs_random"):
        assert (np.isfinite(data[key]) == data["mask"]).all()
    # the values against perfect play are the engine's alpha-beta solver's, at a last-hand state of a random game
    env = LearnerEnv("pasur", tool.SETTINGS, OpponentPool([("random", 1.0)]), seed=6)
    env.reset()
    while env.state.stock:
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    perfect, _ = tool.line_values(env.game, env.state)
    solved = PasurLastHand(env.game).move_values(env.state)
    assert sorted(solved) == np.flatnonzero(np.isfinite(perfect)).tolist()
    assert all(perfect[a] == value for a, value in solved.items())      # each root move solved in a full window


def test_tiebreak_regret_is_measured_from_the_best_moves_line():
    nan = np.nan
    values = np.array([[3, 3, 1, nan]] * 3, np.float32)                  # moves 0 and 1 best against perfect play
    vs_random = np.array([[2, 5, 9, nan]] * 3, np.float32)               # of them, 1 is worth most against random
    regret = tool.tiebreak_regret(values, vs_random, np.array([0, 1, 2]))
    # move 2 loses against perfect play but makes more against random than the line: a negative regret
    assert regret.tolist() == [3.0, 0.0, -4.0]


def test_regret_scores_bots_on_the_same_decisions_and_refuses_a_missing_bot_in_one_line(tmp_path, capsys):
    out = tmp_path / "decisions.npz"
    tool.collect_decisions(rounds=2, seed=7, out=str(out))
    capsys.readouterr()
    tool.main(["regret", str(out), "--bots", "pasur/ppo"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("from 2 rounds") and lines[1].startswith("pasur/ppo: ")
    assert "by cards in the two hands 8: " in lines[1]
    with pytest.raises(SystemExit) as exit_:
        tool.main(["regret", str(out), "--bots", str(tmp_path / "nothing.onnx")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing.onnx" in err[0]
    other = tmp_path / "other.npz"
    np.savez(other, obs=np.zeros((1, 3)))
    with pytest.raises(SystemExit):
        tool.main(["regret", str(other)])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a file of `decisions`" in err[0]


def test_held_out_rounds_cover_both_seats_roots(tmp_path):
    """The learner's seat alternates from round to round: the held-out rounds hold the roots of both seats (the
    leader's with 8 cards in the two hands, the other's with 7), a tenth of the rounds."""
    from kahve.envs.pasur.rules import OBS_POOL, OBS_UNSEEN, NUM_CARDS
    rounds = np.arange(1000)
    held = tool.held_out_rounds(rounds)
    assert held.sum() == 100 and held[rounds % 2 == 0].sum() == held[rounds % 2 == 1].sum() == 50
    data = tmp_path / "tree.npz"
    tool.collect_trees(rounds=4, seed=6, keep=0, out=str(data))
    tree = np.load(data)
    roots = tree["root"] & tool.held_out_rounds(tree["round"])
    obs = tree["obs"][roots].astype(np.float32)
    cards = obs[:, :OBS_POOL].sum(1) + obs[:, OBS_UNSEEN:OBS_UNSEEN + NUM_CARDS].sum(1)
    assert sorted(cards) == [7, 8]


def test_a_tiny_expert_fit_writes_a_bot_that_plays_the_expert_only_in_the_last_hand(tmp_path, capsys):
    from kahve.agents.policies.bot import Bot, bot_expert_input, mlp_from_bot
    from kahve.envs.pasur.rules import OBS_FINAL
    data, bot_path = tmp_path / "tree.npz", tmp_path / "expert.onnx"
    tool.collect_trees(rounds=20, seed=6, keep=20, out=str(data))
    tool.fit_expert([str(data)], epochs=1, width=16, depth=1, lr=1e-3, seed=0, out=str(bot_path),
                    regret_weight=1.0, early_weight=3.0, augment=True, tiebreak=True)  # every term of the loss
    assert capsys.readouterr().out.splitlines()[-2].startswith("epoch 1: a best move in held-out nodes")
    game = envs.game_class("pasur")(**tool.SETTINGS)
    bot, shipped = Bot.load(bot_path, game=game), tool.shipped_network(game)
    expert = mlp_from_bot(bot_path, game.action_feature_size, expert=True)
    assert bot_expert_input(bot_path) == OBS_FINAL and [w.shape[0] for w in expert.weights] == [16, 104]
    obs = np.load(data)["obs"].astype(np.float32)[:4]                 # last-hand observations: the flag is set
    assert (obs[:, OBS_FINAL] == 1).all()
    assert np.allclose([bot.logits(o) for o in obs], expert.forward(obs), atol=1e-4)
    early = obs.copy()
    early[:, OBS_FINAL] = 0
    assert np.allclose([bot.logits(o) for o in early], shipped.forward(early), atol=1e-4)
    # --init goes on from a bot's expert: with no epoch the expert written is that one
    again = tmp_path / "again.onnx"
    tool.fit_expert([str(data)], epochs=0, width=16, depth=1, lr=1e-3, seed=1, out=str(again), init=str(bot_path))
    assert np.allclose(mlp_from_bot(again, game.action_feature_size, expert=True).forward(obs), expert.forward(obs),
                       atol=1e-5)
    assert Bot.read_metadata(again)[1]["expert"]["epochs"] == 1        # the start's epoch counts, not only this fit's
    with pytest.raises(ValueError, match="--init .* not --width 32 --depth 1"):
        tool.fit_expert([str(data)], epochs=0, width=32, depth=1, lr=1e-3, seed=1, out=str(again), init=str(bot_path))
    old = tmp_path / "old.npz"                                        # a tree file from before the tie-break
    np.savez(old, **{k: v for k, v in np.load(data).items() if k != "vs_random"})
    with pytest.raises(ValueError, match="needs tree files that carry the values against random.*old.npz"):
        tool.fit_expert([str(old)], epochs=0, width=16, depth=1, lr=1e-3, seed=1, out=str(again), tiebreak=True)
    # --main puts another bot's main network in hands 1-5 (here the shipped DQN's)
    other_path = tmp_path / "over_dqn.onnx"
    tool.fit_expert([str(data)], epochs=1, width=16, depth=1, lr=1e-3, seed=0, out=str(other_path), main="pasur/dqn")
    dqn = mlp_from_bot(tool.checkpoints.find("pasur/dqn"), game.action_feature_size)
    other = Bot.load(other_path, game=game)
    assert np.allclose([other.logits(o) for o in early], dqn.forward(early), atol=1e-4)
    assert not np.allclose(dqn.forward(early), shipped.forward(early), atol=1e-2)


def test_combine_writes_another_main_network_under_the_shipped_expert(tmp_path):
    """``combine``: the shipped DQN's network in hands 1-5, the shipped PPO bot's expert in the last hand."""
    from kahve.agents.policies.bot import Bot, BotFileError, mlp_from_bot
    from kahve.envs.pasur.rules import OBS_FINAL
    game = envs.game_class("pasur")(**tool.SETTINGS)
    out = tmp_path / "combined.onnx"
    tool.combine("pasur/dqn", "pasur/ppo", str(out))
    dqn = mlp_from_bot(tool.checkpoints.find("pasur/dqn"), game.action_feature_size)
    shipped = Bot.load(tool.checkpoints.find("pasur/ppo"), game=game)    # its expert scores the last hand
    env = tool.LearnerEnv("pasur", tool.SETTINGS, tool.OpponentPool([("random", 1.0)]), seed=7)
    obs = np.stack([env.reset()[0] for _ in range(4)]).astype(np.float32)
    early, last = obs.copy(), obs.copy()
    early[:, OBS_FINAL], last[:, OBS_FINAL] = 0, 1
    bot = Bot.load(out, game=game)
    assert np.allclose([bot.logits(o) for o in early], dqn.forward(early), atol=1e-4)
    assert np.allclose([bot.logits(o) for o in last], shipped.batch_logits(last), atol=1e-4)
    assert not np.allclose(dqn.forward(last), shipped.batch_logits(last), atol=1e-2)
    assert Bot.read_metadata(out)[1]["expert"] == Bot.read_metadata(tool.checkpoints.find("pasur/ppo"))[1]["expert"]
    with pytest.raises(BotFileError, match="has no expert network"):     # the DQN carries no expert to take
        tool.combine("pasur/ppo", "pasur/dqn", str(tmp_path / "none.onnx"))
    with pytest.raises(BotFileError, match="is a bot for pishti, not pasur"):   # another game's bot as the main one
        tool.combine("pishti/ppo_2p", "pasur/ppo", str(tmp_path / "pishti.onnx"))


def test_combine_on_the_command_line_refuses_a_missing_bot_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        tool.main(["combine", str(tmp_path / "missing.onnx"), "--out", str(tmp_path / "x.onnx")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and "no such file" in err
    assert not (tmp_path / "x.onnx").exists()


def test_relabelling_the_suits_changes_nothing_but_the_card_names():
    """suit_permutation is a symmetry of the game: the relabelled deal, played with the relabelled moves, shows
    the relabelled observations, offers the relabelled moves and gives every last-hand move the same exact value."""
    from kahve.agents.policies.endgame.exact import PasurLastHand
    from kahve.envs.pasur.rules import MOVE_FEATURES, NUM_ACTIONS, PHASE_SELECT, TEN_DIAMONDS
    game = envs.game_class("pasur")(**tool.SETTINGS)
    solver, rng = PasurLastHand(game), np.random.default_rng(0)
    moves_offset = game.observation_size - NUM_ACTIONS * MOVE_FEATURES
    decisions = solved = 0
    for deal in range(40):
        perm = tool.suit_permutation(rng)
        assert sorted(perm) == list(range(52)) and all(perm[c] % 13 == c % 13 for c in range(52))
        assert all(perm[c] == c for c in range(13)) and perm[TEN_DIAMONDS] == TEN_DIAMONDS   # clubs, TD stay
        deck = [int(c) for c in rng.permutation(52)]
        a, b = game.new_state(deal, deck=deck), game.new_state(deal, deck=[int(perm[c]) for c in deck])
        if a.redeals:                       # a redeal reshuffles from the seed: the decks part ways
            continue
        obs_source, action_source = tool.relabelled(perm, tool.CARD_BLOCKS, moves_offset, MOVE_FEATURES,
                                                    game.observation_size)
        new_action = np.argsort(action_source)
        # (a capture's picks come in card order, so the relabelled games part ways at a choice of picks)
        while a.current_player is not None and a.deals_completed == 0 and a.phase != PHASE_SELECT:
            seat = a.current_player
            assert np.array_equal(b.observation(seat), a.observation(seat)[obs_source])
            legal = a.legal_actions()
            assert sorted(b.legal_actions()) == sorted(int(new_action[x]) for x in legal)
            if solver.applies(a) and len(legal) > 1:
                on_b = solver.move_values(b)
                assert all(on_b[int(new_action[x])] == v for x, v in solver.move_values(a).items())
                solved += 1
            x = int(rng.choice(legal))
            a.apply(x), b.apply(int(new_action[x]))
            decisions += 1
    assert decisions > 300 and solved > 10


def _decision_observations(game, games: int) -> tuple[np.ndarray, np.ndarray]:
    """Every decision's observation and legal-action mask over a few random rounds: all six hands, PLAY and
    SELECT."""
    from tests.helpers import random_game
    obs, masks = [], []

    def seen(state):
        obs.append(state.observation(state.current_player))
        mask = np.zeros(game.num_actions, bool)
        mask[state.legal_actions()] = True
        masks.append(mask)
    for seed in range(games):
        random_game(game, seed, on_state=seen)
    return np.array(obs, np.float32), np.array(masks)


def test_the_card_attention_graph_in_a_bot_file_computes_what_its_training_module_does(tmp_path):
    """The expert's ONNX graph (every card a token, the present ones gathered) gives the torch module's scores on
    the legal actions of every kind of decision, one row at a time as in a batch, and reads back the same arrays."""
    from kahve.agents.policies.bot import Bot, export_onnx, expert_from_bot
    from kahve.agents.training.card_attention import CardAttentionNet
    from kahve.envs.pasur.rules import OBS_FINAL
    game = envs.game_class("pasur")(**tool.SETTINGS)
    th.manual_seed(0)
    net = CardAttentionNet(tool.CARD_LAYOUT, width=16, layers=2, heads=2)
    obs, masks = _decision_observations(game, 3)
    obs[:, OBS_FINAL] = 1.0                                 # every row to the expert
    assert (obs[:, tool.OBS_PLAYED:tool.OBS_PLAYED + 52].sum(1) > 0).any()        # a SELECT decision among them
    with th.no_grad():
        want = net(th.tensor(obs)).numpy()
    _, meta = Bot.read_metadata(tool.checkpoints.find("pasur/ppo"))
    arrays = net.to_arrays()
    path = export_onnx(tool.shipped_network(game), tmp_path / "attention.onnx",
                       {**meta, "expert": {"plays": "the last hand", **arrays.description}}, expert=arrays,
                       expert_input=OBS_FINAL)
    bot = Bot.load(path, game=game)
    batch = bot.batch_logits(obs)
    assert np.abs(np.where(masks, batch - want, 0)).max() < 1e-4
    single = np.stack([bot.logits(o) for o in obs[:30]])
    assert np.abs(np.where(masks[:30], single - want[:30], 0)).max() < 1e-4
    back = expert_from_bot(path, game.action_feature_size)
    assert back.layout == tool.CARD_LAYOUT and set(back.arrays) == set(arrays.arrays)
    assert all(np.array_equal(back.arrays[k], v) for k, v in arrays.arrays.items())


def test_a_bot_file_whose_card_attention_expert_lacks_its_arrays_is_refused_in_one_line(tmp_path):
    from kahve.agents.policies.bot import Bot, BotFileError, export_onnx, expert_from_bot
    from kahve.agents.training.card_attention import CardAttentionNet
    from kahve.envs.pasur.rules import OBS_FINAL
    game = envs.game_class("pasur")(**tool.SETTINGS)
    shipped = tool.checkpoints.find("pasur/ppo")
    _, meta = Bot.read_metadata(shipped)
    claims = CardAttentionNet(tool.CARD_LAYOUT, width=16, layers=1, heads=2).to_arrays().description
    path = export_onnx(tool.shipped_network(game), tmp_path / "liar.onnx", {**meta, "expert": claims},
                       expert=tool.shipped_network(game), expert_input=OBS_FINAL)   # an MLP, not what it claims
    with pytest.raises(BotFileError, match="card-attention expert cannot be read back") as err:
        expert_from_bot(path, game.action_feature_size)
    assert "\n" not in str(err.value)


def test_a_tiny_card_attention_expert_fit_writes_a_bot_and_goes_on_from_it(tmp_path, capsys):
    from kahve.agents.policies.bot import Bot, expert_from_bot
    from kahve.envs.pasur.rules import OBS_FINAL
    data, path, again = tmp_path / "tree.npz", tmp_path / "attention.onnx", tmp_path / "again.onnx"
    tool.collect_trees(rounds=12, seed=8, keep=10, out=str(data))
    tool.fit_expert([str(data)], epochs=1, width=8, depth=1, lr=1e-3, seed=0, out=str(path), arch="attention",
                    heads=2, tiebreak=True, augment=True)
    assert capsys.readouterr().out.splitlines()[-2].startswith("epoch 1: a best move in held-out nodes")
    game = envs.game_class("pasur")(**tool.SETTINGS)
    bot = Bot.load(path, game=game)
    meta = Bot.read_metadata(path)[1]
    assert meta["expert_input"] == OBS_FINAL and meta["expert"]["architecture"] == "card attention"
    assert (meta["expert"]["width"], meta["expert"]["layers"], meta["expert"]["heads"]) == (8, 1, 2)
    obs = np.load(data)["obs"].astype(np.float32)[:6]
    early = obs.copy()
    early[:, OBS_FINAL] = 0
    assert np.allclose(bot.batch_logits(early), tool.shipped_network(game).forward(early), atol=1e-4)
    # --init goes on from it: with no epoch, the expert written is the same one
    tool.fit_expert([str(data)], epochs=0, width=8, depth=1, lr=None, seed=1, out=str(again), arch="attention",
                    heads=2, init=str(path))
    assert np.allclose(Bot.load(again).batch_logits(obs), bot.batch_logits(obs), atol=1e-5)
    assert expert_from_bot(again, game.action_feature_size).width == 8
    with pytest.raises(ValueError, match="not a card-attention network of --width 16 --depth 1 --heads 2"):
        tool.fit_expert([str(data)], epochs=0, width=16, depth=1, lr=None, seed=1, out=str(again), arch="attention",
                        heads=2, init=str(path))
    mlp_expert = tmp_path / "mlp.onnx"                                  # an MLP expert and this one: neither
    tool.fit_expert([str(data)], epochs=0, width=8, depth=1, lr=None, seed=1, out=str(mlp_expert))  # starts the other
    with pytest.raises(ValueError, match="not a card-attention network"):
        tool.fit_expert([str(data)], epochs=0, width=8, depth=1, lr=None, seed=1, out=str(again), arch="attention",
                        heads=2, init=str(mlp_expert))
    with pytest.raises(ValueError, match="its expert is a card-attention network"):
        tool.fit_expert([str(data)], epochs=0, width=8, depth=1, lr=None, seed=1, out=str(again), init=str(path))
    # combine puts it over another main network
    combined = tmp_path / "combined.onnx"
    tool.combine("pasur/dqn", str(path), str(combined))
    assert np.allclose(Bot.load(combined).batch_logits(obs), bot.batch_logits(obs), atol=1e-5)
