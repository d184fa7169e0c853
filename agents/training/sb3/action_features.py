"""The action-feature head: every action scored from its own row of features, with weights all actions share.

Some games' observations end with a row of numbers per action (``Game.action_feature_size``; Pâsur's: what each
legal move takes and leaves, envs/pasur/appraisal.py). A flat output layer would have to learn what those
numbers mean once for every action id; this head adds ``GAIN * (row_a · w)`` to action ``a``'s score, one
weight vector ``w`` for all actions (as DouZero scores each legal move from its features), beside the usual
MLP over the whole observation. The exported :class:`~kahve.agents.policies.network.MLP` keeps ``GAIN * w``
and the rows' offset, so a bot file still maps an observation to scores with no game code.

Both algorithms use it: :class:`PPOPolicy` for MaskablePPO (logits) and
:class:`ActionFeatureQNetwork` for the masked DQN (Q-values).
"""

from __future__ import annotations

import torch as th
import torch.nn as nn
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor
from stable_baselines3.dqn.policies import QNetwork

#: the feature weights' multiplier: Adam moves every weight by about the learning rate a step, and rows of a few
#: tenths need weights of tens to separate moves as sharply as the MLP's logits do (measured in a prototype of
#: this head cloning Pâsur's heuristic from 40,000 demonstrations: one of its best moves in 88% of decisions at 5,
#: 91% at 50; 96% at 50 from 150,000)
GAIN = 50.0


def feature_layout(game) -> tuple[int, int, int]:
    """(offset of the rows in the observation, actions, features per row) of ``game``'s action features."""
    size = game.action_feature_size
    if size <= 0:
        raise ValueError(f"{game.name} has no action features")
    return game.observation_size - game.num_actions * size, game.num_actions, size


class FeatureScores(nn.Module):
    """``GAIN * rows @ w`` for a batch of observations: (batch, actions)."""

    def __init__(self, offset: int, actions: int, size: int):
        super().__init__()
        self.offset, self.actions, self.size = offset, actions, size
        self.weight = nn.Parameter(th.zeros(size))

    def rows(self, observation: th.Tensor) -> th.Tensor:
        """The observations' action rows: (batch, actions, size)."""
        return observation[:, self.offset:].reshape(-1, self.actions, self.size)

    def forward(self, observation: th.Tensor) -> th.Tensor:
        return GAIN * (self.rows(observation) @ self.weight)

    def exported(self) -> tuple[int, "object"]:
        """(offset, GAIN * w) as the MLP file keeps them."""
        return self.offset, (GAIN * self.weight.detach()).cpu().numpy().copy()


# ----- MaskablePPO ------------------------------------------------------------------------------------------------
class _Extractor(MlpExtractor):
    """SB3's MlpExtractor whose actor latent also carries the observation (for the action-feature head to read
    the rows; ``forward`` calls ``forward_actor``)."""

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return th.cat([self.policy_net(features), features], dim=1)


class _PolicyHead(nn.Module):
    """The action net: a Linear over the MLP's last hidden layer plus the rows' scores."""

    def __init__(self, hidden: int, scores: FeatureScores):
        super().__init__()
        self.hidden = hidden
        self.linear = nn.Linear(hidden, scores.actions)
        self.scores = scores

    def forward(self, latent: th.Tensor) -> th.Tensor:
        h, observation = latent[:, :self.hidden], latent[:, self.hidden:]
        return self.linear(h) + self.scores(observation)


class PPOPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's MlpPolicy with the action-feature head (``action_features=(offset, actions, size)``)."""

    def __init__(self, *args, action_features: tuple, **kwargs):
        self.action_features = tuple(action_features)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = _Extractor(self.features_dim, net_arch=self.net_arch, activation_fn=self.activation_fn,
                                        device=self.device)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        hidden = self.mlp_extractor.latent_dim_pi
        self.action_net = _PolicyHead(hidden, FeatureScores(*self.action_features)).to(self.device)
        if self.ortho_init:                                  # as SB3 starts its action net: near-uniform logits
            nn.init.orthogonal_(self.action_net.linear.weight, gain=0.01)
            nn.init.zeros_(self.action_net.linear.bias)
        # the optimizer SB3 built holds the replaced layer's parameters: build it again over the current ones
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict:
        return {**super()._get_constructor_parameters(), "action_features": self.action_features}


# ----- the masked DQN ---------------------------------------------------------------------------------------------
class ActionFeatureQNetwork(QNetwork):
    """SB3's QNetwork (plain or dueling ``q_net``) plus the rows' scores."""

    def __init__(self, *args, action_features: tuple, q_net: nn.Module | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        if q_net is not None:
            self.q_net = q_net
        self.scores = FeatureScores(*action_features)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        features = self.extract_features(obs, self.features_extractor)
        return self.q_net(features) + self.scores(features)
