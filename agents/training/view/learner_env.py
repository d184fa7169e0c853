"""A single-agent Gymnasium view of any game, for stable-baselines3.

The learner owns one side of the table (in partnerships both seats of its side); the opponents act inside
``step()``, so a trajectory holds only the learner's own observations, actions and rewards (no mixing of
viewpoints, a known self-play mistake). The side rotates from episode to episode, so the learner plays every seat. The reward
is the learner's own, per the game's ``reward`` setting. ``action_masks()`` is a method of the env (the mask of
the observation last returned), so sb3-contrib's masking works through ``SubprocVecEnv`` too. The mask is not
repeated in ``info``: SB3's ``DummyVecEnv`` deep-copies every info dict on every step.

Opponents come from an :class:`~.opponents.OpponentPool`: each episode draws one policy per opponent side; the
env builds its own policies (seeded from its own stream), so its games never depend on other envs.

A list of settings is a list of tables (the config's ``tables``): episode ``e`` is dealt at table ``e mod T``, and
the learner's side turns once every ``T`` episodes, so that it plays every side of every table. The tables share
the observation and action sizes (the config checks it), so one network learns them all.

``reset()`` and ``step()`` are each one generator (:meth:`LearnerEnv.reset_steps`,
:meth:`LearnerEnv.step_steps`) driven to its end: it yields a network opponent whenever one is to move, and
takes that opponent's action back. Here the answer is the opponent's own ``act``;
:class:`~.game_batch.GameBatch` drives the same generators of many envs at once and answers all games waiting
on one network with one forward pass, so every vector-env layout plays exactly the games of these single envs.
"""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np

from kahve import envs

from .opponents import OpponentPool, batch_group
from ...policies.base import decide


class LearnerEnv(gym.Env):
    metadata = {"render_modes": ["ansi"]}

    def __init__(self, game: str, settings: dict | list[dict] | None = None, pool: OpponentPool | None = None,
                 seed: int | None = None, render_mode: str | None = None):
        tables = settings if isinstance(settings, list) else [settings or {}]
        self.games = [envs.game_class(game)(**table) for table in tables]
        self.game = g = self.games[0]         # the table of the episode under way
        self.observation_space = gym.spaces.Box(g.obs_low, g.obs_high, (g.observation_size,), np.float32)
        self.action_space = gym.spaces.Discrete(g.num_actions)
        self.pool = pool or OpponentPool([("random", 1.0)])
        self.render_mode = render_mode
        self._rng = random.Random(seed)
        self._episodes = 0
        self.state = None
        self._mask = None
        self.learner_side = 0
        self._opponents: list = []
        self._entries: list = []           # per side: the pool entry its opponent was drawn from (None: learner)
        self._batched: list[bool] = []     # per side: its opponent is a network, asked through the generator
        self._policies = self._no_policies()   # per table: this env's opponent policies, by pool entry (built on
        #                                        first draw: a policy is built for its table's game)

    # ----- opponents ---------------------------------------------------------------------------------
    def _no_policies(self) -> list[dict]:
        return [{} for _ in self.games]

    def set_pool(self, pool: OpponentPool) -> None:
        """Replace the opponent pool (e.g. when self-play adds a snapshot); applies from the next episode."""
        self.pool = pool
        self._policies = self._no_policies()

    def set_pool_weights(self, weights: list[float]) -> None:
        """New draw weights for the same opponents (the league's reweighting); the policies built so far stay."""
        self.pool = self.pool.with_weights(weights)

    def get_pool(self) -> OpponentPool:
        return self.pool

    def get_rng_state(self) -> dict:
        """JSON-able random state (for checkpoints)."""
        v, internal, g = self._rng.getstate()
        return {"episodes": self._episodes, "rng": [v, list(internal), g]}

    def set_rng_state(self, state: dict) -> None:
        v, internal, g = state["rng"]
        self._rng.setstate((v, tuple(internal), g))
        self._episodes = state["episodes"]

    def _advance(self):
        """Let the opponents play until the learner is to move or the episode is over; return the learner's
        reward collected meanwhile. A generator: a network opponent to move is yielded, and its action is what
        the driver sends back."""
        st, g = self.state, self.game
        reward = 0.0
        mine = self._my_seat
        sides, side, opponents, batched = g.sides, self.learner_side, self._opponents, self._batched
        while st.current_player is not None and sides[st.current_player] != side:
            other = sides[st.current_player]
            if batched[other]:
                st.apply((yield opponents[other]))
            else:
                st.apply(decide(opponents[other], st))
            reward += st.rewards[mine]
            if st.out[mine]:
                break
        return reward

    @property
    def _my_seat(self) -> int:
        """The learner's seat to observe: the one to move if it is the learner's, else its first seat."""
        st, g = self.state, self.game
        if st is not None and st.current_player is not None and g.sides[st.current_player] == self.learner_side:
            return st.current_player
        return g.sides.index(self.learner_side)

    # ----- gymnasium API ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None):
        return self._drive(self.reset_steps(seed, options))

    def step(self, action):
        return self._drive(self.step_steps(action))

    def _drive(self, steps):
        """Run a :meth:`reset_steps`/:meth:`step_steps` generator to its end, each network opponent it yields
        deciding with its own ``act``."""
        try:
            policy = next(steps)
            while True:
                policy = steps.send(decide(policy, self.state))
        except StopIteration as stop:
            return stop.value

    def reset_steps(self, seed: int | None = None, options: dict | None = None):
        """:meth:`reset` as a generator (see :meth:`_advance`); returns ``(obs, info)``."""
        super().reset(seed=seed)
        if seed is not None:
            self._rng = random.Random(seed)
        deck = (options or {}).get("deck")
        while True:
            table, turn = self._episodes % len(self.games), self._episodes // len(self.games)
            self.game = g = self.games[table]
            self.learner_side = turn % g.num_sides
            self._episodes += 1
            self._entries, self._opponents, self._batched = entries, opponents, batched = [], [], []
            built, pool, rng = self._policies[table], self.pool, self._rng
            for side in range(g.num_sides):     # per side: draw an entry, then build its policy (in this order)
                if side == self.learner_side:
                    entries.append(None)
                    opponents.append(None)
                    batched.append(False)
                    continue
                k = pool.draw_index(rng)
                p = pool.policy(k, rng, g, built)
                entries.append(k)
                opponents.append(p)
                batched.append(batch_group(p) is not None)
                if hasattr(p, "reset"):
                    p.reset()
            self.state = g.new_state(self._rng, deck)      # seeds the deal from this env's stream
            yield from self._advance()
            # an episode in which the learner never has a real decision (every move of its forced, e.g. a
            # Pishe Pasha deal without a GIVE or PENDING for it) teaches nothing and cannot be stepped: next one
            if self.state.current_player is not None or deck is not None:
                break
        obs = self.state.observation(self._my_seat)
        self._mask = self._legal_mask()
        return obs, {}

    def step_steps(self, action):
        """:meth:`step` as a generator (see :meth:`_advance`); returns ``(obs, reward, terminated, truncated,
        info)``."""
        st = self.state
        seat = st.current_player
        st.apply(int(action))
        reward = st.rewards[seat]
        if not st.is_terminal and not st.out[seat]:
            reward += yield from self._advance()
        mine = self._my_seat
        terminated, truncated = (True, False) if st.out[mine] else (st.terminal, st.truncated)
        obs = st.observation(mine)
        self._mask = self._legal_mask()
        info = {}
        if terminated or truncated:
            info["winners"] = st.winners
            info["learner_side"] = self.learner_side
            info["won"] = bool(st.winners) and self.learner_side in {self.game.sides[w] for w in st.winners}
            info["opponent_entries"] = sorted({k for k in self._entries if k is not None})   # for the league
        return obs, float(reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The mask of the observation last returned (computed once per step: SB3 asks again)."""
        return self._mask

    def _legal_mask(self) -> np.ndarray:
        st = self.state
        if st.current_player is None or self.game.sides[st.current_player] != self.learner_side:
            mask = np.zeros(self.game.num_actions, dtype=bool)
            mask[0] = True                   # never used to act; SB3 needs one legal entry per row
            return mask
        return st.legal_mask()

    def render(self):
        return self.state.render(self._my_seat)
