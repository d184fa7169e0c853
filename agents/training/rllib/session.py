"""``backend: rllib``: the same training config trained with Ray RLlib's PPO (its new API stack), on the env runners
of one machine or of a cluster (docs/scale-out.md). Needs the ``rllib`` extra (``pip install 'kahve[rllib]'``).

What runs where:

- **The env** (:class:`SeatsEnv`) is a turn-based RLlib ``MultiAgentEnv`` over the kahve engine with one agent per
  *side that a network plays*. It returns an observation only for the agent to move, a ``Dict`` of
  ``observations`` (the game's float32 observation) and ``action_mask`` (float32, 1 at the legal actions). Agent
  ids are ``"<module>@<side>"``. Each episode the env seats the learner on a rotating side and draws every other
  side from the opponent pool by weight, as :class:`~.learner_env.LearnerEnv` does.
- **Baselines act inside the env** (random, heuristic, ISMCTS, rollouts, bot files). They need the engine state (a
  search determinizes it), and an RLModule on the new API stack only ever sees the batch of observations, so the
  env plays their moves between the network agents' turns, as LearnerEnv plays its opponents' moves.
- **Networks are RLlib modules**: the learning policy (module ``learner``) and the frozen self-play snapshots
  (modules ``snapshot_0`` .. ``snapshot_{max_snapshots-1}``, never trained: ``policies_to_train=["learner"]``). The
  policy-mapping function sends each agent to the module its id names. When self-play takes a snapshot, its
  weights are written into its module, on the learner and on every env runner, and the envs' pools learn of it.
- **The module** (:class:`MaskedMLPModule`) is kahve's network exactly: a policy MLP (the config's hidden sizes
  and activation) with a linear action head, and a value MLP of the same shape, as SB3's MlpPolicy builds them, so
  the trained policy maps one to one onto :class:`~..policies.network.MLP`. It sets the logits of illegal actions
  to -1e9 before any distribution is made, in the one forward pass that serves acting (exploration and
  inference) and the PPO loss, so no illegal action is sampled and the loss, entropy and KL see legal actions only.
  The env counts the decisions it gets and the illegal ones among them; an illegal action is refused with
  ``IllegalActionError``, never replaced.
- **The run folder is kahve's**: config.yaml, TensorBoard scalars in tb/ (``charts/``, ``rollout/``, ``train/``,
  ``selfplay/``, ``eval/``), ``checkpoints/latest`` (model.pt: the learner's weights and Adam's state as tensors,
  loaded with ``weights_only=True``; opponents/ as the sb3 backend writes it; state.json), ``policy.npz`` and
  ``summary.json``. RLlib's own checkpoints (pickles) are never written into it nor read from it; ``kahve export``
  and evaluation read it unchanged.

A resumed run puts back the weights, Adam's state, the opponent pool, the schedule and the step count; the envs
deal from new streams (keyed by the step count), and RLlib's own counters (iterations, lifetime steps) start again.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import random
import time
import warnings
from types import SimpleNamespace

import gymnasium as gym
import numpy as np

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")     # no usage reports: a run needs no network


class RLlibMissing(ImportError, ValueError):
    """Ray RLlib is not installed (a ValueError too, so that ``kahve train`` says so in one line)."""


try:
    import ray.rllib  # noqa: F401
except ImportError as err:
    raise RLlibMissing(f"config key 'backend': rllib needs Ray RLlib, which is not installed here ({err}); "
                       "install it with: pip install 'kahve[rllib]'") from None

import torch  # noqa: E402
from torch import nn  # noqa: E402
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI  # noqa: E402
from ray.rllib.core.rl_module.torch import TorchRLModule  # noqa: E402
from ray.rllib.env.multi_agent_env import MultiAgentEnv  # noqa: E402
from ray.exceptions import AuthenticationError, RayActorError  # noqa: E402

from kahve import envs  # noqa: E402
from kahve.envs import IllegalActionError  # noqa: E402

from ...policies.base import decide  # noqa: E402
from ...policies.network import MLP  # noqa: E402
from ...policies.specs import make_policy  # noqa: E402
from ..session import Session, opened_run  # noqa: E402

LEARNER = "learner"
#: the logit an illegal action gets: far below any real logit, yet finite (no inf - inf in the loss or the KL)
MASKED_LOGIT = -1e9


def snapshot_modules(cfg: dict, pool=None) -> list[str]:
    """The module ids of the snapshot slots: ``snapshot_k``, the names :meth:`OpponentPool.names` gives them; as
    many as self-play keeps, or as the pool of a resumed run holds."""
    sp = cfg["opponents"]["self_play"]
    n = sp["max_snapshots"] if sp["every"] else 0
    if pool is not None:
        n = max(n, sum(isinstance(spec, MLP) for spec, _ in pool.entries))
    return [f"snapshot_{k}" for k in range(n)]


def agent_id(module: str, side: int) -> str:
    return f"{module}@{side}"


def policy_mapping_fn(agent_id, episode=None, **kwargs) -> str:
    """The module that plays an agent: the one its id names (``learner@1`` -> ``learner``). The env seats the
    modules each episode as the kahve opponent pool does (see :class:`SeatsEnv`)."""
    return str(agent_id).split("@", 1)[0]


def pool_listing(pool) -> list[tuple[str, str, float]]:
    """An :class:`~.opponents.OpponentPool` as the envs hold it: ``("policy", SPEC, w)`` for a baseline,
    ``("module", "snapshot_k", w)`` for the k-th snapshot, which its module plays."""
    out = []
    for name, (spec, weight) in zip(pool.names(), pool.entries):
        out.append(("module" if isinstance(spec, MLP) else "policy", name, float(weight)))
    return out


def spaces(game) -> tuple[gym.spaces.Dict, gym.spaces.Discrete]:
    box = gym.spaces.Box(game.obs_low, game.obs_high, (game.observation_size,), np.float32)
    mask = gym.spaces.Box(0.0, 1.0, (game.num_actions,), np.float32)
    return gym.spaces.Dict({"observations": box, "action_mask": mask}), gym.spaces.Discrete(game.num_actions)


# ----- the env --------------------------------------------------------------------------------------------------
_INSTANCES = itertools.count()          # envs made in this process: tells apart the envs of one env runner


class SeatsEnv(MultiAgentEnv):
    """A kahve game as a turn-based RLlib ``MultiAgentEnv``; see the module docstring.

    ``config``: ``game``, ``settings``, ``pool`` (a :func:`pool_listing`), ``modules`` (every module id an agent
    may name), ``seed`` (text or int; with the env runner's index and this process's env count it seeds the env's
    own stream). RLlib's reset seeds are not used: they repeat across env runners (runner w's env i gets seed +
    w + i), and the deals must not."""

    def __init__(self, config=None):
        super().__init__()
        worker = getattr(config, "worker_index", 0)        # RLlib hands an EnvContext: a dict with the runner's index
        config = dict(config or {})
        self.game = g = envs.game_class(config["game"])(**config.get("settings", {}))
        self.modules = list(config.get("modules", [LEARNER]))
        obs_space, act_space = spaces(g)
        self.possible_agents = [agent_id(m, side) for m in self.modules for side in range(g.num_sides)]
        self.agents = []
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self._rng = random.Random(f"{config.get('seed', 0)}/{worker}/{next(_INSTANCES)}")
        self._policies: dict = {}               # baseline policies of this env, by spec (built on first draw)
        self.set_pool(config.get("pool", [("policy", "random", 1.0)]))
        self.state = None
        self.learner_side = 0
        self._episodes = 0
        self.counters = {"episodes": 0, "decisions": {}, "illegal": {}, "learner_wins": 0, "learner_episodes": 0}

    # ----- opponents -------------------------------------------------------------------------------------
    def set_pool(self, listing) -> None:
        """The pool the next episodes draw from (a :func:`pool_listing`)."""
        listing = [tuple(e) for e in listing]
        for kind, name, weight in listing:
            if kind == "module" and name not in self.modules:
                raise ValueError(f"opponent {name!r} has no module here (modules: {', '.join(self.modules)})")
        self.pool = listing
        self._cum_weights = list(itertools.accumulate(w for _, _, w in listing))

    def _draw(self):
        """One opponent by weight: a policy that plays inside the env, or the id of the module that plays it."""
        kind, name, _ = self.pool[self._rng.choices(range(len(self.pool)), cum_weights=self._cum_weights)[0]]
        if kind == "module":
            return name
        if name not in self._policies:
            self._policies[name] = make_policy(name, self.game, self._rng.getrandbits(32))
        return self._policies[name]

    # ----- seats -----------------------------------------------------------------------------------------
    def _seat(self, side: int) -> int:
        """The seat whose view ``side``'s agent gets: the one to move if it is the side's, else its first."""
        st, sides = self.state, self.game.sides
        if st.current_player is not None and sides[st.current_player] == side:
            return st.current_player
        return sides.index(side)

    def _obs(self, side: int, final: bool = False) -> dict:
        st, g = self.state, self.game
        seat = self._seat(side)
        mask = (np.zeros(g.num_actions, np.float32) if final or st.current_player != seat
                else st.legal_mask().astype(np.float32))
        return {"observations": st.observation(seat), "action_mask": mask}

    def _collect(self) -> None:
        """Add the last engine step's rewards to each network side's."""
        st, sides = self.state, self.game.sides
        for side in self._agents:
            self._pending[side] += st.rewards[sides.index(side)]

    def _advance(self) -> None:
        """Let the baselines play until a network side is to move or the episode is over."""
        st, sides = self.state, self.game.sides
        while st.current_player is not None and not self._over():
            who = self._controllers[sides[st.current_player]]
            if isinstance(who, str):
                return
            st.apply(decide(who, st))
            self._collect()

    def _over(self) -> bool:
        st = self.state
        return st.current_player is None or st.out[self.game.sides.index(self.learner_side)]

    # ----- RLlib's API -----------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        g = self.game
        while True:
            self.learner_side = self._episodes % g.num_sides
            self._episodes += 1
            self._controllers = [LEARNER if side == self.learner_side else self._draw() for side in range(g.num_sides)]
            for p in self._controllers:
                if not isinstance(p, str) and hasattr(p, "reset"):
                    p.reset()
            # network sides, by side: their agent ids
            self._agents = {side: agent_id(who, side) for side, who in enumerate(self._controllers)
                            if isinstance(who, str)}
            self._pending = {side: 0.0 for side in self._agents}
            self._seen: set[int] = set()
            self.state = g.new_state(self._rng)
            self._advance()
            # an episode in which no network side has a real decision (every move forced) cannot be stepped
            if not self._over():
                break
        self._pending = {side: 0.0 for side in self._agents}     # rewards before an agent's first decision: none
        side = g.sides[self.state.current_player]
        self._seen.add(side)
        self.agents = [self._agents[side]]
        return {self._agents[side]: self._obs(side)}, {}

    def step(self, action_dict):
        st, g = self.state, self.game
        side = g.sides[st.current_player]
        aid = self._agents[side]
        action = action_dict[aid]
        module = self._controllers[side]
        c = self.counters
        c["decisions"][module] = c["decisions"].get(module, 0) + 1
        mask = st.legal_mask()
        if not (0 <= int(action) < g.num_actions and mask[int(action)]):
            c["illegal"][module] = c["illegal"].get(module, 0) + 1
            raise IllegalActionError(f"module {module!r} chose the illegal action {action} in {g.name} (legal: "
                                     f"{np.flatnonzero(mask).tolist()}); the masked module must never do that")
        st.apply(int(action))
        self._collect()
        self._advance()
        seen = sorted(self._seen)
        if self._over():
            # every agent that acted gets its last observation, its rewards and the end
            terminated = st.terminal or st.out[g.sides.index(self.learner_side)]
            truncated = st.truncated and not terminated
            obs = {self._agents[s]: self._obs(s, final=True) for s in seen}
            rewards = {self._agents[s]: float(self._pending[s]) for s in seen}
            infos = {}
            if LEARNER in self._controllers and self.learner_side in self._seen:
                won = bool(st.winners) and self.learner_side in {g.sides[w] for w in st.winners}
                c["learner_episodes"] += 1
                c["learner_wins"] += int(won)
                infos[self._agents[self.learner_side]] = {"won": won}
            c["episodes"] += 1
            self.agents = []
            return (obs, rewards, {**{a: terminated for a in obs}, "__all__": terminated},
                    {**{a: truncated for a in obs}, "__all__": truncated}, infos)
        # a Ish player who went broke is out; the episode goes on for the learner
        done_now = {self._agents[s]: True for s in seen if st.out[g.sides.index(s)]}
        nxt = g.sides[st.current_player]
        self._seen.add(nxt)
        obs = {self._agents[nxt]: self._obs(nxt)}
        for a in done_now:
            obs[a] = self._obs(int(a.rsplit("@", 1)[1]), final=True)
        rewards = {self._agents[s]: float(self._pending[s]) for s in self._seen}
        self._pending = {s: 0.0 for s in self._pending}
        self.agents = [self._agents[nxt]]
        for a in done_now:
            self._seen.discard(int(a.rsplit("@", 1)[1]))
        return obs, rewards, {**done_now, "__all__": False}, {"__all__": False}, {}

    def get_counters(self) -> dict:
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.counters.items()}


# ----- the module -------------------------------------------------------------------------------------------------
def _mlp(sizes: list[int], activation: str) -> nn.Sequential:
    act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), act()]
    return nn.Sequential(*layers)


class MaskedMLPModule(TorchRLModule, ValueFunctionAPI):
    """PPO's RLModule for kahve: observation -> policy MLP -> action head (logits, illegal ones masked), and
    observation -> value MLP -> value head. ``model_config``: ``hidden`` (layer sizes) and ``activation``. The
    layers are named as SB3's (``policy_net``, ``action_net``, ``value_net``), and initialised as it does
    (orthogonal, gains sqrt(2), 0.01 for the action head, 1 for the value head)."""

    def setup(self):
        hidden = list(self.model_config.get("hidden", [256, 256]))
        activation = self.model_config.get("activation", "tanh")
        space = self.observation_space
        n_obs = space["observations"].shape[0] if isinstance(space, gym.spaces.Dict) else space.shape[0]
        n_act = self.action_space.n
        self.activation = activation
        self.policy_net = _mlp([n_obs, *hidden], activation)
        self.action_net = nn.Linear(hidden[-1], n_act)
        self.value_trunk = _mlp([n_obs, *hidden], activation)
        self.value_net = nn.Linear(hidden[-1], 1)
        for seq in (self.policy_net, self.value_trunk):
            for m in seq:
                if isinstance(m, nn.Linear):
                    nn.init.orthogonal_(m.weight, gain=math.sqrt(2))
                    nn.init.zeros_(m.bias)
        for m, gain in ((self.action_net, 0.01), (self.value_net, 1.0)):
            nn.init.orthogonal_(m.weight, gain=gain)
            nn.init.zeros_(m.bias)

    @staticmethod
    def _split(batch):
        obs = batch[Columns.OBS]
        return obs["observations"], obs["action_mask"]

    def logits(self, observations, action_mask):
        """The masked logits: -1e9 wherever the mask is 0."""
        logits = self.action_net(self.policy_net(observations))
        return torch.where(action_mask > 0.5, logits, torch.full_like(logits, MASKED_LOGIT))

    def _forward(self, batch, **kwargs):
        # the one forward pass of acting (exploration, inference) and of the PPO loss: masked in every phase
        return {Columns.ACTION_DIST_INPUTS: self.logits(*self._split(batch))}

    def compute_values(self, batch, embeddings=None):
        observations, _ = self._split(batch)
        return self.value_net(self.value_trunk(observations)).squeeze(-1)


def mlp_of(module: MaskedMLPModule) -> MLP:
    """The policy of ``module`` as kahve's MLP (the action head's logits, unmasked: a bot masks outside)."""
    return MLP.from_sb3(sb3_view(module))


def sb3_view(module: MaskedMLPModule):
    """``module`` seen with the attributes of an SB3 model that :meth:`MLP.from_sb3` and behaviour cloning
    (:mod:`.pretrain`) use."""
    return SimpleNamespace(policy=_ClonePolicy(module))


class _ClonePolicy(nn.Module):
    """The methods of SB3's MaskableActorCriticPolicy that behaviour cloning calls, over a :class:`MaskedMLPModule`."""

    def __init__(self, module: MaskedMLPModule):
        super().__init__()
        self.module = module
        self.mlp_extractor = SimpleNamespace(policy_net=module.policy_net)
        self.action_net = module.action_net

    @property
    def device(self):
        return next(self.module.parameters()).device

    def set_training_mode(self, mode: bool) -> None:
        self.module.train(mode)

    def _dist(self, obs, action_masks):
        masks = torch.as_tensor(np.asarray(action_masks) if not torch.is_tensor(action_masks) else action_masks,
                                device=obs.device)
        return torch.distributions.Categorical(logits=self.module.logits(obs, masks.float()))

    def evaluate_actions(self, obs, actions, action_masks=None):
        dist = self._dist(obs, action_masks)
        values = self.module.value_net(self.module.value_trunk(obs))
        return values, dist.log_prob(actions), dist.entropy()

    def get_distribution(self, obs, action_masks=None):
        return SimpleNamespace(distribution=self._dist(obs, action_masks))


# ----- the learner --------------------------------------------------------------------------------------------------
#: the learner metric of the policy's change in an update (SB3's ``train/approx_kl``)
APPROX_KL = "approx_kl"


class MaskedPPOLearner(PPOTorchLearner):
    """RLlib's torch PPO learner, which also logs ``approx_kl``: SB3's estimate of the KL divergence between the
    policy that collected the batch and the one being trained, ``mean((r - 1) - log r)`` over a minibatch's samples
    (``r``: the probability ratio of each taken action), averaged over every minibatch of the update. RLlib 2.60's
    own ``mean_kl_loss`` is computed only where the KL term is part of the loss (``use_kl_loss``); kahve's PPO, like
    SB3's, has no KL term, and RLlib then reports a constant 0 there. The loss is RLlib's, unchanged."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        loss = super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
        with torch.no_grad():
            module = self.module[module_id].unwrapped()
            dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
            log_ratio = dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP]
            kl = torch.expm1(log_ratio) - log_ratio                 # (r - 1) - log r >= 0, per sample
            if Columns.LOSS_MASK in batch:                           # PPO's artificial last steps are no data
                kl = kl[batch[Columns.LOSS_MASK]]
            approx_kl = kl.mean()
        # reduce "mean" with no window: the mean over every minibatch of this update (SB3 averages it so)
        self.metrics.log_value((module_id, APPROX_KL), approx_kl, reduce="mean")
        return loss


# ----- the algorithm ------------------------------------------------------------------------------------------------
def train_batch_size(cfg: dict) -> int:
    return cfg["rllib"]["train_batch_size"] or cfg["ppo"]["n_steps"] * cfg["n_envs"]


def module_spec(cfg: dict, pool=None):
    """The MultiRLModuleSpec of a run: the learner and the snapshot slots, all :class:`MaskedMLPModule`."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    obs_space, act_space = spaces(game)
    model_config = {"hidden": list(cfg["network"]["hidden"]), "activation": cfg["network"]["activation"]}
    return MultiRLModuleSpec(rl_module_specs={
        m: RLModuleSpec(module_class=MaskedMLPModule, observation_space=obs_space, action_space=act_space,
                        model_config=model_config) for m in [LEARNER, *snapshot_modules(cfg, pool)]})


def local_module(cfg: dict) -> MaskedMLPModule:
    """A learner module built in this process (for export, snapshots and behaviour cloning)."""
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    obs_space, act_space = spaces(game)
    return MaskedMLPModule(observation_space=obs_space, action_space=act_space, inference_only=False,
                           model_config={"hidden": list(cfg["network"]["hidden"]),
                                         "activation": cfg["network"]["activation"]})


def algorithm_config(cfg: dict, pool, session: int = 0):
    """RLlib's PPOConfig for a kahve config; ``session`` (the step count a session starts at) keys the seeds."""
    from ray.rllib.algorithms.ppo import PPOConfig
    rc, ppo = cfg["rllib"], cfg["ppo"]
    modules = [LEARNER, *snapshot_modules(cfg, pool)]
    batch = train_batch_size(cfg)
    learners = max(1, rc["num_learners"])
    env_config = {"game": cfg["game"], "settings": dict(cfg["settings"]), "pool": pool_listing(pool),
                  "modules": modules, "seed": f"{cfg['seed']}/{session}"}
    config = (
        PPOConfig()
        .environment(env=SeatsEnv, env_config=env_config, disable_env_checking=True)
        .framework("torch")
        .env_runners(num_env_runners=rc["num_env_runners"], num_envs_per_env_runner=rc["num_envs_per_env_runner"],
                     num_cpus_per_env_runner=rc["num_cpus_per_env_runner"], rollout_fragment_length="auto",
                     # episodes stay lists: RLlib 2.60's MultiAgentEnvRunner numpy-izes every finished episode of a
                     # sample() call again after each env step (quadratic; half the sampling time here)
                     episodes_to_numpy=False)
        .learners(num_learners=rc["num_learners"], num_gpus_per_learner=rc["num_gpus_per_learner"],
                  learner_class=MaskedPPOLearner)
        .training(lr=ppo["learning_rate"], gamma=ppo["gamma"], lambda_=ppo["gae_lambda"], clip_param=ppo["clip_range"],
                  vf_clip_param=float("inf"), entropy_coeff=ppo["ent_coef"], vf_loss_coeff=ppo["vf_coef"],
                  grad_clip=ppo["max_grad_norm"] or None, grad_clip_by="global_norm", use_kl_loss=False, kl_coeff=0.0,
                  train_batch_size_per_learner=-(-batch // learners),
                  minibatch_size=min(ppo["batch_size"], -(-batch // learners)),
                  num_epochs=ppo["n_epochs"])
        .multi_agent(policies=set(modules), policy_mapping_fn=policy_mapping_fn, policies_to_train=[LEARNER])
        .rl_module(rl_module_spec=module_spec(cfg, pool))
        # a failed env runner fails the run (an IllegalActionError must not be retried away)
        .fault_tolerance(restart_failed_env_runners=False)
        .debugging(seed=(cfg["seed"] * 1_000_003 + session) % 2**31, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )
    return config


def quiet_ray() -> None:
    """RLlib's notes about its own API (deprecations, "you are running PPO on the new API stack") are not the
    user's business: errors only, in this process (the actors' logs stay in Ray's session folder)."""
    for name in ("ray", "ray.rllib", "ray.tune"):
        logging.getLogger(name).setLevel(logging.ERROR)


quiet_ray()          # from the import on: building a module logs a deprecation of RLlib's own


def auth_advice(mode: str | None) -> str:
    """What a failed connection to a cluster (or env runners that died on one) may mean: Ray's token
    authentication, on in some of the cluster's processes and off in others (docs/scale-out.md, "A cluster")."""
    here = f"RAY_AUTH_MODE={mode}" if mode else "RAY_AUTH_MODE unset (Ray then guesses)"
    return (f"every machine of a Ray cluster and the process that runs kahve train need the same RAY_AUTH_MODE "
            f"(token or disabled) and, with token, the cluster's token (RAY_AUTH_TOKEN, or ~/.ray/auth_token); this "
            f"process ran with {here} (docs/scale-out.md, 'A cluster')")


def _reason(err: BaseException) -> str:
    """The line of an error (or of its causes) that says why: Ray's ConnectionError hides a refused token in its
    cause."""
    chain = []
    while err is not None and len(chain) < 5:
        chain.append(err)
        err = err.__cause__ or err.__context__
    lines = [line.strip() for e in chain for line in str(e).splitlines() if line.strip()]
    refused = [line for line in lines if "InvalidAuthToken" in line or "no authentication token" in line]
    line = (refused or lines or ["no reason given"])[0]
    return line.split(". Note:")[0].split(". Ensure that")[0].removeprefix("ray.exceptions.")


def init_ray(cfg: dict) -> bool:
    """Connect to the cluster of ``rllib.address``, or start a local Ray instance (no dashboard, no usage
    reports). Returns whether this call started or joined it (and so should shut it down)."""
    import ray
    quiet_ray()
    if ray.is_initialized():
        return False
    rc = cfg["rllib"]
    common = dict(include_dashboard=False, ignore_reinit_error=True, logging_level=logging.ERROR,
                  log_to_driver=False, configure_logging=True)
    if rc["address"]:
        mode = os.environ.get("RAY_AUTH_MODE")        # before ray.init: with address auto, Ray may set it
        try:
            ray.init(address=rc["address"], **common)
        except (ConnectionError, AuthenticationError) as err:
            raise ValueError(f"config key 'rllib.address': no connection to the Ray cluster at {rc['address']!r} "
                             f"({_reason(err)}); {auth_advice(mode)}") from None
    else:
        need = math.ceil(rc["num_env_runners"] * rc["num_cpus_per_env_runner"]) + rc["num_learners"]
        # address "local": a new instance of its own, even where this machine runs a cluster (`ray start`)
        ray.init(address="local", num_cpus=rc["num_cpus"] or max(1, need), **common)
    return True


# ----- the session -------------------------------------------------------------------------------------------------
def _to_tensors(obj):
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.array(obj))
    if isinstance(obj, dict):
        return {k: _to_tensors(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_tensors(v) for v in obj)
    return obj


def _to_numpy(obj):
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(v) for v in obj)
    return obj


def read_weights(ck) -> dict:
    """model.pt of an rllib checkpoint: ``{"learner": state dict, "optimizer": ..., "torch_rng": ...}``."""
    from ..files import load_tensors
    data = load_tensors(ck.weights)
    if not isinstance(data.get("learner"), dict):
        raise ValueError(f"{ck.weights}: not the weights of an rllib run (no learner module)")
    return data


def load_module(cfg: dict, state_dict: dict, source) -> MaskedMLPModule:
    module = local_module(cfg)
    try:
        module.load_state_dict({k: torch.as_tensor(v) for k, v in state_dict.items()}, strict=True)
    except (RuntimeError, TypeError, ValueError) as err:
        first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
        raise ValueError(f"{source}: the weights do not fit the network of config.yaml ({first})") from None
    return module


def model_from_checkpoint(cfg: dict, run, ck):
    """For ``kahve export`` of an unfinished run: the checkpoint's learner as an object :meth:`MLP.from_sb3`
    reads (it has no SB3 ``save``: ``--sb3`` is for runs of the sb3 backend)."""
    module = load_module(cfg, read_weights(ck)["learner"], ck.weights)
    view = sb3_view(module)

    def save(path):
        raise ValueError("--sb3 writes stable-baselines3's format, and this run was trained with backend rllib; "
                         "export the ONNX bot instead")
    view.save = save
    return view


#: ``train/<ours>`` in TensorBoard: the learner result ``<theirs>`` of RLlib 2.60's PPO (``approx_kl``:
#: :class:`MaskedPPOLearner`'s; RLlib's ``mean_kl_loss`` is a constant 0 without a KL term in the loss)
TRAIN_METRICS = (("policy_loss", "policy_loss"), ("value_loss", "vf_loss"), ("entropy", "entropy"),
                 ("approx_kl", APPROX_KL), ("explained_variance", "vf_explained_var"))


class RLlibSession(Session):
    """One session of a run with ``backend: rllib``: the schedule is :class:`~..session.Session`'s; RLlib's PPO
    iterations learn, and the step count is the learner decisions the envs counted, as the sb3 backend counts."""

    backend = "rllib"

    def __init__(self, cfg: dict, run, checkpoint=None, log=print):
        from ..session import set_random_states
        super().__init__(cfg, run, checkpoint, log)
        self.startup_seconds = 0.0
        self.counters = {"decisions": 0, "illegal": 0, "iterations": 0}
        self._steps = 0
        if checkpoint is not None:
            self._steps = self.state["steps"]
            saved = self.state.get("rllib_counters", {})
            self.counters.update({k: int(saved.get(k, 0)) for k in self.counters})
            set_random_states(self.state, checkpoint.state_file)
        self.start_steps = self._steps
        self.module = local_module(cfg)                   # the driver's copy of the learner
        weights = read_weights(checkpoint) if checkpoint is not None else None
        if weights is not None:
            self.module = load_module(cfg, weights["learner"], checkpoint.weights)
            rng = weights.get("torch_rng")
            if isinstance(rng, torch.Tensor) and rng.dtype == torch.uint8:
                torch.set_rng_state(rng)
        mode = os.environ.get("RAY_AUTH_MODE")
        self.own_ray = init_ray(cfg)
        try:
            self.algo = algorithm_config(cfg, self.pool, self._steps).build_algo()
            if weights is not None:
                self._restore_learner(weights, checkpoint)
            self._push_pool()
        except BaseException as err:
            self.close(False)
            if cfg["rllib"]["address"] and isinstance(err, RayActorError):
                # the cluster took the connection, then its actors could not answer this process: the usual cause
                # is a driver with token authentication on a cluster without (or the other way round)
                log(f"the env runners died on the Ray cluster at {cfg['rllib']['address']!r}: {auth_advice(mode)}; "
                    "or kahve, torch or Ray differ between its machines")
            raise
        from torch.utils.tensorboard import SummaryWriter
        self.writer = SummaryWriter(str(run.tb / "rllib"))
        self.last_result: dict = {}
        self._counted = 0                                # learner decisions the envs had counted so far

    # ----- weights between the driver, the learner group and the env runners --------------------------------
    def _pull(self) -> MaskedMLPModule:
        """The learner's current weights into the driver's module."""
        w = self.algo.learner_group.get_weights(module_ids=[LEARNER])[LEARNER]
        self.module.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in w.items()})
        return self.module

    def _push(self, modules: dict) -> None:
        """Module weights (``{module_id: state dict of numpy arrays}``) into the learner group and the env runners.
        Straight into each runner's modules: RLlib's ``sync_weights`` skips a runner whose weights carry the same
        sequence number as the learner's, and writing weights into the learner does not raise it."""
        self.algo.learner_group.set_weights(modules)
        self.algo.env_runner_group.foreach_env_runner(lambda er, modules=modules: _set_modules(er, modules))

    def _module_state(self, module: MaskedMLPModule) -> dict:
        return {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}

    def _push_pool(self) -> None:
        """The pool's snapshots into their modules, then the pool into every env."""
        snaps = [spec for spec, _ in self.pool.entries if isinstance(spec, MLP)]
        if snaps:
            weights = {}
            for k, mlp in enumerate(snaps):
                m = local_module(self.cfg)
                with torch.no_grad():
                    linears = [x for x in [*m.policy_net, m.action_net] if isinstance(x, nn.Linear)]
                    for layer, w, b in zip(linears, mlp.weights, mlp.biases):
                        layer.weight.copy_(torch.from_numpy(w))
                        layer.bias.copy_(torch.from_numpy(b))
                weights[f"snapshot_{k}"] = self._module_state(m)
            self._push(weights)
        listing = pool_listing(self.pool)
        self.algo.env_runner_group.foreach_env_runner(lambda er, listing=listing: _set_pools(er, listing))

    def _restore_learner(self, weights: dict, ck) -> None:
        state = {"rl_module": {LEARNER: self._module_state(self.module)}}
        if isinstance(weights.get("optimizer"), dict):
            state["optimizer"] = _to_numpy(weights["optimizer"])
        try:
            self.algo.learner_group.set_state({"learner": state})
        except (KeyError, RuntimeError, TypeError, ValueError) as err:
            first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
            raise ValueError(f"{ck.weights}: the optimizer state does not fit this run ({first})") from None
        modules = {LEARNER: state["rl_module"][LEARNER]}
        self.algo.env_runner_group.foreach_env_runner(lambda er, modules=modules: _set_modules(er, modules))

    # ----- the hooks of the schedule --------------------------------------------------------------------------
    def check_checkpoint(self, checkpoint, state: dict) -> None:
        if state.get("backend") != "rllib":
            raise ValueError(f"{checkpoint.state_file}: not a checkpoint of backend rllib")

    @property
    def steps(self) -> int:
        return self._steps

    def network(self) -> MLP:
        return mlp_of(self._pull())

    def cloning_target(self):
        return sb3_view(self.module)

    def after_cloning(self) -> None:
        self._push({LEARNER: self._module_state(self.module)})

    def pool_changed(self, weights_only: bool = False) -> None:
        self._push_pool()

    def record(self, key: str, value: float) -> None:
        self.writer.add_scalar(key, value, self._steps)

    def flush(self) -> None:
        self.writer.flush()

    def checkpoint_files(self, ck, envs_reachable: bool) -> dict:
        from ..session import random_states
        learner = self.algo.learner_group.get_state(components=["learner/rl_module/" + LEARNER,
                                                                "learner/optimizer"])["learner"]
        torch.save({"learner": _to_tensors(learner["rl_module"][LEARNER]),
                    "optimizer": _to_tensors(learner.get("optimizer", {})),
                    "torch_rng": torch.get_rng_state()}, ck.weights)
        self.pool.save(ck.opponents)
        return {"steps": self._steps, "backend": "rllib", "rllib_counters": dict(self.counters), **random_states()}

    # ----- a session ---------------------------------------------------------------------------------------------
    def env_counters(self) -> dict:
        """Decisions and illegal actions, by module, summed over every env of every env runner (this session)."""
        parts = self.algo.env_runner_group.foreach_env_runner(_env_counters)
        total = {"decisions": {}, "illegal": {}, "episodes": 0, "learner_wins": 0, "learner_episodes": 0}
        for runner in parts:
            for c in runner:
                for key in ("decisions", "illegal"):
                    for m, n in c[key].items():
                        total[key][m] = total[key].get(m, 0) + n
                for key in ("episodes", "learner_wins", "learner_episodes"):
                    total[key] += c[key]
        return total

    def runner_weights_match(self) -> bool:
        """Whether every env runner plays with the learner's current policy and the pool's snapshots (checked at the
        end of a session; the answer is in summary.json)."""
        expected = {LEARNER: mlp_of(self._pull())}
        expected.update({f"snapshot_{k}": mlp for k, mlp in
                         enumerate(spec for spec, _ in self.pool.entries if isinstance(spec, MLP))})
        for runner in self.algo.env_runner_group.foreach_env_runner(lambda er, ids=list(expected): _policies(er, ids)):
            for mid, arrays in (runner or {}).items():
                want = expected[mid].to_arrays()
                if any(not np.allclose(arrays[k], want[k], atol=1e-6) for k in want if k != "activation"):
                    return False
        return True

    def _record(self, result: dict, steps: int) -> None:
        w = self.writer
        runners, learners = result.get("env_runners", {}), result.get("learners", {}).get(LEARNER, {})
        returns = runners.get("module_episode_returns_mean", {})
        if LEARNER in returns:
            w.add_scalar("rollout/ep_rew_mean", float(returns[LEARNER]), steps)
        if "episode_len_mean" in runners:
            w.add_scalar("rollout/ep_len_mean", float(runners["episode_len_mean"]), steps)
        for ours, theirs in TRAIN_METRICS:
            try:
                value = float(learners[theirs])
            except (KeyError, TypeError, ValueError):
                continue
            # a metric RLlib did not report this iteration (absent, or the NaN of a reduce over no values): nothing
            if math.isfinite(value):
                w.add_scalar(f"train/{ours}", value, steps)
        seconds = self.learn_seconds()
        if seconds > 0:
            w.add_scalar("charts/steps_per_second", (steps - self.start_steps) / seconds, steps)

    def learn(self, progress: bool) -> None:
        total = self.cfg["total_timesteps"]
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=total, initial=self._steps, unit="step", desc="rllib ppo")
        self.learn_start = time.perf_counter()
        try:
            while self._steps < total:
                result = self.algo.train()
                self.last_result = result
                # the learner's decisions as the envs counted them (RLlib's module-step metric counts episode
                # chunks, which overlap a little where an episode is cut between two iterations)
                counted = self.env_counters()["decisions"].get(LEARNER, 0)
                sampled, self._counted = counted - self._counted, counted
                self._steps += sampled
                self.counters["iterations"] += 1
                if bar is not None:
                    bar.update(sampled)
                self._record(result, self._steps)
                self.on_step(self._steps)
        finally:
            if bar is not None:
                bar.close()

    def ending(self, interrupted: bool) -> dict:
        counters = self.env_counters()
        counters["weights_match"] = self.runner_weights_match()
        nodes = set(self.algo.env_runner_group.foreach_env_runner(_node_id, local_env_runner=False))
        self.counters["decisions"] += sum(counters["decisions"].values())
        self.counters["illegal"] += sum(counters["illegal"].values())
        self.writer.add_scalar("rllib/illegal_actions", self.counters["illegal"], self._steps)
        rc = self.cfg["rllib"]
        return {"backend": "rllib",
                "rllib": {"startup_seconds": self.startup_seconds,  # Ray, the env runners and the learner
                          "num_env_runners": rc["num_env_runners"],
                          "num_envs_per_env_runner": rc["num_envs_per_env_runner"],
                          "num_learners": rc["num_learners"], "num_gpus_per_learner": rc["num_gpus_per_learner"],
                          "iterations": self.counters["iterations"],
                          # every decision of a network module went through the env's legality check
                          "decisions_checked": self.counters["decisions"], "illegal_actions": self.counters["illegal"],
                          "decisions_this_session": counters["decisions"], "episodes_this_session":
                          counters["episodes"],
                          # the runners' learner and snapshot modules hold the driver's weights at the end
                          "env_runner_weights_match": counters["weights_match"],
                          # the Ray nodes (machines) the env runners ran on; 0 without env runners
                          "env_runner_nodes": len(nodes)}}

    def close(self, interrupted: bool) -> None:
        algo = getattr(self, "algo", None)
        if algo is not None:
            try:
                algo.stop()
            except Exception:  # a stop after Ctrl-C may find actors gone
                pass
            self.algo = None
        writer = getattr(self, "writer", None)
        if writer is not None:
            writer.close()
            self.writer = None
        if getattr(self, "own_ray", False):
            import ray
            ray.shutdown()
            self.own_ray = False


def _envs_of(er) -> list:
    env = getattr(er, "env", None)
    if env is None:
        return []
    return [e.unwrapped for e in getattr(env, "envs", [env])]


def _policies(er, module_ids) -> dict | None:
    """The policy networks of an env runner's modules, as MLP arrays (None for a runner without modules)."""
    module = getattr(er, "module", None)
    if module is None:
        return None
    return {mid: mlp_of(module[mid]).to_arrays() for mid in module_ids if mid in module}


def _set_modules(er, modules: dict) -> None:
    module = getattr(er, "module", None)
    if module is not None:
        for mid, weights in modules.items():
            module[mid].set_state(weights)


def _set_pools(er, listing) -> None:
    for env in _envs_of(er):
        env.set_pool(listing)
    # an env runner makes its envs again after a failure: they start from the config's pool, so keep it current
    if hasattr(er, "config") and isinstance(er.config.env_config, dict):
        try:
            er.config.env_config["pool"] = listing
        except TypeError:
            pass


def _node_id(er) -> str:
    import ray
    return ray.get_runtime_context().get_node_id()


def _env_counters(er) -> list[dict]:
    return [env.get_counters() for env in _envs_of(er)]


def train(cfg: dict, resume_dir: str | None = None, progress: bool = True, log=print) -> dict:
    """Run (or resume) a training run with backend rllib; the run folder and its rules are every backend's
    (:func:`..session.opened_run`)."""
    from ...threads import limit_threads
    quiet_ray()
    n = limit_threads(cfg["torch_threads"])
    torch.set_num_threads(n)
    with opened_run(cfg, resume_dir, log) as (run, checkpoint):
        rc = cfg["rllib"]
        where = f"the Ray cluster at {rc['address']}" if rc["address"] else "a local Ray instance"
        log(f"training ppo (RLlib) on {cfg['game']} {cfg['settings']} for {cfg['total_timesteps']:,} steps with "
            f"{rc['num_env_runners']} env runners x {rc['num_envs_per_env_runner']} envs on {where}; run folder "
            f"{run}; TensorBoard: tensorboard --logdir {run.tb}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            t = time.perf_counter()
            session = RLlibSession(cfg, run, checkpoint, log=log)
            session.startup_seconds = time.perf_counter() - t
            return session.run(progress=progress)
