"""Training from a config: masked PPO (sb3-contrib) or masked DQN (:mod:`.dqn`), with self-play,
TensorBoard, periodic evaluation, checkpoints and resume.

A run folder holds::

    config.yaml               the resolved config (every default filled in)
    tb/                       TensorBoard logs: SB3's scalars, eval/<opponent>/win_rate and points_per_deal,
                              charts/steps_per_second, selfplay/snapshots
    checkpoints/latest/       model.zip (SB3, with optimizer state and step count), replay_buffer.pkl (DQN),
                              opponents/ (the pool: pool.json + .npz snapshots), state.json (RNG states,
                              schedule); a checkpoint is written to a temporary folder and renamed, so a
                              crash mid-save never leaves a broken "latest"
    policy.npz                the final network (numpy arrays)
    summary.json              steps, wall time, steps/s and the final evaluation

``kahve train --resume RUN_DIR`` continues from ``checkpoints/latest`` with the same config: step count,
optimizer state, DQN replay buffer, opponent pool and random states carry over. Episodes in progress when
the checkpoint was taken are restarted. Ctrl-C writes a checkpoint before exiting.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

import numpy as np
import yaml

from ..policies.bot import bot_metadata, export_onnx
from ..evaluation.evaluate import evaluate
from ..policies.network import MLP
from .opponents import OpponentPool
from .learner_env import LearnerEnv
from ..threads import limit_threads


def _make_env(game, settings, pool, seed):
    def make():
        return LearnerEnv(game, settings, pool, seed=seed)
    return make


def pool_from_config(cfg: dict) -> OpponentPool:
    """The opponent pool of a fresh run (self-play snapshots join it as training goes)."""
    return OpponentPool([(o["policy"], float(o.get("weight", 1.0))) for o in cfg["opponents"]["pool"]])


def build_vec_env(cfg: dict, pool: OpponentPool):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor
    fns = [_make_env(cfg["game"], cfg["settings"], pool, cfg["seed"] * 1000 + i) for i in range(cfg["n_envs"])]
    if cfg["vec_env"] == "subproc" and cfg["n_envs"] > 1:
        vec = SubprocVecEnv(fns, start_method="forkserver")
    else:
        vec = DummyVecEnv(fns)
    return VecMonitor(vec)


def build_model(cfg: dict, vec, run_dir: Path):
    import torch.nn as nn
    activation = {"tanh": nn.Tanh, "relu": nn.ReLU}[cfg["network"]["activation"]]
    hidden = list(cfg["network"]["hidden"])
    common = dict(verbose=0, seed=cfg["seed"], device=cfg["device"], tensorboard_log=str(run_dir / "tb"))
    if cfg["algorithm"] == "ppo":
        from sb3_contrib import MaskablePPO
        return MaskablePPO("MlpPolicy", vec, policy_kwargs=dict(net_arch=dict(pi=hidden, vf=hidden),
                                                                 activation_fn=activation),
                           **cfg["ppo"], **common)
    from .dqn import MaskedDQN
    return MaskedDQN("MlpPolicy", vec, policy_kwargs=dict(net_arch=hidden, activation_fn=activation),
                     **cfg["dqn"], **common)


def load_model(cfg: dict, vec, path: Path):
    if cfg["algorithm"] == "ppo":
        from sb3_contrib import MaskablePPO
        return MaskablePPO.load(path, env=vec, device=cfg["device"])
    from .dqn import MaskedDQN
    return MaskedDQN.load(path, env=vec, device=cfg["device"])


class Trainer:
    """One training run: owns the run folder, the env, the model and the opponent pool."""

    def __init__(self, cfg: dict, run_dir: Path, resume: bool = False, log=print):
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.log = log
        self.ckpt = self.run_dir / "checkpoints" / "latest"
        self.rng = random.Random(cfg["seed"])
        self.snapshots = 0
        self.next_snapshot = cfg["opponents"]["self_play"]["every"] or None
        self.next_eval = cfg["evaluation"]["every"] or None
        self.next_ckpt = cfg["checkpoint_every"]
        self.last_eval: dict = {}
        self.pretrain_seconds = 0.0
        self.start_steps = 0
        self.wall_before = 0.0
        if resume:
            state = json.loads((self.ckpt / "state.json").read_text())
            self.pool = OpponentPool.load(self.ckpt / "opponents")
            self.rng.setstate(_tuple_state(state["rng"]))
            np.random.set_state(_np_state(state["np_rng"]))
            self.snapshots = state["snapshots"]
            self.next_snapshot, self.next_eval, self.next_ckpt = state["next_snapshot"], state["next_eval"], \
                state["next_ckpt"]
            self.last_eval = state.get("last_eval", {})
            self.wall_before = state.get("wall_seconds", 0.0)
        else:
            self.pool = pool_from_config(cfg)
        self.vec = build_vec_env(cfg, self.pool)
        if resume:
            self.model = load_model(cfg, self.vec, self.ckpt / "model.zip")
            if cfg["algorithm"] == "dqn" and (self.ckpt / "replay_buffer.pkl").exists():
                self.model.load_replay_buffer(self.ckpt / "replay_buffer.pkl")
            env_states = state.get("env_states")
            if env_states and len(env_states) == cfg["n_envs"]:
                for i, s in enumerate(env_states):
                    self.vec.env_method("set_rng_state", s, indices=[i])
            self.start_steps = self.model.num_timesteps
        else:
            self.model = build_model(cfg, self.vec, self.run_dir)
            if cfg["pretrain"]["steps"]:
                self.pretrain()

    def pretrain(self) -> None:
        from .pretrain import behaviour_clone, collect_demonstrations
        cfg, pre = self.cfg, self.cfg["pretrain"]
        workers = min(cfg["n_envs"], os.cpu_count() or 1)

        def collect(steps: int, seed: int, actor=None) -> dict:
            return collect_demonstrations(cfg["game"], cfg["settings"], self.pool, pre["teacher"], steps,
                                          cfg["ppo"]["gamma"], seed, workers=workers, actor=actor)

        t = time.perf_counter()
        data = collect(pre["steps"], cfg["seed"] + 17)
        self.log(f"behaviour cloning: {len(data['actions']):,} decisions of {pre['teacher']} collected in "
                 f"{time.perf_counter() - t:.0f} s")
        stats = behaviour_clone(self.model, data, pre["epochs"], pre["batch_size"], pre["learning_rate"],
                                cfg["seed"], log=self.log)
        rounds = []
        for k in range(pre["dagger_rounds"]):
            more = collect(pre["dagger_steps"] or pre["steps"], cfg["seed"] + 1000 * (k + 1), MLP.from_sb3(self.model))
            played_like_teacher = float(more["agree"].mean())
            self.log(f"DAgger round {k + 1}/{pre['dagger_rounds']}: the clone chose the teacher's move in "
                     f"{played_like_teacher:.1%} of {len(more['actions']):,} states it reached")
            data = {key: np.concatenate([data[key], more[key]]) for key in data}
            stats = behaviour_clone(self.model, data, pre["dagger_epochs"], pre["batch_size"], pre["learning_rate"],
                                    cfg["seed"] + k + 1, log=self.log)
            rounds.append({"round": k + 1, "states": len(more["actions"]), "played_like_teacher": played_like_teacher})
        self.pretrain_seconds = time.perf_counter() - t
        with open(self.run_dir / "pretrain.json", "w") as f:
            json.dump({"decisions": len(data["actions"]), "seconds": self.pretrain_seconds, **stats,
                       "dagger": rounds}, f, indent=1)

    # ----- the schedule, run from an SB3 callback after every vectorised step -----------------------
    def on_step(self, steps: int) -> None:
        if self.next_snapshot is not None and steps >= self.next_snapshot:
            sp = self.cfg["opponents"]["self_play"]
            self.pool = self.pool.with_snapshot(MLP.from_sb3(self.model), sp["weight"], sp["max_snapshots"])
            self.vec.env_method("set_pool", self.pool)
            self.snapshots += 1
            self.model.logger.record("selfplay/snapshots", self.snapshots)
            self.next_snapshot += sp["every"]
        if self.next_eval is not None and steps >= self.next_eval:
            self.evaluate(steps)
            self.next_eval += self.cfg["evaluation"]["every"]
        if steps >= self.next_ckpt:
            self.save_checkpoint()
            self.next_ckpt += self.cfg["checkpoint_every"]

    def export(self, path: Path, evaluation: dict | None = None) -> Path:
        from kahve import envs
        game = envs.game_class(self.cfg["game"])(**self.cfg["settings"])
        meta = bot_metadata(game, self.cfg["algorithm"], self.model.num_timesteps, evaluation,
                            network=self.cfg["network"], config=self.cfg)
        return export_onnx(MLP.from_sb3(self.model), path, meta)

    def evaluate(self, steps: int) -> dict:
        ev = self.cfg["evaluation"]
        bot = self.export(self.run_dir / "eval_bot.onnx")
        settings = {**self.cfg["settings"], **ev["settings"]}
        results = {}
        for k, opponent in enumerate(ev["opponents"]):
            r = evaluate(self.cfg["game"], str(bot), opponent, games=ev["games"], settings=settings,
                         workers=ev["workers"], seed=self.cfg["seed"] * 7919 + k)
            key = opponent.replace(":", "_").replace("/", "_")
            self.model.logger.record(f"eval/{key}/win_rate", r["win_rate"])
            self.model.logger.record(f"eval/{key}/points_per_deal", r["points_per_deal"])
            results[opponent] = {k2: r[k2] for k2 in ("games", "wins", "draws", "losses", "win_rate", "win_rate_ci95",
                                                       "points_per_deal", "points_per_deal_ci95")}
            lo, hi = r["win_rate_ci95"]
            self.log(f"[{steps:,} steps] vs {opponent}: win rate {r['win_rate']:.3f} ({lo:.3f}..{hi:.3f}), "
                     f"points/deal {r['points_per_deal']:+.2f}")
        self.model.logger.dump(self.model.num_timesteps)
        self.last_eval = {"steps": steps, "settings": settings, "results": results}
        return self.last_eval

    def save_checkpoint(self) -> None:
        tmp = self.run_dir / "checkpoints" / "latest.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        self.model.save(tmp / "model.zip")
        if self.cfg["algorithm"] == "dqn":
            self.model.save_replay_buffer(tmp / "replay_buffer.pkl")
        self.pool.save(tmp / "opponents")
        state = {"steps": self.model.num_timesteps, "rng": _json_state(self.rng.getstate()),
                 "np_rng": _json_np_state(np.random.get_state()), "snapshots": self.snapshots,
                 "next_snapshot": self.next_snapshot, "next_eval": self.next_eval, "next_ckpt": self.next_ckpt,
                 "last_eval": self.last_eval, "wall_seconds": self.wall_before + self.elapsed(),
                 "env_states": self.vec.env_method("get_rng_state")}
        (tmp / "state.json").write_text(json.dumps(state))
        if self.ckpt.exists():
            shutil.rmtree(self.ckpt)
        tmp.rename(self.ckpt)

    def elapsed(self) -> float:
        return time.perf_counter() - getattr(self, "_t0", time.perf_counter())

    def run(self, progress: bool = True) -> dict:
        from stable_baselines3.common.callbacks import BaseCallback
        trainer = self

        class Schedule(BaseCallback):
            def _on_step(self) -> bool:
                trainer.on_step(self.num_timesteps)
                el = trainer.elapsed()
                if el > 0 and self.n_calls % 50 == 0:
                    self.logger.record("charts/steps_per_second", (self.num_timesteps - trainer.start_steps) / el)
                return True

        total = self.cfg["total_timesteps"]
        remaining = max(0, total - self.model.num_timesteps)
        self._t0 = time.perf_counter()
        interrupted = False
        try:
            if remaining:
                self.model.learn(remaining, callback=Schedule(), reset_num_timesteps=self.start_steps == 0,
                                 progress_bar=progress, tb_log_name="run")
        except KeyboardInterrupt:
            interrupted = True
        self.save_checkpoint()
        wall = self.elapsed()
        steps = self.model.num_timesteps
        summary = {"steps": steps, "steps_this_session": steps - self.start_steps, "wall_seconds": wall,
                   "pretrain_seconds": self.pretrain_seconds,
                   "wall_seconds_total": self.wall_before + wall + self.pretrain_seconds,
                   "steps_per_second": (steps - self.start_steps) / wall if wall > 0 else None,
                   "interrupted": interrupted}
        if interrupted:
            self.log(f"interrupted: checkpoint saved at {steps:,} steps; continue with "
                     f"`kahve train --resume {self.run_dir}`")
        else:
            MLP.from_sb3(self.model).save(self.run_dir / "policy.npz")
            summary["evaluation"] = self.evaluate(steps)
            self.log(f"done: {steps:,} steps in {wall:.0f} s ({summary['steps_per_second']:.0f} steps/s); "
                     f"run folder {self.run_dir}")
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        self.vec.close()
        return summary


def train(cfg: dict, resume_dir: str | None = None, progress: bool = True, log=print) -> dict:
    """Run (or resume) a training run; returns the summary."""
    n = limit_threads(cfg["torch_threads"])
    import torch
    torch.set_num_threads(n)
    if resume_dir:
        run_dir = Path(resume_dir)
        if not (run_dir / "checkpoints" / "latest" / "state.json").exists():
            raise FileNotFoundError(f"{run_dir} has no checkpoint to resume (checkpoints/latest/state.json)")
    else:
        run_dir = Path(cfg["output"])
        if (run_dir / "checkpoints" / "latest").exists():
            raise ValueError(f"{run_dir} already holds a run; resume it with --resume {run_dir}, or choose "
                             f"another output folder (--override output=...)")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    log(f"training {cfg['algorithm']} on {cfg['game']} {cfg['settings']} for {cfg['total_timesteps']:,} steps "
        f"with {cfg['n_envs']} envs; run folder {run_dir}; TensorBoard: tensorboard --logdir {run_dir / 'tb'}")
    return Trainer(cfg, run_dir, resume=bool(resume_dir), log=log).run(progress=progress)


# ----- JSON-able random states ----------------------------------------------------------------------
def _json_state(state):
    return [state[0], list(state[1]), state[2]]


def _tuple_state(state):
    return (state[0], tuple(state[1]), state[2])


def _json_np_state(state):
    return [state[0], state[1].tolist(), int(state[2]), int(state[3]), float(state[4])]


def _np_state(state):
    return (state[0], np.array(state[1], dtype=np.uint32), state[2], state[3], state[4])
