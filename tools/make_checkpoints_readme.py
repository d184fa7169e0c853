"""Writes checkpoints/README.md from the shipped bots' metadata and reports: ``python tools/make_checkpoints_readme.py``."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "checkpoints"


def main() -> None:
    from kahve.agents.policies.bot import Bot
    rows = []
    for bot_path in sorted(ROOT.glob("*/*.onnx")):
        meta = Bot.read_metadata(bot_path)[1]
        ev = json.loads(bot_path.with_suffix(".eval.json").read_text()) if bot_path.with_suffix(".eval.json").exists() else {}
        # a bot of several tables (Ish at 2 to 20 players) has its report's results and levels per table
        per_table = ev.get("results", {}) if meta.get("tables") else {"": ev.get("results", {})}
        levels = ev.get("levels", {}) if meta.get("tables") else {"": ev.get("levels", {})}
        for label, res in per_table.items():
            if not isinstance(res, dict) or "heuristic" not in res and "random" not in res:
                continue

            def cell(opp):
                r = res.get(opp)
                if not r:
                    return "–"
                lo, hi = r["win_rate_ci95"]
                fair = f"; fair share {r['fair_share']:.3g}" if r.get("sides", 2) > 2 else ""
                return f"{r['win_rate']:.3f} ({lo:.3f}–{hi:.3f}{fair}), n={r['games']}"
            hard = levels.get(label, {}).get("hard")
            hard_cell = "–" if not hard else (f"{hard['result']['points_per_deal']:+.2f} a deal, "
                                              f"{hard['time_per_move']['median_ms']:.3g} ms a move")
            table = label or ({k: v for k, v in meta["settings"].items() if k in ("players", "partnerships")}
                              or "default")
            verdict = {True: "meets", False: "does **not** meet", None: "–"}[ev.get("verdict")]
            rows.append(f"| [{bot_path.parent.name}/{bot_path.name}]({bot_path.parent.name}/{bot_path.stem}.md) | "
                        f"{table} | {meta['algorithm']}, {meta['training_steps']:,} steps | "
                        f"{cell('random')} | {cell('heuristic')} | {verdict} | {hard_cell} |")
    text = ["# Shipped bots", "",
            "One ONNX file per bot (observation → action logits; apply the legal-action mask outside the graph) with",
            "its metadata (game, env version, the settings it was trained under, training summary) inside the file",
            "and an evaluation report beside it (`.md`, full numbers in `.eval.json`). Load one with",
            "`kahve.agents.Bot.load(path)` (needs only numpy and onnxruntime), name it as a policy anywhere",
            "(`kahve evaluate pishti checkpoints/pishti/ppo_2p.onnx heuristic --settings players=2`), or play it:",
            "`kahve play pishti --settings players=2 --bot checkpoints/pishti/ppo_2p.onnx`.", "",
            "Win rates are over full matches with the bot on each side in turn and the same decks (mirrored), 95%",
            "intervals; at a table of more than two sides the win rate is the bot's share of the wins, read against",
            "the fair share 1/sides. The bars (docs/design.md, \"Bars a bot report cites\"): in Pâsur, Pişti and Pis",
            "Yedili the whole win-rate interval against the heuristic above the fair share (50% with two sides) and the",
            "whole points-per-deal interval above 0; Pishe Pasha: the interval against the heuristic reaching 50% and",
            "at least 90% against random; Ish: the known optimum (minimum stake, calling exactly when eligible) at",
            "every table. A report states the bar as it stood when its bot was exported. A bot of several tables has",
            "a row per table.", "",
            "A report's command is the one its run was made with. The shipped PPO configs have since turned on",
            "`async_rollouts` (docs/design.md), which changes which weights collect each rollout: add",
            "`--override async_rollouts=false` to repeat an older PPO run step for step.", "",
            "The reports of the bots that people play against end with their difficulty levels (`easy`, `medium`,",
            "`hard`: single deals against the heuristic and each level's time per move, `kahve export --report",
            "--levels PAIRS`); the last column gives `hard`'s points per deal there and its median CPU time a",
            "move.", "",
            "| bot | table | training | vs random | vs heuristic | bar | `hard` vs heuristic |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            *rows, "", "All of `checkpoints/` (bots, reports, this page): {size} MB, shipped in the wheel.", "",
            "Regenerate this page with `python tools/make_checkpoints_readme.py` after `kahve export ... --report`.", ""]
    page = "\n".join(text)
    files = sum(f.stat().st_size for f in ROOT.rglob("*")
                if f.is_file() and f.name != "README.md" and "__pycache__" not in f.parts)
    (ROOT / "README.md").write_text(page.replace("{size}", f"{(files + len(page.encode())) / 1e6:.1f}"))


if __name__ == "__main__":
    main()
