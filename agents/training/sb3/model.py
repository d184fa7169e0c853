"""The SB3 learner of a config: its envs in this process or in workers (``vec_env``), and its model (masked PPO
from sb3-contrib or kahve's masked DQN, with the action-feature head where the game has one).

The collector process of async rollouts builds its envs and its copy of the model here too, so this module knows
nothing of async rollouts: :mod:`.session` puts them on top.
"""

from __future__ import annotations

import signal

from kahve import envs

from ..tables import table_settings
from ..run_dir import Checkpoint, RunDir
from ..view.learner_env import LearnerEnv
from ..view.opponents import OpponentPool
from .checkpoint import restore_model


def _make_env(game, settings, pool, seed, own_process: bool = False):
    def make():
        if own_process:
            # an env process of SubprocVecEnv: Ctrl-C is the learner's to handle (it checkpoints, then ends
            # this process); dying on it would leave the learner's pipes with half a message
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return LearnerEnv(game, settings, pool, seed=seed)
    return make


def sync_vec_env(cfg: dict, pool: OpponentPool):
    """The training envs of ``cfg`` (``vec_env``, ``n_envs``, ``env_workers``) stepped by the learner's own process
    under SB3's ``VecMonitor`` (with PPO's ``reward_scale``: :class:`ScaledRewardMonitor`). Env ``i`` is seeded
    ``seed * 1000 + i`` in every layout, so every layout deals the same games."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    from .vec_env import BatchedVecEnv, ScaledRewardMonitor, SharedMemoryVecEnv, default_workers
    layout, n = cfg["vec_env"], cfg["n_envs"]
    settings = table_settings(cfg)
    seeds = [cfg["seed"] * 1000 + i for i in range(n)]
    scale = ppo_reward_scale(cfg)
    if layout == "batched":
        return ScaledRewardMonitor(BatchedVecEnv(cfg["game"], settings, pool, seeds), scale)
    if layout == "shared":
        workers = cfg.get("env_workers") or default_workers()
        return ScaledRewardMonitor(SharedMemoryVecEnv(cfg["game"], settings, pool, seeds, workers), scale)
    subprocesses = layout == "subproc" and n > 1
    fns = [_make_env(cfg["game"], settings, pool, s, subprocesses) for s in seeds]
    if subprocesses:
        vec = SubprocVecEnv(fns, start_method="forkserver")
    else:
        vec = DummyVecEnv(fns)
    return ScaledRewardMonitor(vec, scale)


def ppo_reward_scale(cfg: dict) -> float:
    """What PPO multiplies rewards by (``ppo.reward_scale``); DQN scales in its own buffer (``dqn.reward_scale``)."""
    return float(cfg["ppo"]["reward_scale"]) if cfg["algorithm"] == "ppo" else 1.0


def make_model(cfg: dict, vec, run_dir, ppo_class=None):
    """A fresh model for ``cfg`` over ``vec``; its TensorBoard logs go to ``run_dir``'s tb/ (None: no logs).
    ``ppo_class``: the PPO to build (default sb3-contrib's MaskablePPO)."""
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
        if ppo_class is None:
            from sb3_contrib import MaskablePPO as ppo_class
        policy = "MlpPolicy"
        if features:
            from .action_features import PPOPolicy as policy
        ppo = {k: v for k, v in cfg["ppo"].items() if k != "reward_scale"}
        model = ppo_class(policy, vec, policy_kwargs=dict(net_arch=dict(pi=hidden, vf=hidden),
                                                          activation_fn=activation, **features),
                          **ppo, **common)
        model.reward_scale = ppo_reward_scale(cfg)      # behaviour cloning's value targets (pretrain.py)
        return model
    from .dqn import MaskedDQN
    # a network pretrained on demonstrations explores epsilon-greedily from the start, not at random
    return MaskedDQN("MlpPolicy", vec, policy_kwargs=dict(net_arch=hidden, activation_fn=activation, **features),
                     warmup="policy" if cfg["pretrain"]["steps"] else "random", **cfg["dqn"], **common)


def check_format(ck: Checkpoint) -> None:
    if not ck.weights.exists() and (ck.folder / "model.zip").exists():
        raise ValueError(f"{ck.folder} is a checkpoint in stable-baselines3's pickle format (model.zip), which "
                         "kahve no longer loads: loading it can run any code. Start a new run")


def model_from_checkpoint(cfg: dict, run: RunDir, ck: Checkpoint):
    """The model of a checkpoint, rebuilt from the config with its weights and counters (for export; envs in
    this process, no replay buffer)."""
    from ..session import pool_from_config
    check_format(ck)
    state = ck.read_state()
    vec = sync_vec_env({**cfg, "vec_env": "dummy"}, pool_from_config(cfg))
    model = make_model(cfg, vec, run.root)
    restore_model(model, ck, state.get("model", {}))
    return model
