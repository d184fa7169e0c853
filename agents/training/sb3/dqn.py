"""DQN with action masks, on top of stable-baselines3's DQN (docs/dqn.md has the options and why each is there).

Masks enter in three places (masking only action selection is a known mistake of masked DQNs):

1. exploration: epsilon-greedy picks a uniformly random *legal* action (each env on its own draw), and the
   warm-up too;
2. acting: the greedy action is the best legal one (``predict(..., action_masks=...)``);
3. the bootstrap target: ``max over the next state's LEGAL actions of Q_target(s', a')`` (double DQN: the
   online network's best legal action, valued by the target network). The replay buffer stores the next
   state's mask: ``info["action_mask"]`` if the env returns it, else the env's ``action_masks()`` right after
   the step.

In :class:`~.learner_env.LearnerEnv` the opponents move inside ``step()``, so a transition's next state is the
learner's next decision and its reward is what the learner collected meanwhile. A finished episode is
terminal in every sense (a truncated match has paid its outcome too), so the buffer never bootstraps past
the end of an episode (``handle_timeout_termination=False``).

On top of the 1-step masked DQN: n-step returns (``n_step``), double DQN (``double``), reward scaling
(``reward_scale``: the buffer keeps game points, the loss and the Q-values are in scaled points), a Huber or
squared loss (``loss``), gradient clipping (``max_grad_norm``), a dueling head (``dueling``, folded into one
linear layer when exported, so a bot file is the same plain MLP), proportional prioritised replay
(``prioritized``), and pretraining from a teacher's demonstrations (:meth:`MaskedDQN.fit_demonstrations`,
DQfD's large-margin loss with the teacher's returns as the regression target).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3 import DQN
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.torch_layers import create_mlp
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork

ILLEGAL = -1e9   # a finite "minus infinity": 0 * ILLEGAL stays 0 for terminal transitions


def masked_max(q_values: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """Max over legal actions per row (``masks`` bool, same shape as ``q_values``)."""
    return th.where(masks, q_values, th.full_like(q_values, ILLEGAL)).max(dim=1).values


def masked_argmax(q_values: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """The best legal action per row."""
    return th.where(masks, q_values, th.full_like(q_values, ILLEGAL)).argmax(dim=1)


def masked_td_target(rewards: th.Tensor, dones: th.Tensor, next_q: th.Tensor, next_masks: th.Tensor,
                     gamma, next_q_online: th.Tensor | None = None) -> th.Tensor:
    """The TD target with the max restricted to the next state's legal actions. ``gamma`` is a number or a
    column of per-row discounts (n-step: gamma ** steps taken). With ``next_q_online`` (double DQN), the
    online network picks the next state's best legal action and ``next_q`` (the target network) values it."""
    if next_q_online is None:
        best = masked_max(next_q, next_masks)
    else:
        best = next_q.gather(1, masked_argmax(next_q_online, next_masks).reshape(-1, 1)).reshape(-1)
    return rewards + (1 - dones) * gamma * best.reshape(-1, 1)


def large_margin_loss(q: th.Tensor, masks: th.Tensor, actions: th.Tensor, margin: float) -> th.Tensor:
    """DQfD's supervised loss per row: ``max over legal a of (Q(s, a) + margin * [a != a_E]) - Q(s, a_E)``;
    zero once the teacher's action ``a_E`` leads every other legal action by at least ``margin``."""
    bonus = th.full_like(q, margin)
    bonus.scatter_(1, actions.reshape(-1, 1), 0.0)
    q_e = q.gather(1, actions.reshape(-1, 1)).reshape(-1)
    return masked_max(q + bonus, masks) - q_e


# ----- the network: plain or dueling -----------------------------------------------------------------------------
class DuelingHead(nn.Module):
    """``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)`` (mean over all actions, so the head is linear in its input
    and :meth:`as_linear` folds it into one layer: a dueling bot file is a plain MLP)."""

    def __init__(self, inputs: int, actions: int):
        super().__init__()
        self.value = nn.Linear(inputs, 1)
        self.advantage = nn.Linear(inputs, actions)

    def forward(self, h: th.Tensor) -> th.Tensor:
        a = self.advantage(h)
        return self.value(h) + a - a.mean(dim=1, keepdim=True)

    def as_linear(self) -> nn.Linear:
        w_a, b_a = self.advantage.weight.detach(), self.advantage.bias.detach()
        layer = nn.Linear(w_a.shape[1], w_a.shape[0])
        with th.no_grad():
            layer.weight.copy_(self.value.weight.detach() + w_a - w_a.mean(dim=0, keepdim=True))
            layer.bias.copy_(self.value.bias.detach() + b_a - b_a.mean())
        return layer


class DuelingQNetwork(QNetwork):
    def __init__(self, observation_space, action_space, features_extractor, features_dim, net_arch=None,
                 activation_fn=nn.ReLU, normalize_images=True):
        super().__init__(observation_space, action_space, features_extractor, features_dim, net_arch,
                         activation_fn, normalize_images)
        trunk = create_mlp(self.features_dim, -1, self.net_arch, self.activation_fn)
        last = self.net_arch[-1] if self.net_arch else self.features_dim
        self.q_net = nn.Sequential(*trunk, DuelingHead(last, int(self.action_space.n)))


class MaskedDQNPolicy(DQNPolicy):
    """SB3's DQN MlpPolicy, with an optional dueling head and an optional action-feature head
    (``action_features=(offset, actions, size)``, :mod:`.action_features`)."""

    def __init__(self, *args, dueling: bool = False, action_features: tuple | None = None, **kwargs):
        self.dueling = dueling
        self.action_features = tuple(action_features) if action_features else None
        super().__init__(*args, **kwargs)

    def make_q_net(self) -> QNetwork:
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        net = (DuelingQNetwork if self.dueling else QNetwork)(**net_args)
        if self.action_features:
            from .action_features import ActionFeatureQNetwork
            net = ActionFeatureQNetwork(**net_args, action_features=self.action_features, q_net=net.q_net)
        return net.to(self.device)

    def _get_constructor_parameters(self) -> dict:
        return {**super()._get_constructor_parameters(), "dueling": self.dueling,
                "action_features": self.action_features}


# ----- the replay buffer ------------------------------------------------------------------------------------------
class MaskedSamples(NamedTuple):
    observations: th.Tensor
    actions: th.Tensor
    next_observations: th.Tensor
    dones: th.Tensor
    rewards: th.Tensor            # the n-step return, scaled
    next_action_masks: th.Tensor
    discounts: th.Tensor          # gamma ** (steps to the bootstrap state)
    weights: th.Tensor            # importance weights (prioritised replay), else ones
    rows: np.ndarray              # where the samples lie, to update their priorities
    envs: np.ndarray


class MaskedReplayBuffer(ReplayBuffer):
    """A replay buffer that also stores the legal-action mask of every next observation, and samples n-step
    returns (within an episode, never past its end or past the newest transition) and, optionally, in
    proportion to priorities (Schaul et al., 2016: ``p = (|TD error| + eps) ** alpha``, stored exponentiated;
    importance weights ``(N p_i / sum p) ** -beta`` normalised by the batch's largest)."""

    def __init__(self, buffer_size, observation_space, action_space, device="auto", n_envs=1, n_step: int = 1,
                 gamma: float = 0.99, reward_scale: float = 1.0, prioritized: bool = False,
                 priority_alpha: float = 0.6, priority_eps: float = 1e-3, **kwargs):
        kwargs.setdefault("handle_timeout_termination", False)
        super().__init__(buffer_size, observation_space, action_space, device, n_envs, **kwargs)
        self.next_action_masks = np.ones((self.buffer_size, self.n_envs, int(action_space.n)), dtype=bool)
        self.n_step, self.gamma, self.reward_scale = int(n_step), float(gamma), float(reward_scale)
        self.prioritized, self.priority_alpha, self.priority_eps = prioritized, priority_alpha, priority_eps
        self.priority_beta = 0.4
        self._max_priority = None                  # of the stored rows; found again after a resume
        if prioritized:
            self.priorities = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        for i, info in enumerate(infos):
            mask = info.get("action_mask")
            if mask is not None:
                self.next_action_masks[self.pos, i] = mask
        if self.prioritized:                       # a new transition gets the largest priority so far
            if self._max_priority is None:
                filled = self.priorities if self.full else self.priorities[:self.pos]
                self._max_priority = float(filled.max()) if filled.size and filled.max() > 0 else 1.0
            self.priorities[self.pos] = self._max_priority
        super().add(obs, next_obs, action, reward, done, infos)

    def sample(self, batch_size: int, env=None) -> MaskedSamples:
        rows_filled = self.buffer_size if self.full else self.pos
        if not self.prioritized:
            rows = np.random.randint(0, rows_filled, size=batch_size)
            return self._get_samples(rows, env)
        p = self.priorities[:rows_filled].reshape(-1).astype(np.float64)
        cum = np.cumsum(p)
        total = cum[-1]
        u = (np.arange(batch_size) + np.random.random(batch_size)) * (total / batch_size)   # stratified
        flat = np.minimum(np.searchsorted(cum, u, side="right"), len(p) - 1)
        probs = p[flat] / total
        weights = (len(p) * probs) ** (-self.priority_beta)
        return self._get_samples(flat // self.n_envs, env, flat % self.n_envs, weights / weights.max())

    def update_priorities(self, rows: np.ndarray, envs: np.ndarray, td_errors: np.ndarray) -> None:
        if self.prioritized:
            p = (np.abs(td_errors) + self.priority_eps) ** self.priority_alpha
            self.priorities[rows, envs] = p
            self._max_priority = max(self._max_priority or 0.0, float(p.max()))

    def _get_samples(self, batch_inds, env=None, env_indices=None, weights=None) -> MaskedSamples:
        if env_indices is None:
            env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        n = self.n_step
        steps = np.arange(n)
        idx = (batch_inds[:, None] + steps[None, :]) % self.buffer_size                # [batch, n]
        cols = env_indices[:, None]
        ends = (self.dones[idx, cols] > 0) | (self.timeouts[idx, cols] > 0)
        ends |= idx == (self.pos - 1) % self.buffer_size       # the newest row has no successor yet
        taken = np.where(ends.any(axis=1), ends.argmax(axis=1), n - 1)                 # steps - 1 to the bootstrap
        within = steps[None, :] <= taken[:, None]
        returns = (self.rewards[idx, cols] * self.gamma ** steps[None, :] * within).sum(axis=1)
        last = idx[np.arange(len(batch_inds)), taken]
        if self.optimize_memory_usage:
            next_obs = self.observations[(last + 1) % self.buffer_size, env_indices, :]
        else:
            next_obs = self.next_observations[last, env_indices, :]
        data = (
            self._normalize_obs(self.observations[batch_inds, env_indices, :], env),
            self.actions[batch_inds, env_indices, :],
            self._normalize_obs(next_obs, env),
            (self.dones[last, env_indices] * (1 - self.timeouts[last, env_indices])).reshape(-1, 1),
            self._normalize_reward(returns.reshape(-1, 1).astype(np.float32), env) * self.reward_scale,
        )
        masks = th.as_tensor(self.next_action_masks[last, env_indices], device=self.device)
        discounts = (self.gamma ** (taken + 1)).reshape(-1, 1).astype(np.float32)
        w = np.ones(len(batch_inds), np.float32) if weights is None else weights.astype(np.float32)
        return MaskedSamples(*tuple(map(self.to_torch, data)), masks, self.to_torch(discounts),
                             self.to_torch(w.reshape(-1, 1)), np.asarray(batch_inds), np.asarray(env_indices))


# ----- the algorithm ----------------------------------------------------------------------------------------------
class MaskedDQN(DQN):
    """SB3's DQN with masked exploration, acting and bootstrap target, and the extensions above. Train it on an
    env with ``action_masks()`` (the mask of its latest observation).

    Beyond SB3's arguments: ``n_step``, ``double``, ``reward_scale``, ``loss`` ("huber" or "mse"), ``dueling``,
    ``prioritized`` with ``priority_alpha``/``priority_beta``/``priority_eps``, ``margin`` (the large-margin
    loss of :meth:`fit_demonstrations`), and ``warmup`` ("random": the first ``learning_starts`` steps play
    uniformly random legal moves, as in SB3; "policy": epsilon-greedy from the start, for a pretrained
    network)."""

    def __init__(self, policy, env, *args, n_step: int = 1, double: bool = False, reward_scale: float = 1.0,
                 loss: str = "huber", dueling: bool = False, prioritized: bool = False, priority_alpha: float = 0.6,
                 priority_beta: float = 0.4, priority_eps: float = 1e-3, margin: float = 0.0,
                 demo_weight: float = 0.0, warmup: str = "random", **kwargs):
        if loss not in ("huber", "mse") or warmup not in ("random", "policy"):
            raise ValueError(f"loss must be huber or mse (got {loss!r}), warmup random or policy (got {warmup!r})")
        self.n_step, self.double, self.reward_scale, self.loss = int(n_step), bool(double), float(reward_scale), loss
        self.prioritized, self.priority_beta0, self.margin, self.warmup = prioritized, priority_beta, margin, warmup
        self.demo_weight = float(demo_weight)
        self.demonstrations: dict | None = None      # the teacher's (obs, masks, actions), kept by fit_demonstrations
        self.demonstration_arrays: dict | None = None
        if policy == "MlpPolicy":
            policy = MaskedDQNPolicy
        kwargs["policy_kwargs"] = {**(kwargs.get("policy_kwargs") or {}), "dueling": bool(dueling)}
        kwargs.setdefault("replay_buffer_class", MaskedReplayBuffer)
        if issubclass(kwargs["replay_buffer_class"], MaskedReplayBuffer):
            kwargs["replay_buffer_kwargs"] = {
                "n_step": self.n_step, "gamma": kwargs.get("gamma", 0.99), "reward_scale": self.reward_scale,
                "prioritized": prioritized, "priority_alpha": priority_alpha, "priority_eps": priority_eps,
                **(kwargs.get("replay_buffer_kwargs") or {})}
        super().__init__(policy, env, *args, **kwargs)

    def _masked_random(self, masks: np.ndarray) -> np.ndarray:
        return np.array([np.random.choice(np.flatnonzero(m)) for m in masks])

    def _store_transition(self, replay_buffer, buffer_action, new_obs, reward, dones, infos) -> None:
        # the mask of every new observation, for the bootstrap target. A finished env has already been reset
        # by the VecEnv, so its mask is the next episode's; its target does not bootstrap (done).
        masks = get_action_masks(self.env)
        for info, mask in zip(infos, masks):
            info.setdefault("action_mask", mask)
        super()._store_transition(replay_buffer, buffer_action, new_obs, reward, dones, infos)

    def _sample_action(self, learning_starts, action_noise=None, n_envs=1):
        masks = get_action_masks(self.env)
        if self.num_timesteps < learning_starts and self.warmup == "random":
            action = self._masked_random(masks)
        else:
            action, _ = self.predict(self._last_obs, deterministic=False, action_masks=masks)
        return action, action

    def _on_step(self) -> None:
        super()._on_step()
        if self.num_timesteps < self.learning_starts and self.warmup == "policy":
            self.exploration_rate = self.exploration_initial_eps

    def predict(self, observation, state=None, episode_start=None, deterministic=False, action_masks=None):
        obs = np.asarray(observation, dtype=np.float32)
        single = obs.ndim == 1
        obs = obs.reshape(1, -1) if single else obs
        masks = None if action_masks is None else np.asarray(action_masks, dtype=bool).reshape(len(obs), -1)
        with th.no_grad():
            q = self.q_net(th.as_tensor(obs, device=self.device)).cpu().numpy()
        if masks is not None:
            q = np.where(masks, q, ILLEGAL)
        action = q.argmax(axis=1)
        if not deterministic and self.exploration_rate > 0:
            explore = np.random.random(len(obs)) < self.exploration_rate       # each env draws on its own
            for i in np.flatnonzero(explore):
                action[i] = (np.random.choice(np.flatnonzero(masks[i])) if masks is not None
                             else self.action_space.sample())
        return (action[0] if single else action), state

    def _q_loss(self, current: th.Tensor, target: th.Tensor) -> th.Tensor:
        """Per-row loss (column vectors in, column out)."""
        if self.loss == "mse":
            return F.mse_loss(current, target, reduction="none")
        return F.smooth_l1_loss(current, target, reduction="none")

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        buffer = self.replay_buffer
        if self.prioritized:   # beta anneals linearly to 1 over the run
            done = 1 - self._current_progress_remaining
            buffer.priority_beta = self.priority_beta0 + (1 - self.priority_beta0) * done
        losses, q_taken, targets, td_abs = [], [], [], []
        for _ in range(gradient_steps):
            data = buffer.sample(batch_size, env=self._vec_normalize_env)
            with th.no_grad():
                next_q = self.q_net_target(data.next_observations)
                online = self.q_net(data.next_observations) if self.double else None
                target = masked_td_target(data.rewards, data.dones, next_q, data.next_action_masks, data.discounts,
                                          online)
            current = th.gather(self.q_net(data.observations), dim=1, index=data.actions.long())
            loss = (self._q_loss(current, target) * data.weights).mean()
            if self.demo_weight > 0 and self.demonstrations is not None:
                loss = loss + self.demo_weight * self._demonstration_loss(batch_size)
            td = (current - target).detach()
            if self.prioritized:
                buffer.update_priorities(data.rows, data.envs, td.cpu().numpy().reshape(-1))
            losses.append(loss.item())
            q_taken.append(current.mean().item())
            targets.append(target.mean().item())
            td_abs.append(td.abs().mean().item())
            self.policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))
        # in scaled points: Q of the actions taken, their targets, and the TD error
        self.logger.record("train/q_taken", np.mean(q_taken))
        self.logger.record("train/target", np.mean(targets))
        self.logger.record("train/td_abs", np.mean(td_abs))

    # ----- pretraining from demonstrations ------------------------------------------------------------------
    def keep_demonstrations(self, data: dict) -> None:
        """Keep a teacher's demonstrations for the large-margin loss during learning (``demo_weight``)."""
        device = self.policy.device
        self.demonstration_arrays = data               # what a checkpoint saves (demonstrations.npz)
        self.demonstrations = {"obs": th.as_tensor(data["obs"], device=device),
                               "masks": th.as_tensor(data["masks"], device=device),
                               "actions": th.as_tensor(data["actions"], device=device).long()}

    def _demonstration_loss(self, batch_size: int) -> th.Tensor:
        d = self.demonstrations
        idx = th.as_tensor(np.random.randint(0, len(d["actions"]), size=batch_size), device=self.policy.device)
        return large_margin_loss(self.q_net(d["obs"][idx]), d["masks"][idx], d["actions"][idx], self.margin).mean()

    def fit_demonstrations(self, data: dict, epochs: int, batch_size: int, learning_rate: float, seed: int,
                           log=print, progress=None, start: dict | None = None, on_epoch=None) -> dict:
        """Fit the Q-network to a teacher's demonstrations (:func:`~.pretrain.collect_demonstrations`: the
        teacher's observations, masks, actions and discounted returns, in game points): DQfD's large-margin
        loss (``margin``, in scaled points) makes the teacher's action the greedy one, and a regression of
        ``Q(s, a_teacher)`` on the teacher's return (scaled) gives the values the bootstrap then starts from
        (``Q`` of the teacher's policy). The target network is synced at the end. Returns the final epoch's
        statistics, named as behaviour cloning names them (policy loss: the margin loss; value loss: the
        regression). ``start`` and ``on_epoch``: a fit that goes on after the epochs it had done, and what is called
        after each (:func:`~..pretrain.behaviour_clone`)."""
        from ..pretrain import resume_fit
        policy = self.policy
        device = policy.device
        obs = th.as_tensor(data["obs"], device=device)
        masks = th.as_tensor(data["masks"], device=device)
        actions = th.as_tensor(data["actions"], device=device).long()
        returns = th.as_tensor(data["returns"], device=device).float() * self.reward_scale
        optimizer = th.optim.Adam(self.q_net.parameters(), lr=learning_rate)
        rng = np.random.default_rng(seed)
        first, stats = resume_fit(optimizer, rng, start)
        n = len(actions)
        self.q_net.set_training_mode(True)
        batches = -(-n // batch_size)
        for epoch in range(first, epochs):
            order = rng.permutation(n)
            total_margin = total_value = 0.0
            for b, begin in enumerate(range(0, n, batch_size)):
                if progress:                      # progress(done, total): minibatches of all epochs
                    progress(epoch * batches + b, epochs * batches)
                idx = th.as_tensor(order[begin:begin + batch_size], device=device)
                q = self.q_net(obs[idx])
                margin = large_margin_loss(q, masks[idx], actions[idx], self.margin).mean()
                q_e = q.gather(1, actions[idx].reshape(-1, 1))
                value = self._q_loss(q_e, returns[idx].reshape(-1, 1)).mean()
                loss = value + margin
                optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.q_net.parameters(), self.max_grad_norm)
                optimizer.step()
                total_margin += margin.item() * len(idx)
                total_value += value.item() * len(idx)
            with th.no_grad():
                q = self.q_net(obs[:20000])
                acc = (masked_argmax(q, masks[:20000]) == actions[:20000]).float().mean().item()
            stats = {"epoch": epoch + 1, "policy_loss": total_margin / n, "value_loss": total_value / n,
                     "accuracy": acc}
            log(f"demonstrations epoch {epoch + 1}/{epochs}: margin loss {stats['policy_loss']:.3f}, "
                f"value loss {stats['value_loss']:.3f}, agreement with the teacher {acc:.1%}")
            if on_epoch is not None:
                on_epoch(epoch + 1, optimizer, rng, stats)
        self.q_net.set_training_mode(False)
        self.q_net_target.load_state_dict(self.q_net.state_dict())
        if self.demo_weight > 0:
            self.keep_demonstrations(data)
        return stats
