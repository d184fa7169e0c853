"""The RLlib backend (issue 22): ``backend: rllib`` trains a config with Ray RLlib's PPO on local env runners, into
the same run folder, exported by the same ``kahve export``; the masked module never picks an illegal action.

Skipped where Ray RLlib is not installed (``pip install -e '.[test,rllib]'`` installs it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

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
