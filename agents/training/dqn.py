"""DQN with action masks, on top of stable-baselines3's DQN.

Masks enter in three places (masking only action selection is a known mistake of masked DQNs):

1. exploration: epsilon-greedy picks a uniformly random *legal* action, and the warm-up too;
2. acting: the greedy action is the best legal one (``predict(..., action_masks=...)``);
3. the bootstrap target: ``r + gamma * max over the next state's LEGAL actions of Q_target(s', a')``.
   The replay buffer stores the next state's mask: ``info["action_mask"]`` if the env returns it, else the
   env's ``action_masks()`` right after the step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch as th
import torch.nn.functional as F
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3 import DQN
from stable_baselines3.common.buffers import ReplayBuffer

ILLEGAL = -1e9   # a finite "minus infinity": 0 * ILLEGAL stays 0 for terminal transitions


def masked_max(q_values: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """Max over legal actions per row (``masks`` bool, same shape as ``q_values``)."""
    return th.where(masks, q_values, th.full_like(q_values, ILLEGAL)).max(dim=1).values


def masked_td_target(rewards: th.Tensor, dones: th.Tensor, next_q: th.Tensor, next_masks: th.Tensor,
                     gamma) -> th.Tensor:
    """The 1-step TD target with the max restricted to the next state's legal actions."""
    return rewards + (1 - dones) * gamma * masked_max(next_q, next_masks).reshape(-1, 1)


class MaskedSamples(NamedTuple):
    observations: th.Tensor
    actions: th.Tensor
    next_observations: th.Tensor
    dones: th.Tensor
    rewards: th.Tensor
    next_action_masks: th.Tensor


class MaskedReplayBuffer(ReplayBuffer):
    """A replay buffer that also stores the legal-action mask of every next observation."""

    def __init__(self, buffer_size, observation_space, action_space, device="auto", n_envs=1, **kwargs):
        super().__init__(buffer_size, observation_space, action_space, device, n_envs, **kwargs)
        self.next_action_masks = np.ones((self.buffer_size, self.n_envs, int(action_space.n)), dtype=bool)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        for i, info in enumerate(infos):
            mask = info.get("action_mask")
            if mask is not None:
                self.next_action_masks[self.pos, i] = mask
        super().add(obs, next_obs, action, reward, done, infos)

    def _get_samples(self, batch_inds, env=None) -> MaskedSamples:
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        if self.optimize_memory_usage:
            next_obs = self.observations[(batch_inds + 1) % self.buffer_size, env_indices, :]
        else:
            next_obs = self.next_observations[batch_inds, env_indices, :]
        data = (
            self._normalize_obs(self.observations[batch_inds, env_indices, :], env),
            self.actions[batch_inds, env_indices, :],
            self._normalize_obs(next_obs, env),
            (self.dones[batch_inds, env_indices] * (1 - self.timeouts[batch_inds, env_indices])).reshape(-1, 1),
            self._normalize_reward(self.rewards[batch_inds, env_indices].reshape(-1, 1), env),
        )
        masks = th.as_tensor(self.next_action_masks[batch_inds, env_indices], device=self.device)
        return MaskedSamples(*tuple(map(self.to_torch, data)), masks)


class MaskedDQN(DQN):
    """SB3's DQN with masked exploration, acting and bootstrap target. Train it on an env with
    ``action_masks()`` (the mask of its latest observation)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("replay_buffer_class", MaskedReplayBuffer)
        super().__init__(*args, **kwargs)

    def _masked_random(self, masks: np.ndarray) -> np.ndarray:
        return np.array([np.random.choice(np.flatnonzero(m)) for m in masks])

    def _store_transition(self, replay_buffer, buffer_action, new_obs, reward, dones, infos) -> None:
        # the mask of every new observation, for the bootstrap target. A finished env has already been reset
        # by the VecEnv, so its mask is the next episode's; its target does not bootstrap (done), except for a
        # truncation, where the terminal state has no legal action of its own anyway.
        masks = get_action_masks(self.env)
        for info, mask in zip(infos, masks):
            info.setdefault("action_mask", mask)
        super()._store_transition(replay_buffer, buffer_action, new_obs, reward, dones, infos)

    def _sample_action(self, learning_starts, action_noise=None, n_envs=1):
        masks = get_action_masks(self.env)
        if self.num_timesteps < learning_starts:
            action = self._masked_random(masks)
        else:
            action, _ = self.predict(self._last_obs, deterministic=False, action_masks=masks)
        return action, action

    def predict(self, observation, state=None, episode_start=None, deterministic=False, action_masks=None):
        obs = np.asarray(observation, dtype=np.float32)
        single = obs.ndim == 1
        obs = obs.reshape(1, -1) if single else obs
        masks = None if action_masks is None else np.asarray(action_masks, dtype=bool).reshape(len(obs), -1)
        if not deterministic and masks is not None and np.random.rand() < self.exploration_rate:
            action = self._masked_random(masks)
        elif not deterministic and masks is None and np.random.rand() < self.exploration_rate:
            action = np.array([self.action_space.sample() for _ in range(len(obs))])
        else:
            with th.no_grad():
                q = self.q_net(th.as_tensor(obs, device=self.device)).cpu().numpy()
            if masks is not None:
                q = np.where(masks, q, ILLEGAL)
            action = q.argmax(axis=1)
        return (action[0] if single else action), state

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        losses = []
        for _ in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            with th.no_grad():
                next_q = self.q_net_target(data.next_observations)
                target = masked_td_target(data.rewards, data.dones, next_q, data.next_action_masks, self.gamma)
            current = th.gather(self.q_net(data.observations), dim=1, index=data.actions.long())
            loss = F.smooth_l1_loss(current, target)
            losses.append(loss.item())
            self.policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))
