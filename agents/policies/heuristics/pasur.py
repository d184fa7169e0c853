"""Pâsur heuristic: how a sensible player plays, from their own hand, the pool and the public piles.

Every card counts by what it is worth in the round (docs/rules.md §2d): TD 3, 2C 2, each A and J 1, and each
club about 1 while the 7-clubs race (7 points) is open (nothing once someone holds 7); a sur is worth
``sur_value`` (5), whether it scores or cancels one of the opponent's.

1. A play is scored as what it captures (the played card included) plus a sur when it empties the pool,
   minus what the opponent can expect to take next from the pool it leaves (rule 5).
2. Take the sur whenever one is open and it counts; with several captures for a card, the most valuable.
3. In SELECT, each TAKE is worth the best capture option still reachable through it (rules 1 and 5 applied to
   every option left), so the pick leads to the most valuable capture.
4. A jack sweeps only a pool worth it: playing it costs a reserve (about 2.5 points in hands 1-5, less in the
   final hand), so it waits for a big pool and is kept for one.
5. The opponent's threat on the pool left behind: for each rank they may hold (from the count of unseen
   cards of that rank and the size of their next hand), their best capture with it, a sur included (pool of
   numeric cards summing to 10 or less with the completing card unseen, or a lone K/Q whose pair is unseen);
   the expected best of these is subtracted. This is what keeps from trailing a card that leaves an easy sur
   or a point card within reach.
6. Trailing a point card or a jack costs a little more (it is given up), and a K/Q whose copies are all seen
   is the safest trail.
7. The last play of the round counts the leftover pool for whoever will be the last capturer.

The quantities come from :mod:`kahve.envs.pasur.appraisal` (the same numbers the observation carries for every
legal action), and the heuristic is a fixed weighting of them (:data:`WEIGHTS`).

Only what the seat knows is read: its hand, the pool, both captured piles, surs, the phase and the card being
played, and the public counts (opponent's hand size, stock size); never the opponent's hand or the stock.
"""

from __future__ import annotations

from kahve.envs.pasur import appraisal as A

from .base import ScoredHeuristic

JACK_RESERVE = 2.5          # what a jack in hand is worth beyond its own point (hands 1-5)
JACK_RESERVE_FINAL = 1.0    # in the final hand
TRAIL_GIVE_UP = 0.3         # extra cost per point of a trailed card
THREAT_WEIGHT = 1.0

#: the weight of each appraisal feature (A.F_SUR is weighed by the table's ``sur_value``)
WEIGHTS = {
    A.F_TAKEN: 1.0,                    # rule 1: what it captures
    A.F_JACK_SWEEP: -1.0,              # rule 4: a jack's own point is not a gain when it is spent ...
    A.F_JACK: -JACK_RESERVE,           # ... and it costs the reserve
    A.F_JACK_FINAL: -JACK_RESERVE_FINAL,
    A.F_TRAILED: -TRAIL_GIVE_UP,       # rule 6
    A.F_THREAT: -THREAT_WEIGHT,        # rule 5
    A.F_LEFTOVER: 1.0,                 # rule 7
}


class PasurHeuristic(ScoredHeuristic):

    def knowledge(self, state) -> dict:
        # every legal action's appraisal at once: they share what the seat knows (counted once)
        return A.move_features(state)

    def score(self, state, action: int, known=None) -> float:
        rows = A.move_features(state) if known is None else known
        row = rows[action]
        return (sum([w * row[f] for f, w in WEIGHTS.items()])
                + state.settings.sur_value * row[A.F_SUR])
