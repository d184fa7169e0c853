"""Round-robin leagues: every pair of policies evaluated head to head, then Bradley-Terry ratings."""

from __future__ import annotations

import itertools

from .evaluate import evaluate
from .ratings import fit_bradley_terry


def league(game: str, specs: list[str], games: int = 100, settings: dict | None = None, workers: int = 1,
           seed: int = 0, progress=None) -> dict:
    """Evaluate every pair (each with mirrored, seat-rotated deals) and fit Elo-scale ratings."""
    if len(set(specs)) != len(specs) or len(specs) < 2:
        raise ValueError(f"a league needs at least two different policies, got {specs}")
    pairs = []
    for k, (a, b) in enumerate(itertools.combinations(specs, 2)):
        report = evaluate(game, a, b, games=games, settings=settings, workers=workers, seed=seed + k,
                          progress=(lambda done, total, k=k: progress(k, done, total)) if progress else None)
        pairs.append(report)
    results = [(r["a"], r["b"], r["win_rate"] * r["games"], r["games"]) for r in pairs]
    ratings = fit_bradley_terry(list(specs), results)
    order = sorted(specs, key=lambda s: -ratings[s][0])
    return {"game": game, "settings": dict(settings or {}), "games_per_pair": games, "seed": seed,
            "ratings": [{"policy": s, "elo": ratings[s][0], "se": ratings[s][1]} for s in order],
            "pairs": pairs}


def format_table(result: dict, markdown: bool = False) -> str:
    rows = [("policy", "Elo", "± 95%", "record vs others (win rate)")]
    for r in result["ratings"]:
        record = []
        for p in result["pairs"]:
            if p["a"] == r["policy"]:
                record.append(f"{p['b']}: {p['win_rate']:.2f}")
            elif p["b"] == r["policy"]:
                record.append(f"{p['a']}: {1 - p['win_rate']:.2f}")
        rows.append((r["policy"], f"{r['elo']:+.0f}", f"{1.96 * r['se']:.0f}", ", ".join(record)))
    if markdown:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
        out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(out)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)
