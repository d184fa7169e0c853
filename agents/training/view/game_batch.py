"""The part of kahve's vector envs (:mod:`..sb3.vec_env`) that steps the games: :class:`GameBatch`, the arrays it
writes, and the worker process of ``vec_env: shared``. It imports neither torch nor stable-baselines3, so an env
worker process starts in a fraction of a second."""

from __future__ import annotations

import pickle
import signal
import traceback

import numpy as np

from .learner_env import LearnerEnv
from .opponents import batch_group, decide_batch

#: the per-game arrays a :class:`GameBatch` writes: name -> (dtype, per-game shape as a function of the spaces)
ARRAYS = {
    "actions": (np.int64, lambda obs, act: ()),
    "obs": (np.float32, lambda obs, act: (obs,)),
    "masks": (np.bool_, lambda obs, act: (act,)),
    "rewards": (np.float32, lambda obs, act: ()),
    "dones": (np.bool_, lambda obs, act: ()),
    # filled for the games whose episode ended in the last step, read only there
    "terminal_obs": (np.float32, lambda obs, act: (obs,)),
    "truncated": (np.bool_, lambda obs, act: ()),           # SB3's TimeLimit.truncated: truncated, not terminated
    "won": (np.bool_, lambda obs, act: ()),
    "learner_side": (np.int32, lambda obs, act: ()),
    "winners": (np.int64, lambda obs, act: ()),             # a bit per winning seat; -1: no winners (None)
    "opponent_entries": (np.int64, lambda obs, act: ()),    # a bit per pool entry the opponents were drawn from
}


def shared_view(buffer, dtype, shape: tuple) -> np.ndarray:
    """An array of ``shape`` over the start of ``buffer`` (e.g. a ``multiprocessing.RawArray``), without a copy."""
    return np.frombuffer(buffer, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


def allocate(n: int, obs_size: int, num_actions: int, alloc=None) -> dict[str, np.ndarray]:
    """The arrays of ``n`` games; ``alloc(name, nbytes)`` gives each one's buffer (e.g. shared memory), else
    numpy allocates them."""
    out = {}
    for name, (dtype, shape) in ARRAYS.items():
        full = (n, *shape(obs_size, num_actions))
        count = int(np.prod(full))
        if alloc is None:
            out[name] = np.zeros(full, dtype=dtype)
        else:
            out[name] = shared_view(alloc(name, max(count * np.dtype(dtype).itemsize, 1)), dtype, full)
    return out


class GameBatch:
    """N :class:`LearnerEnv` s stepped together, their results written into ``arrays`` (see :data:`ARRAYS`)."""

    def __init__(self, envs: list[LearnerEnv], arrays: dict[str, np.ndarray]):
        self.envs = envs
        self.a = arrays
        g = envs[0].game
        self._scratch_obs = np.zeros((len(envs), g.observation_size), dtype=np.float32)
        self._scratch_masks = np.zeros((len(envs), g.num_actions), dtype=bool)
        self._pending: dict = {}
        self._phase: list[int] = [0] * len(envs)

    # ----- driving the envs' generators ------------------------------------------------------------------
    _STEP, _RESET = 1, 2

    def _run(self, i: int, steps, value=None) -> None:
        """Advance game ``i``'s generator until it waits on a network opponent or is done."""
        try:
            policy = steps.send(value)
        except StopIteration as stop:
            self._finished(i, stop.value)
            return
        self._pending.setdefault(batch_group(policy), []).append((i, steps, policy))

    def _finished(self, i: int, result) -> None:
        a = self.a
        if self._phase[i] == self._STEP:
            obs, reward, terminated, truncated, info = result
            a["rewards"][i] = reward
            done = terminated or truncated
            a["dones"][i] = done
            if done:
                a["terminal_obs"][i] = obs
                a["truncated"][i] = truncated and not terminated
                a["won"][i] = bool(info["won"])
                a["learner_side"][i] = info["learner_side"]
                winners = info["winners"]
                a["winners"][i] = -1 if winners is None else sum(1 << w for w in winners)
                a["opponent_entries"][i] = sum(1 << k for k in info["opponent_entries"] if k < 63)   # 63 bits
                self._phase[i] = self._RESET
                self._run(i, self.envs[i].reset_steps())
                return
        else:
            obs, _ = result
        env = self.envs[i]
        a["obs"][i] = obs
        a["masks"][i] = env._mask
        self._phase[i] = 0

    def _drain(self) -> None:
        """Answer the games waiting on network opponents, one forward pass per network, until none waits."""
        while self._pending:
            pending, self._pending = self._pending, {}
            for items in pending.values():
                m = len(items)
                obs, masks = self._scratch_obs[:m], self._scratch_masks[:m]
                for j, (i, _, _) in enumerate(items):
                    st = self.envs[i].state
                    obs[j] = st.observation(st.current_player)
                    masks[j] = st.legal_mask()
                actions = decide_batch([p for _, _, p in items], obs, masks)
                for (i, steps, _), action in zip(items, actions):
                    self._run(i, steps, action)

    # ----- the batch's API ----------------------------------------------------------------------------------
    def reset(self, seeds: list, options: list) -> None:
        for i, env in enumerate(self.envs):
            self._phase[i] = self._RESET
            self._run(i, env.reset_steps(seeds[i], options[i] or None))
        self._drain()

    def step(self) -> None:
        """Step every game with ``arrays["actions"]``; a game whose episode ends is reset (its new episode's
        observation in ``obs``, the ended one's in ``terminal_obs``)."""
        actions = self.a["actions"].tolist()
        for i, env in enumerate(self.envs):
            self._phase[i] = self._STEP
            self._run(i, env.step_steps(actions[i]))
        self._drain()


def episode_info(a: dict, i: int) -> dict:
    """The info of game ``i`` whose episode ended in the last step: what ``LearnerEnv.step`` returns with SB3's
    keys (``terminal_observation``, ``TimeLimit.truncated``)."""
    bits = int(a["winners"][i])
    winners = None if bits < 0 else [s for s in range(bits.bit_length()) if bits >> s & 1]
    drawn = int(a["opponent_entries"][i])
    return {"winners": winners, "learner_side": int(a["learner_side"][i]), "won": bool(a["won"][i]),
            "opponent_entries": [k for k in range(drawn.bit_length()) if drawn >> k & 1],
            "TimeLimit.truncated": bool(a["truncated"][i]), "terminal_observation": a["terminal_obs"][i].copy()}


def split(n: int, workers: int) -> list[range]:
    """``n`` games over ``workers`` processes, in contiguous runs as even as possible."""
    workers = max(1, min(workers, n))
    bounds = [n * w // workers for w in range(workers + 1)]
    return [range(bounds[w], bounds[w + 1]) for w in range(workers)]


def _worker(conn, game, settings, pool, seeds, span, buffers, shapes) -> None:
    # Ctrl-C is the learner's to handle (it checkpoints, then ends this process); dying on it would leave the
    # pipe with half a message
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ...threads import limit_threads
    limit_threads()
    try:
        full = {name: shared_view(buffers[name], ARRAYS[name][0], shapes[name]) for name in ARRAYS}
        mine = {name: arr[span.start:span.stop] for name, arr in full.items()}
        envs = [LearnerEnv(game, settings, pool, seed=s) for s in seeds]
        batch = GameBatch(envs, mine)
    except BaseException:
        conn.send_bytes(b"e" + traceback.format_exc().encode())
        return
    conn.send_bytes(b"k")
    while True:
        try:
            msg = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            op = msg[:1]
            if op == b"s":
                batch.step()
                conn.send_bytes(b"k")
            elif op == b"r":
                batch.reset(*pickle.loads(msg[1:]))
                conn.send_bytes(b"k")
            elif op == b"m":
                name, args, kwargs, local = pickle.loads(msg[1:])
                out = [getattr(envs[i], name)(*args, **kwargs) for i in local]
                conn.send_bytes(b"k" + pickle.dumps(out))
            elif op == b"g":
                name, local = pickle.loads(msg[1:])
                conn.send_bytes(b"k" + pickle.dumps([getattr(envs[i], name) for i in local]))
            elif op == b"a":
                name, value, local = pickle.loads(msg[1:])
                for i in local:
                    setattr(envs[i], name, value)
                conn.send_bytes(b"k")
            elif op == b"q":
                conn.send_bytes(b"k")
                return
        except BaseException:
            conn.send_bytes(b"e" + traceback.format_exc().encode())
