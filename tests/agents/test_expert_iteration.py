"""Expert iteration (issue 17): generations of a search over the current network labelling the states the network
reaches, cached in the run folder, resumable between a generation's collection and its fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kahve import envs
from kahve.agents.policies.bot import Bot
from kahve.agents.training import config as config_mod
from kahve.agents.training.backends import train
from kahve.scripts.cli import main as kahve

ROOT = Path(__file__).resolve().parents[2]
TINY = ["total_timesteps=128", "n_envs=1", "vec_env=dummy", "ppo.n_steps=64", "ppo.batch_size=64",
        "evaluation.games=2", "evaluation.every=0", "evaluation.workers=1", "checkpoint_every=10000",
        "opponents.self_play.every=0", "pretrain.steps=300", "pretrain.epochs=1", "pretrain.dagger_rounds=0",
        "pretrain.dagger_epochs=2", "pretrain.generations=2", "pretrain.generation_steps=150",
        "pretrain.search=rollout:2,z=1:{student}"]


def test_two_generations_resume_from_their_cached_labels(tmp_path, capsys):
    out = tmp_path / "run"
    cfg = config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*TINY, f"output={out}"])
    lines = []

    def stop_after_the_second_labelling(line):
        lines.append(line)
        if line.startswith("expert iteration generation 2/2") and "labelled" in line:
            raise KeyboardInterrupt          # as Ctrl-C between generation 2's collection and its fit

    summary = train(cfg, progress=False, log=stop_after_the_second_labelling)
    assert summary["interrupted"] and summary["steps"] == 0
    state = json.loads((out / "checkpoints" / "latest" / "state.json").read_text())
    assert [g["generation"] for g in state["pretrain"]["generations"]] == [1]
    gen = out / "generations"
    assert sorted(p.name for p in gen.iterdir()) == ["labels_1.npz", "labels_2.npz", "student_0.onnx",
                                                     "student_1.onnx"]
    labels_2 = np.load(gen / "labels_2.npz")["actions"]
    # each generation searched over the network the one before it fitted: the two students play differently
    game = envs.game_class("pishti")(players=2, episode="deal")
    first, second = Bot.load(gen / "student_0.onnx", game=game), Bot.load(gen / "student_1.onnx", game=game)
    st = game.new_state(0)
    obs = st.observation(st.current_player)
    assert not np.allclose(first.logits(obs), second.logits(obs))

    rc = kahve(["train", "--resume", str(out), "--no-progress"])
    resumed = capsys.readouterr().out
    assert rc == 0, resumed
    assert "expert iteration generation 2/2: 1" in resumed and "(cached)" in resumed
    assert "labelled" not in resumed                                  # nothing collected again
    assert np.array_equal(np.load(gen / "labels_2.npz")["actions"], labels_2)
    assert (gen / "student_2.onnx").exists()                        # the network expert iteration ended with
    report = json.loads((out / "pretrain.json").read_text())
    first_gen, second_gen = report["generations"]
    assert first_gen["states"] >= 150 and second_gen["states"] == len(labels_2)
    assert second_gen["fitted_on"] == first_gen["states"] + second_gen["states"]   # every generation's labels
    assert json.loads((out / "summary.json").read_text())["steps"] == 128


def test_the_search_of_expert_iteration_is_checked_when_the_config_loads():
    with pytest.raises(ValueError, match="config key 'pretrain.search'"):
        config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*TINY, "pretrain.search=rollout:x:{student}"])
    with pytest.raises(ValueError, match="set pretrain.steps or init_from too"):
        config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*TINY, "pretrain.steps=0"])


# ----- expert iteration from a bot file (init_from: BOT) -------------------------------------------------------------
FROM_BOT = [*TINY, "pretrain.steps=0", "pretrain.generations=1", "pretrain.search=endgame:4:{student}",
            "init_from=pishti/ppo_2p"]


def test_expert_iteration_goes_on_from_a_bot_files_network(tmp_path):
    out = tmp_path / "run"
    cfg = config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*FROM_BOT, f"output={out}"])
    lines = []
    summary = train(cfg, progress=False, log=lines.append)
    assert not summary["interrupted"] and summary["steps"] == 128
    assert any("the actor starts from the bot file" in line for line in lines)
    assert not any("decisions of" in line for line in lines)                        # no cloning first
    # the first student is the bot file's network, exactly: its actor was loaded whole, the critic is not in it
    game = envs.game_class("pishti")(players=2, episode="deal")
    shipped = Bot.load(ROOT / "checkpoints" / "pishti" / "ppo_2p.onnx", game=game)
    student = Bot.load(out / "generations" / "student_0.onnx", game=game)
    for seed in range(5):
        st = game.new_state(seed)
        obs = st.observation(st.current_player)
        assert np.allclose(shipped.logits(obs), student.logits(obs), atol=1e-4)
    report = json.loads((out / "pretrain.json").read_text())
    assert report["decisions"] == 0 and [g["generation"] for g in report["generations"]] == [1]
    assert report["generations"][0]["states"] >= 150


@pytest.mark.parametrize("overrides,match", [
    (["init_from=pasur/ppo"], "a bot for pasur, not pishti"),
    (["init_from=pishti/dqn_2p"], "from a ppo bot"),
    (["network.hidden=[64]"], "has network.hidden \\[256, 256\\]"),
    (["network.action_features=false"], "action features True"),
    (["pretrain.steps=100"], "pretrain.steps must be 0"),
    (["init_from=nowhere/none"], "not a run folder"),
])
def test_init_from_a_bot_file_is_checked_when_the_config_loads(overrides, match):
    with pytest.raises(ValueError, match=match):
        config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*FROM_BOT, *overrides])
