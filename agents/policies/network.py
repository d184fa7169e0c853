"""A trained network as plain arrays: the one representation shared by self-play snapshots, export and bots.

An :class:`MLP` is a list of dense layers (weights, biases) with one activation between them, mapping an
observation to action logits (PPO) or Q-values (DQN), plus, for a game whose observation ends with a row of
features per action, the action-feature head's shared weights (``feature_weights``, added to every action's
score from its own row; agents/training/sb3/action_features.py). It is extracted from a stable-baselines3 model, runs in
numpy (self-play opponents in worker processes need neither torch nor SB3), saves to ``.npz`` (no pickle), and
converts to an ONNX graph for shipping (:mod:`.bot`).
"""

from __future__ import annotations

import numpy as np

def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


ACTIVATIONS = {"tanh": np.tanh, "relu": _relu}      # module-level functions: an MLP pickles to worker processes


class MLP:
    def __init__(self, weights: list[np.ndarray], biases: list[np.ndarray], activation: str,
                 feature_offset: int | None = None, feature_weights: np.ndarray | None = None):
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; known: {', '.join(ACTIVATIONS)}")
        if len(weights) != len(biases) or not weights:
            raise ValueError("an MLP needs as many bias vectors as weight matrices, and at least one layer")
        for k, (w, b) in enumerate(zip(weights, biases)):
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise ValueError(f"layer {k}: weights {w.shape} and biases {b.shape} do not fit")
            if k and w.shape[1] != weights[k - 1].shape[0]:
                raise ValueError(f"layer {k} takes {w.shape[1]} inputs but layer {k - 1} gives {weights[k - 1].shape[0]}")
        self.weights = [np.asarray(w, dtype=np.float32) for w in weights]   # (out, in), as torch stores them
        self.biases = [np.asarray(b, dtype=np.float32) for b in biases]
        self.activation = activation
        self._act = ACTIVATIONS[activation]
        self.feature_offset, self.feature_weights = None, None
        if feature_weights is not None:
            fw = np.asarray(feature_weights, dtype=np.float32).reshape(-1)
            if feature_offset is None or feature_offset + self.output_size * len(fw) != self.input_size:
                raise ValueError(f"action features: {self.output_size} rows of {len(fw)} from offset "
                                 f"{feature_offset} do not end the {self.input_size} inputs")
            self.feature_offset, self.feature_weights = int(feature_offset), fw

    @property
    def input_size(self) -> int:
        return self.weights[0].shape[1]

    @property
    def output_size(self) -> int:
        return self.weights[-1].shape[0]

    def forward(self, x: np.ndarray) -> np.ndarray:
        h = np.asarray(x, dtype=np.float32)
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w.T + b
            if k < last:
                h = self._act(h)
        if self.feature_weights is not None:
            rows = np.asarray(x, dtype=np.float32)[..., self.feature_offset:]
            rows = rows.reshape(*rows.shape[:-1], self.output_size, -1)
            h = h + rows @ self.feature_weights
        return h

    def feature_matrix(self) -> np.ndarray:
        """The action-feature head as one (actions, inputs) matrix (zero outside the rows): what export writes."""
        m = np.zeros((self.output_size, self.input_size), dtype=np.float32)
        size = len(self.feature_weights)
        for a in range(self.output_size):
            start = self.feature_offset + a * size
            m[a, start:start + size] = self.feature_weights
        return m

    # ----- files: npz, never pickle ------------------------------------------------------------------
    def to_arrays(self) -> dict:
        out = {"activation": np.array(self.activation)}
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            out[f"w{k}"], out[f"b{k}"] = w, b
        if self.feature_weights is not None:
            out["feature_offset"], out["feature_weights"] = np.array(self.feature_offset), self.feature_weights
        return out

    @classmethod
    def from_arrays(cls, arrays) -> "MLP":
        n = sum(1 for k in arrays if str(k)[:1] == "w" and str(k)[1:].isdigit())
        features = {}
        if "feature_weights" in arrays:
            features = dict(feature_offset=int(arrays["feature_offset"]), feature_weights=arrays["feature_weights"])
        return cls([arrays[f"w{k}"] for k in range(n)], [arrays[f"b{k}"] for k in range(n)],
                   str(arrays["activation"]), **features)

    def save(self, path) -> None:
        np.savez(path, **self.to_arrays())

    @classmethod
    def load(cls, path) -> "MLP":
        with np.load(path, allow_pickle=False) as f:
            return cls.from_arrays({k: f[k] for k in f.files})

    # ----- from stable-baselines3 ---------------------------------------------------------------------
    @classmethod
    def from_sb3(cls, model) -> "MLP":
        """The action head of a MaskablePPO (logits) or DQN (Q-values) MlpPolicy, with its action-feature head
        where it has one."""
        import torch.nn as nn
        policy = model.policy
        if hasattr(policy, "q_net"):                       # DQN: q_net.q_net is Linear/act/.../Linear
            modules = list(policy.q_net.q_net)
            scores = getattr(policy.q_net, "scores", None)
        else:                                              # PPO: shared extractor -> policy_net -> action_net
            head = policy.action_net
            scores = getattr(head, "scores", None)
            modules = list(policy.mlp_extractor.policy_net) + [head.linear if scores is not None else head]
        weights, biases, activation = [], [], None
        for m in modules:
            if hasattr(m, "as_linear"):                   # a layer that folds into one Linear (DQN's dueling head)
                m = m.as_linear()
            if isinstance(m, nn.Linear):
                weights.append(m.weight.detach().cpu().numpy().copy())
                biases.append(m.bias.detach().cpu().numpy().copy())
            elif isinstance(m, nn.Tanh):
                activation = "tanh"
            elif isinstance(m, nn.ReLU):
                activation = "relu"
            else:
                raise ValueError(f"cannot export layer {type(m).__name__}; kahve exports Linear/Tanh/ReLU MLPs")
        features = {}
        if scores is not None:
            offset, fw = scores.exported()
            features = dict(feature_offset=offset, feature_weights=fw)
        return cls(weights, biases, activation or "tanh", **features)


def masked_choice(scores: np.ndarray, mask: np.ndarray, temperature: float = 0.0, rng=None) -> int:
    """The best legal action (temperature 0) or a sample from softmax(scores / temperature) over legal ones."""
    legal = np.flatnonzero(mask)
    if len(legal) == 0:
        raise ValueError("no legal action in the mask")
    s = np.asarray(scores, dtype=np.float64)[legal]
    if temperature <= 0:
        return int(legal[int(np.argmax(s))])
    z = (s - s.max()) / temperature
    p = np.exp(z)
    p /= p.sum()
    rng = rng if rng is not None else np.random.default_rng()
    return int(legal[rng.choice(len(legal), p=p)])


class NetworkPolicy:
    """A :class:`MLP` as a Policy: masked argmax, or sampling with a temperature."""

    def __init__(self, mlp: MLP, temperature: float = 0.0, seed: int | None = None, name: str = "network"):
        self.mlp = mlp
        self.temperature = temperature
        self.rng = np.random.default_rng(seed)
        self.name = name

    def reset(self) -> None:
        pass

    def act(self, observation, action_mask, state=None) -> int:
        return masked_choice(self.mlp.forward(observation), action_mask, self.temperature, self.rng)
