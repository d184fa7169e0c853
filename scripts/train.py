"""``kahve train CONFIG.yaml``: train from a config file (or ``--resume RUN_DIR``)."""

from __future__ import annotations

from pathlib import Path

import yaml


def add_arguments(parser) -> None:
    parser.add_argument("config", nargs="?", help="a YAML training config, e.g. configs/pishti/ppo.yaml")
    parser.add_argument("--override", nargs="*", default=[], metavar="KEY=VALUE",
                        help="change config keys, e.g. total_timesteps=1000 ppo.learning_rate=1e-4")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    from kahve.agents.training import config as config_mod
    from kahve.agents.training.trainer import train
    if args.resume:
        saved = Path(args.resume) / "config.yaml"
        if not saved.is_file():
            raise FileNotFoundError(f"{args.resume} is not a run folder (no config.yaml)")
        raw = yaml.safe_load(saved.read_text())
        if args.override:
            raw = config_mod.apply_overrides(raw, args.override)
        cfg = config_mod.resolve(raw)
    elif args.config:
        cfg = config_mod.load(args.config, args.override)
    else:
        raise ValueError("give a config file (e.g. configs/pishti/ppo.yaml) or --resume RUN_DIR")
    summary = train(cfg, resume_dir=args.resume, progress=not args.no_progress)
    return 130 if summary.get("interrupted") else 0
