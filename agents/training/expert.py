"""The ``expert`` stage: a second network for the deal's last hand, fitted to an exact solver's values and written
into the bot file beside the main network (:func:`~kahve.agents.policies.bot.export_onnx`'s ``expert``: wherever
the observation's last-hand flag is set the expert gives the logits; still one greedy forward pass, no search).

Where every card is known, as in Pâsur's last hand (docs/search.md), the engine can value every legal move exactly;
a search-free network can learn those values far better than a network that must also play hands 1-5. A recipe
puts this stage last, after the stages that make the main network::

    - name: last_hand
      kind: expert
      opponents: {pool: [{policy: random, weight: 1}, {policy: heuristic, weight: 1}]}
      torch_threads: 2                  # the fit's torch threads
      expert:
        trees: [{seed: 41, rounds: 4500, keep: 80}, {seed: 51, rounds: 7000, keep: 10, shallow: 6}]
        network: {arch: attention, width: 64, depth: 4}
        fit: [{epochs: 4, tiebreak: random, trees: [0]}, {epochs: 2, lr: 0.0003, augment: suits, tiebreak: random}]

1. **Trees.** Each tree job plays ``rounds`` single deals: the main network (greedy) in the learner's seat against
   the stage's ``opponents.pool`` up to its first last-hand decision; there the solver values the whole rest of the
   deal (plain negamax, every move's value exact: :func:`~kahve.agents.policies.endgame.exact.solve_lines`), and
   the root, every node whose two hands still hold ``shallow`` cards or more, and ``keep`` others at random are
   kept, from either seat's view, each legal move with its exact value and its value against a random opponent
   (which breaks the ties among the best moves: ``tiebreak: random``). Round ``r`` of a job is a function of the
   job's seed and ``r`` alone, so a job resumes at the round it reached; ``workers`` processes solve jobs side by
   side, each saving its rounds every minute.
2. **Fit.** The expert (card attention over a token per card, or a relu MLP) is fitted to put its probability on the
   best moves, phase after phase (``fit`` is one phase or a list: each goes on from the network the one before
   ended with), a checkpoint after every epoch. One pair of rounds in ten is held out and scored every epoch.
3. **The bot.** The main network with the expert beside it (``bot.onnx``), and the main network alone
   (``policy.npz``), what a stage after this one would start from.

What a game must declare for this (its solver, the flag, the card layout, its suit symmetry) is in
:mod:`.game_knowledge`. The stage's folder::

    trees/DIGEST_A-B.npz    the nodes of rounds [A, B) of one tree job; DIGEST and the file's ``made_by`` name
                            what made them (game, env version, settings, pool, the main network's hash, the job's
                            seed, keep and shallow): a resumed stage reuses only files of its own jobs
    fit.npz                 the fit's checkpoint (network, optimizer, schedule, random state; the phase and epoch)
    policy.npz, bot.onnx    the main network; the bot
    summary.json            nodes fitted (``steps``), wall time, the held-out scores; ``interrupted`` if stopped
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch as th

from . import config as config_mod
from .config import Field
from .files import arrays_hash, check_finite, load_npz, save_npz_atomic, write_atomic
from .run_dir import RunDir

BOT_FILE = "bot.onnx"
SAVE_EVERY_S = 60.0         # a tree job saves its solved rounds at least this often (a kill loses at most this)
NEG = -1e9                  # the logit of an illegal move
HELD_OUT_REPORT = 20_000    # held-out nodes scored per report (a sample: the report must stay cheap)

TREE_SCHEMA = {
    "seed": Field(int, 0, 0, 2**31 - 1, doc="the job's deals: round r is played from (seed, r) alone"),
    "rounds": Field(int, 1000, 1, 10**7, doc="single deals played to their first last-hand decision and solved"),
    "keep": Field(int, 80, 0, 10**6, doc="decision nodes kept per deal besides its root and the shallow ones"),
    "shallow": Field(int, 0, 0, 1000, doc="also keep every node whose two hands hold at least this many cards "
                                          "(the hard early decisions of the last hand); 0: none"),
}
ARCH_DEFAULTS = {"mlp": {"width": 512, "depth": 3, "batch_size": 512},
                 "attention": {"width": 64, "depth": 4, "batch_size": 256}}
FIT_SCHEMA = {
    "epochs": Field(int, 4, 0, 10_000),
    "lr": Field(float, 1e-3, 1e-7, 1.0, doc="peak learning rate (attention: AdamW, one cycle with a warm-up; "
                                            "mlp: Adam, cosine)"),
    "batch_size": Field(int, 0, 0, 10**6, doc="nodes per step; 0: 256 (attention), 512 (mlp)"),
    "seed": Field(int, 0, 0, 2**31 - 1, doc="the order of the batches and the relabellings (and the first "
                                            "phase's initial weights)"),
    "augment": Field(str, "none", choices=("none", "suits"),
                     doc="suits: relabel each batch's cards by a random symmetry of the game (game_knowledge), so "
                         "that the network cannot learn a position by its card names"),
    "early_weight": Field(float, 1.0, 0.0, 1000.0, doc="the weight of the nodes whose two hands still hold many "
                                                       "cards (the game's early_cards)"),
    "tiebreak": Field(str, "none", choices=("none", "random"),
                      doc="random: among the moves best against perfect play, learn only those worth most against a "
                          "random opponent (equal against perfection, they give a fallible opponent more ways to go "
                          "wrong)"),
    "trees": Field(list, [], doc="the tree jobs this phase fits, by their index in expert.trees; []: all"),
}
SCHEMA = {
    "trees": Field(list, [], doc="the tree jobs: [{seed, rounds, keep, shallow}, ...]"),
    "workers": Field(int, 2, 1, 256, doc="processes that solve tree jobs side by side (one job each)"),
    "network": {
        "arch": Field(str, "attention", choices=("attention", "mlp"),
                      doc="attention: self-attention over a token per card (agents/policies/card_attention.py); "
                          "mlp: a relu MLP over the observation, with the main network's action-feature head"),
        "width": Field(int, 0, 0, 65_536, doc="units per layer; 0: 64 (attention), 512 (mlp)"),
        "depth": Field(int, 0, 0, 64, doc="layers; 0: 4 (attention), 3 (mlp)"),
        "heads": Field(int, 4, 1, 64, doc="attention heads (attention only)"),
    },
    "fit": Field(list, [{}], doc="one phase {epochs, lr, batch_size, seed, augment, early_weight, tiebreak, trees} "
                                 "or a list of them, each going on from the network the one before ended with; "
                                 "the stage's torch_threads are the fit's threads"),
    "init": Field(str, "", doc="a bot file or a shipped bot's name whose expert the fit starts from (the same "
                               "network); '': a fresh network"),
}


# ----- the section ----------------------------------------------------------------------------------------------
def check(section, cfg: dict, first: bool) -> dict:
    """The ``expert`` section resolved and checked (one-line errors naming the key); ``cfg`` is the stage's config,
    ``first``: the stage is the recipe's first and names no ``init_from``."""
    from .game_knowledge import last_hand
    raw = {} if section is None else copy.deepcopy(section)
    if isinstance(raw, dict) and isinstance(raw.get("fit"), dict):
        raw["fit"] = [raw["fit"]]                       # one phase given as a mapping
    out = config_mod._merge(SCHEMA, config_mod.defaults(SCHEMA), raw, "expert")
    if first and not cfg["init_from"]:
        raise ValueError("config key 'init_from': an expert stage sits beside a main network; put it after a "
                         "training stage, or give init_from (a run folder or a PPO bot file)")
    if cfg["algorithm"] != "ppo":
        raise ValueError(f"config key 'algorithm': the expert's logits are a policy's, beside a ppo network's, not "
                         f"{cfg['algorithm']}'s")
    try:
        knowledge = last_hand(cfg["game"])
    except ValueError as err:
        raise ValueError(f"config key 'game': {err}") from None
    game = _game(cfg)
    if not knowledge.solver.fits(game):
        raise ValueError(f"config key 'settings': the last-hand solver does not fit {cfg['game']} with these "
                         "settings")
    if knowledge.flag is None:
        raise ValueError(f"config key 'game': {cfg['game']} declares no observation flag of its last hand "
                         "(game_knowledge.py), which switches a bot to its expert")
    net = out["network"]
    if net["arch"] == "attention" and knowledge.layout is None:
        raise ValueError(f"config key 'expert.network.arch': {cfg['game']} declares no card layout "
                         "(game_knowledge.py); use arch mlp")
    for key in ("width", "depth"):
        net[key] = net[key] or ARCH_DEFAULTS[net["arch"]][key]
    if net["arch"] == "attention" and net["width"] % net["heads"]:
        raise ValueError(f"config key 'expert.network.heads': {net['heads']} heads do not divide width "
                         f"{net['width']}")
    trees = out["trees"]
    if not trees:
        raise ValueError("config key 'expert.trees': give at least one tree job, e.g. [{seed: 41, rounds: 4500, "
                         "keep: 80}]")
    seeds = {}
    for k, job in enumerate(trees):
        where = f"expert.trees[{k}]"
        trees[k] = job = config_mod._merge(TREE_SCHEMA, config_mod.defaults(TREE_SCHEMA), job, where)
        if job["seed"] in seeds:
            raise ValueError(f"config key {where + '.seed'!r}: the same as trees[{seeds[job['seed']]}]'s; each job "
                             "plays deals of its own")
        seeds[job["seed"]] = k
    phases = out["fit"]
    if not phases:
        raise ValueError("config key 'expert.fit': give at least one phase, e.g. {epochs: 4}")
    for p, phase in enumerate(phases):
        where = f"expert.fit[{p}]"
        phases[p] = phase = config_mod._merge(FIT_SCHEMA, config_mod.defaults(FIT_SCHEMA), phase, where)
        phase["batch_size"] = phase["batch_size"] or ARCH_DEFAULTS[net["arch"]]["batch_size"]
        for i, t in enumerate(phase["trees"]):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < len(trees):
                raise ValueError(f"config key {where + f'.trees[{i}]'!r}: expected the index of a tree job (0 to "
                                 f"{len(trees) - 1}), got {t!r}")
        phase["trees"] = sorted(set(phase["trees"])) or list(range(len(trees)))
        if phase["augment"] == "suits" and knowledge.symmetry is None:
            raise ValueError(f"config key {where + '.augment'!r}: {cfg['game']} declares no symmetry "
                             "(game_knowledge.py); use augment none")
    if out["init"]:
        try:
            _start_expert(out, cfg)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"config key 'expert.init': {err}") from None
    return out


def _game(cfg: dict):
    from kahve import envs
    return envs.game_class(cfg["game"])(**cfg["settings"])


def _start_expert(section: dict, cfg: dict):
    """The expert of the bot ``init`` names, checked to be a network of the section's shape; and its epochs."""
    from ..policies.bot import Bot, bot_file, expert_from_bot
    from ..policies.card_attention import CardAttention
    from ..policies.network import MLP
    path = bot_file(section["init"])
    game = _game(cfg)
    start = expert_from_bot(path, game.action_feature_size)
    net = section["network"]
    if net["arch"] == "attention":
        sizes = (start.width, start.layers, start.heads) if isinstance(start, CardAttention) else None
        if sizes != (net["width"], net["depth"], net["heads"]):
            raise ValueError(f"{path}: its expert is not a card-attention network of width {net['width']}, depth "
                             f"{net['depth']}, {net['heads']} heads")
    else:
        hidden = [w.shape[0] for w in start.weights[:-1]] if isinstance(start, MLP) else None
        if hidden != [net["width"]] * net["depth"]:
            raise ValueError(f"{path}: its expert is not an MLP of width {net['width']} and depth {net['depth']}")
    return start, Bot.read_metadata(path)[1].get("expert", {}).get("epochs", 0)


# ----- the main network -----------------------------------------------------------------------------------------
def main_network(cfg: dict, game):
    """The network the stage starts from (``init_from``: a run folder's policy.npz, or a bot file's main
    network) and its hash (what the tree files it plays record)."""
    from ..policies.bot import mlp_from_bot
    from ..policies.network import MLP
    bot = config_mod.init_bot(cfg)
    source = bot if bot is not None else RunDir(os.path.expanduser(cfg["init_from"])).policy
    mlp = MLP.from_arrays(load_npz(source)) if bot is None else mlp_from_bot(bot, game.action_feature_size)
    check_finite(mlp.to_arrays(), source)
    return mlp, network_hash(mlp.to_arrays())


#: the hash of a network's arrays (what the tree files record of the main network)
network_hash = arrays_hash


# ----- tree jobs ------------------------------------------------------------------------------------------------
@dataclass
class TreeJob:
    index: int
    seed: int
    rounds: int
    keep: int
    shallow: int
    made_by: dict           # what makes its nodes (the game, the main network, the pool, the job), rounds aside

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.made_by, sort_keys=True).encode()).hexdigest()[:12]


COLUMNS = ("obs", "mask", "values", "vs_random", "root", "round")


def tree_jobs(cfg: dict, section: dict, main_hash: str) -> list[TreeJob]:
    game = _game(cfg)
    base = {"game": cfg["game"], "env_version": game.version, "settings": game.settings.as_dict(),
            "pool": cfg["opponents"]["pool"], "main": main_hash}
    return [TreeJob(k, j["seed"], j["rounds"], j["keep"], j["shallow"],
                    {**base, "seed": j["seed"], "keep": j["keep"], "shallow": j["shallow"]})
            for k, j in enumerate(section["trees"])]


def _chunk_files(folder: Path, job: TreeJob) -> list[tuple[int, int, Path]]:
    """The job's saved rounds as files ``(a, b, path)`` covering rounds 0, 1, ... without a gap; a file whose
    ``made_by`` is not the job's (another job, another main network...) is not its."""
    found = []
    for path in folder.glob(f"{job.digest}_*.npz"):
        try:
            a, b = (int(x) for x in path.stem.split("_", 1)[1].split("-"))
            with np.load(path, allow_pickle=False) as f:
                made_by = json.loads(str(f["made_by"]))
        except (ValueError, KeyError, OSError, EOFError):
            continue                        # not a finished file of this layout
        if {k: v for k, v in made_by.items() if k != "rounds"} == json.loads(json.dumps(job.made_by)) \
                and made_by.get("rounds") == [a, b]:
            found.append((a, b, path))
    chunks, end = [], 0
    for a, b, path in sorted(found):
        if a == end and b > a:
            chunks.append((a, b, path))
            end = b
    return chunks


def rounds_solved(folder: Path, job: TreeJob) -> int:
    chunks = _chunk_files(folder, job)
    return min(job.rounds, chunks[-1][1]) if chunks else 0


def _save_chunk(folder: Path, job: TreeJob, a: int, b: int, columns: dict, game) -> None:
    """Rounds [a, b) of ``job`` (their kept nodes, maybe none), written whole or not at all."""
    if columns["obs"]:
        arrays = {k: np.array(columns[k]) for k in COLUMNS}
    else:
        none = np.zeros((0, game.num_actions), np.float32)
        arrays = {"obs": np.zeros((0, game.observation_size), np.float16), "mask": none.astype(bool),
                  "values": none, "vs_random": none, "root": np.zeros(0, bool), "round": np.zeros(0, np.int64)}
    arrays["made_by"] = np.array(json.dumps({**job.made_by, "rounds": [a, b]}))
    save_npz_atomic(folder / f"{job.digest}_{a:07d}-{b:07d}.npz", arrays)


def _start_round(env, pool, seed: int, r: int):
    """Round ``r`` of a job: the env's stream and its opponents' from (seed, r) alone, so that a job can resume
    at any round and play what it would have played."""
    env.set_pool(pool)                                  # fresh opponent policies
    stream = int(np.random.SeedSequence([seed, r]).generate_state(1, np.uint64)[0])
    version, internal, gauss = random.Random(stream).getstate()
    env.set_rng_state({"episodes": r, "rng": [version, list(internal), gauss]})   # (episodes: the seat alternates)
    return env.reset()


def play_and_solve(env, obs, knowledge, mlp, rng, job: TreeJob, r: int, columns: dict) -> None:
    """One round: the main network plays (greedy) up to its first last-hand decision, then the whole rest of the
    deal is solved; the root, every node whose two hands still hold ``shallow`` cards or more, and ``keep`` others
    are kept (appended to ``columns``)."""
    from ..policies.endgame.exact import solve_lines
    game = env.game
    while not knowledge.solver.applies(env.state):
        mask = env.action_masks()
        logits = mlp.forward(obs[None])[0]
        obs, _, term, trunc, _ = env.step(int(np.argmax(np.where(mask, logits, -np.inf))))
        if term or trunc:
            return
    nodes = []
    solve_lines(game, env.state, nodes)     # children before parents: the root comes last
    if not nodes:
        return
    last = len(nodes) - 1
    early = [i for i, (state, *_) in enumerate(nodes[:-1])
             if job.shallow and sum(map(len, state.hands)) >= job.shallow]
    chosen = set(early)
    later = [i for i in range(last) if i not in chosen]
    for i in [last] + early + [int(i) for i in rng.permutation(later)[:job.keep]]:
        state, seat, values, vs_random = nodes[i]
        mask = np.zeros(game.num_actions, bool)
        row = np.full(game.num_actions, np.nan, np.float32)
        tie_break = row.copy()
        mask[list(values)] = True
        row[list(values)] = list(values.values())
        tie_break[list(vs_random)] = list(vs_random.values())
        for key, value in (("obs", state.observation(seat).astype(np.float16)), ("mask", mask), ("values", row),
                           ("vs_random", tie_break), ("root", i == last), ("round", r)):
            columns[key].append(value)


def solve_job(cfg: dict, job: TreeJob, main, folder: Path, should_stop=lambda: False, done=lambda n: None) -> int:
    """Solve the job's rounds from where its files end; saves them every :data:`SAVE_EVERY_S` seconds, after the
    first round (an early sign that the job runs and writes) and when stopped. Returns the rounds solved."""
    from .game_knowledge import last_hand
    from .view.learner_env import LearnerEnv
    from .view.opponents import OpponentPool
    knowledge = last_hand(cfg["game"])
    pool = OpponentPool([(o["policy"], float(o.get("weight", 1.0))) for o in cfg["opponents"]["pool"]])
    env = LearnerEnv(cfg["game"], cfg["settings"], pool, seed=job.seed)
    folder.mkdir(parents=True, exist_ok=True)
    start = r = rounds_solved(folder, job)
    columns = {k: [] for k in COLUMNS}
    saved_at = time.monotonic()
    done(r)

    def flush():
        nonlocal start, columns, saved_at
        if r > start:
            _save_chunk(folder, job, start, r, columns, env.game)
            start, columns = r, {k: [] for k in COLUMNS}
        saved_at = time.monotonic()

    try:
        while r < job.rounds and not should_stop():
            obs, _ = _start_round(env, pool, job.seed, r)
            play_and_solve(env, obs, knowledge, main, np.random.default_rng([job.seed, r]), job, r, columns)
            r += 1
            done(r)
            if r == 1 or time.monotonic() - saved_at >= SAVE_EVERY_S:
                flush()
    finally:
        flush()
    return r


def _worker(cfg: dict, job: TreeJob, policy_path: str, folder: str, stop, counts) -> None:
    """A tree job in a process of its own. Ctrl-C reaches the whole process group: here it is ignored, and the
    parent's ``stop`` (or the parent's end) ends the job after the round in hand, saved."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ..policies.network import MLP
    from ..threads import limit_threads
    limit_threads(1)
    parent = os.getppid()
    main = MLP.from_arrays(load_npz(policy_path))

    def done(n):
        counts[job.index] = n
    solve_job(cfg, job, main, Path(folder), lambda: stop.is_set() or os.getppid() != parent, done)


def solve_trees(cfg: dict, jobs: list[TreeJob], workers: int, run: RunDir, progress: bool, log,
                tick) -> bool:
    """Every job's missing rounds, ``workers`` jobs at a time in processes of their own. Returns False if
    interrupted (Ctrl-C: each job saves what it solved first). ``tick`` (the stage clock's ``keep``) is called as
    the work goes on."""
    import multiprocessing as mp
    from ..progress import progress_bar
    folder = trees_folder(run)
    have = {job.index: rounds_solved(folder, job) for job in jobs}
    todo = [job for job in jobs if have[job.index] < job.rounds]
    for job in jobs:
        log(f"tree job {job.index + 1}/{len(jobs)} (seed {job.seed}, {job.rounds:,} rounds, keep {job.keep}"
            + (f", shallow {job.shallow}" if job.shallow else "") + "): "
            + ("solved" if have[job.index] >= job.rounds else f"{have[job.index]:,} rounds solved, "
               f"{job.rounds - have[job.index]:,} to go"))
    if not todo:
        return True
    ctx = mp.get_context("spawn")           # a fresh interpreter: no torch threads or locks copied by fork
    stop, counts = ctx.Event(), ctx.Array("q", len(jobs), lock=False)
    for job in jobs:
        counts[job.index] = have[job.index]
    total = sum(job.rounds for job in jobs)
    pending, running = list(todo), {}
    started = time.perf_counter()
    try:
        with progress_bar("solving last hands", progress) as update:
            while pending or running:
                while pending and len(running) < workers:
                    job = pending.pop(0)
                    proc = ctx.Process(target=_worker, args=(cfg, job, str(run.policy), str(folder), stop, counts),
                                       daemon=True)
                    proc.start()
                    running[job.index] = (job, proc)
                time.sleep(0.25)
                update(sum(counts), total)
                tick()
                for k, (job, proc) in list(running.items()):
                    if proc.exitcode is None:
                        continue
                    del running[k]
                    if proc.exitcode != 0:
                        raise RuntimeError(f"tree job {k + 1} (seed {job.seed}) failed (exit code {proc.exitcode}); "
                                           "its error is above")
                    log(f"tree job {k + 1}/{len(jobs)}: {job.rounds:,} rounds solved "
                        f"({time.perf_counter() - started:.0f} s into this session)")
    except KeyboardInterrupt:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)    # let the jobs save; a second Ctrl-C waits too
        try:
            stop.set()
            for _, proc in running.values():
                proc.join()
        finally:
            signal.signal(signal.SIGINT, previous)
        return False
    finally:
        stop.set()
        for _, proc in running.values():        # an error above: the other jobs save and end
            proc.join()
    return True


def trees_folder(run: RunDir) -> Path:
    return run.root / "trees"


def load_trees(run: RunDir, jobs: list[TreeJob]) -> dict:
    """The kept nodes of ``jobs`` (their first ``rounds`` rounds), concatenated; ``job`` says whose each is."""
    parts = []
    for job in jobs:
        for a, b, path in _chunk_files(trees_folder(run), job):
            if a >= job.rounds:
                break
            arrays = load_npz(path)
            if not len(arrays["obs"]):
                continue
            keep = arrays["round"] < job.rounds
            parts.append({**{k: arrays[k][keep] for k in COLUMNS}, "job": np.full(int(keep.sum()), job.index)})
    if not parts:
        raise ValueError(f"{trees_folder(run)}: the tree jobs kept no decision node to fit")
    return {k: np.concatenate([p[k] for p in parts]) for k in (*COLUMNS, "job")}


# ----- the fit --------------------------------------------------------------------------------------------------
def best_moves(values: np.ndarray, vs_random: np.ndarray | None = None) -> np.ndarray:
    """Per row (NaN: not legal), the moves best against perfect play; with ``vs_random``, only those of them also
    worth most against a random opponent (the tie-break)."""
    from ..policies.endgame.exact import TIE
    filled = np.nan_to_num(values, nan=-np.inf)
    best = filled >= filled.max(1, keepdims=True) - TIE
    if vs_random is not None:
        among = np.where(best, np.nan_to_num(vs_random, nan=-np.inf), -np.inf)
        best &= among >= among.max(1, keepdims=True) - TIE
    return best


def held_out_rounds(rounds: np.ndarray) -> np.ndarray:
    """The rounds kept out of the fit and scored: one pair of consecutive rounds in ten. The learner's seat
    alternates from round to round, so a pair holds out both seats' roots (every tenth round alone held out only
    one seat's)."""
    return (rounds // 2) % 10 == 0


def _expert_module(section: dict, knowledge, game, main):
    """The torch network the fit trains: card attention, or a relu MLP with the main network's action-feature
    head (its shared weights start from the main network's)."""
    from .card_attention import CardAttentionNet
    net = section["network"]
    if net["arch"] == "attention":
        return CardAttentionNet(knowledge.layout, net["width"], net["depth"], net["heads"])
    return MLPExpert(game.observation_size, game.num_actions, net["width"], net["depth"], main)


class MLPExpert(th.nn.Module):
    """A relu MLP over the observation, plus (if the main network has one) the action-feature head, its shared
    weights starting from the main network's."""

    def __init__(self, inputs: int, actions: int, width: int, depth: int, main):
        super().__init__()
        sizes = [inputs] + [width] * depth
        self.layers = th.nn.ModuleList([th.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]
                                       + [th.nn.Linear(width, actions)])
        self.actions = actions
        self.offset = main.feature_offset if main.feature_weights is not None else None
        self.rows = th.nn.Parameter(th.tensor(main.feature_weights)) if self.offset is not None else None

    def forward(self, x):
        h = x
        for k, layer in enumerate(self.layers):
            h = layer(h)
            h = th.relu(h) if k < len(self.layers) - 1 else h
        if self.rows is None:
            return h
        return h + x[:, self.offset:].reshape(len(x), self.actions, -1) @ self.rows

    def to_arrays(self):
        from ..policies.network import MLP
        features = {} if self.rows is None else dict(feature_offset=self.offset,
                                                      feature_weights=self.rows.detach().numpy())
        return MLP([layer.weight.detach().numpy() for layer in self.layers],
                   [layer.bias.detach().numpy() for layer in self.layers], "relu", **features)

    def load_arrays(self, mlp) -> None:
        with th.no_grad():
            for layer, w, b in zip(self.layers, mlp.weights, mlp.biases):
                layer.weight.copy_(th.tensor(w))
                layer.bias.copy_(th.tensor(b))
            if self.rows is not None and mlp.feature_weights is not None:
                self.rows.copy_(th.tensor(mlp.feature_weights))


def _optimizer(section: dict, parameters, lr: float, steps: int):
    from .card_attention import one_cycle_adamw
    if section["network"]["arch"] == "attention":
        return one_cycle_adamw(parameters, lr, steps)
    optimizer = th.optim.Adam(parameters, lr=lr)
    return optimizer, th.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)


def _fit_identity(section: dict, jobs: list[TreeJob], main_hash: str) -> str:
    """What a fit checkpoint was made for: a resumed stage goes on from it only if this is unchanged."""
    return json.dumps({"network": section["network"], "fit": section["fit"], "init": section["init"],
                       "main": main_hash, "trees": [[job.digest, job.rounds] for job in jobs]}, sort_keys=True)


def _save_fit(path: Path, identity: str, phase: int, epochs: int, net, optimizer, schedule, rng, scores) -> None:
    arrays = {"identity": np.array(identity), "phase": np.array(phase), "epochs": np.array(epochs),
              "schedule": np.array(schedule.last_epoch), "rng": np.array(json.dumps(rng.bit_generator.state)),
              "scores": np.array(json.dumps(scores))}
    arrays |= {f"net.{k}": v.detach().cpu().numpy() for k, v in net.state_dict().items()}
    state = optimizer.state_dict()
    groups = [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()} for g in state["param_groups"]]
    arrays["optimizer.groups"] = np.array(json.dumps(groups))
    for i, per in state["state"].items():
        arrays |= {f"optimizer.{i}.{k}": v.detach().cpu().numpy() for k, v in per.items()}
    save_npz_atomic(path, arrays)


def _read_fit(path: Path, identity: str) -> dict | None:
    if not path.is_file():
        return None
    arrays = load_npz(path)
    return arrays if str(arrays["identity"]) == identity else None


def _restore_optimizer(saved: dict, optimizer, schedule) -> None:
    groups = json.loads(str(saved["optimizer.groups"]))
    for g in groups:
        if isinstance(g.get("betas"), list):
            g["betas"] = tuple(g["betas"])
    state: dict = {}
    for key, value in saved.items():
        if key.startswith("optimizer.") and key != "optimizer.groups":
            _, i, name = key.split(".", 2)
            state.setdefault(int(i), {})[name] = th.tensor(value)
    optimizer.load_state_dict({"state": state, "param_groups": groups})
    schedule.last_epoch = int(saved["schedule"])


def fit(cfg: dict, section: dict, jobs: list[TreeJob], main, main_hash: str, run: RunDir, progress: bool, log):
    """The fit's phases from where its checkpoint stands. Returns (the expert's arrays, nodes fitted, epochs in
    all (the init's included), the last held-out scores)."""
    from ..progress import progress_bar
    from .card_attention import minibatches
    from .game_knowledge import last_hand
    knowledge, game = last_hand(cfg["game"]), _game(cfg)
    th.set_num_threads(cfg["torch_threads"])
    phases = section["fit"]
    th.manual_seed(phases[0]["seed"])
    net = _expert_module(section, knowledge, game, main)
    earlier = 0
    if section["init"]:
        start, earlier = _start_expert(section, cfg)
        net.load_arrays(start)
    path, identity = run.root / "fit.npz", _fit_identity(section, jobs, main_hash)
    saved = _read_fit(path, identity)
    at_phase, at_epoch, scores = 0, 0, {}
    if saved is not None:
        net.load_state_dict({k[4:]: th.tensor(v) for k, v in saved.items() if k.startswith("net.")})
        at_phase, at_epoch = int(saved["phase"]), int(saved["epochs"])
        scores = json.loads(str(saved["scores"]))
        log(f"the fit goes on from its checkpoint: phase {at_phase + 1}, {at_epoch} epochs done")
    fitted = set()
    for p, phase in enumerate(phases):
        fitted |= set(phase["trees"])
        if p < at_phase or (p == at_phase and at_epoch >= phase["epochs"]):
            continue
        going_on = saved is not None and p == at_phase and at_epoch > 0
        data = load_trees(run, [jobs[k] for k in phase["trees"]])
        x, mask = data["obs"], th.tensor(data["mask"])
        values = th.tensor(np.nan_to_num(data["values"], nan=NEG))
        best = th.tensor(best_moves(data["values"], data["vs_random"] if phase["tiebreak"] == "random" else None)) \
            & mask
        best_value = values.max(1, keepdim=True).values
        weight = th.tensor(np.where(knowledge.cards_in_hands(x) >= knowledge.early_cards,
                                    phase["early_weight"], 1.0), dtype=th.float32)
        held_out = held_out_rounds(data["round"])
        root = data["root"]
        train = np.flatnonzero(~held_out)
        if not len(train):
            raise ValueError(f"{trees_folder(run)}: every node kept is of a held-out round; solve more rounds")
        batch = min(phase["batch_size"], len(train))
        steps = max(1, phase["epochs"] * (len(train) // batch))
        parameters = list(net.parameters())
        optimizer, schedule = _optimizer(section, parameters, phase["lr"], steps)
        rng = np.random.default_rng(phase["seed"])
        first = 0
        if going_on:
            _restore_optimizer(saved, optimizer, schedule)
            rng.bit_generator.state = json.loads(str(saved["rng"]))
            first = at_epoch
        log(f"fit phase {p + 1}/{len(phases)}: {len(x):,} nodes of tree jobs "
            + ", ".join(str(k + 1) for k in phase["trees"]) + f", {held_out.sum():,} of them held out; "
            f"{phase['epochs']} epochs of {len(train) // batch:,} batches of {batch}")

        def tensor(i):      # the nodes are kept as float16 (0/1 and small fractions), a batch trained as float32
            return th.tensor(x[np.asarray(i)].astype(np.float32))

        def report() -> dict:
            out = {}
            with th.no_grad():
                for name, idx in (("held-out nodes", held_out), ("held-out roots", held_out & root)):
                    i = np.flatnonzero(idx)[:HELD_OUT_REPORT]
                    if not len(i):
                        continue
                    move = net(tensor(i)).masked_fill(~mask[i], NEG).argmax(1, keepdim=True)
                    out[name] = {"best": best[i].gather(1, move).float().mean().item(),
                                 "regret": (best_value[i] - values[i].gather(1, move)).mean().item()}
            return out
        symmetry = knowledge.symmetry if phase["augment"] == "suits" else None
        for epoch in range(first, phase["epochs"]):
            n = len(train) // batch
            with progress_bar(f"fit phase {p + 1}, epoch {epoch + 1}", progress) as update:
                for b, i in enumerate(minibatches(train, batch, rng)):
                    xb, mb, bb = tensor(i), mask[i], best[i]
                    if symmetry is not None:        # the same decisions with the cards relabelled
                        obs_source, action_source = (th.tensor(a) for a in symmetry.draw(rng))
                        ok = symmetry.applies(xb)[:, None]
                        xb = th.where(ok, xb[:, obs_source], xb)
                        mb, bb = (th.where(ok, t[:, action_source], t) for t in (mb, bb))
                    log_p = th.log_softmax(net(xb).masked_fill(~mb, NEG), 1)
                    on_best = -th.logsumexp(log_p.masked_fill(~bb, NEG), 1)          # all on the best moves
                    loss = (weight[i] * on_best).sum() / weight[i].sum()
                    optimizer.zero_grad()
                    loss.backward()
                    th.nn.utils.clip_grad_norm_(parameters, 1.0)   # a transformer wants it (card_attention.py)
                    optimizer.step()
                    schedule.step()
                    update(b + 1, n)
            scores = report()
            log(f"fit phase {p + 1}, epoch {epoch + 1}/{phase['epochs']}: a best move in "
                + ", ".join(f"{k} {v['best']:.2%} (regret {v['regret']:.3f})" for k, v in scores.items()))
            _save_fit(path, identity, p, epoch + 1, net, optimizer, schedule, rng, scores)
        saved = None
    data = load_trees(run, [jobs[k] for k in sorted(fitted)])
    nodes = int((~held_out_rounds(data["round"])).sum())
    return net.to_arrays(), nodes, earlier + sum(phase["epochs"] for phase in phases), scores


# ----- the stage ------------------------------------------------------------------------------------------------
def run(cfg: dict, section: dict, run: RunDir, progress: bool = True, log=print) -> dict:
    """Solve the tree jobs, fit the expert, write the bot; resumable (see the module's docstring). Returns the
    stage's summary (``interrupted`` if Ctrl-C stopped it: what was done is saved)."""
    from ..progress import phase
    run.create()
    with run.lock():
        clock = run.clock()

        def summary(**more) -> dict:
            out = {"steps": 0, "wall_seconds_total": clock.seconds(), "pretrain_seconds": 0.0,
                   "interrupted": False, **more}
            run.write_summary(out)
            return out
        try:
            main, main_hash = main_network(cfg, _game(cfg))
            # what a stage after this one starts from; the tree jobs read it
            save_npz_atomic(run.policy, main.to_arrays())
            log(f"the main network: {cfg['init_from']} (hash {main_hash})")
            jobs = tree_jobs(cfg, section, main_hash)
            # the phases of the recipe's progress view (plan.expert_phases); the work's own bars count into them
            with phase("trees", "solving last hands", progress, own_bar=False):
                solved = solve_trees(cfg, jobs, section["workers"], run, progress, log, tick=clock.keep)
            if not solved:
                log("stopped: the tree jobs saved the rounds they solved")
                return summary(interrupted=True)
            with phase("fit", "fitting the expert", progress, own_bar=False):
                expert, nodes, epochs, scores = fit(cfg, section, jobs, main, main_hash, run, progress, log)
            write_bot(cfg, section, main, expert, nodes, epochs, run.root / BOT_FILE)
        except KeyboardInterrupt:
            log("stopped: what was solved is saved, and the fit goes on from its last epoch")
            return summary(interrupted=True)
        log(f"wrote {run.root / BOT_FILE}: the main network, and the expert in the last hand")
        return summary(steps=nodes, held_out=scores)


def write_bot(cfg: dict, section: dict, main, expert, nodes: int, epochs: int, path: Path) -> None:
    from ..policies.bot import export_onnx
    from .game_knowledge import last_hand
    description = expert.description if hasattr(expert, "description") else \
        {"hidden": [section["network"]["width"]] * section["network"]["depth"], "activation": "relu"}
    meta = RunDir.bot_metadata(cfg, 0, {}, expert={"plays": "the last hand (the last-hand flag)", **description,
                                                   "solved_decisions": nodes, "epochs": epochs})
    check_finite(expert.arrays if hasattr(expert, "arrays") else expert.to_arrays(), "the expert network",
                 "the fit diverged; try a lower expert.fit lr")       # (a CardAttention, or an MLP)
    write_atomic(path, lambda part: export_onnx(main, part, meta, expert=expert,
                                                expert_input=last_hand(cfg["game"]).flag))
