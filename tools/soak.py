"""Soak test of the five engines: random play over a grid of settings per game, with invariants checked.

Every step: the legal actions are non-empty, sorted and distinct, and the chosen one applies. On a sample of the
decision states (the expensive checks, so that 10 million steps per game run in reasonable time on one core):

* the legal mask equals the legal actions;
* card conservation: every card of the deck (both packs in Pis Yedili with 3-4 players) is somewhere, once;
* every seat's observation has the game's length, is finite and lies within the game's documented bounds
  (``Game.obs_low`` .. ``Game.obs_high``);
* clone independence: a clone equals the state, and playing on it leaves the state unchanged;
* determinize consistency, as in tests/envs/test_determinize.py (observation, legal actions, seen cards, hand
  sizes, conservation, the public inferences, a legal move left to the player to move);

and at every deal's end the deal totals (Pâsur's 20 card points, the 7 for the clubs included, Pişti's 13 (or 15) card
points over 52 cards, Pis Yedili's winner at 0, Pishe Pasha's winner scoring the loser's cards, Ish's zero-sum
chips).

    python tools/soak.py --steps 10000000                  # every game, 10 M steps each
    python tools/soak.py --steps 200000 --games pishti ish
    python tools/soak.py --steps 1000000 --every 0.1       # the sampled checks 10x as often

It prints a progress line with an ETA, then totals per game and every failure (the first ones in full), and
exits non-zero if anything failed. Not part of the default test run.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kahve import envs  # noqa: E402
from kahve.envs.pis_yedili.rules import PisYediliState  # noqa: E402
from tests.envs.test_determinize import _cards, _check_world, _logged  # noqa: E402

GRID = {
    "pasur": [
        dict(),
        dict(skip_single_choice=False),
        dict(redeal_rule="jacks_only", sur_on_final_deal=True, sur_cancellation=False),
        dict(sur_cap=True, sur_cap_threshold=10, target_score=40, reward="points", first_dealer="random"),
    ],
    "pishti": [
        dict(players=2),
        dict(players=4),
        dict(players=4, partnerships=False, skip_single_choice=False),
        dict(players=2, jack_on_empty_counts=True, jack_double="any_jack", two_clubs_value=3, ten_diamonds_value=4),
    ],
    "pis_yedili": [
        dict(players=2),
        dict(players=3, skip_single_choice=False),
        dict(players=4),
        dict(players=4, ten_rule="reverse", twin_rule="same_rank", must_answer_seven=True),
        dict(players=3, stock_end="on_failed_draw", after_seven_penalty="lose_turn", muamele_on_exhaustion=True,
             skip_single_choice=False),
        dict(players=2, must_answer_seven=True, skip_single_choice=False, reward="points"),
    ],
    "pishe_pasha": [
        dict(),
        dict(match_target=50),
        dict(give_compulsory=True, skip_single_choice=False, match_target=100),
        dict(rank_wrap=True, skip_single_choice=False, max_turns=300),
    ],
    "ish": [
        dict(players=2),
        dict(players=4, card_selection="agent", skip_single_choice=False),
        dict(players=20),
        dict(players=3, payout="matched", false_call_fine=3, bankroll=10, reward="outcome"),
    ],
}

# sampled checks: one state in every N decision states (primes, so the checks do not always meet)
PERIODS = {"mask": 11, "cards": 53, "observation": 97, "clone": 211, "determinize": 307}


def full_deck(game: str, g) -> Counter:
    state = g.new_state(0)
    d = state.to_dict()
    return Counter(_cards(game, d))


def check_deal(game: str, state, report: dict) -> None:
    """Totals of a finished deal (``deal_report``)."""
    b, g = report["breakdown"], state.game
    if game == "pasur":
        if max(b["cards"]) > 0:                   # someone captured: every card and point is scored
            assert sum(b["cards"]) == 52, b
            assert sum(b["card_points"]) == 20, b       # 13 card points + 7 for the clubs majority
    elif game == "pishti":
        one = [g.sides.index(side) for side in range(g.num_sides)]   # one seat per side
        s = state.settings
        assert sum(b["cards"][i] for i in one) == 52, b
        assert sum(b["card_points"][i] for i in one) == 8 + s.two_clubs_value + s.ten_diamonds_value, b
    elif game == "pis_yedili":
        went = b["went_out"]
        assert (b["end"] == "went_out") == (sum(went) == 1) and sum(went) <= 1, b
        for q, t in enumerate(b["total"]):
            assert t >= 0 and (t == 0 or not went[q]), b
    elif game == "pishe_pasha":
        w = b["winner"]
        points = report["deal_points"]
        if w is None:
            assert points == [0, 0], report
        else:
            assert points[w] == b["stock"][1 - w] + b["discard"][1 - w] and points[1 - w] == 0, report
    elif game == "ish":
        assert sum(report["deal_points"]) == 0, report


class Soak:
    def __init__(self, game: str, steps: int, every: float, seed: int):
        self.game, self.steps, self.seed = game, steps, seed
        self.periods = {k: max(1, round(v * every)) for k, v in PERIODS.items()}
        self.counts = Counter()
        self.failures: list[str] = []
        self.done = 0

    def fail(self, what: str, settings: dict, seed: int, step: int, exc: BaseException) -> None:
        self.counts["failures"] += 1
        if len(self.failures) < 20:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
            self.failures.append(f"{self.game} {settings} seed={seed} step={step} [{what}]: {exc!r}\n{tb}")

    def run(self, progress) -> None:
        grid = GRID[self.game]
        gs = [envs.game_class(self.game)(**s) for s in grid]
        decks = [full_deck(self.game, g) for g in gs]
        rng = random.Random(self.seed)
        check_rng = random.Random(self.seed + 1)
        game_no = 0
        per = self.periods
        while self.done < self.steps:
            k = game_no % len(gs)
            g, settings, deck = gs[k], grid[k], decks[k]
            seed = self.seed * 1_000_003 + game_no
            game_no += 1
            self.counts["games"] += 1
            try:
                state = g.new_state(seed)
            except Exception as exc:                  # noqa: BLE001 (a soak records every failure)
                self.fail("new_state", settings, seed, 0, exc)
                continue
            last_report = state.deal_report
            step = 0
            while state.current_player is not None and self.done < self.steps:
                what = "step"
                try:
                    legal = state.legal_actions()
                    assert legal and legal == sorted(set(legal)), f"legal actions {legal}"
                    n = self.done
                    if n % per["mask"] == 0:
                        what = "mask"
                        assert np.flatnonzero(state.legal_mask()).tolist() == legal
                        self.counts[what] += 1
                    if n % per["cards"] == 0:
                        what = "cards"
                        assert Counter(_cards(self.game, state.to_dict())) == deck, "cards are not conserved"
                        self.counts[what] += 1
                    if n % per["observation"] == 0:
                        what = "observation"
                        for seat in range(state.num_players):
                            o = state.observation(seat)
                            assert o.shape == (g.observation_size,) and o.dtype == np.float32
                            assert np.isfinite(o).all() and o.min() >= g.obs_low and o.max() <= g.obs_high, \
                                f"seat {seat}: observation outside [{g.obs_low}, {g.obs_high}]"
                        self.counts[what] += 1
                    if n % per["clone"] == 0:
                        what = "clone"
                        before = state.to_dict()
                        c = state.clone()
                        assert c.to_dict() == before, "a clone differs from the state"
                        for _ in range(6):
                            if c.current_player is None:
                                break
                            c.apply(check_rng.choice(c.legal_actions()))
                        assert state.to_dict() == before, "playing on a clone changed the state"
                        self.counts[what] += 1
                    if n % per["determinize"] == 0:
                        what = "determinize"
                        seat = check_rng.randrange(state.num_players)
                        self.counts["determinize_changed"] += _check_world(self.game, state, seat, check_rng, 1)
                        self.counts[what] += 1
                    what = "apply"
                    state.apply(rng.choice(legal))
                    report = state.deal_report
                    if report is not None and report is not last_report:
                        what = "deal"
                        last_report = report
                        check_deal(self.game, state, report)
                        self.counts["deals"] += 1
                except Exception as exc:              # noqa: BLE001
                    self.fail(what, settings, seed, step, exc)
                    break
                step += 1
                self.done += 1
                if self.done & 4095 == 0:
                    progress()
            if state.current_player is None:
                self.counts["finished"] += 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1_000_000, help="engine steps per game (default 1,000,000)")
    ap.add_argument("--games", nargs="+", default=list(envs.GAMES), choices=list(envs.GAMES))
    ap.add_argument("--every", type=float, default=1.0,
                    help="scale of the sampling periods of the expensive checks (0.1: ten times as often)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    # Pis Yedili's public history for the determinize check (as the test keeps it)
    PisYediliState._apply = _logged(PisYediliState._apply)

    soaks = [Soak(game, args.steps, args.every, args.seed) for game in args.games]
    total = args.steps * len(soaks)
    start = time.perf_counter()
    last = [start]

    def progress(final: bool = False) -> None:
        now = time.perf_counter()
        if not final and now - last[0] < 10:
            return
        last[0] = now
        done = sum(s.done for s in soaks)
        rate = done / max(now - start, 1e-9)
        eta = (total - done) / rate if rate else math.inf
        fails = sum(s.counts["failures"] for s in soaks)
        current = next((s.game for s in soaks if s.done < s.steps), "-")
        print(f"[{now - start:7.0f} s] {done:,}/{total:,} steps ({100 * done / total:5.1f}%), "
              f"{rate:,.0f} steps/s, ETA {eta:,.0f} s, now {current}, failures {fails}", flush=True)

    for s in soaks:
        t0 = time.perf_counter()
        s.run(progress)
        s.counts["seconds"] = round(time.perf_counter() - t0)
    progress(final=True)

    print()
    keys = ["games", "finished", "deals", "mask", "cards", "observation", "clone", "determinize",
            "determinize_changed", "failures", "seconds"]
    print(f"{'game':12} {'steps':>11} " + " ".join(f"{k:>10}" for k in keys))
    for s in soaks:
        print(f"{s.game:12} {s.done:>11,} " + " ".join(f"{s.counts[k]:>10,}" for k in keys))
    failures = [f for s in soaks for f in s.failures]
    if failures:
        print(f"\n{sum(s.counts['failures'] for s in soaks)} failure(s); the first ones:")
        for f in failures:
            print(f)
        return 1
    print("\nno failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
