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

Only what the seat knows is read: its hand, the pool, both captured piles, surs, the phase and the card being
played, and the public counts (opponent's hand size, stock size); never the opponent's hand or the stock.
"""

from __future__ import annotations

from kahve.envs.core.cards import JACK, NUM_CARDS
from kahve.envs.pasur.rules import CARD_POINTS, HANDS_PER_ROUND, IS_CLUB, PHASE_SELECT, RANK, TAKE, sum_subsets

from .base import ScoredHeuristic

HAND = 4
JACK_RESERVE = 2.5          # what a jack in hand is worth beyond its own point (hands 1-5)
JACK_RESERVE_FINAL = 1.0    # in the final hand
TRAIL_GIVE_UP = 0.3         # extra cost per point of a trailed card
THREAT_WEIGHT = 1.0
COUNT_BONUS = 0.05          # a captured card thins the pool a little, whatever it is worth
CLUB_WEIGHT = 1.0           # a club while the 7-clubs race is open

# what each card is worth to take (points, the club race, COUNT_BONUS): while the race is open, once decided
CARD_VALUE = {w: [CARD_POINTS[c] + w * IS_CLUB[c] + COUNT_BONUS for c in range(NUM_CARDS)] for w in (0.0, CLUB_WEIGHT)}


_BEST: dict = {}
_BEST_MAX = 200_000         # distinct pools kept, then the cache starts again


def _best_captures(numeric: tuple, card_value: list, sur_bonus: float) -> list:
    """For targets 0..10, the most valuable subset of the numeric pool cards ``numeric`` summing to the target
    (what a card of value 11 - target takes); ``sur_bonus`` is added when the subset is the whole pool. The
    same pools come back decision after decision, so the answers are kept (at most _BEST_MAX of them)."""
    values = tuple([RANK[x] + 1 for x in numeric])
    numeric_value = tuple([card_value[x] for x in numeric])
    key = (values, numeric_value, sur_bonus)         # cards of the same rank and worth answer alike
    found = _BEST.get(key)
    if found is None:
        if len(_BEST) >= _BEST_MAX:
            _BEST.clear()
        found = [0.0] * 11
        for target in range(1, 11):
            if target > sum(values):
                continue
            best = 0.0
            for sub in sum_subsets(values, target):
                g = sum([numeric_value[i] for i in sub])
                if len(sub) == len(numeric):
                    g += sur_bonus
                if g > best:
                    best = g
            found[target] = best
        _BEST[key] = found
    return found


class PasurHeuristic(ScoredHeuristic):

    def knowledge(self, state) -> dict:
        # the same for every action of a decision: a card played from the hand is already among the seen
        # cards, and in SELECT the card being played is the same for every TAKE
        seat = state.current_player
        return self._knowledge_for(state, seat, state.sel_card if state.phase == PHASE_SELECT else None)

    def score(self, state, action: int, known=None) -> float:
        if known is None:
            known = self.knowledge(state)
        if action >= TAKE:                                   # SELECT: the best option still reachable
            card = state.sel_card
            k = len(state.picked)
            x = action - TAKE
            return max(self._capture_score(state, known, card, o) for o in state.cand if o[k] == x)
        card = action
        opts = state.capture_options(card)
        if not opts:
            return self._trail_score(state, known, card)
        return max(self._capture_score(state, known, card, o) for o in opts)

    # ----- what the seat knows ------------------------------------------------------------------------
    def _knowledge_for(self, state, seat: int, card: int | None) -> dict:
        opp = 1 - seat
        seen = [False] * NUM_CARDS
        for block in (state.hands[seat], state.pool, state.captured[0], state.captured[1]):
            for c in block:
                seen[c] = True
        if card is not None:
            seen[card] = True
        unseen_by_rank = [0] * 13
        for c in range(NUM_CARDS):
            if not seen[c]:
                unseen_by_rank[RANK[c]] += 1
        unseen = sum(unseen_by_rank)
        decided = state.clubs[0] >= 7 or state.clubs[1] >= 7
        my_hand_after = len(state.hands[seat]) - (0 if state.phase == PHASE_SELECT else 1)
        opp_hand = len(state.hands[opp])
        hand_number = state.hand_number
        round_over = False
        if opp_hand == 0 and my_hand_after == 0:             # the next play comes from a new hand
            if state.stock:
                opp_hand = HAND
                hand_number += 1
            else:
                round_over = True
        sv = state.settings.sur_value
        opp_sur = 0.0 if (state.sur_capped[opp] or (hand_number == HANDS_PER_ROUND
                                                      and not state.settings.sur_on_final_deal)) else sv
        # P(the opponent holds at least one card of each rank)
        p_rank = [0.0] * 13
        if unseen and opp_hand:
            h = min(opp_hand, unseen)
            for r in range(13):
                k = unseen_by_rank[r]
                if k:
                    none = 1.0
                    for i in range(h):
                        none *= max(unseen - k - i, 0) / (unseen - i)
                    p_rank[r] = 1.0 - none
        return {"seat": seat, "card_value": CARD_VALUE[0.0 if decided else CLUB_WEIGHT], "p_rank": p_rank,
                "opp_sur": opp_sur, "round_over": round_over, "final_hand": state.hand_number == HANDS_PER_ROUND}

    @staticmethod
    def _value(known: dict, cards) -> float:
        value = known["card_value"]
        return sum([value[c] for c in cards])

    # ----- the plays ----------------------------------------------------------------------------------
    def _capture_score(self, state, known: dict, card: int, option: tuple) -> float:
        seat = known["seat"]
        gain = self._value(known, option) + self._value(known, (card,))
        kind = state._sur_kind(seat, card, option)
        if kind in ("sur", "cancel"):
            gain += state.settings.sur_value
        if RANK[card] == JACK:
            gain -= 1.0 + (JACK_RESERVE_FINAL if known["final_hand"] else JACK_RESERVE)
        taken = set(option)
        rest = [x for x in state.pool if x not in taken]
        if known["round_over"]:
            return gain + self._value(known, rest)             # the leftover comes to me, the last capturer
        return gain - THREAT_WEIGHT * self._threat(known, rest)

    def _trail_score(self, state, known: dict, card: int) -> float:
        seat = known["seat"]
        rest = state.pool + [card]
        cost = TRAIL_GIVE_UP * self._value(known, (card,))
        if RANK[card] == JACK:
            cost += JACK_RESERVE_FINAL if known["final_hand"] else JACK_RESERVE
        if known["round_over"]:
            lc = state.last_capturer
            left = self._value(known, rest)
            return -cost + (left if lc == seat else -left if lc is not None else 0.0)
        return -cost - THREAT_WEIGHT * self._threat(known, rest)

    def _threat(self, known: dict, pool: list) -> float:
        """Expected value of the opponent's best capture on ``pool`` next turn."""
        if not pool:
            return 0.0
        p_rank = known["p_rank"]
        numeric = sorted(x for x in pool if RANK[x] < JACK)
        all_numeric = len(numeric) == len(pool)
        opp_sur = known["opp_sur"]
        cands = []
        if numeric:
            best = _best_captures(tuple(numeric), known["card_value"], opp_sur if all_numeric else 0.0)
            for r in range(10):                             # their card of value r + 1
                p = p_rank[r]
                if p and best[10 - r]:
                    cands.append((best[10 - r], p))
        sweep = [x for x in pool if RANK[x] <= JACK]
        if sweep and p_rank[JACK]:
            cands.append((self._value(known, sweep), p_rank[JACK]))
        for r in (JACK + 1, JACK + 2):                      # Q, K: pair one
            p = p_rank[r]
            if p:
                same = [x for x in pool if RANK[x] == r]
                if same:
                    g = max(self._value(known, (x,)) for x in same) + (opp_sur if len(pool) == 1 else 0.0)
                    cands.append((g, p))
        if not cands:
            return 0.0
        cands.sort(reverse=True)
        expect, miss = 0.0, 1.0
        for g, p in cands:
            expect += g * p * miss
            miss *= 1.0 - p
        return expect
