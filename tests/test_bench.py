"""``kahve bench`` runs end to end on a tiny budget and reports what it says it measures (speed itself is
measured by the benchmark, never asserted here)."""

from __future__ import annotations

import json

from kahve.agents.evaluation import bench
from kahve.scripts.cli import main


def test_bench_reports_every_figure_as_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "pishti", "ish", "--seconds", "0.05", "--repeats", "1", "--no-peers",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["games"]) == {"pishti", "ish"}
    for row in data["games"].values():
        for key in ("engine", "aec", "learner_env"):
            assert row[key]["per_s"] > 0 and row[key]["min"] <= row[key]["per_s"] <= row[key]["max"]
        assert row["aec_vs_ceiling"] > 0
    assert data["games"]["pishti"]["engine_vs_pishti"] == 1.0
    # each game is also held to a do-nothing env of its own shape: Ish deals 4 seats 2 decisions each
    ish = data["games"]["ish"]
    assert ish["shape"]["players"] == 4 and ish["shape"]["decisions_per_episode"] == 8
    assert ish["aec_vs_shape_ceiling"] == ish["aec"]["per_s"] / ish["shape"]["ceiling_per_s"]
    # an appraised game's AEC loop is also measured with the plain observation; a game without an appraisal's not
    assert data["games"]["pishti"]["aec_plain"]["per_s"] > 0 and data["games"]["pishti"]["aec_plain_vs_ceiling"] > 0
    assert "aec_plain" not in data["games"]["ish"]
    assert "do-nothing AEC env (same wrapper and loop)" in data["references"]
    out = capsys.readouterr().out
    assert "per-move engine speed relative to Pişti" in out
    assert "(plain observation)" in out and "of its shape's" in out


def test_ppo_measure_times_whole_cycles_of_a_shipped_config():
    tiny = ["n_envs=8", "ppo.n_steps=16", "ppo.batch_size=64", "ppo.n_epochs=1", "network.hidden=[32]"]
    for layout in ("dummy", "batched"):
        r = bench.ppo_measure("ish", 1, tiny + [f"vec_env={layout}", "async_rollouts=false"])
        assert r["per_s"] > 0 and 0 < r["env_share"] < 1 and r["config"]["vec_env"] == layout
        assert r["collector_busy"] == 0
    # async_rollouts: the env share is the learner's wait for the collector, whose own time is counted apart
    r = bench.ppo_measure("ish", 1, tiny + ["async_rollouts=true"])
    assert r["per_s"] > 0 and 0 <= r["env_share"] < 1 and 0 < r["collector_busy"] and r["config"]["async_rollouts"]



def test_the_do_nothing_env_of_any_shape_is_a_pettingzoo_env():
    from pettingzoo.test import api_test
    api_test(bench.NullEnv(episode_length=5, players=3), num_cycles=20)
    env = bench.NullEnv(episode_length=5, players=3)
    env.reset()
    seen = []
    for agent in env.agent_iter():
        seen.append(agent)
        env.step(None if env.terminations[agent] else 0)
    # five decisions in turn, then each seat's dead step
    assert seen == ["player_0", "player_1", "player_2", "player_0", "player_1"] + ["player_2", "player_0", "player_1"]


def test_bench_measures_the_shared_layout_with_one_worker_and_one_per_core(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", "pishe_pasha", "--seconds", "0.05", "--repeats", "1", "--no-peers", "--scaling",
                 "--json", str(out)]) == 0
    r = json.loads(out.read_text())["games"]["pishe_pasha"]["shared_scaling"]
    one, every = r["workers"]["1"], r["workers"][str(r["cores"])]
    assert r["cores"] >= 1 and one["per_s"] > 0 and every["per_s"] > 0
    assert r["ratio"] == every["per_s"] / one["per_s"]
