"""``kahve train CONFIG.yaml``: train from a config file, or run a recipe (a config with ``stages``, which ends
with a bot file and its report: :mod:`kahve.agents.training.recipe`); ``--resume RUN_DIR`` goes on with either."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("config", nargs="?", help="a YAML training config, e.g. my.yaml, or a shipped config's name, "
                                                  "e.g. pishti/ppo (kahve configs lists them)")
    parser.add_argument("--override", nargs="*", default=[], metavar="KEY=VALUE",
                        help="change config keys, e.g. total_timesteps=1000 ppo.learning_rate=1e-4")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint "
                                                            "(overrides may change its budget, not its network)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress view (on a terminal: the phase under way, one bar for the whole run or "
                             "recipe and its time left)")


def _stop_like_ctrl_c(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(args) -> int:
    import signal

    from kahve.agents.training import config as config_mod
    from kahve.agents.training.run_dir import RunDir
    from kahve.agents.training.backends import train
    from kahve.agents.training import recipe as recipe_mod
    recipe = cfg = None
    if args.resume:
        if args.config:
            raise ValueError("give a config file or --resume RUN_DIR, not both (a resumed run keeps its config; "
                             "change keys with --override)")
        if recipe_mod.is_recipe_run(args.resume):
            recipe = recipe_mod.for_resume(args.resume, args.override)
        else:
            run_dir = RunDir(args.resume)
            cfg = config_mod.for_resume(run_dir.read_config(), args.override, source=str(run_dir.config))
    elif args.config:
        # the header names the file read: one in the working directory, else the one shipped inside the package
        # (a plain install has no configs/ folder here); neither is a did-you-mean line (kahve.configs.resolve)
        from kahve import configs
        path, shipped = configs.resolve(args.config)
        print(f"config {path}" + (f" (shipped with kahve; to edit a copy: kahve configs {args.config} -o my.yaml)"
                                  if shipped else ""))
        path, raw = config_mod.read_file(path)
        if recipe_mod.is_recipe(raw):
            recipe = recipe_mod.load_recipe(path, args.override, raw)
        else:
            cfg = config_mod.resolve(config_mod.apply_overrides(raw, args.override))
    else:
        raise ValueError("give a config file (e.g. configs/pishti/ppo.yaml) or --resume RUN_DIR")
    # SIGTERM (`kill PID`, a job scheduler's or a container's stop) saves a checkpoint as Ctrl-C does: a run
    # started in the background by a script ignores SIGINT, as background jobs do
    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)
    if recipe is not None:
        done = recipe_mod.train_recipe(recipe, resume=bool(args.resume), progress=not args.no_progress)
        return 130 if done.get("interrupted") else 0
    summary = train(cfg, resume_dir=args.resume, progress=not args.no_progress)
    return 130 if summary.get("interrupted") else 0
