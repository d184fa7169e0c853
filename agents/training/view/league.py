"""League weights for the opponent pool: prioritised fictitious self-play (PFSP).

With ``opponents.league.weighting: pfsp`` the trainer counts, per pool entry (a baseline or a self-play
snapshot, by its id), the training episodes the learner won against it, and every ``league.every`` steps
redraws the pool's weights as

    weight = base weight x ((1 - p) ** power + floor)

where ``p`` is the learner's recent win rate against that entry: the decayed share of wins over about the last
``window`` episodes against it, with one win and one loss of prior (an entry not yet met counts as p = 0.5).
So the learner meets the opponents it loses to more often, and those it beats less, but never never: the
floor keeps every entry in the mix (AlphaStar's "hard" PFSP weighting, Vinyals et al. 2019, with power 2).
The base weights are the config's (a baseline's ``weight``, ``self_play.weight`` for snapshots).

The counts are plain data in the checkpoint, so a resumed run continues with the same weights. An episode
with several opponent sides counts for each entry drawn (a 4-player table); a win is the learner's side
among the winners.
"""

from __future__ import annotations


class League:
    def __init__(self, power: float = 2.0, floor: float = 0.05, window: int = 1000, counts: dict | None = None):
        self.power, self.floor, self.decay = power, floor, 1.0 - 1.0 / max(1, window)
        self.counts: dict[str, list[float]] = {k: list(v) for k, v in (counts or {}).items()}   # id -> [wins, n]

    def record(self, entry_id: str, won: bool) -> None:
        wins, n = self.counts.get(entry_id, [0.0, 0.0])
        self.counts[entry_id] = [wins * self.decay + float(won), n * self.decay + 1.0]

    def win_rate(self, entry_id: str) -> float:
        wins, n = self.counts.get(entry_id, [0.0, 0.0])
        return (wins + 1.0) / (n + 2.0)

    def forget_all_but(self, ids: list[str]) -> None:
        """Drop the counts of entries no longer in the pool (snapshots that left it)."""
        self.counts = {k: v for k, v in self.counts.items() if k in ids}

    def weights(self, ids: list[str], base: list[float]) -> list[float]:
        return [b * ((1.0 - self.win_rate(i)) ** self.power + self.floor) for i, b in zip(ids, base)]

    def state(self) -> dict:
        return {k: list(v) for k, v in self.counts.items()}
