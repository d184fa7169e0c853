"""Training from a config: masked PPO (sb3-contrib) or masked DQN (:mod:`.dqn`), with behaviour cloning,
self-play, TensorBoard, periodic evaluation, checkpoints and resume.

The run folder's layout, its lock and the checkpoint swap are :class:`~.run_dir.RunDir`'s; what a checkpoint
holds is :mod:`.checkpoint`'s; this module builds the env and the model and keeps the schedule.

``kahve train --resume RUN_DIR`` continues from the run's latest checkpoint with the run's config (overrides may
change the budget and hyperparameters, not the game, the algorithm or the network): step count, weights,
optimizer state, DQN replay buffer, unfinished behaviour cloning, opponent pool and random states carry over.
Episodes in progress when the checkpoint was taken are restarted. Ctrl-C writes a checkpoint before exiting.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ... import envs
from ..evaluation.evaluate import evaluate
from ..policies.bot import bot_expert_input, export_onnx, mlp_from_bot
from ..policies.network import MLP
from ..threads import limit_threads
from .checkpoint import restore_learner, restore_model, save_learner, start_from, start_from_bot
from .config import init_bot
from .league import League
from .learner_env import LearnerEnv
from .opponents import OpponentPool
from .pretrain import Cloning
from .run_dir import Checkpoint, RunDir, load_npz, save_npz


def _make_env(game, settings, pool, seed, own_process: bool = False):
    def make():
        if own_process:
            # an env process of SubprocVecEnv: Ctrl-C is the learner's to handle (it checkpoints, then ends
            # this process); dying on it would leave the learner's pipes with half a message
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return LearnerEnv(game, settings, pool, seed=seed)
    return make


def pool_from_config(cfg: dict) -> OpponentPool:
    """The opponent pool of a fresh run (self-play snapshots join it as training goes)."""
    return OpponentPool([(o["policy"], float(o.get("weight", 1.0))) for o in cfg["opponents"]["pool"]])


def build_vec_env(cfg: dict, pool: OpponentPool):
    """The training envs of ``cfg`` (``vec_env``, ``n_envs``, ``env_workers``) under SB3's ``VecMonitor`` (with
    PPO's ``reward_scale``: :class:`ScaledRewardMonitor`). Env ``i`` is seeded ``seed * 1000 + i`` in every
    layout, so every layout deals the same games."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    from .vec_env import BatchedVecEnv, ScaledRewardMonitor, SharedMemoryVecEnv, default_workers
    if cfg.get("async_rollouts"):            # the config's envs live in a collector process (.async_rollouts)
        from stable_baselines3.common.vec_env import VecMonitor
        from .async_rollouts import CollectorVecEnv
        return VecMonitor(CollectorVecEnv(cfg, pool))
    layout, n = cfg["vec_env"], cfg["n_envs"]
    seeds = [cfg["seed"] * 1000 + i for i in range(n)]
    scale = ppo_reward_scale(cfg)
    if layout == "batched":
        return ScaledRewardMonitor(BatchedVecEnv(cfg["game"], cfg["settings"], pool, seeds), scale)
    if layout == "shared":
        workers = cfg.get("env_workers") or default_workers()
        return ScaledRewardMonitor(SharedMemoryVecEnv(cfg["game"], cfg["settings"], pool, seeds, workers), scale)
    subprocesses = layout == "subproc" and n > 1
    fns = [_make_env(cfg["game"], cfg["settings"], pool, s, subprocesses) for s in seeds]
    if subprocesses:
        vec = SubprocVecEnv(fns, start_method="forkserver")
    else:
        vec = DummyVecEnv(fns)
    return ScaledRewardMonitor(vec, scale)


def ppo_reward_scale(cfg: dict) -> float:
    """What PPO multiplies rewards by (``ppo.reward_scale``); DQN scales in its own buffer (``dqn.reward_scale``)."""
    return float(cfg["ppo"]["reward_scale"]) if cfg["algorithm"] == "ppo" else 1.0


def build_model(cfg: dict, vec, run_dir):
    """A fresh model for ``cfg``; its TensorBoard logs go to ``run_dir``'s tb/ (None: no logs)."""
    import torch.nn as nn
    activation = {"tanh": nn.Tanh, "relu": nn.ReLU}[cfg["network"]["activation"]]
    hidden = list(cfg["network"]["hidden"])
    tb = None if run_dir is None else str(RunDir(run_dir).tb)
    common = dict(verbose=0, seed=cfg["seed"], device=cfg["device"], tensorboard_log=tb)
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    features = {}
    if cfg["network"]["action_features"] and game.action_feature_size:
        from .action_features import feature_layout
        features = dict(action_features=feature_layout(game))
    if cfg["algorithm"] == "ppo":
        if cfg.get("async_rollouts"):
            from .async_rollouts import OverlappedMaskablePPO as MaskablePPO
        else:
            from sb3_contrib import MaskablePPO
        policy = "MlpPolicy"
        if features:
            from .action_features import PPOPolicy as policy
        ppo = {k: v for k, v in cfg["ppo"].items() if k != "reward_scale"}
        model = MaskablePPO(policy, vec, policy_kwargs=dict(net_arch=dict(pi=hidden, vf=hidden),
                                                             activation_fn=activation, **features),
                            **ppo, **common)
        model.reward_scale = ppo_reward_scale(cfg)      # behaviour cloning's value targets (pretrain.py)
        return model
    from .dqn import MaskedDQN
    # a network pretrained on demonstrations explores epsilon-greedily from the start, not at random
    return MaskedDQN("MlpPolicy", vec, policy_kwargs=dict(net_arch=hidden, activation_fn=activation, **features),
                     warmup="policy" if cfg["pretrain"]["steps"] else "random", **cfg["dqn"], **common)


def model_from_checkpoint(cfg: dict, run: RunDir, ck: Checkpoint):
    """The model of a checkpoint, rebuilt from the config with its weights and counters (for export; envs in
    this process, no replay buffer)."""
    if cfg.get("backend", "sb3") == "rllib":
        from .rllib_backend import model_from_checkpoint as rllib_model
        return rllib_model(cfg, run, ck)
    _check_format(ck)
    state = ck.read_state()
    vec = build_vec_env({**cfg, "vec_env": "dummy", "async_rollouts": False}, pool_from_config(cfg))
    model = build_model(cfg, vec, run.root)
    restore_model(model, ck, state.get("model", {}))
    return model


def _check_format(ck: Checkpoint) -> None:
    if not ck.weights.exists() and (ck.folder / "model.zip").exists():
        raise ValueError(f"{ck.folder} is a checkpoint in stable-baselines3's pickle format (model.zip), which "
                         "kahve no longer loads: loading it can run any code. Start a new run")


def evaluate_against(cfg: dict, bot, steps: int, record, log=print) -> dict:
    """The periodic evaluation of a run (both backends): the bot file against each of ``evaluation.opponents``
    on the evaluation settings; ``record(key, value)`` logs each ``eval/...`` scalar. Returns what the schedule
    keeps as ``last_eval``."""
    ev = cfg["evaluation"]
    settings = {**cfg["settings"], **ev["settings"]}
    results = {}
    for k, opponent in enumerate(ev["opponents"]):
        r = evaluate(cfg["game"], str(bot), opponent, games=ev["games"], settings=settings, workers=ev["workers"],
                     seed=cfg["seed"] * 7919 + k)
        key = opponent.replace(":", "_").replace("/", "_")
        record(f"eval/{key}/win_rate", r["win_rate"])
        record(f"eval/{key}/points_per_deal", r["points_per_deal"])
        results[opponent] = {k2: r[k2] for k2 in ("games", "wins", "draws", "losses", "win_rate", "win_rate_ci95",
                                                   "points_per_deal", "points_per_deal_ci95")}
        lo, hi = r["win_rate_ci95"]
        plo, phi = r["points_per_deal_ci95"]    # a few hundred matches: the interval is wide, and it says so
        log(f"[{steps:,} steps] vs {opponent}: win rate {r['win_rate']:.3f} ({lo:.3f}..{hi:.3f}), "
            f"points/deal {r['points_per_deal']:+.2f}" + ("" if math.isnan(plo) else f" ({plo:+.2f}..{phi:+.2f})"))
    return {"steps": steps, "settings": settings, "results": results}


@dataclass
class Schedule:
    """What is due when (in learner steps), and what the run has done in earlier sessions."""
    next_snapshot: int | None
    next_eval: int | None
    next_ckpt: int
    snapshots: int = 0
    last_eval: dict = field(default_factory=dict)
    wall_seconds: float = 0.0      # the wall time of the run's earlier sessions
    pretrain: dict | None = None   # behaviour cloning's progress (:class:`~.pretrain.Cloning`) until it is done
    next_reweight: int | None = None   # the league's next reweighting (pfsp)
    league: dict = field(default_factory=dict)   # the league's win counts (:class:`~.league.League`)

    @classmethod
    def fresh(cls, cfg: dict) -> "Schedule":
        league, pre = cfg["opponents"]["league"], cfg["pretrain"]
        cloning = pre["steps"] or pre["generations"]          # (expert iteration from init_from: no cloning first)
        return cls(cfg["opponents"]["self_play"]["every"] or None, cfg["evaluation"]["every"] or None,
                   cfg["checkpoint_every"], pretrain=Cloning(cfg, None).progress if cloning else None,
                   next_reweight=league["every"] if league["weighting"] == "pfsp" else None)

    @classmethod
    def from_state(cls, state: dict, source) -> "Schedule":
        try:
            s = cls(state["next_snapshot"], state["next_eval"], state["next_ckpt"], state["snapshots"],
                    state.get("last_eval", {}), float(state.get("wall_seconds", 0.0)), state.get("pretrain"),
                    state.get("next_reweight"), state.get("league") or {})
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{source}: the schedule is missing or wrong ({type(err).__name__}: {err})") from None
        steps = (s.next_snapshot, s.next_eval, s.next_ckpt, s.snapshots, s.next_reweight)
        counts_ok = isinstance(s.league, dict) and all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v) for v in s.league.values())
        if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in steps) \
                or s.next_ckpt is None or not isinstance(s.last_eval, dict) or not counts_ok:
            raise ValueError(f"{source}: the schedule is missing or wrong")
        if s.pretrain is not None:
            Cloning.check(s.pretrain, source)
        return s


class Trainer:
    """One session of a training run: behaviour cloning if due, then learning, with self-play snapshots,
    evaluations and checkpoints at their step counts."""

    def __init__(self, cfg: dict, run: RunDir, checkpoint: Checkpoint | None = None, log=print):
        self.cfg = cfg
        self.run_dir = run
        self.log = log
        self.session_start: float | None = None
        self.learn_start: float | None = None
        self.cloning_seconds = 0.0                      # this session's
        if checkpoint is None:
            self.schedule = Schedule.fresh(cfg)
            self.pool = pool_from_config(cfg)
        else:
            _check_format(checkpoint)
            state = checkpoint.read_state()
            self.schedule = Schedule.from_state(state, checkpoint.state_file)
            summary = run.read_summary()          # a finished session also counts its final evaluation
            if summary and summary.get("steps") == state["steps"] and not summary.get("interrupted"):
                self.schedule.wall_seconds = max(self.schedule.wall_seconds, float(summary["wall_seconds_total"]))
            self.pool = OpponentPool.load(checkpoint.opponents)
        league = cfg["opponents"]["league"]
        self.league = (League(league["power"], league["floor"], league["window"], self.schedule.league)
                       if league["weighting"] == "pfsp" else None)
        #: the configured weight of each baseline, by id (a snapshot's is self_play.weight)
        self.base_weights = {o["policy"]: float(o.get("weight", 1.0)) for o in cfg["opponents"]["pool"]}
        self.cloning = None if self.schedule.pretrain is None else Cloning(cfg, self.pool, self.schedule.pretrain,
                                                                           log=log, run_dir=run)
        if self.cloning is not None and checkpoint is not None and self.schedule.pretrain["collected"]:
            self.cloning.demonstrations = Cloning.check_demonstrations(load_npz(checkpoint.demonstrations),
                                                                       checkpoint.demonstrations)
        self.vec = build_vec_env(cfg, self.pool)
        # SubprocVecEnv, SharedMemoryVecEnv, CollectorVecEnv
        self.subprocesses = hasattr(self.vec.venv, "processes")
        try:
            self.model = build_model(cfg, self.vec, run.root)
            if checkpoint is None and cfg["init_from"]:
                bot = init_bot(cfg)
                if bot is None:
                    start_from(self.model, RunDir(os.path.expanduser(cfg["init_from"])).latest)
                    log(f"the network starts from {cfg['init_from']}'s latest checkpoint")
                else:
                    game = envs.game_class(cfg["game"])(**cfg["settings"])
                    start_from_bot(self.model, mlp_from_bot(bot, game.action_feature_size), str(bot))
                    log(f"the actor starts from the bot file {bot} (the critic starts fresh)")
                    if bot_expert_input(bot) is not None:
                        log(f"{bot} also has an expert network (docs/design.md, \"Bots\"): this run trains and "
                            "exports its main network only")
            if checkpoint is not None:
                restore_learner(checkpoint, state, self.model, self.vec, cfg["seed"], log=log)
                if self.cloning is None and getattr(self.model, "demo_weight", 0) > 0 \
                        and checkpoint.demonstrations.exists():  # DQN: the demonstrations its margin loss reads
                    self.model.keep_demonstrations(Cloning.check_demonstrations(load_npz(checkpoint.demonstrations),
                                                                                checkpoint.demonstrations))
        except BaseException:
            self.vec.close()
            raise
        self.start_steps = self.model.num_timesteps
        self.resumed = checkpoint is not None

    # ----- the schedule, run from an SB3 callback after every vectorised step -----------------------
    def on_step(self, steps: int) -> None:
        due = self.schedule
        if due.next_snapshot is not None and steps >= due.next_snapshot:
            self_play = self.cfg["opponents"]["self_play"]
            self.pool = self.pool.with_snapshot(MLP.from_sb3(self.model), self_play["weight"],
                                                self_play["max_snapshots"])
            self.vec.env_method("set_pool", self.pool)
            due.snapshots += 1
            self.model.logger.record("selfplay/snapshots", due.snapshots)
            due.next_snapshot += self_play["every"]
        if self.league is not None and due.next_reweight is None:     # pfsp switched on when resuming
            due.next_reweight = steps + self.cfg["opponents"]["league"]["every"]
        if due.next_reweight is not None and steps >= due.next_reweight:
            self.reweight()
            due.next_reweight += self.cfg["opponents"]["league"]["every"]
        if due.next_eval is not None and steps >= due.next_eval:
            self.evaluate(steps)
            due.next_eval += self.cfg["evaluation"]["every"]
        if steps >= due.next_ckpt:
            self.save_checkpoint()
            due.next_ckpt += self.cfg["checkpoint_every"]

    # ----- the league (opponents.league.weighting: pfsp) ------------------------------------------------------
    def record_episodes(self, infos) -> None:
        """Count the finished episodes of a vectorised step against the pool entries they were played with."""
        if self.league is None:
            return
        ids = self.pool.ids
        for info in infos:
            for k in info.get("opponent_entries", ()):
                if k < len(ids):             # an episode drawn just before the pool changed may name a gone entry
                    self.league.record(ids[k], info["won"])

    def reweight(self) -> None:
        """The pool's weights from the league's win rates (:mod:`.league`), pushed to every env."""
        self.league.forget_all_but(self.pool.ids)
        base = [self.base_weights.get(i, self.cfg["opponents"]["self_play"]["weight"]) for i in self.pool.ids]
        weights = self.league.weights(self.pool.ids, base)
        self.pool = self.pool.with_weights(weights)
        self.vec.env_method("set_pool_weights", weights)
        self.schedule.league = self.league.state()
        total = sum(weights)
        for i, w in zip(self.pool.ids, weights):
            key = i.replace(":", "_").replace("/", "_")
            self.model.logger.record(f"league/{key}/share", w / total)
            self.model.logger.record(f"league/{key}/win_rate", self.league.win_rate(i))

    def export(self, path: Path, evaluation: dict | None = None) -> Path:
        meta = self.run_dir.bot_metadata(self.cfg, self.model.num_timesteps, evaluation)
        return export_onnx(MLP.from_sb3(self.model), path, meta)

    def evaluate(self, steps: int) -> dict:
        bot = self.export(self.run_dir.eval_bot)
        self.schedule.last_eval = evaluate_against(self.cfg, bot, steps, self.model.logger.record, self.log)
        self.model.logger.dump(self.model.num_timesteps)
        return self.schedule.last_eval

    # ----- checkpoints ------------------------------------------------------------------------------------
    def save_checkpoint(self, envs_reachable: bool = True) -> None:
        """Write ``checkpoints/latest``. ``envs_reachable=False`` (Ctrl-C with env processes, whose pipes may
        hold half a message): the envs' random states are left out, and a resume gives them new ones."""
        def fill(ck: Checkpoint) -> dict:
            state = save_learner(ck, self.model, self.pool, self.vec, envs_reachable)
            if self.cloning is not None and self.cloning.demonstrations is not None:
                save_npz(ck.demonstrations, self.cloning.demonstrations)
            elif getattr(self.model, "demonstration_arrays", None) is not None:    # DQN's demo_weight keeps them
                save_npz(ck.demonstrations, self.model.demonstration_arrays)
            if self.league is not None:
                self.schedule.league = self.league.state()
            schedule = asdict(self.schedule)
            schedule["wall_seconds"] = self.schedule.wall_seconds + self.session_seconds()
            return {**state, **schedule}
        self.run_dir.write_checkpoint(fill)

    def session_seconds(self) -> float:
        return 0.0 if self.session_start is None else time.perf_counter() - self.session_start

    def learn_seconds(self) -> float:
        return 0.0 if self.learn_start is None else time.perf_counter() - self.learn_start

    # ----- a session --------------------------------------------------------------------------------------
    def learn(self, progress: bool) -> None:
        from stable_baselines3.common.callbacks import BaseCallback
        trainer = self

        class OnStep(BaseCallback):
            def _on_step(self) -> bool:
                trainer.record_episodes(info for info, done in zip(self.locals["infos"], self.locals["dones"])
                                        if done)
                trainer.on_step(self.num_timesteps)
                seconds = trainer.learn_seconds()
                if seconds > 0 and self.n_calls % 50 == 0:
                    self.logger.record("charts/steps_per_second",
                                       (self.num_timesteps - trainer.start_steps) / seconds)
                return True

        remaining = self.cfg["total_timesteps"] - self.model.num_timesteps
        self.learn_start = time.perf_counter()
        if remaining > 0:
            self.model.learn(remaining, callback=OnStep(), reset_num_timesteps=self.start_steps == 0,
                             progress_bar=progress, tb_log_name="run")
        else:   # a run stopped after its last step, before its final evaluation: the logger learn() would make
            from stable_baselines3.common.utils import configure_logger
            self.model.set_logger(configure_logger(0, str(self.run_dir.tb), "run", reset_num_timesteps=False))

    def run(self, progress: bool = True) -> dict:
        self.session_start = time.perf_counter()
        interrupted = False
        try:
            try:
                if self.cloning is not None:
                    try:
                        report = self.cloning.run(self.model, show_progress=progress)
                    finally:
                        self.cloning_seconds = self.cloning.seconds
                    self.run_dir.write_pretrain_report(report)
                    self.schedule.pretrain, self.cloning = None, None
                    self.save_checkpoint()                 # the cloned network, before any learning
                self.learn(progress)
            except KeyboardInterrupt:
                interrupted = True
            self.save_checkpoint(envs_reachable=not (interrupted and self.subprocesses))
            if interrupted and self.subprocesses:
                self.log("note: the env processes were interrupted, so their random streams were not saved; "
                         "a resume deals from new ones")
            summary = self.summary(interrupted)
            if not interrupted:
                MLP.from_sb3(self.model).save(self.run_dir.policy)
                summary["evaluation"] = self.evaluate(self.model.num_timesteps)
            self.run_dir.write_summary(summary)
            self.log(self.closing_line(summary))
        finally:
            self.close(interrupted)
        return summary

    def summary(self, interrupted: bool) -> dict:
        steps, wall = self.model.num_timesteps, self.learn_seconds()
        this_session = steps - self.start_steps
        return {"steps": steps, "steps_this_session": this_session, "resumed_from": self.start_steps if self.resumed
                else None, "wall_seconds": wall, "pretrain_seconds": self.cloning_seconds,
                "wall_seconds_total": self.schedule.wall_seconds + self.session_seconds(),
                "steps_per_second": this_session / wall if wall > 0 else None, "interrupted": interrupted}

    def closing_line(self, summary: dict) -> str:
        steps, rate, cloning = summary["steps"], summary["steps_per_second"], summary["pretrain_seconds"]
        if self.learn_start is None:                      # stopped while behaviour cloning
            session = f"{cloning:.0f} s of behaviour cloning"
        else:
            session = (f"{summary['steps_this_session']:,} steps in {summary['wall_seconds']:.0f} s"
                       + (f" ({rate:.0f} steps/s)" if rate is not None else "")
                       + (f" after {cloning:.0f} s of behaviour cloning" if cloning else ""))
        whole = (f"; the run: {steps:,} steps, {summary['wall_seconds_total']:.0f} s in all sessions"
                 if self.resumed else "")
        if summary["interrupted"]:
            return (f"interrupted: this session {session}{whole}; checkpoint saved at {steps:,} steps; continue with "
                    f"`kahve train --resume {self.run_dir}`")
        return f"done: {'this session ' if self.resumed else ''}{session}{whole}; run folder {self.run_dir}"

    def close(self, interrupted: bool) -> None:
        venv = self.vec.venv
        if interrupted and self.subprocesses and not venv.closed:
            # a pipe may hold half a message: end the env processes instead of asking them to close
            for process in venv.processes:
                process.terminate()
            for process in venv.processes:
                process.join(10)
            venv.closed = True
        self.vec.close()


@contextlib.contextmanager
def opened_run(cfg: dict, resume_dir: str | None, log=print):
    """The run folder of a training session, locked while it runs, with the config written: a new one (a folder
    that already holds a run is refused) or the one to resume (a finished run is refused). Yields ``(run,
    checkpoint)``, the checkpoint None for a new run. Both backends train inside it."""
    run = RunDir(resume_dir if resume_dir else cfg["output"])
    if resume_dir and not run.root.is_dir():
        raise FileNotFoundError(f"no run folder at {run}")
    if not resume_dir:
        run.create()
    with run.lock():
        if resume_dir:
            checkpoint = run.recover()
            if checkpoint is None:
                raise FileNotFoundError(f"{run} has no checkpoint to resume (checkpoints/latest/state.json)")
            steps = checkpoint.read_state()["steps"]
            _refuse_finished(run, cfg, steps)
            log(f"resuming {run} from its checkpoint at {steps:,} steps (of {cfg['total_timesteps']:,})")
        else:
            if run.find_checkpoint() is not None:
                raise ValueError(f"{run} already holds a run; resume it with --resume {run}, or choose "
                                 f"another output folder (--override output=...)")
            checkpoint = None
        run.write_config(cfg)
        yield run, checkpoint


def train(cfg: dict, resume_dir: str | None = None, progress: bool = True, log=print) -> dict:
    """Run (or resume) a training run; returns the summary. The run folder is locked while it runs."""
    if cfg.get("backend", "sb3") == "rllib":          # Ray RLlib (the rllib extra): .rllib_backend, same run folder
        from .rllib_backend import train as train_rllib
        return train_rllib(cfg, resume_dir, progress=progress, log=log)
    n = limit_threads(cfg["torch_threads"])
    import torch
    torch.set_num_threads(n)
    with opened_run(cfg, resume_dir, log) as (run, checkpoint):
        layout = cfg["vec_env"] + (", rollouts collected in a second process" if cfg["async_rollouts"] else "")
        log(f"training {cfg['algorithm']} on {cfg['game']} {cfg['settings']} for {cfg['total_timesteps']:,} steps "
            f"with {cfg['n_envs']} envs ({layout}); run folder {run}; TensorBoard: tensorboard --logdir {run.tb}")
        return Trainer(cfg, run, checkpoint, log=log).run(progress=progress)


def _refuse_finished(run: RunDir, cfg: dict, steps: int) -> None:
    if steps < cfg["total_timesteps"]:
        return
    summary = run.read_summary()
    if summary and not summary.get("interrupted") and summary.get("steps") == steps and run.policy.is_file():
        raise ValueError(f"{run} is finished ({steps:,} steps of total_timesteps {cfg['total_timesteps']:,}); to "
                         f"train on, raise the budget: kahve train --resume {run} --override total_timesteps=N")
