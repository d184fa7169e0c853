"""The benchmarks behind ``kahve bench``: throughput, reported as ratios to references measured in the same run.

For each game: (a) the engine alone (random moves/s, deals/s), (b) the PettingZoo AEC loop
(``agent_iter``/``last``/``step`` with masks; for a game whose observation is appraised, also with the plain
observation, ``observation="plain"``), (c) the single-agent training view (``LearnerEnv``: observation
and mask per step, random opponents), (d) MaskablePPO training steps/s and the share of wall time spent in the
envs (``--ppo``), in one run for each game: the shipped config, the same collected in the learner's process, and
in worker processes (:data:`PPO_RUNS`), (e) the ``shared`` layout's stepping in one worker process and in one per
core (``--scaling``: how it scales with cores). References in the same run: a do-nothing AEC env through the same
wrapper and loop (the ceiling of any AEC loop here; also in each game's shape, its seats and decisions an episode,
since a short episode pays a reset and a dead step per seat more often), and, with the ``bench`` extra installed,
PettingZoo's ``texas_holdem`` and ``leduc_holdem`` AEC loops and OpenSpiel's ``crazy_eights`` (with and without
observation tensors). Every figure is the median of ``--repeats`` runs of ``--seconds`` each
(for PPO: of one rollout and update each), with its spread.
"""

from __future__ import annotations

import platform
import random
import statistics
import time

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from kahve import envs


class NullEnv(AECEnv):
    """``players`` agents (two by default) that take turns, 52 actions, a 227-float observation, and nothing else:
    the AEC loop's ceiling. Every ``episode_length`` decisions the episode ends, and each agent then takes its
    dead step, as in a game."""

    metadata = {"render_modes": [], "name": "null_v0", "is_parallelizable": False}

    def __init__(self, episode_length: int = 48, players: int = 2):
        super().__init__()
        self.possible_agents = [f"player_{i}" for i in range(players)]
        self._next = {a: self.possible_agents[(i + 1) % players] for i, a in enumerate(self.possible_agents)}
        self._obs_space = spaces.Dict({"observation": spaces.Box(0, 1, (227,), np.float32),
                                       "action_mask": spaces.Box(0, 1, (52,), np.int8)})
        self._act_space = spaces.Discrete(52)
        self.episode_length = episode_length

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = "player_0"
        self.t = 0

    def observe(self, agent):
        mask = np.zeros(52, np.int8)
        mask[:4] = 1
        return {"observation": np.zeros(227, np.float32), "action_mask": mask}

    def step(self, action):
        if self.terminations[self.agent_selection]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[self.agent_selection] = 0
        self.t += 1
        if self.t >= self.episode_length:
            self.terminations = {a: True for a in self.agents}
        self.agent_selection = self._next[self.agent_selection]
        self._accumulate_rewards()


def _timed(fn, seconds: float, repeats: int) -> dict:
    """Run ``fn(deadline) -> (steps, episodes)`` ``repeats`` times; the median rate and its spread."""
    rates, ep_rates = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        steps, episodes = fn(start + seconds)
        elapsed = time.perf_counter() - start
        rates.append(steps / elapsed)
        ep_rates.append(episodes / elapsed)
    return {"per_s": statistics.median(rates), "min": min(rates), "max": max(rates),
            "episodes_per_s": statistics.median(ep_rates)}


def engine_loop(game, seed: int = 0):
    def run(deadline):
        rng = random.Random(seed)
        rnd = rng.random
        steps = episodes = 0
        while time.perf_counter() < deadline:
            state = game.new_state(rng)            # one stream of deals: no seeding per deal
            while state.current_player is not None:
                legal = state.legal_actions()
                state.apply(legal[int(rnd() * len(legal))])  # cheaper than randrange
                steps += 1
            episodes += 1
        return steps, episodes
    return run


def aec_loop(env, seed: int = 0):
    def run(deadline):
        rng = random.Random(seed)
        steps = episodes = 0
        env.reset(seed=seed)
        while time.perf_counter() < deadline:
            env.reset()
            for agent in env.agent_iter():
                obs, reward, term, trunc, info = env.last()
                if term or trunc:
                    env.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"])
                env.step(int(legal[rng.randrange(len(legal))]))
                steps += 1
            episodes += 1
        return steps, episodes
    return run


def learner_loop(game: str, settings: dict, seed: int = 0):
    """(c) the single-agent training view: observation and mask per learner step, random opponents."""
    from kahve.agents.training.view.learner_env import LearnerEnv

    def run(deadline):
        env = LearnerEnv(game, settings, seed=seed)
        rng = random.Random(seed)
        steps = episodes = 0
        while time.perf_counter() < deadline:
            obs, info = env.reset()
            done = False
            while not done:
                legal = np.flatnonzero(env.action_masks())
                obs, r, term, trunc, info = env.step(int(legal[rng.randrange(len(legal))]))
                done = term or trunc
                steps += 1
            episodes += 1
        return steps, episodes
    return run


def shared_scaling(game: str, settings: dict, seconds: float, repeats: int, n_envs: int = 64) -> dict:
    """(e) how the ``shared`` layout (``vec_env: shared``) scales with cores: steps/s of ``n_envs`` games against
    random opponents, stepped with random legal moves, in one worker process and in one per core; ``ratio`` is
    the second over the first (at most the number of cores)."""
    from kahve.agents.training.sb3.vec_env import SharedMemoryVecEnv, default_workers
    from kahve.agents.training.view.opponents import OpponentPool
    cores = default_workers()
    rates = {}
    for workers in sorted({1, cores}):
        venv = SharedMemoryVecEnv(game, settings, OpponentPool([("random", 1.0)]), list(range(n_envs)), workers)
        try:
            venv.reset()
            rng = np.random.default_rng(0)

            def run(deadline):
                steps = 0
                while time.perf_counter() < deadline:
                    masks = venv.action_masks()
                    venv.step((rng.random(masks.shape) * masks).argmax(1))   # a random legal move in each game
                    steps += n_envs
                return steps, 0
            rates[workers] = _timed(run, seconds, repeats)
        finally:
            venv.close()
    return {"cores": cores, "n_envs": n_envs, "workers": {str(w): r for w, r in rates.items()},
            "ratio": rates[cores]["per_s"] / rates[1]["per_s"]}


def synchronous(overrides_of):
    """``overrides_of`` with the rollouts collected in the learner's process (``async_rollouts=false``)."""
    return lambda game: overrides_of(game) + ["async_rollouts=false"]


#: (d)'s runs: key -> (what it is, overrides of configs/<game>/ppo.yaml as a function of the game)
PPO_RUNS = {
    "ppo_shipped_sync": ("the shipped config collected in the learner's process (async_rollouts false)",
                         synchronous(lambda game: [])),
    "ppo_shipped_shared": ("the shipped config in vec_env shared (one worker process per core), synchronous",
                           synchronous(lambda game: ["vec_env=shared"])),
    "ppo_shipped": ("the shipped config (its vec_env, n_envs, hyperparameters and async_rollouts)", lambda game: []),
}


def ppo_measure(game: str, repeats: int, overrides: list[str] = (), device: str = "cpu") -> dict:
    """(d) MaskablePPO as ``kahve train configs/<game>/ppo.yaml`` runs it (its settings, network, PPO
    hyperparameters and opponent pool), with ``overrides``: learner steps/s and the share of wall time spent in
    the envs (stepping, resetting and serving masks; with ``async_rollouts``, waiting for the collector's
    rollout), each timed over whole cycles of one rollout and one update, so that the share does not depend on
    where a time window falls."""
    import tempfile
    from pathlib import Path

    import torch
    from stable_baselines3.common.vec_env import VecEnvWrapper

    from kahve import configs
    from kahve.agents.training import config as config_mod
    from kahve.agents.threads import limit_threads
    from kahve.agents.training.sb3.session import build_model, build_vec_env
    from kahve.agents.training.session import pool_from_config
    torch.set_num_threads(limit_threads(1))       # and numpy's OpenBLAS, as kahve train does

    class Timed(VecEnvWrapper):
        env_seconds = 0.0

        def reset(self):
            t = time.perf_counter()
            out = self.venv.reset()
            Timed.env_seconds += time.perf_counter() - t
            return out

        def step_async(self, actions):
            self._t = time.perf_counter()
            self.venv.step_async(actions)

        def step_wait(self):
            out = self.venv.step_wait()
            Timed.env_seconds += time.perf_counter() - self._t
            return out

        def env_method(self, method_name, *args, indices=None, **kwargs):
            t = time.perf_counter()
            out = self.venv.env_method(method_name, *args, indices=indices, **kwargs)
            Timed.env_seconds += time.perf_counter() - t
            return out

    cfg = config_mod.load(configs.find(f"{game}/ppo"), list(overrides) + [f"device={device}"])
    env = Timed(build_vec_env(cfg, pool_from_config(cfg)))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            model = build_model(cfg, env, Path(tmp))
            cycle = cfg["ppo"]["n_steps"] * cfg["n_envs"]
            model.learn(cycle)                                     # warm-up: process start, first update
            rates, shares, busy = [], [], []
            collector = env.unwrapped
            for _ in range(repeats):
                Timed.env_seconds = 0.0
                waited, collecting = (getattr(collector, k, 0.0) for k in ("waited_seconds", "collect_seconds"))
                start_steps, start = model.num_timesteps, time.perf_counter()
                model.learn(cycle, reset_num_timesteps=False)
                elapsed = time.perf_counter() - start
                waited = getattr(collector, "waited_seconds", 0.0) - waited
                rates.append((model.num_timesteps - start_steps) / elapsed)
                shares.append((Timed.env_seconds + waited) / elapsed)
                busy.append((getattr(collector, "collect_seconds", 0.0) - collecting) / elapsed)
    finally:
        env.close()
    return {"per_s": statistics.median(rates), "min": min(rates), "max": max(rates),
            "env_share": statistics.median(shares), "env_share_min": min(shares), "env_share_max": max(shares),
            # async_rollouts: the collector process's time collecting, per learner wall second (0 otherwise)
            "collector_busy": statistics.median(busy),
            "config": {"vec_env": cfg["vec_env"], "n_envs": cfg["n_envs"], "env_workers": cfg["env_workers"],
                       "async_rollouts": cfg["async_rollouts"],
                       "network": cfg["network"]["hidden"],
                       **{k: cfg["ppo"][k] for k in ("n_steps", "batch_size", "n_epochs")}}}


# ----- peers (the "bench" extra) --------------------------------------------------------------------------
def peer_loops() -> dict:
    """Reference loops from other libraries, when installed: name -> run(deadline)."""
    peers = {}
    try:
        from pettingzoo.classic import leduc_holdem_v4, texas_holdem_v4
        peers["pettingzoo texas_holdem (AEC)"] = aec_loop(texas_holdem_v4.env())
        peers["pettingzoo leduc_holdem (AEC)"] = aec_loop(leduc_holdem_v4.env())
    except Exception as err:  # rlcard/pygame missing: the extra is not installed
        peers["pettingzoo classic"] = f"not installed ({type(err).__name__}: {err}); pip install -e '.[bench]'"
    try:
        import pyspiel
        game = pyspiel.load_game("crazy_eights")
        peers["open_spiel crazy_eights"] = spiel_loop(game, tensors=False)
        peers["open_spiel crazy_eights + observation tensors"] = spiel_loop(game, tensors=True)
    except ImportError as err:
        peers["open_spiel"] = f"not installed ({err}); pip install -e '.[bench]'"
    return peers


def spiel_loop(game, tensors: bool, seed: int = 0):
    def run(deadline):
        rng = random.Random(seed)
        steps = episodes = 0
        while time.perf_counter() < deadline:
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes, probs = zip(*state.chance_outcomes())
                    state.apply_action(rng.choices(outcomes, probs)[0])
                    continue
                if tensors:
                    state.observation_tensor(state.current_player())
                legal = state.legal_actions()
                state.apply_action(legal[rng.randrange(len(legal))])
                steps += 1
            episodes += 1
        return steps, episodes
    return run


def machine() -> dict:
    import os
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu": platform.processor()
            or platform.machine(), "cores": os.cpu_count(), "numpy": np.__version__}


def versions() -> dict:
    import importlib.metadata as md
    out = {}
    for pkg in ("kahve", "pettingzoo", "gymnasium", "numpy", "torch", "stable-baselines3", "sb3-contrib",
                "open_spiel", "rlcard"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _fmt(r: dict) -> str:
    return f"{r['per_s']:>12,.0f}/s  ({r['min']:,.0f}..{r['max']:,.0f})"


def _plain_variant(name: str, settings: dict) -> dict | None:
    """``settings`` with the plain observation, when they give another observation (a game with an appraisal
    and its default, appraised one); else None."""
    if envs.game_class(name)(**settings).settings.observation == "plain":
        return None
    return {**settings, "observation": "plain"}


def run_benchmarks(games: list[str], settings_of, seconds: float, repeats: int, ppo: bool = False,
                   peers: bool = True, scaling: bool = False, print=print) -> dict:
    """Every figure of ``kahve bench`` for ``games`` (``settings_of(game)`` gives each game's settings), printed
    as it is measured; returns the results as one JSON-able dict."""
    sec, rep = seconds, repeats
    results = {"machine": machine(), "versions": versions(), "seconds": sec, "repeats": rep,
               "references": {}, "games": {}}
    print(f"machine: {results['machine']}")
    print(f"versions: {results['versions']}")
    print(f"each figure: median of {rep} runs of {sec:g} s, (min..max); random play, one process")
    refs = {"do-nothing AEC env (same wrapper and loop)": aec_loop(wrappers.OrderEnforcingWrapper(NullEnv()))}
    if peers:
        refs.update(peer_loops())
    print("\nreferences (steps/s):")
    for name, fn in refs.items():
        if isinstance(fn, str):
            print(f"  {name:<48} {fn}")
            continue
        results["references"][name] = r = _timed(fn, sec, rep)
        print(f"  {name:<48} {_fmt(r)}")
    ceiling = results["references"]["do-nothing AEC env (same wrapper and loop)"]["per_s"]
    texas = results["references"].get("pettingzoo texas_holdem (AEC)", {}).get("per_s")
    shape_ceilings = {(2, NullEnv().episode_length): ceiling}       # (seats, decisions an episode) -> steps/s
    print("\ngames:")
    for name in games:
        settings = settings_of(name)
        deal = {**settings, "episode": "deal"}
        # the engine alone: every move is applied by the caller (no single-choice auto-play)
        bare = envs.game_class(name)(**{**deal, "skip_single_choice": False})
        row = {"settings": settings,
               "engine": _timed(engine_loop(bare), sec, rep),
               "aec": _timed(aec_loop(envs.make(name, **deal)), sec, rep),
               "learner_env": _timed(learner_loop(name, deal), sec, rep)}
        row["aec_vs_ceiling"] = row["aec"]["per_s"] / ceiling
        # the same do-nothing env in this game's shape: its seats, and its decisions an episode (a short episode
        # pays a reset and a dead step per seat more often, in the wrapper and loop alone)
        shape = (bare.num_players, max(1, round(row["aec"]["per_s"] / row["aec"]["episodes_per_s"])))
        if shape not in shape_ceilings:
            shape_ceilings[shape] = _timed(aec_loop(wrappers.OrderEnforcingWrapper(NullEnv(shape[1], shape[0]))),
                                           sec, rep)["per_s"]
        row["shape"] = {"players": shape[0], "decisions_per_episode": shape[1], "ceiling_per_s": shape_ceilings[shape]}
        row["aec_vs_shape_ceiling"] = row["aec"]["per_s"] / shape_ceilings[shape]
        if texas:
            row["aec_vs_texas_holdem"] = row["aec"]["per_s"] / texas
        plain = _plain_variant(name, deal)
        if plain is not None:                 # the same loop with the plain observation (no appraisal)
            row["aec_plain"] = _timed(aec_loop(envs.make(name, **plain)), sec, rep)
            row["aec_plain_vs_ceiling"] = row["aec_plain"]["per_s"] / ceiling
            row["aec_plain_vs_shape_ceiling"] = row["aec_plain"]["per_s"] / shape_ceilings[shape]
        print(f"  {name}: engine {_fmt(row['engine'])} moves, {row['engine']['episodes_per_s']:,.0f} deals/s")
        kind = f" ({envs.game_class(name)(**deal).settings.observation} observation)" if plain is not None else ""
        print(f"  {'':<{len(name)}}  AEC    {_fmt(row['aec'])} steps = {row['aec_vs_ceiling']:.2f}x ceiling"
              f" ({row['aec_vs_shape_ceiling']:.2f}x of its shape's)"
              + (f", {row['aec_vs_texas_holdem']:.2f}x texas_holdem" if texas else "") + kind)
        if plain is not None:
            print(f"  {'':<{len(name)}}  AEC    {_fmt(row['aec_plain'])} steps = {row['aec_plain_vs_ceiling']:.2f}x "
                  f"ceiling ({row['aec_plain_vs_shape_ceiling']:.2f}x of its shape's) (plain observation)")
        print(f"  {'':<{len(name)}}         its shape: {shape[0]} seats, {shape[1]} decisions an episode; the "
              f"do-nothing env of that shape {shape_ceilings[shape]:,.0f} steps/s")
        print(f"  {'':<{len(name)}}  single-agent view {_fmt(row['learner_env'])} learner steps")
        if scaling:
            row["shared_scaling"] = r = shared_scaling(name, deal, sec, rep)
            one, all_ = r["workers"]["1"], r["workers"][str(r["cores"])]
            print(f"  {'':<{len(name)}}  shared layout, {r['n_envs']} games: 1 worker {_fmt(one)}, {r['cores']} "
                  f"workers {_fmt(all_)} steps = {r['ratio']:.2f}x")
        if ppo:
            for key, (what, overrides) in PPO_RUNS.items():
                row[key] = r = ppo_measure(name, rep, overrides(name))
                c = r["config"]
                busy = f", collector busy {r['collector_busy']:.0%}" if c["async_rollouts"] else ""
                print(f"  {'':<{len(name)}}  MaskablePPO, {what}: {_fmt(r)} steps, env share of wall time "
                      f"{r['env_share']:.0%}{busy} [{c['vec_env']}{' async' if c['async_rollouts'] else ''}, "
                      f"{c['n_envs']} envs, n_steps {c['n_steps']}, batch {c['batch_size']}, {c['n_epochs']} epochs]")
        results["games"][name] = row
    if "pishti" in results["games"]:
        p = results["games"]["pishti"]["engine"]["per_s"]
        print("\nper-move engine speed relative to Pişti (the bar: within 3x, i.e. >= 0.33):")
        for name, row in results["games"].items():
            row["engine_vs_pishti"] = row["engine"]["per_s"] / p
            print(f"  {name:<12} {row['engine_vs_pishti']:.2f}")
        print(f"Pişti engine: {p / 1e6:.2f}x of the 1M moves/s quoted for a public pure-Python engine "
              "(not run here; a reference, not a ratio)")
    return results
