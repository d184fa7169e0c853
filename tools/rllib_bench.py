"""Learner steps/s of the RLlib backend with 1 and 2 env runners next to the sb3 backend, in one run, on the same
game, config and network (docs/scale-out.md quotes its output).

    nice -n 5 python tools/rllib_bench.py                       # Pişti 2p, [256, 256], 20,000 steps each
    python tools/rllib_bench.py --runners 1 2 4 8 --steps 50000  # a many-core machine

Each setting is a real ``kahve train`` run (``kahve.agents.training.trainer.train``) into a temporary folder: masked
PPO against random and the heuristic, no behaviour cloning, no self-play, a 2-match final evaluation. Steps/s is
the run summary's: learner decisions per second of the learning loop (sampling and updates together; the start
of Ray, its env runners and the learner are not in it and are printed apart, as is the final evaluation). The
machine's load average is printed before and after: on a shared machine the figures move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path


def _config(args, backend: str, runners: int, per_runner: int, out: Path) -> dict:
    from kahve.agents.training import config as config_mod
    raw = {"game": args.game, "settings": dict(args.settings), "backend": backend, "seed": 0,
           "total_timesteps": args.steps, "n_envs": args.n_envs, "vec_env": args.vec_env,
           "network": {"hidden": args.hidden, "activation": "tanh"},
           "ppo": {"n_steps": args.n_steps, "batch_size": args.batch_size, "n_epochs": args.n_epochs},
           "opponents": {"pool": [{"policy": "random", "weight": 1}, {"policy": "heuristic", "weight": 1}],
                         "self_play": {"every": 0}},
           "evaluation": {"every": 0, "games": 2, "opponents": ["random"], "workers": 1},
           "checkpoint_every": 10**9, "output": str(out),
           "rllib": {"num_env_runners": runners, "num_envs_per_env_runner": per_runner,
                     "num_cpus": args.num_cpus}}
    return config_mod.resolve(raw)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", default="pishti")
    p.add_argument("--settings", default="players=2,episode=deal,reward=points",
                   help="k=v,k=v (YAML values)")
    p.add_argument("--steps", type=int, default=20_000, help="learner decisions per setting")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2], help="env runner counts to measure")
    p.add_argument("--envs-per-runner", type=int, nargs="+", default=[1, 4], help="games per env runner")
    p.add_argument("--n-envs", type=int, default=4, help="the sb3 backend's envs (and with --n-steps the rollout)")
    p.add_argument("--vec-env", default="dummy")
    p.add_argument("--n-steps", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--n-epochs", type=int, default=4)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--num-cpus", type=int, default=0, help="CPUs of the local Ray instance (0: what it needs)")
    p.add_argument("--no-sb3", action="store_true")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args(argv)
    import yaml
    args.settings = {k: yaml.safe_load(v) for k, v in (kv.split("=", 1) for kv in args.settings.split(",") if kv)}

    from kahve.agents.training.trainer import train
    quiet = lambda *a, **k: None                                     # noqa: E731
    rows = []
    load = os.getloadavg()
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{args.game} {args.settings}, network {args.hidden} tanh, rollout {args.n_steps} x {args.n_envs} = "
          f"{args.n_steps * args.n_envs} env steps per update, minibatch {args.batch_size}, {args.n_epochs} epochs, "
          f"{args.steps:,} learner steps per setting")
    settings = [("sb3", 0, 0)] * (not args.no_sb3) + [("rllib", r, e) for e in args.envs_per_runner
                                                      for r in args.runners]
    for backend, runners, per_runner in settings:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = _config(args, backend, runners, per_runner or 1, Path(tmp) / "run")
            t = time.perf_counter()
            summary = train(cfg, progress=False, log=quiet)
            whole = time.perf_counter() - t
        row = {"backend": backend, "env_runners": runners if backend == "rllib" else None,
               "envs": runners * per_runner if backend == "rllib" else args.n_envs,
               "steps": summary["steps"], "steps_per_second": summary["steps_per_second"],
               "learn_seconds": summary["wall_seconds"],
               "startup_seconds": summary.get("rllib", {}).get("startup_seconds"), "whole_seconds": whole,
               "illegal_actions": summary.get("rllib", {}).get("illegal_actions")}
        rows.append(row)
        what = (f"rllib, {runners} env runner{'s' * (runners != 1)} x {per_runner} env{'s' * (per_runner != 1)}"
                if backend == "rllib" else f"sb3 MaskablePPO, {args.n_envs} envs ({args.vec_env})")
        extra = (f", start {row['startup_seconds']:.0f} s, illegal actions {row['illegal_actions']}"
                 if backend == "rllib" else "")
        print(f"  {what:<40} {row['steps_per_second']:>7.0f} learner steps/s ({row['steps']:,} steps in "
              f"{row['learn_seconds']:.1f} s{extra})", flush=True)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"argv": sys.argv[1:], "cpus": os.cpu_count(), "rows": rows},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
