"""``backend: sb3``: a training session with stable-baselines3 in this process (masked PPO from sb3-contrib, or
kahve's masked DQN). The schedule is :class:`~..session.Session`'s; this module builds the envs and the model,
learns through SB3's ``learn`` with a callback that runs the schedule, and says what its checkpoint holds
(:mod:`.checkpoint`)."""

from __future__ import annotations

import os
import time

from kahve import envs

from ...policies.bot import bot_expert_input, mlp_from_bot
from ...policies.network import MLP
from ...threads import limit_threads
from ..config import init_bot
from ..files import load_npz, save_npz
from ..pretrain import Cloning
from ..run_dir import Checkpoint, RunDir
from ..session import Session, opened_run
from .checkpoint import restore_learner, save_learner, start_from, start_from_bot
from .model import check_format, make_model, sync_vec_env


def build_vec_env(cfg: dict, pool):
    """The training envs of ``cfg``: with ``async_rollouts``, in a collector process (:mod:`.async_rollouts`),
    else stepped by this one (:func:`.model.sync_vec_env`)."""
    if cfg.get("async_rollouts"):
        from stable_baselines3.common.vec_env import VecMonitor
        from .async_rollouts import CollectorVecEnv
        return VecMonitor(CollectorVecEnv(cfg, pool))
    return sync_vec_env(cfg, pool)


def build_model(cfg: dict, vec, run_dir):
    """A fresh model for ``cfg``: with ``async_rollouts``, the PPO that updates while the next rollout is
    collected."""
    ppo_class = None
    if cfg.get("async_rollouts"):
        from .async_rollouts import OverlappedMaskablePPO as ppo_class
    return make_model(cfg, vec, run_dir, ppo_class)


class Sb3Session(Session):
    """One session of an sb3 run: the envs of ``vec_env``, the model, and SB3's ``learn`` with the schedule run
    from a callback after every vectorised step."""

    backend = "sb3"

    def __init__(self, cfg: dict, run: RunDir, checkpoint: Checkpoint | None = None, log=print):
        super().__init__(cfg, run, checkpoint, log)
        self.vec = build_vec_env(cfg, self.pool)
        # SubprocVecEnv, SharedMemoryVecEnv, CollectorVecEnv
        self.subprocesses = hasattr(self.vec.venv, "processes")
        try:
            self.model = build_model(cfg, self.vec, run.root)
            if checkpoint is None and cfg["init_from"]:
                self._start_from(cfg["init_from"])
            if checkpoint is not None:
                restore_learner(checkpoint, self.state, self.model, self.vec, cfg["seed"], log=log)
                if self.cloning is None and getattr(self.model, "demo_weight", 0) > 0 \
                        and checkpoint.demonstrations.exists():  # DQN: the demonstrations its margin loss reads
                    self.model.keep_demonstrations(Cloning.check_demonstrations(load_npz(checkpoint.demonstrations),
                                                                                checkpoint.demonstrations))
        except BaseException:
            self.vec.close()
            raise
        self.start_steps = self.model.num_timesteps

    def _start_from(self, name: str) -> None:
        bot = init_bot(self.cfg)
        if bot is None:
            start_from(self.model, RunDir(os.path.expanduser(name)).latest)
            self.log(f"the network starts from {name}'s latest checkpoint")
            return
        game = envs.game_class(self.cfg["game"])(**self.cfg["settings"])
        start_from_bot(self.model, mlp_from_bot(bot, game.action_feature_size), str(bot))
        self.log(f"the actor starts from the bot file {bot} (the critic starts fresh)")
        if bot_expert_input(bot) is not None:
            self.log(f"{bot} also has an expert network (docs/design.md, \"Bots\"): this run trains and exports its "
                     "main network only")

    # ----- the hooks of the schedule --------------------------------------------------------------------------
    def check_checkpoint(self, checkpoint: Checkpoint, state: dict) -> None:
        check_format(checkpoint)

    @property
    def steps(self) -> int:
        return self.model.num_timesteps

    def network(self) -> MLP:
        return MLP.from_sb3(self.model)

    def cloning_target(self):
        return self.model

    def pool_changed(self, weights_only: bool = False) -> None:
        if weights_only:
            self.vec.env_method("set_pool_weights", [w for _, w in self.pool.entries])
        else:
            self.vec.env_method("set_pool", self.pool)

    def record(self, key: str, value: float) -> None:
        self.model.logger.record(key, value)

    def flush(self) -> None:
        self.model.logger.dump(self.model.num_timesteps)

    def checkpoint_files(self, ck: Checkpoint, envs_reachable: bool) -> dict:
        state = save_learner(ck, self.model, self.pool, self.vec, envs_reachable)
        cloning = self.cloning is not None and self.cloning.demonstrations is not None
        if not cloning and getattr(self.model, "demonstration_arrays", None) is not None:   # DQN's demo_weight
            save_npz(ck.demonstrations, self.model.demonstration_arrays)
        return state

    def own_processes(self) -> bool:
        return self.subprocesses

    def learn(self, progress: bool) -> None:
        from stable_baselines3.common.callbacks import BaseCallback
        session = self

        class OnStep(BaseCallback):
            def _on_step(self) -> bool:
                session.record_episodes(info for info, done in zip(self.locals["infos"], self.locals["dones"])
                                        if done)
                session.on_step(self.num_timesteps)
                seconds = session.learn_seconds()
                if seconds > 0 and self.n_calls % 50 == 0:
                    self.logger.record("charts/steps_per_second",
                                       (self.num_timesteps - session.start_steps) / seconds)
                return True

        remaining = self.cfg["total_timesteps"] - self.model.num_timesteps
        self.learn_start = time.perf_counter()
        if remaining > 0:
            self.model.learn(remaining, callback=OnStep(), reset_num_timesteps=self.start_steps == 0,
                             progress_bar=progress, tb_log_name="run")
        else:   # a run stopped after its last step, before its final evaluation: the logger learn() would make
            from stable_baselines3.common.utils import configure_logger
            self.model.set_logger(configure_logger(0, str(self.run_dir.tb), "run", reset_num_timesteps=False))

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


def train(cfg: dict, resume_dir: str | None = None, progress: bool = True, log=print) -> dict:
    """Run (or resume) a training run with backend sb3; returns the summary."""
    import torch
    torch.set_num_threads(limit_threads(cfg["torch_threads"]))
    with opened_run(cfg, resume_dir, log) as (run, checkpoint):
        layout = cfg["vec_env"] + (", rollouts collected in a second process" if cfg["async_rollouts"] else "")
        tables = f" and {len(cfg['tables'])} more tables {cfg['tables']}" if cfg["tables"] else ""
        log(f"training {cfg['algorithm']} on {cfg['game']} {cfg['settings']}{tables} for {cfg['total_timesteps']:,} "
            f"steps with {cfg['n_envs']} envs ({layout}); run folder {run}; TensorBoard: tensorboard --logdir {run.tb}")
        return Sb3Session(cfg, run, checkpoint, log=log).run(progress=progress)
