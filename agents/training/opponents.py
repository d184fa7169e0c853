"""Weighted pools of opponents for training: baselines by spec, and frozen snapshots of the learner.

An entry is ``(spec, weight)``, where spec is a policy spec string (``random``, ``heuristic``,
``ismcts:50``, a bot file) or a :class:`~.mlp.MLP` snapshot of the learner. Each episode draws one entry
per opponent side with probability proportional to its weight. Policies are built once per process and
cached; a pool is plain data, so it travels to ``SubprocVecEnv`` workers and into checkpoints (as ``.npz``
snapshots and a JSON list, never a pickle).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

from ..policies.network import MLP, NetworkPolicy
from ..policies.specs import make_policy


class OpponentPool:
    def __init__(self, entries: list[tuple[object, float]]):
        if not entries:
            raise ValueError("an opponent pool needs at least one entry")
        for spec, weight in entries:
            if not (isinstance(spec, (str, MLP))):
                raise ValueError(f"an opponent is a policy spec or a snapshot, not {spec!r}")
            if (isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight)
                    or weight <= 0):
                raise ValueError(f"opponent {spec!r}: weight must be positive, got {weight!r}")
        self.entries = list(entries)
        self._init_draws()

    def _init_draws(self) -> None:
        self._cache: dict[int, object] = {}
        self._cum_weights = list(itertools.accumulate(w for _, w in self.entries))   # what choices() would build

    def __getstate__(self):
        return {"entries": self.entries}

    def __setstate__(self, state):
        self.entries = state["entries"]
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

    def draw(self, rng, game):
        """One opponent policy, drawn by weight with ``rng`` (a ``random.Random``)."""
        k = rng.choices(range(len(self.entries)), cum_weights=self._cum_weights)[0]
        if k not in self._cache:
            spec = self.entries[k][0]
            seed = rng.getrandbits(32)
            self._cache[k] = (NetworkPolicy(spec, seed=seed, name=f"snapshot_{k}") if isinstance(spec, MLP)
                              else make_policy(spec, game, seed))
        return self._cache[k]

    def with_snapshot(self, mlp: MLP, weight: float, max_snapshots: int) -> "OpponentPool":
        """A new pool with ``mlp`` added; the oldest snapshots beyond ``max_snapshots`` are dropped."""
        entries = self.entries + [(mlp, weight)]
        snaps = [i for i, (s, _) in enumerate(entries) if isinstance(s, MLP)]
        drop = set(snaps[:max(0, len(snaps) - max_snapshots)])
        return OpponentPool([e for i, e in enumerate(entries) if i not in drop])

    # ----- files -------------------------------------------------------------------------------------
    def save(self, folder) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        listing, k = [], 0
        for spec, weight in self.entries:
            if isinstance(spec, MLP):
                name = f"snapshot_{k}.npz"
                spec.save(folder / name)
                listing.append({"snapshot": name, "weight": weight})
                k += 1
            else:
                listing.append({"policy": spec, "weight": weight})
        (folder / "pool.json").write_text(json.dumps(listing, indent=1))

    @classmethod
    def load(cls, folder) -> "OpponentPool":
        """A saved pool; a file that cannot be read is a ``ValueError`` naming it (never unpickled)."""
        from .run_dir import load_npz, read_json
        folder = Path(folder)
        listing = read_json(folder / "pool.json")
        if not isinstance(listing, list):
            raise ValueError(f"{folder / 'pool.json'}: expected a list of opponents, got {type(listing).__name__}")
        entries = []
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
        try:
            return cls(entries)
        except ValueError as err:
            raise ValueError(f"{folder / 'pool.json'}: {err}") from None
