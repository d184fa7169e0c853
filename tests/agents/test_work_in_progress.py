"""Files people hand each other, and work in progress: behaviour cloning, DAgger and expert iteration checkpoint as
PPO does (a kill at any moment loses at most a collection or an epoch, and --resume goes on from there as if it had
never stopped); label caches record what made them and refuse anything else; a full disk is one line that names
the folder, with the checkpoint before kept; and a run folder whose files cannot be the run's is refused on resume
and export."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from kahve.agents.training import config as config_mod
from kahve.agents.training.backends import train
from kahve.agents.training.files import WriteError, load_tensors, write_atomic
from kahve.agents.training.run_dir import RunDir
from kahve.agents.training.sb3.session import Sb3Session
from kahve.scripts.cli import main as kahve
from tests.helpers import HANG_S, popen_train

ROOT = Path(__file__).resolve().parents[2]
BASE = ["n_envs=1", "vec_env=dummy", "async_rollouts=false", "ppo.n_steps=64", "ppo.batch_size=64",
        "dqn.learning_starts=64", "dqn.buffer_size=1000", "evaluation.games=2", "evaluation.every=0",
        "evaluation.workers=1", "opponents.self_play.every=0"]
#: cloning (3 epochs), a DAgger round (2 epochs) and a generation of expert iteration (2 epochs), all tiny
CLONING = [*BASE, "total_timesteps=128", "checkpoint_every=10000", "pretrain.steps=300", "pretrain.epochs=3",
           "pretrain.batch_size=64", "pretrain.dagger_rounds=1", "pretrain.dagger_steps=150",
           "pretrain.dagger_epochs=2"]
GENERATION = ["pretrain.generations=1", "pretrain.generation_steps=60", "pretrain.search=rollout:2,z=1:{student}"]
#: a run without cloning, a checkpoint every 128 steps
PLAIN = [*BASE, "total_timesteps=256", "checkpoint_every=128", "pretrain.steps=0"]


class Killed(BaseException):
    """Raised inside training where a kill -9 would land: a session catches only KeyboardInterrupt, so nothing is
    saved on the way out, as after a real kill."""


def _kill_at(text: str, occurrence: int = 1):
    """A log that raises :class:`Killed` at the ``occurrence``-th line containing ``text``."""
    seen = [0]

    def log(line):
        if text in line:
            seen[0] += 1
            if seen[0] == occurrence:
                raise Killed(line)
    return log


def _load(config: str, overrides: list, out: Path) -> dict:
    return config_mod.load(ROOT / "configs" / config, [*overrides, f"output={out}"])


def _after_cloning(monkeypatch, cfg: dict, resume: bool = False):
    """Train until cloning is done and its checkpoint written (learning is then stopped, as by a kill); returns the
    session's log."""
    lines = []

    def stop(self, progress):
        raise Killed("after cloning")
    monkeypatch.setattr(Sb3Session, "learn", stop)
    with pytest.raises(Killed, match="after cloning"):
        train(cfg, resume_dir=cfg["output"] if resume else None, progress=False, log=lines.append)
    return lines


def _cloned(run: Path) -> tuple[dict, dict]:
    """The weights of the checkpoint written when cloning ended (policy and optimizer), and pretrain.json without
    its wall times."""
    params = load_tensors(run / "checkpoints" / "latest" / "model.pt")["parameters"]
    report = json.loads((run / "pretrain.json").read_text())
    report.pop("seconds")
    for g in report["generations"]:
        g.pop("seconds")
    return params, report


def _same_tensors(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_tensors(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    return a == b


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """Cloning, DAgger and a generation of expert iteration run through without a stop: what a killed and resumed
    run must end with, exactly."""
    out = {}
    mp = pytest.MonkeyPatch()
    try:
        for name, config, overrides in [("ppo", "pishti/ppo.yaml", [*CLONING, *GENERATION]),
                                        ("dqn", "pishti/dqn.yaml", [*CLONING, "pretrain.teacher=heuristic"])]:
            run = tmp_path_factory.mktemp(name) / "run"
            _after_cloning(mp, _load(config, overrides, run))
            out[name] = _cloned(run)
    finally:
        mp.undo()
    return out


# ----- a kill during cloning loses at most one checkpoint interval ---------------------------------------------------
@pytest.mark.parametrize("algo,config,extra,kill_at,occurrence,goes_on", [
    # after the second epoch of behaviour cloning, before its checkpoint: the epoch is done again
    ("ppo", "pishti/ppo.yaml", GENERATION, "epoch 2/3:", 1, "behaviour cloning: going on after epoch 1 of 3"),
    # after DAgger's collection, before its checkpoint: the collection is done again, the cloning fit is not
    ("ppo", "pishti/ppo.yaml", GENERATION, "DAgger round 1/1:", 1, "1 of 2 fits done"),
    # in DAgger's fit and in the generation's fit
    ("ppo", "pishti/ppo.yaml", GENERATION, "epoch 2/2:", 1, "DAgger 1/1: going on after epoch 1 of 2"),
    ("ppo", "pishti/ppo.yaml", GENERATION, "epoch 2/2:", 2, "generation 1/1: going on after epoch 1 of 2"),
    # after the generation's labels were cached, before its fit: they are read back, not searched again
    ("ppo", "pishti/ppo.yaml", GENERATION, "labelled", 1, "(cached)"),
    # the masked DQN's fit of the demonstrations
    ("dqn", "pishti/dqn.yaml", ["pretrain.teacher=heuristic"], "epoch 2/3:", 1,
     "behaviour cloning: going on after epoch 1 of 3"),
])
def test_a_kill_during_cloning_resumes_where_the_last_checkpoint_stands(
        uninterrupted, tmp_path, monkeypatch, algo, config, extra, kill_at, occurrence, goes_on):
    out = tmp_path / "run"
    cfg = _load(config, [*CLONING, *extra], out)
    with pytest.raises(Killed):
        train(cfg, progress=False, log=_kill_at(kill_at, occurrence))
    state = json.loads((out / "checkpoints" / "latest" / "state.json").read_text())
    assert state["steps"] == 0 and state["pretrain"]["collected"] >= 1       # the teacher's decisions are kept
    resumed = _after_cloning(monkeypatch, config_mod.for_resume(RunDir(out).read_config(), []), resume=True)
    text = "\n".join(resumed)
    assert goes_on in text, text
    assert "decisions of heuristic collected" not in text                    # not collected again
    params, report = _cloned(out)
    reference_params, reference_report = uninterrupted[algo]
    assert report == reference_report                                        # the same fits, to the last digit
    assert _same_tensors(params, reference_params)                           # the same network and optimizer


def test_the_demonstrations_are_written_once_not_at_every_epoch(tmp_path):
    # cloning checkpoints after every epoch, and its demonstrations may be gigabytes: an epoch's checkpoint links the
    # file of the checkpoint before it instead of writing it again
    out = tmp_path / "run"
    inodes = []

    def log(line):
        if "/3:" in line:                      # an epoch of the cloning fit, before its own checkpoint
            inodes.append(os.stat(out / "checkpoints" / "latest" / "demonstrations.npz").st_ino)
        if "DAgger round 1/1:" in line:
            raise Killed(line)
    with pytest.raises(Killed):
        train(_load("pishti/ppo.yaml", CLONING, out), progress=False, log=log)
    assert len(inodes) == 3 and len(set(inodes)) == 1, inodes


def test_a_kill_before_the_first_collection_ends_leaves_a_checkpoint_to_resume(tmp_path, monkeypatch):
    out = tmp_path / "run"
    cfg = _load("pishti/ppo.yaml", CLONING, out)
    monkeypatch.setattr("kahve.agents.training.pretrain.collect_demonstrations",
                        lambda *a, **k: (_ for _ in ()).throw(Killed("while collecting")))
    with pytest.raises(Killed):
        train(cfg, progress=False, log=lambda line: None)
    monkeypatch.undo()
    rc = kahve(["train", "--resume", str(out), "--no-progress"])
    assert rc == 0
    assert json.loads((out / "pretrain.json").read_text())["decisions"] >= 300


def test_a_real_kill_9_during_cloning_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    latest = out / "checkpoints" / "latest" / "state.json"
    proc = popen_train([str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override", *CLONING,
                        "pretrain.epochs=1000", f"output={out}"], tmp_path)
    deadline = time.monotonic() + HANG_S
    while proc.poll() is None and time.monotonic() < deadline:         # until a checkpoint holds an epoch
        try:
            if (json.loads(latest.read_text())["pretrain"].get("fit") or {}).get("epochs", 0) >= 2:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate(timeout=HANG_S)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=HANG_S)
    done = json.loads(RunDir(out).find_checkpoint().state_file.read_text())["pretrain"]["fit"]["epochs"]
    rc = kahve(["train", "--resume", str(out), "--no-progress", "--override", f"pretrain.epochs={done + 1}"])
    resumed = capsys.readouterr().out
    assert rc == 0, resumed
    assert f"going on after epoch {done} of {done + 1}" in resumed and "collected" not in resumed


# ----- label caches say what made them ---------------------------------------------------------------------------
def test_demonstrations_of_another_teacher_are_refused_on_resume(tmp_path, capsys):
    out = tmp_path / "run"
    cfg = _load("pishti/ppo.yaml", CLONING, out)

    def ctrl_c(line):
        if "epoch 2/3:" in line:
            raise KeyboardInterrupt
    assert train(cfg, progress=False, log=ctrl_c)["interrupted"]
    rc = kahve(["train", "--resume", str(out), "--no-progress", "--override", "pretrain.teacher=random"])
    err = capsys.readouterr().err
    assert rc == 2 and "state.json" in err and "teacher 'heuristic' (now 'random')" in err, err
    assert len(err.strip().splitlines()) == 1


def test_generation_labels_of_another_network_are_refused(tmp_path, capsys, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    with pytest.raises(Killed):                        # the first run caches its generation's labels, then stops
        train(_load("pishti/ppo.yaml", [*CLONING, *GENERATION], first), progress=False, log=_kill_at("labelled"))
    # a second run of another seed (so another network) finds them in its folder where its own labels go
    (second / "generations").mkdir(parents=True)
    shutil.copy(first / "generations" / "labels_1.npz", second / "generations" / "labels_1.npz")
    rc = kahve(["train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override", *CLONING,
                *GENERATION, "seed=1", f"output={second}"])
    err = capsys.readouterr().err
    assert rc == 2 and "labels_1.npz" in err and "student" in err and "delete the file" in err, err
    assert len(err.strip().splitlines()) == 1
    # and a resume of the first with another search refuses its labels too
    rc = kahve(["train", "--resume", str(first), "--no-progress", "--override",
                "pretrain.search=rollout:3,z=1:{student}"])
    err = capsys.readouterr().err
    assert rc == 2 and "labels_1.npz" in err and "teacher" in err, err


# ----- a full disk -------------------------------------------------------------------------------------------------
def _full_disk_after_first_checkpoint(monkeypatch, run: Path, how: str) -> None:
    """From the moment the run's first checkpoint is complete, the disk is full: torch's save fails as it does then
    (a RuntimeError), or a file's sync does (OSError 28)."""
    first = run / "checkpoints" / "latest" / "state.json"
    if how == "torch":
        real = torch.save

        def save(*args, **kwargs):
            if first.exists():
                raise RuntimeError("[enforce fail at inline_container.cc:664] . PytorchStreamWriter failed writing "
                                   "file data/3: file write failed")
            return real(*args, **kwargs)
        monkeypatch.setattr(torch, "save", save)
    else:
        real_fsync = os.fsync

        def fsync(fd):
            if first.exists():
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_fsync(fd)
        monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize("how", ["torch", "fsync"])
def test_a_full_disk_mid_run_is_one_line_and_keeps_the_checkpoint_before(tmp_path, monkeypatch, capsys, how):
    out = tmp_path / "run"
    _full_disk_after_first_checkpoint(monkeypatch, out, how)
    rc = kahve(["train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override", *PLAIN,
                f"output={out}"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert f"cannot write a checkpoint in {out / 'checkpoints'}: " in err and "the previous checkpoint is kept" in err
    assert ("file write failed" if how == "torch" else "no space left on the device") in err
    monkeypatch.undo()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["latest"]      # no half-written one
    assert json.loads((out / "checkpoints" / "latest" / "state.json").read_text())["steps"] == 128
    rc = kahve(["train", "--resume", str(out), "--no-progress"])                  # space again: it goes on
    assert rc == 0 and json.loads((out / "summary.json").read_text())["steps"] == 256


def test_a_full_disk_at_start_up_is_one_line_and_changes_nothing(finished_ppo, tmp_path, monkeypatch, capsys):
    run = Path(shutil.copytree(finished_ppo, tmp_path / "run"))
    config, state = (run / "config.yaml").read_text(), (run / "checkpoints" / "latest" / "state.json").read_text()
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left")))
    rc = kahve(["train", "--resume", str(run), "--no-progress", "--override", "total_timesteps=512"])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip() == f"kahve train: error: cannot write {run / 'config.yaml'}: no space left on " \
                                      "the device", err
    assert (run / "config.yaml").read_text() == config          # the config as it was, not half of the new one
    assert (run / "checkpoints" / "latest" / "state.json").read_text() == state
    assert not list(run.glob("*.part*"))
    fresh = tmp_path / "fresh"
    rc = kahve(["train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override", *PLAIN,
                f"output={fresh}"])
    err = capsys.readouterr().err
    assert rc == 2 and f"cannot write {fresh / 'config.yaml'}" in err and len(err.strip().splitlines()) == 1


def test_write_atomic_leaves_the_old_file_when_the_write_fails(tmp_path):
    path = tmp_path / "labels.npz"
    path.write_bytes(b"the old labels")

    def write(part: Path) -> None:
        part.write_bytes(b"half of the new")
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(WriteError) as caught:
        write_atomic(path, write)
    assert str(caught.value) == f"cannot write {path}: no space left on the device"
    assert caught.value.errno == errno.ENOSPC and isinstance(caught.value, ValueError)
    assert path.read_bytes() == b"the old labels" and sorted(p.name for p in tmp_path.iterdir()) == ["labels.npz"]
    write_atomic(path, lambda part: part.write_bytes(b"new"))
    assert path.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["labels.npz"]


# ----- run folders that cannot be the run's ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_ppo(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "ppo"
    train(_load("pishti/ppo.yaml", PLAIN, out), progress=False, log=lambda line: None)
    return out


@pytest.fixture
def ppo_run(finished_ppo, tmp_path):
    return Path(shutil.copytree(finished_ppo, tmp_path / "run"))


def _refused(capsys, argv: list, *names: str) -> str:
    rc = kahve(argv)
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    return err


def _resume(run: Path) -> list:
    return ["train", "--resume", str(run), "--no-progress", "--override", "total_timesteps=384"]


def _export(run: Path, tmp_path: Path) -> list:
    return ["export", str(run), "-o", str(tmp_path / "bot.onnx")]


def test_a_truncated_config_is_refused_not_filled_with_defaults(ppo_run, tmp_path, capsys):
    text = (ppo_run / "config.yaml").read_text()
    (ppo_run / "config.yaml").write_text(text[:text.index("\npretrain:")] + "\n")        # cut off at pretrain
    err = _refused(capsys, _resume(ppo_run), "config.yaml", "pretrain.steps")
    assert "cut short" in err
    _refused(capsys, _export(ppo_run, tmp_path), "config.yaml")
    assert not (tmp_path / "bot.onnx").exists()


def test_the_keys_a_config_yaml_must_hold_are_the_configs():
    # a key retired from the config must leave WRITTEN_KEYS too, or every run folder written after would be refused
    from kahve.agents.training.run_dir import WRITTEN_KEYS, missing_keys
    assert missing_keys(config_mod.defaults()) == []
    assert len(WRITTEN_KEYS) == len(set(WRITTEN_KEYS)) > 80


def test_a_config_written_before_a_key_existed_still_resumes(ppo_run, capsys):
    # `tables` came after the runs of this kahve's first release: their config.yaml has no such key
    import yaml
    cfg = yaml.safe_load((ppo_run / "config.yaml").read_text())
    cfg.pop("tables", None)
    (ppo_run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert kahve(_resume(ppo_run)) == 0, capsys.readouterr().err


def test_a_config_of_another_network_than_the_weights_is_refused(ppo_run, tmp_path, capsys):
    # the same shapes, another activation: the weights load, and would play as another network than they learned
    text = (ppo_run / "config.yaml").read_text()
    (ppo_run / "config.yaml").write_text(text.replace("activation: tanh", "activation: relu"))
    _refused(capsys, _resume(ppo_run), "state.json", "network")         # the checkpoint records its network
    _refused(capsys, _export(ppo_run, tmp_path), "state.json", "network")
    # a checkpoint that does not record it: policy.npz's own activation still tells
    path = ppo_run / "checkpoints" / "latest" / "state.json"
    state = json.loads(path.read_text())
    del state["network"]
    path.write_text(json.dumps(state))
    _refused(capsys, _export(ppo_run, tmp_path), "policy.npz", "activation tanh", "relu")
    assert not (tmp_path / "bot.onnx").exists()


@pytest.mark.parametrize("change,words", [
    ({"steps": -5}, "below zero"),
    ({"steps": 300}, "not the model's own"),                           # the model's counter says 256
    ({"steps": 10**9, "model.num_timesteps": 10**9}, "past the run's budget"),
])
def test_a_step_count_that_cannot_be_the_runs_is_refused(ppo_run, tmp_path, capsys, change, words):
    path = ppo_run / "checkpoints" / "latest" / "state.json"
    state = json.loads(path.read_text())
    for key, value in change.items():
        if key == "steps":
            state["steps"] = value
        else:
            state["model"]["num_timesteps"] = value
    path.write_text(json.dumps(state))
    _refused(capsys, _resume(ppo_run), "state.json", words)
    (ppo_run / "policy.npz").unlink()
    _refused(capsys, _export(ppo_run, tmp_path), "state.json", words)


@pytest.mark.parametrize("file,damage", [
    ("state.json", lambda s: s["np_rng"].__setitem__(1, [1, 2, 3])),       # numpy: an IndexError before
    ("state.json", lambda s: s["rng"].__setitem__(1, [-1] * 625)),          # Python: an OverflowError before
    ("state.json", lambda s: s["env_states"][0]["rng"].__setitem__(1, [-1] * 625)),   # an env's: the same
    ("model.pt", None),                                                     # torch's: a RuntimeError before
])
def test_garbage_random_states_are_one_line(ppo_run, capsys, file, damage):
    latest = ppo_run / "checkpoints" / "latest"
    if file == "state.json":
        state = json.loads((latest / file).read_text())
        damage(state)
        (latest / file).write_text(json.dumps(state))
    else:
        data = load_tensors(latest / file)
        data["torch_rng"] = torch.zeros(5, dtype=torch.uint8)
        torch.save(data, latest / file)
    err = _refused(capsys, _resume(ppo_run), file)
    assert "random state" in err


def test_weights_that_are_not_finite_are_refused_and_never_exported(ppo_run, tmp_path, capsys):
    arrays = dict(np.load(ppo_run / "policy.npz"))
    arrays["w0"][0, 0] = np.nan
    np.savez(ppo_run / "policy.npz", **arrays)
    _refused(capsys, _export(ppo_run, tmp_path), "policy.npz", "not finite")
    assert not (tmp_path / "bot.onnx").exists()
    # and in the checkpoint: refused by resume, and by export (which reads it when there is no policy.npz)
    (ppo_run / "policy.npz").unlink()
    data = load_tensors(ppo_run / "checkpoints" / "latest" / "model.pt")
    weights = data["parameters"]["policy"]
    name = next(k for k, v in weights.items() if v.dtype.is_floating_point and v.dim() == 2)
    weights[name][0, 0] = float("inf")
    torch.save(data, ppo_run / "checkpoints" / "latest" / "model.pt")
    _refused(capsys, _resume(ppo_run), "model.pt", "not finite")
    _refused(capsys, _export(ppo_run, tmp_path), "model.pt", "not finite")
    assert not (tmp_path / "bot.onnx").exists()


def test_a_diverged_network_is_never_written_as_a_bot(tmp_path, monkeypatch, capsys):
    real = Sb3Session.network

    def diverged(self):
        mlp = real(self)
        mlp.weights[0][0, 0] = np.nan
        return mlp
    monkeypatch.setattr(Sb3Session, "network", diverged)
    out = tmp_path / "run"
    err = _refused(capsys, ["train", str(ROOT / "configs" / "pishti" / "ppo.yaml"), "--no-progress", "--override",
                            *PLAIN, "evaluation.every=128", f"output={out}"], "not finite", "diverged")
    assert not (out / "eval_bot.onnx").exists() and not (out / "policy.npz").exists(), err
