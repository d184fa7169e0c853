"""``kahve bench``: random-play throughput, reported as ratios to references measured in the same run.

For each game: (a) the engine alone (moves/s, deals/s), (b) the PettingZoo AEC loop
(``agent_iter``/``last``/``step`` with masks). The reference is a do-nothing AEC env driven through the
same PettingZoo wrapper and loop: the ceiling of any AEC loop on this machine (CLARIFICATIONS, speed targets).
Every figure is the median of ``--repeats`` runs of ``--seconds`` each, with the spread (min..max).
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import time

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from kahve import envs

from .common import parse_settings


def add_arguments(parser) -> None:
    parser.add_argument("games", nargs="*", help="games to measure (default: all): " + ", ".join(envs.GAMES))
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one timed run (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure (default 3)")
    parser.add_argument("--settings", nargs="*", default=[], metavar="KEY=VALUE",
                        help="settings applied to every game measured (e.g. players=2)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")


class NullEnv(AECEnv):
    """Two agents, 52 actions, a 227-float observation, and nothing else: the AEC loop's ceiling."""

    metadata = {"render_modes": [], "name": "null_v0", "is_parallelizable": False}

    def __init__(self, episode_length: int = 48):
        super().__init__()
        self.possible_agents = ["player_0", "player_1"]
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
        self.agent_selection = "player_1" if self.agent_selection == "player_0" else "player_0"
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
        steps = episodes = 0
        while time.perf_counter() < deadline:
            state = game.new_state(rng.getrandbits(64))
            while state.current_player is not None:
                legal = state.legal_actions()
                state.apply(legal[rng.randrange(len(legal))])
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


def machine() -> dict:
    import os
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu": platform.processor()
            or platform.machine(), "cores": os.cpu_count(), "numpy": np.__version__}


def run(args) -> int:
    games = args.games or list(envs.GAMES)
    results = {"machine": machine(), "seconds": args.seconds, "repeats": args.repeats, "games": {}}
    ceiling = _timed(aec_loop(wrappers.OrderEnforcingWrapper(NullEnv())), args.seconds, args.repeats)
    results["null_aec"] = ceiling
    print(f"machine: {results['machine']}")
    print(f"reference: do-nothing AEC env through the same wrapper and loop: {ceiling['per_s']:,.0f} steps/s")
    print(f"{'game':<12} {'engine moves/s':>16} {'deals/s':>9} {'AEC steps/s':>14} {'AEC/ceiling':>12}")
    for name in games:
        settings = parse_settings(name, args.settings)
        game = envs.game_class(name)(**{**settings, "episode": "deal"})
        eng = _timed(engine_loop(game), args.seconds, args.repeats)
        aec = _timed(aec_loop(envs.make(name, **{**settings, "episode": "deal"})), args.seconds, args.repeats)
        results["games"][name] = {"settings": settings, "engine": eng, "aec": aec}
        print(f"{name:<12} {eng['per_s']:>16,.0f} {eng['episodes_per_s']:>9,.0f} {aec['per_s']:>14,.0f} "
              f"{aec['per_s'] / ceiling['per_s']:>11.2f}x")
    print(f"(median of {args.repeats} runs of {args.seconds:g}s each; spreads in the JSON)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0
