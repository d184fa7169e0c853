"""The RLlib backend (issue 22): ``backend: rllib`` trains a config with Ray RLlib's PPO on local env runners, into
the same run folder, exported by the same ``kahve export``; the masked module never picks an illegal action.

Skipped where Ray RLlib is not installed (``pip install -e '.[test,rllib]'`` installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import HANG_S

pytest.importorskip("ray.rllib")
torch = pytest.importorskip("torch")

from kahve.agents.training import config as config_mod  # noqa: E402
from kahve.agents.training.rllib import session as rb  # noqa: E402

PISHTI = {"players": 2, "episode": "deal", "reward": "points"}


def _env(pool, modules=("learner", "snapshot_0"), game="pishti", settings=PISHTI, seed=1):
    return rb.SeatsEnv({"game": game, "settings": settings, "pool": pool, "modules": list(modules), "seed": seed})


# ----- the env ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("game,settings", [("pishti", PISHTI),
                                           ("pishti", dict(players=4, partnerships=True, episode="deal",
                                                           reward="points")),
                                           ("ish", dict(players=3, bankroll=5, max_rounds=10))])
def test_env_is_turn_based_and_seats_the_pool(game, settings):
    env = _env([("policy", "random", 1.0), ("module", "snapshot_0", 1.0)], game=game, settings=settings)
    g = env.game
    rng = np.random.default_rng(0)
    sides, opponents = set(), set()
    for episode in range(6 * g.num_sides):
        obs, _ = env.reset()
        sides.add(env.learner_side)
        assert env._controllers[env.learner_side] == "learner"
        opponents.update(c if isinstance(c, str) else "baseline" for i, c in enumerate(env._controllers)
                         if i != env.learner_side)
        totals: dict[str, float] = {}
        while True:
            (aid, o), = obs.items()                       # one observation: the agent to move, nothing else
            st = env.state
            module, side = aid.split("@")
            assert rb.policy_mapping_fn(aid) == module == env._controllers[int(side)]
            assert g.sides[st.current_player] == int(side)
            assert np.array_equal(o["action_mask"] > 0, st.legal_mask())
            assert np.array_equal(o["observations"], st.observation(st.current_player))
            assert env.observation_spaces[aid].contains(o)
            obs, rewards, term, trunc, _ = env.step({aid: int(rng.choice(np.flatnonzero(o["action_mask"])))})
            for a, r in rewards.items():
                totals[a] = totals.get(a, 0.0) + r
            if term["__all__"] or trunc["__all__"]:
                break
            obs = {a: x for a, x in obs.items() if not term.get(a)}
        learner = rb.agent_id("learner", env.learner_side)
        if g.name != "ish":                                # the learner's rewards are its seat's returns
            assert totals[learner] == pytest.approx(env.state.returns[g.sides.index(env.learner_side)])
        assert all(not x["action_mask"].any() for x in obs.values())      # final observations: nothing to do
    assert sides == set(range(g.num_sides))               # the learner's side rotates
    assert opponents == {"baseline", "snapshot_0"}         # the pool seats baselines in the env, snapshots as modules
    c = env.get_counters()
    assert sum(c["decisions"].values()) > 0 and c["illegal"] == {}


def test_env_refuses_and_counts_an_illegal_action():
    env = _env([("policy", "random", 1.0)])
    obs, _ = env.reset()
    (aid, o), = obs.items()
    illegal = int(np.flatnonzero(o["action_mask"] == 0)[0])
    with pytest.raises(rb.IllegalActionError, match="illegal action"):
        env.step({aid: illegal})
    assert env.get_counters()["illegal"] == {"learner": 1}


def test_env_streams_differ_between_runners_and_envs():
    a, b = (rb.SeatsEnv(type("Ctx", (dict,), {"worker_index": w})(game="pishti", settings=PISHTI, seed=0))
            for w in (1, 2))
    a.reset(), b.reset()
    assert a.state.to_dict() != b.state.to_dict()


# ----- the module ---------------------------------------------------------------------------------------------------
def _module(hidden=(32, 16), activation="tanh"):
    cfg = config_mod.resolve({"game": "pishti", "settings": PISHTI, "backend": "rllib",
                              "network": {"hidden": list(hidden), "activation": activation, "action_features": False}})
    return rb.local_module(cfg)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_module_masks_illegal_logits_in_every_forward_pass(activation):
    from ray.rllib.core.columns import Columns
    module = _module(activation=activation)
    rng = np.random.default_rng(0)
    n, actions = 256, module.action_space.n
    masks = rng.random((n, actions)) < 0.1
    masks[np.arange(n), rng.integers(0, actions, n)] = True            # at least one legal action per row
    obs = torch.as_tensor(rng.random((n, module.observation_space["observations"].shape[0])), dtype=torch.float32)
    batch = lambda: {Columns.OBS: {"observations": obs, "action_mask": torch.as_tensor(masks, dtype=torch.float32)}}
    with torch.no_grad():
        for name in ("forward_exploration", "forward_inference", "forward_train"):
            logits = getattr(module, name)(batch())[Columns.ACTION_DIST_INPUTS]
            assert (logits[~torch.as_tensor(masks)] == rb.MASKED_LOGIT).all(), name
            dist = module.get_exploration_action_dist_cls().from_logits(logits)
            for _ in range(20):
                picked = dist.sample().numpy()
                assert masks[np.arange(n), picked].all(), name              # never an illegal action
            assert masks[np.arange(n), logits.argmax(dim=1).numpy()].all()
        values = module.compute_values(batch())
        assert values.shape == (n,) and torch.isfinite(values).all()
        # kahve's MLP is the module's policy network, layer for layer (the bot masks outside the graph)
        raw = module.action_net(module.policy_net(obs)).numpy()
    np.testing.assert_allclose(rb.mlp_of(module).forward(obs.numpy()), raw, rtol=1e-5, atol=1e-5)


# ----- the config ---------------------------------------------------------------------------------------------------
def test_config_keys_of_the_rllib_backend():
    cfg = config_mod.load("configs/pishti/rllib.yaml")
    assert cfg["backend"] == "rllib" and cfg["rllib"]["num_env_runners"] == 2 and cfg["rllib"]["address"] == ""
    assert rb.train_batch_size(cfg) == cfg["ppo"]["n_steps"] * cfg["n_envs"]
    with pytest.raises(ValueError, match="'backend': rllib trains algorithm ppo only"):
        config_mod.resolve({"game": "pishti", "backend": "rllib", "algorithm": "dqn"})
    with pytest.raises(ValueError, match="'rllib.num_env_runner'.*did you mean 'num_env_runners'"):
        config_mod.resolve({"game": "pishti", "backend": "rllib", "rllib": {"num_env_runner": 1}})
    with pytest.raises(ValueError, match="'backend' cannot change when resuming"):
        config_mod.for_resume({"game": "pishti", "backend": "rllib", "network": {"action_features": False}},
                              ["backend=sb3"])
    ppo = rb.algorithm_config(cfg, __import__("kahve.agents.training.session", fromlist=["x"]).pool_from_config(cfg))
    assert ppo.num_env_runners == 2 and ppo.policies_to_train == ["learner"]
    assert set(ppo.policies) == {"learner", "snapshot_0", "snapshot_1", "snapshot_2", "snapshot_3"}


# ----- the metrics ---------------------------------------------------------------------------------------------------
class _Writer:
    def __init__(self):
        self.scalars: dict[str, list] = {}

    def add_scalar(self, tag, value, step):
        self.scalars.setdefault(tag, []).append((step, value))


def _recorded(learner: dict) -> dict:
    from types import SimpleNamespace
    fake = SimpleNamespace(writer=_Writer(), learn_seconds=lambda: 0.0, start_steps=0)
    rb.RLlibSession._record(fake, {"env_runners": {}, "learners": {"learner": learner}}, 100)
    return {tag: values[-1][1] for tag, values in fake.writer.scalars.items()}


def test_train_metrics_are_what_rllib_reports_and_no_fake_zeros():
    # RLlib 2.60 reports mean_kl_loss = 0.0 whenever the KL term is out of the loss (use_kl_loss False, as here):
    # it is no measurement, and train/approx_kl is the learner's own approx_kl
    learner = {"policy_loss": -0.1, "vf_loss": 2.0, "entropy": 1.5, "vf_explained_var": 0.25, "mean_kl_loss": 0.0,
               "approx_kl": 0.004}
    assert _recorded(learner) == {"train/policy_loss": -0.1, "train/value_loss": 2.0, "train/entropy": 1.5,
                                  "train/explained_variance": 0.25, "train/approx_kl": 0.004}
    # a metric not reported (absent, or the NaN of a reduce over nothing) writes nothing, never a 0
    assert _recorded({"mean_kl_loss": 0.0, "entropy": float("nan"), "policy_loss": np.float64(0.5)}) == {
        "train/policy_loss": 0.5}
    # ... which the run's learner logs
    from kahve.agents.training.session import pool_from_config
    cfg = config_mod.load("configs/pishti/rllib.yaml")
    assert rb.algorithm_config(cfg, pool_from_config(cfg)).learner_class is rb.MaskedPPOLearner


# ----- a run on a local Ray instance --------------------------------------------------------------------------------
def _scalars(folder) -> dict[str, list[float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    scalars: dict[str, list[float]] = {}
    for events in folder.rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events))
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            scalars.setdefault(tag, []).extend(e.value for e in acc.Scalars(tag))
    return scalars


def _tags(folder) -> set[str]:
    return set(_scalars(folder))


def test_a_short_run_logs_the_kl_of_its_updates(tmp_path):
    """PPO updates with a nonzero learning rate move the policy: train/approx_kl is positive after every update
    (it was RLlib's mean_kl_loss, a constant 0 without a KL term in the loss), and small (clipped PPO steps)."""
    import ray

    from kahve.agents.training.backends import train
    cfg = config_mod.load("configs/pishti/rllib.yaml", [
        "total_timesteps=384", "n_envs=1", "network.hidden=[32]", "ppo.n_steps=128", "ppo.batch_size=64",
        "ppo.n_epochs=2", "ppo.learning_rate=0.003", "pretrain.steps=0", "opponents.pool=[{policy: random, weight: 1}]",
        "opponents.self_play.every=0", "evaluation.every=0", "evaluation.games=2", "evaluation.opponents=[random]",
        "evaluation.workers=1", "checkpoint_every=100000", "rllib.num_env_runners=0",
        "rllib.num_envs_per_env_runner=1", f"output={tmp_path / 'run'}"])
    ray.init(address="local", num_cpus=1, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        summary = train(cfg, progress=False)
    finally:
        ray.shutdown()
    scalars = _scalars(tmp_path / "run" / "tb")
    kl = scalars["train/approx_kl"]
    assert len(kl) == summary["rllib"]["iterations"] >= 2
    assert all(0 < x < 0.5 for x in kl), kl
    assert {"train/policy_loss", "train/value_loss", "train/entropy", "train/explained_variance"} <= set(scalars)


def test_trains_pishti_with_two_env_runners_and_the_bot_beats_random(tmp_path):
    """Behaviour cloning, then RLlib PPO with 2 env runners against random, the heuristic and two snapshot modules;
    export with `kahve export`, load with Bot.load, 100 mirrored matches against random; then a resume."""
    import ray

    from kahve.agents import Bot
    from kahve.agents.evaluation.evaluate import evaluate
    from kahve.agents.training.run_dir import RunDir
    from kahve.agents.training.files import load_npz
    from kahve.agents.training.backends import model_from_checkpoint, train
    from kahve.scripts.cli import main

    out = tmp_path / "run"
    cfg = config_mod.load("configs/pishti/rllib.yaml", [
        "total_timesteps=3000", "n_envs=2", "network.hidden=[64]", "ppo.n_steps=512", "ppo.batch_size=256",
        "ppo.n_epochs=4", "ppo.learning_rate=0.0003", "pretrain.steps=4000", "pretrain.epochs=10",
        "pretrain.batch_size=256", "pretrain.learning_rate=0.003", "opponents.self_play.every=1000",
        "opponents.self_play.max_snapshots=2", "opponents.pool=[{policy: random, weight: 1}, {policy: heuristic, "
        "weight: 1}]", "evaluation.every=0", "evaluation.games=20", "evaluation.opponents=[random]",
        "evaluation.workers=1", "checkpoint_every=1000", "rllib.num_env_runners=2", f"output={out}"])
    ray.init(address="local", num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        summary = train(cfg, progress=False)
        assert summary["steps"] >= 3000 and not summary["interrupted"] and summary["backend"] == "rllib"
        # every decision of a network module (learner and snapshots) was checked by the env: none illegal
        checked = summary["rllib"]
        assert checked["illegal_actions"] == 0
        assert checked["decisions_checked"] >= summary["steps"]
        assert checked["decisions_this_session"]["learner"] == summary["steps"]
        assert {"snapshot_0", "snapshot_1"} & set(checked["decisions_this_session"])   # snapshots played as modules
        assert checked["env_runner_weights_match"]          # ... with the snapshots' weights; the learner's too
        run = RunDir(out)
        assert run.policy.is_file() and run.config.is_file() and (run.latest.opponents / "pool.json").is_file()
        assert json.loads(run.latest.state_file.read_text())["backend"] == "rllib"
        tags = _tags(run.tb)
        assert {"eval/random/win_rate", "eval/random/points_per_deal", "charts/steps_per_second",
                "train/policy_loss", "rollout/ep_rew_mean", "selfplay/snapshots"} <= tags

        bot_file = tmp_path / "bot.onnx"
        assert main(["export", str(out), "-o", str(bot_file)]) == 0
        bot = Bot.load(bot_file)
        assert bot.metadata["algorithm"] == "ppo" and bot.metadata["training_steps"] == summary["steps"]
        # the bot's logits are the trained module's: the checkpoint's weights (= policy.npz) through RLlib's module
        module = rb.load_module(cfg, rb.read_weights(run.latest)["learner"], run.latest.weights)
        mlp = rb.mlp_of(module)
        for a, b in zip(mlp.to_arrays().values(), load_npz(run.policy).values()):
            np.testing.assert_array_equal(a, b)
        from kahve import envs
        game = envs.game_class("pishti")(**PISHTI)
        st = game.new_state(5)
        observations = []
        while st.current_player is not None and len(observations) < 12:
            observations.append(st.observation(st.current_player))
            st.apply(st.legal_actions()[0])
        x = torch.as_tensor(np.array(observations))
        with torch.no_grad():
            theirs = module.action_net(module.policy_net(x)).numpy()
        np.testing.assert_allclose(np.stack([bot.logits(o) for o in observations]), theirs, rtol=1e-4, atol=1e-4)

        report = evaluate("pishti", str(bot_file), "random", games=100, settings={"players": 2}, workers=1, seed=11)
        print(f"RLlib bot vs random over {report['games']} mirrored matches: win rate {report['win_rate']:.3f} "
              f"{report['win_rate_ci95']}; illegal actions {checked['illegal_actions']} of "
              f"{checked['decisions_checked']} decisions")
        assert report["games"] == 100 and report["win_rate_ci95"][0] > 0.5

        # an unfinished run exports from its checkpoint; --sb3 is refused in words
        view = model_from_checkpoint(cfg, run, run.latest)
        with pytest.raises(ValueError, match="backend rllib"):
            view.save(tmp_path / "x.zip")

        # resume: weights, Adam's state, pool and schedule carry over; the step count goes on
        resumed_cfg = config_mod.for_resume(run.read_config(), ["total_timesteps=4000"])
        again = train(resumed_cfg, resume_dir=str(out), progress=False)
        assert again["resumed_from"] == summary["steps"] and again["steps"] >= 4000
        assert again["rllib"]["illegal_actions"] == 0 and again["rllib"]["env_runner_weights_match"]
        assert again["rllib"]["decisions_checked"] > checked["decisions_checked"]
    finally:
        ray.shutdown()


def test_a_cluster_that_refuses_the_driver_is_one_line_naming_the_auth_mode(monkeypatch):
    """Ray's ConnectionError for a driver without RAY_AUTH_MODE=token at a token cluster's HOST:PORT says only
    "Failed to connect"; kahve train's error is one line with the refusal from its cause and this process's mode."""
    import ray
    from ray.exceptions import AuthenticationError
    cause = RuntimeError("Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n"
                         "  File \"python/ray/_raylet.pyx\", line 3198, in ray._raylet.GcsClient.__cinit__\n"
                         "ray.exceptions.AuthenticationError: RPC error: InvalidAuthToken: Authentication token is "
                         "missing or incorrect. Note: RAY_AUTH_MODE is currently 'disabled' (not 'token'). Ensure "
                         "that the token for the cluster is available in a local file")

    def refused(**kwargs):
        raise ConnectionError(f"Failed to connect to Ray cluster at {kwargs['address']}") from cause

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refused)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    cfg = config_mod.load("configs/pishti/rllib.yaml", ["rllib.address=10.0.0.7:6379"])
    with pytest.raises(ValueError) as err:
        rb.init_ray(cfg)
    msg = str(err.value)
    assert "\n" not in msg and "'10.0.0.7:6379'" in msg
    assert "(AuthenticationError: RPC error: InvalidAuthToken: Authentication token is missing or incorrect)" in msg
    assert "RAY_AUTH_MODE unset" in msg and "docs/scale-out.md" in msg
    # no cluster at all: Ray's own words; a token mode without a token: its AuthenticationError
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    for error, words in ((ConnectionError("Could not find any running Ray instance. Please specify"), "Could not "
                          "find any running Ray instance"),
                         (AuthenticationError("Token authentication is enabled but no authentication token was "
                                              "found"), "no authentication token was found")):
        monkeypatch.setattr(ray, "init", lambda error=error, **kwargs: (_ for _ in ()).throw(error))
        with pytest.raises(ValueError, match=words) as err:
            rb.init_ray(cfg)
        assert "RAY_AUTH_MODE=token" in str(err.value) and "\n" not in str(err.value)


# ----- a two-node Ray cluster, started and used as docs/scale-out.md says ------------------------------------------
SCALE_OUT = Path(__file__).resolve().parents[2] / "docs" / "scale-out.md"
#: the lines of a cluster block that start each machine's part; the lines above the first are every machine's
_ROLES = {"head": "# the head machine", "node": "# every other machine", "driver": "# on the head"}
#: what the test changes in the doc's commands, and nothing else: a free port, this machine's address, the head's
#: token, one CPU per node (the runs' two env runners then need both nodes), a tiny run
_TINY_RUN = ("total_timesteps=512 n_envs=1 ppo.n_steps=256 ppo.batch_size=128 ppo.n_epochs=1 network.hidden=[16] "
             "pretrain.steps=0 opponents.self_play.every=0 evaluation.every=0 evaluation.games=2 "
             "evaluation.workers=1 evaluation.opponents=[random] rllib.num_envs_per_env_runner=1")


def _cluster_blocks() -> dict[str, dict[str, str]]:
    """The bash blocks of the doc's "A cluster" section, by auth mode, each split into the parts of the head, the
    other machines and the driver (each with the block's lines above its first machine comment in front)."""
    text = SCALE_OUT.read_text()
    section = text.split("\n## A cluster\n", 1)[1].split("\n## ", 1)[0]
    blocks = {}
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        mode = re.search(r"^export RAY_AUTH_MODE=(\w+)$", block, re.M).group(1)
        parts, role = {"common": []}, "common"
        for line in block.splitlines():
            for name, marker in _ROLES.items():
                if line.startswith(marker):
                    role = name
                    parts[role] = []
            parts[role].append(line)
        assert set(parts) == {"common", *_ROLES}, f"{mode}: {sorted(parts)}"
        blocks[mode] = {name: "\n".join(parts["common"] + parts[name]) + "\n" for name in parts}
    return blocks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _shell(script: str, env: dict, timeout: float) -> subprocess.CompletedProcess:
    """``script`` in a bash of its own (``-e``: the first failing command fails it), in the repository; on a
    timeout its whole process group is killed."""
    proc = subprocess.Popen(["bash", "-e", "-c", script], cwd=SCALE_OUT.parents[1], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"timed out after {timeout} s:\n{script}\n{out}\n{err}") from None
    result = subprocess.CompletedProcess(script, proc.returncode, out, err)
    assert result.returncode == 0, f"failed ({result.returncode}):\n{script}\n--- stdout\n{out}\n--- stderr\n{err}"
    return result


def _nodes(status: str) -> int:
    """The active nodes in the output of `ray status`."""
    active = status.split("Active:", 1)[-1].split("Pending:", 1)[0]
    return len(re.findall(r"^ *1 node_", active, re.M)) if "Active:" in status else 0


def _stop_cluster(tmp: str) -> list[int]:
    """Kill every process of the cluster whose Ray folder (RAY_TMPDIR) is ``tmp``, as ``ray stop --force`` does, but
    only these: ``ray stop`` would stop every Ray instance of this user on this machine. A process belongs to it where
    its command line names the folder or its environment has it (the agents and workers that rename themselves
    ``ray::...`` inherited it), or it is a child of one that does. Returns their pids."""
    import psutil                       # Ray's own (ray puts the copy it ships on sys.path; imported above)
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    roots = []
    for p in psutil.process_iter(["cmdline"]):
        if p.pid in mine:
            continue
        try:
            if any(tmp in arg for arg in p.info["cmdline"] or ()) or p.environ().get("RAY_TMPDIR") == tmp:
                roots.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    procs = {p.pid: p for p in roots}
    for p in roots:
        try:
            procs.update({c.pid: c for c in p.children(recursive=True) if c.pid not in mine})
        except psutil.NoSuchProcess:
            pass
    for p in procs.values():
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(list(procs.values()), timeout=30)  # not a limit: reaps the killed
    return sorted(procs)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["token", "disabled"])
def test_trains_through_a_two_node_cluster_as_the_docs_say(tmp_path, mode):
    """docs/scale-out.md's cluster commands, run as written on one machine: a head, a second node that joins it
    (with a home of its own: in token mode it has the token from RAY_AUTH_TOKEN only), `ray status` and a tiny
    `kahve train` with rllib.address=auto on the head; two nodes, and the run finishes and writes its folder."""
    parts = _cluster_blocks()[mode]
    port = _free_port()
    ray_tmp = tempfile.mkdtemp(prefix="kahve-ray-")          # short: Ray's socket paths live in it
    out = tmp_path / "run"

    def fill(script: str, **values) -> str:
        changes = {"6379": str(port), "--num-cpus=16": "--num-cpus=1",
                   "rllib.num_env_runners=30": f"rllib.num_env_runners=2 {_TINY_RUN} output={out}", **values}
        for old, new in changes.items():
            script = script.replace(old, new)
        return script

    for old in ("--port=6379", "HEAD_IP:6379", "--num-cpus=16", "rllib.num_env_runners=30",
                *(("HEAD_TOKEN",) if mode == "token" else ())):
        assert old in "".join(parts.values()), old           # the doc still says what this test changes
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}   # no mode, no address of our own
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", RAY_TMPDIR=ray_tmp,
               RAY_USAGE_STATS_ENABLED="0", OMP_NUM_THREADS="1")
    head_env, node_env = ({**env, "HOME": str(tmp_path / home)} for home in ("head_home", "node_home"))
    for e in (head_env, node_env):
        Path(e["HOME"]).mkdir()
    t0 = time.perf_counter()
    try:
        head = _shell(fill(parts["head"]), head_env, HANG_S)
        ip = re.search(r"Local node IP: (\S+)", head.stdout + head.stderr).group(1)   # as `ray start --head` says
        token = ""
        if mode == "token":
            token = (tmp_path / "head_home" / ".ray" / "auth_token").read_text().strip()
            assert token and token in head.stdout                 # `ray get-auth-token --generate` printed it
        _shell(fill(parts["node"], HEAD_IP=ip, HEAD_TOKEN=token), node_env, HANG_S)
        assert not (tmp_path / "node_home" / ".ray").exists()     # the second node has no token file of its own
        # `ray status` lists a node some seconds after its `ray start` returned (the autoscaler's update period)
        deadline = time.monotonic() + HANG_S
        status = parts["common"] + "ray status\n"
        while _nodes(_shell(status, head_env, HANG_S).stdout) < 2 and time.monotonic() < deadline:
            time.sleep(2)
        driver = _shell(fill(parts["driver"]), head_env, HANG_S)
    finally:
        stopped = _stop_cluster(ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert _nodes(driver.stdout) == 2, driver.stdout
    assert re.search(r"\b0(\.0)?/2\.0 CPU", driver.stdout), driver.stdout
    assert "on the Ray cluster at auto" in driver.stdout and "done: " in driver.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "rllib" and summary["steps"] >= 512 and not summary["interrupted"]
    assert summary["rllib"]["num_env_runners"] == 2 and summary["rllib"]["illegal_actions"] == 0
    assert summary["rllib"]["env_runner_weights_match"] and summary["rllib"]["env_runner_nodes"] == 2
    assert (out / "policy.npz").is_file() and (out / "checkpoints" / "latest" / "model.pt").is_file()
    assert stopped and not _stop_cluster(ray_tmp)                # nothing of the cluster is left
    print(f"two-node cluster ({mode}): {time.perf_counter() - t0:.0f} s; stopped {len(stopped)} Ray processes")
