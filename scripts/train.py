"""``kahve train CONFIG.yaml``: train from a config file (or ``--resume RUN_DIR``)."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("config", nargs="?", help="a YAML training config, e.g. configs/pishti/ppo.yaml")
    parser.add_argument("--override", nargs="*", default=[], metavar="KEY=VALUE",
                        help="change config keys, e.g. total_timesteps=1000 ppo.learning_rate=1e-4")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint "
                                                            "(overrides may change its budget, not its network)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _stop_like_ctrl_c(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(args) -> int:
    import signal

    from kahve.agents.training import config as config_mod
    from kahve.agents.training.run_dir import RunDir
    from kahve.agents.training.trainer import train
    if args.resume:
        if args.config:
            raise ValueError("give a config file or --resume RUN_DIR, not both (a resumed run keeps its config; "
                             "change keys with --override)")
        run_dir = RunDir(args.resume)
        cfg = config_mod.for_resume(run_dir.read_config(), args.override, source=str(run_dir.config))
    elif args.config:
        cfg = config_mod.load(args.config, args.override)
    else:
        raise ValueError("give a config file (e.g. configs/pishti/ppo.yaml) or --resume RUN_DIR")
    # SIGTERM (`kill PID`, a job scheduler's or a container's stop) saves a checkpoint as Ctrl-C does: a run
    # started in the background by a script ignores SIGINT, as background jobs do
    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)
    summary = train(cfg, resume_dir=args.resume, progress=not args.no_progress)
    return 130 if summary.get("interrupted") else 0
