"""Recipes: a config with stages makes a bot in one command, resumable, and a finished stage is never redone."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from kahve.agents.policies.bot import Bot
from kahve.agents.training import config as config_mod
from kahve.agents.training import recipe as recipe_mod
from kahve.scripts.cli import main as kahve
from tests.helpers import popen_train

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted(p for p in (ROOT / "configs").glob("*/*.yaml") if "stages" in yaml.safe_load(p.read_text()))

#: two tiny stages: cloning then PPO against random, then PPO against the heuristic from the first one's network
TINY = {
    "game": "pishti", "settings": {"players": 2, "episode": "deal", "reward": "points"},
    "n_envs": 2, "vec_env": "dummy", "ppo": {"n_steps": 64, "batch_size": 64},
    "evaluation": {"games": 2, "every": 0, "workers": 1}, "checkpoint_every": 128,
    "opponents": {"pool": [{"policy": "random", "weight": 1}]},
    "stages": [{"name": "clone", "total_timesteps": 256, "pretrain": {"steps": 200, "epochs": 1}},
               {"name": "more", "total_timesteps": 256, "opponents": {"pool": [{"policy": "heuristic"}]}}],
    "bot": {"report": ["random"], "games": 4, "workers": 1},
}


def _write(tmp_path, raw=None, name="tiny.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw or TINY, sort_keys=False))
    return path


def _cli(capsys, *argv):
    rc = kahve(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_recipe_runs_its_stages_in_order_and_ends_with_the_bot_and_its_report(tmp_path, capsys):
    out = tmp_path / "run"
    rc, stdout, err = _cli(capsys, "train", str(_write(tmp_path)), "--no-progress", "--override", f"output={out}")
    assert rc == 0, err
    assert sorted(p.name for p in (out / "stages").iterdir()) == ["01_clone", "02_more"]
    first, second = (json.loads((out / "stages" / s / "summary.json").read_text()) for s in ("01_clone", "02_more"))
    assert first["steps"] == second["steps"] == 256 and first["pretrain_seconds"] > 0 >= second["pretrain_seconds"]
    # the second stage starts from the first one's network, and plays the pool it names
    assert f"the network starts from {out / 'stages' / '01_clone'}" in stdout
    assert yaml.safe_load((out / "stages" / "02_more" / "config.yaml").read_text())["opponents"]["pool"] == \
        [{"policy": "heuristic"}]
    meta = Bot.load(out / "tiny.onnx").metadata
    assert meta["training_steps"] == 512
    assert [s["name"] for s in meta["recipe"]["stages"]] == ["clone", "more"]
    assert meta["recipe"]["command"].startswith("kahve train ") and meta["recipe"]["command"].endswith("tiny.yaml")
    report = (out / "tiny.md").read_text()
    assert f"- command: `{meta['recipe']['command']}` (its recipe)" in report
    assert "  - clone: ppo, 256 steps" in report and "  - more: ppo, 256 steps" in report
    assert "| random | full matches | 4 |" in report


def test_a_resume_never_redoes_a_finished_stage_and_rewrites_the_bot_when_a_stage_trained_on(tmp_path, capsys):
    out = tmp_path / "run"
    assert kahve(["train", str(_write(tmp_path)), "--no-progress", "--override", f"output={out}"]) == 0
    first = out / "stages" / "01_clone" / "summary.json"
    before = first.read_bytes(), first.stat().st_mtime_ns
    bot_before = (out / "tiny.onnx").read_bytes()
    capsys.readouterr()
    rc, stdout, err = _cli(capsys, "train", "--resume", str(out), "--no-progress")   # nothing is left to do
    assert rc == 0, err
    assert "stage 1/2 clone: done" in stdout and "stage 2/2 more: done" in stdout and "training ppo" not in stdout
    assert (out / "tiny.onnx").read_bytes() == bot_before
    rc, stdout, err = _cli(capsys, "train", "--resume", str(out), "--no-progress", "--override",
                           "stages.more.total_timesteps=384")
    assert rc == 0, err
    assert (first.read_bytes(), first.stat().st_mtime_ns) == before          # the first stage was not touched
    assert "resuming" in stdout and "from its checkpoint at 256 steps (of 384)" in stdout
    assert json.loads((out / "stages" / "02_more" / "summary.json").read_text())["steps"] == 384
    assert Bot.load(out / "tiny.onnx").metadata["training_steps"] == 640
    saved = yaml.safe_load((out / "recipe.yaml").read_text())
    assert saved["overrides"] == [f"output={out}", "stages.more.total_timesteps=384"]


def test_bot_name_names_the_bot_file_also_when_given_on_resume(tmp_path, capsys):
    out = tmp_path / "run"
    raw = {**TINY, "bot": {**TINY["bot"], "name": "mine"}}
    assert kahve(["train", str(_write(tmp_path, raw)), "--no-progress", "--override", f"output={out}"]) == 0
    assert (out / "mine.onnx").is_file() and (out / "mine.md").is_file() and not (out / "tiny.onnx").exists()
    assert "# mine.onnx" in (out / "mine.md").read_text()
    capsys.readouterr()
    # renamed on resume: no stage trains again, the bot and its report are written under the new name
    rc, stdout, err = _cli(capsys, "train", "--resume", str(out), "--no-progress", "--override", "bot.name=theirs")
    assert rc == 0, err
    assert "training ppo" not in stdout and (out / "theirs.onnx").is_file() and (out / "theirs.md").is_file()
    assert Bot.load(out / "theirs.onnx").metadata["training_steps"] == 512
    for bad in ("My-Bot", "a" * 101):
        with pytest.raises(ValueError, match="config key 'bot.name'"):
            recipe_mod.load_recipe(_write(tmp_path, {**TINY, "bot": {"name": bad}}, "bad.yaml"))


def test_ctrl_c_in_a_later_stage_then_resume_goes_on_from_its_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    raw = {**TINY, "stages": [TINY["stages"][0], {**TINY["stages"][1], "total_timesteps": 10_000_000}]}
    proc = popen_train([str(_write(tmp_path, raw)), "--no-progress", "--override", f"output={out}"], tmp_path)
    state = out / "stages" / "02_more" / "checkpoints" / "latest" / "state.json"
    while not state.exists() and proc.poll() is None:
        time.sleep(0.2)
    assert state.exists(), proc.communicate()[1][-3000:]
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and f"kahve train --resume {out}" in stdout
    assert not (out / "tiny.onnx").exists()
    steps = json.loads((out / "stages" / "02_more" / "summary.json").read_text())["steps"]
    rc, stdout, err = _cli(capsys, "train", "--resume", str(out), "--no-progress", "--override",
                           f"stages.more.total_timesteps={steps + 128}")
    assert rc == 0, err
    assert "stage 1/2 clone: done" in stdout and f"from its checkpoint at {steps:,} steps" in stdout
    assert Bot.load(out / "tiny.onnx").metadata["training_steps"] == 256 + steps + 128


@pytest.mark.parametrize("edit,match", [
    (lambda r: r.update(stages=[]), "'stages': expected a list of stages"),
    (lambda r: r["stages"][1].pop("name"), r"'stages\[1\].name': expected a name"),
    (lambda r: r["stages"][1].update(name="Clone Two"), r"'stages\[1\].name': expected a name"),
    (lambda r: r["stages"][1].update(name="clone"), "two stages are named 'clone'"),
    (lambda r: r["stages"][1].update(pretrain={"steps": 100}), "stage 'more': starts from the previous stage's "
                                                               "network, so it clones no teacher"),
    (lambda r: r["stages"][1].update(network={"hidden": [64]}), "stage 'more': .* network.hidden must be the same"),
    (lambda r: r["stages"][1].update(ppo={"n_step": 3}), "stage 'more': unknown config key 'ppo.n_step'"),
    (lambda r: r["stages"][0].update(bot={}), r"'stages\[0\].bot': belongs at the recipe's top level"),
    (lambda r: r.update(bot={"levels": 10, "report": []}), "'bot.levels': the levels are a section of the report"),
    (lambda r: r.update(bot={"gams": 10}), "unknown config key 'bot.gams'"),
])
def test_recipe_errors_name_the_stage_and_key(tmp_path, edit, match):
    raw = json.loads(json.dumps(TINY))
    edit(raw)
    with pytest.raises(ValueError, match=match):
        recipe_mod.load_recipe(_write(tmp_path, raw))


def test_overrides_reach_one_stage_or_every_stage_that_does_not_set_the_key(tmp_path):
    recipe = recipe_mod.load_recipe(_write(tmp_path), ["seed=5", "stages.more.ppo.learning_rate=0.001",
                                                       "stages.clone.seed=9"])
    clone, more = recipe.stages
    assert (clone.cfg["seed"], more.cfg["seed"]) == (9, 5)
    assert more.cfg["ppo"]["learning_rate"] == 0.001 != clone.cfg["ppo"]["learning_rate"]
    with pytest.raises(ValueError, match="the recipe has no stage 'other'"):
        recipe_mod.load_recipe(_write(tmp_path), ["stages.other.seed=1"])
    with pytest.raises(ValueError, match="stages.NAME.KEY=VALUE"):
        recipe_mod.load_recipe(_write(tmp_path), ["stages.more=1"])


def test_a_stage_from_a_shipped_config_takes_its_keys_under_the_recipe_s_and_its_own(tmp_path):
    shipped = config_mod.load("pishti/dqn")
    raw = {"seed": 4, "stages": [{"name": "dqn", "from": "pishti/dqn", "total_timesteps": 512}]}
    recipe = recipe_mod.load_recipe(_write(tmp_path, raw, name="dqn_2p.yaml"))
    cfg = recipe.stages[0].cfg
    assert cfg["game"] == "pishti" and cfg["algorithm"] == "dqn" and cfg["dqn"] == shipped["dqn"]
    assert cfg["pretrain"] == shipped["pretrain"] and cfg["settings"] == shipped["settings"]
    assert (cfg["seed"], cfg["total_timesteps"]) == (4, 512) != (shipped["seed"], shipped["total_timesteps"])
    assert recipe.root == Path("runs/pishti_dqn_2p") and cfg["output"] == str(recipe.root / "stages" / "01_dqn")
    for name, match in [("pishti/dqm", "'pishti/dqm' is not a shipped config; did you mean pishti/dqn"),
                        ("pishti/ppo_2p", "pishti/ppo_2p is a recipe")]:
        raw["stages"][0]["from"] = name
        with pytest.raises(ValueError, match=r"'stages\[0\].from': " + match):
            recipe_mod.load_recipe(_write(tmp_path, raw))


def test_a_recipe_is_not_read_as_a_plain_config(tmp_path):
    with pytest.raises(ValueError, match="is a recipe .* run it with kahve train"):
        config_mod.load(_write(tmp_path))


@pytest.mark.parametrize("path", RECIPES, ids=[f"{p.parent.name}/{p.name}" for p in RECIPES])
def test_shipped_recipes_are_valid_and_name_their_bot(path):
    recipe = recipe_mod.load_recipe(path)
    assert recipe.command == f"kahve train configs/{path.parent.name}/{path.name}"
    assert recipe.stages[0].cfg["game"] == path.parent.name and recipe.bot["report"]
    assert (ROOT / "checkpoints" / path.parent.name / recipe.bot_file.name).is_file()   # the bot it makes ships
    assert recipe.bot_file.name == f"{recipe.bot['name'] or path.stem}.onnx"
