"""Environment documentation pages, generated from the code (PettingZoo's docstring-as-page).

Every game documents itself with a few class attributes on its :class:`~.engine.Game` subclass:

* ``summary``: one Markdown paragraph;
* ``rules_section``: its docs/rules.md section, e.g. ``"§1"``;
* ``doc_tables``: the representative tables, a list of settings dicts (the page computes agents, action and
  observation sizes by instantiating the game with each);
* ``action_ranges``: a list of :class:`ActionRange`, covering ``0 .. num_actions - 1`` exactly once;
* ``observation_blocks``: a list of :class:`ObsBlock`, in observation order, summing to ``observation_size``;
* ``action_notes``, ``observation_notes``, ``rewards_note``, ``reward_texts``: free Markdown;
* ``version_history``: ``[(version, "what changed"), ...]``, the last one the game's ``version``.

:func:`render_page` turns them, the settings spec, the player guide (``envs/<game>/guide.md``, :mod:`.guide`) and
the rules module's docstring into one Markdown page.
The page is each env module's docstring (``help(kahve.envs.pishti.env)``) and, written by
``python -m kahve.envs.core.docs [repo root]``, the file ``docs/envs/<game>.md``. ``tests/envs/test_docs.py``
fails when a page and the code disagree.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

Size = Union[int, Callable[[Any], int]]


@dataclass(frozen=True)
class ObsBlock:
    """One block of the observation vector: ``size`` entries (an int, or a function of the Game). ``key``
    names a block whose offset the encoder uses (:func:`fixed_offsets`), so no offset is written by hand.
    ``appraisal``: the block holds the appraisal of the legal moves, so it is only in the appraised observation
    (``observation="appraised"``); the plain one is the same blocks without it."""

    name: str
    size: Size
    scaling: str
    key: str = ""
    appraisal: bool = False

    def size_for(self, game) -> int:
        return int(self.size(game)) if callable(self.size) else int(self.size)


def fixed_offsets(blocks: Sequence[ObsBlock]) -> dict[str, int]:
    """The start offset of each keyed block, for the blocks whose start does not depend on the table (every
    block before it has a fixed size): what a game's encoder writes at, as module constants derived from its
    ``observation_blocks``."""
    offsets, offset = {}, 0
    for block in blocks:
        if block.key:
            offsets[block.key] = offset
        if callable(block.size):
            break
        offset += block.size
    return offsets


def observation_layout(game) -> list[tuple[ObsBlock, int, int]]:
    """Each observation block of ``game`` with its ``start`` and ``stop`` offsets, derived from the sizes, so
    the offsets are written nowhere by hand."""
    out, offset = [], 0
    for block in game.observation_blocks:
        size = block.size_for(game)
        out.append((block, offset, offset + size))
        offset += size
    return out


@dataclass(frozen=True)
class ActionRange:
    """Action ids ``first .. last`` (inclusive; ints or functions of the Game) and what they mean.

    ``phases``: the phase names (the game's ``PHASE_NAMES``) in which these ids can be legal; empty when the
    game has no phases. ``text``: an example of ``describe_action``.
    """

    first: Size
    last: Size
    meaning: str
    phases: tuple = ()
    text: str = ""

    def ids_for(self, game) -> tuple[int, int]:
        def value(v):
            return int(v(game)) if callable(v) else int(v)
        return value(self.first), value(self.last)


#: what the common reward options pay (docs/rules.md C-7); a game may override one in ``reward_texts``
REWARD_TEXTS = {
    "outcome": "paid once, at the match end (C-7): the winning sides share +1 equally and the other sides share "
               "−1 equally; every seat receives its side's value (+1/−1 with two sides), and 0 when every side "
               "ties. At truncation the side with the best total wins (ties share).",
    "points": "paid on the step that ends each deal: the seat's side's deal points minus the mean of the other "
              "sides' deal points (C-7).",
}

PAGE_FOOTER = ("<!-- Generated from the code by `python -m kahve.envs.core.docs`; "
               "do not edit by hand (tests/envs/test_docs.py checks it). -->")


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def table_label(settings: dict) -> str:
    """``{"players": 4, "partnerships": False}`` -> ``players=4, partnerships=False``; ``{}`` -> defaults."""
    return ", ".join(f"{k}={v!r}" for k, v in settings.items()) or "default settings"


def doc_games(game_class) -> list:
    """One Game per representative table (``doc_tables``)."""
    return [game_class(**t) for t in (game_class.doc_tables or [{}])]


def _per_table(values: Sequence[Any]) -> str:
    """One value if every table agrees, else ``a / b / c`` in ``doc_tables`` order."""
    return str(values[0]) if len(set(map(str, values))) == 1 else " / ".join(map(str, values))


def _id_span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def _rules_text(game_class) -> list[str]:
    """The rules module's docstring without its title line and its Actions/Observation sections (the page
    generates those from the code). A section starts with a paragraph at column 0 and holds everything indented
    under it."""
    doc = sys.modules[game_class.__module__].__doc__ or ""
    lines = doc.strip("\n").splitlines()[1:]
    out, skipping, prev = [], False, ""
    for line in lines:
        if line and not line[0].isspace() and not prev.strip():
            skipping = line.startswith(("Actions", "Observation"))
        if not skipping:
            out.append(line.rstrip())
        prev = line
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    collapsed = []
    for line in out:  # no double blank lines where a section was cut
        if line or (collapsed and collapsed[-1]):
            collapsed.append(line)
    return collapsed


def render_page(game_class) -> str:
    """The Markdown documentation page of one game."""
    gc = game_class
    games = doc_games(gc)
    labels = [table_label(t) for t in (gc.doc_tables or [{}])]
    name, version = gc.name, gc.version
    multi = len(games) > 1
    two_kinds = len(gc.settings_spec.by_name["observation"].options) > 1     # appraised and plain

    def box(gs):
        return _per_table([f"`Box({g.obs_low}, {g.obs_high}, ({g.observation_size},), float32)`" for g in gs])
    L: list[str] = []

    # ----- title, summary, table ----------------------------------------------------------------------
    L += [f"# {gc.title} (`{name}`)", "", gc.summary.strip(), ""]
    ex = gc.doc_tables[0] if gc.doc_tables else {}
    ex_args = ", ".join(f"{k}={v!r}" for k, v in ex.items())
    if multi:
        L += ["Representative tables (values below are given in this order where they differ): "
              + "; ".join(f"({i + 1}) `{lab}`" for i, lab in enumerate(labels)) + ".", ""]

    def agents(g):
        n = g.num_players
        return f"`player_0` .. `player_{n - 1}`" if n > 2 else "`player_0`, `player_1`"

    rows = [
        ("Import", f"`from kahve.envs import {name}`; `env = {name}.env({ex_args})`"),
        ("Registry", f"`from kahve import envs`; `env = envs.make(\"{name}\"{', ' + ex_args if ex_args else ''})`"),
        ("Env id", f"`kahve/{name.replace('_', '-')}-v{version}` (PettingZoo name `{name}_v{version}`)"),
        ("Agents", _per_table([agents(g) for g in games])),
        ("Action space", _per_table([f"`Discrete({g.num_actions})`" for g in games])),
        ("Observation", box(games) + (f"; with `observation=\"plain\"`: {box(_plain_games(gc))}" if two_kinds else "")),
        ("Action mask", _per_table([f"`Box(0, 1, ({g.num_actions},), int8)`" for g in games])),
        ("Rewards", ", ".join(f"`{o!r}`" for o in gc.settings_spec.by_name["reward"].options)
         + f" (default `{gc.settings_spec.by_name['reward'].default!r}`)"),
        ("Rules", f"docs/rules.md {gc.rules_section}"),
    ]
    L += _table(["", ""], rows) + [""]
    L += ["Each agent observes `{\"observation\": float32 vector, \"action_mask\": int8 vector}`; "
          "`env.unwrapped.state` is the engine state (`to_dict()`, `describe_action`, `parse_action`).", ""]

    # ----- the player guide (envs/<game>/guide.md, what `kahve play` shows on `?`) ---------------------
    from .guide import player_guide
    guide = player_guide(gc(), heading_level=2).replace("## House settings in force", "## House settings (the defaults)")
    L += [guide.strip(), ""]

    # ----- rules ------------------------------------------------------------------------------------------
    L += ["## Rules in brief", "",
          f"The engine's specification (`kahve.envs.{name}.rules`), citing docs/rules.md {gc.rules_section} and its "
          "rule ids (C-… for the shared conventions, game ids for the rules decisions):", "",
          "```text", *_rules_text(gc), "```", ""]

    # ----- actions ----------------------------------------------------------------------------------------
    L += ["## Action space", ""]
    has_phases = any(r.phases for r in gc.action_ranges)
    has_text = any(r.text for r in gc.action_ranges)
    header = ["ids", "meaning"] + (["legal in"] if has_phases else []) + (["text"] if has_text else [])
    rows = []
    for r in gc.action_ranges:
        row = [_per_table([_id_span(*r.ids_for(g)) for g in games]), r.meaning]
        if has_phases:
            row.append(", ".join(r.phases))
        if has_text:
            row.append(r.text)
        rows.append(row)
    L += [_per_table([f"`Discrete({g.num_actions})`" for g in games]) + ":", ""]
    L += _table(header, rows) + [""]
    if gc.action_notes:
        L += [gc.action_notes.strip(), ""]

    # ----- observation ------------------------------------------------------------------------------------
    L += ["## Observation space", ""]
    if two_kinds:
        plain = _plain_games(gc)
        L += ["Two observations, chosen by the `observation` setting (a space setting: a bot file records it, and a "
              "bot plays only at tables of its own kind):", "",
              f"* `observation=\"appraised\"` (the default), length {_per_table([g.observation_size for g in games])}: "
              "what the seat sees, then every legal move's appraisal (the last block), computed once per decision "
              "and only for the seat to move (the other seats' rows are zero);",
              f"* `observation=\"plain\"`, length {_per_table([g.observation_size for g in plain])}: what the seat "
              "sees alone (its cards, the table, the public history), nothing computed by a heuristic or an "
              "appraisal; the same blocks at the same offsets, without the appraisal block, so it is the appraised "
              "observation's beginning (`Game.plain_observation_size` long).", ""]
        if gc.observation_kinds_note:
            L += [gc.observation_kinds_note.strip(), ""]
        L += ["### `observation=\"appraised\"` (the default)", ""]
        L += _observation_table(gc, games)
        L += ["### `observation=\"plain\"`", ""]
        L += _observation_table(gc, plain)
    else:
        L += ["The `observation` setting has one value here, `\"plain\"`: what the seat sees (this game has no "
              "appraisal of its moves).", ""]
        L += _observation_table(gc, games)
    if gc.observation_notes:
        L += [gc.observation_notes.strip(), ""]

    # ----- mask -------------------------------------------------------------------------------------------
    L += ["## Legal actions mask", "",
          "`observation[\"action_mask\"]` is 1 exactly for the legal actions of the agent to move and all zero "
          "for every other agent (and once the game is over); the engine's `state.legal_mask()` is the same as "
          "a bool array. Stepping an illegal action raises `IllegalActionError`, naming it and the legal ones. "
          "With `skip_single_choice=True` (the default) a decision with exactly one legal action is played by "
          "the engine and never offered (C-4).", ""]

    # ----- rewards ----------------------------------------------------------------------------------------
    L += ["## Rewards", ""]
    reward = gc.settings_spec.by_name["reward"]
    for option in reward.options:
        text = gc.reward_texts.get(option) or REWARD_TEXTS[option]
        if option == "points" and option not in gc.reward_texts and gc.points_sign < 0:
            text += " Deal points are penalties here, so the sign is flipped."
        L.append(f"* `reward={option!r}`{' (default)' if option == reward.default else ''}: {text}")
    L += ["", "With `episode=\"deal\"` an episode is one deal, and the side with the best deal points wins it. "
          "`infos[agent]` carries `deal_points`, `breakdown` and `scores` on the step that ends a deal (and "
          "`winners` at the end).", ""]
    if gc.rewards_note:
        L += [gc.rewards_note.strip(), ""]

    # ----- settings ---------------------------------------------------------------------------------------
    L += ["## Settings", "", "Keyword arguments of `env()`, `raw_env()`, `envs.make()` and the engine's Game; "
          "a value that is not allowed raises `ValueError` naming the setting.", ""]
    rows = [[f"`{s.name}`", f"`{s.default!r}`", s.allowed(), s.doc] for s in gc.settings_spec.settings]
    L += _table(["setting", "default", "allowed", "meaning"], rows) + [""]

    # ----- versions ---------------------------------------------------------------------------------------
    L += ["## Version history", ""]
    L += [f"* v{v}: {text}" for v, text in gc.version_history]
    L += ["", PAGE_FOOTER, ""]
    return "\n".join(L)


def _plain_games(game_class) -> list:
    """One Game per representative table, with the plain observation."""
    return [game_class(**t, observation="plain") for t in (game_class.doc_tables or [{}])]


def _observation_table(gc, games) -> list[str]:
    """The layout of ``games``' observation (one kind, every representative table): length, bounds, and each
    block with its offset, size and scaling."""
    L = [f"A float32 vector of length {_per_table([g.observation_size for g in games])}, every entry in "
         f"[{gc.obs_low}, {gc.obs_high}]; seats and sides are relative to the observer (self first, C-8), "
         "and no hidden card appears in it.", ""]
    rows, offsets = [], [0] * len(games)
    for b in games[0].observation_blocks:
        sizes = [b.size_for(g) for g in games]
        rows.append([_per_table(offsets), b.name, _per_table(sizes), b.scaling])
        offsets = [o + s for o, s in zip(offsets, sizes)]
    rows.append(["", "**total**", _per_table(offsets), ""])
    return L + _table(["offset", "block", "size", "scaling"], rows) + [""]


def _players(game_class, games) -> str:
    """The allowed table sizes: from the ``players`` setting, or the fixed number."""
    setting = game_class.settings_spec.by_name.get("players")
    if setting is None:
        return ", ".join(str(n) for n in sorted({g.num_players for g in games}))
    if hasattr(setting, "options"):
        return ", ".join(str(o) for o in setting.options)
    return f"{setting.lo}–{setting.hi}"


def render_index(game_classes: Sequence) -> str:
    """``docs/envs/README.md``: one line per game."""
    L = ["# Environments", "",
         "One page per game, generated from the code by `python -m kahve.envs.core.docs` (the same text is each "
         "env module's docstring, `help(kahve.envs.<game>.env)`).", ""]
    rows = []
    for gc in game_classes:
        games = doc_games(gc)
        plain = _plain_games(gc)
        rows.append([f"[{gc.title}]({gc.name}.md)", f"`kahve/{gc.name.replace('_', '-')}-v{gc.version}`",
                     _players(gc, games),
                     _per_table([f"`Discrete({g.num_actions})`" for g in games]),
                     _per_table([g.observation_size for g in games]),
                     _per_table([g.observation_size for g in plain])])
    L += _table(["game", "env id", "players", "actions", "observation (default)", "plain observation"], rows)
    L += ["", PAGE_FOOTER, ""]
    return "\n".join(L)


def pages() -> dict[str, str]:
    """``{relative path under docs/envs: text}`` for every game and the index."""
    from .. import GAMES, game_class
    classes = [game_class(g) for g in GAMES]
    out = {f"{gc.name}.md": render_page(gc) for gc in classes}
    out["README.md"] = render_index(classes)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kahve.envs.core.docs [ROOT] [--check]``: write (or check) ``ROOT/docs/envs/*.md``."""
    import argparse
    from pathlib import Path
    ap = argparse.ArgumentParser(prog="python -m kahve.envs.core.docs", description=main.__doc__)
    ap.add_argument("root", nargs="?", default=".", help="the repository root (default: the current directory)")
    ap.add_argument("--check", action="store_true", help="only report stale pages (exit status 1)")
    args = ap.parse_args(argv)
    folder = Path(args.root) / "docs" / "envs"
    stale = []
    for rel, text in pages().items():
        path = folder / rel
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == text:
            continue
        stale.append(str(path))
        if not args.check:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    verb = "stale" if args.check else "wrote"
    for p in stale:
        print(f"{verb} {p}")
    if not stale:
        print(f"docs/envs is up to date ({folder})")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
