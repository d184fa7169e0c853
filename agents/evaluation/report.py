"""The evaluation report written beside a shipped bot (``kahve export --report``).

Full matches under the bot's evaluation settings against each baseline (its training run may have evaluated on
single deals: the report plays full matches regardless); search opponents (``ismcts``), which
are slow, play single deals (``episode="deal"``) and a fifth of the games. The report states the strength bar
of docs/design.md ("Bars a bot report cites") for the game, whether the bot meets it, and the seeds its deals
come from; a bot that misses the bar says so. With ``levels`` (``kahve export --report --levels PAIRS``, or
:func:`write_levels` over a report already written) it also gives the strength and the time per move of each
difficulty level of the bot (``BOT:easy``, ``BOT:medium``, ``BOT:hard``) against the heuristic.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from kahve import envs

from ..policies.bot import Bot, BotSettingsWarning
from ..policies.base import decide
from ..progress import progress_bar
from .evaluate import evaluate

#: docs/design.md "Bars a bot report cites": against the heuristic, (which end of the win rate's 95% interval,
#: the win rate it must pass, whether the whole points-per-deal interval must lie above 0), and the win rate
#: needed against random (None: no bar against random)
BARS = {
    "pasur": ("lower", 0.5, True, None),
    "pishti": ("lower", 0.5, True, None),
    "pis_yedili": ("lower", 0.5, True, None),
    "pishe_pasha": ("upper", 0.5, False, 0.9),
}


def evaluation_settings(meta: dict) -> dict:
    return {**meta.get("settings", {}), **_evaluation_overrides(meta)}


def report_tables(meta: dict) -> list[tuple[str, dict]]:
    """The tables a report measures the bot at, as (label, evaluation settings): for a bot of several tables (its
    ``tables``, e.g. Ish at 2 to 20 players) each of them, labelled by the settings that tell them apart
    (``players=3``); else its own table, unlabelled."""
    tables = meta.get("tables") or []
    if len(tables) < 2:
        return [("", evaluation_settings(meta))]
    keys = _varying(tables)
    return [(", ".join(f"{k}={t[k]}" for k in keys), {**t, **_evaluation_overrides(meta)}) for t in tables]


def _varying(tables: list[dict]) -> list[str]:
    """The settings that tell ``tables`` apart."""
    return [k for k in tables[0] if any(t.get(k) != tables[0][k] for t in tables)]


def _evaluation_overrides(meta: dict) -> dict:
    """The settings the bot's training run evaluated under, over those it trained with."""
    return ((meta.get("config") or {}).get("evaluation") or {}).get("settings", {})


#: a report's deal seeds: table ``t``'s rows from ``seed + TABLE_SEEDS * t`` on (table 0: the seeds of a bot of one
#: table), so that no two rows of a report deal the same decks
TABLE_SEEDS = 1000


def ish_policy_check(bot: Bot, settings: dict, rounds: int = 400) -> dict:
    """How often the bot stakes the minimum and calls exactly when eligible (docs/rules.md §5e)."""
    game = envs.game_class("ish")(**{**settings, "episode": "deal"})
    bets = min_bets = calls = right_calls = 0
    levels = game.settings.bet_levels            # stake actions are 0 .. levels - 1, the minimum stake first
    for seed in range(rounds):
        st = game.new_state(seed)
        while st.current_player is not None:
            seat = st.current_player
            a = decide(bot, st)
            if a < levels:
                bets += 1
                min_bets += a == 0
            elif a in (game.call, game.no_call):
                calls += 1
                right_calls += (a == game.call) == bool(st.eligible[seat])
            st.apply(a)
    return {"bets": bets, "min_stake_rate": min_bets / max(1, bets), "call_decisions": calls,
            "correct_call_rate": right_calls / max(1, calls)}


def time_per_move(bot, settings: dict, decisions: int = 400, seed: int = 99, game_name: str | None = None) -> dict:
    """The CPU time per decision of ``bot`` (a bot, or any policy of ``game_name``: median and 90th percentile, in
    ms) over the real choices of a few deals played by the heuristic in every seat (``process_time``: one core's
    time, which other load does not inflate)."""
    import time

    from ..policies.heuristics import heuristic_for
    game = envs.game_class(game_name or bot.metadata["game"])(**{**settings, "episode": "deal"})
    teacher = heuristic_for(game, seed)
    times: list[float] = []
    deal = 0
    while len(times) < decisions and deal < 10 * decisions:
        st = game.new_state(seed + deal)
        deal += 1
        while st.current_player is not None and len(times) < decisions:
            seat = st.current_player
            if len(st.legal_actions()) > 1:
                obs, mask = st.observation(seat), st.legal_mask()
                t = time.process_time()
                bot.act(obs, mask, st)
                times.append(time.process_time() - t)
            st.apply(decide(teacher, st))
    ms = sorted(1000 * t for t in times)
    return {"moves": len(ms), "median_ms": ms[len(ms) // 2] if ms else float("nan"),
            "p90_ms": ms[int(0.9 * (len(ms) - 1))] if ms else float("nan")}


def write_report(bot_path, opponents: list[str], games: int = 200, workers: int = 2, command: str | None = None,
                 seed: int = 12345, show_progress: bool = False, levels: int = 0) -> Path:
    """Evaluate the bot against each opponent and write FILE.md (and FILE.eval.json) beside it; with
    ``show_progress``, a progress bar with its ETA per opponent; with ``levels``, the difficulty levels too, that
    many mirrored pairs each (:func:`write_levels`)."""
    bot_path = Path(bot_path)
    bot = Bot.load(bot_path)
    meta = bot.metadata
    game = meta["game"]
    tables = report_tables(meta)
    labelled = len(tables) > 1
    rows, results, verdicts, notes = [], {}, [], []
    for t, (label, table) in enumerate(tables):
        # full matches, whatever episode the run evaluated on (a fine-tune's config may measure single deals): the
        # bars the report cites are over full matches, and so is every row it labels "full matches"
        settings = {**table, "episode": "match"}
        measured = results.setdefault(label, {}) if labelled else results
        for k, opp in enumerate(opponents):
            s, n, note = dict(settings), games, "full matches"
            if opp.startswith("ismcts"):
                s["episode"], n, note = "deal", max(20, games // 5), "single deals"
            with progress_bar(f"report: {bot_path.name} vs {opp}" + (f" ({label})" if labelled else ""),
                              show_progress) as update:
                r = evaluate(game, str(bot_path), opp, games=n, settings=s, workers=workers,
                             seed=seed + TABLE_SEEDS * t + k, progress=update)
            measured[opp] = r
            rows.append((f"| {label} " if labelled else "")
                        + f"| {opp} | {note} | {r['games']} | {r['wins']}/{r['draws']}/{r['losses']} | "
                          f"{_strength(r)} |")
        verdict, note = _bar(game, measured)
        if game == "ish":
            check = ish_policy_check(bot, settings)
            ok = check["min_stake_rate"] >= 0.95 and check["correct_call_rate"] >= 0.95
            verdict = ok if verdict is None else verdict and ok
            note = (f"policy check over 400 rounds: minimum stake in {check['min_stake_rate']:.1%} of "
                    f"{check['bets']} bets; calls exactly when eligible in {check['correct_call_rate']:.1%} of "
                    f"{check['call_decisions']} call decisions. Bar (docs/rules.md §5e optimum, 95% of decisions): "
                    f"**{'met' if ok else 'NOT met'}**.")
            measured["policy_check"] = check
        if note:
            notes.append((f"- {label}: " if labelled else "") + note[0].upper() + note[1:])
        verdicts.append(verdict)
    settings = {**tables[0][1], "episode": "match"}
    defaults = envs.game_class(game).settings_spec.defaults()

    def changed(values: dict) -> dict:
        return {k: v for k, v in values.items() if defaults.get(k) != v}

    lines = [f"# {bot_path.name}: {game} bot", "",
             f"- algorithm: {meta['algorithm']}, {meta['training_steps']:,} training steps"
             + (f", {meta['wall_seconds'] / 60:.0f} min of training" if meta.get("wall_seconds") else ""),
             (f"- trained at the tables {'; '.join(label for label, _ in tables)}, with settings "
              f"`{changed({k: v for k, v in meta['settings'].items() if k not in _varying(meta['tables'])})}` "
              f"otherwise; evaluated at each with `{changed({**_evaluation_overrides(meta), 'episode': 'match'})}`"
              if labelled else
              f"- trained with settings `{changed(meta['settings'])}`; evaluated with `{changed(settings)}`")
             + " (other settings at their defaults)",
             f"- env version v{meta['env_version']}, observation {meta['observation_size']}, "
             f"actions {meta['num_actions']}, network {meta.get('network')}"]
    if meta.get("expert_input") is not None:
        lines.append(f"- an expert network gives the scores wherever observation input {meta['expert_input']} is set "
                     f"(docs/design.md, \"Bots\"): {meta.get('expert', {})}")
    recipe = meta.get("recipe")
    if isinstance(recipe, dict):
        lines.append(f"- command: `{recipe.get('command')}` (its recipe); wall time of each stage on "
                     f"{recipe.get('machine', 'the machine that ran it')}:")
        unit = {"distill": "labels fitted", "expert": "solved decisions fitted"}
        lines += [f"  - {s['name']}: {s['algorithm']}, {s['steps']:,} {unit.get(s['algorithm'], 'steps')}, "
                  f"{s['wall_seconds']:.0f} s"
                  + (f" ({s['pretrain_seconds']:.0f} s of it behaviour cloning and DAgger)"
                     if s.get("pretrain_seconds") else "") for s in recipe.get("stages", [])]
    if command:
        lines.append(f"- command: `{command}`")
    lines += ["", ("| table " if labelled else "")
              + "| opponent | games | n | W/D/L | win rate (95% CI) | points per deal (95% CI) |",
              ("| --- " if labelled else "") + "| --- | --- | --- | --- | --- | --- |", *rows, ""]
    every = [r for measured in (results.values() if labelled else [results]) for r in measured.values()]
    sides = max((r.get("sides", 2) for r in every), default=2)
    lines.append(f"Deals: each opponent's deal seeds are derived from seed {seed} + its row number (0, 1, ...)"
                 + (f" + {TABLE_SEEDS} x the table's (0, 1, ...)" if labelled else "")
                 + " and the unit index, a range never used in training or model selection; every deal is played "
                 + ("with the seats swapped (mirrored)." if sides <= 2 else
                    f"once with the bot on each side in turn (up to {sides} sides); a win shared by k sides counts "
                    "1/k, so the fair share of a win is 1/sides."))
    lines += notes
    known = [v for v in verdicts if v is not None]
    verdict = all(known) if known else None
    if labelled and known:
        lines.append(f"At every table: **{'meets the bar' if verdict else 'does not meet the bar'}**.")
    timing = time_per_move(bot, settings)
    results["time_per_move"] = timing
    lines.append(f"Time per move: median {timing['median_ms']:.3f} ms, 90th percentile {timing['p90_ms']:.3f} ms of "
                 f"CPU time over {timing['moves']} decisions (one core; the `hard` level searches over this network, "
                 "see docs/search.md).")
    out = bot_path.with_suffix(".md")
    out.write_text("\n".join(lines) + "\n")
    bot_path.with_suffix(".eval.json").write_text(json.dumps({"verdict": verdict, "results": results}, indent=1,
                                                             default=str))
    if levels:
        write_levels(bot_path, levels, workers=workers, seed=seed, show_progress=show_progress)
    return out


def _bar(game: str, results: dict) -> tuple[bool | None, str]:
    """Whether the bot meets docs/design.md's strength bar of ``game`` at one table (None: the game has none, or
    the report lacks its opponents), and the sentence that says so. At a table of more than two sides the win-rate
    bar is the fair share, 1/sides."""
    if game not in BARS or "heuristic" not in results or (BARS[game][3] is not None and "random" not in results):
        return None, ""
    side, bar, points_bar, vs_random = BARS[game]
    heuristic = results["heuristic"]
    if heuristic.get("sides", 2) > 2:
        bar = heuristic["fair_share"]
    lo, hi = heuristic["win_rate_ci95"]
    ok = (lo > bar) if side == "lower" else (hi >= bar)
    parts = [f"vs heuristic the {side} end of the win rate's 95% interval "
             f"{'above' if side == 'lower' else 'at or above'} {bar:.0%} ({'met' if ok else 'NOT met'})"]
    verdict = ok
    if points_bar:
        ok = heuristic["points_per_deal_ci95"][0] > 0
        parts.append(f"the whole points-per-deal interval above 0 ({'met' if ok else 'NOT met'})")
        verdict = verdict and ok
    if vs_random is not None:
        ok = results["random"]["win_rate"] >= vs_random
        parts.append(f"vs random at least {vs_random:.0%} ({'met' if ok else 'NOT met'})")
        verdict = verdict and ok
    return verdict, (f"strength bar (docs/design.md): {', '.join(parts)}: "
                     f"**{'meets the bar' if verdict else 'does not meet the bar'}**.")


def _strength(r: dict) -> str:
    """An evaluation's win rate and points per deal, each with its 95% interval, as two table cells; at a table of
    more than two sides the win rate's cell also gives the fair share (1/sides), the figure to read it against."""
    lo, hi = r["win_rate_ci95"]
    plo, phi = r["points_per_deal_ci95"]
    fair = f"; fair share {r['fair_share']:.3g}" if r.get("sides", 2) > 2 else ""
    return f"{r['win_rate']:.3f} ({lo:.3f}–{hi:.3f}{fair}) | {r['points_per_deal']:+.2f} ({plo:+.2f}…{phi:+.2f})"


#: the section of a report that :func:`write_levels` writes (and replaces when it writes it again)
LEVELS_HEADING = "## Difficulty levels"
#: the opponent every level is measured against, and the decisions its time per move is taken over (``hard``
#: searches: a few hundred of its moves take a minute or two)
LEVEL_OPPONENT = "heuristic"
LEVEL_DECISIONS = 200


def write_levels(bot_path, pairs: int, workers: int = 2, seed: int = 12345, show_progress: bool = False) -> Path:
    """Measure each difficulty level of the bot (``BOT:easy``, ``BOT:medium``, ``BOT:hard``; docs/search.md) on
    ``pairs`` mirrored pairs of single deals against the heuristic, and its median CPU time per move, and write
    them as the report's last section (FILE.md, replacing an earlier one) and under ``levels`` in FILE.eval.json.
    The deal seeds are derived from ``seed`` + 100 + the level's index, apart from the report's own rows."""
    from ..policies.levels import EASY_TEMPERATURE, LEVELS, hard_spec
    from ..policies.specs import make_policy
    bot_path = Path(bot_path)
    report, evaluation = bot_path.with_suffix(".md"), bot_path.with_suffix(".eval.json")
    if not report.exists() or not evaluation.exists():
        raise FileNotFoundError(f"{bot_path}: no report to add the levels to (write it first: kahve export --report)")
    meta = Bot.load(bot_path).metadata
    tables = report_tables(meta)
    labelled = len(tables) > 1
    rows, measured = [], {}
    for t, (label, table) in enumerate(tables):
        game = envs.game_class(meta["game"])(**table)
        settings = {**table, "episode": "deal"}
        plays = {"easy": f"the network sampled at temperature {EASY_TEMPERATURE:g}", "medium": "the network, greedy",
                 "hard": f"`{hard_spec(game, bot_path.name)}`"}
        here = measured.setdefault(label, {}) if labelled else measured
        for k, level in enumerate(LEVELS):
            spec = f"{bot_path}:{level}"
            with progress_bar(f"levels: {bot_path.name}:{level} vs {LEVEL_OPPONENT}"
                              + (f" ({label})" if labelled else ""), show_progress) as update:
                r = evaluate(meta["game"], spec, LEVEL_OPPONENT, games=2 * pairs, settings=settings,
                             workers=workers, seed=seed + TABLE_SEEDS * t + 100 + k, progress=update)
            with warnings.catch_warnings():       # the report plays the evaluation's settings on purpose
                warnings.simplefilter("ignore", BotSettingsWarning)
                policy = make_policy(spec, game, seed)
            timing = time_per_move(policy, settings, decisions=LEVEL_DECISIONS, game_name=meta["game"])
            here[level] = {"plays": plays[level], "result": r, "time_per_move": timing}
            rows.append((f"| {label} " if labelled else "")
                        + f"| `{level}` | {plays[level]} | {pairs} | {_strength(r)} | {timing['median_ms']:.2f} | "
                          f"{timing['p90_ms']:.2f} |")
    lines = [LEVELS_HEADING, "",
             f"Each level against `{LEVEL_OPPONENT}`, single deals, mirrored pairs (deal seeds derived from seed "
             f"{seed + 100} + the level's row (0, 1, 2)" + (f" + {TABLE_SEEDS} x the table's" if labelled else "")
             + f" and the unit index); the time per move is CPU time on one core over {LEVEL_DECISIONS} decisions of "
             "deals the heuristic plays (docs/search.md, \"Difficulty levels\").", "",
             ("| table " if labelled else "") + "| level | plays | pairs | win rate (95% CI) | points per deal "
             "(95% CI) | median ms / move | 90th pct ms |",
             ("| --- " if labelled else "") + "| --- | --- | --- | --- | --- | --- | --- |", *rows, ""]
    page = report.read_text()
    page = page.split(LEVELS_HEADING)[0].rstrip("\n") + "\n\n" + "\n".join(lines)
    report.write_text(page)
    data = json.loads(evaluation.read_text())
    data["levels"] = measured
    evaluation.write_text(json.dumps(data, indent=1, default=str))
    return report
