"""Weighted pools of opponents for training: baselines by spec, and frozen snapshots of the learner.

An entry is ``(spec, weight)``, where spec is a policy spec string (``random``, ``heuristic``,
``ismcts:50``, a bot file) or a :class:`~.mlp.MLP` snapshot of the learner. Each episode draws one entry
per opponent side with probability proportional to its weight. Policies are built once per env (each
:class:`~.learner_env.LearnerEnv` keeps its own, seeded from its own stream), so an env's trajectory never
depends on which other envs share its process: every vector-env layout deals the same games for the same
seeds. A pool is plain data, so it travels to env processes and into checkpoints (as ``.npz`` snapshots and a
JSON list, never a pickle).

Network opponents (self-play snapshots, bot files) can decide for many games in one forward pass:
:func:`batch_group` says which policies share a network, :func:`decide_batch` decides for all of them.
"""

from __future__ import annotations

import itertools
import json
import math
from bisect import bisect_right
from pathlib import Path

import numpy as np

from ...policies.bot import Bot
from ...policies.network import MLP, NetworkPolicy, masked_choice
from ...policies.rollout import network_scorer
from ...policies.specs import make_policy


class OpponentPool:
    """``entries``: ``(spec, weight)`` pairs. ``ids`` name the entries for league statistics (stable while
    snapshots come and go: a baseline's id is its spec, a snapshot's is given when it joins)."""

    def __init__(self, entries: list[tuple[object, float]], ids: list[str] | None = None):
        if not entries:
            raise ValueError("an opponent pool needs at least one entry")
        for spec, weight in entries:
            if not (isinstance(spec, (str, MLP))):
                raise ValueError(f"an opponent is a policy spec or a snapshot, not {spec!r}")
            if (isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight)
                    or weight <= 0):
                raise ValueError(f"opponent {spec!r}: weight must be positive, got {weight!r}")
        self.entries = list(entries)
        self.ids = list(ids) if ids is not None else self.names()
        if len(self.ids) != len(self.entries):
            raise ValueError(f"an opponent pool of {len(self.entries)} entries needs as many ids, got {self.ids!r}")
        self._init_draws()

    def _init_draws(self) -> None:
        self._cache: dict[int, object] = {}
        self._bots: dict[int, object] = {}        # bot files loaded in this process, by entry
        self._cum_weights = list(itertools.accumulate(w for _, w in self.entries))   # what choices() would build
        self._total = self._cum_weights[-1] + 0.0

    def __getstate__(self):
        return {"entries": self.entries, "ids": self.ids}

    def __setstate__(self, state):
        self.entries = state["entries"]
        self.ids = state.get("ids") or self.names()
        self._init_draws()

    def names(self) -> list[str]:
        out, k = [], 0
        for spec, _ in self.entries:
            if isinstance(spec, MLP):
                out.append(f"snapshot_{k}")
                k += 1
            else:
                out.append(spec)
        return out

    def draw(self, rng, game, cache: dict | None = None):
        """One opponent policy, drawn by weight with ``rng`` (a ``random.Random``). A policy is built on its
        first draw (seeded from ``rng``) and kept in ``cache`` (an env's own dict; default: the pool's)."""
        return self.policy(self.draw_index(rng), rng, game, cache)

    def draw_index(self, rng) -> int:
        """The index of one entry, drawn by weight with ``rng``: what ``rng.choices(range(n),
        cum_weights=...)[0]`` draws, without its list and call overhead (one draw per opponent an episode)."""
        return bisect_right(self._cum_weights, rng.random() * self._total, 0, len(self._cum_weights) - 1)

    def policy(self, k: int, rng, game, cache: dict | None = None):
        """Entry ``k``'s policy, built on first use (seeded from ``rng``) and kept in ``cache``."""
        cache = self._cache if cache is None else cache
        if k not in cache:
            cache[k] = self._build(k, game, rng.getrandbits(32))
        return cache[k]

    def _build(self, k: int, game, seed: int):
        spec = self.entries[k][0]
        if isinstance(spec, MLP):
            return NetworkPolicy(spec, seed=seed, name=f"snapshot_{k}")
        bot = self._bots.get(k)
        if bot is not None:           # a bot file is loaded once per process; each env's copy has its own generator
            return Bot(bot.session, bot.metadata, bot.path, bot.temperature, seed, parts=bot.parts)
        policy = make_policy(spec, game, seed)
        if type(policy) is Bot:
            self._bots[k] = policy
        return policy

    def with_snapshot(self, mlp: MLP, weight: float, max_snapshots: int, id: str | None = None) -> "OpponentPool":
        """A new pool with ``mlp`` added (its league id ``id``, default ``snapshot@N`` for the N-th snapshot the
        pool has seen); the oldest snapshots beyond ``max_snapshots`` are dropped."""
        entries, ids = self.entries + [(mlp, weight)], self.ids + [id or self._next_snapshot_id()]
        snaps = [i for i, (s, _) in enumerate(entries) if isinstance(s, MLP)]
        drop = set(snaps[:max(0, len(snaps) - max_snapshots)])
        keep = [i for i in range(len(entries)) if i not in drop]
        return OpponentPool([entries[i] for i in keep], [ids[i] for i in keep])

    def _next_snapshot_id(self) -> str:
        taken = [int(i.split("@")[1]) for i in self.ids if i.startswith("snapshot@") and i.split("@")[1].isdigit()]
        return f"snapshot@{max(taken, default=-1) + 1}"

    def with_weights(self, weights: list[float]) -> "OpponentPool":
        """The same opponents with new draw weights (a league's reweighting)."""
        if len(weights) != len(self.entries):
            raise ValueError(f"{len(weights)} weights for a pool of {len(self.entries)} opponents")
        return OpponentPool([(spec, float(w)) for (spec, _), w in zip(self.entries, weights)], self.ids)

    # ----- files -------------------------------------------------------------------------------------
    def save(self, folder) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        listing, k = [], 0
        for (spec, weight), id_ in zip(self.entries, self.ids):
            if isinstance(spec, MLP):
                name = f"snapshot_{k}.npz"
                spec.save(folder / name)
                listing.append({"snapshot": name, "weight": weight, "id": id_})
                k += 1
            else:
                listing.append({"policy": spec, "weight": weight, "id": id_})
        (folder / "pool.json").write_text(json.dumps(listing, indent=1))

    @classmethod
    def load(cls, folder) -> "OpponentPool":
        """A saved pool; a file that cannot be read is a ``ValueError`` naming it (never unpickled)."""
        from ..files import load_npz, read_json
        folder = Path(folder)
        listing = read_json(folder / "pool.json")
        if not isinstance(listing, list):
            raise ValueError(f"{folder / 'pool.json'}: expected a list of opponents, got {type(listing).__name__}")
        entries, ids = [], []
        for k, item in enumerate(listing):
            ok = (isinstance(item, dict) and isinstance(item.get("weight"), (int, float))
                  and isinstance(item.get("snapshot", item.get("policy")), str))
            if not ok:
                raise ValueError(f"{folder / 'pool.json'}: entry {k} is not {{policy|snapshot: NAME, weight: W}}: "
                                 f"{item!r}")
            if "snapshot" in item:
                path = folder / Path(item["snapshot"]).name         # a snapshot lives in this folder
                try:
                    spec = MLP.from_arrays(load_npz(path))
                except (KeyError, ValueError) as err:
                    raise ValueError(f"{path}: not a network snapshot ({err})") from None
            else:
                spec = item["policy"]
            entries.append((spec, float(item["weight"])))
            ids.append(item.get("id"))
        if any(not isinstance(i, str) for i in ids):      # a pool saved before league ids: the default ones
            ids = None
        try:
            return cls(entries, ids)
        except ValueError as err:
            raise ValueError(f"{folder / 'pool.json'}: {err}") from None


# ----- batched decisions of network opponents ------------------------------------------------------------------
def batch_group(policy):
    """A key shared by the policies that run the same network (a snapshot's :class:`MLP`, a bot file), so that
    the games waiting on them can be decided in one forward pass; ``None`` for a policy that decides per game
    (random, the heuristics, the searches, a bot inside a search)."""
    if type(policy) is NetworkPolicy:
        return ("network", id(policy.mlp))
    if type(policy) is Bot:
        return ("bot", policy.path)
    return None


def network_scores(policy, observations: np.ndarray) -> np.ndarray:
    """The scores (logits or Q-values) of ``policy``'s network for a batch of observations, ``(n, actions)``."""
    return network_scorer(policy)[0](observations)


def decide_batch(policies: list, observations: np.ndarray, masks: np.ndarray) -> list[int]:
    """The actions of ``policies`` (one per game, all of one :func:`batch_group`) for the games' observations
    and legal masks, with one forward pass. Each game's choice is what its own policy's ``act`` would choose:
    the best legal action, or (with a temperature) a sample from that policy's own generator."""
    scores = network_scores(policies[0], observations)
    if all(p.temperature <= 0 for p in policies):
        # masked_choice's argmax over the legal actions, for every row at once: illegal ones can never win
        best = np.where(masks, scores, -np.inf).argmax(axis=1)
        return [int(a) for a in best]
    return [masked_choice(scores[j], masks[j], p.temperature, p.rng) for j, p in enumerate(policies)]
