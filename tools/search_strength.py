"""Strength and time per move of search policies: the tables of docs/search.md.

Each cell is one evaluation, exactly ``kahve evaluate GAME A B --games N --seed S --workers 1 --settings ...``
(mirrored deals, seats rotated, 95% intervals over deal seeds), run in this process with A's policy wrapped in
a timer: the report adds the median (and 90th percentile) milliseconds of A's ``act`` calls, on one core.

    python tools/search_strength.py --preset search --games 200 --seed 1000 --out docs/search.json
    python tools/search_strength.py --cell pis_yedili rollout:16,z=1 heuristic --games 200
    python tools/search_strength.py --table docs/search.json          # print the markdown tables again

The diagnosis of docs/bot-log.md ("Why rollout:16 lost at Pis Yedili"): ``--advantage GAME SPEC`` plays SPEC against
the heuristic and, at each of SPEC's moves that differs from the heuristic's, estimates the true advantage of
SPEC's move over the heuristic's (rollouts by the heuristic from the real hands, the stock reshuffled: the
value of each move to a player who could see the cards). By the performance-difference lemma their sum per deal
is SPEC's expected gain over the heuristic (in deal points, up to the estimates' noise); the rows say which
kinds of deviation win or lose it.

    python tools/search_strength.py --advantage pis_yedili rollout:16 --deals 100 --seed 0

``--cell GAME oracle:K heuristic`` measures ``rollout:K`` given the real hands (the stock and chance sampled).

Results are appended to ``--out`` (JSON lines) as each cell finishes; a cell already there (same game, A, B,
games, seed) is skipped, so a long preset can be run in pieces (``--only GAME``, ``--limit N`` cells per run).
With ``--jobs 2`` two cells run at once, each in its own process (timings then share the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: the tables of each game, the evaluation settings (single deals)
SETTINGS = {"pasur": {"episode": "deal"}, "pishti": {"players": 2, "episode": "deal"},
            "pis_yedili": {"players": 2, "episode": "deal"}}
BOTS = {"pasur": "pasur/ppo", "pishti": "pishti/ppo_2p", "pis_yedili": "pis_yedili/distilled_2p"}


def preset(name: str) -> list[tuple[str, str, str]]:
    """The cells of a named preset: (game, A, B)."""
    cells = []
    for game, bot in BOTS.items():
        if name == "search":          # search budgets against the heuristic
            specs = ["rollout:16", "rollout:16,z=1", "rollout:64", "rollout:64,z=1", f"rollout:16,z=1:{bot}",
                     f"rollout:64,z=1:{bot}", "ismcts:400", "ismcts:400:heuristic", "ismcts:400,prior:heuristic"]
            if game != "pis_yedili":   # what Pis Yedili showed was not worth these games' time: see docs/search.md
                specs = [s for s in specs if s not in ("rollout:64", "ismcts:400:heuristic")]
            cells += [(game, a, "heuristic") for a in specs]
        elif name == "levels":        # the difficulty levels against the heuristic, the network and ismcts:400
            # (BOT:hard was once the search preset's rollout:64,z=1:BOT; it is its own search now: levels.HARD)
            cells += [(game, f"{bot}:{lv}", "heuristic") for lv in ("easy", "medium", "hard")]
            cells += [(game, f"{bot}:hard", bot), (game, f"{bot}:hard", "ismcts:400")]
        else:
            raise SystemExit(f"unknown preset {name!r}; presets: search, levels")
    return cells


class Timed:
    """A policy whose ``act`` calls are timed: wall clock (perf_counter) and the process's CPU time
    (process_time; one compute thread, so one core's time: what a shared machine's load does not inflate)."""

    def __init__(self, policy, times: list, cpu: list):
        self.policy, self.times, self.cpu = policy, times, cpu
        self.reads_observation = getattr(policy, "reads_observation", True)
        self.name = getattr(policy, "name", None)

    def reset(self):
        if hasattr(self.policy, "reset"):
            self.policy.reset()

    def act(self, observation, action_mask, state=None):
        t, c = time.perf_counter(), time.process_time()
        a = self.policy.act(observation, action_mask, state)
        self.cpu.append(time.process_time() - c)
        self.times.append(time.perf_counter() - t)
        return a


def oracle(spec: str, game, seed):
    """``oracle:K`` (this script only, for the diagnosis): ``rollout:K`` that sees the real hands; only what
    nobody sees (the stock order, the chance) is sampled."""
    import random

    from kahve.agents.policies.rollout import RolloutPolicy

    class Oracle(RolloutPolicy):
        def act(self, observation, action_mask, state=None):
            legal = state.legal_actions()
            if len(legal) == 1:
                return legal[0]
            seat = state.current_player
            worlds = true_worlds(state, self.rng, self.rollouts)
            totals = [sum(self._rollout(w, a, s, seat) for w, s in worlds) for a in legal]
            return legal[totals.index(max(totals))]

    return Oracle(game, int(spec.split(":")[1]), seed, name=spec)


def run_cell(game: str, a: str, b: str, games: int, seed: int) -> dict:
    from kahve.agents.evaluation import evaluate as ev
    from kahve.agents.policies.specs import make_policy
    from kahve.agents.threads import limit_threads

    limit_threads()
    times: list[float] = []
    cpu: list[float] = []

    def timed_make_policy(spec, g, s=None):
        policy = oracle(spec, g, s) if spec.startswith("oracle:") else make_policy(spec, g, s)
        return Timed(policy, times, cpu) if spec == a and s != 0 else policy   # seed 0: evaluate's spec check

    ev.make_policy = timed_make_policy
    try:
        report = ev.evaluate(game, a, b, games=games, settings=SETTINGS[game], workers=1, seed=seed)
    finally:
        ev.make_policy = make_policy
    ms = sorted(t * 1000 for t in times)
    report["moves"] = len(ms)
    report["ms_median"] = statistics.median(ms) if ms else float("nan")
    report["ms_p90"] = ms[int(0.9 * (len(ms) - 1))] if ms else float("nan")
    report.update(cpu_summary(cpu))
    report["command"] = (f"kahve evaluate {game} {a} {b} --games {games} --seed {seed} --workers 1 --settings "
                         + " ".join(f"{k}={v}" for k, v in SETTINGS[game].items()))
    return report


def move_kind(state, action: int) -> str:
    """A short label for grouping moves: "play J", "play 7", "play A" (the ranks that Pis Yedili's rules single
    out), "play other" for any other card, or the first word of the move (draw, pass, take)."""
    word = state.describe_action(action).split()[0]
    if len(word) == 2 and word[0] in "A23456789TJQK":
        return f"play {word[0]}" if word[0] in "J7A" else "play other"
    return word


def true_worlds(state, rng, k: int) -> list:
    """``k`` copies of the real state with only what nobody sees re-drawn (the stock order, the chance)."""
    out = []
    for _ in range(k):
        w = state.clone()
        if isinstance(getattr(w, "stock", None), list):
            rng.shuffle(w.stock)
        w._chance_rng = None
        w._chance_seed = rng.getrandbits(64)
        out.append((w, rng.getrandbits(32)))
    return out


def advantage(game: str, spec: str, deals: int, seed: int, worlds: int = 64) -> dict:
    import random

    from kahve import envs
    from kahve.agents.policies.base import decide
    from kahve.agents.policies.heuristics import heuristic_for
    from kahve.agents.policies.rollout import RolloutPolicy
    from kahve.agents.policies.specs import make_policy

    g = envs.game_class(game)(**SETTINGS[game])
    rng = random.Random(seed)
    judge = RolloutPolicy(g, worlds, seed + 1)          # heuristic rollouts, used only for _rollout
    per_deal, outcome, kinds = [], [], {}
    for d in range(deals):
        seat = d % 2
        searcher = make_policy(spec, g, seed * 1000 + d)
        mine, opponent = heuristic_for(g, seed * 1000 + d + 500), heuristic_for(g, seed * 1000 + d + 700)
        st = g.new_state(seed * 1000 + d)
        total = 0.0
        while st.current_player is not None:
            if st.current_player != seat:
                st.apply(decide(opponent, st))
                continue
            a, h = decide(searcher, st), mine.choose(st, st.legal_actions())
            if a != h:
                ws = true_worlds(st, rng, worlds)
                gain = sum(judge._rollout(w, a, s, seat) - judge._rollout(w, h, s, seat) for w, s in ws) / worlds
                k = (move_kind(st, h), move_kind(st, a))
                kinds.setdefault(k, []).append(gain)
                total += gain
            st.apply(a)
        per_deal.append(total)
        outcome.append(g.relative_points(st.deal_report["deal_points"], seat))
    rows = sorted(((sum(v), len(v), k) for k, v in kinds.items()))
    return {"game": game, "spec": spec, "deals": deals, "seed": seed,
            "advantage_per_deal": statistics.mean(per_deal), "outcome_per_deal": statistics.mean(outcome),
            "kinds": [{"heuristic": k[0], "search": k[1], "moves": n, "total": t, "mean": t / n}
                      for t, n, k in rows]}


def cpu_summary(cpu: list[float]) -> dict:
    ms = sorted(t * 1000 for t in cpu)
    return {"cpu_ms_median": statistics.median(ms) if ms else float("nan"),
            "cpu_ms_p90": ms[int(0.9 * (len(ms) - 1))] if ms else float("nan"), "cpu_moves": len(ms)}


def retime(r: dict, games: int) -> dict:
    """CPU time per move of a finished cell's A, from the first ``games`` matches of its evaluation again."""
    timed = run_cell(r["game"], r["a"], r["b"], games, r["seed"])
    return {k: timed[k] for k in ("cpu_ms_median", "cpu_ms_p90", "cpu_moves")}


def key(r: dict) -> tuple:
    return (r["game"], r["a"], r["b"], r["games"], r["seed"])


def load(path: str) -> list[dict]:
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _ms(value) -> str:
    """Milliseconds for a table: a network's 0.05 ms stays visible."""
    if value is None or value != value:
        return "n/a"
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def table(results: list[dict]) -> str:
    out = []
    for game in dict.fromkeys(r["game"] for r in results):
        rows = [r for r in results if r["game"] == game]
        out += [f"### {game} ({', '.join(f'{k}={v}' for k, v in SETTINGS[game].items())})", "",
                "| A | B | pairs | A's win rate (95% CI) | A's points per deal (95% CI) | median ms / move (CPU) "
                "| 90% ms (CPU) | median ms (wall) |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            lo, hi = r["win_rate_ci95"]
            plo, phi = r["points_per_deal_ci95"]
            out.append(f"| `{r['a']}` | `{r['b']}` | {r['units']} | {r['win_rate']:.3f} ({lo:.3f}–{hi:.3f}) | "
                       f"{r['points_per_deal']:+.2f} ({plo:+.2f}…{phi:+.2f}) | {_ms(r.get('cpu_ms_median'))} | "
                       f"{_ms(r.get('cpu_ms_p90'))} | {_ms(r['ms_median'])} |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=["search", "levels"], action="append", default=[])
    p.add_argument("--cell", nargs=3, action="append", default=[], metavar=("GAME", "A", "B"))
    p.add_argument("--only", nargs="*", help="only these games")
    p.add_argument("--games", type=int, default=200, help="matches per cell (2 per mirrored pair)")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--out", default=None, help="JSON lines file to append to (cells already there are skipped)")
    p.add_argument("--limit", type=int, default=None, help="run at most this many new cells")
    p.add_argument("--jobs", type=int, default=1, help="cells run at once, one process each")
    p.add_argument("--table", default=None, help="print the markdown tables of a results file and exit")
    p.add_argument("--retime", type=int, default=None, metavar="GAMES",
                   help="add CPU times to the cells of --out that lack them, from this many matches each")
    p.add_argument("--advantage", nargs=2, metavar=("GAME", "SPEC"), help="the diagnosis (see above)")
    p.add_argument("--deals", type=int, default=60, help="deals of --advantage")
    args = p.parse_args(argv)
    if args.advantage:
        r = advantage(*args.advantage, args.deals, args.seed)
        print(f"{r['game']} {r['spec']} vs heuristic, {r['deals']} deals, seed {r['seed']}: true advantage over "
              f"the heuristic's moves {r['advantage_per_deal']:+.2f} per deal (outcome {r['outcome_per_deal']:+.2f})")
        print("| heuristic's move | search's move | moves | advantage, total | per move |")
        print("| --- | --- | --- | --- | --- |")
        for row in r["kinds"]:
            print(f"| {row['heuristic']} | {row['search']} | {row['moves']} | {row['total']:+.1f} | {row['mean']:+.2f} |")
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(r) + "\n")
        return
    if args.table:
        print(table(load(args.table)))
        return
    if args.retime:
        rows = load(args.out)
        for r in rows:
            if "cpu_ms_median" not in r and (not args.only or r["game"] in args.only):
                r.update(retime(r, args.retime))
                print(f"{r['game']:10s} {r['a']:34s} {r['cpu_ms_median']:.1f} ms CPU", flush=True)
                with open(args.out, "w") as f:
                    f.writelines(json.dumps(x) + "\n" for x in rows)
        return
    cells = [c for name in args.preset for c in preset(name)] + [tuple(c) for c in args.cell]
    if args.only:
        cells = [c for c in cells if c[0] in args.only]
    done = {key(r) for r in load(args.out)}
    todo = [c for c in cells if (c[0], c[1], c[2], args.games, args.seed) not in done]
    if args.limit is not None:
        todo = todo[:args.limit]
    results = []

    def finished(r):
        results.append(r)
        lo, hi = r["points_per_deal_ci95"]
        print(f"{r['game']:10s} {r['a']:34s} vs {r['b']:18s} win {r['win_rate']:.3f} "
              f"pts {r['points_per_deal']:+6.2f} ({lo:+.2f}..{hi:+.2f}) {r['cpu_ms_median']:6.1f} ms CPU "
              f"({r['timing']['seconds']:.0f} s)", flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(r) + "\n")

    if args.jobs <= 1:
        for c in todo:
            finished(run_cell(*c, args.games, args.seed))
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            for f in [pool.submit(run_cell, *c, args.games, args.seed) for c in todo]:
                finished(f.result())
    if results:
        print()
        print(table(results))


if __name__ == "__main__":
    main()
