"""Config errors that used to surface late (after training) or as tracebacks: each is a one-line ``ValueError``
naming the key, before any work starts (issue 16)."""

from __future__ import annotations

import re

import pytest

from kahve.agents.training import config as config_mod

PISHTI = {"game": "pishti", "settings": {"players": 2}}


@pytest.mark.parametrize("raw,match", [
    ({"game": "pishti", "settings": {1: 2}}, "'settings': setting names are words.*got 1"),
    ({"game": "pishti", "evaluation": {"settings": {None: 2}}}, "'evaluation.settings': setting names"),
    ({**PISHTI, "output": "runs/{gamez}"}, "'output': 'runs/\\{gamez\\}' cannot be expanded.*\\{game\\}"),
    ({**PISHTI, "output": "runs/{0}"}, "'output': 'runs/\\{0\\}' cannot be expanded"),
    ({**PISHTI, "output": "runs/{game"}, "'output'.*cannot be expanded"),
    ({**PISHTI, "output": ""}, "'output': empty"),
    ({**PISHTI, "output": "   "}, "'output': empty"),
    ({**PISHTI, "output": "/dev/null"}, "'output': /dev/null exists and is not a folder"),
    ({**PISHTI, "output": "/dev/null/run"}, "'output': /dev/null exists and is not a folder"),
    ({**PISHTI, "evaluation": {"settings": {"players": 4}}},
     "'evaluation.settings': players=4.* changes the observations or actions.*players=2"),
    ({**PISHTI, "opponents": {"pool": [{"policy": "random", "weight": float("nan")}]}},
     "opponents.pool\\[0\\].weight': expected a positive number, got nan"),
    ({**PISHTI, "opponents": {"pool": [{"policy": "random", "weight": float("inf")}]}},
     "opponents.pool\\[0\\].weight': expected a positive number, got inf"),
    ({**PISHTI, "opponents": {"self_play": {"weight": float("nan")}}}, "self_play.weight': nan is out of range"),
    # a snapshot of weight 0 used to pass here and stop the run at its first snapshot
    ({**PISHTI, "opponents": {"self_play": {"every": 1000, "weight": 0}}}, "self_play.weight': 0.0 is out of range"),
    ({**PISHTI, "network": {"hidden": [65536] * 16}}, "'network.hidden': .* needs about .* GB of memory"),
    ({**PISHTI, "backend": "rllib", "opponents": {"league": {"weighting": "pfsp"}}},
     "'opponents.league.weighting': league weights are implemented for backend sb3 only"),
    ({**PISHTI, "opponents": {"league": {"weighting": "elo"}}}, "'opponents.league.weighting': 'elo' is not allowed"),
    ({**PISHTI, "opponents": {"league": {"floor": 0}}}, "'opponents.league.floor': 0.0 is out of range"),
    ({**PISHTI, "pretrain": {"steps": 1000, "generations": 2, "search": "rollout:16:{studnet}"}},
     "'pretrain.search'"),
])
def test_config_errors_name_the_key_before_any_work(raw, match):
    with pytest.raises(ValueError, match=match):
        config_mod.resolve(raw)


def test_evaluation_may_change_how_matches_are_played():
    cfg = config_mod.resolve({**PISHTI, "evaluation": {"settings": {"episode": "match", "target_score": 101}}})
    assert cfg["evaluation"]["settings"]["target_score"] == 101


def test_sizes_that_cannot_be_allocated_are_refused(monkeypatch):
    monkeypatch.setattr(config_mod, "machine_memory", lambda: 2**30)          # a machine with 1 GB
    config_mod.resolve({**PISHTI, "network": {"hidden": [256, 256]}})           # the shipped sizes fit
    with pytest.raises(ValueError, match="'network.hidden': \\[4096, 4096, 4096\\] needs about .*1.0 GB of memory"):
        config_mod.resolve({**PISHTI, "network": {"hidden": [4096, 4096, 4096]}})
    with pytest.raises(ValueError, match="'dqn.buffer_size': 10000000 needs about"):
        config_mod.resolve({**PISHTI, "algorithm": "dqn", "dqn": {"buffer_size": 10_000_000}})
    with pytest.raises(ValueError, match="'pretrain.steps': 5000000 needs about"):
        config_mod.resolve({**PISHTI, "pretrain": {"steps": 5_000_000}})
    with pytest.raises(ValueError, match="'ppo.n_steps': 1000000 needs about"):
        config_mod.resolve({**PISHTI, "n_envs": 16, "ppo": {"n_steps": 1_000_000}})


def test_weights_written_in_yaml_as_nan_or_inf_are_refused(tmp_path):
    for text in (".nan", ".inf", "-.inf"):
        f = tmp_path / "c.yaml"
        f.write_text(f"game: pishti\nopponents:\n  pool: [{{policy: random, weight: {text}}}]\n")
        with pytest.raises(ValueError, match="opponents.pool\\[0\\].weight': expected a positive number"):
            config_mod.load(f)


def test_duplicate_yaml_keys_are_refused(tmp_path):
    f = tmp_path / "dup.yaml"
    f.write_text("game: pishti\nseed: 1\nppo: {n_steps: 64}\nseed: 2\n")
    with pytest.raises(ValueError, match=f"{f}: not valid YAML.*duplicate key 'seed' \\(first given on line 2\\)"):
        config_mod.load(f)
    f.write_text("game: pishti\nppo:\n  n_steps: 64\n  n_steps: 128\n")
    with pytest.raises(ValueError, match="duplicate key 'n_steps'"):
        config_mod.load(f)
    with pytest.raises(ValueError, match="duplicate key 'players'"):
        config_mod.apply_overrides({}, ["settings={players: 2, players: 4}"])
    f.write_text("base: &b {n_steps: 64}\n")                     # anchors and merges still work
    assert config_mod.read_yaml("a: &b {x: 1}\nc: {<<: *b, y: 2}\n", "t") == {"a": {"x": 1}, "c": {"x": 1, "y": 2}}


def test_yaml_that_would_build_python_objects_is_refused(tmp_path):
    f = tmp_path / "evil.yaml"
    marker = tmp_path / "MARKER"
    f.write_text(f"game: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        config_mod.load(f)
    assert not marker.exists()


# the shipped bots' runs and older run folders wrote these keys, at these values, into config.yaml
RETIRED_AT_DEFAULT = {"network": {"hidden": [64], "move_layer": 0, "critic": "observation"},
                      "pretrain": {"generation_learning_rate": 0.0}}


def test_a_saved_config_with_removed_keys_at_their_old_defaults_still_resumes_and_exports():
    saved = {**PISHTI, **RETIRED_AT_DEFAULT}
    for cfg in (config_mod.resolve(saved), config_mod.for_resume(saved, ["total_timesteps=5000"]),
                config_mod.saved_config(saved)):
        assert "critic" not in cfg["network"] and "move_layer" not in cfg["network"]
        assert "generation_learning_rate" not in cfg["pretrain"] and cfg["network"]["hidden"] == [64]


@pytest.mark.parametrize("key,value", [("network.critic", "hands"), ("network.move_layer", 8),
                                       ("pretrain.generation_learning_rate", 1e-4)])
def test_a_removed_key_at_another_value_is_a_one_line_error(key, value):
    section, name = key.split(".")
    match = re.escape(f"config key '{key}': removed from kahve; {value!r} is no longer supported")
    for load in (lambda: config_mod.resolve({**PISHTI, section: {name: value}}),
                 lambda: config_mod.resolve(config_mod.apply_overrides(PISHTI, [f"{key}={value}"])),
                 lambda: config_mod.saved_config({**PISHTI, section: {name: value}})):
        with pytest.raises(ValueError, match=match) as err:
            load()
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=f"^config.yaml: config key '{key}': removed"):
        config_mod.for_resume({**PISHTI, section: {name: value}}, [], source="config.yaml")


# ----- what a crafted config can make kahve do: bounded, one line each --------------------------------------------
def test_an_alias_bomb_deep_nesting_and_an_endless_file_are_refused_in_one_line(tmp_path):
    import time
    from kahve.agents.training import config as config_mod
    bomb = "game: pishti\nx0: &x0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"x{i + 1}: &x{i + 1} [" + ", ".join([f"*x{i}"] * 10) + "]\n" for i in range(8)) + "network: {hidden: *x8}\n"
    deep = "game: pishti\nseed: " + "[" * 50_000 + "]" * 50_000 + "\n"
    started = time.process_time()
    for text, match in ((bomb, "more than 100,000 values"), (deep, "nested deeper than 50 levels")):
        path = tmp_path / "c.yaml"
        path.write_text(text)
        with pytest.raises(ValueError, match=match) as err:
            config_mod.load(path)
        assert "\n" not in str(err.value) and len(str(err.value)) < 500
    with pytest.raises(ValueError, match="nested deeper than 50 levels"):
        config_mod.apply_overrides({"game": "pishti"}, ["seed=" + "[" * 50_000 + "]" * 50_000])
    with pytest.raises(ValueError, match="not a regular file"):
        config_mod.load("/dev/zero")
    (tmp_path / "big.yaml").write_text("game: pishti\n" + "# padding\n" * 200_000)
    with pytest.raises(ValueError, match="larger than 1,048,576 bytes"):
        config_mod.load(tmp_path / "big.yaml")
    assert time.process_time() - started < 60          # (bounded work: each was refused before it was built)


def test_error_messages_quote_a_huge_value_in_part_and_a_network_has_at_most_16_layers():
    from kahve.agents.training import config as config_mod
    with pytest.raises(ValueError, match="expected int") as err:
        config_mod.resolve({"game": "pishti", "seed": "x" * 100_000})
    assert len(str(err.value)) < 300
    with pytest.raises(ValueError, match="20,000 layers; at most 16"):
        config_mod.resolve({"game": "pishti", "network": {"hidden": [8] * 20_000}})


# ----- GPUs asked for on the RLlib path: checked against torch before Ray starts ------------------------------------
RLLIB = {**PISHTI, "backend": "rllib", "network": {"action_features": False}}


def _cuda(monkeypatch, devices: int):
    """A machine whose torch sees ``devices`` CUDA devices (0: none)."""
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: devices > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: devices)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "a mocked GPU")


@pytest.mark.parametrize("rllib,match", [
    # the learner in the driver (num_learners 0): RLlib used to fail after Ray started, with an AssertionError
    ({"num_gpus_per_learner": 1}, "the learner trains in this process"),
    ({"num_gpus_per_learner": 0.25}, "the learner trains in this process"),
    # ... which runs on this machine even where the env runners are a cluster's
    ({"num_gpus_per_learner": 1, "address": "auto"}, "on this machine even with rllib.address 'auto'"),
    # learner actors of a local Ray instance (RLlib would wait for a GPU that never comes)
    ({"num_gpus_per_learner": 0.5, "num_learners": 2}, "rllib.num_learners 2 on a local Ray instance"),
])
def test_rllib_gpus_on_a_machine_without_cuda_are_a_one_line_error_naming_the_key(monkeypatch, rllib, match):
    _cuda(monkeypatch, 0)
    value = float(rllib["num_gpus_per_learner"])
    with pytest.raises(ValueError, match=f"^config key 'rllib.num_gpus_per_learner': {re.escape(repr(value))}, "
                                         f"but torch .*(without CUDA|finds no CUDA).*{re.escape(match)}") as err:
        config_mod.resolve({**RLLIB, "rllib": rllib})
    assert "\n" not in str(err.value) and "set it to 0" in str(err.value)
    # the override of `kahve train` and a resume are refused the same way
    overrides = [f"rllib.{k}={v}" for k, v in rllib.items()]
    with pytest.raises(ValueError, match="'rllib.num_gpus_per_learner'"):
        config_mod.resolve(config_mod.apply_overrides(RLLIB, overrides))
    with pytest.raises(ValueError, match="'rllib.num_gpus_per_learner'"):
        config_mod.for_resume(RLLIB, overrides)


def test_rllib_gpus_that_need_no_local_cuda_pass(monkeypatch):
    _cuda(monkeypatch, 0)
    config_mod.resolve({**RLLIB, "rllib": {"num_gpus_per_learner": 0}})
    # learner actors on a cluster: Ray places them where its GPUs are, on other machines maybe (not checked here)
    config_mod.resolve({**RLLIB, "rllib": {"num_gpus_per_learner": 1, "num_learners": 2, "address": "auto"}})
    # the sb3 backend never reads the rllib section
    config_mod.resolve({**PISHTI, "rllib": {"num_gpus_per_learner": 1}})


def test_rllib_gpus_are_counted_against_the_cuda_devices_torch_sees(monkeypatch):
    _cuda(monkeypatch, 1)
    for fits in ({"num_gpus_per_learner": 1}, {"num_gpus_per_learner": 1, "num_learners": 1},
                 {"num_gpus_per_learner": 0.5, "num_learners": 2}, {"num_gpus_per_learner": 0.25, "num_learners": 4}):
        assert config_mod.resolve({**RLLIB, "rllib": fits})["rllib"]["num_gpus_per_learner"] > 0
    for rllib, need in (({"num_gpus_per_learner": 1, "num_learners": 2}, 2),
                        ({"num_gpus_per_learner": 0.5, "num_learners": 3}, 2),     # two halves share a GPU
                        ({"num_gpus_per_learner": 0.4, "num_learners": 3}, 2),     # two 0.4s, not three, fit one
                        ({"num_gpus_per_learner": 2, "num_learners": 1}, 2)):
        with pytest.raises(ValueError, match=f"^config key 'rllib.num_gpus_per_learner': .* with rllib.num_learners "
                                             f"{rllib['num_learners']} needs {need} GPUs, but torch sees 1 CUDA "
                                             "device on this machine;"):
            config_mod.resolve({**RLLIB, "rllib": rllib})
    _cuda(monkeypatch, 4)
    config_mod.resolve({**RLLIB, "rllib": {"num_gpus_per_learner": 2, "num_learners": 2}})
