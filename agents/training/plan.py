"""The work of a training run or a recipe, phase by phase, for the progress view's ETA (:mod:`kahve.agents.progress`).

:func:`training_phases` lists what ``kahve train CONFIG`` will do, in order: behaviour cloning's collection and fit,
each DAgger round's collection and fit, each expert-iteration generation's labels and fit, the learning steps and the
evaluations (the periodic ones and the final one); a resumed run's phases say what is done already.
:func:`recipe_phases` lists a recipe's: every stage's, then the bot's report and difficulty levels.

Each phase counts its own units (decisions, minibatches, steps, games...) and has a prior cost per unit in seconds,
from the config: what one of the project's 2-core machines takes for it, roughly (the constants below; the sizes
of the network and of the searches scale them). They are first guesses only: the view measures the real costs as
the phases run and the ETA follows those (:class:`~kahve.agents.progress.RunProgress`).
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import re

from ..progress import Phase

# ----- priors: seconds on one of the project's 2-core machines (rough; the view measures the real ones) -----------
#: a plain policy's move (random, heuristic, greedy), and a network's
PLAIN_MOVE_S, NETWORK_MOVE_S = 3e-5, 5e-5
#: what a learner decision costs besides the policies' moves: the env and the opponents' moves
STEP_S = 3e-5
#: moves left in a deal, on average, where a rollout world plays them out
ROLLOUT_MOVES = 15
#: one example through a fit, per weight of the policy network (its value network and the optimizer included)
EXAMPLE_WEIGHT_S = 2.5e-10
#: one round of the expert stage's tree jobs (a deal played to its last hand, which the solver values whole)
TREE_ROUND_S = 0.3
#: one example through the expert's card-attention network
ATTENTION_EXAMPLE_S = 2e-4
#: one world of a distill job's search at a late position ("rollout:256 costs a second a move")
DISTILL_WORLD_S = 4e-3
#: the share of a distill job's decisions that are late (searched) when it keeps every decision
LATE_SHARE = 0.3
#: the ``hard`` level's move (a search over the network), and the decisions each level's time per move is taken over
HARD_MOVE_S, LEVEL_TIMING_MOVES = 0.05, 200
#: an evaluation's start against one opponent: its worker processes and the bot file loaded in each
EVAL_START_S = 1.0
#: how much longer PPO's steps take when the rollouts are not collected while it updates (async_rollouts off)
SYNC_ROLLOUTS = 1.6


def move_cost(spec: str) -> float:
    """Seconds per move of the policy ``spec`` (a rough prior): a search costs its worlds or iterations times the
    moves they play."""
    spec = str(spec)
    m = re.match(r"(rollout|ismcts|endgame)(?=:|$)(?::(\d+))?[^:]*(?::(.*))?$", spec)
    if m:
        kind, n, inner = m.group(1), m.group(2), m.group(3)
        if kind == "rollout":
            return int(n or 16) * ROLLOUT_MOVES * move_cost(inner or "heuristic")
        if kind == "ismcts":
            return int(n or 200) * (2e-5 + ROLLOUT_MOVES * move_cost(inner or "random"))
        return move_cost(inner or "heuristic") + int(n or 32) * 3e-4        # (it solves the last hand only)
    if spec.endswith(":hard") or spec == "hard":
        return HARD_MOVE_S
    if spec in ("random", "heuristic", "greedy"):
        return PLAIN_MOVE_S
    return NETWORK_MOVE_S                            # a bot file, a shipped bot, a level, a run's network


def _parallel(workers: int) -> int:
    return max(1, min(int(workers), os.cpu_count() or 1))


def network_weights(cfg: dict, game=None) -> int:
    """The weights of the config's policy network (what a fit's or an update's cost grows with)."""
    if game is None:
        from kahve import envs
        game = envs.game_class(cfg["game"])(**cfg["settings"])
    sizes = [game.observation_size, *cfg["network"]["hidden"], game.num_actions]
    return sum(a * b for a, b in zip(sizes, sizes[1:]))


def _game(cfg: dict, settings: dict | None = None):
    from kahve import envs
    return envs.game_class(cfg["game"])(**{**cfg["settings"], **(settings or {})})


@functools.lru_cache(maxsize=64)
def _moves(game: str, settings: str, episode: str) -> int:
    """The moves of one game (``episode``: a single deal or a full match) of random play at the table ``settings``
    (JSON): a few milliseconds, and the length of a game to the right order."""
    from kahve import envs
    state = envs.game_class(game)(**{**json.loads(settings), "episode": episode}).new_state(0)
    rng, n = random.Random(0), 0
    while state.current_player is not None and n < 20_000 and not (episode == "deal" and state.deals_completed):
        state.apply(rng.choice(state.legal_actions()))
        n += 1
    return max(1, n)


def game_cost(game: str, settings: dict, a: str, b: str, episode: str) -> float:
    """Seconds of one game of ``game`` (a full match, or a single deal) between the policies ``a`` and ``b``."""
    moves = _moves(game, json.dumps(settings, sort_keys=True, default=str), episode)
    return moves / 2 * (move_cost(a) + move_cost(b)) + moves * STEP_S


def learn_step_cost(cfg: dict, weights: int) -> float:
    """Seconds per learner step of PPO or DQN: the env's step and the update's share."""
    example = EXAMPLE_WEIGHT_S * weights
    if cfg["algorithm"] == "dqn":
        dqn = cfg["dqn"]
        update = dqn["gradient_steps"] / (dqn["train_freq"] * cfg["n_envs"]) * dqn["batch_size"] * example * 1.5
        return STEP_S + NETWORK_MOVE_S + update
    step = STEP_S + NETWORK_MOVE_S + cfg["ppo"]["n_epochs"] * example
    if cfg.get("backend") == "rllib":
        return step * 3
    return step if cfg.get("async_rollouts") else step * SYNC_ROLLOUTS


def training_phases(cfg: dict, cloned: dict | bool = False, steps: int = 0,
                    next_eval: int | None = None) -> list[Phase]:
    """The phases of a training run of ``cfg``, in order. ``cloned``: behaviour cloning's progress as a checkpoint
    holds it (:class:`~.pretrain.Cloning`), True once cloning is done, False for a fresh run; ``steps``: the
    learner steps done; ``next_eval``: the step count of the next periodic evaluation (default: the first)."""
    pre, ev = cfg["pretrain"], cfg["evaluation"]
    game = _game(cfg)
    weights = network_weights(cfg, game)
    phases = []
    progress = cloned if isinstance(cloned, dict) else {}
    collected, fits = progress.get("collected", 0), progress.get("fits", 0)
    generations = len(progress.get("generations", []))
    if cloned is True:
        collected = fits = 1 + pre["dagger_rounds"]
        generations = pre["generations"]
    workers = _parallel(cfg["n_envs"])
    fit_batch = pre["batch_size"] * EXAMPLE_WEIGHT_S * weights
    fit_key = f"fit:{weights}:{pre['batch_size']}"

    def collect(key, label, n, teacher, actor, done, rate):
        cost = (STEP_S + move_cost(teacher) + (NETWORK_MOVE_S if actor else 0.0)) / workers
        phases.append(Phase(key, label, "decisions", n, cost, rate, done=n if done else 0))

    def fit(key, label, n, epochs, done):
        batches = math.ceil(n / pre["batch_size"]) * epochs
        phases.append(Phase(key, label, "batches", batches, fit_batch, fit_key, done=batches if done else 0))

    teacher = pre["teacher"]
    if pre["steps"]:
        collect("clone.collect", f"behaviour cloning: {teacher} labels", pre["steps"], teacher, False,
                collected >= 1, f"collect:{teacher}")
        fit("clone.fit", "behaviour cloning: fitting", pre["steps"], pre["epochs"], fits >= 1)
        more = pre["dagger_steps"] or pre["steps"]
        rounds = pre["dagger_rounds"]
        for k in range(1, rounds + 1):
            collect(f"dagger{k}.collect", f"DAgger {k}/{rounds}: {teacher} labels", more,
                    teacher, True, collected >= k + 1, f"collect:{teacher}")
            fit(f"dagger{k}.fit", f"DAgger {k}/{rounds}: fitting", pre["steps"] + k * more, pre["dagger_epochs"],
                fits >= k + 1)
    if pre["generations"]:
        labels = pre["generation_steps"] or pre["dagger_steps"] or pre["steps"]
        search = pre["search"]
        for g in range(1, pre["generations"] + 1):
            done = generations >= g
            collect(f"gen{g}.label", f"expert iteration {g}/{pre['generations']}: {search} labels", labels,
                    search, True, done, f"collect:{search}")
            fit(f"gen{g}.fit", f"expert iteration {g}/{pre['generations']}: fitting", g * labels,
                pre["dagger_epochs"], done)
    total = cfg["total_timesteps"]
    phases.append(Phase("learn", f"learning ({cfg['algorithm']})", "steps", total, learn_step_cost(cfg, weights),
                        f"learn:{cfg['game']}:{cfg['algorithm']}:{cfg.get('backend', 'sb3')}:{weights}",
                        done=min(steps, total)))
    evaluations = 1                                                      # the final one
    if ev["every"]:
        first = next_eval if next_eval is not None else ev["every"]
        evaluations += max(0, (total - first) // ev["every"] + 1) if first <= total else 0
    episode = {**cfg["settings"], **ev["settings"]}.get("episode", "match")
    settings = {**cfg["settings"], **ev["settings"]}
    per_game = sum(game_cost(cfg["game"], settings, "bot", opponent, episode)
                   for opponent in ev["opponents"]) / max(1, len(ev["opponents"]))
    start = EVAL_START_S / ev["games"] if ev["workers"] > 1 else 0.0
    phases.append(Phase("eval", "evaluations", "games", evaluations * ev["games"] * len(ev["opponents"]),
                        per_game / _parallel(ev["workers"]) + start, f"eval:{cfg['game']}:{episode}"))
    return phases


def distill_phases(cfg: dict, section: dict) -> list[Phase]:
    """A ``distill`` stage's: its labelling jobs, then the fit."""
    jobs, opts = section["labels"], section["fit"]
    parallel = _parallel(min(section["workers"], len(jobs)))
    count = sum(j["count"] for j in jobs)
    seconds = 0.0
    for j in jobs:
        base = move_cost("heuristic" if j["base"] == "previous" else j["base"])
        searched = j["worlds"] * DISTILL_WORLD_S * (1.0 if j["late_only"] else LATE_SHARE)
        seconds += j["count"] * (STEP_S + base + searched)
    weights = network_weights(cfg)
    batches = opts["epochs"] * math.ceil(0.9 * count / opts["batch_size"])
    return [Phase("labels", "labelling", "labels", count, seconds / max(1, count) / parallel,
                  f"labels:{cfg['game']}:{seconds / max(1, count):.2g}"),
            Phase("fit", "fitting the labels", "batches", batches, opts["batch_size"] * EXAMPLE_WEIGHT_S * weights,
                  f"fit:{weights}:{opts['batch_size']}")]


def expert_phases(cfg: dict, section: dict) -> list[Phase]:
    """An ``expert`` stage's: its tree jobs, then the fit's phases (counted in minibatches)."""
    trees = section["trees"]
    rounds = sum(t["rounds"] for t in trees)
    net = section["network"]
    batches, seconds = 0, 0.0
    for phase in section["fit"]:
        nodes = sum(0.9 * trees[k]["rounds"] * (trees[k]["keep"] + 2) for k in phase["trees"])
        n = phase["epochs"] * max(1, int(nodes) // phase["batch_size"])
        batches += n
        example = ATTENTION_EXAMPLE_S if net["arch"] == "attention" else \
            EXAMPLE_WEIGHT_S * net["width"] * net["width"] * net["depth"]
        seconds += n * phase["batch_size"] * example
    return [Phase("trees", "solving last hands", "rounds", rounds,
                  TREE_ROUND_S / _parallel(min(section["workers"], len(trees))), f"trees:{cfg['game']}"),
            Phase("fit", "fitting the expert", "batches", batches, seconds / max(1, batches),
                  f"expert-fit:{net['arch']}:{net['width']}:{net['depth']}")]


def bot_phases(cfg: dict, bot: dict) -> list[Phase]:
    """A recipe's last work: the bot's report (full matches against each opponent, at each of its tables) and its
    difficulty levels. ``cfg``: the last stage's config."""
    if not bot["report"]:
        return []
    from ..policies.levels import hard_spec
    tables = [{**cfg["settings"], **t} for t in [{}, *(cfg.get("tables") or [])]]
    parallel = _parallel(bot["workers"])
    games, seconds = 0, 0.0
    for opponent in bot["report"]:
        n, episode = (max(20, bot["games"] // 5), "deal") if opponent.startswith("ismcts") else (bot["games"], "match")
        games += n * len(tables)
        seconds += n * sum(game_cost(cfg["game"], t, "bot", opponent, episode) for t in tables)
    phases = [Phase("report", "the bot's report", "games", games, seconds / max(1, games) / parallel,
                    f"report:{cfg['game']}", match="report:")]
    if bot["levels"]:
        deals = 3 * 2 * bot["levels"] * len(tables)
        hard = [max(HARD_MOVE_S, move_cost(hard_spec(_game(cfg, t), "bot"))) for t in tables]    # a move, per table
        per_deal = sum(2 * game_cost(cfg["game"], t, "bot", "heuristic", "deal")
                       + _moves(cfg["game"], json.dumps(t, sort_keys=True, default=str), "deal") / 2 * h
                       for t, h in zip(tables, hard)) / (3 * len(tables))
        timing = sum(LEVEL_TIMING_MOVES * (2 * NETWORK_MOVE_S + h) for h in hard)     # each level's time per move
        phases.append(Phase("levels", "the bot's difficulty levels", "deals", deals,
                            per_deal / parallel + timing / deals, f"levels:{cfg['game']}", match="levels:"))
    return phases


def recipe_phases(recipe) -> list[Phase]:
    """Every stage's phases (as a fresh run of it would do them), then the bot's. (A stage's ``kind``: a training
    run, or the kinds of :data:`.recipe.KINDS` with a module of their own.)"""
    planners = {"distill": distill_phases, "expert": expert_phases}
    phases = []
    for stage in recipe.stages:
        planner = planners.get(stage.kind)
        more = planner(stage.cfg, stage.section) if planner else training_phases(stage.cfg)
        for p in more:
            p.stage = stage.index
        phases += more
    return phases + bot_phases(recipe.stages[-1].cfg, recipe.bot)
