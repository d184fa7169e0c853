"""Behaviour cloning before PPO (and demonstrations before DQN): start the learner where a teacher policy
(usually the heuristic) stands. A masked DQN fits its Q-network instead (:meth:`~.dqn.MaskedDQN.fit_demonstrations`:
DQfD's large-margin loss and the teacher's returns); :func:`fit_demonstrations` picks the fit.

Learning card play from scratch spends most of its budget discovering what any club player knows (capture
when you can, keep a jack). A fresh MaskablePPO run can instead imitate a teacher first: the teacher plays the
learner's seat in the same single-agent view the learner will train in (same opponents, same observations), and
the policy network is fitted to its moves (cross-entropy over the legal actions), the value network to the
discounted returns it obtained. PPO then improves on the teacher against the configured opponents.

A clone errs now and then, reaches states the teacher never showed it, and errs more there (the errors
compound). DAgger (Ross, Gordon & Bagnell, 2011) fixes that: the cloned policy plays the learner's seat, the
teacher labels every state it reaches, the labels join the data and the policy is fitted again, for
``dagger_rounds`` rounds.

Expert iteration (Anthony, Tian & Barber, 2017) goes on from there for ``generations`` generations: a search
over the current network (``pretrain.search``, e.g. ``rollout:16,z=1:{student}``: rollouts finished by the
network itself) is a stronger player than the network, so it labels the states the network reaches, the network
is fitted to those labels, and the next generation searches over the improved network. Search labels cost
milliseconds each, so they are collected in worker processes and cached in the run folder per generation.

:class:`Cloning` runs all of it for a training run, in stages that a checkpoint can hold.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..policies.network import MLP, NetworkPolicy
from .view.opponents import OpponentPool
from ..policies.specs import make_policy
from ..progress import finish, phase
from .view.learner_env import LearnerEnv
from .tables import table_settings
from .files import arrays_hash, check_finite, load_npz, save_npz_atomic, short, write_atomic


#: a worker process's share of the decisions collected so far (:func:`collect_demonstrations`' progress)
_COUNTED = None
#: decisions between two updates of the progress count
_COUNT_EVERY = 64


def _count_into(counter) -> None:
    """A labelling worker's start: count into ``counter``; Ctrl-C is the parent's to handle."""
    import signal
    global _COUNTED
    _COUNTED = counter
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def collect_demonstrations(game: str, settings: dict | list[dict], pool: OpponentPool, teacher: str, steps: int,
                           gamma: float, seed: int, workers: int = 1, actor: MLP | None = None,
                           progress=None) -> dict:
    """Play ``steps`` learner decisions with ``teacher`` in the learner's seat, in ``workers`` processes
    (a search teacher such as ``rollout:8`` costs milliseconds per decision). With ``actor`` (DAgger), the
    actor's greedy choice is played and the teacher only labels each state; ``agree`` says where they chose
    the same. ``progress(done, total)`` is called as decisions are labelled (the workers count into one
    shared integer, read twice a second)."""
    if workers > 1:
        import multiprocessing
        share = -(-steps // workers)
        context = multiprocessing.get_context("spawn")
        counted = context.Value("q", 0)
        # the pool's exit terminates the workers, so Ctrl-C (or any error) here ends them at once; they ignore
        # SIGINT themselves and leave it to this process
        with context.Pool(workers, initializer=_count_into, initargs=(counted,)) as processes:
            jobs = [processes.apply_async(collect_demonstrations, (game, settings, pool, teacher, share, gamma,
                                                                   seed * 1009 + w, 1, actor, None))
                    for w in range(workers)]
            while any(not job.ready() for job in jobs):
                next(job for job in jobs if not job.ready()).wait(0.5)
                if progress:
                    progress(min(counted.value, share * workers), share * workers)
            parts = [job.get() for job in jobs]
        if progress:
            progress(share * workers, share * workers)
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    from ..threads import limit_threads
    limit_threads()
    env = LearnerEnv(game, settings, pool, seed=seed)
    teachers = [make_policy(teacher, game, seed) for game in env.games]     # one per table (its game's)
    player = NetworkPolicy(actor, seed=seed) if actor is not None else None
    obs_l, mask_l, act_l, ret_l, agree_l = [], [], [], [], []
    while len(act_l) < steps:
        obs, info = env.reset()
        policy = teachers[env.games.index(env.game)]
        rewards, done = [], False
        while not done:
            mask = env.action_masks()
            a = policy.act(obs, mask, env.state)
            played = a if player is None else player.act(obs, mask)
            obs_l.append(obs)
            mask_l.append(mask)
            act_l.append(a)
            agree_l.append(played == a)
            obs, r, term, trunc, info = env.step(played)
            rewards.append(r)
            done = term or trunc
            if len(act_l) % _COUNT_EVERY == 0:
                _count(len(act_l), steps, progress)
        g, returns = 0.0, []
        for r in reversed(rewards):
            g = r + gamma * g
            returns.append(g)
        ret_l.extend(reversed(returns))
    if progress:
        progress(steps, steps)
    return {"obs": np.array(obs_l, dtype=np.float32), "masks": np.array(mask_l, dtype=bool),
            "actions": np.array(act_l, dtype=np.int64), "returns": np.array(ret_l, dtype=np.float32),
            "agree": np.array(agree_l, dtype=bool)}


def _count(done: int, steps: int, progress) -> None:
    """Report ``done`` decisions: to ``progress`` in this process, or into the pool's shared count (a worker
    adds :data:`_COUNT_EVERY` a time)."""
    if progress:
        progress(min(done, steps), steps)
    elif _COUNTED is not None:
        with _COUNTED.get_lock():
            _COUNTED.value += _COUNT_EVERY


def behaviour_clone(model, data: dict, epochs: int, batch_size: int, learning_rate: float, seed: int,
                    log=print, progress=None, start: dict | None = None, on_epoch=None) -> dict:
    """Fit a MaskablePPO policy to the demonstrations; returns the final accuracy and losses. ``progress(done,
    total)`` counts the minibatches of all epochs. ``on_epoch(epochs_done, optimizer, rng, stats)`` is called after
    every epoch, and ``start`` (:func:`resume_fit`) goes on after the epochs a fit had done: the same fit, as if it had
    never stopped."""
    import torch as th
    policy = model.policy
    device = policy.device
    obs = th.as_tensor(data["obs"], device=device)
    masks = th.as_tensor(data["masks"], device=device)
    actions = th.as_tensor(data["actions"], device=device)
    # the value network learns returns in the units PPO's rewards will have (ppo.reward_scale)
    returns = th.as_tensor(data["returns"], device=device) * float(getattr(model, "reward_scale", 1.0))
    optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate)
    rng = np.random.default_rng(seed)
    first, stats = resume_fit(optimizer, rng, start)
    n = len(actions)
    policy.set_training_mode(True)
    batches = -(-n // batch_size)
    for epoch in range(first, epochs):
        order = rng.permutation(n)
        total_pi = total_v = 0.0
        for b, begin in enumerate(range(0, n, batch_size)):
            if progress:
                progress(epoch * batches + b, epochs * batches)
            idx = th.as_tensor(order[begin:begin + batch_size], device=device)
            values, log_prob, _ = policy.evaluate_actions(obs[idx], actions[idx], action_masks=masks[idx])
            pi_loss = -log_prob.mean()
            v_loss = th.nn.functional.mse_loss(values.flatten(), returns[idx])
            loss = pi_loss + 0.5 * v_loss
            optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            total_pi += pi_loss.item() * len(idx)
            total_v += v_loss.item() * len(idx)
        with th.no_grad():
            dist = policy.get_distribution(obs[:20000], action_masks=masks[:20000].cpu().numpy())
            acc = (dist.distribution.probs.argmax(dim=1) == actions[:20000]).float().mean().item()
        stats = {"epoch": epoch + 1, "policy_loss": total_pi / n, "value_loss": total_v / n, "accuracy": acc}
        log(f"behaviour cloning epoch {epoch + 1}/{epochs}: policy loss {stats['policy_loss']:.3f}, "
            f"value loss {stats['value_loss']:.3f}, agreement with the teacher {acc:.1%}")
        if on_epoch is not None:
            on_epoch(epoch + 1, optimizer, rng, stats)
    policy.set_training_mode(False)
    return stats


def resume_fit(optimizer, rng, start: dict | None) -> tuple[int, dict]:
    """Put back the state of a fit after its first epochs, as :class:`Cloning` recorded it (``start``: ``epoch``,
    ``optimizer`` (its state dict), ``rng`` (the state of the batches' order), ``stats``, and ``source``, the file
    they came from); returns (epochs done, their last statistics). Another fit's state is a ``ValueError`` naming
    the file."""
    if start is None:
        return 0, {}
    try:
        optimizer.load_state_dict(start["optimizer"])
        for group in optimizer.param_groups:             # (torch checks the counts, not the shapes)
            for param in group["params"]:
                for value in optimizer.state.get(param, {}).values():
                    if getattr(value, "dim", lambda: 0)() and value.shape != param.shape:
                        raise ValueError(f"a state of shape {tuple(value.shape)} for weights of {tuple(param.shape)}")
        rng.bit_generator.state = start["rng"]
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as err:
        raise ValueError(f"{start['source']}: not the state of this run's fit ({_first_line(err)})") from None
    return start["epoch"], dict(start["stats"])


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else type(err).__name__


def fit_demonstrations(model, data: dict, epochs: int, batch_size: int, learning_rate: float, seed: int,
                       log=print, progress=None, start: dict | None = None, on_epoch=None) -> dict:
    """Fit ``model`` to demonstrations: its own ``fit_demonstrations`` (the masked DQN's large-margin loss,
    :mod:`.sb3.dqn`) if it has one, else behaviour cloning of a MaskablePPO policy. ``start`` and ``on_epoch``: see
    :func:`behaviour_clone`."""
    fit = getattr(model, "fit_demonstrations", None)
    if fit is not None:
        return fit(data, epochs, batch_size, learning_rate, seed, log=log, progress=progress, start=start,
                   on_epoch=on_epoch)
    return behaviour_clone(model, data, epochs, batch_size, learning_rate, seed, log=log, progress=progress,
                           start=start, on_epoch=on_epoch)


DEMONSTRATION_ARRAYS = ("obs", "masks", "actions", "returns", "agree")


class Cloning:
    """Behaviour cloning then DAgger (then expert iteration) for a run, in stages that survive an interruption:
    ``progress`` (JSON, in the checkpoint's state) counts the batches of demonstrations collected and the fits done,
    with the epochs of a fit under way, and ``demonstrations`` (arrays, the checkpoint's demonstrations.npz) holds the
    data collected so far. ``checkpoint()`` is called at every point the work can go on from: when a collection is
    done, after every epoch of a fit (the fit's optimizer, :attr:`fit_state`, goes into the checkpoint too) and when
    a fit is done; so a kill loses at most one collection or one epoch. ``progress["made_by"]`` records what the
    demonstrations are of; a resume with another teacher (or game, or observations) is refused."""

    def __init__(self, cfg: dict, pool: OpponentPool, progress: dict | None = None,
                 demonstrations: dict | None = None, log=print, run_dir=None, checkpoint=None):
        self.cfg, self.pool, self.log, self.run_dir = cfg, pool, log, run_dir
        self.progress = progress or {"collected": 0, "fits": 0, "seconds": 0.0, "stats": {}, "rounds": [],
                                     "made_by": self.made_by()}
        self.data_version = 0              # counts the changes of the demonstrations (a checkpoint writes them once)
        self.demonstrations = demonstrations
        #: the optimizer's state after the epochs done of the fit under way (the checkpoint's cloning_fit.pt)
        self.fit_state: dict | None = None
        self._fit_source = None
        self.checkpoint = checkpoint or (lambda: None)
        self.seconds = 0.0                                   # this session's
        self._started, self._seconds_before = None, 0.0
        self.show_progress = False

    @property
    def demonstrations(self) -> dict | None:
        return self._demonstrations

    @demonstrations.setter
    def demonstrations(self, data: dict | None) -> None:
        self._demonstrations = data
        self.data_version += 1

    def made_by(self) -> dict:
        """What the demonstrations are of: the game and the shape of its observations, and the teacher."""
        from kahve import envs
        cfg = self.cfg
        game = envs.game_class(cfg["game"])(**cfg["settings"])
        return json.loads(json.dumps({
            "game": cfg["game"], "settings": game.settings.as_dict(), "tables": cfg.get("tables", []),
            "env_version": game.version, "observation_size": game.observation_size, "num_actions": game.num_actions,
            "teacher": cfg["pretrain"]["teacher"]}))

    def check_made_by(self, source) -> None:
        """Refuse to go on with demonstrations collected by another teacher, game or observation layout (what the
        resumed config says); progress written before kahve recorded this is taken as this run's."""
        recorded, now = self.progress.get("made_by"), self.made_by()
        if recorded is not None and self.progress["collected"] and recorded != now:
            raise ValueError(f"{source}: the demonstrations of behaviour cloning were collected with "
                             f"{_differences(recorded, now)}: not what they would be now; resume with the run's "
                             "config as it was, or start a new run")
        self.progress["made_by"] = now

    @staticmethod
    def check(progress: dict, source) -> None:
        def count(v) -> bool:
            return isinstance(v, int) and not isinstance(v, bool) and v >= 0
        fit = progress.get("fit") if isinstance(progress, dict) else None
        if not (isinstance(progress, dict) and {"collected", "fits", "seconds", "stats", "rounds"} <= set(progress)
                and count(progress["collected"]) and count(progress["fits"])
                and isinstance(progress["rounds"], list) and isinstance(progress["stats"], dict)
                and isinstance(progress.get("generations", []), list)
                and isinstance(progress.get("made_by", {}), dict)
                and (fit is None or (isinstance(fit, dict) and count(fit.get("epochs"))
                                     and isinstance(fit.get("rng"), dict) and isinstance(fit.get("stats"), dict)))):
            raise ValueError(f"{source}: the behaviour cloning progress is missing or wrong")

    @staticmethod
    def check_demonstrations(data: dict, source) -> dict:
        if set(data) != set(DEMONSTRATION_ARRAYS) or len({len(a) for a in data.values()}) != 1:
            raise ValueError(f"{source}: expected the arrays {', '.join(DEMONSTRATION_ARRAYS)}, one row per decision")
        return data

    def resume_fit(self, fit_state: dict, source) -> None:
        """The optimizer's state of the fit under way, from the checkpoint (``source``: its file)."""
        self.fit_state, self._fit_source = fit_state, source

    def _collect(self, steps: int, seed: int, actor=None, stage: str = "labelling", teacher: str | None = None,
                 label: str | None = None, key: str = "clone.collect") -> dict:
        """``key``: the phase of the run's progress view (:func:`.plan.training_phases`) this collection is."""
        cfg = self.cfg
        teacher = teacher or cfg["pretrain"]["teacher"]
        with phase(key, f"{stage}: {label or teacher} labels", self.show_progress) as update:
            return collect_demonstrations(cfg["game"], table_settings(cfg), self.pool, teacher, steps,
                                          cfg[cfg["algorithm"]]["gamma"], seed,
                                          workers=min(cfg["n_envs"], os.cpu_count() or 1), actor=actor,
                                          progress=update)

    def _fit(self, model, epochs: int, seed: int, stage: str, data: dict | None = None,
             student: str | None = None, key: str = "clone.fit") -> dict:
        """One fit, from where a checkpoint left it, with a checkpoint after every epoch; ``student``: the hash of
        the network an expert-iteration generation searched over (what its labels record); ``key``: its phase in
        the run's progress view."""
        pre, done = self.cfg["pretrain"], self.progress
        data = self.demonstrations if data is None else data
        start, under_way = None, done.get("fit")
        if under_way is not None and self.fit_state is not None:
            start = {"epoch": under_way["epochs"], "optimizer": self.fit_state, "rng": under_way["rng"],
                     "stats": under_way["stats"], "source": self._fit_source}
            self.log(f"{stage}: going on after epoch {under_way['epochs']} of {epochs} (from the checkpoint)")
        elif under_way is not None:
            done.pop("fit")
            self.log(f"{stage}: the checkpoint has not the optimizer of this fit; it is done again from the weights "
                     "it had reached")

        def on_epoch(epochs_done: int, optimizer, rng, stats: dict) -> None:
            done["fit"] = {"epochs": epochs_done, "rng": rng.bit_generator.state, "stats": stats,
                           **({"student": student} if student else {})}
            self.fit_state = optimizer.state_dict()
            self._save()

        with phase(key, f"{stage}: fitting {len(data['actions']):,} decisions", self.show_progress) as update:
            return fit_demonstrations(model, data, epochs, pre["batch_size"], pre["learning_rate"],
                                      seed, log=self.log, progress=update, start=start, on_epoch=on_epoch)

    def _fit_done(self) -> None:
        """A fit is done (its result recorded in the progress): the checkpoint says so, without its optimizer."""
        self.progress.pop("fit", None)
        self.fit_state = None
        self._save()

    def _save(self) -> None:
        import time
        if self._started is not None:
            self.progress["seconds"] = self._seconds_before + time.perf_counter() - self._started
        self.checkpoint()

    def run(self, model, show_progress: bool = False) -> dict:
        """Clone (from where the progress says) into ``model``; returns the report (pretrain.json). With
        ``show_progress``, each labelling and each fit counts into the run's progress view (a bar of its own
        without one)."""
        self.show_progress = show_progress
        import time
        pre, done = self.cfg["pretrain"], self.progress
        t = self._started = time.perf_counter()
        self._seconds_before = done["seconds"]
        try:
            if pre["steps"]:        # else expert iteration goes on from init_from's network
                self._clone(model, t)
            generations = done.setdefault("generations", [])
            for g in range(len(generations) + 1, pre["generations"] + 1):
                self._generation(model, g)
        finally:
            self.seconds = time.perf_counter() - t
            done["seconds"] = self._seconds_before + self.seconds
            self._started = None
        cloned = 0 if self.demonstrations is None else len(self.demonstrations["actions"])
        return {"decisions": cloned, "seconds": done["seconds"], **done["stats"],
                "dagger": done["rounds"], "generations": done.get("generations", [])}

    def _clone(self, model, t: float) -> None:
        """Behaviour cloning of ``pretrain.teacher``, then its DAgger rounds, from where the progress says."""
        import time
        cfg, pre, done = self.cfg, self.cfg["pretrain"], self.progress
        if self.demonstrations is None:
            self.demonstrations = self._collect(pre["steps"], cfg["seed"] + 17)
            done["collected"] = 1
            self.log(f"behaviour cloning: {len(self.demonstrations['actions']):,} decisions of {pre['teacher']} "
                     f"collected in {time.perf_counter() - t:.0f} s")
            self._save()
        else:
            self.log(f"behaviour cloning resumed: {len(self.demonstrations['actions']):,} decisions from the "
                     f"checkpoint, {done['fits']} of {1 + pre['dagger_rounds']} fits done")
        if done["fits"] == 0:
            done["stats"] = self._fit(model, pre["epochs"], cfg["seed"], "behaviour cloning")
            done["fits"] = 1
            self._fit_done()
        for k in range(done["fits"] - 1, pre["dagger_rounds"]):
            if done["collected"] < k + 2:
                more = self._collect(pre["dagger_steps"] or pre["steps"], cfg["seed"] + 1000 * (k + 1),
                                     MLP.from_sb3(model), stage=f"DAgger {k + 1}/{pre['dagger_rounds']}",
                                     key=f"dagger{k + 1}.collect")
                played_like_teacher = float(more["agree"].mean())
                self.log(f"DAgger round {k + 1}/{pre['dagger_rounds']}: the clone chose the teacher's move in "
                         f"{played_like_teacher:.1%} of {len(more['actions']):,} states it reached")
                self.demonstrations = {key: np.concatenate([self.demonstrations[key], more[key]])
                                       for key in self.demonstrations}
                done["collected"] = k + 2
                done["rounds"].append({"round": k + 1, "states": len(more["actions"]),
                                       "played_like_teacher": played_like_teacher})
                self._save()
            done["stats"] = self._fit(model, pre["dagger_epochs"], cfg["seed"] + k + 1,
                                      f"DAgger {k + 1}/{pre['dagger_rounds']}", key=f"dagger{k + 1}.fit")
            done["fits"] = k + 2
            self._fit_done()

    # ----- expert iteration ---------------------------------------------------------------------------------
    def labels_made_by(self, g: int, student: str | None) -> dict:
        """What generation ``g``'s labels are of: the game and its observations, the search, and the hash of the
        network it searched over (``student``; None: not known, for a generation recorded before kahve kept it)."""
        return {**self.made_by(), "teacher": self.cfg["pretrain"]["search"], "generation": g, "student": student}

    def read_labels(self, g: int, student: str | None) -> dict:
        """Generation ``g``'s cached labels, refused (one line) unless this run's search over ``student`` made
        them."""
        path = self.run_dir.generation_labels(g)
        data = load_npz(path)
        recorded = data.pop("made_by", None)
        expected = self.labels_made_by(g, student)
        if recorded is not None:
            try:
                recorded = json.loads(str(recorded))
            except json.JSONDecodeError:
                recorded = None
            if not isinstance(recorded, dict):
                raise ValueError(f"{path}: not a label file of kahve's (its made_by is not a JSON mapping)")
            if student is None:                           # (not known: not checked)
                recorded, expected = {**recorded, "student": None}, expected
            if recorded != expected:
                raise ValueError(f"{path}: labels made with {_differences(recorded, expected)}, not by this run; "
                                 "delete the file to label that generation again")
        data = self.check_demonstrations(data, path)
        game_shape = (expected["observation_size"], expected["num_actions"])
        if (data["obs"].ndim, data["masks"].ndim) != (2, 2) or (data["obs"].shape[1], data["masks"].shape[1]) \
                != game_shape:
            raise ValueError(f"{path}: labels of observations of {data['obs'].shape[1:]} and masks of "
                             f"{data['masks'].shape[1:]}; this run's game has {game_shape[0]} and {game_shape[1]}")
        return data

    def _generation(self, model, g: int) -> None:
        """Generation ``g`` of expert iteration: the network as it stands is written as a bot file (the
        *student* of ``pretrain.search``), the search over it labels the states the network reaches, and the
        network is fitted to every generation's labels so far. Labels are cached in the run folder as each
        generation's collection finishes (``RunDir.generation_labels``), recording what made them, and the fit
        checkpoints after every epoch, so a resumed run redoes at most the collection or the epoch it was
        interrupted in."""
        import time
        cfg, pre, done = self.cfg, self.cfg["pretrain"], self.progress
        if self.run_dir is None:
            raise ValueError("expert iteration (pretrain.generations) needs a run folder for its labels")
        t = time.perf_counter()
        student = self.run_dir.generation_bot(g - 1)
        labels_file = self.run_dir.generation_labels(g)
        stage = f"generation {g}/{pre['generations']}"
        teacher = student_search(pre["search"], student)
        under_way = done.get("fit")
        if under_way is not None and under_way.get("student"):
            student_hash = under_way["student"]           # the fit had begun: the network is no longer the student
        else:
            student_hash = arrays_hash(MLP.from_sb3(model).to_arrays())
        if labels_file.exists():
            labels = self.read_labels(g, student_hash)
            finish(f"gen{g}.label")                       # (the progress view: nothing left to label)
            self.log(f"expert iteration {stage}: {len(labels['actions']):,} labels of {pre['search']} from "
                     f"{labels_file} (cached)")
        else:
            mlp = MLP.from_sb3(model)
            write_student(mlp, student, self.run_dir.bot_metadata(cfg, 0, None, generation=g - 1))
            labels = self._collect(pre["generation_steps"] or pre["dagger_steps"] or pre["steps"],
                                   cfg["seed"] + 50_000 + 1000 * g, mlp, stage=stage, teacher=teacher,
                                   label=pre["search"], key=f"gen{g}.label")
            save_npz_atomic(labels_file, {**labels, "made_by": np.array(json.dumps(
                self.labels_made_by(g, student_hash)))})
            self.log(f"expert iteration {stage}: {pre['search']} over the network labelled "
                     f"{len(labels['actions']):,} states it reached in {time.perf_counter() - t:.0f} s; the network "
                     f"chose the search's move in {float(labels['agree'].mean()):.1%}")
        parts = [labels] + [self.read_labels(k, done["generations"][k - 1].get("student")) for k in range(1, g)]
        data = {key: np.concatenate([p[key] for p in parts]) for key in DEMONSTRATION_ARRAYS}
        done["stats"] = self._fit(model, pre["dagger_epochs"], cfg["seed"] + 50_000 + g, stage, data,
                                  student=student_hash, key=f"gen{g}.fit")
        done["generations"].append({"generation": g, "states": len(labels["actions"]),
                                    "played_like_teacher": float(labels["agree"].mean()),
                                    "fitted_on": len(data["actions"]), "seconds": time.perf_counter() - t,
                                    "student": student_hash})
        if g == pre["generations"]:      # the network expert iteration ended with, as a bot file of its own
            write_student(MLP.from_sb3(model), self.run_dir.generation_bot(g),
                          self.run_dir.bot_metadata(cfg, 0, None, generation=g))
        self._fit_done()


def _differences(recorded: dict, now: dict) -> str:
    """The keys where ``recorded`` and ``now`` differ, in words: "teacher 'heuristic' (now 'random')"."""
    keys = [k for k in {**recorded, **now} if recorded.get(k) != now.get(k)]
    return "; ".join(f"{k} {short(recorded.get(k), 60)} (now {short(now.get(k), 60)})" for k in keys)


#: where a search spec of ``pretrain.search`` names the current network
STUDENT = "{student}"


def student_search(spec: str, student) -> str:
    """``pretrain.search`` with :data:`STUDENT` replaced by the student's bot file."""
    return spec.replace(STUDENT, str(Path(student).resolve()))


def write_student(mlp: MLP, path, metadata: dict) -> None:
    """The student's bot file, written whole or not at all (a search in worker processes reads it)."""
    from ..policies.bot import export_onnx
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    check_finite(mlp.to_arrays(), f"the network to write as {path}")
    write_atomic(path, lambda part: export_onnx(mlp, part, metadata))
