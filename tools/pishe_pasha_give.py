"""Does always giving win at Pishe Pasha? A head-to-head experiment on the kahve engine.

The source rule text of Pishe Pasha (docs/rules.md §4) reports that in its head-to-head runs "always giving beat both of the
versions that held a card back". This script checks that claim on our engine (docs/rules.md §4, default
settings: optional GIVE, no wrap-around), using the engine alone.

Policies (each decides only the real choices; the engine plays every forced step):

* ``always_give``   GIVE whenever it is legal; PLACE a pending card on the opponent's pile.
* ``never_give``    never GIVE (always TURN instead); PLACE a pending card.
* ``save_near_suit`` hold back a discard top that is one card away from its suit pile (its suit pile needs
                    exactly one card before it), hoping it goes up by itself; otherwise GIVE. PLACE a
                    pending card.

Each deck is played twice, seats swapped (the same deal, ``deck_rng`` depends only on the seed), so that
neither policy profits from moving first. A deck's score for ``always_give`` is its wins over the two
games (0, 0.5 or 1; a deal cut at ``max_turns`` would count half). The 95% interval is the mean deck
score +- 1.96 standard errors over decks.

    python tools/pishe_pasha_give.py              # 20,000 decks per opponent (about 40 s)
    python tools/pishe_pasha_give.py --decks 2000 --seed 1
"""

from __future__ import annotations

import argparse
import math
import time

from kahve.envs.pishe_pasha.rules import GIVE, PENDING, PLACE, TURN, PishePashaGame


def always_give(state) -> int:
    if state.phase == PENDING:
        return PLACE
    return GIVE


def never_give(state) -> int:
    if state.phase == PENDING:
        return PLACE
    return TURN


def save_near_suit(state) -> int:
    if state.phase == PENDING:
        return PLACE
    top = state.discards[state.current_player][-1]
    return TURN if top % 13 == state.levels[top // 13] + 1 else GIVE


POLICIES = {"always_give": always_give, "never_give": never_give, "save_near_suit": save_near_suit}


def play(game: PishePashaGame, seed: int, seat_policies) -> tuple[int | None, int, int]:
    """One deal from ``seed``: (winner seat or None, deal points of seat 0, choices that differed from
    ``always_give``'s)."""
    st = game.new_state(seed)
    held_back = 0
    while st.current_player is not None:
        # with skip_single_choice the engine only stops at real choices: MAIN with GIVE legal, or PENDING
        a = seat_policies[st.current_player](st)
        held_back += a != always_give(st)
        st.apply(a)
    rep = st.deal_report
    pts = rep["deal_points"]
    return rep["breakdown"]["winner"], pts[0] - pts[1], held_back


def match_up(game, opponent: str, decks: int, seed: int):
    """``always_give`` against ``opponent`` over ``decks`` decks, seats swapped. Per-deck scores and margins."""
    me, other = POLICIES["always_give"], POLICIES[opponent]
    scores, margins = [], []
    wins_first = held = 0
    for k in range(decks):
        deal_seed = seed * 1_000_003 + k
        s, m = 0.0, 0
        for my_seat in (0, 1):
            seats = [me, other] if my_seat == 0 else [other, me]
            winner, margin0, h = play(game, deal_seed, seats)
            held += h
            s += 0.5 if winner is None else (1.0 if winner == my_seat else 0.0)
            m += margin0 if my_seat == 0 else -margin0
            wins_first += winner == 1        # seat 1 is the non-dealer, who moves first
        scores.append(s / 2)
        margins.append(m / 2)
    return scores, margins, wins_first / (2 * decks), held / (2 * decks)


def mean_ci(xs):
    n = len(xs)
    mu = sum(xs) / n
    var = sum((x - mu) ** 2 for x in xs) / (n - 1)
    half = 1.96 * math.sqrt(var / n)
    return mu, mu - half, mu + half


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--decks", type=int, default=20_000, help="decks per opponent (each played twice)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    game = PishePashaGame(episode="deal")
    print(f"Pishe Pasha, default rules; always_give against two hold-back policies; {args.decks} decks per "
          f"opponent, each played with seats swapped; seed {args.seed}")
    print()
    print(f"| opponent | games | always_give win rate | 95% CI | mean points margin per deal (95% CI) | "
          f"first mover wins | hold-backs per deal |")
    print("|---|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    for opponent in ("never_give", "save_near_suit"):
        scores, margins, first, held = match_up(game, opponent, args.decks, args.seed)
        w, lo, hi = mean_ci(scores)
        m, mlo, mhi = mean_ci(margins)
        print(f"| {opponent} | {2 * args.decks} | {w:.3f} | [{lo:.3f}, {hi:.3f}] | "
              f"{m:+.2f} [{mlo:+.2f}, {mhi:+.2f}] | {first:.3f} | {held:.2f} |")
    print()
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
