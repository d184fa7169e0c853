"""What a checkpoint holds, as data: how a model's learning state goes into a checkpoint folder and back.

- the networks and the optimizer (SB3's ``get_parameters()``: state dicts of tensors) and torch's random state,
  in ``model.pt``, loaded with ``torch.load(weights_only=True)``;
- the model's counters (steps, updates, episodes, DQN's exploration), in state.json;
- the DQN replay buffer, in ``replay_buffer.npz`` (the filled rows only), loaded with ``allow_pickle=False``;
- the random states of Python, numpy and every env, as JSON.

The model itself is rebuilt from config.yaml (:func:`~.model.make_model`) and these put back into it; SB3's
``save``/``load`` (cloudpickle) are not used, so a run folder cannot run code. ``kahve export --sb3`` still
writes SB3's own format for people who want it.
"""

from __future__ import annotations

import random

import numpy as np

from ..files import check_finite, load_npz, load_tensors, save_npz, save_tensors
from ..run_dir import Checkpoint
from ..session import random_states, set_random_states


# ----- everything a learner needs, in one call each way -----------------------------------------------------------
def save_learner(ck: Checkpoint, model, pool, vec, envs_reachable: bool = True) -> dict:
    """Write the model, the DQN replay buffer and the opponent pool into ``ck``; return the state.json entries
    (counters and random states). ``envs_reachable=False``: the envs' random states are left out (a resume gives
    them new ones)."""
    counters = save_model(model, ck)
    if hasattr(model, "replay_buffer") and model.replay_buffer is not None:
        save_replay_buffer(model.replay_buffer, ck.replay_buffer)
    pool.save(ck.opponents)
    return {"steps": model.num_timesteps, "model": counters, **random_states(),
            "env_states": vec.env_method("get_rng_state") if envs_reachable else None}


def restore_learner(ck: Checkpoint, state: dict, model, vec, seed: int, log=print) -> None:
    """Put what :func:`save_learner` wrote back into a model and envs built from the run's config (the pool
    is loaded before the envs are built: ``OpponentPool.load(ck.opponents)``)."""
    restore_model(model, ck, state.get("model", {}))
    if hasattr(model, "replay_buffer") and model.replay_buffer is not None:
        if ck.replay_buffer.exists():
            load_replay_buffer(model.replay_buffer, ck.replay_buffer)
        else:
            log(f"note: {ck.folder} has no replay buffer; the DQN starts from an empty one")
    set_random_states(state, ck.state_file)
    # building the model seeded the envs' next reset (SB3's VecEnv.seed): drop that, or the first reset would
    # replace the streams put back here with the fresh run's and deal its opening deals again
    vec.unwrapped._reset_seeds()
    env_states = state.get("env_states")
    if env_states is not None and not isinstance(env_states, list):
        raise ValueError(f"{ck.state_file}: the envs' random states are not a list (null: not saved)")
    if isinstance(env_states, list) and len(env_states) == vec.num_envs:
        for i, s in enumerate(env_states):
            try:
                check_env_state(s)
                vec.env_method("set_rng_state", s, indices=[i])
            except (KeyError, TypeError, ValueError, IndexError, OverflowError) as err:
                raise ValueError(f"{ck.state_file}: env {i}'s random state is wrong ({err})") from None
    else:
        # not saved (Ctrl-C with env processes) or another n_envs: new streams, so new deals
        for i in range(vec.num_envs):
            version, internal, gauss = random.Random(f"{seed}/{i}/{state['steps']}").getstate()
            vec.env_method("set_rng_state", {"episodes": 0, "rng": [version, list(internal), gauss]}, indices=[i])


def check_env_state(state) -> None:
    """An env's random state as :meth:`~..view.learner_env.LearnerEnv.get_rng_state` writes it (episodes played,
    Python's stream), or a ``ValueError``: checked before any env takes it."""
    if not (isinstance(state, dict) and isinstance(state.get("episodes"), int) and state["episodes"] >= 0
            and isinstance(state.get("rng"), list) and len(state["rng"]) == 3):
        raise ValueError("expected {episodes: N, rng: [version, internal state, gauss]}")
    random.Random().setstate((state["rng"][0], tuple(state["rng"][1]), state["rng"][2]))      # raises if it is not one


#: model attributes that carry a run's progress (beyond its weights); the rest comes from the config
COUNTERS = ("num_timesteps", "_n_updates", "_episode_num", "_current_progress_remaining")
COUNTERS_DQN = ("_n_calls", "exploration_rate")
#: the arrays of SB3's ReplayBuffer, plus the next-state masks of :class:`~.dqn.MaskedReplayBuffer` and, with
#: prioritised replay, its priorities (an array a buffer lacks is neither saved nor loaded)
BUFFER_ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts", "next_action_masks",
                 "priorities")


# ----- the model -------------------------------------------------------------------------------------------------
def save_model(model, ck: Checkpoint) -> dict:
    """Write the weights and optimizer state; return the counters (for state.json)."""
    import torch
    params = model.get_parameters()
    for name, tensors in params.items():        # diverged weights never replace the checkpoint before
        if not name.endswith("optimizer"):
            check_finite(tensors, f"the network at {model.num_timesteps:,} steps ({name})",
                         "the training diverged; not saved, the checkpoint before is kept")
    save_tensors(ck.weights, {"parameters": params, "torch_rng": torch.get_rng_state()})
    names = COUNTERS + (COUNTERS_DQN if hasattr(model, "exploration_rate") else ())
    counters = {name: getattr(model, name) for name in names}
    counters["ep_info_buffer"] = [{k: float(v) for k, v in info.items()} for info in (model.ep_info_buffer or [])]
    return counters


def restore_model(model, ck: Checkpoint, counters: dict) -> None:
    """Put a checkpoint's weights, optimizer state and counters into a model built from the same config."""
    import torch
    data = load_tensors(ck.weights, device=model.device)
    params, rng = data.get("parameters"), data.get("torch_rng")
    expected = set(model._get_torch_save_params()[0])
    if not isinstance(params, dict) or set(params) != expected:
        raise ValueError(f"{ck.weights}: expected the parameters of {', '.join(sorted(expected))}")
    _check_finite_parameters(params, ck.weights)
    _set_parameters(model, params, True, f"{ck.weights}: the weights do not fit the network of config.yaml")
    if isinstance(rng, torch.Tensor) and rng.dtype == torch.uint8:
        try:
            torch.set_rng_state(rng.cpu())
        except RuntimeError as err:        # (a state of another size)
            raise ValueError(f"{ck.weights}: torch's random state is wrong ({str(err).splitlines()[0][:200]})") \
                from None
    from collections import deque
    try:
        for name in COUNTERS + (COUNTERS_DQN if hasattr(model, "exploration_rate") else ()):
            value = counters[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name}: {value!r}")
            setattr(model, name, type(getattr(model, name))(value))
        infos = counters.get("ep_info_buffer", [])
        model.ep_info_buffer = deque(({str(k): float(v) for k, v in i.items()} for i in infos),
                                     maxlen=model._stats_window_size)
        model.ep_success_buffer = deque(maxlen=model._stats_window_size)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"{ck.state_file}: the model's counters are missing or wrong ({err})") from None


def start_from(model, ck: Checkpoint) -> None:
    """Put the network of another run's checkpoint into a new run's model (``init_from``): the policy's weights
    (PPO's value head with them; DQN's target network too), not the optimizer's state or the counters, so the
    new run counts its own steps."""
    data = load_tensors(ck.weights, device=model.device)
    params = data.get("parameters")
    if not isinstance(params, dict) or "policy" not in params:
        raise ValueError(f"{ck.weights}: expected the parameters of a policy")
    _check_finite_parameters({"policy": params["policy"]}, ck.weights)
    _set_parameters(model, {"policy": params["policy"]}, False,
                    f"{ck.weights}: the weights do not fit this config's network")


def start_from_bot(model, mlp, source: str) -> None:
    """Put the network of a bot file (``init_from: BOT.onnx``, as :class:`~..policies.network.MLP`) into a new
    MaskablePPO run's actor: its hidden layers, output layer and action-feature head. The file holds no value
    network, so the critic keeps its fresh weights (expert iteration's fits, or PPO, train it)."""
    import torch.nn as nn

    policy = model.policy
    head = policy.action_net
    scores = getattr(head, "scores", None)
    layers = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    layers.append(head.linear if scores is not None else head)
    copy_mlp(mlp, layers, scores, source)


def copy_mlp(mlp, layers: list, scores, source: str) -> None:
    """Copy a bot file's network (:class:`~..policies.network.MLP`) into torch ``layers`` (``nn.Linear``, input
    first) and an action-feature head ``scores`` (a ``FeatureScores``, or None); a network of another shape is a
    ``ValueError`` that names ``source``."""
    import torch as th

    from .action_features import GAIN
    if len(layers) != len(mlp.weights) or (scores is None) != (mlp.feature_weights is None):
        raise ValueError(f"{source}: its network ({len(mlp.weights)} layers"
                         f"{', action features' if mlp.feature_weights is not None else ''}) does not fit this "
                         f"config's ({len(layers)} layers{', action features' if scores is not None else ''})")
    with th.no_grad():
        for layer, w, b in zip(layers, mlp.weights, mlp.biases):
            if tuple(layer.weight.shape) != w.shape:
                raise ValueError(f"{source}: a layer of {w.shape[1]} -> {w.shape[0]} does not fit this config's "
                                 f"{layer.weight.shape[1]} -> {layer.weight.shape[0]}")
            layer.weight.copy_(th.as_tensor(np.array(w)))
            layer.bias.copy_(th.as_tensor(np.array(b)))
        if scores is not None:
            scores.weight.copy_(th.as_tensor(np.array(mlp.feature_weights)) / GAIN)


def _check_finite_parameters(params: dict, source) -> None:
    """Refuse a checkpoint whose network (not its optimizer's statistics) holds a NaN or an infinity."""
    for name, tensors in params.items():
        if not name.endswith("optimizer") and isinstance(tensors, dict):
            check_finite(tensors, source)


def _set_parameters(model, params: dict, exact: bool, refusal: str) -> None:
    """``model.set_parameters``; weights of another shape are ``ValueError(refusal (torch's first line))``."""
    try:
        model.set_parameters(params, exact_match=exact, device=model.device)
    except (RuntimeError, ValueError, KeyError, TypeError) as err:
        first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
        raise ValueError(f"{refusal} ({first})") from None


# ----- the DQN replay buffer ----------------------------------------------------------------------------------------
def save_replay_buffer(buffer, path) -> None:
    rows = buffer.buffer_size if buffer.full else buffer.pos
    arrays = {name: getattr(buffer, name)[:rows] for name in BUFFER_ARRAYS if getattr(buffer, name, None) is not None}
    save_npz(path, {**arrays, "pos": np.array(buffer.pos), "full": np.array(buffer.full)})


def load_replay_buffer(buffer, path) -> None:
    """Fill ``buffer`` (built from the same config) from ``path``; any mismatch is an error naming the file."""
    data = load_npz(path)
    try:
        pos, full = int(data["pos"]), bool(data["full"])
        rows = buffer.buffer_size if full else pos
        if not 0 <= pos < buffer.buffer_size + (0 if full else 1):
            raise ValueError(f"position {pos} outside the buffer of {buffer.buffer_size}")
        for name in BUFFER_ARRAYS:
            target = getattr(buffer, name, None)
            if target is None:
                continue
            a = data[name]
            if a.shape != (rows, *target.shape[1:]) or a.dtype != target.dtype:
                raise ValueError(f"{name} is {a.dtype}{list(a.shape)}; this run's buffer needs "
                                 f"{target.dtype}{[rows, *target.shape[1:]]}")
            target[:rows] = a
    except KeyError as err:
        raise ValueError(f"{path}: not a replay buffer (no {err.args[0]!r})") from None
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from None
    buffer.pos, buffer.full = pos, full
