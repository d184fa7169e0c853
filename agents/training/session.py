"""How a training run is scheduled: one session of a run, the same for every backend.

A session opens the run folder (:func:`opened_run`), clones the teacher if that is still due, then learns; as the
step count passes each mark of the :class:`Schedule` it adds a self-play snapshot to the opponent pool, reweights
the league, evaluates the network and writes a checkpoint; at the end (or on Ctrl-C) it writes a last checkpoint,
the summary and, when the budget is spent, the final network and its evaluation.

:class:`Session` is all of that. A backend (:mod:`.sb3`, :mod:`.rllib`) subclasses it and says only what is its
own: how it learns, how its network reads as a :class:`~..policies.network.MLP`, what its checkpoint holds, how
a new opponent pool reaches its envs, and where its scalars are logged. Use :func:`.backends.train` to run one.

``kahve train --resume RUN_DIR`` continues from the run's latest checkpoint with the run's config (overrides may
change the budget and hyperparameters, not the game, the algorithm or the network): step count, weights,
optimizer state, unfinished behaviour cloning, opponent pool, schedule and random states carry over.

Behaviour cloning checkpoints itself as PPO does: when it starts, when each collection of the teacher's decisions is
done, after every epoch of every fit and after each expert-iteration generation (:class:`~.pretrain.Cloning`), so a
kill at any moment loses at most a collection or an epoch. Ctrl-C while cloning writes no checkpoint of its own:
the last one is where a resume goes on, not a fit stopped half-way through an epoch.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..evaluation.evaluate import evaluate
from ..policies.bot import export_onnx
from ..policies.network import MLP
from ..progress import finish, phase, progress_bar, run_progress
from .files import WriteError, check_finite, load_npz, load_tensors, save_npz, save_tensors, write_error
from .pretrain import Cloning
from .run_dir import Checkpoint, RunDir, check_state, network_of
from .view.league import League
from .view.opponents import OpponentPool


def pool_from_config(cfg: dict) -> OpponentPool:
    """The opponent pool of a fresh run (self-play snapshots join it as training goes)."""
    return OpponentPool([(o["policy"], float(o.get("weight", 1.0))) for o in cfg["opponents"]["pool"]])


def evaluate_against(cfg: dict, bot, steps: int, record, log=print, show_progress: bool = False) -> dict:
    """The periodic evaluation of a run: the bot file against each of ``evaluation.opponents`` on the evaluation
    settings; ``record(key, value)`` logs each ``eval/...`` scalar. Returns what the schedule keeps as
    ``last_eval``. ``show_progress``: the games count into the run's progress view."""
    ev = cfg["evaluation"]
    settings = {**cfg["settings"], **ev["settings"]}
    results = {}
    for k, opponent in enumerate(ev["opponents"]):
        with progress_bar(f"evaluation at {steps:,} steps: vs {opponent}", show_progress) as update:
            r = evaluate(cfg["game"], str(bot), opponent, games=ev["games"], settings=settings,
                         workers=ev["workers"], seed=cfg["seed"] * 7919 + k, progress=update)
        key = opponent.replace(":", "_").replace("/", "_")
        record(f"eval/{key}/win_rate", r["win_rate"])
        record(f"eval/{key}/points_per_deal", r["points_per_deal"])
        results[opponent] = {k2: r[k2] for k2 in ("games", "wins", "draws", "losses", "win_rate", "win_rate_ci95",
                                                   "points_per_deal", "points_per_deal_ci95")}
        lo, hi = r["win_rate_ci95"]
        plo, phi = r["points_per_deal_ci95"]    # a few hundred matches: the interval is wide, and it says so
        log(f"[{steps:,} steps] vs {opponent}: win rate {r['win_rate']:.3f} ({lo:.3f}..{hi:.3f}), "
            f"points/deal {r['points_per_deal']:+.2f}" + ("" if math.isnan(plo) else f" ({plo:+.2f}..{phi:+.2f})"))
    return {"steps": steps, "settings": settings, "results": results}


@dataclass
class Schedule:
    """What is due when (in learner steps), and what the run has done in earlier sessions."""
    next_snapshot: int | None
    next_eval: int | None
    next_ckpt: int
    snapshots: int = 0
    last_eval: dict = field(default_factory=dict)
    wall_seconds: float = 0.0      # the wall time of the run's earlier sessions
    pretrain: dict | None = None   # behaviour cloning's progress (:class:`~.pretrain.Cloning`) until it is done
    next_reweight: int | None = None   # the league's next reweighting (pfsp)
    league: dict = field(default_factory=dict)   # the league's win counts (:class:`~.view.league.League`)

    @classmethod
    def fresh(cls, cfg: dict) -> "Schedule":
        league, pre = cfg["opponents"]["league"], cfg["pretrain"]
        cloning = pre["steps"] or pre["generations"]          # (expert iteration from init_from: no cloning first)
        return cls(cfg["opponents"]["self_play"]["every"] or None, cfg["evaluation"]["every"] or None,
                   cfg["checkpoint_every"], pretrain=Cloning(cfg, None).progress if cloning else None,
                   next_reweight=league["every"] if league["weighting"] == "pfsp" else None)

    @classmethod
    def from_state(cls, state: dict, source) -> "Schedule":
        try:
            s = cls(state["next_snapshot"], state["next_eval"], state["next_ckpt"], state["snapshots"],
                    state.get("last_eval", {}), float(state.get("wall_seconds", 0.0)), state.get("pretrain"),
                    state.get("next_reweight"), state.get("league") or {})
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{source}: the schedule is missing or wrong ({type(err).__name__}: {err})") from None
        steps = (s.next_snapshot, s.next_eval, s.next_ckpt, s.snapshots, s.next_reweight)
        counts_ok = isinstance(s.league, dict) and all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v) for v in s.league.values())
        if not all(v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0) for v in steps) \
                or s.next_ckpt is None or not isinstance(s.last_eval, dict) or not counts_ok:
            raise ValueError(f"{source}: the schedule is missing or wrong")
        if s.pretrain is not None:
            Cloning.check(s.pretrain, source)
        return s


class Session:
    """One session of a training run: behaviour cloning if due, then learning, with self-play snapshots, league
    reweighting, evaluations and checkpoints at their step counts. A backend subclass builds its learner in its
    ``__init__`` after this one's, then sets :attr:`start_steps`, and implements the hooks below."""

    backend = ""

    def __init__(self, cfg: dict, run: RunDir, checkpoint: Checkpoint | None = None, log=print):
        self.cfg, self.run_dir, self.log = cfg, run, log
        self.session_start: float | None = None
        self.learn_start: float | None = None
        self.cloning_seconds = 0.0                      # this session's
        self.show_progress = False                      # the run's progress view (:mod:`..progress`) is shown
        self._learned = None                            # its update of the learning steps, while learning
        self.resumed = checkpoint is not None
        self.state = None if checkpoint is None else checkpoint.read_state()
        if checkpoint is None:
            self.schedule = Schedule.fresh(cfg)
            self.pool = pool_from_config(cfg)
        else:
            self.check_checkpoint(checkpoint, self.state)
            check_state(self.state, cfg, checkpoint.state_file)
            self.schedule = Schedule.from_state(self.state, checkpoint.state_file)
            summary = run.read_summary()          # a finished session also counts its final evaluation
            if summary and summary.get("steps") == self.state["steps"] and not summary.get("interrupted"):
                self.schedule.wall_seconds = max(self.schedule.wall_seconds, float(summary["wall_seconds_total"]))
            self.pool = OpponentPool.load(checkpoint.opponents)
        league = cfg["opponents"]["league"]
        self.league = (League(league["power"], league["floor"], league["window"], self.schedule.league)
                       if league["weighting"] == "pfsp" else None)
        #: the configured weight of each baseline, by id (a snapshot's is self_play.weight)
        self.base_weights = {o["policy"]: float(o.get("weight", 1.0)) for o in cfg["opponents"]["pool"]}
        self.cloning = None if self.schedule.pretrain is None else Cloning(
            cfg, self.pool, self.schedule.pretrain, log=log, run_dir=run, checkpoint=self.cloning_checkpoint)
        #: the version of the demonstrations (:attr:`.pretrain.Cloning.data_version`) the latest checkpoint holds
        self.demonstrations_saved = None
        if self.cloning is not None and checkpoint is not None:
            self.cloning.check_made_by(checkpoint.state_file)
            if self.schedule.pretrain["collected"]:
                self.cloning.demonstrations = Cloning.check_demonstrations(load_npz(checkpoint.demonstrations),
                                                                           checkpoint.demonstrations)
                self.demonstrations_saved = self.cloning.data_version
            if self.schedule.pretrain.get("fit") is not None and checkpoint.cloning_fit.is_file():
                self.cloning.resume_fit(load_tensors(checkpoint.cloning_fit), checkpoint.cloning_fit)
        self.start_steps = 0

    # ----- what a backend says --------------------------------------------------------------------------------
    def check_checkpoint(self, checkpoint: Checkpoint, state: dict) -> None:
        """Refuse a checkpoint this backend did not write."""

    @property
    def steps(self) -> int:
        raise NotImplementedError

    def network(self) -> MLP:
        """The learner's policy as it stands."""
        raise NotImplementedError

    def cloning_target(self):
        """What behaviour cloning fits (an SB3 model, or a view of one with ``policy``)."""
        raise NotImplementedError

    def after_cloning(self) -> None:
        """The cloned weights reach wherever the backend acts with them."""

    def pool_changed(self, weights_only: bool = False) -> None:
        """:attr:`pool` changed (a snapshot joined it, or the league reweighted it): tell the envs."""
        raise NotImplementedError

    def record(self, key: str, value: float) -> None:
        """Log a scalar at the current step."""
        raise NotImplementedError

    def flush(self) -> None:
        """Write the logged scalars out."""

    def checkpoint_files(self, ck: Checkpoint, envs_reachable: bool) -> dict:
        """Write the backend's files into ``ck`` (weights, optimizer, opponents) and return its state.json part."""
        raise NotImplementedError

    def learn(self, progress: bool) -> None:
        raise NotImplementedError

    def ending(self, interrupted: bool) -> dict:
        """Before the last checkpoint: what the backend adds to the summary."""
        return {}

    def close(self, interrupted: bool) -> None:
        """Stop what the backend started (env processes, Ray)."""

    # ----- the schedule, after every step of the learner ------------------------------------------------------
    def on_step(self, steps: int) -> None:
        if self._learned is not None:
            self._learned(steps - self.start_steps)
        due = self.schedule
        if due.next_snapshot is not None and steps >= due.next_snapshot:
            self_play = self.cfg["opponents"]["self_play"]
            self.pool = self.pool.with_snapshot(self.network(), self_play["weight"], self_play["max_snapshots"])
            self.pool_changed()
            due.snapshots += 1
            self.record("selfplay/snapshots", due.snapshots)
            due.next_snapshot += self_play["every"]
        if self.league is not None and due.next_reweight is None:     # pfsp switched on when resuming
            due.next_reweight = steps + self.cfg["opponents"]["league"]["every"]
        if due.next_reweight is not None and steps >= due.next_reweight:
            self.reweight()
            due.next_reweight += self.cfg["opponents"]["league"]["every"]
        if due.next_eval is not None and steps >= due.next_eval:
            self.evaluate(steps)
            due.next_eval += self.cfg["evaluation"]["every"]
        if steps >= due.next_ckpt:
            self.save_checkpoint()
            due.next_ckpt += self.cfg["checkpoint_every"]

    # ----- the league (opponents.league.weighting: pfsp) ------------------------------------------------------
    def record_episodes(self, infos) -> None:
        """Count finished episodes against the pool entries they were played with."""
        if self.league is None:
            return
        ids = self.pool.ids
        for info in infos:
            for k in info.get("opponent_entries", ()):
                if k < len(ids):             # an episode drawn just before the pool changed may name a gone entry
                    self.league.record(ids[k], info["won"])

    def reweight(self) -> None:
        """The pool's weights from the league's win rates (:mod:`.view.league`), pushed to every env."""
        self.league.forget_all_but(self.pool.ids)
        base = [self.base_weights.get(i, self.cfg["opponents"]["self_play"]["weight"]) for i in self.pool.ids]
        weights = self.league.weights(self.pool.ids, base)
        self.pool = self.pool.with_weights(weights)
        self.pool_changed(weights_only=True)
        self.schedule.league = self.league.state()
        total = sum(weights)
        for i, w in zip(self.pool.ids, weights):
            key = i.replace(":", "_").replace("/", "_")
            self.record(f"league/{key}/share", w / total)
            self.record(f"league/{key}/win_rate", self.league.win_rate(i))

    # ----- the network as a bot ---------------------------------------------------------------------------
    def export(self, path: Path, evaluation: dict | None = None) -> Path:
        meta = self.run_dir.bot_metadata(self.cfg, self.steps, evaluation)
        return export_onnx(self.finite_network(), path, meta)

    def finite_network(self) -> MLP:
        """:meth:`network`, refused if a weight is not finite: no bot file or policy.npz is written with one."""
        mlp = self.network()
        check_finite(mlp.to_arrays(), f"the network at {self.steps:,} steps",
                     "the training diverged; it is not written")
        return mlp

    def evaluate(self, steps: int, final: bool = False) -> dict:
        with phase("eval", "evaluation", self.show_progress, complete=final, own_bar=False):
            bot = self.export(self.run_dir.eval_bot)
            self.schedule.last_eval = evaluate_against(self.cfg, bot, steps, self.record, self.log,
                                                       self.show_progress)
        self.flush()
        return self.schedule.last_eval

    # ----- checkpoints ------------------------------------------------------------------------------------
    def save_checkpoint(self, envs_reachable: bool = True) -> None:
        """Write ``checkpoints/latest``. ``envs_reachable=False`` (Ctrl-C with env processes, whose pipes may
        hold half a message): the envs' random states are left out, and a resume gives them new ones."""
        def fill(ck: Checkpoint) -> dict:
            state = self.checkpoint_files(ck, envs_reachable)
            if self.cloning is not None and self.cloning.demonstrations is not None:
                self.save_demonstrations(ck)
            if self.cloning is not None and self.cloning.fit_state is not None:
                save_tensors(ck.cloning_fit, self.cloning.fit_state)
            if self.league is not None:
                self.schedule.league = self.league.state()
            schedule = asdict(self.schedule)
            schedule["wall_seconds"] = self.schedule.wall_seconds + self.session_seconds()
            return {**state, **schedule, "network": network_of(self.cfg)}
        self.run_dir.write_checkpoint(fill)
        if self.cloning is not None:
            self.demonstrations_saved = self.cloning.data_version

    def save_demonstrations(self, ck: Checkpoint) -> None:
        """The demonstrations into ``ck``: linked from the latest checkpoint where they have not changed since (cloning
        checkpoints after every epoch, and they may be gigabytes), else written."""
        before = self.run_dir.latest.demonstrations
        if self.demonstrations_saved == self.cloning.data_version and before.is_file():
            try:
                os.link(before, ck.demonstrations)       # (files in a checkpoint are written once, never changed)
                return
            except OSError:
                pass                                       # a file system without hard links: write them again
        save_npz(ck.demonstrations, self.cloning.demonstrations)

    def cloning_checkpoint(self) -> None:
        """A checkpoint while behaviour cloning (:class:`~.pretrain.Cloning` calls it at each point it can resume
        from), with the cloned weights where the backend acts with them."""
        self.after_cloning()
        self.save_checkpoint()

    def session_seconds(self) -> float:
        return 0.0 if self.session_start is None else time.perf_counter() - self.session_start

    def learn_seconds(self) -> float:
        return 0.0 if self.learn_start is None else time.perf_counter() - self.learn_start

    # ----- a session --------------------------------------------------------------------------------------
    def planned(self) -> list:
        """The work of this session and what the run has done already, phase by phase (:mod:`.plan`): what the
        progress view estimates the run's ETA from."""
        from .plan import training_phases
        cloned = self.schedule.pretrain if self.schedule.pretrain is not None else self.resumed
        return training_phases(self.cfg, cloned, self.start_steps, self.schedule.next_eval)

    def run(self, progress: bool = True) -> dict:
        """The session, with one progress view of the whole run when ``progress`` (:func:`..progress.run_progress`:
        every phase, cloning to the final evaluation, and the run's ETA)."""
        self.show_progress = progress
        with run_progress(self.planned(), progress, title="the run"):
            return self._run(progress)

    def _run(self, progress: bool) -> dict:
        self.session_start = time.perf_counter()
        interrupted = False
        try:
            try:
                if self.cloning is not None:
                    if not self.resumed:
                        self.cloning_checkpoint()         # before any work: a kill from here on leaves one to resume
                    try:
                        report = self.cloning.run(self.cloning_target(), show_progress=progress)
                    finally:
                        self.cloning_seconds = self.cloning.seconds
                        self.after_cloning()
                    self.run_dir.write_pretrain_report(report)
                    self.schedule.pretrain, self.cloning = None, None
                    self.save_checkpoint()                 # the cloned network, before any learning
                with phase("learn", f"learning ({self.cfg['algorithm']})", progress) as update:
                    self._learned = update                 # (on_step counts the steps into the run's view)
                    try:
                        self.learn(False)                  # (the view is the progress bar)
                    finally:
                        self._learned = None
            except KeyboardInterrupt:
                interrupted = True
            extra = self.ending(interrupted)
            # stopped while cloning: its last checkpoint is where it can go on from (a fit stopped in an epoch is not)
            if self.cloning is None or self.run_dir.find_checkpoint() is None:
                self.save_checkpoint(envs_reachable=not (interrupted and self.own_processes()))
            if interrupted and self.own_processes():
                self.log("note: the env processes were interrupted, so their random streams were not saved; "
                         "a resume deals from new ones")
            summary = {**self.summary(interrupted), **extra}
            if not interrupted:
                self.finite_network().save(self.run_dir.policy)
                summary["evaluation"] = self.evaluate(self.steps, final=True)
                finish()                                   # the run's view: nothing is left of this run
            self.run_dir.write_summary(summary)
            self.log(self.closing_line(summary))
        finally:
            self.close(interrupted)
        return summary

    def own_processes(self) -> bool:
        """Whether the envs live in processes of their own, which Ctrl-C reaches too."""
        return False

    def summary(self, interrupted: bool) -> dict:
        steps, wall = self.steps, self.learn_seconds()
        this_session = steps - self.start_steps
        return {"steps": steps, "steps_this_session": this_session, "resumed_from": self.start_steps if self.resumed
                else None, "wall_seconds": wall, "pretrain_seconds": self.cloning_seconds,
                "wall_seconds_total": self.schedule.wall_seconds + self.session_seconds(),
                "steps_per_second": this_session / wall if wall > 0 else None, "interrupted": interrupted}

    def closing_line(self, summary: dict) -> str:
        steps, rate, cloning = summary["steps"], summary["steps_per_second"], summary["pretrain_seconds"]
        if self.learn_start is None:                      # stopped while behaviour cloning
            session = f"{cloning:.0f} s of behaviour cloning"
        else:
            session = (f"{summary['steps_this_session']:,} steps in {summary['wall_seconds']:.0f} s"
                       + (f" ({rate:.0f} steps/s)" if rate is not None else "")
                       + (f" after {cloning:.0f} s of behaviour cloning" if cloning else ""))
        whole = (f"; the run: {steps:,} steps, {summary['wall_seconds_total']:.0f} s in all sessions"
                 if self.resumed else "")
        if summary["interrupted"]:
            return (f"interrupted: this session {session}{whole}; checkpoint saved at {steps:,} steps; continue with "
                    f"`kahve train --resume {self.run_dir}`")
        return f"done: {'this session ' if self.resumed else ''}{session}{whole}; run folder {self.run_dir}"


@contextlib.contextmanager
def opened_run(cfg: dict, resume_dir: str | None, log=print):
    """The run folder of a training session, locked while it runs, with the config written: a new one (a folder
    that already holds a run is refused) or the one to resume (a finished run is refused). Yields ``(run,
    checkpoint)``, the checkpoint None for a new run. Every backend trains inside it."""
    run = RunDir(resume_dir if resume_dir else cfg["output"])
    if resume_dir and not run.root.is_dir():
        raise FileNotFoundError(f"no run folder at {run}")
    if not resume_dir:
        run.create()
    with run.lock(), _full_disk_named(run):
        if resume_dir:
            checkpoint = run.recover()
            if checkpoint is None:
                raise FileNotFoundError(f"{run} has no checkpoint to resume (checkpoints/latest/state.json)")
            steps = checkpoint.read_state()["steps"]
            _refuse_finished(run, cfg, steps)
            log(f"resuming {run} from its checkpoint at {steps:,} steps (of {cfg['total_timesteps']:,})")
        else:
            if run.find_checkpoint() is not None:
                raise ValueError(f"{run} already holds a run; resume it with --resume {run}, or choose "
                                 f"another output folder (--override output=...)")
            checkpoint = None
        run.write_config(cfg)
        yield run, checkpoint


@contextlib.contextmanager
def _full_disk_named(run: RunDir):
    """A full disk anywhere in a session (TensorBoard's logs, a library's file) is one line naming the run folder;
    the writes of kahve's own files name the file themselves (:class:`~.files.WriteError`)."""
    try:
        yield
    except OSError as err:
        if isinstance(err, WriteError) or err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise write_error(run, err, "cannot write in the run folder {target}: {reason}") from None


def _refuse_finished(run: RunDir, cfg: dict, steps: int) -> None:
    if steps < cfg["total_timesteps"]:
        return
    summary = run.read_summary()
    if summary and not summary.get("interrupted") and summary.get("steps") == steps and run.policy.is_file():
        raise ValueError(f"{run} is finished ({steps:,} steps of total_timesteps {cfg['total_timesteps']:,}); to "
                         f"train on, raise the budget: kahve train --resume {run} --override total_timesteps=N")


# ----- random states (every checkpoint holds them) -------------------------------------------------------------
def random_states() -> dict:
    """Python's and numpy's global random states, JSON-able (torch's travels in model.pt)."""
    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {"rng": [version, list(internal), gauss],
            "np_rng": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]}


def set_random_states(state: dict, source) -> None:
    """Put back what :func:`random_states` wrote; anything else in their place is a ``ValueError`` naming
    ``source``."""
    try:
        version, internal, gauss = state["rng"]
        name, keys, pos, has_gauss, cached = state["np_rng"]
        keys = np.array(keys, dtype=np.int64)
        # numpy indexes its key array by pos, unchecked: a short array or a pos past it is no state
        if keys.shape != (624,) or keys.min() < 0 or keys.max() >= 2**32 or not 0 <= pos <= 624:
            raise ValueError("numpy's is not 624 32-bit keys and a position up to 624")
        random.setstate((version, tuple(internal), gauss))
        np.random.set_state((name, keys.astype(np.uint32), pos, has_gauss, cached))
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as err:
        text = str(err).strip()
        raise ValueError(f"{source}: the random states are missing or wrong "
                         f"({text.splitlines()[0][:200] if text else type(err).__name__})") from None
