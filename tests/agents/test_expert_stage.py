"""Expert stages (agents/training/expert.py): a recipe that trains a main network and then fits a last-hand expert
beside it ends with a bot that plays the expert exactly in the last hand; the solved labels are the engine solver's
values; a tree file made by another job is not reused; Ctrl-C keeps the solved rounds and --resume finishes; a fit
stopped after an epoch goes on where it was; the section's errors name the key. And what the expert relies on: the
suit symmetry keeps every value, the card-attention graph computes what its torch module does."""

from __future__ import annotations

import copy
import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch as th
import yaml

from kahve import envs
from kahve.agents.policies.bot import Bot, BotFileError, expert_from_bot, export_onnx, mlp_from_bot
from kahve.agents.policies.endgame.exact import PasurLastHand, solve_lines
from kahve.agents.policies.network import MLP
from kahve.agents.training import config as config_mod
from kahve.agents.training import expert
from kahve.agents.training import recipe as recipe_mod
from kahve.agents.training.card_attention import CardAttentionNet
from kahve.agents.training.files import load_npz
from kahve.agents.training.game_knowledge import last_hand, suit_permutation
from kahve.agents.training.run_dir import RunDir
from kahve.envs.pasur.rules import OBS_FINAL, OBS_PLAYED, PHASE_SELECT
from kahve.scripts.cli import main as kahve
from tests.helpers import HANG_S, against_random, popen_train, random_game

SETTINGS = {"episode": "deal", "reward": "points"}
GAME = {"game": "pasur", "settings": SETTINGS, "network": {"hidden": [16], "activation": "tanh"},
        "n_envs": 2, "vec_env": "dummy", "ppo": {"n_steps": 32, "batch_size": 64},
        "evaluation": {"games": 2, "every": 0, "workers": 1}, "checkpoint_every": 64,
        "opponents": {"pool": [{"policy": "random", "weight": 1}]}}
EXPERT = {"name": "last_hand", "kind": "expert",
          "expert": {"trees": [{"seed": 1, "rounds": 4, "keep": 2}, {"seed": 2, "rounds": 3, "keep": 2, "shallow": 7}],
                     "workers": 2, "network": {"arch": "attention", "width": 8, "depth": 1, "heads": 2},
                     "fit": [{"epochs": 1, "batch_size": 8, "trees": [0]},
                             {"epochs": 1, "batch_size": 8, "augment": "suits", "tiebreak": "random"}]}}
TINY = {**GAME, "stages": [{"name": "learn", "total_timesteps": 64}, EXPERT], "bot": {"report": []}}


def _write(tmp_path, raw, name="tiny.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _cfg(**more) -> dict:
    return config_mod.resolve({**GAME, "init_from": "pasur/ppo", "network": {"hidden": [256, 256]}, **more})


def _section(cfg, **more) -> dict:
    return expert.check({**json.loads(json.dumps(EXPERT["expert"])), **more}, cfg, first=False)


def _last_hand_state(seed: int):
    """A random round played on to the first decision of its last hand."""
    game = envs.game_class("pasur")(**SETTINGS)
    rng = np.random.default_rng(seed)
    state = game.new_state(seed)
    while not PasurLastHand.applies(state):
        state.apply(int(rng.choice(state.legal_actions())))
    return game, state


# ----- end to end -----------------------------------------------------------------------------------------------
def test_a_recipe_ends_with_a_bot_that_plays_the_expert_in_the_last_hand_and_the_main_network_elsewhere(tmp_path):
    out = tmp_path / "run"
    assert kahve(["train", str(_write(tmp_path, TINY)), "--no-progress", "--override", f"output={out}"]) == 0
    stage = out / "stages" / "02_last_hand"
    game = envs.game_class("pasur")(**SETTINGS)
    bot_file = out / "tiny.onnx"
    meta = Bot.read_metadata(bot_file)[1]
    assert meta["expert_input"] == OBS_FINAL and meta["expert"]["architecture"] == "card attention"
    assert (meta["expert"]["width"], meta["expert"]["layers"], meta["expert"]["heads"]) == (8, 1, 2)
    assert meta["expert"]["epochs"] == 2 and [s["name"] for s in meta["recipe"]["stages"]] == ["learn", "last_hand"]
    summary = json.loads((stage / "summary.json").read_text())
    assert summary["steps"] == meta["expert"]["solved_decisions"] > 0 and not summary["interrupted"]
    assert meta["recipe"]["stages"][1]["algorithm"] == "expert"
    # the main network is the first stage's, in the stage's policy.npz (what a next stage would start from)
    main = MLP.from_arrays(load_npz(out / "stages" / "01_learn" / "policy.npz"))
    assert all(np.array_equal(a, b) for a, b in zip(MLP.from_arrays(load_npz(stage / "policy.npz")).weights,
                                                     main.weights))
    trees = [load_npz(p) for p in sorted((stage / "trees").glob("*.npz"))]
    obs = np.concatenate([t["obs"] for t in trees]).astype(np.float32)
    legal = np.concatenate([t["mask"] for t in trees])
    assert (obs[:, OBS_FINAL] == 1).all()
    bot = Bot.load(bot_file, game=game)
    net = CardAttentionNet(last_hand("pasur").layout, 8, 1, 2)
    net.load_arrays(expert_from_bot(bot_file, game.action_feature_size))
    with th.no_grad():
        want = net(th.tensor(obs)).numpy()
    assert np.abs(np.where(legal, bot.batch_logits(obs) - want, 0)).max() < 1e-4      # the last hand: the expert
    assert not np.allclose(np.where(legal, main.forward(obs), 0), np.where(legal, want, 0), atol=1e-2)
    early = obs.copy()
    early[:, OBS_FINAL] = 0
    assert np.allclose(bot.batch_logits(early), main.forward(early), atol=1e-4)        # elsewhere: the main network


# ----- the trees ------------------------------------------------------------------------------------------------
def test_solved_nodes_carry_the_engine_solvers_values_and_the_tie_break_against_random(tmp_path):
    cfg = _cfg()
    section = _section(cfg, trees=[{"seed": 3, "rounds": 2, "keep": 1000}])
    main, digest = expert.main_network(cfg, expert._game(cfg))
    job = expert.tree_jobs(cfg, section, digest)[0]
    run = RunDir(tmp_path)
    assert expert.solve_job(cfg, job, main, expert.trees_folder(run)) == 2
    data = expert.load_trees(run, [job])
    assert data["root"].sum() == 2 and (data["mask"].sum(1) > 1).all()
    for key in ("values", "vs_random"):
        assert (np.isfinite(data[key]) == data["mask"]).all()
    # round 1 played again: its root's values are the alpha-beta solver's, each move in a full window
    from kahve.agents.training.view.learner_env import LearnerEnv
    from kahve.agents.training.view.opponents import OpponentPool
    pool = OpponentPool([("random", 1.0)])                            # the config's pool
    env = LearnerEnv("pasur", SETTINGS, pool, seed=0)
    obs, _ = expert._start_round(env, pool, 3, 1)
    while not PasurLastHand.applies(env.state):
        obs, *_ = env.step(int(np.argmax(np.where(env.action_masks(), main.forward(obs[None])[0], -np.inf))))
    root = np.flatnonzero(data["root"] & (data["round"] == 1))[0]
    assert np.array_equal(data["obs"][root], env.state.observation(env.state.current_player).astype(np.float16))
    solved = PasurLastHand(env.game).move_values(env.state)
    assert sorted(solved) == np.flatnonzero(data["mask"][root]).tolist()
    assert all(data["values"][root][a] == v for a, v in solved.items())
    side = env.game.sides[env.state.current_player]
    for a in solved:
        assert data["vs_random"][root][a] == pytest.approx(against_random(env.game, env.state, a, side)[1], abs=1e-4)


def test_the_tie_break_keeps_a_subset_of_the_best_moves_and_chooses_somewhere():
    checked = narrowed = 0
    for seed in range(8):
        game, state = _last_hand_state(seed)
        nodes = []
        solve_lines(game, state, nodes)
        for node, seat, values, vs_random in nodes[-1:] + nodes[:3]:      # the root and a few deeper nodes
            side = game.sides[seat]
            for a in values:
                perfect, random_value = against_random(game, node, a, side)
                assert values[a] == perfect and vs_random[a] == pytest.approx(random_value)
                checked += 1
            legal = sorted(values)
            row, tie = np.full((1, game.num_actions), np.nan), np.full((1, game.num_actions), np.nan)
            row[0, legal], tie[0, legal] = [values[a] for a in legal], [vs_random[a] for a in legal]
            plain, broken = expert.best_moves(row)[0], expert.best_moves(row, tie)[0]
            assert broken.any() and not (broken & ~plain).any()
            narrowed += broken.sum() < plain.sum()
    assert checked > 50 and narrowed > 0


def test_a_tree_file_made_by_another_job_is_not_reused(tmp_path):
    cfg = _cfg()
    main, digest = expert.main_network(cfg, expert._game(cfg))
    folder = expert.trees_folder(RunDir(tmp_path))
    one = expert.tree_jobs(cfg, _section(cfg, trees=[{"seed": 5, "rounds": 2, "keep": 2}]), digest)[0]
    expert.solve_job(cfg, one, main, folder)
    files = sorted(folder.iterdir())
    assert expert.rounds_solved(folder, one) == 2 and len(files) == 2       # the first round at once, then the rest
    # another keep, another main network, another pool: the same seed's rounds are solved again
    for other in (expert.tree_jobs(cfg, _section(cfg, trees=[{"seed": 5, "rounds": 2, "keep": 3}]), digest)[0],
                  expert.tree_jobs(cfg, _section(cfg, trees=[{"seed": 5, "rounds": 2, "keep": 2}]), "another")[0],
                  expert.tree_jobs(_cfg(opponents={"pool": [{"policy": "random"}]}),
                                   _section(cfg, trees=[{"seed": 5, "rounds": 2, "keep": 2}]), digest)[0]):
        assert other.digest != one.digest and expert.rounds_solved(folder, other) == 0
    # a file named like this job's but made by another is not taken either
    stranger = expert.tree_jobs(cfg, _section(cfg, trees=[{"seed": 6, "rounds": 2, "keep": 2}]), digest)[0]
    for path in files:
        (folder / path.name.replace(one.digest, stranger.digest)).write_bytes(path.read_bytes())
    assert expert.rounds_solved(folder, stranger) == 0
    # more rounds go on from the files there, and the rounds are those an uninterrupted job plays
    more = expert.tree_jobs(cfg, _section(cfg, trees=[{"seed": 5, "rounds": 3, "keep": 2}]), digest)[0]
    assert more.digest == one.digest
    before = {p.name: p.read_bytes() for p in files}
    expert.solve_job(cfg, more, main, folder)
    assert all((folder / name).read_bytes() == data for name, data in before.items())
    again = tmp_path / "again"
    expert.solve_job(cfg, more, main, again)
    resumed = expert.load_trees(RunDir(tmp_path), [more])
    straight = {k: np.concatenate([load_npz(p)[k] for p in sorted(again.glob("*.npz"))]) for k in expert.COLUMNS}
    assert all(np.array_equal(resumed[k], straight[k], equal_nan=k in ("values", "vs_random"))
               for k in expert.COLUMNS)


def test_ctrl_c_while_solving_keeps_the_solved_rounds_and_resume_finishes_the_stage(tmp_path, capsys):
    out = tmp_path / "run"
    slow = json.loads(json.dumps(EXPERT))
    slow["expert"].update(trees=[{"seed": 1, "rounds": 100_000, "keep": 2}], workers=1,
                          fit={"epochs": 1, "batch_size": 8})
    raw = {**GAME, "network": {"hidden": [256, 256]}, "stages": [{**slow, "init_from": "pasur/ppo"}],
           "bot": {"report": []}}
    proc = popen_train([str(_write(tmp_path, raw)), "--no-progress", "--override", f"output={out}"], tmp_path)
    trees = out / "stages" / "01_last_hand" / "trees"
    deadline = time.monotonic() + HANG_S
    while not list(trees.glob("*.npz")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    first = sorted(trees.glob("*.npz"))
    assert first, proc.communicate()[1][-3000:]
    time.sleep(3)                                                   # it solves more rounds for a while
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and f"kahve train --resume {out}" in stdout
    summary = json.loads((out / "stages" / "01_last_hand" / "summary.json").read_text())
    assert summary["interrupted"] and not (out / "stages" / "01_last_hand" / expert.BOT_FILE).exists()
    ends = sorted(int(p.stem.split("-")[1]) for p in trees.glob("*.npz"))
    n = ends[-1]
    assert 1 <= n < 100_000
    kept = {p.name: p.read_bytes() for p in trees.glob("*.npz")}
    job = json.dumps([{"seed": 1, "rounds": n + 2, "keep": 2}])
    assert kahve(["train", "--resume", str(out), "--no-progress", "--override",
                  f"stages.last_hand.expert.trees={job}"]) == 0
    assert f"{n:,} rounds solved, 2 to go" in capsys.readouterr().out
    assert all((trees / name).read_bytes() == data for name, data in kept.items())       # none solved again
    assert max(int(p.stem.split("-")[1]) for p in trees.glob("*.npz")) == n + 2
    assert Bot.read_metadata(out / "tiny.onnx")[1]["expert_input"] == OBS_FINAL


# ----- the fit --------------------------------------------------------------------------------------------------
def _solved(tmp_path, cfg, section):
    main, digest = expert.main_network(cfg, expert._game(cfg))
    jobs = expert.tree_jobs(cfg, section, digest)
    for job in jobs:
        expert.solve_job(cfg, job, main, expert.trees_folder(RunDir(tmp_path)))
    return main, digest, jobs


def test_a_fit_stopped_after_an_epoch_goes_on_from_its_checkpoint_to_the_same_network(tmp_path, monkeypatch):
    cfg = _cfg()
    section = _section(cfg, fit=[{"epochs": 2, "batch_size": 8, "trees": [0]},
                                 {"epochs": 2, "batch_size": 8, "augment": "suits", "tiebreak": "random"}])
    main, digest, jobs = _solved(tmp_path, cfg, section)
    straight, nodes, epochs, _ = expert.fit(cfg, section, jobs, main, digest, RunDir(tmp_path), False, print)
    assert epochs == 4 and nodes > 0
    (tmp_path / "fit.npz").unlink()
    save, calls = expert._save_fit, []

    def stop_after_three(*args):        # a Ctrl-C in phase 2's second epoch, after three checkpoints
        save(*args)
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
    monkeypatch.setattr(expert, "_save_fit", stop_after_three)
    with pytest.raises(KeyboardInterrupt):
        expert.fit(cfg, section, jobs, main, digest, RunDir(tmp_path), False, print)
    monkeypatch.setattr(expert, "_save_fit", save)
    lines = []
    resumed = expert.fit(cfg, section, jobs, main, digest, RunDir(tmp_path), False, lines.append)[0]
    assert "the fit goes on from its checkpoint: phase 2, 1 epochs done" in lines
    assert sum(line.startswith("fit phase 2, epoch") for line in lines) == 1
    assert all(np.allclose(resumed.arrays[k], v, atol=1e-6) for k, v in straight.arrays.items())
    # another fit (a phase changed) does not go on from that checkpoint
    other = {**section, "fit": [section["fit"][0], {**section["fit"][1], "lr": 0.01}]}
    lines = []
    expert.fit(cfg, other, jobs, main, digest, RunDir(tmp_path), False, lines.append)
    assert not any("goes on from its checkpoint" in line for line in lines)


def test_an_mlp_expert_and_a_fit_that_starts_from_a_bots_expert(tmp_path):
    cfg = _cfg()
    section = _section(cfg, network={"arch": "mlp", "width": 16, "depth": 1}, fit={"epochs": 1, "batch_size": 8})
    main, digest, jobs = _solved(tmp_path, cfg, section)
    mlp, nodes, epochs, _ = expert.fit(cfg, section, jobs, main, digest, RunDir(tmp_path), False, print)
    path = tmp_path / "mlp.onnx"
    expert.write_bot(cfg, section, main, mlp, nodes, epochs, path)
    game = expert._game(cfg)
    back = mlp_from_bot(path, game.action_feature_size, expert=True)
    assert [w.shape[0] for w in back.weights] == [16, 104] and back.activation == "relu"
    obs = expert.load_trees(RunDir(tmp_path), jobs)["obs"].astype(np.float32)
    assert np.allclose(Bot.load(path, game=game).batch_logits(obs), mlp.forward(obs), atol=1e-4)
    # init: the fit starts from that expert; with no epoch it is the expert written
    start = _section(cfg, network={"arch": "mlp", "width": 16, "depth": 1}, fit={"epochs": 0}, init=str(path))
    (tmp_path / "fit.npz").unlink()
    again, _, epochs, _ = expert.fit(cfg, start, jobs, main, digest, RunDir(tmp_path), False, print)
    assert epochs == 1 and np.allclose(again.forward(obs), mlp.forward(obs), atol=1e-5)


# ----- the section's errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit,match", [
    (lambda s: s.update(expert={}), r"stage 'last_hand': config key 'expert.trees': give at least one tree job"),
    (lambda s: s["expert"]["trees"][0].update(rounds=0), r"'expert.trees\[0\].rounds': 0 is out of range"),
    (lambda s: s["expert"]["trees"][1].update(kep=3), r"unknown config key 'expert.trees\[1\].kep' \(did you mean"),
    (lambda s: s["expert"]["trees"][1].update(seed=1), r"'expert.trees\[1\].seed': the same as trees\[0\]'s"),
    (lambda s: s["expert"].update(tress=[]), r"unknown config key 'expert.tress'"),
    (lambda s: s["expert"]["network"].update(arch="rnn"), r"'expert.network.arch': 'rnn' is not allowed"),
    (lambda s: s["expert"]["network"].update(heads=3), r"'expert.network.heads': 3 heads do not divide width 8"),
    (lambda s: s["expert"]["fit"][1].update(trees=[2]), r"'expert.fit\[1\].trees\[0\]': expected the index of a tree"),
    (lambda s: s["expert"]["fit"][0].update(augment="ranks"), r"'expert.fit\[0\].augment': 'ranks' is not allowed"),
    (lambda s: s["expert"].update(init="pasur/dqn"), r"'expert.init': .*has no expert network"),
    (lambda s: s["expert"].update(init="pasur/ppo"), r"'expert.init': .*not a card-attention network of width 8"),
    (lambda s: s["expert"].update(init="no_such_bot"), r"'expert.init': no bot file at no_such_bot"),
])
def test_expert_errors_name_the_stage_and_key(tmp_path, edit, match):
    raw = json.loads(json.dumps(TINY))
    edit(raw["stages"][1])
    with pytest.raises(ValueError, match=match):
        recipe_mod.load_recipe(_write(tmp_path, raw))


def test_an_expert_stage_needs_a_main_network_and_a_game_that_declares_its_last_hand(tmp_path):
    with pytest.raises(ValueError, match="stage 'last_hand': config key 'init_from': an expert stage sits beside"):
        recipe_mod.load_recipe(_write(tmp_path, {**GAME, "stages": [EXPERT]}))
    pishti = {**TINY, "game": "pishti", "settings": {"players": 2}}
    with pytest.raises(ValueError, match=r"config key 'game': pishti has no exact last-hand solver.*declared: pasur"):
        recipe_mod.load_recipe(_write(tmp_path, pishti))
    with pytest.raises(ValueError, match="config key 'algorithm': the expert's logits are a policy's"):
        recipe_mod.load_recipe(_write(tmp_path, {**TINY, "algorithm": "dqn", "ppo": {}}))


# ----- what the expert relies on --------------------------------------------------------------------------------
def test_relabelling_the_suits_changes_nothing_but_the_card_names():
    """The declared symmetry of Pâsur: the relabelled deal, played with the relabelled moves, shows the relabelled
    observations, offers the relabelled moves and gives every last-hand move the same exact value."""
    game = envs.game_class("pasur")(**SETTINGS)
    knowledge = last_hand("pasur")
    solver, rng = PasurLastHand(game), np.random.default_rng(0)
    decisions = solved = 0
    for deal in range(40):
        twin = copy.deepcopy(rng)
        perm = suit_permutation(rng)
        assert sorted(perm) == list(range(52)) and all(perm[c] % 13 == c % 13 for c in range(52))
        obs_source, action_source = knowledge.symmetry.draw(twin)          # the same relabelling
        deck = [int(c) for c in rng.permutation(52)]
        a, b = game.new_state(deal, deck=deck), game.new_state(deal, deck=[int(perm[c]) for c in deck])
        if a.redeals:                       # a redeal reshuffles from the seed: the decks part ways
            continue
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


def test_held_out_rounds_are_one_pair_in_ten():
    rounds = np.arange(1000)
    held = expert.held_out_rounds(rounds)
    assert held.sum() == 100 and held[rounds % 2 == 0].sum() == held[rounds % 2 == 1].sum() == 50


def _decision_observations(game, games: int):
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
    game = envs.game_class("pasur")(**SETTINGS)
    layout = last_hand("pasur").layout
    th.manual_seed(0)
    net = CardAttentionNet(layout, width=16, layers=2, heads=2)
    obs, masks = _decision_observations(game, 3)
    obs[:, OBS_FINAL] = 1.0                                 # every row to the expert
    assert (obs[:, OBS_PLAYED:OBS_PLAYED + 52].sum(1) > 0).any()        # a SELECT decision among them
    with th.no_grad():
        want = net(th.tensor(obs)).numpy()
    cfg = _cfg()
    main = expert.main_network(cfg, game)[0]
    arrays = net.to_arrays()
    path = export_onnx(main, tmp_path / "attention.onnx",
                       RunDir.bot_metadata(cfg, 0, {}, expert={"plays": "the last hand", **arrays.description}),
                       expert=arrays, expert_input=OBS_FINAL)
    bot = Bot.load(path, game=game)
    assert np.abs(np.where(masks, bot.batch_logits(obs) - want, 0)).max() < 1e-4
    single = np.stack([bot.logits(o) for o in obs[:30]])
    assert np.abs(np.where(masks[:30], single - want[:30], 0)).max() < 1e-4
    back = expert_from_bot(path, game.action_feature_size)
    assert back.layout == layout and set(back.arrays) == set(arrays.arrays)
    assert all(np.array_equal(back.arrays[k], v) for k, v in arrays.arrays.items())
    # a file whose metadata claims a card-attention expert its graph does not hold is refused in one line
    liar = export_onnx(main, tmp_path / "liar.onnx",
                       RunDir.bot_metadata(cfg, 0, {}, expert={"plays": "the last hand", **arrays.description}),
                       expert=main, expert_input=OBS_FINAL)
    with pytest.raises(BotFileError, match="card-attention expert cannot be read back") as err:
        expert_from_bot(liar, game.action_feature_size)
    assert "\n" not in str(err.value)
