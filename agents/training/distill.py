"""Distillation: a recipe stage (``kind: distill``) that fits the network to a base policy's moves, and to a
search's moves where the game can afford a search (its *late* positions).

A search such as ``rollout:256`` over the heuristic beats the heuristic, but costs a second a move; a network costs
a tenth of a millisecond. Where the search's gain lies in a part of the game that is cheap to search (Pis Yedili's
late decisions: docs/bots.md, "pis_yedili/distilled_2p"), the network can learn that part from the search and
the rest from the base policy::

    stages:
      - name: generation_1
        kind: distill
        distill:
          labels:                          # labelling jobs, one label file each
            - {seed: 130000, count: 218380, worlds: 0}        # the first: the early decisions (the base's moves)
            - {seed: 110000, count: 8804}                     # searched with rollout:256 where late
            - {seed: 140000, count: 1000, late_only: true}
          fit: {epochs: 16, lr: 0.001}
      - name: generation_2                 # the search over the network the stage before made
        kind: distill
        distill:
          labels: [{seed: 613000, count: 70000, worlds: 0, base: previous}, ...]

**Labelling.** In each job the base policy (``heuristic``, any policy spec, or ``previous``: the network the stage
starts from) plays every seat of single deals. At every decision with two or more legal moves the label is the
base's move, except at a late position (:data:`~.game_knowledge.LATE`), where ``rollout:WORLDS`` over the base (common random
numbers) replaces it by its best move when that beats the base's by ``z`` standard errors of the paired
differences (:func:`~..policies.rollout.margin_choice`). ``late_only`` keeps only the late decisions,
``worlds: 0`` searches nothing. With config key ``tables`` a job deals the tables in turn (deal ``d`` at table
``d mod T``, ``settings``'s first), as a training run does. The base's move is always the one played, so a job's positions do not depend on
its search. Deal ``d`` of a job is dealt from ``seed_of(seed, d)`` and the base and the search are reseeded per
deal and per decision, so a job's labels are one stream: a job resumed from its partial file, or given a larger
``count``, writes exactly the labels an uninterrupted job would. A job's file (``labels_NN.npz``) records what
made it (game, settings, base and its file's hash, worlds, z, seed, late_only, env version); a file made by
anything else is labelled again. It is rewritten at least once a minute, and on Ctrl-C.

**The fit.** An MLP of the config's ``network`` (with the action-feature head where the game has one, as ``kahve
train`` builds it), from ``init_from`` when the stage has one, fitted by cross-entropy over the legal moves to
every job's labels, except the first job's late decisions (the first job gives the early decisions; the search
labels of the later jobs stand for the late ones) and, with ``early_share`` below 1, a share of its early ones
(so that the search labels weigh more when a fit goes on from a network). A tenth is held out and its agreement
reported (early, late kept, late changed by the search). With ``augment: suits`` every example is seen under a
random permutation of the suits where the game's rules are the same for every suit (:data:`~.game_knowledge.LATE`), so the
network cannot tie what it learns to card ids.

The stage's run folder holds config.yaml (the stage's training config), distill.yaml (its section), the label
files, policy.npz, :data:`BOT_FILE` (what the next stage starts from) and summary.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import yaml

from kahve import envs

from . import config as config_mod
from .config import Field
from .files import check_finite, load_npz, write_atomic
from .game_knowledge import late_positions
from .run_dir import RunDir
from .tables import resolved_tables

#: the stage's network as a bot file, in its run folder: what the next stage starts from
BOT_FILE = "network.onnx"
#: a label file is rewritten this often while its job runs (a kill loses at most this much labelling)
SAVE_EVERY_S = 60
#: ``base: previous``: the network the stage starts from (its init_from)
PREVIOUS = "previous"
#: ``fit.augment: suits``: the relabellings drawn from the game's symmetry for a fit (Pis Yedili has 24 in all)
RELABELLINGS = 64

LABEL_SCHEMA = {
    "seed": Field(int, None, 0, 2**31 - 1, doc="the job's deals (required; every job its own)"),
    "count": Field(int, None, 1, 10**8, doc="labels to write (required)"),
    "worlds": Field(int, 256, 0, 100_000, doc="worlds of the search at late positions; 0: the base's moves only"),
    "z": Field(float, 2.0, 0.0, 100.0, doc="the search's move replaces the base's when it is better by z standard "
                                           "errors of the paired differences"),
    "late_only": Field(bool, False, doc="write only the late decisions (the searched ones)"),
    "base": Field(str, "heuristic", doc="the policy that plays every seat, whose move a label keeps and whose "
                                        "rollouts the search plays: heuristic, any policy spec, or previous (the "
                                        "network the stage starts from)"),
}

SCHEMA = {
    "labels": Field(list, [], doc="labelling jobs, one label file each: [{seed, count, worlds, z, late_only, base}]"
                                  "; the first gives the early decisions (worlds 0)"),
    "fit": {
        "epochs": Field(int, 16, 0, 10_000),
        "lr": Field(float, 1e-3, 1e-7, 1.0, doc="Adam's step size"),
        "batch_size": Field(int, 256, 1, 1_000_000),
        "seed": Field(int, 0, 0, 2**31 - 1, doc="the held-out tenth, the early share, the order and the suits"),
        "early_share": Field(float, 1.0, 0.0, 1.0, doc="the share of the first job's early decisions fitted"),
        "augment": Field(str, "suits", choices=("suits", "none"),
                         doc="suits: each example under a random permutation of the suits (the game's symmetry)"),
    },
    "workers": Field(int, 1, 1, 256, doc="labelling jobs run side by side in this many processes"),
}


# ----- the section ----------------------------------------------------------------------------------------------
def check(section, cfg: dict, first: bool) -> dict:
    """The ``distill`` section resolved with its defaults and checked against the stage's config ``cfg``;
    ``first``: the stage has no network to start from (no init_from, no stage before it)."""
    if section is None:
        raise ValueError("config key 'distill': a distill stage needs its section (labels: [...], fit: {...})")
    out = config_mod._merge(SCHEMA, config_mod.defaults(SCHEMA), section, "distill")
    if not out["labels"]:
        raise ValueError("config key 'distill.labels': expected a list of labelling jobs, e.g. "
                         "[{seed: 1, count: 100000, worlds: 0}, {seed: 2, count: 5000}]")
    facts = late_positions(cfg["game"])
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    from ..policies.specs import make_policy
    jobs = []
    for k, entry in enumerate(out["labels"]):
        where = f"distill.labels[{k}]"
        job = config_mod._merge(LABEL_SCHEMA, config_mod.defaults(LABEL_SCHEMA), entry, where)
        for key in ("seed", "count"):
            if job[key] is None:
                raise ValueError(f"config key '{where}.{key}': required (each job's deals come from its seed, and "
                                 "count is how many labels it writes)")
        if job["base"] == PREVIOUS:
            if first:
                raise ValueError(f"config key '{where}.base': previous is the network the stage starts from, and "
                                 "this stage starts from none (it is the first, without init_from)")
        else:
            try:
                make_policy(job["base"], game, 0)
            except (ValueError, FileNotFoundError) as err:
                raise ValueError(f"config key '{where}.base': {err}") from None
        jobs.append(job)
    if jobs[0]["worlds"] or jobs[0]["late_only"]:
        raise ValueError("config key 'distill.labels[0]': the first job gives the early decisions (its late ones "
                         "are not fitted), so it searches nothing and keeps every decision: worlds 0, late_only "
                         "false")
    if out["fit"]["augment"] == "suits" and facts.symmetry is None:
        raise ValueError(f"config key 'distill.fit.augment': {cfg['game']} declares no suit symmetry; use none")
    out["labels"] = jobs
    return out


# ----- labelling ------------------------------------------------------------------------------------------------
def seed_of(*parts: int) -> int:
    """A 32-bit seed from a job's seed and positions in it (deal, decision): independent streams per part."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def _file_hash(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _base_source(cfg: dict) -> Path:
    """The network the stage starts from, as a file: a bot file, or a run folder's policy.npz."""
    bot = config_mod.init_bot(cfg)
    return bot if bot is not None else RunDir(os.path.expanduser(cfg["init_from"])).policy


def jobs_of(cfg: dict, section: dict) -> list[dict]:
    """Each labelling job as plain data a worker process can take: the base resolved (previous: a file), and what
    names the job in its label file (every key but count)."""
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    tables = resolved_tables(cfg)
    from ..policies.specs import bot_path, looks_like_bot
    out = []
    for entry in section["labels"]:
        base = str(_base_source(cfg).resolve()) if entry["base"] == PREVIOUS else entry["base"]
        path = base if base.endswith(".npz") else bot_path(base) if looks_like_bot(base) else None
        if path is not None and not Path(path).is_file():
            raise FileNotFoundError(f"the base of a labelling job, {path}, is missing")
        out.append({"game": cfg["game"], "tables": tables, "env_version": game.version,
                    "base": base, "base_sha256": _file_hash(path) if path else "", "worlds": entry["worlds"],
                    "z": entry["z"], "seed": entry["seed"], "late_only": entry["late_only"], "count": entry["count"]})
    return out


def label_path(run: RunDir, index: int) -> Path:
    return run.root / f"labels_{index + 1:02d}.npz"


#: the arrays of a label file, one row per label (and ``job``: JSON, ``seconds``: the labelling time)
ROWS = ("obs", "masks", "actions", "base", "late", "dev", "gain", "deal", "step")


def _identity(job: dict) -> dict:
    """What makes a job's labels: everything but its count (a job's labels are a stream, see the module)."""
    return {k: v for k, v in job.items() if k != "count"}


def _peek(path, name: str):
    """One array of a label file, without reading the others (an observation block can be a gigabyte)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            return f[name]
    except Exception as err:  # a bad zip, a missing array...: the file is not what kahve writes
        raise ValueError(f"{path}: not a readable label file ({type(err).__name__}: {err})") from None


def made_by(path) -> dict:
    """The job that made a label file, as it recorded it."""
    try:
        return json.loads(str(_peek(path, "job")))
    except json.JSONDecodeError:
        raise ValueError(f"{path}: not a label file (its job is not JSON)") from None


def same_job(path, job: dict) -> bool:
    """Whether the label file at ``path`` was made by ``job`` (up to its count: a job's labels are a stream)."""
    return _identity(made_by(path)) == _identity(job)


def read_labels(path) -> dict:
    """A label file's arrays (``job`` read from its JSON)."""
    data = load_npz(path)
    if set(data) != set(ROWS) | {"job", "seconds"}:
        raise ValueError(f"{path}: not a label file (arrays {', '.join(ROWS)}, job, seconds)")
    data["job"] = json.loads(str(data["job"]))
    return data


def _save_labels(path: Path, rows: dict, n: int, job: dict, seconds: float) -> None:
    """The first ``n`` rows, written whole or not at all (compressed: an observation is mostly zeros)."""
    arrays = {k: rows[k][:n] for k in ROWS}

    def write(part: Path) -> None:
        with open(part, "wb") as f:
            np.savez_compressed(f, job=np.array(json.dumps(job)), seconds=np.array(float(seconds)), **arrays)
    write_atomic(path, write)


def _make_base(spec: str, game, seed: int):
    if spec.endswith(".npz"):                  # a run folder's network (base: previous after a training stage)
        from ..policies.network import MLP, NetworkPolicy
        return NetworkPolicy(MLP.from_arrays(load_npz(spec)), seed=seed)
    from ..policies.specs import make_policy
    return make_policy(spec, game, seed)


def label_job(job: dict, path: Path, counted=None, update=None) -> int:
    """Run one labelling job into ``path``, going on from the rows a file of the same job holds; returns the
    labels written. Ctrl-C saves what is labelled, then goes on up. ``counted``: a shared integer to count into
    (a worker process); ``update(done, total)``: a progress bar."""
    from ..policies.base import decide
    from ..policies.rollout import RolloutPolicy, margin_choice, reseed
    games = [envs.game_class(job["game"])(**t) for t in job["tables"]]     # deal d is dealt at table d mod T
    game = games[0]
    is_late = late_positions(job["game"]).is_late
    count, worlds, late_only = job["count"], job["worlds"], job["late_only"]
    rows = {"obs": np.zeros((count, game.observation_size), np.float32),
            "masks": np.zeros((count, game.num_actions), bool)}
    rows.update({k: np.zeros(count, np.int64) for k in ("actions", "base", "deal", "step")})
    rows.update({k: np.zeros(count, bool) for k in ("late", "dev")}, gain=np.zeros(count, np.float32))
    n, seconds_before, after = 0, 0.0, (0, -1)       # after: the last (deal, step) labelled
    old = read_labels(path) if path.exists() and same_job(path, job) else None
    if old is not None:
        n = min(len(old["actions"]), count)
        for k in ROWS:
            rows[k][:n] = old[k][:n]
        seconds_before = float(old["seconds"])
        if n:
            after = (int(rows["deal"][n - 1]), int(rows["step"][n - 1]))
    if n == count:
        if old is not None and len(old["actions"]) != count:
            _save_labels(path, rows, n, job, seconds_before)
        return n
    bases = [_make_base(job["base"], g, job["seed"]) for g in games]
    searches = [RolloutPolicy(g, max(worlds, 1), policy=_make_base(job["base"], g, job["seed"] + 1))
                if worlds else None for g in games]
    start = saved = time.perf_counter()
    deal = after[0]
    try:
        while n < count:
            deal_seed = seed_of(job["seed"], deal)
            base, search = bases[deal % len(games)], searches[deal % len(games)]
            state = games[deal % len(games)].new_state(deal_seed)
            reseed(base, deal_seed)
            step = 0
            while state.current_player is not None and state.deals_completed == 0 and n < count:
                legal = state.legal_actions()
                move = decide(base, state)
                if (deal, step) > after and len(legal) >= 2:
                    seat = state.current_player
                    late = is_late(state, seat, legal)
                    if late or not late_only:
                        label, gain = move, 0.0
                        if late and search is not None:
                            search.rng.seed(seed_of(job["seed"], deal, step))
                            label, gain = margin_choice(search.action_values(state, legal, seat), legal, move,
                                                        job["z"])
                        rows["obs"][n], rows["masks"][n] = state.observation(seat), state.legal_mask()
                        for k, v in (("actions", label), ("base", move), ("late", late), ("dev", label != move),
                                     ("gain", gain), ("deal", deal), ("step", step)):
                            rows[k][n] = v
                        n += 1
                        if counted is not None:
                            with counted.get_lock():
                                counted.value += 1
                        if update is not None:
                            update(n, count)
                        if time.perf_counter() - saved >= SAVE_EVERY_S:
                            _save_labels(path, rows, n, job, seconds_before + time.perf_counter() - start)
                            saved = time.perf_counter()
                state.apply(move)
                step += 1
            deal += 1
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)       # a second Ctrl-C must not cut the save short
        try:
            _save_labels(path, rows, n, job, seconds_before + time.perf_counter() - start)
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        raise
    _save_labels(path, rows, n, job, seconds_before + time.perf_counter() - start)
    return n


def _stop(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _job_process(job: dict, path: str, counted) -> None:
    """A worker process's job; Ctrl-C (the terminal's, to the whole process group, or the parent's) and SIGTERM
    save it. A process started in the background of a script inherits SIGINT ignored, so it is handled anew."""
    from ..threads import limit_threads
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop)
    limit_threads()
    try:
        label_job(job, Path(path), counted)
    except KeyboardInterrupt:
        pass


def _labelled(path: Path, job: dict) -> int:
    """The labels of ``job`` its file holds (0: no file, or another job's)."""
    if not path.exists() or not same_job(path, job):
        return 0
    return len(_peek(path, "actions"))


def label_all(jobs: list[dict], run: RunDir, workers: int, progress: bool, log, tick) -> None:
    """Every job's label file, finished: in this process one after another, or side by side in ``workers``
    processes. ``tick`` (the stage clock's ``keep``) is called as the work goes on."""
    from ..progress import progress_bar
    done = [_labelled(label_path(run, i), job) for i, job in enumerate(jobs)]
    for i, job in enumerate(jobs):
        path = label_path(run, i)
        if path.exists() and not same_job(path, job):
            log(f"labels {i + 1}: {path.name} was made by another job; labelling it again")
            path.unlink()
    todo = [i for i, job in enumerate(jobs) if done[i] != job["count"]]     # (more: a count lowered, cut)
    for i, job in enumerate(jobs):
        if i not in todo:
            log(f"labels {i + 1}/{len(jobs)}: {job['count']:,} from {label_path(run, i).name} (done before)")
    if not todo:
        return
    if workers == 1 or len(todo) == 1:
        for i in todo:
            job = jobs[i]
            log(f"labels {i + 1}/{len(jobs)}: {_describe(job)}"
                + (f", going on from {done[i]:,}" if 0 < done[i] < job["count"] else ""))
            with progress_bar(f"labels {i + 1}/{len(jobs)}", progress) as update:
                label_job(job, label_path(run, i), update=lambda *a: (update(*a), tick()))
        return
    _label_side_by_side(jobs, todo, done, run, workers, progress, log, tick)
    if any(_labelled(label_path(run, i), jobs[i]) != jobs[i]["count"] for i in todo):
        raise KeyboardInterrupt("a labelling process was stopped")      # (its labels are saved)


def _label_side_by_side(jobs, todo, done, run, workers, progress, log, tick) -> None:
    import multiprocessing
    from ..progress import progress_bar
    context = multiprocessing.get_context("spawn")
    counted = {i: context.Value("q", done[i]) for i in todo}
    total = sum(jobs[i]["count"] for i in todo)
    waiting, running = list(todo), {}
    log(f"labelling {len(todo)} jobs in {min(workers, len(todo))} processes: "
        + "; ".join(f"{i + 1}: {_describe(jobs[i])}" + (f", going on from {done[i]:,}" if done[i] else "")
                    for i in todo))
    try:
        with progress_bar(f"labels ({len(todo)} jobs)", progress) as update:
            while waiting or running:
                while waiting and len(running) < workers:
                    i = waiting.pop(0)
                    running[i] = context.Process(target=_job_process, args=(jobs[i], str(label_path(run, i)),
                                                                            counted[i]))
                    running[i].start()
                for i, proc in list(running.items()):
                    if not proc.is_alive():
                        proc.join()
                        del running[i]
                        if proc.exitcode != 0:
                            raise RuntimeError(f"labelling job {i + 1} failed (exit code {proc.exitcode}); its "
                                               "error is above")
                update(sum(c.value for c in counted.values()), total)
                tick()
                time.sleep(0.5)
    except BaseException:
        # the workers save what they labelled on Ctrl-C: the terminal's reaches them with this process; a stop
        # meant for this process alone (SIGTERM, an error) is passed on to those still running
        deadline = time.monotonic() + 5
        for proc in running.values():
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGINT)
        for proc in running.values():
            proc.join()
        raise


def _describe(job: dict) -> str:
    what = "late decisions" if job["late_only"] else "decisions"
    search = f", rollout:{job['worlds']} z={job['z']:g} where late" if job["worlds"] else ""
    base = Path(job["base"]).name if os.sep in job["base"] else job["base"]
    return f"{job['count']:,} {what} of {base} (seed {job['seed']}){search}"


# ----- the fit --------------------------------------------------------------------------------------------------
def _network(cfg: dict, game):
    """The stage's network in torch: the config's MLP, with the action-feature head as ``kahve train`` builds it."""
    import torch as th
    scores = None
    if cfg["network"]["action_features"] and game.action_feature_size:
        from .sb3.action_features import FeatureScores, feature_layout
        scores = FeatureScores(*feature_layout(game))
    sizes = [game.observation_size, *cfg["network"]["hidden"], game.num_actions]
    act = th.tanh if cfg["network"]["activation"] == "tanh" else th.relu

    class Net(th.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = th.nn.ModuleList([th.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])
            self.scores = scores

        def forward(self, x):
            h = x
            for layer in self.layers[:-1]:
                h = act(layer(h))
            out = self.layers[-1](h)
            return out if self.scores is None else out + self.scores(x)

        def mlp(self):
            from ..policies.network import MLP
            features = {}
            if self.scores is not None:
                offset, weights = self.scores.exported()
                features = dict(feature_offset=offset, feature_weights=weights)
            return MLP([layer.weight.detach().cpu().numpy().copy() for layer in self.layers],
                       [layer.bias.detach().cpu().numpy().copy() for layer in self.layers],
                       cfg["network"]["activation"], **features)

    return Net()


def _start_from(net, cfg: dict, game) -> str:
    """Put init_from's network into ``net`` (a bot file's, or a run folder's policy.npz); returns its name."""
    from ..policies.bot import BotFileError, mlp_from_bot
    from ..policies.network import MLP
    from .sb3.checkpoint import copy_mlp
    source = _base_source(cfg)
    try:
        mlp = MLP.from_arrays(load_npz(source)) if source.suffix == ".npz" \
            else mlp_from_bot(source, game.action_feature_size)
    except BotFileError as err:
        raise ValueError(f"config key 'init_from': {err}") from None
    check_finite(mlp.to_arrays(), source)
    hidden = [w.shape[0] for w in mlp.weights[:-1]]
    features = mlp.feature_weights is not None
    want = (list(cfg["network"]["hidden"]), cfg["network"]["activation"], net.scores is not None)
    if (hidden, mlp.activation, features) != want:
        raise ValueError(f"config key 'init_from': {source} has network.hidden {hidden}, activation "
                         f"{mlp.activation}, action features {features}; this stage {want[0]}, {want[1]}, {want[2]}")
    copy_mlp(mlp, list(net.layers), net.scores, str(source))
    return str(source)


def fit(cfg: dict, section: dict, parts: list[dict], log=print, progress: bool = True):
    """The network fitted to the label files' arrays ``parts`` (in job order); returns (MLP, labels fitted,
    held-out agreement)."""
    import torch as th
    from ..progress import progress_bar
    opts = section["fit"]
    th.manual_seed(opts["seed"])
    th.set_num_threads(cfg["torch_threads"])
    game = envs.game_class(cfg["game"])(**cfg["settings"])
    first = parts[0]
    keep = ~first["late"] & (np.random.default_rng(opts["seed"]).random(len(first["late"])) < opts["early_share"])
    parts = [{k: first[k][keep] for k in ("obs", "masks", "actions", "late", "dev")}] + parts[1:]
    obs, masks, labels, late, dev = (th.from_numpy(np.concatenate([p[k] for p in parts]))
                                     for k in ("obs", "masks", "actions", "late", "dev"))
    n = len(labels)
    if n < 2:
        raise ValueError(f"config key 'distill.labels': {n} label to fit (the first job's early decisions and the "
                         "later jobs' labels); give larger counts")
    rng = np.random.default_rng(opts["seed"])
    held = th.zeros(n, dtype=th.bool)
    held[th.from_numpy(rng.permutation(n)[: max(1, n // 10)])] = True
    log(f"fitting {n:,} labels: {int((~late).sum()):,} early, {int(late.sum()):,} late, {int(dev.sum()):,} of them "
        "changed by the search; a tenth held out")
    net = _network(cfg, game)
    if cfg["init_from"]:
        log(f"the network starts from {_start_from(net, cfg, game)}")
    maps = None
    if opts["augment"] == "suits":
        # RELABELLINGS draws of the game's symmetry, after the identity (the rows it does not apply to keep theirs);
        # each example is relabelled by one of them, drawn per batch
        symmetry = late_positions(cfg["game"]).symmetry
        drawn = [(np.arange(game.observation_size), np.arange(game.num_actions))]
        drawn += [symmetry.draw(rng) for _ in range(RELABELLINGS)]
        maps = [th.tensor(np.stack([m[k] for m in drawn])) for k in range(2)]
        maps.append(th.tensor(np.stack([np.argsort(m[1]) for m in drawn])))    # the twin's label of each action
        fixed = ~th.as_tensor(symmetry.applies(obs.numpy()))

    def batch(idx):
        if maps is None:
            return obs[idx], masks[idx], labels[idx]
        k = th.randint(0, len(maps[0]), (len(idx),))
        k[fixed[idx]] = 0
        src, mask_src, action = (m[k] for m in maps)
        return obs[idx].gather(1, src), masks[idx].gather(1, mask_src), action.gather(1, labels[idx][:, None])[:, 0]

    def agreement() -> dict:
        with th.no_grad():
            pick = th.cat([net(obs[i:i + 4096]).masked_fill(~masks[i:i + 4096], -1e9).argmax(1)
                           for i in range(0, n, 4096)])
        ok = pick == labels
        groups = {"early": held & ~late, "late_kept": held & late & ~dev, "late_changed": held & dev}
        return {name: (float(ok[m].float().mean()) if int(m.sum()) else None) for name, m in groups.items()}

    def line(a: dict) -> str:
        return ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in a.items() if v is not None)

    if cfg["init_from"]:
        log(f"held-out agreement before the fit: {line(agreement())}")
    opt = th.optim.Adam(net.parameters(), lr=opts["lr"])
    train = th.nonzero(~held).flatten().numpy()
    size = opts["batch_size"]
    batches = -(-len(train) // size)
    with progress_bar(f"fitting {n:,} labels", progress) as update:
        for epoch in range(opts["epochs"]):
            rng.shuffle(train)
            for b, s in enumerate(range(0, len(train), size)):
                x, m, y = batch(th.from_numpy(train[s:s + size]))
                loss = th.nn.functional.cross_entropy(net(x).masked_fill(~m, -1e9), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                update(epoch * batches + b + 1, opts["epochs"] * batches)
            if epoch % 4 == 3 or epoch == opts["epochs"] - 1:
                log(f"epoch {epoch + 1}/{opts['epochs']}: held-out agreement {line(agreement())}")
    return net.mlp(), n, agreement()


# ----- the stage ------------------------------------------------------------------------------------------------
def run(cfg: dict, section: dict, run: RunDir, progress: bool = True, log=print) -> dict:
    """Label (what is not labelled yet), fit, and write the network (policy.npz, :data:`BOT_FILE`) and the summary;
    Ctrl-C keeps the labels and returns a summary with ``interrupted`` (``kahve train --resume`` goes on)."""
    from ..policies.bot import export_onnx
    from ..progress import phase
    run.create()
    with run.lock():
        run.write_config(cfg)
        from .files import write_text_atomic
        write_text_atomic(run.root / "distill.yaml", yaml.safe_dump(section, sort_keys=False))
        jobs = jobs_of(cfg, section)
        session = time.perf_counter()
        # the stage's time on the clock: the label files' own times add up the processes that ran side by side
        clock = run.clock()
        try:
            # the phases of the recipe's progress view (plan.distill_phases); the work's own bars count into them
            with phase("labels", "labelling", progress, own_bar=False):
                label_all(jobs, run, section["workers"], progress, log, tick=clock.keep)
            parts = [read_labels(label_path(run, i)) for i in range(len(jobs))]
            records = [{"file": label_path(run, i).name, "labels": len(p["actions"]), "late": int(p["late"].sum()),
                        "changed": int(p["dev"].sum()), "seconds": round(float(p["seconds"]), 1)}
                       for i, p in enumerate(parts)]
            for i, r in enumerate(records):
                log(f"labels {i + 1}: {r['labels']:,}, {r['late']:,} late, {r['changed']:,} changed by the search "
                    f"({r['seconds']:.0f} s)")
            labelling_seconds = clock.seconds()
            with phase("fit", "fitting", progress, own_bar=False):
                mlp, fitted, held_out = fit(cfg, section, parts, log, progress)
        except KeyboardInterrupt:
            labelled = sum(min(_labelled(label_path(run, i), job), job["count"]) for i, job in enumerate(jobs))
            summary = {"steps": 0, "labels": labelled, "wall_seconds_total": clock.seconds(),
                       "pretrain_seconds": 0.0, "interrupted": True}
            run.write_summary(summary)
            log(f"interrupted: {labelled:,} labels kept in {run}; this session "
                f"{time.perf_counter() - session:.0f} s")
            return summary
        wall = clock.seconds()
        check_finite(mlp.to_arrays(), "the distilled network", "the fit diverged; try a lower distill.fit.lr")
        mlp.save(run.policy)
        meta = RunDir.bot_metadata({**cfg, "algorithm": "distilled"}, fitted, None, distill=section)
        write_atomic(run.root / BOT_FILE, lambda part: export_onnx(mlp, part, meta))
        summary = {"steps": fitted, "wall_seconds_total": wall, "pretrain_seconds": 0.0, "interrupted": False,
                   "labelling_seconds": labelling_seconds, "fit_seconds": wall - labelling_seconds, "labels": records,
                   "held_out_agreement": held_out}
        run.write_summary(summary)
        log(f"distilled {fitted:,} labels into {run.root / BOT_FILE} ({wall:.0f} s of labelling and fitting)")
        return summary
