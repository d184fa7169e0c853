"""Run folders (issue 16): they never execute code, a checkpoint always survives, one run at a time per
folder, Ctrl-C saves the work (env processes and behaviour cloning included), resume says what it does and
refuses what it cannot do, and bad files are named."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kahve.agents.training import config as config_mod
from kahve.scripts.cli import main as kahve
from tests.helpers import HANG_S, popen_train

ROOT = Path(__file__).resolve().parents[2]
TINY = ["total_timesteps=256", "n_envs=2", "vec_env=dummy", "ppo.n_steps=64", "ppo.batch_size=64",
        "dqn.learning_starts=64", "dqn.buffer_size=1000", "evaluation.games=2", "evaluation.every=0",
        "evaluation.workers=1", "checkpoint_every=128", "opponents.self_play.every=128", "pretrain.steps=0"]
MORE = ["--no-progress", "--override", "total_timesteps=384"]           # a resume that trains a little


def _fresh_run(out: Path, config: str) -> Path:
    from kahve.agents.training.backends import train
    cfg = config_mod.load(ROOT / "configs" / config, [*TINY, f"output={out}"])
    train(cfg, progress=False, log=lambda *a: None)
    return out


@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("finished")
    return {"ppo": _fresh_run(base / "ppo", "pishti/ppo.yaml"), "dqn": _fresh_run(base / "dqn", "pishti/dqn.yaml")}


@pytest.fixture
def ppo_run(finished_runs, tmp_path):
    return Path(shutil.copytree(finished_runs["ppo"], tmp_path / "ppo"))


@pytest.fixture
def dqn_run(finished_runs, tmp_path):
    return Path(shutil.copytree(finished_runs["dqn"], tmp_path / "dqn"))


def _cli(capsys, *argv):
    rc = kahve(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _state(run: Path) -> dict:
    return json.loads((run / "checkpoints" / "latest" / "state.json").read_text())


# ----- pickle payloads -------------------------------------------------------------------------------------
class WriteMarker:
    """Unpickling this writes a file: a stand-in for any code a crafted pickle runs."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return Path.write_text, (Path(self.path), "the payload ran")


def plant(path: Path, kind: str, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "raw":                              # a bare pickle under any name
        path.write_bytes(pickle.dumps(WriteMarker(marker)))
    elif kind == "torch":                          # a torch.save file whose pickle runs code
        import torch
        torch.save({"parameters": WriteMarker(marker)}, path)
    elif kind == "npz":                            # an .npz with an object array (pickled inside)
        with open(path, "wb") as f:
            np.savez(f, w0=np.array([WriteMarker(marker)], dtype=object))
    elif kind == "sb3":                            # an SB3 model.zip: its "data" entries are cloudpickles
        import cloudpickle
        data = {"policy_class": {":type:": "<class 'abc.ABCMeta'>",
                                 ":serialized:": base64.b64encode(cloudpickle.dumps(WriteMarker(marker))).decode()}}
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("data", json.dumps(data))
            z.writestr("_stable_baselines3_version", "2.9.2")


def test_the_payloads_are_live(tmp_path):
    # the planted files really run code when loaded the old way (so the tests below show something)
    from stable_baselines3.common.save_util import load_from_zip_file
    for kind, load in [("raw", lambda p: pickle.loads(p.read_bytes())),
                       ("npz", lambda p: np.load(p, allow_pickle=True)["w0"]),
                       ("torch", lambda p: __import__("torch").load(p, weights_only=False)),
                       ("sb3", lambda p: load_from_zip_file(p))]:
        marker = tmp_path / f"ran_{kind}"
        plant(tmp_path / f"payload_{kind}", kind, marker)
        try:
            load(tmp_path / f"payload_{kind}")
        except Exception:
            pass
        assert marker.exists(), kind


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")       # torch, reading the planted pickle
@pytest.mark.parametrize("algo,file,kind,read", [
    ("ppo", "checkpoints/latest/model.zip", "sb3", False),            # SB3's format: no longer read at all
    ("ppo", "checkpoints/latest/model.pt", "torch", True),
    ("ppo", "checkpoints/latest/model.pt", "raw", True),
    ("ppo", "checkpoints/latest/opponents/snapshot_0.npz", "npz", True),
    ("ppo", "checkpoints/latest/opponents/snapshot_0.npz", "raw", True),
    ("ppo", "checkpoints/latest/demonstrations.npz", "npz", True),    # read while behaviour cloning is unfinished
    ("dqn", "checkpoints/latest/replay_buffer.npz", "npz", True),
    ("dqn", "checkpoints/latest/replay_buffer.npz", "raw", True),
    ("dqn", "checkpoints/latest/replay_buffer.pkl", "raw", False),    # the old name: ignored
    ("dqn", "checkpoints/latest/model.pt", "torch", True),
])
def test_resume_never_runs_code_from_the_run_folder(finished_runs, tmp_path, capsys, algo, file, kind, read):
    run = Path(shutil.copytree(finished_runs[algo], tmp_path / "run"))
    marker = tmp_path / "MARKER"
    plant(run / file, kind, marker)
    if file.endswith("demonstrations.npz"):        # a checkpoint taken during behaviour cloning
        state = _state(run)
        state["pretrain"] = {"collected": 1, "fits": 0, "seconds": 1.0, "stats": {}, "rounds": []}
        (run / "checkpoints" / "latest" / "state.json").write_text(json.dumps(state))
    rc, out, err = _cli(capsys, "train", "--resume", str(run), *MORE)
    assert not marker.exists()
    if read:
        assert rc == 2 and Path(file).name in err and "Traceback" not in err, err
    else:
        assert rc == 0, err


@pytest.mark.parametrize("file,kind,keep_policy,read", [
    ("policy.npz", "npz", True, True),
    ("policy.npz", "raw", True, True),
    ("checkpoints/latest/model.zip", "sb3", False, False),            # no policy.npz: export uses the checkpoint
    ("checkpoints/latest/model.pt", "torch", False, True),
])
def test_export_never_runs_code_from_the_run_folder(ppo_run, tmp_path, capsys, file, kind, keep_policy, read):
    marker = tmp_path / "MARKER"
    if not keep_policy:
        (ppo_run / "policy.npz").unlink()
    plant(ppo_run / file, kind, marker)
    rc, out, err = _cli(capsys, "export", str(ppo_run), "-o", str(tmp_path / "bot.onnx"))
    assert not marker.exists()
    if read:
        assert rc == 2 and Path(file).name in err, err
    else:
        assert rc == 0 and (tmp_path / "bot.onnx").exists(), err


def test_export_levels_need_a_report(ppo_run, tmp_path, capsys):
    rc, out, err = _cli(capsys, "export", str(ppo_run), "-o", str(tmp_path / "bot.onnx"), "--levels", "5")
    assert rc == 2 and "--levels" in err and "--report" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bot.onnx").exists()          # nothing written before the mistake is told


def test_export_from_the_checkpoint_and_in_sb3_format(ppo_run, tmp_path, capsys):
    from kahve.agents import Bot
    from kahve.agents.policies.network import MLP
    final = MLP.load(ppo_run / "policy.npz")
    (ppo_run / "policy.npz").unlink()
    rc, out, err = _cli(capsys, "export", str(ppo_run), "-o", str(tmp_path / "bot.onnx"),
                        "--sb3", str(tmp_path / "m.zip"))
    assert rc == 0, err
    bot = Bot.load(tmp_path / "bot.onnx")
    x = np.linspace(0, 1, final.input_size, dtype=np.float32)
    assert np.allclose(bot.logits(x), final.forward(x), atol=1e-4)        # the checkpoint's network is the final one
    assert bot.metadata["training_steps"] == 256 and bot.metadata["config"]["network"]["hidden"] == [256, 256]
    from sb3_contrib import MaskablePPO
    assert MaskablePPO.load(tmp_path / "m.zip").num_timesteps == 256     # SB3's own format, asked for explicitly


def test_the_run_folder_layout_is_the_documented_one(finished_runs):
    from kahve.agents.training.run_dir import RunDir
    run = RunDir(finished_runs["dqn"])
    root = finished_runs["dqn"]
    assert (run.config, run.tb, run.policy, run.summary, run.lock_file) == (
        root / "config.yaml", root / "tb", root / "policy.npz", root / "summary.json", root / "train.lock")
    ck = run.find_checkpoint()
    assert ck.folder == root / "checkpoints" / "latest" and ck.complete()
    assert {p.name for p in ck.folder.iterdir()} == {"model.pt", "replay_buffer.npz", "opponents", "state.json"}
    assert all(p.exists() for p in (run.config, run.tb, run.policy, run.summary, run.lock_file))


# ----- the checkpoint swap ---------------------------------------------------------------------------------
def _fake_checkpoint(run, name, steps):
    folder = run.checkpoints / name
    folder.mkdir(parents=True)
    (folder / "model.pt").write_text(str(steps))
    (folder / "state.json").write_text(json.dumps({"steps": steps}))


@pytest.mark.parametrize("crash_at", [1, 2, 3])
def test_a_crash_during_the_swap_leaves_a_complete_checkpoint(tmp_path, monkeypatch, crash_at):
    from kahve.agents.training.run_dir import RunDir
    run = RunDir(tmp_path / "run")
    run.create()
    _fake_checkpoint(run, "latest", 100)
    real_rename, calls = Path.rename, []

    def rename(self, target):
        calls.append(1)
        if len(calls) == crash_at:
            raise KeyboardInterrupt                      # killed here (3: while removing latest.old, see below)
        return real_rename(self, target)

    real_rmtree = shutil.rmtree

    def rmtree(path, *a, **k):
        if crash_at == 3 and Path(path).name == "latest.old":
            raise KeyboardInterrupt
        return real_rmtree(path, *a, **k)

    monkeypatch.setattr(Path, "rename", rename)
    monkeypatch.setattr(shutil, "rmtree", rmtree)

    def fill(ck):
        (ck.weights).write_text("200")
        return {"steps": 200}
    with pytest.raises(KeyboardInterrupt):
        run.write_checkpoint(fill)
    monkeypatch.undo()
    found = run.find_checkpoint()
    steps = found.read_state()["steps"]
    assert steps in (100, 200) and found.weights.read_text() == str(steps)
    recovered = run.recover()
    assert recovered.folder.name == "latest" and recovered.read_state()["steps"] == steps
    assert recovered.weights.read_text() == str(steps)
    assert sorted(p.name for p in run.checkpoints.iterdir()) == ["latest"]


def test_a_partial_new_checkpoint_is_removed_and_the_old_one_kept(tmp_path):
    from kahve.agents.training.run_dir import RunDir
    run = RunDir(tmp_path / "run")
    run.create()
    _fake_checkpoint(run, "latest", 100)

    def fill(ck):
        ck.weights.write_text("half")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run.write_checkpoint(fill)
    assert sorted(p.name for p in run.checkpoints.iterdir()) == ["latest"]
    assert run.find_checkpoint().read_state()["steps"] == 100


def test_resume_recovers_a_checkpoint_left_between_two_renames(ppo_run, capsys):
    # the old swap (rmtree latest, rename latest.tmp) killed in between left only latest.tmp
    ck = ppo_run / "checkpoints"
    (ck / "latest").rename(ck / "latest.tmp")
    rc, out, err = _cli(capsys, "train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress",
                        "--override", *TINY, f"output={ppo_run}")
    assert rc == 2 and "already holds a run" in err                   # a fresh run does not delete it
    assert (ck / "latest.tmp" / "state.json").exists()
    rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), *MORE)
    assert rc == 0, err
    assert "resuming" in out and "at 256 steps" in out
    assert sorted(p.name for p in ck.iterdir()) == ["latest"] and _state(ppo_run)["steps"] == 384


# ----- one run per folder ------------------------------------------------------------------------------------
def _wait_for(path: Path, proc, seconds=HANG_S):
    deadline = time.time() + seconds
    while not path.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert path.exists(), proc.communicate()[1][-3000:] if proc.poll() is not None else f"no {path}"


def test_a_locked_run_folder_is_refused(ppo_run, tmp_path, capsys):
    import fcntl
    with open(ppo_run / "train.lock", "a+") as held:               # what a running kahve train holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), *MORE)
        assert rc == 2 and "in use by another kahve train" in err
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        with open(fresh / "train.lock", "a+") as other:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            rc, out, err = _cli(capsys, "train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress",
                                "--override", *TINY, f"output={fresh}")
            assert rc == 2 and "in use by another kahve train" in err
        assert not (fresh / "config.yaml").exists()
    rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), *MORE)          # released: it runs
    assert rc == 0, err


@pytest.mark.slow
def test_two_runs_into_one_folder_the_second_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    cfg = str(ROOT / "configs" / "pishe_pasha" / "dqn.yaml")
    first = popen_train([cfg, "--no-progress", "--override", "total_timesteps=10000000", "n_envs=1",
                         "checkpoint_every=500", "evaluation.every=0", "pretrain.steps=0", f"output={out}"], tmp_path)
    try:
        _wait_for(out / "checkpoints" / "latest" / "state.json", first)
        second = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "train", cfg, "--no-progress", "--override",
                                 "total_timesteps=1000", "n_envs=1", "pretrain.steps=0", f"output={out}"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=HANG_S)
        assert second.returncode == 2 and f"in use by another kahve train (process {first.pid})" in second.stderr
        resume = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "train", "--resume", str(out)],
                                cwd=tmp_path, capture_output=True, text=True, timeout=HANG_S)
        assert resume.returncode == 2 and "in use by another kahve train" in resume.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)                           # killed: its lock must not outlive it
        first.wait()
    rc, out, err = _cli(capsys, "train", "--resume", str(out), "--no-progress", "--override",
                        f"total_timesteps={_state(out)['steps'] + 200}", "evaluation.games=2", "evaluation.workers=1")
    assert rc == 0, err


# ----- Ctrl-C ----------------------------------------------------------------------------------------------
def test_ctrl_c_with_env_processes_saves_a_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    proc = popen_train([str(ROOT / "configs" / "pishe_pasha" / "dqn.yaml"), "--no-progress", "--override",
                        "total_timesteps=10000000", "n_envs=2", "vec_env=subproc", "checkpoint_every=100000000",
                        "evaluation.every=0", "pretrain.steps=0", f"output={out}"], tmp_path)
    _wait_for(out / "tb", proc)
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)                                 # Ctrl-C reaches the env processes too
    stdout, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and summary["steps"] > 0 and _state(out)["steps"] == summary["steps"]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["latest"]        # no latest.tmp left
    assert "Traceback" not in stderr and "--resume" in stdout
    rc, out_, err = _cli(capsys, "train", "--resume", str(out), "--no-progress", "--override", "vec_env=dummy",
                         f"total_timesteps={summary['steps'] + 200}", "evaluation.games=2", "evaluation.workers=1")
    assert rc == 0, err


def test_ctrl_c_during_behaviour_cloning_keeps_the_demonstrations_and_resume_continues(tmp_path, capsys):
    out = tmp_path / "run"
    proc = popen_train([str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override", *TINY,
                        "n_envs=1", "pretrain.steps=1000", "pretrain.epochs=1000", "pretrain.dagger_rounds=1",
                        "pretrain.dagger_steps=300", f"output={out}"], tmp_path)
    lines = []
    for line in proc.stdout:                                           # wait until cloning is under way
        lines.append(line)
        if "behaviour cloning epoch 2/1000" in line:
            break
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, stderr[-3000:]
    state = _state(out)
    assert state["steps"] == 0 and state["pretrain"]["collected"] == 1 and state["pretrain"]["fits"] == 0
    collected = np.load(out / "checkpoints" / "latest" / "demonstrations.npz")["actions"]
    assert len(collected) >= 1000
    rc, resumed, err = _cli(capsys, "train", "--resume", str(out), "--no-progress", "--override", "pretrain.epochs=1",
                            "pretrain.dagger_epochs=1")
    assert rc == 0, err
    assert f"behaviour cloning resumed: {len(collected):,} decisions from the checkpoint" in resumed
    assert "decisions of heuristic collected" not in resumed          # not collected again
    report = json.loads((out / "pretrain.json").read_text())
    assert report["decisions"] == len(collected) + report["dagger"][0]["states"]
    assert json.loads((out / "summary.json").read_text())["steps"] == 256
    assert not (out / "checkpoints" / "latest" / "demonstrations.npz").exists()


def test_sigterm_saves_a_checkpoint_as_ctrl_c_does(tmp_path):
    out = tmp_path / "run"
    proc = popen_train([str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override", *TINY,
                        "total_timesteps=10000000", "checkpoint_every=100000000", f"output={out}"], tmp_path)
    _wait_for(out / "tb", proc)
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, stderr[-3000:]
    assert "checkpoint saved at" in stdout and "--resume" in stdout and "Traceback" not in stderr
    assert _state(out)["steps"] > 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads the process tree from /proc")
def test_ctrl_c_during_labelling_in_worker_processes_ends_them_and_saves_a_checkpoint(tmp_path):
    out = tmp_path / "run"
    proc = popen_train([str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override", *TINY,
                        "n_envs=2", "pretrain.steps=2000000", "pretrain.teacher=rollout:4", f"output={out}"], tmp_path)
    deadline = time.time() + HANG_S
    while (len([p for p in _children(proc.pid) if "spawn_main" in _cmdline(p)]) < 2 and time.time() < deadline
           and proc.poll() is None):
        time.sleep(0.2)
    workers = [pid for pid in _children(proc.pid) if "resource_tracker" not in _cmdline(pid)]
    assert len(workers) >= 2, proc.communicate(timeout=HANG_S) if proc.poll() is not None else "no workers"
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGINT)                 # the main process only, as a supervisor would
    stdout, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, stderr[-3000:]
    assert "--resume" in stdout and "Traceback" not in stderr
    assert _state(out)["pretrain"]["collected"] == 0                   # the collection is redone on resume
    for pid in workers:                                                # no labelling worker is left running
        assert "spawn_main" not in _cmdline(pid), f"worker {pid} still runs"


# ----- resume: what it says, what it refuses ------------------------------------------------------------------
def test_resume_says_it_resumed_and_reports_the_session_apart_from_the_run(ppo_run, capsys):
    before = json.loads((ppo_run / "summary.json").read_text())
    rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), *MORE)
    assert rc == 0, err
    assert f"resuming {ppo_run} from its checkpoint at 256 steps (of 384)" in out
    assert "done: this session 128 steps in " in out and "the run: 384 steps, " in out
    summary = json.loads((ppo_run / "summary.json").read_text())
    assert summary["steps_this_session"] == 128 and summary["resumed_from"] == 256
    assert summary["wall_seconds_total"] >= before["wall_seconds_total"] + summary["wall_seconds"]
    assert config_mod.load(ppo_run / "config.yaml")["total_timesteps"] == 384      # the run's config now says so


def test_a_stage_clock_counts_a_session_killed_without_warning(tmp_path):
    """A labelling or tree-solving stage keeps its time on the clock in an interrupted summary as it goes, so a
    session that ends with no Ctrl-C (a machine switched off) still counts, and a finished stage's time is not
    carried into a new run."""
    from kahve.agents.training.run_dir import RunDir
    run = RunDir(tmp_path / "stage")
    run.create()
    clock = run.clock()
    clock.keep()                                    # less than KEEP_EVERY_S since the start: nothing written yet
    assert run.read_summary() is None
    clock.spent = 100.0                             # as if 100 s had passed in earlier sessions
    clock.KEEP_EVERY_S = 0.0
    clock.keep()
    kept = run.read_summary()
    assert kept["interrupted"] and 100.0 <= kept["wall_seconds_total"] < 100.0 + HANG_S
    resumed = run.clock()                           # the next session, after the first was killed
    assert resumed.seconds() >= kept["wall_seconds_total"]
    run.write_summary({**kept, "interrupted": False})
    assert run.clock().seconds() < 100.0            # a finished summary's time is not an earlier session's


def test_resume_of_a_finished_run_says_so(ppo_run, capsys):
    rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), "--no-progress")
    assert rc == 2 and "is finished (256 steps of total_timesteps 256)" in err and "total_timesteps=N" in err


@pytest.mark.parametrize("override,key", [("network.hidden=[32]", "network.hidden"), ("algorithm=dqn", "algorithm"),
                                          ("network.activation=relu", "network.activation"),
                                          ("settings.players=4", "settings"), ("game=pasur", "game"),
                                          ("opponents.pool=[{policy: random, weight: 5}]", "opponents.pool")])
def test_resume_refuses_changes_the_checkpoint_cannot_follow(ppo_run, capsys, override, key):
    rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), "--no-progress", "--override",
                        "total_timesteps=384", override)
    assert rc == 2 and f"config key {key!r} cannot change when resuming" in err, err
    assert len(err.strip().splitlines()) == 1


def test_resume_of_a_dqn_run_refuses_a_new_buffer_layout(dqn_run, capsys):
    rc, out, err = _cli(capsys, "train", "--resume", str(dqn_run), "--no-progress", "--override",
                        "total_timesteps=384", "dqn.buffer_size=2000")
    assert rc == 2 and "'dqn.buffer_size' cannot change" in err


def test_resume_of_a_dqn_run_keeps_its_replay_buffer(dqn_run, capsys):
    before = np.load(dqn_run / "checkpoints" / "latest" / "replay_buffer.npz")
    rc, out, err = _cli(capsys, "train", "--resume", str(dqn_run), *MORE)
    assert rc == 0, err
    after = np.load(dqn_run / "checkpoints" / "latest" / "replay_buffer.npz")
    rows = int(before["pos"])
    assert int(after["pos"]) == rows + 128 // 2                                     # 2 envs, 128 more steps
    assert np.array_equal(after["observations"][:rows], before["observations"][:rows])


# ----- bad files are named -----------------------------------------------------------------------------------
@pytest.mark.parametrize("file,content", [
    ("checkpoints/latest/state.json", "{not json"),
    ("checkpoints/latest/state.json", "[1, 2]"),
    ("checkpoints/latest/opponents/pool.json", "{}"),
    ("checkpoints/latest/opponents/snapshot_0.npz", "garbage"),
    ("checkpoints/latest/model.pt", "garbage"),
    ("config.yaml", "game: [unclosed"),
    ("config.yaml", "game: pishti\ngame: pasur\n"),
    ("config.yaml", "- a list"),
])
def test_corrupt_files_on_resume_are_named(ppo_run, capsys, file, content):
    (ppo_run / file).write_text(content)
    rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), *MORE)
    assert rc == 2 and Path(file).name in err and len(err.strip().splitlines()) == 1, err


def test_a_run_folder_that_is_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("not a folder")
    rc, out, err = _cli(capsys, "train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--override", *TINY,
                        f"output={target}")
    assert rc == 2 and "exists and is not a folder" in err


def test_a_checkpoint_in_sb3_pickle_format_is_refused_unread(ppo_run, tmp_path, capsys):
    # a run folder of an older kahve (model.zip, no model.pt): resume and export say so and load nothing
    marker = tmp_path / "MARKER"
    latest = ppo_run / "checkpoints" / "latest"
    (latest / "model.pt").unlink()
    (ppo_run / "policy.npz").unlink()
    plant(latest / "model.zip", "sb3", marker)
    rc, out, err = _cli(capsys, "train", "--resume", str(ppo_run), *MORE)
    assert rc == 2 and "pickle format (model.zip)" in err
    rc, out, err = _cli(capsys, "export", str(ppo_run), "-o", str(tmp_path / "bot.onnx"))
    assert rc == 2 and "pickle format (model.zip)" in err
    assert not marker.exists()


def test_resume_continues_the_envs_random_streams(dqn_run):
    # the envs deal on from the streams the checkpoint holds, not from the fresh run's seeds again
    from kahve.agents.training.view.learner_env import LearnerEnv
    from kahve.agents.training.run_dir import RunDir
    from kahve.agents.training.sb3.session import Sb3Session as Trainer
    run = RunDir(dqn_run)
    saved = run.latest.read_state()["env_states"]
    cfg = config_mod.for_resume(run.read_config(), [])
    trainer = Trainer(cfg, run, run.latest, log=lambda *a: None)
    try:
        trainer.vec.reset()
        after = trainer.vec.env_method("get_rng_state")
    finally:
        trainer.close(False)
    from kahve.agents.training.view.opponents import OpponentPool
    pool = OpponentPool.load(run.latest.opponents)       # shared by the envs of a DummyVecEnv, as in training
    for i, state in enumerate(saved):
        twin = LearnerEnv(cfg["game"], cfg["settings"], pool)
        twin.set_rng_state(state)
        twin.reset()
        assert after[i] == twin.get_rng_state()


# ----- a new run that starts from another run's network (init_from) ---------------------------------------------
def _weights(run: Path) -> dict:
    with np.load(run / "policy.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def test_a_new_run_starts_from_another_runs_network(finished_runs, tmp_path):
    from kahve.agents.training.backends import train
    source = finished_runs["ppo"]
    still = ["seed=1", "ppo.learning_rate=1e-7", "total_timesteps=128", "opponents.pool=[{policy: heuristic}]"]
    runs = {}
    for name, extra in [("started", [f"init_from={source}"]), ("fresh", [])]:
        cfg = config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*TINY, *still, *extra,
                                                                         f"output={tmp_path / name}"])
        train(cfg, progress=False, log=lambda *a: None)
        runs[name] = _weights(tmp_path / name)
    before = _weights(source)
    assert set(runs["started"]) == set(before)
    big = [k for k, v in before.items() if v.ndim == 2]
    assert big and all(np.allclose(runs["started"][k], before[k], atol=1e-4) for k in big)
    assert not all(np.allclose(runs["fresh"][k], before[k], atol=1e-2) for k in big)   # else the test shows nothing
    summary = json.loads((tmp_path / "started" / "summary.json").read_text())
    assert summary["steps"] == summary["steps_this_session"] >= 128          # the new run counts its own steps


@pytest.mark.parametrize("config,overrides,match", [
    ("pishti/ppo.yaml", ["pretrain.steps=100"], "pretrain.steps must be 0"),
    ("pishti/ppo.yaml", ["network.hidden=[32]"], "network.hidden"),
    ("pishti/dqn.yaml", [], "algorithm 'ppo'"),
    ("pishti/ppo.yaml", ["settings.players=4"], "players=2"),
    ("pasur/ppo.yaml", [], "game 'pishti'"),
])
def test_init_from_refuses_another_kind_of_run(finished_runs, config, overrides, match):
    with pytest.raises(ValueError, match=match):
        config_mod.load(ROOT / "configs" / config, [*TINY, *overrides, f"init_from={finished_runs['ppo']}"])


def test_init_from_refuses_a_folder_without_a_run(tmp_path):
    with pytest.raises(ValueError, match="not a run folder with a checkpoint"):
        config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*TINY, f"init_from={tmp_path}"])


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("kind", ["torch", "raw"])
def test_init_from_never_runs_code_from_the_other_run(ppo_run, tmp_path, capsys, kind):
    marker = tmp_path / "MARKER"
    plant(ppo_run / "checkpoints" / "latest" / "model.pt", kind, marker)
    rc, out, err = _cli(capsys, "train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress",
                        "--override", *TINY, f"init_from={ppo_run}", f"output={tmp_path / 'new'}")
    assert not marker.exists()
    assert rc == 2 and "model.pt" in err and "Traceback" not in err, err


def test_a_run_started_from_another_resumes_without_it(finished_runs, tmp_path, capsys):
    # the checkpoint holds the network now: the run it started from may be gone
    source = Path(shutil.copytree(finished_runs["ppo"], tmp_path / "source"))
    out = tmp_path / "started"
    rc, _, err = _cli(capsys, "train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override",
                      *TINY, f"init_from={source}", f"output={out}")
    assert rc == 0, err
    shutil.rmtree(source)
    rc, _, err = _cli(capsys, "train", "--resume", str(out), *MORE)
    assert rc == 0, err
    assert _state(out)["steps"] >= 384
