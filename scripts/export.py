"""``kahve export RUN_DIR -o FILE.onnx``: one self-contained bot file from a training run, with an optional
evaluation report beside it (FILE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml


def add_arguments(parser) -> None:
    parser.add_argument("run_dir", help="a training run folder (made by kahve train)")
    parser.add_argument("-o", "--output", required=True, help="the bot file to write, e.g. checkpoints/pishti/ppo.onnx")
    parser.add_argument("--report", nargs="*", default=None, metavar="OPPONENT",
                        help="evaluate the bot against these opponents (default: random heuristic ismcts:200) "
                             "and write FILE.md beside the bot")
    parser.add_argument("--games", type=int, default=200, help="matches per report evaluation")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--command", default=None, help="the training command, quoted in the report")


def run(args) -> int:
    from kahve import envs
    from kahve.agents.policies.bot import bot_metadata, export_onnx
    from kahve.agents.policies.network import MLP

    run_dir = Path(args.run_dir)
    cfg_file = run_dir / "config.yaml"
    if not cfg_file.is_file():
        raise FileNotFoundError(f"{run_dir} is not a training run folder (no config.yaml)")
    cfg = yaml.safe_load(cfg_file.read_text())
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    if (run_dir / "policy.npz").exists():
        mlp = MLP.load(run_dir / "policy.npz")
    else:
        from kahve.agents.training.trainer import load_model
        mlp = MLP.from_sb3(load_model(cfg, None, run_dir / "checkpoints" / "latest" / "model.zip"))
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    state_file = run_dir / "checkpoints" / "latest" / "state.json"
    steps = summary.get("steps") or (json.loads(state_file.read_text())["steps"] if state_file.exists() else 0)
    meta = bot_metadata(game, cfg["algorithm"], steps, summary.get("evaluation", {}), network=cfg["network"],
                        config=cfg, wall_seconds=summary.get("wall_seconds_total"))
    path = export_onnx(mlp, args.output, meta)
    print(f"wrote {path} ({path.stat().st_size:,} bytes): {cfg['game']} {cfg['algorithm']}, {steps:,} steps")
    if args.report is not None:
        from kahve.agents.evaluation.report import write_report
        opponents = args.report or ["random", "heuristic", "ismcts:200"]
        report = write_report(path, opponents, games=args.games, workers=args.workers, command=args.command)
        print(f"wrote {report}")
    return 0
