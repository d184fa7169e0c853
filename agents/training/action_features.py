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
    """SB3's MlpExtractor with two options: the actor reads only the first ``actor_inputs`` numbers of the
    observation (``network.critic: hands``: the rest is for the critic, :mod:`.critic`), and its latent also
    carries what it read (``with_rows``: for the action-feature head to read the rows; ``forward`` calls
    ``forward_actor``)."""

    def __init__(self, feature_dim: int, net_arch, activation_fn, device, actor_inputs: int | None = None,
                 with_rows: bool = False):
        super().__init__(feature_dim, net_arch=net_arch, activation_fn=activation_fn, device=device)
        self.actor_inputs = actor_inputs
        self.with_rows = with_rows
        if actor_inputs is not None and actor_inputs != feature_dim:
            actor = MlpExtractor(actor_inputs, net_arch=dict(pi=net_arch["pi"], vf=[]), activation_fn=activation_fn,
                                 device=device)
            self.policy_net = actor.policy_net

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        seen = features if self.actor_inputs is None else features[:, :self.actor_inputs]
        latent = self.policy_net(seen)
        return th.cat([latent, seen], dim=1) if self.with_rows else latent


#: the per-move layer's output multiplier (its output weights start at 0 and move by about the learning rate an
#: Adam step, as GAIN's)
MOVE_LAYER_GAIN = 10.0


class MoveLayer(nn.Module):
    """A hidden layer per move: ``v · relu(U row_a + V h + c)`` for every action ``a``, where ``h`` is the MLP's last
    hidden layer: how much a move's numbers matter can depend on the position (DouZero scores each move from the
    state and the move together). ``v`` starts at 0, so a network given this layer plays as it did without."""

    def __init__(self, hidden: int, row_size: int, width: int):
        super().__init__()
        self.state = nn.Linear(hidden, width)
        self.move = nn.Linear(row_size, width, bias=False)
        self.out = nn.Parameter(th.zeros(width))

    def forward(self, h: th.Tensor, rows: th.Tensor) -> th.Tensor:
        """``rows``: :meth:`FeatureScores.rows` of the observations whose last hidden layer is ``h``."""
        z = th.relu(self.move(rows) + self.state(h)[:, None, :])
        return MOVE_LAYER_GAIN * (z @ self.out)

    def exported(self) -> dict:
        """Its arrays as :class:`~kahve.agents.policies.network.MLP` keeps them (the gain folded into the output)."""
        def a(t):
            return t.detach().cpu().numpy().copy()
        return {"move_state_w": a(self.state.weight), "move_state_b": a(self.state.bias),
                "move_row_w": a(self.move.weight), "move_out": a(MOVE_LAYER_GAIN * self.out)}

    def load_exported(self, arrays: dict, source: str) -> None:
        """The inverse of :meth:`exported` (``init_from`` a bot file with this layer)."""
        import numpy as np
        if tuple(arrays["move_state_w"].shape) != tuple(self.state.weight.shape):
            raise ValueError(f"{source}: its per-move layer is {arrays['move_state_w'].shape[0]} wide; this config's "
                             f"network.move_layer is {self.state.weight.shape[0]}")
        with th.no_grad():
            for param, value in ((self.state.weight, arrays["move_state_w"]), (self.state.bias, arrays["move_state_b"]),
                                 (self.move.weight, arrays["move_row_w"]),
                                 (self.out, np.asarray(arrays["move_out"]) / MOVE_LAYER_GAIN)):
                param.copy_(th.as_tensor(np.array(value, dtype=np.float32)))


class _PolicyHead(nn.Module):
    """The action net: a Linear over the MLP's last hidden layer plus the rows' scores (and the per-move layer's)."""

    def __init__(self, hidden: int, scores: FeatureScores, move_width: int = 0):
        super().__init__()
        self.hidden = hidden
        self.linear = nn.Linear(hidden, scores.actions)
        self.scores = scores
        self.moves = MoveLayer(hidden, scores.size, move_width) if move_width else None

    def forward(self, latent: th.Tensor) -> th.Tensor:
        h, observation = latent[:, :self.hidden], latent[:, self.hidden:]
        out = self.linear(h) + self.scores(observation)
        return out if self.moves is None else out + self.moves(h, self.scores.rows(observation))


class PPOPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's MlpPolicy with kahve's two options: the action-feature head (``action_features=(offset,
    actions, size)``) and an actor that reads only the first ``actor_inputs`` numbers of the observation (the
    critic reads all: :mod:`.critic`). With neither it is SB3's MlpPolicy."""

    def __init__(self, *args, action_features: tuple | None = None, actor_inputs: int | None = None,
                 move_layer: int = 0, **kwargs):
        self.action_features = tuple(action_features) if action_features else None
        self.actor_inputs = actor_inputs
        self.move_layer = move_layer
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = _Extractor(self.features_dim, net_arch=self.net_arch, activation_fn=self.activation_fn,
                                        device=self.device, actor_inputs=self.actor_inputs,
                                        with_rows=self.action_features is not None)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        if self.action_features is None:
            return
        hidden = self.mlp_extractor.latent_dim_pi
        self.action_net = _PolicyHead(hidden, FeatureScores(*self.action_features), self.move_layer).to(self.device)
        if self.ortho_init:                                  # as SB3 starts its action net: near-uniform logits
            nn.init.orthogonal_(self.action_net.linear.weight, gain=0.01)
            nn.init.zeros_(self.action_net.linear.bias)
        # the optimizer SB3 built holds the replaced layer's parameters: build it again over the current ones
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict:
        return {**super()._get_constructor_parameters(), "action_features": self.action_features,
                "actor_inputs": self.actor_inputs, "move_layer": self.move_layer}


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
