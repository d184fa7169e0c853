"""Head-to-head evaluation with rotated seats and mirrored deals, in parallel worker processes.

The unit of evaluation is a *deal seed*: the engine takes it as its seed, so every deck of the match comes
from it alone (``deck_rng``), whatever the players do. For each unit, policy A owns each side of the table in
turn (``num_sides`` matches: with 2 players, the same decks with the seats swapped; with 4 alone, A in each
seat) and policy B, or the policies the user lists, fill the other sides. Units are independent, so the 95%
intervals are computed over units (the mean of a unit's matches), which accounts for the mirror's pairing.

Results are a pure function of (game, settings, specs, seed, number of units): the same report whatever the
number of workers. Only the timing figures differ between runs.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import re
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from kahve import envs

from ..policies.bot import BotSettingsWarning
from ..policies.specs import make_policy
from ..threads import limit_threads
from .match import Match

Z95 = 1.959963984540054


def _derive(*parts: int) -> int:
    """A 64-bit seed from integers, stable across processes and Python versions."""
    return random.Random(":".join(str(p) for p in parts)).getrandbits(64)


def play_match(game, policies: list, seed: int, max_decisions: int = 1_000_000, record: bool = False) -> dict:
    """Play one match on the engine with one policy per seat; returns winners, returns and deal points
    (and, with ``record``, the seed and every action, for :mod:`.records`)."""
    match = Match(game, policies, seed, max_decisions=max_decisions)
    match.play_bots()
    return match.result(record)


@dataclass
class Matchup:
    game: str
    settings: dict
    a: str
    b: str
    others: list = field(default_factory=list)   # specs for sides other than A's, in order; default all B
    seed: int = 0
    record: bool = False                         # keep every match's actions (for game records)

    def side_specs(self, a_side: int, num_sides: int) -> list[str]:
        """The spec playing each side when A owns ``a_side``."""
        rest = list(self.others) or [self.b]
        specs, k = [], 0
        for side in range(num_sides):
            if side == a_side:
                specs.append(self.a)
            else:
                specs.append(rest[min(k, len(rest) - 1)])
                k += 1
        return specs


def _play_units(matchup: Matchup, units: list[int]) -> list[dict]:
    """Worker: play every rotation of the given units. Policies are built here, seeded per (unit, seat)."""
    limit_threads()
    # the caller chose the settings on purpose (e.g. full matches for a bot trained on single deals)
    warnings.filterwarnings("ignore", category=BotSettingsWarning)
    game = envs.game_class(matchup.game)(**matchup.settings)
    out = []
    for unit in units:
        deal_seed = _derive(matchup.seed, unit)
        for a_side in range(game.num_sides):
            specs = matchup.side_specs(a_side, game.num_sides)
            policies = [make_policy(specs[game.sides[seat]], game, _derive(matchup.seed, unit, a_side, seat))
                        for seat in range(game.num_players)]
            result = play_match(game, policies, deal_seed, record=matchup.record)
            result.update(unit=unit, a_side=a_side)
            if matchup.record:
                result["players"] = [specs[game.sides[seat]] for seat in range(game.num_players)]
            out.append(result)
    return out


def _score(result: dict, game, a_side: int) -> tuple[float, str, float]:
    """A's score in a match (1 win, 1/k a win shared among k sides, labelled "draw"; 0 loss), its label, and A's
    points summed over its deals. The scores of all sides sum to 1 in every match, so a side's fair share is
    1/num_sides whatever the table."""
    winning_sides = {game.sides[s] for s in result["winners"]}
    if a_side not in winning_sides:
        label, score = "loss", 0.0
    elif len(winning_sides) == 1:
        label, score = "win", 1.0
    else:
        label, score = "draw", 1.0 / len(winning_sides)
    a_seat = game.sides.index(a_side)
    rel = [game.relative_points(points, a_seat) for points in result["deal_points"]]
    return score, label, sum(rel)


def ratio_interval(totals: list[float], counts: list[float]) -> tuple[float, float, float]:
    """Sum of ``totals`` over sum of ``counts``, with the delta method's normal 95% interval over the units.

    Points per deal over full matches: every deal counts once, however long its match. (The mean of each match's
    own mean would weigh the deals of short matches more, and the side that wins by most plays the shortest
    matches.) With equal counts it is :func:`mean_interval` of ``totals / count``.
    """
    n, deals = len(totals), sum(counts)
    if deals == 0:
        return 0.0, float("nan"), float("nan")
    ratio = sum(totals) / deals
    if n < 2:
        return ratio, float("nan"), float("nan")
    var = sum((t - ratio * c) ** 2 for t, c in zip(totals, counts)) / (n - 1)
    half = Z95 * math.sqrt(var / n) / (deals / n)
    return ratio, ratio - half, ratio + half


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and normal-approximation 95% interval: :func:`ratio_interval` with every unit counted once."""
    return ratio_interval(values, [1] * len(values))


def wilson_interval(successes: float, n: int) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = successes / n
    d = 1 + Z95 ** 2 / n
    centre = (p + Z95 ** 2 / (2 * n)) / d
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / d
    return centre - half, centre + half


def evaluate(game: str, a: str, b: str, games: int = 100, settings: dict | None = None, workers: int = 1,
             seed: int = 0, others: list | None = None, progress=None, record_dir: str | None = None) -> dict:
    """Play A against B over at least ``games`` matches (rounded up to whole units of rotated seats).

    ``progress(done, total)`` is called as matches finish. Returns the report (see :func:`format_report`).
    With ``record_dir``, every match is also saved as a game record (:mod:`.records`), in (unit, A's side)
    order, in one JSON-lines file per evaluation (see :func:`record_path`); the report names it.
    """
    settings = dict(settings or {})
    g = envs.game_class(game)(**settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BotSettingsWarning)
        for spec in [a, b, *(others or [])]:
            make_policy(spec, g, 0)                       # a bad spec fails here, before any work
    matchup = Matchup(game, settings, a, b, list(others or []), seed, record=record_dir is not None)
    n_units = max(1, math.ceil(games / g.num_sides))
    units = list(range(n_units))
    chunk = max(1, min(8, n_units // (max(1, workers) * 4)))
    chunks = [units[i:i + chunk] for i in range(0, n_units, chunk)]
    total = n_units * g.num_sides
    results, start = [], time.perf_counter()
    if workers <= 1:
        for c in chunks:
            results.extend(_play_units(matchup, c))
            if progress:
                progress(len(results), total)
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [pool.submit(_play_units, matchup, c) for c in chunks]
            for f in futures:
                results.extend(f.result())
                if progress:
                    progress(len(results), total)
    elapsed = time.perf_counter() - start
    report = summarize(g, matchup, results, elapsed)
    if record_dir is not None:
        report["records"] = write_match_records(g, matchup, results, record_dir)
    return report


def record_path(matchup: Matchup, record_dir: str) -> str:
    """``<dir>/<game>__<A>__<B>[__<others>]__seed<seed>.jsonl``, policy specs made safe for file names."""
    def safe(spec: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", os.path.basename(spec.rstrip("/\\")) or spec).strip("-") or "policy"
    parts = [matchup.game, safe(matchup.a), safe(matchup.b), *(safe(o) for o in matchup.others), f"seed{matchup.seed}"]
    return os.path.join(record_dir, "__".join(parts) + ".jsonl")


def write_match_records(g, matchup: Matchup, results: list[dict], record_dir: str) -> str:
    """Write the matches of an evaluation as game records, in (unit, A's side) order; returns the file."""
    from .records import build_record, write_records

    ordered = sorted(results, key=lambda r: (r["unit"], r["a_side"]))
    path = record_path(matchup, record_dir)
    write_records(path, (build_record(g, r["seed"], r["actions"], r, players=r["players"]) for r in ordered))
    return path


def summarize(g, matchup: Matchup, results: list[dict], elapsed: float) -> dict:
    results = sorted(results, key=lambda r: (r["unit"], r["a_side"]))
    counts = {"win": 0, "draw": 0, "loss": 0}
    unit_scores, unit_points, unit_deals = {}, {}, {}
    total_score = 0.0
    for r in results:
        score, label, points = _score(r, g, r["a_side"])
        counts[label] += 1
        total_score += score
        unit_scores.setdefault(r["unit"], []).append(score)
        unit_points[r["unit"]] = unit_points.get(r["unit"], 0.0) + points
        unit_deals[r["unit"]] = unit_deals.get(r["unit"], 0) + len(r["deal_points"])
    n = len(results)
    per_unit = [sum(v) / len(v) for v in unit_scores.values()]
    win_rate, lo, hi = mean_interval(per_unit)
    if not (hi - lo > 0):                                 # all units equal: fall back to Wilson on matches
        lo, hi = wilson_interval(total_score, n)
    pts, plo, phi = ratio_interval(list(unit_points.values()), [unit_deals[u] for u in unit_points])
    deals = sum(unit_deals.values())
    return {
        "game": matchup.game, "settings": matchup.settings, "a": matchup.a, "b": matchup.b,
        "others": matchup.others, "seed": matchup.seed, "games": n, "units": len(per_unit),
        "sides": g.num_sides, "fair_share": 1.0 / g.num_sides,
        "wins": counts["win"], "draws": counts["draw"], "losses": counts["loss"],
        "win_rate": win_rate, "win_rate_ci95": [max(0.0, lo), min(1.0, hi)],
        "points_per_deal": pts, "points_per_deal_ci95": [plo, phi], "deals": deals,
        "truncated": sum(1 for r in results if r["truncated"]),
        "timing": {"seconds": elapsed, "games_per_s": n / elapsed if elapsed > 0 else float("inf")},
    }


def format_report(r: dict) -> str:
    lo, hi = r["win_rate_ci95"]
    plo, phi = r["points_per_deal_ci95"]
    sides = r.get("sides", 2)                 # reports written before "sides" was kept were all read as 2 sides
    if sides > 2:
        # with 3 or more sides, 0.5 is no longer even: the win share is read against 1/sides
        win_line = (f"  A's win share {r['win_rate']:.3f}  (95% CI {lo:.3f} .. {hi:.3f}; fair share "
                    f"{r['fair_share']:.3g} at {sides} sides; a win shared by k sides counts 1/k)")
    else:
        win_line = f"  A's win rate {r['win_rate']:.3f}  (95% CI {lo:.3f} .. {hi:.3f}; a draw counts 1/2)"
    lines = [
        f"{r['game']}: {r['a']} (A) vs {r['b']} (B)" + (f", other sides {r['others']}" if r["others"] else "")
        + (f", settings {r['settings']}" if r["settings"] else "") + f", seed {r['seed']}",
        f"  matches {r['games']} ({r['units']} deal seeds x seats rotated), deals {r['deals']}",
        f"  A: {r['wins']} wins, {r['draws']} draws, {r['losses']} losses",
        win_line,
        f"  A's points per deal, own side minus the others' mean: {r['points_per_deal']:+.2f}  "
        + ("(an interval needs 2 deal seeds or more)" if math.isnan(plo) else f"(95% CI {plo:+.2f} .. {phi:+.2f})"),
        f"  {r['timing']['games_per_s']:.1f} matches/s ({r['timing']['seconds']:.1f} s)",
    ]
    if r["truncated"]:
        lines.append(f"  {r['truncated']} matches were truncated (decided on totals)")
    return "\n".join(lines)
