"""Training configs: one YAML file, validated before any work starts.

:data:`SCHEMA` is the single source of truth: every key, its type, default and allowed range. Unknown keys,
wrong types and out-of-range values are ``ValueError`` naming the key path (``ppo.n_steps``). The game's
``settings`` are checked by the game itself. ``--override key=value`` edits the same tree before validation.
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kahve import envs


@dataclass(frozen=True)
class F:
    """One config field: type, default, and optional bounds or choices."""
    type: type
    default: Any
    lo: float | None = None
    hi: float | None = None
    choices: tuple | None = None
    doc: str = ""


OPPONENT_DEFAULT = [{"policy": "random", "weight": 1.0}, {"policy": "heuristic", "weight": 1.0}]

SCHEMA: dict = {
    "game": F(str, None, choices=tuple(envs.GAMES), doc="the game"),
    "settings": F(dict, {}, doc="game settings (RULES.md names), e.g. {players: 2, episode: deal}"),
    "algorithm": F(str, "ppo", choices=("ppo", "dqn")),
    "seed": F(int, 0, 0, 2**31 - 1),
    "total_timesteps": F(int, 200_000, 1, 10**10, doc="learner decisions in the whole run"),
    "n_envs": F(int, 4, 1, 256, doc="parallel environments"),
    "vec_env": F(str, "dummy", choices=("subproc", "dummy"),
                 doc="dummy: envs in the learner's process (fastest on 2 cores: `kahve bench --ppo` measured "
                     "1.8x the steps/s of subprocesses); subproc: one process per env, for machines with more "
                     "cores than envs"),
    "device": F(str, "cpu", choices=("cpu", "cuda", "auto")),
    "torch_threads": F(int, 1, 1, 256, doc="torch threads in the learner process (1 is stable on small CPUs)"),
    "output": F(str, "runs/{game}_{algorithm}_{seed}", doc="run folder; {game} {algorithm} {seed} expand"),
    "checkpoint_every": F(int, 50_000, 1, 10**10, doc="steps between checkpoints"),
    "network": {
        "hidden": F(list, [256, 256], doc="hidden layer sizes"),
        "activation": F(str, "tanh", choices=("tanh", "relu")),
    },
    "ppo": {
        "learning_rate": F(float, 3e-4, 1e-7, 1.0),
        "n_steps": F(int, 512, 8, 1_000_000, doc="steps per env per update"),
        "batch_size": F(int, 256, 8, 1_000_000),
        "n_epochs": F(int, 4, 1, 100),
        "gamma": F(float, 0.99, 0.0, 1.0),
        "gae_lambda": F(float, 0.95, 0.0, 1.0),
        "clip_range": F(float, 0.2, 0.0, 1.0),
        "ent_coef": F(float, 0.01, 0.0, 1.0),
        "vf_coef": F(float, 0.5, 0.0, 10.0),
        "max_grad_norm": F(float, 0.5, 0.0, 100.0),
    },
    "dqn": {
        "learning_rate": F(float, 1e-4, 1e-7, 1.0),
        "buffer_size": F(int, 100_000, 100, 10**8),
        "learning_starts": F(int, 5_000, 0, 10**9),
        "batch_size": F(int, 128, 1, 100_000),
        "gamma": F(float, 0.99, 0.0, 1.0),
        "train_freq": F(int, 4, 1, 10_000),
        "gradient_steps": F(int, 1, 1, 1000),
        "target_update_interval": F(int, 2_000, 1, 10**8),
        "exploration_fraction": F(float, 0.3, 0.0, 1.0),
        "exploration_initial_eps": F(float, 1.0, 0.0, 1.0),
        "exploration_final_eps": F(float, 0.05, 0.0, 1.0),
        "max_grad_norm": F(float, 10.0, 0.0, 1000.0),
    },
    "pretrain": {
        "steps": F(int, 0, 0, 10**8, doc="teacher decisions to imitate before PPO (behaviour cloning); 0: off"),
        "teacher": F(str, "heuristic", doc="the policy imitated"),
        "epochs": F(int, 5, 1, 1000),
        "batch_size": F(int, 512, 8, 10**6),
        "learning_rate": F(float, 1e-3, 1e-7, 1.0),
        "dagger_rounds": F(int, 0, 0, 100, doc="DAgger rounds after cloning: the clone plays, the teacher labels"),
        "dagger_steps": F(int, 0, 0, 10**8, doc="decisions collected per DAgger round; 0: as many as steps"),
        "dagger_epochs": F(int, 5, 1, 1000, doc="epochs over all the data after each DAgger round"),
    },
    "opponents": {
        "pool": F(list, OPPONENT_DEFAULT, doc="[{policy: SPEC, weight: W}, ...]"),
        "self_play": {
            "every": F(int, 0, 0, 10**10, doc="steps between snapshots of the learner; 0: no self-play"),
            "weight": F(float, 1.0, 0.0, 1000.0, doc="pool weight of each snapshot"),
            "max_snapshots": F(int, 5, 1, 1000),
        },
    },
    "evaluation": {
        "every": F(int, 50_000, 0, 10**10, doc="steps between evaluations; 0: only at the end"),
        "games": F(int, 100, 2, 10**6),
        "opponents": F(list, ["random", "heuristic"]),
        "workers": F(int, 2, 1, 256),
        "settings": F(dict, {}, doc="settings changed for evaluation, e.g. {episode: match}"),
    },
}


def defaults(schema: dict = SCHEMA) -> dict:
    return {k: (defaults(v) if isinstance(v, dict) else copy.deepcopy(v.default)) for k, v in schema.items()}


def _check_value(path: str, f: F, value: Any) -> Any:
    if f.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if f.type is float and isinstance(value, str):   # YAML 1.1 reads "1e-4" (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            pass
    ok = isinstance(value, f.type) and not (f.type in (int, float) and isinstance(value, bool))
    if not ok:
        raise ValueError(f"config key {path!r}: expected {f.type.__name__}, got {value!r}")
    if f.choices is not None and value not in f.choices:
        raise ValueError(f"config key {path!r}: {value!r} is not allowed; allowed: "
                         + ", ".join(repr(c) for c in f.choices))
    if f.lo is not None and not (f.lo <= value <= f.hi):
        raise ValueError(f"config key {path!r}: {value!r} is out of range {f.lo}..{f.hi}")
    return value


def _merge(schema: dict, base: dict, user: Any, path: str = "") -> dict:
    if not isinstance(user, dict):
        raise ValueError(f"config {('key ' + repr(path)) if path else 'file'}: expected a mapping, got {user!r}")
    out = dict(base)
    for key, value in user.items():
        full = f"{path}.{key}" if path else str(key)
        if key not in schema:
            close = difflib.get_close_matches(str(key), list(schema), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown config key {full!r}{hint}; known here: {', '.join(schema)}")
        spec = schema[key]
        if isinstance(spec, dict):
            out[key] = _merge(spec, base[key], value, full)
        else:
            out[key] = _check_value(full, spec, value)
    return out


def _check_semantics(cfg: dict) -> None:
    if cfg["game"] is None:
        raise ValueError("config key 'game' is required; one of: " + ", ".join(envs.GAMES))
    game_cls = envs.game_class(cfg["game"])
    try:
        game_cls(**cfg["settings"])
        game_cls(**{**cfg["settings"], **cfg["evaluation"]["settings"]})
    except ValueError as err:
        raise ValueError(f"config key 'settings': {err}") from None
    hidden = cfg["network"]["hidden"]
    if not hidden or not all(isinstance(h, int) and not isinstance(h, bool) and 1 <= h <= 65536 for h in hidden):
        raise ValueError(f"config key 'network.hidden': expected a non-empty list of layer sizes, got {hidden!r}")
    pool = cfg["opponents"]["pool"]
    if not pool:
        raise ValueError("config key 'opponents.pool': needs at least one opponent")
    from ..policies.specs import make_policy
    game = game_cls(**cfg["settings"])
    for k, item in enumerate(pool):
        where = f"opponents.pool[{k}]"
        if not isinstance(item, dict) or set(item) - {"policy", "weight"} or "policy" not in item:
            raise ValueError(f"config key {where!r}: expected {{policy: SPEC, weight: W}}, got {item!r}")
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
            raise ValueError(f"config key {where + '.weight'!r}: expected a positive number, got {weight!r}")
        try:
            make_policy(item["policy"], game, 0)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"config key {where + '.policy'!r}: {err}") from None
    for k, spec in enumerate(cfg["evaluation"]["opponents"]):
        try:
            make_policy(spec, game, 0)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"config key 'evaluation.opponents[{k}]': {err}") from None
    if cfg["pretrain"]["steps"] and cfg["algorithm"] != "ppo":
        raise ValueError("config key 'pretrain.steps': behaviour cloning is implemented for algorithm ppo only")
    try:
        make_policy(cfg["pretrain"]["teacher"], game, 0)
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(f"config key 'pretrain.teacher': {err}") from None
    if cfg["algorithm"] == "ppo" and cfg["ppo"]["batch_size"] > cfg["ppo"]["n_steps"] * cfg["n_envs"]:
        raise ValueError(f"config key 'ppo.batch_size': {cfg['ppo']['batch_size']} is larger than one rollout "
                         f"(ppo.n_steps x n_envs = {cfg['ppo']['n_steps'] * cfg['n_envs']})")


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """``["ppo.learning_rate=1e-4", "settings.players=2"]``: values are read as YAML scalars/lists."""
    raw = copy.deepcopy(raw)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"an override must be written key=value, not {item!r}")
        key, text = item.split("=", 1)
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ValueError(f"override {item!r}: cannot read the value ({err})") from None
        node = raw
        parts = key.strip().split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {p!r} is not a section")
        node[parts[-1]] = value
    return raw


def resolve(raw: dict) -> dict:
    """Defaults + the user's tree, validated. Returns the full resolved config."""
    cfg = _merge(SCHEMA, defaults(), raw)
    _check_semantics(cfg)
    cfg["output"] = cfg["output"].format(game=cfg["game"], algorithm=cfg["algorithm"], seed=cfg["seed"])
    return cfg


def load(path, overrides: list[str] | None = None) -> dict:
    """Read, override and validate a YAML config file."""
    path = Path(path)
    if not path.is_file():
        from kahve import configs
        shipped = configs.find(str(path))
        if shipped is None:
            raise FileNotFoundError(f"no config file at {path} (shipped configs: "
                                    + ", ".join(sorted(str(p.relative_to(configs.ROOT)) for p in configs.ROOT.glob("*/*.yaml")))
                                    + ")")
        path = shipped
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a config is a mapping of keys, got {type(raw).__name__}")
    return resolve(apply_overrides(raw, overrides or []))
