"""Training configs: one YAML file, validated before any work starts.

:data:`SCHEMA` is the single source of truth: every key, its type, default and allowed range. Unknown keys,
wrong types and out-of-range values are ``ValueError`` naming the key path (``ppo.n_steps``). The game's
``settings`` are checked by the game itself. ``--override key=value`` edits the same tree before validation.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kahve import envs

from .files import UniqueKeyLoader, clip, read_text_limited, read_yaml, short
from .tables import check_tables


@dataclass(frozen=True)
class Field:
    """One config key: type, default, and optional bounds or choices."""
    type: type
    default: Any
    lo: float | None = None
    hi: float | None = None
    choices: tuple | None = None
    doc: str = ""


#: hidden layers a network may have (the shipped ones have 2; a deep MLP beyond this trains no better here, and a
#: list of thousands would build for minutes before the first step)
MAX_LAYERS = 16

#: the vector-env layouts (:mod:`.sb3.vec_env` has kahve's own two)
VEC_ENVS = ("batched", "shared", "dummy", "subproc")

OPPONENT_DEFAULT = [{"policy": "random", "weight": 1.0}, {"policy": "heuristic", "weight": 1.0}]

SCHEMA: dict = {
    "game": Field(str, None, choices=tuple(envs.GAMES), doc="the game"),
    "settings": Field(dict, {}, doc="game settings (named as in docs/rules.md), e.g. {players: 2, episode: deal}"),
    "tables": Field(list, [], doc="more tables the same network learns beside the one of settings, each a change of "
                                   "settings (e.g. [{players: 3}]): the run's games are dealt at each table in turn, "
                                   "and the bot fits every one; all must share observation and action sizes"),
    "algorithm": Field(str, "ppo", choices=("ppo", "dqn")),
    "backend": Field(str, "sb3", choices=("sb3", "rllib"),
                     doc="sb3: stable-baselines3 in this process; rllib: Ray RLlib's PPO over env runners on this "
                         "machine or a cluster (the rllib extra and section; docs/scale-out.md)"),
    "seed": Field(int, 0, 0, 2**31 - 1),
    "total_timesteps": Field(int, 200_000, 1, 10**10, doc="learner decisions in the whole run"),
    "n_envs": Field(int, 4, 1, 4096, doc="parallel environments (games stepped together)"),
    "vec_env": Field(str, "batched", choices=VEC_ENVS,
                     doc="batched: all games in the learner's process, stepped as one batch (kahve's own vector "
                         "env; network opponents decide for all games in one forward pass); shared: env_workers "
                         "processes with n_envs/env_workers games each, results in shared memory, for machines "
                         "with many cores; dummy and subproc: SB3's DummyVecEnv (envs in the learner's process, "
                         "one at a time) and SubprocVecEnv (one process per env). See docs/benchmarks.md"),
    "env_workers": Field(int, 0, 0, 1024, doc="worker processes of vec_env shared; 0: one per CPU core"),
    "async_rollouts": Field(bool, False,
                            doc="PPO on the sb3 backend (RLlib collects with its env runners and ignores it): a "
                                "second process collects the next rollout (with the weights of one update earlier) "
                                "while the learner updates on the last one, so two cores work at once; 1.5-2x the "
                                "learner steps per second on a 2-core machine (docs/benchmarks.md)"),
    "device": Field(str, "cpu", choices=("cpu", "cuda", "auto"),
                    doc="where the networks train: cpu, cuda (an error if this machine has no CUDA device), "
                        "auto (cuda when there is one)"),
    "torch_threads": Field(int, 1, 1, 256, doc="torch threads in the learner process (1 is stable on small CPUs)"),
    "output": Field(str, "runs/{game}_{algorithm}_{seed}", doc="run folder; {game} {algorithm} {seed} expand"),
    "checkpoint_every": Field(int, 50_000, 1, 10**10, doc="steps between checkpoints"),
    "init_from": Field(str, "", doc="a run folder whose latest network (policy and value, not the optimizer) this "
                                    "new run starts from, e.g. to fine-tune a bot against another pool; same game, "
                                    "algorithm and network, no behaviour cloning (pretrain.steps 0); or a PPO bot "
                                    "file (a path or a shipped bot's name, e.g. pasur/ppo), whose actor it starts "
                                    "from (the critic starts fresh); '': a fresh network"),
    "network": {
        "hidden": Field(list, [256, 256], doc="hidden layer sizes"),
        "activation": Field(str, "tanh", choices=("tanh", "relu")),
        "action_features": Field(bool, True, doc="for a game whose observation ends with a row of features per "
                                                 "action (Pâsur, Pişti), score every action from its row with shared "
                                                 "weights beside the MLP (docs/design.md); sb3 backend only"),
    },
    "ppo": {
        "learning_rate": Field(float, 3e-4, 1e-7, 1.0),
        "n_steps": Field(int, 512, 8, 1_000_000, doc="steps per env per update"),
        "batch_size": Field(int, 256, 8, 1_000_000),
        "n_epochs": Field(int, 4, 1, 100),
        "gamma": Field(float, 0.99, 0.0, 1.0),
        "gae_lambda": Field(float, 0.95, 0.0, 1.0),
        "clip_range": Field(float, 0.2, 0.0, 1.0),
        "ent_coef": Field(float, 0.01, 0.0, 1.0),
        "vf_coef": Field(float, 0.5, 0.0, 10.0),
        "max_grad_norm": Field(float, 0.5, 0.0, 100.0),
        "reward_scale": Field(float, 1.0, 1e-6, 1000.0,
                              doc="rewards are multiplied by it for learning (episode logs keep game points), and "
                                  "so are the value targets of behaviour cloning: it keeps the value loss near 1, "
                                  "so that max_grad_norm clips the value gradient, not the policy's (a Pis Yedili "
                                  "deal's points have a spread near 50; docs/dqn.md has the same for DQN)"),
    },
    "dqn": {   # docs/dqn.md: what each option does, and the diagnosis behind the shipped values
        "learning_rate": Field(float, 1e-4, 1e-7, 1.0, doc="Adam's step size"),
        "buffer_size": Field(int, 100_000, 100, 10**8, doc="transitions the replay buffer holds (all envs)"),
        "learning_starts": Field(int, 5_000, 0, 10**9, doc="steps collected before the first gradient step"),
        "batch_size": Field(int, 128, 1, 100_000, doc="transitions per gradient step"),
        "gamma": Field(float, 0.99, 0.0, 1.0,
                       doc="discount per learner decision; the shipped configs use 1 with episode=deal (a deal "
                           "ends; below 1, delaying a penalty is worth something by itself)"),
        "train_freq": Field(int, 4, 1, 10_000, doc="vectorised env steps (n_envs transitions each) between updates"),
        "gradient_steps": Field(int, 1, 1, 1000,
                                doc="gradient steps per update; replay ratio = batch_size x gradient_steps / "
                                    "(train_freq x n_envs) samples per transition"),
        "target_update_interval": Field(int, 2_000, 1, 10**8, doc="transitions between target-network updates"),
        "tau": Field(float, 1.0, 1e-4, 1.0, doc="target update: 1 copies the online network, less is Polyak averaging"),
        "exploration_fraction": Field(float, 0.3, 0.0, 1.0,
                                      doc="fraction of total_timesteps over which epsilon falls linearly"),
        "exploration_initial_eps": Field(float, 1.0, 0.0, 1.0, doc="epsilon at the start"),
        "exploration_final_eps": Field(float, 0.05, 0.0, 1.0, doc="epsilon after the fall"),
        "max_grad_norm": Field(float, 10.0, 0.0, 1000.0, doc="gradient clipping (global L2 norm)"),
        "n_step": Field(int, 1, 1, 100, doc="n-step returns: rewards of up to n learner decisions, then the "
                                            "bootstrap (never past the end of an episode)"),
        "double": Field(bool, False, doc="double DQN: the online network picks the next legal action, the target "
                                         "network values it"),
        "reward_scale": Field(float, 1.0, 1e-6, 1000.0,
                              doc="rewards are multiplied by it for learning (the buffer keeps game points); Q-values "
                                  "and the bot's logits are in scaled points"),
        "loss": Field(str, "huber", choices=("huber", "mse"), doc="TD loss (Huber: quadratic within 1 scaled point)"),
        "dueling": Field(bool, False, doc="dueling head V + A - mean A (exported folded into one layer)"),
        "prioritized": Field(bool, False, doc="proportional prioritised replay"),
        "priority_alpha": Field(float, 0.6, 0.0, 1.0, doc="priority = (|TD error| + priority_eps) ** alpha"),
        "priority_beta": Field(float, 0.4, 0.0, 1.0, doc="importance-weight exponent at the start; rises to 1"),
        "priority_eps": Field(float, 1e-3, 1e-8, 1.0, doc="added to |TD error| so that no transition starves"),
        "margin": Field(float, 0.8, 0.0, 1000.0,
                        doc="pretraining (pretrain.steps > 0): DQfD's large margin, in scaled points, by which the "
                            "teacher's action must lead the others"),
        "demo_weight": Field(float, 0.0, 0.0, 100.0,
                             doc="after pretraining, the weight of the large-margin loss on a batch of the "
                                 "teacher's demonstrations added to every gradient step (DQfD); 0: off"),
    },
    "rllib": {   # backend: rllib only (docs/scale-out.md)
        "num_env_runners": Field(int, 2, 0, 100_000, doc="Ray actors that play episodes; 0: in the driver"),
        "num_envs_per_env_runner": Field(int, 4, 1, 1024, doc="games each env runner plays side by side (one "
                                                             "forward pass for all: 4 ran 2.4x the steps/s of 1 here)"),
        "num_cpus_per_env_runner": Field(float, 1.0, 0.0, 1024.0),
        "num_learners": Field(int, 0, 0, 1024, doc="learner actors; 0: one learner in the driver process"),
        "num_gpus_per_learner": Field(float, 0.0, 0.0, 64.0,
                                      doc="GPUs each learner trains on; with num_learners 0 any value above 0 puts "
                                          "the driver's learner on this machine's first CUDA device; checked "
                                          "against the CUDA devices torch sees here, except for the learner actors "
                                          "of a cluster (address set and num_learners 1+), whose GPUs may be on "
                                          "other machines"),
        "address": Field(str, "", doc="'': a local Ray instance; 'auto': the cluster this machine joined with "
                                      "`ray start`; HOST:PORT: that cluster"),
        "num_cpus": Field(int, 0, 0, 100_000, doc="CPUs of the local Ray instance; 0: what the runners and "
                                                 "learners ask for"),
        "train_batch_size": Field(int, 0, 0, 10**8, doc="env steps per PPO update; 0: ppo.n_steps x n_envs, the "
                                                        "rollout of the sb3 backend"),
    },
    "pretrain": {
        "steps": Field(int, 0, 0, 10**8, doc="teacher decisions to imitate before learning (PPO: behaviour "
                                             "cloning; DQN: the large-margin loss of dqn.margin); 0: off"),
        "teacher": Field(str, "heuristic", doc="the policy imitated"),
        "epochs": Field(int, 5, 1, 1000),
        "batch_size": Field(int, 512, 8, 10**6),
        "learning_rate": Field(float, 1e-3, 1e-7, 1.0),
        "dagger_rounds": Field(int, 0, 0, 100,
                               doc="DAgger rounds after cloning: the clone plays, the teacher labels"),
        "dagger_steps": Field(int, 0, 0, 10**8, doc="decisions collected per DAgger round; 0: as many as steps"),
        "dagger_epochs": Field(int, 5, 1, 1000, doc="epochs over all the data after each DAgger round (and each "
                                                   "expert-iteration generation)"),
        "generations": Field(int, 0, 0, 1000,
                             doc="expert iteration after cloning and DAgger: in each generation the search "
                                 "pretrain.search over the current network labels the states the network "
                                 "reaches, and the network is fitted to all generations' labels; 0: off"),
        "search": Field(str, "rollout:16,z=1:{student}",
                        doc="the teacher of expert iteration, a policy spec in which {student} names the current "
                            "network's bot file (docs/search.md)"),
        "generation_steps": Field(int, 0, 0, 10**8,
                                  doc="decisions labelled per generation; 0: as many as dagger_steps (or steps)"),
    },
    "opponents": {
        "pool": Field(list, OPPONENT_DEFAULT, doc="[{policy: SPEC, weight: W}, ...]"),
        "self_play": {
            "every": Field(int, 0, 0, 10**10, doc="steps between snapshots of the learner; 0: no self-play"),
            "weight": Field(float, 1.0, 1e-6, 1000.0, doc="pool weight of each snapshot (above 0: 'every: 0' plays "
                                                          "without snapshots)"),
            "max_snapshots": Field(int, 5, 1, 60, doc="snapshots kept in the pool (the oldest leave first)"),
        },
        "league": {   # agents/training/view/league.py
            "weighting": Field(str, "fixed", choices=("fixed", "pfsp"),
                               doc="fixed: the pool's weights as configured; pfsp: prioritised fictitious self-play, "
                                   "weights moved towards the opponents the learner loses to"),
            "every": Field(int, 10_000, 1, 10**10, doc="steps between two reweightings (pfsp)"),
            "power": Field(float, 2.0, 0.0, 100.0, doc="weight = base x ((1 - win rate) ** power + floor)"),
            "floor": Field(float, 0.05, 1e-6, 100.0, doc="keeps every opponent in the mix however often it is beaten"),
            "window": Field(int, 1000, 1, 10**9, doc="episodes against an opponent that its win rate looks back over "
                                                     "(an exponential decay)"),
        },
    },
    "evaluation": {
        "every": Field(int, 50_000, 0, 10**10, doc="steps between evaluations; 0: only at the end"),
        "games": Field(int, 100, 2, 10**6),
        "opponents": Field(list, ["random", "heuristic"]),
        "workers": Field(int, 2, 1, 256),
        "settings": Field(dict, {}, doc="settings changed for evaluation, e.g. {episode: match}"),
    },
}


#: keys removed from :data:`SCHEMA`, with the default they had: older run folders' config.yaml (read to resume, to
#: export and by init_from) carry them, and at that value they changed nothing, so :func:`_merge` drops them
#: there; any other value asks for what kahve no longer does, an error
RETIRED = {"network.critic": "observation", "network.move_layer": 0, "pretrain.generation_learning_rate": 0.0}


def defaults(schema: dict = SCHEMA) -> dict:
    return {k: (defaults(v) if isinstance(v, dict) else copy.deepcopy(v.default)) for k, v in schema.items()}


def _check_value(path: str, field: Field, value: Any) -> Any:
    if field.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if field.type is float and isinstance(value, str):   # YAML 1.1 reads "1e-4" (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            pass
    ok = isinstance(value, field.type) and not (field.type in (int, float) and isinstance(value, bool))
    if not ok:
        raise ValueError(f"config key {path!r}: expected {field.type.__name__}, got {short(value)}")
    if field.choices is not None and value not in field.choices:
        raise ValueError(f"config key {path!r}: {short(value)} is not allowed; allowed: "
                         + ", ".join(repr(c) for c in field.choices))
    if field.lo is not None and not (field.lo <= value <= field.hi):
        raise ValueError(f"config key {path!r}: {short(value)} is out of range {field.lo}..{field.hi}")
    return value


def _merge(schema: dict, base: dict, user: Any, path: str = "") -> dict:
    if not isinstance(user, dict):
        raise ValueError(f"config {('key ' + repr(path)) if path else 'file'}: expected a mapping, got {short(user)}")
    out = dict(base)
    for key, value in user.items():
        full = f"{path}.{key}" if path else str(key)
        if full in RETIRED:
            if value != RETIRED[full]:
                raise ValueError(f"config key {full!r}: removed from kahve; {short(value)} is no longer supported (only "
                                 f"its old default {RETIRED[full]!r} is accepted, and ignored)")
            continue
        if key not in schema:
            close = difflib.get_close_matches(str(key), list(schema), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown config key {short(full)}{hint}; known here: {', '.join(schema)}")
        spec = schema[key]
        if isinstance(spec, dict):
            out[key] = _merge(spec, base[key], value, full)
        else:
            out[key] = _check_value(full, spec, value)
    return out


def _check_settings(where: str, settings: dict) -> None:
    for name in settings:
        if not isinstance(name, str):
            raise ValueError(f"config key {where!r}: setting names are words (e.g. players), got {short(name)}")


def _check_semantics(cfg: dict, init_later: bool = False) -> None:
    if cfg["game"] is None:
        raise ValueError("config key 'game' is required; one of: " + ", ".join(envs.GAMES))
    _check_device(cfg["device"])
    _check_rllib_gpus(cfg)
    game_cls = envs.game_class(cfg["game"])
    _check_settings("settings", cfg["settings"])
    _check_settings("evaluation.settings", cfg["evaluation"]["settings"])
    try:
        game = game_cls(**cfg["settings"])
    except ValueError as err:
        raise ValueError(f"config key 'settings': {err}") from None
    try:
        eval_game = game_cls(**{**cfg["settings"], **cfg["evaluation"]["settings"]})
    except ValueError as err:
        raise ValueError(f"config key 'evaluation.settings': {err}") from None
    _check_evaluation_spaces(cfg, game, eval_game)
    check_tables(cfg, game)
    if cfg["async_rollouts"] and cfg["algorithm"] != "ppo":
        raise ValueError("config key 'async_rollouts': only PPO collects rollouts in a second process (DQN learns "
                         "from its replay buffer after every step); set it to false for algorithm dqn")
    hidden = cfg["network"]["hidden"]
    if not hidden or not all(isinstance(h, int) and not isinstance(h, bool) and 1 <= h <= 65536 for h in hidden):
        raise ValueError(f"config key 'network.hidden': expected a non-empty list of layer sizes (1 to 65536 each), "
                         f"got {short(hidden)}")
    if len(hidden) > MAX_LAYERS:
        raise ValueError(f"config key 'network.hidden': {len(hidden):,} layers; at most {MAX_LAYERS}")
    pool = cfg["opponents"]["pool"]
    if not pool:
        raise ValueError("config key 'opponents.pool': needs at least one opponent")
    from ..policies.specs import make_policy
    for k, item in enumerate(pool):
        where = f"opponents.pool[{k}]"
        if not isinstance(item, dict) or set(item) - {"policy", "weight"} or "policy" not in item:
            raise ValueError(f"config key {where!r}: expected {{policy: SPEC, weight: W}}, got {short(item)}")
        weight = item.get("weight", 1.0)
        if (isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight)
                or weight <= 0):
            raise ValueError(f"config key {where + '.weight'!r}: expected a positive number, got {short(weight)}")
        try:
            make_policy(item["policy"], game, 0)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"config key {where + '.policy'!r}: {err}") from None
    for k, spec in enumerate(cfg["evaluation"]["opponents"]):
        try:
            make_policy(spec, game, 0)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"config key 'evaluation.opponents[{k}]': {err}") from None
    try:
        make_policy(cfg["pretrain"]["teacher"], game, 0)
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(f"config key 'pretrain.teacher': {err}") from None
    if cfg["pretrain"]["generations"]:
        if not cfg["pretrain"]["steps"] and not cfg["init_from"] and not init_later:
            raise ValueError("config key 'pretrain.generations': expert iteration starts from behaviour cloning or "
                             "from another network; set pretrain.steps or init_from too")
        try:   # the student is a network of this game; the heuristic stands in for it to check the spec's form
            make_policy(cfg["pretrain"]["search"].replace("{student}", "heuristic"), game, 0)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"config key 'pretrain.search': {err}") from None
    if cfg["init_from"] and not init_later:
        check_init_from(cfg)
    if cfg["algorithm"] == "ppo" and cfg["ppo"]["batch_size"] > cfg["ppo"]["n_steps"] * cfg["n_envs"]:
        raise ValueError(f"config key 'ppo.batch_size': {cfg['ppo']['batch_size']} is larger than one rollout "
                         f"(ppo.n_steps x n_envs = {cfg['ppo']['n_steps'] * cfg['n_envs']})")
    if cfg["backend"] == "rllib" and cfg["opponents"]["league"]["weighting"] != "fixed":
        raise ValueError("config key 'opponents.league.weighting': league weights are implemented for backend sb3 "
                         "only; backend rllib draws the pool by its configured weights (weighting: fixed)")
    if cfg["backend"] == "rllib" and cfg["ppo"]["reward_scale"] != 1.0:
        raise ValueError("config key 'ppo.reward_scale': trains with backend sb3 only; leave it at 1 with rllib")
    if cfg["backend"] == "rllib" and cfg["algorithm"] != "ppo":
        raise ValueError(f"config key 'backend': rllib trains algorithm ppo only, not {cfg['algorithm']!r} (the "
                         "masked DQN: backend sb3)")
    if cfg["backend"] == "rllib" and cfg["network"]["action_features"] and game.action_feature_size:
        raise ValueError(f"config key 'network.action_features': the action-feature head trains with backend sb3 "
                         f"only; set it to false to train {cfg['game']} with rllib (a plain MLP)")
    _check_memory(cfg, game)


#: what a run started from another run's network must share with it
INIT_SHARED = ("game", "algorithm", "network.hidden", "network.activation", "network.action_features")


def init_bot(cfg: dict):
    """The bot file ``init_from`` names (a path that is not a folder, or a shipped bot's name), else None: a run
    folder."""
    from kahve import checkpoints
    name = os.path.expanduser(cfg["init_from"])
    if not name or os.path.isdir(name):
        return None
    if name.endswith(".onnx"):
        return Path(name)
    return checkpoints.find(name)


def check_init_from(cfg: dict) -> None:
    """``init_from`` names a run folder with a checkpoint, of the same game, algorithm and network, or a PPO bot
    file of this game whose network has this config's shape."""
    from .run_dir import RunDir
    where = "config key 'init_from'"
    if cfg["pretrain"]["steps"]:
        raise ValueError(f"{where}: the network starts from that run's, so pretrain.steps must be 0 (it is "
                         f"{cfg['pretrain']['steps']})")
    if cfg["backend"] != "sb3":
        raise ValueError(f"{where}: starts sb3 runs only (backend {cfg['backend']!r})")
    bot = init_bot(cfg)
    if bot is not None:
        _check_init_bot(cfg, bot, where)
        return
    source = RunDir(os.path.expanduser(cfg["init_from"]))
    if not source.config.is_file() or not source.latest.weights.is_file():
        raise ValueError(f"{where}: {source} is not a run folder with a checkpoint (config.yaml and "
                         "checkpoints/latest/model.pt)")
    try:
        other = saved_config(yaml.safe_load(source.config.read_text()), str(source.config))
    except (ValueError, yaml.YAMLError) as err:
        raise ValueError(f"{where}: {str(err).splitlines()[0]}") from None
    for key in INIT_SHARED:
        if _get(other, key) != _get(cfg, key):
            raise ValueError(f"{where}: {source} has {key} {_get(other, key)!r}, this config {_get(cfg, key)!r}")
    game_cls = envs.game_class(cfg["game"])
    theirs = game_cls(**other["settings"]).settings.as_dict()
    changed = game_cls(**cfg["settings"]).space_changes(theirs)
    if changed:
        raise ValueError(f"{where}: {source} was trained with " + ", ".join(f"{k}={theirs[k]!r}" for k in changed)
                         + ", which changes the observations or actions of this config's settings")


def _check_init_bot(cfg: dict, path: Path, where: str) -> None:
    from ..policies.bot import Bot, BotFileError, check_fits, mlp_from_bot
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    try:
        meta = Bot.read_metadata(path)[1]
        check_fits(meta, game, str(path))
        mlp = mlp_from_bot(path, game.action_feature_size)
    except (BotFileError, FileNotFoundError) as err:
        raise ValueError(f"{where}: {err}") from None
    if cfg["algorithm"] != "ppo" or meta["algorithm"] not in ("ppo", "distilled"):     # distilled: .distill
        raise ValueError(f"{where}: a bot file starts a ppo run from a ppo bot or a distilled one (its logits are a "
                         f"policy); this is {cfg['algorithm']} from a {meta['algorithm']} bot")
    hidden = [w.shape[0] for w in mlp.weights[:-1]]
    features = bool(cfg["network"]["action_features"] and game.action_feature_size)
    theirs = (hidden, mlp.activation, mlp.feature_weights is not None)
    if theirs != (list(cfg["network"]["hidden"]), cfg["network"]["activation"], features):
        raise ValueError(f"{where}: {path} has network.hidden {hidden}, activation {mlp.activation}, action "
                         f"features {theirs[2]}; this config {cfg['network']['hidden']}, "
                         f"{cfg['network']['activation']}, {features}")


def cuda_available() -> tuple[bool, str]:
    """Whether torch here can train on CUDA, and what it is (a device name, or why not)."""
    import torch
    if not torch.cuda.is_available():
        built = getattr(torch.version, "cuda", None)
        why = (f"torch {torch.__version__} is built without CUDA" if not built
               else f"torch {torch.__version__} (CUDA {built}) finds no CUDA device")
        return False, why
    return True, torch.cuda.get_device_name(0)


def _check_device(device: str) -> None:
    if device != "cuda":
        return
    ok, what = cuda_available()
    if not ok:
        raise ValueError(f"config key 'device': 'cuda', but {what}; use device cpu (or auto: cuda when there is "
                         "one), or install a CUDA build of torch on a machine with an NVIDIA GPU")


def rllib_gpus_needed(num_learners: int, per_learner: float) -> int:
    """CUDA devices the learners of backend rllib take: the driver's learner (``num_learners`` 0) trains on one;
    learner actors take ``per_learner`` each, a fraction of a GPU shared as Ray shares it (``floor(1 /
    per_learner)`` learners to a GPU), more than 1 as whole GPUs."""
    if per_learner <= 0:
        return 0
    if num_learners == 0:
        return 1
    if per_learner < 1:
        return math.ceil(num_learners / math.floor(1 / per_learner + 1e-9))
    return num_learners * math.ceil(per_learner)


def _check_rllib_gpus(cfg: dict) -> None:
    """``rllib.num_gpus_per_learner`` against the CUDA devices torch sees on this machine, before Ray starts (RLlib
    itself fails deep in building the learner, or waits for a GPU that never comes). Not checked where Ray places
    the learners on a cluster (``rllib.address`` with ``num_learners`` 1+): their GPUs may be on other machines.
    The driver's learner (``num_learners`` 0) trains in this process, so its GPU must be here whatever the address."""
    rc = cfg["rllib"]
    per, learners = rc["num_gpus_per_learner"], rc["num_learners"]
    if cfg["backend"] != "rllib" or per <= 0 or (rc["address"] and learners > 0):
        return
    key = "config key 'rllib.num_gpus_per_learner'"
    need = rllib_gpus_needed(learners, per)
    if learners == 0:
        who = "the learner trains in this process (rllib.num_learners 0), on this machine"
        if rc["address"]:
            who += f" even with rllib.address {rc['address']!r}"
    else:
        who = f"rllib.num_learners {learners} on a local Ray instance (rllib.address '') need {need} GPU(s) here"
    ok, what = cuda_available()
    if not ok:
        raise ValueError(f"{key}: {short(per)}, but {what}; {who}: set it to 0 (the learner trains on the CPU), "
                         "run on a machine with an NVIDIA GPU and a CUDA build of torch, or give rllib.address a "
                         "cluster with GPU nodes and rllib.num_learners 1+")
    import torch
    have = torch.cuda.device_count()
    if need > have:
        raise ValueError(f"{key}: {short(per)} with rllib.num_learners {learners} needs {need} GPUs, but torch "
                         f"sees {have} CUDA device{'s' if have != 1 else ''} on this machine; lower "
                         "rllib.num_gpus_per_learner or rllib.num_learners, or give rllib.address a cluster with "
                         "more GPUs")


def _check_evaluation_spaces(cfg: dict, game, eval_game) -> None:
    """Evaluation may change how a match is played and scored, not what the agent sees or can do."""
    trained, evaluated = game.settings.as_dict(), eval_game.settings.as_dict()
    changed = game.space_changes(evaluated)
    if changed or (game.observation_size, game.num_actions) != (eval_game.observation_size, eval_game.num_actions):
        what = ", ".join(f"{k}={evaluated.get(k)!r}" for k in changed) or "these settings"
        raise ValueError(f"config key 'evaluation.settings': {what} changes the observations or actions the agent "
                         f"is trained on (" + (", ".join(f"{k}={trained.get(k)!r}" for k in changed) or
                                              f"{game.observation_size} observations, {game.num_actions} actions")
                         + "); evaluation can change only settings such as episode, reward or target_score")


# ----- memory ---------------------------------------------------------------------------------------------------
def machine_memory() -> int | None:
    """Bytes of physical memory of this machine (None if unknown): what no run here can exceed."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def memory_estimate(cfg: dict, game) -> dict[str, int]:
    """Bytes the big allocations of a run need, by the config key that sizes them."""
    obs, actions = game.observation_size, game.num_actions
    sizes = [obs, *cfg["network"]["hidden"]]
    trunk = sum(a * b + b for a, b in zip(sizes, sizes[1:]))
    last = sizes[-1]
    need = {}
    if cfg["algorithm"] == "ppo":
        params = 2 * trunk + last * actions + actions + last + 1           # policy and value nets, two heads
        need["network.hidden"] = params * 4 * 4                              # weights, gradients, Adam's two moments
        rollout = cfg["ppo"]["n_steps"] * cfg["n_envs"]
        need["ppo.n_steps"] = rollout * (obs * 4 + actions + 6 * 4)          # observations, masks, scalars
    else:
        params = trunk + last * actions + actions
        need["network.hidden"] = params * 4 * 5                              # + the target network
        need["dqn.buffer_size"] = cfg["dqn"]["buffer_size"] * (2 * obs * 4 + actions + 8 + 3 * 4
                                                             + (4 if cfg["dqn"]["prioritized"] else 0))
    pre = cfg["pretrain"]
    if pre["steps"]:
        decisions = pre["steps"] + pre["dagger_rounds"] * (pre["dagger_steps"] or pre["steps"])
        per_generation = pre["generation_steps"] or pre["dagger_steps"] or pre["steps"]
        decisions += 2 * pre["generations"] * per_generation        # all generations' labels, and one copy to fit
        need["pretrain.steps"] = decisions * (obs * 4 + actions + 8 + 4 + 1)
    return need


def _check_memory(cfg: dict, game) -> None:
    have = machine_memory()
    if have is None:
        return
    need = memory_estimate(cfg, game)
    total = sum(need.values())
    if total > have:
        key = max(need, key=need.get)
        value = cfg
        for part in key.split("."):
            value = value[part]
        raise ValueError(f"config key {key!r}: {value!r} needs about {_gb(need[key])} of memory "
                         f"({_gb(total)} for the whole run); this machine has {_gb(have)} of memory")


def _gb(n: int) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**28 else f"{n / 2**20:.0f} MB"


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """``["ppo.learning_rate=1e-4", "settings.players=2"]``: values are read as YAML scalars/lists."""
    raw = copy.deepcopy(raw)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"an override must be written key=value, not {short(item)}")
        key, text = item.split("=", 1)
        try:
            value = yaml.load(text, Loader=UniqueKeyLoader)
        except yaml.YAMLError as err:
            raise ValueError(f"override {short(item)}: cannot read the value "
                             f"({clip(' '.join(str(err).split()))})") from None
        except RecursionError:
            raise ValueError(f"override {short(item)}: nested too deeply") from None
        node = raw
        parts = key.strip().split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {short(item)}: {short(p)} is not a section")
        node[parts[-1]] = value
    return raw


def _expand_output(cfg: dict) -> str:
    template = cfg["output"]
    try:
        out = template.format(game=cfg["game"], algorithm=cfg["algorithm"], seed=cfg["seed"])
    except (KeyError, IndexError, ValueError, AttributeError) as err:
        raise ValueError(f"config key 'output': {template!r} cannot be expanded ({type(err).__name__}: {err}); "
                         "the placeholders are {game}, {algorithm} and {seed}") from None
    if not out.strip():
        raise ValueError("config key 'output': empty; give the run folder, e.g. runs/{game}_{algorithm}_{seed}")
    path = Path(out)
    try:
        for p in (path, *path.parents):
            if p.exists():
                if not p.is_dir():
                    raise ValueError(f"config key 'output': {p} exists and is not a folder")
                break
    except OSError as err:                # a name too long for the file system, a loop of links...
        raise ValueError(f"config key 'output': {short(out)} cannot be a folder here "
                         f"({err.strerror or type(err).__name__})") from None
    return out


def resolve(raw: dict, init_later: bool = False) -> dict:
    """Defaults + the user's tree, validated. Returns the full resolved config. ``init_later``: the network to
    start from is named when the run starts (a recipe's later stage, :mod:`.recipe`), so ``init_from`` is checked
    then."""
    cfg = _merge(SCHEMA, defaults(), raw)
    _check_semantics(cfg, init_later)
    cfg["output"] = _expand_output(cfg)
    return cfg


def read_file(path) -> tuple[Path, dict]:
    """A config file's path (a shipped config's name, e.g. pishti/ppo, finds the one in the package) and its
    tree, read with the duplicate-refusing safe loader."""
    path = Path(path)
    if path.exists() and not path.is_file():          # a folder, a device (/dev/zero), a pipe: never read
        raise ValueError(f"{path} is not a config file (not a regular file)")
    if not path.is_file():
        from kahve import configs
        shipped = configs.find(str(path))
        if shipped is None:
            raise FileNotFoundError(f"no config file at {path} (shipped configs: "
                                    + ", ".join(sorted(str(p.relative_to(configs.ROOT)) for p in configs.ROOT.glob("*/*.yaml")))
                                    + ")")
        path = shipped
    raw = read_yaml(read_text_limited(path), str(path)) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a config is a mapping of keys, got {type(raw).__name__}")
    return path, raw


def load(path, overrides: list[str] | None = None) -> dict:
    """Read, override and validate a YAML config file of one training run (a recipe, with stages, is read by
    :func:`.recipe.load_recipe`)."""
    path, raw = read_file(path)
    if "stages" in raw:
        raise ValueError(f"{path} is a recipe (a config with stages): run it with kahve train {path}")
    return resolve(apply_overrides(raw, overrides or []))


# ----- resuming --------------------------------------------------------------------------------------------------
#: keys a resumed run cannot change: they fix the game, the network's shape or where the run lives; and the
#: opponent pool, which the checkpoint holds with its snapshots (a changed pool would be silently ignored)
FIXED_ON_RESUME = ("game", "settings", "algorithm", "backend", "network.hidden", "network.activation",
                   "network.action_features", "opponents.pool", "output")
#: and for DQN, the replay buffer's layout (and the dueling head's parameters)
FIXED_ON_RESUME_DQN = ("n_envs", "dqn.buffer_size", "dqn.prioritized", "dqn.dueling")


def for_resume(saved: dict, overrides: list[str], source: str = "config.yaml") -> dict:
    """The config of a resumed run: the run's saved config with ``overrides``; changing a key the checkpoint
    depends on (:data:`FIXED_ON_RESUME`) is an error naming the key."""
    try:
        before = resolve({**saved, "init_from": ""})    # (init_from: see the end)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    raw = apply_overrides(saved, overrides)
    merged = _merge(SCHEMA, defaults(), raw)          # the keys and types; the fixed keys before anything else
    fixed = FIXED_ON_RESUME + (FIXED_ON_RESUME_DQN if before["algorithm"] == "dqn" else ())
    for key in fixed:
        old, new = _get(before, key), _get(merged, key)
        if key == "output":
            new = _expand_output(merged)
        if old != new:
            raise ValueError(f"config key {key!r} cannot change when resuming (the run has {old!r}, the override "
                             f"gives {new!r}); start a new run for that (kahve train CONFIG --override ...)")
    # init_from says where the network started: the checkpoint holds it now, so a resume never reads that run
    # (which may have moved or gone since)
    cfg = resolve({**raw, "init_from": ""})
    cfg["init_from"] = raw.get("init_from", "")
    return cfg


def saved_config(raw: dict, source: str = "config.yaml") -> dict:
    """A run's saved config for reading its results (export): keys, types and the game checked, not what
    training alone needs (its opponents, budgets)."""
    try:
        cfg = _merge(SCHEMA, defaults(), raw)
        if cfg["game"] is None:
            raise ValueError("config key 'game' is required")
        _check_settings("settings", cfg["settings"])
        try:
            envs.game_class(cfg["game"])(**cfg["settings"])
        except ValueError as err:
            raise ValueError(f"config key 'settings': {err}") from None
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    return cfg


def _get(cfg: dict, key: str):
    for part in key.split("."):
        cfg = cfg.get(part) if isinstance(cfg, dict) else None
    return cfg
