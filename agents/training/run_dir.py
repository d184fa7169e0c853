"""The run folder of a training run: every path in it, the lock, the checkpoint swap, and reading its files.

A run folder holds::

    config.yaml               the resolved config (every default filled in; a resume with overrides rewrites it)
    train.lock                held (flock) by the one ``kahve train`` working in the folder
    tb/                       TensorBoard logs
    checkpoints/latest/       model.pt (policy weights, optimizer state, torch random state: plain tensors),
                              replay_buffer.npz (DQN), demonstrations.npz (while behaviour cloning is unfinished),
                              cloning_fit.pt (the optimizer of a cloning fit under way, after its last epoch),
                              opponents/ (pool.json + .npz snapshots), state.json (counters, schedule, random
                              states, the network's shape); state.json is written last, so a checkpoint folder
                              without it is partial
    policy.npz                the final network (numpy arrays)
    pretrain.json             what behaviour cloning did
    generations/              expert iteration: student_G.onnx (the network after generation G, which generation
                              G+1 searched over; the last one is where learning starts) and labels_G.npz
                              (generation G's search labels, the cache a resumed run reuses; each records what
                              made it, and one made by anything else is refused)
    summary.json              steps, wall time, steps/s and the final evaluation
    eval_bot.onnx             the bot the periodic evaluations play

A run folder is data that people share: nothing in it is ever unpickled. Weights load with
``torch.load(weights_only=True)``, arrays with ``np.load(allow_pickle=False)``, the rest is JSON and YAML (safe
loader). A file that cannot be read is a ``ValueError`` naming it; so is one that reads but cannot be the run's: a
config.yaml without keys kahve always writes, weights that are not finite or not of the config's network, a step
count below zero or past the budget (:meth:`RunDir.read_config`, :func:`check_state`). A file that cannot be written
(a full disk) is a :class:`~.files.WriteError` naming it, and leaves the previous checkpoint as it was.

The checkpoint swap never leaves the folder without one complete checkpoint: the new one is written to
``latest.tmp``; then ``latest`` is renamed ``latest.old``, ``latest.tmp`` renamed ``latest``, and ``latest.old``
removed. A crash between two renames leaves a complete ``latest.tmp`` or ``latest.old``, which
:meth:`RunDir.find_checkpoint` finds and :meth:`RunDir.recover` puts back in place.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from pathlib import Path
from typing import Callable

import yaml

from .files import fsync_dir, read_json, read_text_limited, read_yaml, write_error, write_text_atomic

#: the keys of a run's config.yaml: kahve writes every key of its config there, defaults filled in, so a config.yaml
#: without one of these was cut short or edited, and is refused rather than filled in with defaults that may not be
#: what the run trained with. Keys added to the config after this list are not in it (a run folder written before a
#: key existed reads with the key's default); a key retired from the config leaves it (a test keeps every key here
#: one of the config's).
WRITTEN_KEYS = tuple(f"{section}{key}" for section, keys in {
    "": "game settings algorithm backend seed total_timesteps n_envs vec_env env_workers async_rollouts device "
        "torch_threads output checkpoint_every init_from",
    "network.": "hidden activation action_features",
    "ppo.": "learning_rate n_steps batch_size n_epochs gamma gae_lambda clip_range ent_coef vf_coef max_grad_norm "
            "reward_scale",
    "dqn.": "learning_rate buffer_size learning_starts batch_size gamma train_freq gradient_steps "
            "target_update_interval tau exploration_fraction exploration_initial_eps exploration_final_eps "
            "max_grad_norm n_step double reward_scale loss dueling prioritized priority_alpha priority_beta "
            "priority_eps margin demo_weight",
    "rllib.": "num_env_runners num_envs_per_env_runner num_cpus_per_env_runner num_learners num_gpus_per_learner "
              "address num_cpus train_batch_size",
    "pretrain.": "steps teacher epochs batch_size learning_rate dagger_rounds dagger_steps dagger_epochs generations "
                 "search generation_steps",
    "opponents.": "pool",
    "opponents.self_play.": "every weight max_snapshots",
    "opponents.league.": "weighting every power floor window",
    "evaluation.": "every games opponents workers settings",
}.items() for key in keys.split())


class Checkpoint:
    """One checkpoint folder (``checkpoints/latest`` or, after a crash, ``latest.tmp``/``latest.old``)."""

    def __init__(self, folder):
        self.folder = Path(folder)

    weights = property(lambda self: self.folder / "model.pt")
    replay_buffer = property(lambda self: self.folder / "replay_buffer.npz")
    demonstrations = property(lambda self: self.folder / "demonstrations.npz")
    opponents = property(lambda self: self.folder / "opponents")
    cloning_fit = property(lambda self: self.folder / "cloning_fit.pt")
    state_file = property(lambda self: self.folder / "state.json")

    def complete(self) -> bool:
        return self.state_file.is_file()

    def read_state(self) -> dict:
        """state.json, its step count checked: a whole number, not below zero, the model's own count where the state
        has one (the two are written together)."""
        state = read_json(self.state_file)
        steps = state.get("steps") if isinstance(state, dict) else None
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise ValueError(f"{self.state_file}: not a checkpoint state (a mapping with the step count)")
        if steps < 0:
            raise ValueError(f"{self.state_file}: the step count is {steps:,}, below zero")
        model = state.get("model")
        if isinstance(model, dict) and "num_timesteps" in model and model["num_timesteps"] != steps:
            raise ValueError(f"{self.state_file}: the step count {steps:,} is not the model's own "
                             f"({model['num_timesteps']!r})")
        return state

    def write_state(self, state: dict) -> None:
        write_text_atomic(self.state_file, json.dumps(state))

    def __repr__(self) -> str:
        return f"Checkpoint({str(self.folder)!r})"


class RunDir:
    """The layout of a run folder, its lock and its checkpoint swap."""

    def __init__(self, root):
        self.root = Path(root)

    config = property(lambda self: self.root / "config.yaml")
    lock_file = property(lambda self: self.root / "train.lock")
    tb = property(lambda self: self.root / "tb")
    checkpoints = property(lambda self: self.root / "checkpoints")
    latest = property(lambda self: Checkpoint(self.checkpoints / "latest"))
    policy = property(lambda self: self.root / "policy.npz")
    pretrain_report = property(lambda self: self.root / "pretrain.json")
    summary = property(lambda self: self.root / "summary.json")
    eval_bot = property(lambda self: self.root / "eval_bot.onnx")
    generations = property(lambda self: self.root / "generations")
    _writing = property(lambda self: Checkpoint(self.checkpoints / "latest.tmp"))
    _previous = property(lambda self: Checkpoint(self.checkpoints / "latest.old"))

    def __str__(self) -> str:
        return str(self.root)

    def generation_bot(self, g: int) -> Path:
        """The network after expert-iteration generation ``g`` (0: after behaviour cloning and DAgger)."""
        return self.generations / f"student_{g}.onnx"

    def generation_labels(self, g: int) -> Path:
        return self.generations / f"labels_{g}.npz"

    # ----- the folder and its lock ---------------------------------------------------------------------
    def create(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"the run folder {self.root} exists and is not a folder")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"cannot create the run folder {self.root}: {err.strerror or err}") from None

    @contextlib.contextmanager
    def lock(self):
        """Hold the folder's lock for the block: a second ``kahve train`` into the same folder is refused. The
        lock is an ``flock``, so the kernel drops it when its process ends, however it ends."""
        if not self.root.is_dir():
            raise FileNotFoundError(f"no run folder at {self.root}")
        try:
            fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise ValueError(f"cannot lock the run folder {self.root}: {err.strerror or err}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                raise ValueError(f"{self.root} is in use by another kahve train"
                                 + (f" (process {holder})" if holder.isdigit() else "")
                                 + "; wait for it to end, or choose another output folder (--override output=...)") \
                    from None
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode(), 0)
            except OSError as err:            # (a full disk)
                raise write_error(self.lock_file, err) from None
            yield self
        finally:
            os.close(fd)                 # releases the lock

    # ----- config and results ---------------------------------------------------------------------------
    def read_config(self) -> dict:
        """The run's config.yaml as written (a mapping), read with the duplicate-refusing safe loader; one without a
        key kahve always writes (:data:`WRITTEN_KEYS`) is refused."""
        if not self.config.is_file():
            raise FileNotFoundError(f"{self.root} is not a training run folder (no config.yaml)")
        raw = read_yaml(read_text_limited(self.config), str(self.config))
        if not isinstance(raw, dict):
            raise ValueError(f"{self.config}: a config is a mapping of keys, got {type(raw).__name__}")
        missing = missing_keys(raw)
        if missing:
            raise ValueError(f"{self.config}: cut short or edited: it lacks {', '.join(missing[:5])}"
                             + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                             + ", which kahve always writes there (the run's config is not filled in with defaults)")
        return raw

    def write_config(self, cfg: dict) -> None:
        write_text_atomic(self.config, yaml.safe_dump(cfg, sort_keys=False))

    def read_summary(self) -> dict | None:
        if not self.summary.is_file():
            return None
        summary = read_json(self.summary)
        if not isinstance(summary, dict):
            raise ValueError(f"{self.summary}: not a run summary (a mapping)")
        return summary

    def write_summary(self, summary: dict) -> None:
        write_text_atomic(self.summary, json.dumps(summary, indent=2))

    def clock(self) -> "StageClock":
        """The wall time of a resumable stage run in this folder, over all its sessions (:class:`StageClock`)."""
        return StageClock(self)

    def write_pretrain_report(self, report: dict) -> None:
        write_text_atomic(self.pretrain_report, json.dumps(report, indent=1))

    @staticmethod
    def bot_metadata(cfg: dict, steps: int, evaluation: dict | None = None, **extra) -> dict:
        """The metadata of a bot exported from a run with config ``cfg`` (the trainer's evaluation bot and
        ``kahve export`` write the same)."""
        from kahve import envs
        from ..policies.bot import bot_metadata
        from .tables import resolved_tables
        game_cls = envs.game_class(cfg["game"])
        if cfg.get("tables"):        # a bot of several tables (config key tables): bot.fit holds a table to each
            extra["tables"] = resolved_tables(cfg)
        return bot_metadata(game_cls(**cfg["settings"]), cfg["algorithm"], steps, evaluation, network=cfg["network"],
                            config=cfg, **extra)

    # ----- checkpoints ----------------------------------------------------------------------------------
    def find_checkpoint(self) -> Checkpoint | None:
        """The newest complete checkpoint, without changing anything: ``latest``, else the ``latest.tmp`` or
        ``latest.old`` that an interrupted swap left."""
        for ck in (self.latest, self._writing, self._previous):
            if ck.complete():
                return ck
        return None

    def recover(self) -> Checkpoint | None:
        """Finish an interrupted swap (call it holding the lock): the newest complete checkpoint becomes
        ``latest``, leftovers go. Returns ``latest``, or None when the folder has no complete checkpoint."""
        found = self.find_checkpoint()
        if found is not None and found.folder != self.latest.folder:
            if self.latest.folder.exists():
                shutil.rmtree(self.latest.folder)
            found.folder.rename(self.latest.folder)
            fsync_dir(self.checkpoints)
        for ck in (self._writing, self._previous):
            if ck.folder.exists():
                shutil.rmtree(ck.folder)
        return self.latest if found is not None else None

    def write_checkpoint(self, fill: Callable[[Checkpoint], dict]) -> Checkpoint:
        """Write a new ``latest``: ``fill(checkpoint)`` writes the files into a fresh folder and returns the state
        for state.json, which is written last; then the swap. An exception (Ctrl-C included) on the way removes
        the partial folder and leaves the previous checkpoint as it was."""
        new = self._writing
        try:
            if new.folder.exists():
                shutil.rmtree(new.folder)
            new.folder.mkdir(parents=True)
            new.write_state(fill(new))
            fsync_dir(new.folder)
        except BaseException as err:
            shutil.rmtree(new.folder, ignore_errors=True)
            if isinstance(err, OSError):                  # a full disk: one line, the checkpoint before kept
                raise write_error(self.checkpoints, err, "cannot write a checkpoint in {target}: {reason}; the "
                                  "previous checkpoint is kept") from None
            raise
        latest, previous = self.latest, self._previous
        if latest.folder.exists():
            if previous.folder.exists():
                shutil.rmtree(previous.folder)
            latest.folder.rename(previous.folder)      # now: latest.old and latest.tmp, both complete
        new.folder.rename(latest.folder)               # now: latest (and latest.old)
        fsync_dir(self.checkpoints)
        if previous.folder.exists():
            shutil.rmtree(previous.folder)
        return latest


def missing_keys(raw: dict) -> list[str]:
    """The keys of :data:`WRITTEN_KEYS` that the config tree ``raw`` lacks."""
    missing = []
    for key in WRITTEN_KEYS:
        node = raw
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                missing.append(key)
                break
            node = node[part]
    return missing


def check_state(state: dict, cfg: dict, source) -> None:
    """Refuse a checkpoint's state that cannot be this run's (``cfg``: the run's config): a step count well past the
    budget (a run stops at the end of the rollout that reaches it: a little past it), a network other than the
    config's (the checkpoint records the network it was trained with; one written before it did is checked by its
    weights' shapes alone), or another algorithm (an sb3 model's counters: DQN's include its exploration rate)."""
    steps, budget = state["steps"], cfg["total_timesteps"]
    rollout = cfg["n_envs"] * max(cfg["ppo"]["n_steps"], cfg["dqn"]["train_freq"], 1) \
        + cfg["rllib"]["train_batch_size"]
    if steps > budget + max(2 * rollout, budget // 10):
        raise ValueError(f"{source}: {steps:,} steps, past the run's budget (total_timesteps {budget:,}): not a "
                         "checkpoint of this run; if the budget was lowered since, raise it with --override "
                         "total_timesteps=N")
    network = state.get("network")
    if network is not None and network != network_of(cfg):
        raise ValueError(f"{source}: the checkpoint's network is {network}, config.yaml's {network_of(cfg)}: the "
                         "config is not the one the run trained with")
    model = state.get("model")
    if isinstance(model, dict) and "num_timesteps" in model and cfg["backend"] == "sb3":
        algorithm = "dqn" if "exploration_rate" in model else "ppo"
        if algorithm != cfg["algorithm"]:
            raise ValueError(f"{source}: a checkpoint of a {algorithm} run, config.yaml's algorithm is "
                             f"{cfg['algorithm']}: the config is not the one the run trained with")


def check_network(mlp, cfg: dict, source) -> None:
    """Refuse a network (:class:`~..policies.network.MLP`, from ``source``) that is not of the run's config (its
    hidden sizes, activation and action-feature head) or whose weights are not all finite."""
    from kahve import envs
    from .files import check_finite
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    want = network_of(cfg)
    hidden = [int(w.shape[0]) for w in mlp.weights[:-1]]
    features = bool(want["action_features"] and game.action_feature_size)
    ours = (hidden, mlp.activation if hidden else want["activation"], mlp.feature_weights is not None)
    if ours != (want["hidden"], want["activation"], features):
        raise ValueError(f"{source}: a network of hidden sizes {hidden}, activation {ours[1]}, action features "
                         f"{ours[2]}; config.yaml says {want['hidden']}, {want['activation']}, {features}: the config "
                         "is not the one the run trained with")
    check_finite(mlp.to_arrays(), source)


def network_of(cfg: dict) -> dict:
    """What a checkpoint records of the network it holds (and checks against config.yaml)."""
    net = cfg["network"]
    return {"hidden": list(net["hidden"]), "activation": net["activation"], "action_features": net["action_features"]}


class StageClock:
    """The wall time of a resumable stage over all its sessions: the earlier sessions' (from the summary an
    interrupted session left) plus this one's. :meth:`keep`, called from a long loop, writes it as an interrupted
    summary at most once every ``KEEP_EVERY_S`` seconds, so that a session killed without warning (no Ctrl-C, no
    summary) loses at most that much of the count. Labelling or solving in several processes side by side counts
    once: this is the time on the clock, not the sum of the processes' times."""

    KEEP_EVERY_S = 60.0

    def __init__(self, run: RunDir):
        before = run.read_summary() or {}
        self.run = run
        self.spent = float(before.get("wall_seconds_total", 0.0)) if before.get("interrupted") else 0.0
        self.started = self.kept = time.perf_counter()

    def seconds(self) -> float:
        return self.spent + time.perf_counter() - self.started

    def keep(self) -> None:
        """Record the time so far (as an interrupted summary) if the last record is ``KEEP_EVERY_S`` old."""
        now = time.perf_counter()
        if now - self.kept >= self.KEEP_EVERY_S:
            self.kept = now
            self.run.write_summary({"steps": 0, "wall_seconds_total": self.seconds(), "pretrain_seconds": 0.0,
                                    "interrupted": True})
