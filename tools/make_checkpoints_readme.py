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
        res = ev.get("results", {})

        def cell(opp):
            r = res.get(opp)
            if not r:
                return "–"
            lo, hi = r["win_rate_ci95"]
            return f"{r['win_rate']:.3f} ({lo:.3f}–{hi:.3f}), n={r['games']}"
        hard = ev.get("levels", {}).get("hard")
        hard_cell = "–" if not hard else (f"{hard['result']['points_per_deal']:+.2f} a deal, "
                                          f"{hard['time_per_move']['median_ms']:.3g} ms a move")
        table = {k: v for k, v in meta["settings"].items() if k in ("players", "partnerships")}
        verdict = {True: "meets", False: "does **not** meet", None: "–"}[ev.get("verdict")]
        rows.append(f"| [{bot_path.parent.name}/{bot_path.name}]({bot_path.parent.name}/{bot_path.stem}.md) | "
                    f"{table or 'default'} | {meta['algorithm']}, {meta['training_steps']:,} steps | "
                    f"{cell('random')} | {cell('heuristic')} | {verdict} | {hard_cell} |")
    text = ["# Shipped bots", "",
            "One ONNX file per bot (observation → action logits; apply the legal-action mask outside the graph) with",
            "its metadata (game, env version, the settings it was trained under, training summary) inside the file",
            "and an evaluation report beside it (`.md`, full numbers in `.eval.json`). Load one with",
            "`kahve.agents.Bot.load(path)` (needs only numpy and onnxruntime), name it as a policy anywhere",
            "(`kahve evaluate pishti checkpoints/pishti/ppo_2p.onnx heuristic --settings players=2`), or play it:",
            "`kahve play pishti --settings players=2 --bot checkpoints/pishti/ppo_2p.onnx`.", "",
            "Win rates are over full matches with seats rotated and decks mirrored, 95% intervals. The bars",
            "(docs/design.md, \"Bars a bot report cites\"): in Pâsur, Pişti (2 players) and Pis Yedili (2 players) the",
            "whole win-rate interval against the heuristic above 50% and the whole points-per-deal interval above 0;",
            "Pishe Pasha: the interval against the heuristic reaching 50% and at least 90% against random; Ish: the",
            "known optimum (minimum stake, calling exactly when eligible). A report states the bar as it stood when",
            "its bot was exported.", "",
            "A report's command is the one its run was made with. The shipped PPO configs have since turned on",
            "`async_rollouts` (docs/design.md), which changes which weights collect each rollout: add",
            "`--override async_rollouts=false` to repeat an older PPO run step for step.", "",
            "The reports of the bots that people play against end with their difficulty levels (`easy`, `medium`,",
            "`hard`: single deals against the heuristic and each level's time per move, `kahve export --report",
            "--levels PAIRS`); the last column gives `hard`'s points per deal there and its median CPU time a",
            "move.", "",
            "| bot | table | training | vs random | vs heuristic | bar | `hard` vs heuristic |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            *rows, "", "Regenerate this page with `python tools/make_checkpoints_readme.py` after `kahve export ... --report`.", ""]
    (ROOT / "README.md").write_text("\n".join(text))


if __name__ == "__main__":
    main()
