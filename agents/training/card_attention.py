"""The card-attention network (agents/policies/card_attention.py) in torch, to train it.

The same function as the arrays' ONNX graph, with one shortcut for speed: only the cards that are in some block
become tokens (as many as the batch's most, padded and masked), where the graph runs all of them with the absent ones
masked; the attention gives an absent card no weight either way, and every other step is per token.
"""

from __future__ import annotations

import numpy as np
import torch as th

from ..policies.card_attention import OUTER_ARRAYS, CardAttention, CardLayout

NEG = -1e9          # the score of an action no present card names


class CardAttentionNet(th.nn.Module):
    def __init__(self, layout: CardLayout, width: int = 64, layers: int = 4, heads: int = 4):
        super().__init__()
        self.layout, self.heads = layout, heads
        self.token = th.nn.Linear(layout.token_size, width)
        self.context = th.nn.Linear(layout.context_size, width)
        layer = th.nn.TransformerEncoderLayer(width, heads, 2 * width, dropout=0.0, batch_first=True,
                                              norm_first=True)
        self.layers = th.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).layers
        self.norm = th.nn.LayerNorm(width)
        self.head = th.nn.Linear(width, len(layout.actions))
        self.register_buffer("identity", th.tensor(layout.card_identity()), persistent=False)

    def forward(self, x: th.Tensor) -> th.Tensor:
        """Observations [batch, size] -> the actions' scores [batch, num_actions] (NEG where no card names one)."""
        lay, batch = self.layout, len(x)
        x = x.float()
        zones = th.stack([x[:, z:z + lay.cards] for z in lay.zones], 2)
        rows = x[:, lay.rows_at:lay.rows_at + lay.num_actions * lay.row].reshape(batch, lay.num_actions, lay.row)
        per_action = [rows[:, a:a + lay.cards] for a in lay.actions]        # the rows of the actions naming a card
        feats = th.cat([self.identity.expand(batch, -1, -1), zones] + per_action, 2)
        present = zones.sum(2) > 0
        # the present cards first, in card order (a stable sort of absent-ness), as many tokens as the most of them
        idx = th.argsort((~present).float(), dim=1, stable=True)[:, :max(1, int(present.sum(1).max()))]
        tokens = feats.gather(1, idx[:, :, None].expand(-1, -1, feats.shape[2]))
        pad = ~present.gather(1, idx)
        context = th.cat([x[:, s:e] for s, e in lay.context], 1)
        h = th.cat([self.context(context)[:, None], self.token(tokens)], 1)
        mask = th.cat([th.zeros(batch, 1, dtype=th.bool, device=x.device), pad], 1)
        for layer in self.layers:
            h = layer(h, src_key_padding_mask=mask)
        scores = self.head(self.norm(h[:, 1:])).masked_fill(pad[:, :, None], NEG)      # [batch, tokens, heads]
        out = th.full((batch, lay.num_actions), NEG, device=x.device)
        for i, a in enumerate(lay.actions):         # idx holds each card once: one score per action
            out = out.scatter(1, idx + a, scores[:, :, i])
        return out

    def to_arrays(self) -> CardAttention:
        state = {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}
        arrays = {k: state[k] for k in OUTER_ARRAYS} | {k: v for k, v in state.items() if k.startswith("layers.")}
        return CardAttention(self.layout, arrays, self.heads)

    def load_arrays(self, net: CardAttention) -> None:
        """Start from a trained network's arrays (the same sizes)."""
        self.load_state_dict({k: th.tensor(v) for k, v in net.arrays.items()})


# ----- the recipe the card-attention networks are fitted with ---------------------------------------------------
def one_cycle_adamw(parameters, lr: float, steps: int):
    """AdamW and a one-cycle learning rate with a 5% warm-up over ``steps`` steps: a transformer wants the warm-up
    (and gradients clipped at 1.0 by the caller); without them it diverged at 1e-3. Returns (optimizer, schedule)."""
    optimizer = th.optim.AdamW(parameters, lr=lr, weight_decay=1e-4)
    return optimizer, th.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=steps, pct_start=0.05)


def minibatches(indices: np.ndarray, batch: int, rng: np.random.Generator):
    """One epoch over ``indices`` in a fresh random order, as index tensors of ``batch`` (the remainder dropped)."""
    order = rng.permutation(indices)
    for s in range(len(order) // batch):
        yield th.tensor(order[s * batch:(s + 1) * batch])
