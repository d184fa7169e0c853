"""``kahve export RUN_DIR -o FILE.onnx``: one self-contained bot file from a training run, with an optional
evaluation report beside it (FILE.md). ``--sb3 FILE.zip`` also writes the checkpoint in stable-baselines3's own
format (a pickle: load it only from people you trust).

Nothing in the run folder is unpickled: the network comes from ``policy.npz`` (a finished run) or from the
latest checkpoint's weights, rebuilt with the run's config.yaml."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("run_dir", help="a training run folder (made by kahve train)")
    parser.add_argument("-o", "--output", required=True, help="the bot file to write, e.g. checkpoints/pishti/ppo.onnx")
    parser.add_argument("--report", nargs="*", default=None, metavar="OPPONENT",
                        help="evaluate the bot against these opponents (default: random heuristic ismcts:200) "
                             "and write FILE.md beside the bot")
    parser.add_argument("--games", type=int, default=200, help="matches per report evaluation")
    parser.add_argument("--levels", type=int, default=0, metavar="PAIRS", help="with --report: also each difficulty "
                        "level (easy, medium, hard) against the heuristic, PAIRS mirrored pairs of single deals, and "
                        "its time per move")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--command", default=None, help="the training command, quoted in the report")
    parser.add_argument("--sb3", metavar="FILE.zip", default=None,
                        help="also write the latest checkpoint as a stable-baselines3 model file (SB3's pickle "
                             "format, for use with SB3 itself)")


def run(args) -> int:
    from .common import check_output
    from kahve.agents.policies.bot import export_onnx
    from kahve.agents.policies.network import MLP
    from kahve.agents.training import config as config_mod
    from kahve.agents.training.run_dir import RunDir, check_network, check_state
    from kahve.agents.training.files import load_npz

    if args.levels < 0 or (args.levels and args.report is None):
        raise ValueError("--levels PAIRS adds the difficulty levels to the report: give --report too, and PAIRS >= 1")
    if args.report is not None and (args.games < 1 or args.workers < 1):
        raise ValueError(f"--games and --workers of the report must be at least 1, not {args.games} and "
                         f"{args.workers}")
    check_output(args.output, "-o")                    # a bad output path fails now, not after the export's work
    if args.sb3:
        check_output(args.sb3, "--sb3")
    run_dir = RunDir(args.run_dir)
    cfg = config_mod.saved_config(run_dir.read_config(), str(run_dir.config))
    summary = run_dir.read_summary() or {}
    ck = run_dir.find_checkpoint()
    state = ck.read_state() if ck is not None else None
    if state is not None:
        check_state(state, cfg, ck.state_file)
    finished = (summary and not summary.get("interrupted") and run_dir.policy.is_file()
                and (state is None or summary.get("steps") == state["steps"]))
    model = None
    if finished:
        try:
            mlp = MLP.from_arrays(load_npz(run_dir.policy))
        except (KeyError, ValueError) as err:
            raise ValueError(f"{run_dir.policy}: not a network file ({err})") from None
        check_network(mlp, cfg, run_dir.policy)          # of the config's shape, every weight finite
        steps, evaluation, wall = summary["steps"], summary.get("evaluation", {}), summary.get("wall_seconds_total")
    elif ck is not None:
        from kahve.agents.training.backends import model_from_checkpoint
        model = model_from_checkpoint(cfg, run_dir, ck)
        mlp = MLP.from_sb3(model)
        check_network(mlp, cfg, ck.weights)
        steps, evaluation, wall = state["steps"], state.get("last_eval") or {}, state.get("wall_seconds")
    else:
        raise FileNotFoundError(f"{run_dir} has neither a final network (policy.npz) nor a checkpoint")
    meta = run_dir.bot_metadata(cfg, steps, evaluation, wall_seconds=wall)
    path = export_onnx(mlp, args.output, meta)
    print(f"wrote {path} ({path.stat().st_size:,} bytes): {cfg['game']} {cfg['algorithm']}, {steps:,} steps")
    if args.sb3:
        if ck is None:
            raise FileNotFoundError(f"{run_dir} has no checkpoint to write in SB3's format")
        if model is None:
            from kahve.agents.training.backends import model_from_checkpoint
            model = model_from_checkpoint(cfg, run_dir, ck)
        model.save(args.sb3)
        print(f"wrote {args.sb3}: stable-baselines3's format, step {state['steps']:,} (a pickle: loading it runs "
              "code, so share it only with people who trust you)")
    if args.report is not None:
        from kahve.agents.evaluation.report import write_report
        opponents = args.report or ["random", "heuristic", "ismcts:200"]
        report = write_report(path, opponents, games=args.games, workers=args.workers, command=args.command,
                              show_progress=True, levels=args.levels)
        print(f"wrote {report}")
    return 0
