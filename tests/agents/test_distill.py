"""Distill stages (agents/training/distill.py): a recipe that labels with the heuristic and a search, fits, and goes
on from its own network; labels are the base's moves except where the search changed a late one; a job's labels are
one stream (resumed, or made in worker processes, they are the same); a label file made by another job is labelled
again; Ctrl-C keeps the labels and --resume finishes the stage; the section's errors name the key."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from kahve import envs
from kahve.agents.policies.bot import Bot
from kahve.agents.policies.specs import bot_path
from kahve.agents.training import config as config_mod
from kahve.agents.training import distill
from kahve.agents.training.game_knowledge import late_positions
from kahve.agents.training import recipe as recipe_mod
from kahve.agents.training.run_dir import RunDir
from kahve.envs.pis_yedili.rules import FIRST_ROUND
from kahve.scripts.cli import main as kahve
from tests.helpers import HANG_S, popen_train

GAME = {"game": "pis_yedili", "settings": {"players": 2}, "network": {"hidden": [32, 32], "activation": "tanh"}}
FIRST = {"name": "first", "kind": "distill",
         "distill": {"labels": [{"seed": 1, "count": 300, "worlds": 0},
                                {"seed": 2, "count": 120, "worlds": 2, "late_only": True}],
                     "fit": {"epochs": 1}}}
SECOND = {"name": "second", "kind": "distill",
          "distill": {"labels": [{"seed": 3, "count": 200, "worlds": 0, "base": "previous"},
                                 {"seed": 4, "count": 80, "worlds": 2, "base": "previous"},
                                 {"seed": 5, "count": 40, "worlds": 2, "base": "previous", "late_only": True}],
                      "fit": {"epochs": 1}, "workers": 2}}
TINY = {**GAME, "stages": [FIRST, SECOND], "bot": {"report": ["random"], "games": 4, "workers": 1}}


def _write(tmp_path, raw, name="tiny.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _cfg(tmp_path, **more) -> dict:
    return config_mod.resolve({**GAME, "output": str(tmp_path / "stage"), **more})


def _job(cfg, **entry) -> dict:
    """A labelling job as distill.run makes it (a first job of worlds 0 beside it, as check() wants)."""
    section = distill.check({"labels": [{"seed": 0, "count": 1, "worlds": 0}, entry]}, cfg, first=False)
    return distill.jobs_of(cfg, section)[1]


def _label(tmp_path, cfg, name, **entry) -> dict:
    path = tmp_path / f"{name}.npz"
    distill.label_job(_job(cfg, **entry), path)
    return distill.read_labels(path)


# ----- the suit symmetry --------------------------------------------------------------------------------------
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
    symmetry = late_positions("pis_yedili").symmetry
    rng, draws = random.Random(4), np.random.default_rng(4)
    checked = first_round = 0
    for seed in range(12):
        state = game.new_state(seed)
        while state.current_player is not None and state.deals_completed == 0:
            seat = state.current_player
            obs = state.observation(seat)
            exempt = not bool(symmetry.applies(obs[None])[0])
            assert exempt == (state.phase == FIRST_ROUND)          # round 1: clubs only (PY-9), no symmetry
            first_round += exempt
            if not exempt and rng.random() < 0.3:
                obs_source, action_source = symmetry.draw(draws)
                # which renaming of the suits it drew: where the first card of each suit went
                perm = [int(np.flatnonzero(obs_source[:52] == 13 * s)[0]) // 13 for s in range(4)]
                other = permuted_state(state, perm)
                assert np.array_equal(obs[obs_source], other.observation(seat))
                assert np.array_equal(state.legal_mask()[action_source], other.legal_mask())
                assert sorted(int(np.flatnonzero(action_source == a)[0]) for a in state.legal_actions()) \
                    == other.legal_actions()
                checked += 1
            state.apply(rng.choice(state.legal_actions()))
    assert checked >= 50 and first_round >= 5


# ----- labels ---------------------------------------------------------------------------------------------------
def test_labels_are_the_base_move_except_where_the_search_changed_a_late_one(tmp_path):
    cfg = _cfg(tmp_path)
    plain = _label(tmp_path, cfg, "plain", seed=7, count=200, worlds=0)
    searched = _label(tmp_path, cfg, "searched", seed=7, count=200, worlds=2)
    # the base plays every move, so the search changes the labels, never the positions
    for key in ("obs", "masks", "base", "late", "deal", "step"):
        assert np.array_equal(plain[key], searched[key]), key
    assert np.array_equal(plain["actions"], plain["base"]) and not plain["dev"].any()
    actions, base, late, dev = searched["actions"], searched["base"], searched["late"], searched["dev"]
    assert np.array_equal(actions[~late], base[~late])                 # early: the base's move
    assert np.array_equal(dev, actions != base) and dev.any() and not (dev & ~late).any()
    assert (searched["gain"][dev] > 0).all() and (searched["gain"][~dev] == 0).all()
    assert searched["masks"][np.arange(200), actions].all()            # every label is a legal move
    assert searched["masks"].sum(1).min() >= 2                           # only real choices are labelled
    assert 0 < late.mean() < 1
    only = _label(tmp_path, cfg, "late_only", seed=7, count=50, worlds=2, late_only=True)
    assert only["late"].all()
    assert np.array_equal(only["obs"], searched["obs"][late][:50])     # the same positions, the early ones left out


def test_a_network_as_the_base_plays_the_deals_and_its_moves_are_the_labels_the_search_keeps(tmp_path):
    cfg = _cfg(tmp_path)
    labels = _label(tmp_path, cfg, "net", seed=2, count=60, worlds=2, base="pis_yedili/distilled_2p")
    bot = Bot.load(bot_path("pis_yedili/distilled_2p"))
    greedy = np.where(labels["masks"], bot.batch_logits(labels["obs"]), -np.inf).argmax(1)
    dev = labels["dev"]
    assert np.array_equal(labels["base"], greedy)
    assert np.array_equal(labels["actions"][~dev], greedy[~dev]) and (labels["actions"][dev] != greedy[dev]).all()
    assert dev.any()


def test_a_job_resumed_or_given_more_count_writes_the_labels_of_an_uninterrupted_one(tmp_path):
    cfg = _cfg(tmp_path)
    whole = _label(tmp_path, cfg, "whole", seed=9, count=150, worlds=2)
    path = tmp_path / "grown.npz"
    distill.label_job(_job(cfg, seed=9, count=70, worlds=2), path)
    assert len(distill.read_labels(path)["actions"]) == 70
    distill.label_job(_job(cfg, seed=9, count=150, worlds=2), path)      # goes on from row 70, mid-deal
    grown = distill.read_labels(path)
    for key in distill.ROWS:
        assert np.array_equal(whole[key], grown[key]), key
    distill.label_job(_job(cfg, seed=9, count=40, worlds=2), path)       # a lower count cuts the file
    assert np.array_equal(distill.read_labels(path)["actions"], whole["actions"][:40])


def test_with_tables_a_job_deals_them_in_turn(tmp_path):
    from kahve.agents.policies.base import decide
    from kahve.agents.policies.rollout import reseed
    from kahve.agents.policies.specs import make_policy
    cfg = _cfg(tmp_path, settings={"players": 4}, tables=[{"players": 3}])
    labels = _label(tmp_path, cfg, "tables", seed=11, count=400, worlds=0)
    assert labels["job"]["tables"] == [envs.game_class("pis_yedili")(players=n).settings.as_dict() for n in (4, 3)]
    deals = sorted(set(labels["deal"].tolist()))
    assert {d % 2 for d in deals} == {0, 1}
    for d in deals[:4]:                   # each deal replayed at table d mod 2 gives the labelled observations
        game = envs.game_class("pis_yedili")(players=(4, 3)[d % 2])
        state, base = game.new_state(distill.seed_of(11, d)), make_policy("heuristic", game, 11)
        reseed(base, distill.seed_of(11, d))
        rows = {int(s): i for i, s in enumerate(labels["step"]) if labels["deal"][i] == d}
        step = 0
        while state.current_player is not None and state.deals_completed == 0:
            if step in rows:
                assert np.array_equal(labels["obs"][rows[step]], state.observation(state.current_player))
            state.apply(decide(base, state))
            step += 1
        assert rows and max(rows) < step


def test_the_label_file_is_saved_while_a_job_runs(tmp_path, monkeypatch):
    saves = []
    save = distill._save_labels
    monkeypatch.setattr(distill, "SAVE_EVERY_S", 0)
    monkeypatch.setattr(distill, "_save_labels", lambda path, rows, n, job, s: (saves.append(n),
                                                                                 save(path, rows, n, job, s)))
    distill.label_job(_job(_cfg(tmp_path), seed=9, count=30, worlds=2), tmp_path / "l.npz")
    assert saves == list(range(1, 31)) + [30]


# ----- the stage, through kahve train ---------------------------------------------------------------------------
def test_a_recipe_distills_from_the_heuristic_then_from_its_own_network(tmp_path, capsys):
    out = tmp_path / "run"
    assert kahve(["train", str(_write(tmp_path, TINY)), "--no-progress", "--override", f"output={out}"]) == 0
    stdout = capsys.readouterr().out
    first, second = (RunDir(out / "stages" / s) for s in ("01_first", "02_second"))
    net = first.root / distill.BOT_FILE
    summaries = [json.loads(r.summary.read_text()) for r in (first, second)]
    assert all(not s["interrupted"] and s["steps"] > 0 for s in summaries)
    # the first stage fits its first job's early decisions and every label of the second job
    one = [distill.read_labels(first.root / f"labels_0{k}.npz") for k in (1, 2)]
    assert summaries[0]["steps"] == int((~one[0]["late"]).sum()) + 120
    # the second searches over the first one's network, in two processes, and starts from it
    job = distill.read_labels(second.root / "labels_02.npz")["job"]
    assert job["base"] == str(net.resolve()) and job["base_sha256"] == distill._file_hash(net)
    assert f"the network starts from {net}" in stdout and "labelling 3 jobs in 2 processes" in stdout
    cfg = {**recipe_mod.load_recipe(_write(tmp_path, TINY)).stages[1].cfg, "init_from": str(net)}
    here = tmp_path / "here.npz"                   # the same job in this process: the same labels
    distill.label_job(distill.jobs_of(cfg, distill.check(SECOND["distill"], cfg, first=False))[1], here)
    assert np.array_equal(distill.read_labels(here)["actions"],
                          distill.read_labels(second.root / "labels_02.npz")["actions"])
    bot = Bot.load(out / "tiny.onnx")
    assert bot.metadata["algorithm"] == "distilled"
    assert bot.metadata["training_steps"] == summaries[0]["steps"] + summaries[1]["steps"]
    assert [s["algorithm"] for s in bot.metadata["recipe"]["stages"]] == ["distill", "distill"]
    state = envs.game_class("pis_yedili")(players=2).new_state(3)
    assert state.legal_mask()[bot.act(state.observation(state.current_player), state.legal_mask())]
    assert "| random | full matches | 4 |" in (out / "tiny.md").read_text()
    # a PPO run can start from a distilled network
    config_mod.resolve({**GAME, "init_from": str(net), "output": str(tmp_path / "ppo")})


def test_a_label_file_made_by_another_job_is_labelled_again(tmp_path):
    cfg, run = _cfg(tmp_path), RunDir(tmp_path / "stage")
    section = distill.check(FIRST["distill"], cfg, first=True)
    logs = []
    distill.run(cfg, section, run, progress=False, log=logs.append)
    files = [run.root / f"labels_0{k}.npz" for k in (1, 2)]
    before = [(f.stat().st_mtime_ns, distill.read_labels(f)["obs"]) for f in files]
    logs.clear()
    distill.run(cfg, section, run, progress=False, log=logs.append)        # the same jobs: nothing is labelled
    assert [f.stat().st_mtime_ns for f in files] == [b[0] for b in before]
    assert sum("(done before)" in line for line in logs) == 2
    changed = json.loads(json.dumps(FIRST["distill"]))
    changed["labels"][1]["z"] = 1.0
    logs.clear()
    distill.run(cfg, distill.check(changed, cfg, first=True), run, progress=False, log=logs.append)
    assert files[0].stat().st_mtime_ns == before[0][0]
    assert any("labels_02.npz was made by another job; labelling it again" in line for line in logs)
    assert distill.read_labels(files[1])["job"]["z"] == 1.0
    # a later stage's labels over the network before it are made again when that network changed
    later = _cfg(tmp_path, init_from=str(run.root / distill.BOT_FILE))
    job = _job(later, seed=1, count=5, worlds=0, base="previous")
    assert job["base_sha256"] == distill._file_hash(run.root / distill.BOT_FILE)


def test_a_fit_from_a_network_starts_from_it_and_refuses_another_shape(tmp_path):
    cfg, run = _cfg(tmp_path), RunDir(tmp_path / "stage")
    distill.run(cfg, distill.check(FIRST["distill"], cfg, first=True), run, progress=False, log=lambda *a: None)
    start = run.root / distill.BOT_FILE
    no_epoch = {"labels": FIRST["distill"]["labels"], "fit": {"epochs": 0, "seed": 5}}
    obs = distill.read_labels(run.root / "labels_01.npz")["obs"]
    for source in (start, run.root):        # a bot file, or a run folder (its policy.npz), as a recipe passes them
        cfg2, again = {**cfg, "init_from": str(source)}, RunDir(tmp_path / f"again_{source.name}")
        distill.run(cfg2, distill.check(no_epoch, cfg2, first=False), again, progress=False, log=lambda *a: None)
        assert np.allclose(Bot.load(start).batch_logits(obs), Bot.load(again.root / distill.BOT_FILE).batch_logits(obs),
                           atol=1e-5)
    other = config_mod.resolve({**GAME, "network": {"hidden": [16]}, "output": str(tmp_path / "x")})
    other["init_from"] = str(start)
    with pytest.raises(ValueError, match=r"config key 'init_from': .* has network.hidden \[32, 32\]"):
        distill.run(other, distill.check(no_epoch, other, first=False), RunDir(tmp_path / "x"), progress=False,
                    log=lambda *a: None)


def test_early_share_fits_a_part_of_the_first_jobs_early_decisions(tmp_path):
    cfg = _cfg(tmp_path)
    early = _label(tmp_path, cfg, "early", seed=1, count=400, worlds=0)
    counts = []
    for share in (1.0, 0.5):
        section = distill.check({"labels": [{"seed": 1, "count": 400, "worlds": 0}],
                                 "fit": {"epochs": 0, "early_share": share}}, cfg, first=True)
        counts.append(distill.fit(cfg, section, [early], log=lambda *a: None, progress=False)[1])
    assert counts[0] == int((~early["late"]).sum())                   # its late decisions are never fitted
    assert 0.3 * counts[0] < counts[1] < 0.7 * counts[0]


def test_ctrl_c_while_labelling_keeps_the_labels_and_resume_finishes_the_stage(tmp_path, capsys):
    out = tmp_path / "run"
    slow = json.loads(json.dumps(FIRST))
    slow["distill"]["labels"][1].update(count=100_000, worlds=4)       # an hour: it is stopped long before
    proc = popen_train([str(_write(tmp_path, {**GAME, "stages": [slow], "bot": {"report": []}})), "--no-progress",
                        "--override", f"output={out}"], tmp_path)
    stage = out / "stages" / "01_first"
    deadline = time.monotonic() + HANG_S
    while not (stage / "labels_01.npz").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (stage / "labels_01.npz").exists(), proc.communicate()[1][-3000:]
    time.sleep(3)                                                      # the second job labels for a while
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and f"kahve train --resume {out}" in stdout
    partial = distill.read_labels(stage / "labels_02.npz")
    n = len(partial["actions"])
    assert 0 < n < 100_000 and json.loads((stage / "summary.json").read_text())["interrupted"]
    assert not (stage / distill.BOT_FILE).exists()
    labels = json.dumps(slow["distill"]["labels"][:1] + [{**slow["distill"]["labels"][1], "count": n + 30}])
    assert kahve(["train", "--resume", str(out), "--no-progress", "--override",
                  f"stages.first.distill.labels={labels}"]) == 0
    stdout = capsys.readouterr().out
    assert "(done before)" in stdout and f"going on from {n:,}" in stdout
    done = distill.read_labels(stage / "labels_02.npz")
    assert len(done["actions"]) == n + 30 and np.array_equal(done["obs"][:n], partial["obs"])
    assert Bot.load(out / "tiny.onnx").metadata["algorithm"] == "distilled"


# ----- the section's errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit,match", [
    (lambda s: s[0].pop("distill"), r"stage 'first': config key 'distill': a distill stage needs its section"),
    (lambda s: s[0]["distill"].update(labels=[]), r"'distill.labels': expected a list of labelling jobs"),
    (lambda s: s[0]["distill"]["labels"][1].pop("count"), r"'distill.labels\[1\].count': required"),
    (lambda s: s[0]["distill"]["labels"][1].update(count=0), r"'distill.labels\[1\].count': 0 is out of range"),
    (lambda s: s[0]["distill"]["labels"][1].update(wolrds=3),
     r"unknown config key 'distill.labels\[1\].wolrds' \(did you mean 'worlds'\?\)"),
    (lambda s: s[0]["distill"]["labels"][1].update(base="previous"),
     r"'distill.labels\[1\].base': previous is the network the stage starts from, and this stage starts from none"),
    (lambda s: s[0]["distill"]["labels"][1].update(base="no_such_bot.onnx"), r"'distill.labels\[1\].base': "),
    (lambda s: s[0]["distill"]["labels"][0].update(worlds=8), r"'distill.labels\[0\]': the first job gives the early"),
    (lambda s: s[0]["distill"]["fit"].update(augment="ranks"), r"'distill.fit.augment': 'ranks' is not allowed"),
    (lambda s: s[0]["distill"]["fit"].update(epochs=-1), r"'distill.fit.epochs': -1 is out of range"),
    (lambda s: s[0]["distill"].update(workers=0), r"'distill.workers': 0 is out of range"),
    (lambda s: s[1].update(distill={"labels": []}, kind="train"), r"'stages\[1\].distill': belongs to a stage of kind"),
])
def test_distill_errors_name_the_stage_and_key(tmp_path, edit, match):
    raw = json.loads(json.dumps(TINY))
    edit(raw["stages"])
    with pytest.raises(ValueError, match=match):
        recipe_mod.load_recipe(_write(tmp_path, raw))


def test_a_game_without_late_positions_is_refused(tmp_path):
    raw = {"game": "pishti", "settings": {"players": 2}, "stages": [json.loads(json.dumps(FIRST))]}
    with pytest.raises(ValueError, match=r"stage 'first': config key 'game': a distill stage needs the game's late "
                                         r"positions .* declared for: pis_yedili"):
        recipe_mod.load_recipe(_write(tmp_path, raw))
