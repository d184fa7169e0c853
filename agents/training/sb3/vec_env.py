"""kahve's own vector envs for stable-baselines3: many games per process, stepped as one batch.

SB3's ``DummyVecEnv`` over a few :class:`~.learner_env.LearnerEnv` pays per-step costs that dwarf a card game's
own work: one policy forward pass per vector step over few envs, ``env_method("action_masks")`` plus
``np.stack`` every step, rewards copied and every info dict deep-copied every step. The envs here keep the
single-env logic (:class:`~.learner_env.LearnerEnv`: opponent seating, rewards per the game's ``reward``
setting, episode handling, seeding from each env's own stream) and change only how N of them are driven:

- :class:`~.game_batch.GameBatch` steps N ``LearnerEnv`` s together, writing observations into one ``(N, obs)``
  array, masks into one ``(N, actions)`` array and rewards and dones into ``(N,)`` arrays; the games waiting
  on the same network opponent (a self-play snapshot, a bot file) are decided with one forward pass
  (:func:`~.opponents.decide_batch`); baselines (random, heuristic, searches) decide per game as in the
  single env. Episode infos (winners, the learner's side, won, the terminal observation) exist only for the games
  that ended.
- :class:`BatchedVecEnv` (``vec_env: batched``): one ``GameBatch`` in the learner's process.
- :class:`SharedMemoryVecEnv` (``vec_env: shared``): W worker processes with one ``GameBatch`` of K games
  each, every array in shared memory; a step sends each worker one byte and waits for one byte back (nothing is
  pickled per step), so the workers step their games on W cores at once.

Both are :class:`~stable_baselines3.common.vec_env.VecEnv` s with the same interface: what they hand out is a
copy (a buffer SB3 keeps is never overwritten by a later step); ``env_method("action_masks")`` (what
sb3-contrib's ``get_action_masks`` calls) and ``action_masks()`` return the ``(N, actions)`` mask array without
calling any env; any other ``env_method`` (``set_pool``, ``get_rng_state``, ``set_rng_state``, ...) reaches the
``LearnerEnv`` s, so self-play and checkpoints work as with SB3's vector envs. For the same seeds and actions
they give exactly the trajectories of N single ``LearnerEnv`` s (tests/agents/test_vec_env.py); a network
opponent's batched forward pass can differ from a one-row pass in the last bits of a float, so an exact tie
between two of its actions could in principle break the other way.
"""

from __future__ import annotations

import os
import pickle

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecMonitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from ..view.game_batch import ARRAYS, GameBatch, _worker, allocate, episode_info, split   # noqa: F401 (split: API)
from ..view.learner_env import LearnerEnv
from ..view.opponents import OpponentPool


def _spaces(game: str, settings: dict):
    """(observation space, action space, game, observation size) of the learner's view (:class:`LearnerEnv`); with
    a list of tables, the first's (they share the sizes)."""
    from kahve import envs
    g = envs.game_class(game)(**((settings[0] if isinstance(settings, list) else settings) or {}))
    size = g.observation_size
    return gym.spaces.Box(g.obs_low, g.obs_high, (size,), np.float32), gym.spaces.Discrete(g.num_actions), g, size


class _KahveVecEnv(VecEnv):
    """What the two layouts share: the arrays handed out (copies), infos only at episode ends, masks."""

    a: dict

    def _results(self):
        a = self.a
        dones = a["dones"].copy()
        infos = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            infos[i] = episode_info(a, i)
        return a["obs"].copy(), a["rewards"].copy(), dones, infos

    def action_masks(self) -> np.ndarray:
        """The ``(N, actions)`` legal masks of the observations last returned (a copy)."""
        return self.a["masks"].copy()

    def step_async(self, actions) -> None:
        self.a["actions"][:] = np.asarray(actions).reshape(self.num_envs)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
        """``action_masks`` is served from the mask array (``get_action_masks`` stacks what it gets: the
        ``(N, actions)`` array passes through as a copy); any other method runs on the envs of ``indices``."""
        if method_name == "action_masks" and not method_args and not method_kwargs:
            masks = self.action_masks()
            return masks if indices is None else masks[list(self._get_indices(indices))]
        return self._env_method(method_name, method_args, method_kwargs, indices)

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks" or hasattr(LearnerEnv, attr_name)

    def _take_seeds(self) -> tuple[list, list]:
        seeds, options = list(self._seeds), [dict(o) if o else {} for o in self._options]
        self._reset_seeds()
        self._reset_options()
        return seeds, options


class BatchedVecEnv(_KahveVecEnv):
    """N games in the learner's process (``vec_env: batched``); see the module's doc."""

    def __init__(self, game: str, settings: dict, pool: OpponentPool, seeds: list[int]):
        observation_space, action_space, g, size = _spaces(game, settings)
        super().__init__(len(seeds), observation_space, action_space)
        self.envs = [LearnerEnv(game, settings, pool, seed=s) for s in seeds]
        self.a = allocate(len(seeds), size, g.num_actions)
        self.batch = GameBatch(self.envs, self.a)

    def reset(self):
        self.batch.reset(*self._take_seeds())
        return self.a["obs"].copy()

    def step_wait(self):
        self.batch.step()
        return self._results()

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices=None) -> list:
        if attr_name == "render_mode":                   # asked by VecEnv.__init__, before the envs exist
            return [None for _ in self._get_indices(indices)]
        return [getattr(self.envs[i], attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        for i in self._get_indices(indices):
            setattr(self.envs[i], attr_name, value)

    def _env_method(self, method_name, method_args, method_kwargs, indices) -> list:
        return [getattr(self.envs[i], method_name)(*method_args, **method_kwargs) for i in self._get_indices(indices)]


# ----- W worker processes x K games, in shared memory ----------------------------------------------------------
class SharedMemoryVecEnv(_KahveVecEnv):
    """``workers`` processes x K games each (``vec_env: shared``), results in shared memory; see the module's
    doc. ``processes`` and ``closed`` are what the trainer needs to end the workers after Ctrl-C."""

    def __init__(self, game: str, settings: dict, pool: OpponentPool, seeds: list[int], workers: int,
                 start_method: str = "forkserver"):
        import multiprocessing as mp
        observation_space, action_space, g, size = _spaces(game, settings)
        n = len(seeds)
        super().__init__(n, observation_space, action_space)
        ctx = mp.get_context(start_method)
        buffers = {}

        def alloc(name, nbytes):
            buffers[name] = ctx.RawArray("b", nbytes)
            return buffers[name]
        self.a = allocate(n, size, g.num_actions, alloc)
        shapes = {name: arr.shape for name, arr in self.a.items()}
        self.spans = split(n, workers)
        self.processes, self.conns = [], []
        self.closed = False
        try:
            for span in self.spans:
                parent, child = ctx.Pipe()
                process = ctx.Process(target=_worker, daemon=True, name=f"kahve-env-{span.start}",
                                      args=(child, game, settings, pool, [seeds[i] for i in span], span, buffers,
                                            shapes))
                process.start()
                child.close()
                self.processes.append(process)
                self.conns.append(parent)
            for w in range(len(self.conns)):
                self._answer(w)
        except BaseException:
            self._terminate()
            raise

    # ----- talking to the workers --------------------------------------------------------------------------
    def _answer(self, w: int) -> bytes:
        try:
            msg = self.conns[w].recv_bytes()
        except (EOFError, OSError):
            raise RuntimeError(f"env worker {w} (games {self.spans[w].start}..{self.spans[w].stop - 1}) ended "
                               f"unexpectedly (exit code {self.processes[w].exitcode})") from None
        if msg[:1] == b"e":
            raise RuntimeError(f"env worker {w} (games {self.spans[w].start}..{self.spans[w].stop - 1}) failed:\n"
                               + msg[1:].decode(errors="replace"))
        return msg[1:]

    def _all(self, message: bytes) -> list[bytes]:
        for conn in self.conns:
            conn.send_bytes(message)
        return [self._answer(w) for w in range(len(self.conns))]

    def _by_worker(self, indices) -> list[tuple[int, list[int], list[int]]]:
        """(worker, global indices, local indices) for the workers holding ``indices``, in the order asked."""
        out = []
        for w, span in enumerate(self.spans):
            mine = [i for i in self._get_indices(indices) if i in span]
            if mine:
                out.append((w, mine, [i - span.start for i in mine]))
        return out

    def _ask(self, op: bytes, make, indices) -> list:
        """Send ``op + pickle(make(local))`` to the workers holding ``indices``; their answers, by index."""
        parts = self._by_worker(indices)
        for w, _, local in parts:
            self.conns[w].send_bytes(op + pickle.dumps(make(local)))
        results = {}
        for w, mine, _ in parts:
            answer = self._answer(w)
            values = pickle.loads(answer) if answer else [None] * len(mine)
            results.update(zip(mine, values))
        return [results[i] for i in self._get_indices(indices)]

    # ----- the VecEnv API ------------------------------------------------------------------------------------
    def reset(self):
        seeds, options = self._take_seeds()
        for w, span in enumerate(self.spans):
            self.conns[w].send_bytes(b"r" + pickle.dumps(([seeds[i] for i in span], [options[i] for i in span])))
        for w in range(len(self.conns)):
            self._answer(w)
        return self.a["obs"].copy()

    def step_async(self, actions) -> None:
        super().step_async(actions)
        for conn in self.conns:
            conn.send_bytes(b"s")

    def step_wait(self):
        for w in range(len(self.conns)):
            self._answer(w)
        return self._results()

    def _env_method(self, method_name, method_args, method_kwargs, indices) -> list:
        return self._ask(b"m", lambda local: (method_name, method_args, method_kwargs, local), indices)

    def get_attr(self, attr_name: str, indices=None) -> list:
        if attr_name == "render_mode":                   # asked by VecEnv.__init__, before the workers exist
            return [None for _ in self._get_indices(indices)]
        return self._ask(b"g", lambda local: (attr_name, local), indices)

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        self._ask(b"a", lambda local: (attr_name, value, local), indices)

    def close(self) -> None:
        if self.closed:
            return
        try:
            for w, conn in enumerate(self.conns):
                if self.processes[w].is_alive():
                    conn.send_bytes(b"q")
                    self._answer(w)
        except (RuntimeError, OSError, BrokenPipeError):
            pass
        self._terminate()

    def _terminate(self) -> None:
        for process in self.processes:
            process.join(2)
            if process.is_alive():
                process.terminate()
                process.join(5)
        for conn in self.conns:
            conn.close()
        self.closed = True


def default_workers() -> int:
    """``env_workers: 0``: one worker process per CPU core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class ScaledRewardMonitor(VecMonitor):
    """SB3's ``VecMonitor`` (episode returns and lengths in game points, for the logs and the league) that hands
    the learner every reward times ``scale`` (``ppo.reward_scale``)."""

    def __init__(self, venv: VecEnv, scale: float = 1.0):
        super().__init__(venv)
        self.scale = float(scale)

    def step_wait(self):
        obs, rewards, dones, infos = super().step_wait()
        return obs, (rewards * self.scale if self.scale != 1.0 else rewards), dones, infos
