"""Golden playthroughs, as OpenSpiel keeps them: for each game and a few rule sets, one seeded game recorded as
text, compared line by line by ``tests/test_golden.py``.

Two kinds of file, each with a header (game, env id with its version, the full settings, the seed, the policy):

* a *deal* file (:data:`RULESETS`): one block per decision of one deal (``episode="deal"``): the acting seat,
  every legal action as ``id text``, the action taken, the acting seat's observation itself, block by block
  (:func:`observation_text`: the nonzero entries of each block of the game's ``observation_blocks``, so a
  failure shows which block changed), a digest of the whole state (the first 12 hex digits of the SHA-256 of
  ``to_dict()`` as sorted JSON, hidden cards included) and the table as the acting seat sees it
  (``render(seat)``); it stops after :data:`MAX_DECISIONS` decisions;
* a *match* file (:data:`MATCHES`, one per game): a whole match with the default settings, one line per
  decision (seat, action, its text, the state digest) and every deal report;
* an *observations* file (:data:`OBSERVATIONS`, one per game): for every table of tests/grids.py and every
  observation the game offers, a digest of every seat's observation, to the bit, over a few random games
  (:func:`observation_digests`).

Both are played by a uniformly random policy seeded with the seed. After an intended change of rules,
observations, actions or rewards, bump the env version (docs/design.md) and regenerate:

    python tools/regenerate_goldens.py                  # every file
    python tools/regenerate_goldens.py pasur__default   # some
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

import numpy as np

from kahve import envs
from kahve.envs.core.docs import observation_layout

HERE = Path(__file__).resolve().parent
MAX_DECISIONS = 400
SEED = 2024

#: file name (without .txt) -> (game, settings); every rule set plays one deal
RULESETS = {
    "pasur__default": ("pasur", {}),
    # (sur_cap only acts from the second round on, so a one-deal file would not show it; the sur scoring does)
    "pasur__sur10_no_cancellation": ("pasur", {"sur_value": 10, "sur_cancellation": False,
                                               "redeal_rule": "jacks_only"}),
    "pishti__players2": ("pishti", {"players": 2}),
    "pishti__players4_partnerships": ("pishti", {"players": 4, "partnerships": True}),
    "pis_yedili__players2": ("pis_yedili", {"players": 2}),
    "pis_yedili__players4_ten_reverse": ("pis_yedili", {"players": 4, "ten_rule": "reverse"}),
    "pishe_pasha__default": ("pishe_pasha", {}),
    "pishe_pasha__give_compulsory_no_skip": ("pishe_pasha", {"give_compulsory": True, "skip_single_choice": False}),
    "ish__players4": ("ish", {"players": 4}),
    "ish__players3_agent_cards": ("ish", {"players": 3, "card_selection": "agent"}),
}

#: one whole match per game, default settings (Pişti and Pis Yedili at their 2-player tables)
MATCHES = {
    "pasur__match": ("pasur", {}),
    "pishti__match_players2": ("pishti", {"players": 2}),
    "pis_yedili__match_players2": ("pis_yedili", {"players": 2}),
    "pishe_pasha__match": ("pishe_pasha", {}),
    "ish__match_players4": ("ish", {"players": 4}),
}
MAX_MATCH_DECISIONS = 5_000
REGENERATE = "python tools/regenerate_goldens.py"
HINT = f"if this change is intended, bump the env version (docs/design.md) and run: {REGENERATE}"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def observation_text(game, obs: np.ndarray) -> str:
    """The observation itself: for each block with a nonzero entry, ``[block number] i i=v ...`` with ``i`` the
    offset inside the block (a 1 is written as the bare offset)."""
    parts = []
    for number, (_, start, stop) in enumerate(observation_layout(game)):
        nonzero = np.flatnonzero(obs[start:stop])
        if len(nonzero):
            items = [str(i) if obs[start + i] == 1 else f"{i}={float(obs[start + i]):.6g}" for i in nonzero]
            parts.append(f"[{number}] " + " ".join(items))
    return " | ".join(parts) or "all zero"


#: settings added after the files were written that change no play (only what an observation holds): left out of
#: a file's header and state digests at their default value, so that the files of the default observation stand
VIEW_SETTINGS = ("observation",)


def recorded_settings(game, settings: dict) -> dict:
    """``settings`` (a state's or a game's) as the files record them: without a :data:`VIEW_SETTINGS` entry at its
    default."""
    spec = game.settings_spec.by_name
    return {k: v for k, v in settings.items() if not (k in VIEW_SETTINGS and v == spec[k].default)}


def state_digest(state) -> str:
    data = state.to_dict()
    data["settings"] = recorded_settings(state.game, data["settings"])
    return _digest(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def _settings_json(game) -> str:
    return json.dumps({k: (list(v) if isinstance(v, tuple) else v)
                       for k, v in recorded_settings(game, dict(game.settings.items())).items()},
                      separators=(", ", ": "))


def _header(kind: str, game) -> list[str]:
    return [
        f"# kahve golden {kind}; regenerate with: {REGENERATE}",
        f"game: {game.name}",
        f"env: {getattr(envs, game.name).raw_env.metadata['env_id']}",
        f"settings: {_settings_json(game)}",
        f"seed: {SEED}",
        f"policy: uniform random over the legal actions, random.Random({SEED})",
    ]


def playthrough(name: str) -> list[str]:
    """The lines of one golden file, generated now."""
    game_name, settings = RULESETS[name]
    game = envs.game_class(game_name)(**{"episode": "deal", **settings})
    lines = _header("playthrough", game)
    rng = random.Random(SEED)
    state = game.new_state(SEED)
    n = 0
    while state.current_player is not None and n < MAX_DECISIONS:
        seat = state.current_player
        legal = state.legal_actions()
        action = rng.choice(legal)
        n += 1
        lines.append("")
        lines.append(f"## decision {n}: player {seat}")
        lines.append("legal: " + " | ".join(f"{a} {state.describe_action(a)}" for a in legal))
        lines.append(f"action: {action} {state.describe_action(action)}")
        lines.append(f"observation: {observation_text(game, state.observation(seat))}")
        lines.append(f"state: {state_digest(state)}")
        lines.extend("  " + row for row in state.render(seat).splitlines())
        state.apply(action)
    lines.append("")
    if state.current_player is not None:
        lines.append(f"## stopped after {n} decisions (the deal goes on)")
    else:
        lines.append(f"## over after {n} decisions{' (truncated)' if state.truncated else ''}")
        lines.append(f"winners: {state.winners}")
        lines.append(f"returns: {[round(float(r), 6) for r in state.returns]}")
        if state.deal_report is not None:
            lines.append("deal report: " + json.dumps(state.deal_report, sort_keys=True, separators=(", ", ": ")))
    lines.append(f"final state: {state_digest(state)}")
    lines.extend("  " + row for row in state.render(None).splitlines())
    return [line.rstrip() for line in lines]


def match_playthrough(name: str) -> list[str]:
    """The lines of one whole-match golden file, generated now."""
    game_name, settings = MATCHES[name]
    game = envs.game_class(game_name)(**settings)
    lines = _header("match", game) + [""]
    rng = random.Random(SEED)
    state = game.new_state(SEED)
    n, deals = 0, 0
    while state.current_player is not None:
        assert n < MAX_MATCH_DECISIONS, f"{name}: the match did not end within {MAX_MATCH_DECISIONS} decisions"
        seat = state.current_player
        action = rng.choice(state.legal_actions())
        n += 1
        lines.append(f"{n} p{seat} {action} {state.describe_action(action)}")
        state.apply(action)
        lines.append(f"  state: {state_digest(state)}")
        if state.deals_completed != deals:
            deals = state.deals_completed
            lines.append(f"deal {deals}: " + json.dumps(state.deal_report, sort_keys=True, separators=(", ", ": ")))
    lines.append(f"## over after {n} decisions{' (truncated)' if state.truncated else ''}; winners: {state.winners}")
    lines.append(f"returns: {[round(float(r), 6) for r in state.returns]}")
    return [line.rstrip() for line in lines]


#: one file per game holding every observation exactly (:func:`observation_digests`)
OBSERVATIONS = {f"{game}__observations": game for game in envs.GAMES}
#: the random games each table of tests/grids.py plays for its digest: single deals, and whole matches at the
#: game's default table (where the match totals act)
DIGEST_DEALS, DIGEST_MATCHES = 12, 2


def observation_digests(name: str) -> list[str]:
    """The lines of one game's observation file: for every table of tests/grids.py (as single deals, and the
    default table's whole matches), with every observation the game offers, the number of states and the digest
    of the bytes of every seat's observation at every decision of a few seeded random games. A digest holds
    each float to the bit, where the playthroughs print them rounded and for the acting seat only; a changed
    line names the table and the observation that changed."""
    from tests.grids import GRIDS
    game_name = OBSERVATIONS[name]
    cls = envs.game_class(game_name)
    kinds = cls.settings_spec.by_name["observation"].options
    tables = [({**s, "episode": "deal"}, DIGEST_DEALS) for s in GRIDS[game_name]] + [({}, DIGEST_MATCHES)]
    lines = [f"# kahve observation digests; regenerate with: {REGENERATE} {name}", f"game: {game_name}",
             "policy: uniform random over the legal actions, random.Random(seed), seeds 0 ..", ""]
    for settings, games in tables:
        for kind in kinds:
            game = cls(**settings, observation=kind)
            h, states = hashlib.sha256(), 0
            for seed in range(games):
                rng = random.Random(seed)
                state = game.new_state(seed)
                while state.current_player is not None:
                    for seat in range(game.num_players):
                        h.update(state.observation(seat).tobytes())
                    states += 1
                    state.apply(rng.choice(state.legal_actions()))
            lines.append(f"{json.dumps(settings, sort_keys=True)} {kind}: {states} states, "
                         f"{h.hexdigest()[:16]}")
    return lines


#: every golden file: name -> the function that generates it
ALL = {**{name: playthrough for name in RULESETS}, **{name: match_playthrough for name in MATCHES},
       **{name: observation_digests for name in OBSERVATIONS}}


def generate(name: str) -> list[str]:
    return ALL[name](name)


def path_of(name: str) -> Path:
    return HERE / f"{name}.txt"


def main(argv: list[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(ALL)
    unknown = [n for n in names if n not in ALL]
    if unknown:
        print(f"unknown golden file(s) {unknown}; known: {', '.join(ALL)}", file=sys.stderr)
        return 2
    for name in names:
        text = "\n".join(generate(name)) + "\n"
        path = path_of(name)
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8")
        print(f"{path.relative_to(HERE.parent.parent)}: {'unchanged' if old == text else 'written'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
