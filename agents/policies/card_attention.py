"""A network that reads the cards as a set: self-attention over one token per card, as plain arrays and as ONNX.

An MLP reads a card-indexed observation by card name: what it learns about the 7♣ it has to learn again for the
7♥. Here every card is a token built from the same numbers for every card (its rank and suit, which of the
observation's card blocks hold it, and the feature rows of the actions that name it), one more token reads the
rest of the observation, and a few pre-norm transformer layers let the tokens look at each other before each card
token scores the actions that name it. The weights are shared across cards, so a position learned with one rank
carries over to the others. Cards in none of the blocks (captured, out of play) are masked out of the attention;
the context token reads what the captured piles add up to.

Pâsur's last-hand expert is one (docs/bots.md, "pasur/ppo"): trained in
torch by ``agents/training/card_attention.py``, kept here as arrays (:class:`CardAttention`), and written into a bot
file by :func:`CardAttention.graph` (:func:`~kahve.agents.policies.bot.export_onnx`), where it runs in onnxruntime.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

LN_EPS = 1e-5           # torch's LayerNorm default, which the training module uses
MASKED = -1e9           # the attention score of a card that is in none of the blocks


@dataclass(frozen=True)
class CardLayout:
    """Where a card's token and the context token read the observation.

    ``zones``: the offsets of the card-indexed 0/1 blocks that make a card a token (its hand, the pool, ...), each
    block ``cards`` long. ``rows_at``: where the per-action feature rows start (``row`` numbers each).
    ``actions``: for each scoring head, the first action id of the ``cards`` actions that name a card in card order
    (Pâsur: PLAY(card) at 0, TAKE(card) at 52); ``num_actions`` in all. ``context``: the ``[start, end)`` slices
    of the observation the context token reads. A card id is ``ranks * suit + rank``."""
    cards: int
    ranks: int
    zones: tuple
    rows_at: int
    row: int
    actions: tuple
    num_actions: int
    context: tuple

    @property
    def token_size(self) -> int:
        return self.ranks + self.cards // self.ranks + len(self.zones) + len(self.actions) * self.row

    @property
    def context_size(self) -> int:
        return sum(end - start for start, end in self.context)

    def as_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()} | {
            "context": [list(s) for s in self.context]}

    @classmethod
    def from_dict(cls, d: dict) -> "CardLayout":
        return cls(d["cards"], d["ranks"], tuple(d["zones"]), d["rows_at"], d["row"], tuple(d["actions"]),
                   d["num_actions"], tuple(tuple(s) for s in d["context"]))

    def card_identity(self) -> np.ndarray:
        """[cards, ranks + suits]: each card's rank and suit, one-hot."""
        c = np.arange(self.cards)
        out = np.zeros((self.cards, self.ranks + self.cards // self.ranks), np.float32)
        out[c, c % self.ranks] = 1.0
        out[c, self.ranks + c // self.ranks] = 1.0
        return out


#: the arrays of one layer, as torch's nn.TransformerEncoderLayer names them (norm_first, relu)
LAYER_ARRAYS = ("self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias")
#: the arrays outside the layers: the token and context embeddings, the final norm and the scoring heads
OUTER_ARRAYS = ("token.weight", "token.bias", "context.weight", "context.bias", "norm.weight", "norm.bias",
                "head.weight", "head.bias")


class CardAttention:
    """The arrays of a trained card-attention network and its :class:`CardLayout`; ``heads`` attention heads."""

    ARCHITECTURE = "card attention"     # what :attr:`description` calls it in a bot file's metadata

    def __init__(self, layout: CardLayout, arrays: dict, heads: int):
        self.layout, self.heads = layout, int(heads)
        self.arrays = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
        self.layers = sum(1 for k in self.arrays if k.endswith(".self_attn.in_proj_weight"))
        missing = [k for k in OUTER_ARRAYS if k not in self.arrays] + [
            f"layers.{i}.{k}" for i in range(self.layers) for k in LAYER_ARRAYS if f"layers.{i}.{k}" not in self.arrays]
        if missing or not self.layers:
            raise ValueError(f"a card-attention network needs its arrays; missing: {', '.join(missing) or 'layers'}")
        self.width = self.arrays["token.weight"].shape[0]
        want = {"token.weight": (self.width, layout.token_size), "context.weight": (self.width, layout.context_size),
                "head.weight": (len(layout.actions), self.width)}
        wrong = [f"{k} {self.arrays[k].shape} (not {v})" for k, v in want.items() if self.arrays[k].shape != v]
        if wrong or self.width % self.heads:
            raise ValueError("the card-attention arrays do not fit the layout: " + (", ".join(wrong) or
                             f"{self.width} units in {self.heads} heads"))

    @property
    def input_size(self) -> int:
        """The observation's size: it ends with the action rows."""
        return self.layout.rows_at + self.layout.num_actions * self.layout.row

    @property
    def output_size(self) -> int:
        return self.layout.num_actions

    @property
    def description(self) -> dict:
        """What the bot file's metadata records of it."""
        return {"architecture": self.ARCHITECTURE, "width": self.width, "layers": self.layers, "heads": self.heads,
                "layout": self.layout.as_dict()}

    @classmethod
    def from_graph(cls, description: dict, initializers: dict) -> "CardAttention":
        """Read back what :meth:`graph` wrote: ``description`` as :attr:`description` gives it, ``initializers``
        the graph's arrays by name, the prefix taken off (a weight matrix is stored transposed, as ``NAME.t``)."""
        names = list(OUTER_ARRAYS) + [f"layers.{i}.{k}" for i in range(int(description["layers"]))
                                      for k in LAYER_ARRAYS]
        arrays = {k: initializers[f"{k}.t"].T if f"{k}.t" in initializers else initializers[k]
                  for k in names if k in initializers or f"{k}.t" in initializers}
        return cls(CardLayout.from_dict(description["layout"]), arrays, description["heads"])

    def graph(self, prefix: str, output: str) -> tuple[list, list]:
        """The ONNX nodes and initializers from ``observation`` to ``output`` ([batch, num_actions]), every other
        name prefixed with ``prefix``; opset 13, so the layer norm is written out."""
        from onnx import helper, numpy_helper
        lay, d, heads = self.layout, self.width, self.heads
        nodes, inits = [], []

        def n(name):
            return prefix + name

        def const(name, value, dtype=np.float32):       # a constant by name, written once
            if n(name) not in {i.name for i in inits}:
                inits.append(numpy_helper.from_array(np.asarray(value, dtype), n(name)))
            return n(name)

        def op(kind, inputs, name, **attrs):
            nodes.append(helper.make_node(kind, inputs, [n(name)], **attrs))
            return n(name)

        axis1, axis2 = const("axis1", [1], np.int64), const("axis2", [2], np.int64)

        def cut(x, start, end, axis, name):
            return op("Slice", [x, const(f"{name}_from", [start], np.int64), const(f"{name}_to", [end], np.int64),
                          axis], name)

        def linear(x, key, name, weight=".weight", bias=".bias"):          # x @ W.T + b over the last axis
            w = const(f"{key}{weight}.t", self.arrays[key + weight].T)
            return op("Add", [op("MatMul", [x, w], f"{name}_mm"), const(key + bias, self.arrays[key + bias])], name)

        def layer_norm(x, key, name):
            mean = op("ReduceMean", [x], f"{name}_mean", axes=[-1])
            centred = op("Sub", [x, mean], f"{name}_c")
            var = op("ReduceMean", [op("Mul", [centred, centred], f"{name}_sq")], f"{name}_var", axes=[-1])
            std = op("Sqrt", [op("Add", [var, const("eps", LN_EPS)], f"{name}_ve")], f"{name}_std")
            scaled = op("Mul", [op("Div", [centred, std], f"{name}_n"), const(f"{key}.weight", self.arrays[
                f"{key}.weight"])], f"{name}_w")
            return op("Add", [scaled, const(f"{key}.bias", self.arrays[f"{key}.bias"])], name)

        obs = "observation"
        # every card's token: [batch, cards, token_size]
        zones = [op("Unsqueeze", [cut(obs, z, z + lay.cards, axis1, f"zone{i}"), axis2], f"zone{i}_u")
                 for i, z in enumerate(lay.zones)]
        zone = op("Concat", zones, "zones", axis=2)
        rows = op("Reshape", [cut(obs, lay.rows_at, lay.rows_at + lay.num_actions * lay.row, axis1, "rows_flat"),
                              const("rows_shape", [0, lay.num_actions, lay.row], np.int64)], "rows")
        per_head = [cut(rows, a, a + lay.cards, axis1, f"rows{i}") for i, a in enumerate(lay.actions)]
        batch = cut(op("Shape", [zone], "zone_shape"), 0, 1, const("axis0", [0], np.int64), "batch")
        identity = op("Expand", [const("identity", lay.card_identity()[None]),
                                 op("Concat", [batch,
                                               const("id_shape", [lay.cards, lay.card_identity().shape[1]], np.int64)],
                                    "identity_shape", axis=0)], "identities")
        token_in = op("Concat", [identity, zone] + per_head, "token_in", axis=2)
        # only the cards in some block become tokens, the present ones first in card order (as in training): the
        # K = most present cards of the batch, by TopK over present * cards + (cards - 1 - card), all distinct
        present = op("Cast", [op("Greater", [op("ReduceSum", [zone, axis2], "present_n", keepdims=0),
                                             const("present_half", 0.5)], "present_b")], "present", to=1)
        order_key = op("Add", [op("Mul", [present, const("cards_f", float(lay.cards))], "present_k"),
                               const("card_rank", lay.cards - 1 - np.arange(lay.cards, dtype=np.float32))], "order_key")
        most = op("Max", [op("Cast", [op("ReduceMax", [op("ReduceSum", [present, axis1], "present_count",
                                                          keepdims=0)], "most_f", keepdims=1)], "most_i", to=7),
                          const("one", [1], np.int64)], "k")
        nodes.append(helper.make_node("TopK", [order_key, most], [n("top_key"), n("idx")], axis=1, largest=1,
                                      sorted=1))
        idx = n("idx")                                                                           # [batch, K]
        idx3 = op("Unsqueeze", [idx, axis2], "idx3")

        def gather_tokens(x, width, name):                  # x [batch, cards, width] -> [batch, K, width]
            shape = op("Concat", [op("Shape", [idx], f"{name}_ks"), const(f"{name}_w", [width], np.int64)],
                       f"{name}_shape", axis=0)
            return op("GatherElements", [x, op("Expand", [idx3, shape], f"{name}_idx")], name, axis=1)

        token = gather_tokens(token_in, lay.token_size, "token")
        # the attention mask: 0 for a present card, MASKED for a padding one; the context token is always there
        absent = op("Sub", [const("one_f", 1.0), op("GatherElements", [present, idx], "token_present", axis=1)],
                    "absent")
        key_mask = op("Concat", [op("Mul", [cut(absent, 0, 1, axis1, "absent0"), const("zero_f", 0.0)], "ctx_mask"),
                                 absent], "key_absent", axis=1)
        bias = op("Unsqueeze", [op("Mul", [key_mask, const("masked", MASKED)], "key_bias"),
                                 const("axes12", [1, 2], np.int64)], "attn_bias")
        context = op("Concat", [cut(obs, s, e, axis1, f"ctx{i}") for i, (s, e) in enumerate(lay.context)], "ctx",
                     axis=1)
        ctx_token = op("Unsqueeze", [linear(context, "context", "ctx_emb"), axis1], "ctx_token")
        h = op("Concat", [ctx_token, linear(token, "token", "tok_emb")], "h_in", axis=1)        # [batch, 1+K, d]
        dh = d // heads
        split = const("split_shape", [0, 0, heads, dh], np.int64)
        merge = const("merge_shape", [0, 0, d], np.int64)
        for i in range(self.layers):
            key = f"layers.{i}"
            x = layer_norm(h, f"{key}.norm1", f"l{i}_n1")
            qkv = linear(x, f"{key}.self_attn.in_proj", f"l{i}_qkv", "_weight", "_bias")
            q, k, v = (op("Transpose", [op("Reshape", [cut(qkv, j * d, (j + 1) * d, axis2, f"l{i}_{part}_flat"), split],
                                           f"l{i}_{part}_split")], f"l{i}_{part}", perm=[0, 2, 1, 3])
                       for j, part in enumerate("qkv"))
            scores = op("Mul", [op("MatMul", [q, op("Transpose", [k], f"l{i}_kt", perm=[0, 1, 3, 2])], f"l{i}_qk"),
                                const(f"l{i}_scale", 1.0 / np.sqrt(dh))], f"l{i}_scores")
            weights = op("Softmax", [op("Add", [scores, bias], f"l{i}_masked")], f"l{i}_attn", axis=-1)
            attended = op("Reshape", [op("Transpose", [op("MatMul", [weights, v], f"l{i}_av")], f"l{i}_avt",
                                         perm=[0, 2, 1, 3]), merge], f"l{i}_merged")
            h = op("Add", [h, linear(attended, f"{key}.self_attn.out_proj", f"l{i}_proj")], f"l{i}_h1")
            x = layer_norm(h, f"{key}.norm2", f"l{i}_n2")
            ff = linear(op("Relu", [linear(x, f"{key}.linear1", f"l{i}_ff1")], f"l{i}_relu"), f"{key}.linear2",
                        f"l{i}_ff2")
            h = op("Add", [h, ff], f"l{i}_h2")
        tokens_out = op("Slice", [h, const("from1", [1], np.int64), const("to_end", [2**62], np.int64), axis1],
                        "tokens_out")
        token_scores = linear(layer_norm(tokens_out, "norm", "final_norm"), "head", "token_scores")  # [batch, K, heads]
        # back to card order: every card's scores, 0 for a card that was no token
        heads_n = len(lay.actions)
        zeros = op("Expand", [const("zeros", np.zeros((1, lay.cards, heads_n))),
                              op("Concat", [batch, const("zeros_shape", [lay.cards, heads_n], np.int64)],
                                 "zeros_to", axis=0)],
                   "zeros_b")
        shape = op("Concat", [op("Shape", [idx], "scores_ks"), const("heads_n", [heads_n], np.int64)], "scores_shape",
                   axis=0)
        scores = op("ScatterElements", [zeros, op("Expand", [idx3, shape], "scores_idx"), token_scores],
                    "card_scores", axis=1)                                                      # [batch, cards, heads]
        by_head = op("Transpose", [scores], "by_head", perm=[0, 2, 1])                          # [batch, heads, cards]
        flat = op("Reshape", [by_head, const("flat_shape", [0, len(lay.actions) * lay.cards], np.int64)], "flat")
        # actions in the layout's order; an action no head names scores 0 (none does in Pâsur)
        order = np.zeros(lay.num_actions, np.int64)
        named = np.zeros(lay.num_actions, bool)
        for i, a in enumerate(lay.actions):
            order[a:a + lay.cards] = i * lay.cards + np.arange(lay.cards)
            named[a:a + lay.cards] = True
        gathered = op("Gather", [flat, const("order", order, np.int64)], "gathered", axis=1)
        nodes.append(helper.make_node("Mul", [gathered, const("named", named.astype(np.float32))], [output]))
        return nodes, inits
