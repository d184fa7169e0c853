"""PPO that collects its next rollout in a second process while it updates on the last one (``async_rollouts``).

SB3's PPO alternates: collect a rollout with the current weights, then update on it. With kahve's batched env
the update is about half of the wall time and the games' own Python work most of the rest, so on a machine with
two cores one core idles in each phase. Here a collector process holds its own copy of the envs (the config's
``vec_env``, built exactly as the learner would build them, so the same games are dealt) and of the policy. While
the learner updates on rollout k, the collector gathers rollout k+1 with the weights the learner had before that
update: the rollout the learner updates on was collected by the policy of one update earlier, as in asynchronous
PPO (RLlib's APPO). PPO's probability ratio and its clipping are taken against the log-probabilities the
collector recorded, i.e. against the policy that acted, so each update is still a clipped step from the
behaviour policy; advantages come from the collector's value estimates, as they would in a synchronous run.

- :class:`CollectorVecEnv` is the learner's env: it has the spaces and ``num_envs`` of the real envs, forwards
  ``env_method``/``get_attr``/``set_attr`` (self-play's ``set_pool``, the league's weights, checkpoints' random
  states) to the collector's envs, and moves rollouts: weights go to the collector as one byte string per
  rollout; the rollout comes back in shared memory (observations, actions, masks, rewards, values,
  log-probabilities, advantages and returns) with the infos of the episodes that ended, so nothing is pickled
  per step.
- :class:`OverlappedMaskablePPO` is sb3-contrib's ``MaskablePPO`` whose ``collect_rollouts`` takes the finished
  rollout, starts the next one, and replays the rollout's steps to the callbacks (progress bar, the trainer's
  schedule, the league's episode counts), so everything that watches a synchronous run works unchanged.

The collector's first rollout is exactly the one a synchronous run would collect (same games, same weights, the
same torch random stream for the sampled actions: tests/agents/test_async_rollouts.py).
"""

from __future__ import annotations

import multiprocessing.util
import signal
import time
import traceback

import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from ..view.game_batch import shared_view

#: the arrays of sb3-contrib's MaskableRolloutBuffer that a rollout fills: name -> per-step shape (obs, actions)
ROLLOUT_ARRAYS = {
    "observations": lambda obs, act: (obs,),
    "actions": lambda obs, act: (1,),
    "action_masks": lambda obs, act: (act,),
    "rewards": lambda obs, act: (),
    "returns": lambda obs, act: (),
    "episode_starts": lambda obs, act: (),
    "values": lambda obs, act: (),
    "log_probs": lambda obs, act: (),
    "advantages": lambda obs, act: (),
}


def rollout_shapes(n_steps: int, n_envs: int, obs_size: int, num_actions: int) -> dict[str, tuple]:
    return {name: (n_steps, n_envs, *shape(obs_size, num_actions)) for name, shape in ROLLOUT_ARRAYS.items()}


def _views(buffers: dict, shapes: dict) -> dict[str, np.ndarray]:
    """The rollout arrays over their shared buffers (every one float32, as in SB3's rollout buffer)."""
    return {name: shared_view(buffers[name], np.float32, shapes[name]) for name in shapes}


def policy_vector(policy) -> np.ndarray:
    """Every parameter of ``policy`` in one float32 vector (on the CPU), in the order ``parameters()`` gives."""
    import torch
    with torch.no_grad():
        return torch.nn.utils.parameters_to_vector(policy.parameters()).detach().cpu().numpy()


class CollectorVecEnv(VecEnv):
    """The learner's env under ``async_rollouts``: a collector process steps the real envs; see the module's doc.
    ``processes`` and ``closed`` are what the trainer needs to end the collector after Ctrl-C; ``waited_seconds``
    is the time the learner has spent waiting for rollouts (the benchmark's env share), ``collect_seconds`` the
    time the collector has spent collecting them."""

    def __init__(self, cfg: dict, pool, start_method: str = "forkserver"):
        import multiprocessing as mp
        from .vec_env import _spaces
        observation_space, action_space, g, size = _spaces(cfg["game"], cfg["settings"])
        super().__init__(cfg["n_envs"], observation_space, action_space)
        self.shapes = rollout_shapes(cfg["ppo"]["n_steps"], cfg["n_envs"], size, g.num_actions)
        ctx = mp.get_context(start_method)
        buffers = {name: ctx.RawArray("f", int(np.prod(shape))) for name, shape in self.shapes.items()}
        self.arrays = _views(buffers, self.shapes)
        self.waited_seconds = self.collect_seconds = 0.0
        self.in_flight = False
        self._finished: dict | None = None               # the done infos of a rollout received, not yet taken
        self.closed = False
        parent, child = ctx.Pipe()
        self.conn = parent
        # not a daemon, so that vec_env shared can start its env workers inside it; closing the pipe at exit (a
        # learner that never called close) ends it before multiprocessing waits for it
        self.process = ctx.Process(target=_collector, daemon=False, name="kahve-collector",
                                   args=(child, cfg, pool, buffers, self.shapes))
        multiprocessing.util.Finalize(self, parent.close, exitpriority=10)
        self.processes = [self.process]
        try:
            self.process.start()
            child.close()
            self.parameters = self._receive("ready")
        except BaseException:
            self._terminate()
            raise

    # ----- talking to the collector ---------------------------------------------------------------------------
    def _receive(self, expected: str):
        """The next answer of kind ``expected``; a finished rollout that arrives first is kept for :meth:`finish`."""
        while True:
            try:
                kind, payload = self.conn.recv()
            except (EOFError, OSError):
                raise RuntimeError(f"the rollout collector process ended unexpectedly (exit code "
                                   f"{self.process.exitcode})") from None
            if kind == "error":
                raise RuntimeError("the rollout collector process failed:\n" + payload)
            if kind == "rollout":
                self._finished, seconds = payload
                self.collect_seconds += seconds
                self.in_flight = False
            if kind == expected:
                return payload

    def _call(self, target: str, name: str, *args, **kwargs):
        self.conn.send(("call", (target, name, args, kwargs)))
        return self._receive("result")

    def start(self, policy) -> None:
        """Have the collector gather the next rollout with ``policy``'s weights as they are now."""
        weights = policy_vector(policy)
        if weights.size != self.parameters:
            raise RuntimeError(f"the learner's policy has {weights.size} parameters, the collector's "
                               f"{self.parameters}: they were built from different configs")
        self.conn.send(("collect", weights.tobytes()))
        self.in_flight = True

    def finish(self, rollout_buffer) -> dict[int, list]:
        """Wait for the rollout in flight, copy it into ``rollout_buffer``; {step: [(env, episode info)]}."""
        t = time.perf_counter()
        if self._finished is None:
            self._receive("rollout")
        self.waited_seconds += time.perf_counter() - t
        done_infos, self._finished = self._finished, None
        rollout_buffer.reset()
        for name, array in self.arrays.items():
            getattr(rollout_buffer, name)[...] = array
        rollout_buffer.pos, rollout_buffer.full = rollout_buffer.buffer_size, True
        return done_infos

    # ----- the VecEnv API (the learner never steps this env itself) -------------------------------------------
    def reset(self):
        """The collector resets its games before its first rollout; the learner's own ``_last_obs`` is unused."""
        return np.zeros((self.num_envs, *self.observation_space.shape), dtype=np.float32)

    def step_async(self, actions) -> None:
        raise RuntimeError("async_rollouts: the collector process steps the envs, not the learner")

    def step_wait(self):
        raise RuntimeError("async_rollouts: the collector process steps the envs, not the learner")

    def _reset_seeds(self) -> None:
        super()._reset_seeds()
        if getattr(self, "conn", None) is not None and not self.closed:    # (VecEnv.__init__ calls it first)
            self._call("venv", "_reset_seeds")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
        return self._call("vec", "env_method", method_name, *method_args, indices=indices, **method_kwargs)

    def get_attr(self, attr_name: str, indices=None) -> list:
        if attr_name == "render_mode":                   # asked by VecEnv.__init__, before the collector exists
            return [None for _ in self._get_indices(indices)]
        return self._call("vec", "get_attr", attr_name, indices=indices)

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        self._call("vec", "set_attr", attr_name, value, indices=indices)

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks"

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self.process.is_alive():
                self.conn.send(("quit", None))
                self._receive("bye")
        except (RuntimeError, OSError, BrokenPipeError):
            pass
        self._terminate()

    def _terminate(self) -> None:
        if self.process.pid is not None:                 # (started)
            self.process.join(5)
        if self.process.pid is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(5)
        self.conn.close()
        self.closed = True


class _DoneInfos(BaseCallback):
    """The collector's callback: the infos of the episodes that end during a rollout, by step."""

    def __init__(self):
        super().__init__()
        self.by_step: dict[int, list] = {}
        self.step = 0

    def _on_rollout_start(self) -> None:
        self.by_step, self.step = {}, 0

    def _on_step(self) -> bool:
        ended = [(int(i), {k: v for k, v in self.locals["infos"][i].items() if k != "terminal_observation"})
                 for i in np.flatnonzero(self.locals["dones"])]
        if ended:
            self.by_step[self.step] = ended
        self.step += 1
        return True


def _collector(conn, cfg: dict, pool, buffers: dict, shapes: dict) -> None:
    """The collector process: the config's envs and a copy of the policy (on the CPU, one torch thread);
    collects a rollout per ``collect`` message with the weights it carries."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # Ctrl-C is the learner's to handle
    try:
        import torch
        from ...threads import limit_threads
        from .model import make_model, sync_vec_env
        torch.set_num_threads(limit_threads(1))
        sync = {**cfg, "async_rollouts": False, "device": "cpu"}
        vec = sync_vec_env(sync, pool)
        model = make_model(sync, vec, None)
        arrays = _views(buffers, shapes)
        callback = _DoneInfos()
        callback.init_callback(model)
        started = False
        conn.send(("ready", int(policy_vector(model.policy).size)))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            break
        try:
            if kind == "quit":
                vec.close()
                conn.send(("bye", None))
                break
            if kind == "collect":
                vector = torch.from_numpy(np.frombuffer(payload, dtype=np.float32).copy())
                torch.nn.utils.vector_to_parameters(vector, model.policy.parameters())
                start = time.perf_counter()
                if not started:    # as a synchronous learn() starts: reset the envs, episode-start flags up
                    model._setup_learn(cfg["total_timesteps"], None, True, "collector", False)
                    started = True
                model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
                for name, array in arrays.items():
                    array[...] = getattr(model.rollout_buffer, name)
                conn.send(("rollout", (callback.by_step, time.perf_counter() - start)))
            elif kind == "call":
                target, name, args, kwargs = payload
                obj = vec if target == "vec" else vec.unwrapped
                conn.send(("result", getattr(obj, name)(*args, **kwargs)))
        except BaseException:
            conn.send(("error", traceback.format_exc()))


class OverlappedMaskablePPO(MaskablePPO):
    """MaskablePPO whose rollouts a :class:`CollectorVecEnv` collects one update ahead; see the module's doc."""

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps: int,
                         use_masking: bool = True) -> bool:
        collector = env.unwrapped
        if n_rollout_steps != rollout_buffer.buffer_size:
            raise ValueError("async_rollouts collects whole rollouts of ppo.n_steps")
        if not collector.in_flight and collector._finished is None:
            collector.start(self.policy)                 # the first rollout of this process
        done_infos = collector.finish(rollout_buffer)    # collected with the weights before the last update
        collector.start(self.policy)                     # the next one, while this one is learned from
        callback.on_rollout_start()
        n = env.num_envs
        for step in range(n_rollout_steps):              # the steps again, for whatever watches them
            self.num_timesteps += n
            dones = np.zeros(n, dtype=bool)
            infos = [{} for _ in range(n)]
            for i, info in done_infos.get(step, ()):
                dones[i], infos[i] = True, info
            callback.update_locals({"infos": infos, "dones": dones})
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
        callback.on_rollout_end()
        return True
