"""The environment pages (envs/core/docs.py) agree with the code: docs/envs/*.md and every env module's docstring
are what render_page produces now, the documented observation blocks and action ranges add up to the real sizes,
every setting is documented with its default, and random play only meets documented, phase-consistent actions
(and 0/1 values in the blocks documented as such)."""

from __future__ import annotations

import importlib
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core import docs
from tests.grids import GRIDS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "envs"
REGENERATE = "regenerate the pages with `python -m kahve.envs.core.docs` (from the repository root)"
CLASSES = {g: envs.game_class(g) for g in envs.GAMES}
TABLES = [(g, t) for g, gc in CLASSES.items() for t in gc.doc_tables]
TABLE_IDS = [f"{g}-{docs.table_label(t)}" for g, t in TABLES]


@pytest.mark.parametrize("game", envs.GAMES)
def test_page_file_is_up_to_date(game):
    path = DOCS / f"{game}.md"
    assert path.exists(), f"{path} is missing; {REGENERATE}"
    assert path.read_text(encoding="utf-8") == docs.render_page(CLASSES[game]), f"{path} is stale; {REGENERATE}"


def test_index_is_up_to_date():
    path = DOCS / "README.md"
    assert path.exists(), f"{path} is missing; {REGENERATE}"
    assert path.read_text(encoding="utf-8") == docs.render_index(list(CLASSES.values())), \
        f"{path} is stale; {REGENERATE}"
    for game in envs.GAMES:
        assert f"]({game}.md)" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("game", envs.GAMES)
def test_env_docstring_is_the_page(game):
    page = docs.render_page(CLASSES[game])
    module = importlib.import_module(f"kahve.envs.{game}.env")
    assert module.__doc__ == page
    assert getattr(envs, game).env.__doc__ == page      # help(kahve.envs.<game>.env)


@pytest.mark.parametrize("game,table", TABLES, ids=TABLE_IDS)
def test_observation_blocks_add_up(game, table):
    g = CLASSES[game](**table)
    sizes = [b.size_for(g) for b in g.observation_blocks]
    assert all(s > 0 for s in sizes), sizes
    assert sum(sizes) == g.observation_size
    assert len(g.new_state(0).observation(0)) == g.observation_size


@pytest.mark.parametrize("game,table", TABLES, ids=TABLE_IDS)
def test_action_ranges_cover_every_id_once(game, table):
    g = CLASSES[game](**table)
    spans = sorted(r.ids_for(g) for r in g.action_ranges)
    expected = 0
    for first, last in spans:
        assert first == expected, f"{game}: ids {expected}..{first - 1} undocumented or overlapping at {first}"
        assert last >= first
        expected = last + 1
    assert expected == g.num_actions, f"{game}: documented up to {expected - 1}, num_actions {g.num_actions}"


@pytest.mark.parametrize("game", envs.GAMES)
def test_page_lists_every_setting_with_its_default(game):
    gc = CLASSES[game]
    page = docs.render_page(gc)
    for s in gc.settings_spec.settings:
        assert f"| `{s.name}` | `{s.default!r}` | {s.allowed()} |" in page, s.name
    for option in gc.settings_spec.by_name["reward"].options:
        assert f"`reward={option!r}`" in page


@pytest.mark.parametrize("game", envs.GAMES)
def test_page_header_and_versions(game):
    gc = CLASSES[game]
    assert gc.title and gc.summary and gc.rules_section and gc.doc_tables
    assert gc.version_history and gc.version_history[-1][0] == gc.version
    page = docs.render_page(gc)
    env_id = getattr(envs, game).raw_env.metadata["env_id"]
    assert f"`{env_id}`" in page and env_id in envs.ENV_IDS
    assert f"from kahve.envs import {game}" in page
    for table in gc.doc_tables:
        g = gc(**table)
        assert f"Discrete({g.num_actions})" in page
        assert f"({g.observation_size},)" in page
        assert f"`player_{g.num_players - 1}`" in page
    # the hand-written spec is on the page, its generated sections are not repeated
    assert "docs/rules.md" in page and re.search(r"\b[A-Z]{2}-\d+\b", page)   # cites the rules decisions (PI-1, ...)
    assert "=====" not in page


def _phase_name(state):
    names = getattr(sys.modules[type(state).__module__], "PHASE_NAMES", None)
    return names[state.phase] if names is not None and hasattr(state, "phase") else None


PLAY_CASES = [(g, dict(t)) for g, t in TABLES] + [(g, dict(s)) for g in envs.GAMES for s in GRIDS.get(g, [])]


@pytest.mark.parametrize("game,settings", PLAY_CASES,
                         ids=[f"{g}-{docs.table_label(s)}" for g, s in PLAY_CASES])
def test_random_play_stays_in_documented_ranges(game, settings):
    settings["episode"] = "deal"
    g = CLASSES[game](**settings)
    ranges = [(*r.ids_for(g), r) for r in g.action_ranges]
    binary, offset = [], 0                   # the blocks documented as "0 or 1" hold only 0 and 1
    for b in g.observation_blocks:
        if b.scaling == "0 or 1":
            binary.append((b.name, offset, offset + b.size_for(g)))
        offset += b.size_for(g)
    rng = random.Random(5)
    decisions, deals = 0, 0
    while decisions < 300 and deals < 20:
        state = g.new_state(rng.getrandbits(32))
        deals += 1
        while not state.is_terminal and decisions < 300:
            legal = state.legal_actions()
            phase = _phase_name(state)
            for a in legal:
                owners = [r for first, last, r in ranges if first <= a <= last]
                assert len(owners) == 1, f"{game}: legal action {a} is in {len(owners)} documented ranges"
                r = owners[0]
                if r.phases:
                    assert phase in r.phases, f"{game}: action {a} ({r.meaning}) legal in phase {phase}"
                else:
                    assert phase is None, f"{game}: the ranges of a game with phases must name them"
            obs = state.observation(state.current_player)
            for name, lo, hi in binary:
                assert set(np.unique(obs[lo:hi])) <= {0.0, 1.0}, f"{game}: block {name!r} is not 0 or 1"
            state.apply(rng.choice(legal))
            decisions += 1
    assert decisions > 0


def test_generator_writes_and_checks(tmp_path, capsys):
    assert docs.main([str(tmp_path), "--check"]) == 1              # nothing written yet: stale
    assert docs.main([str(tmp_path)]) == 0
    written = sorted(p.name for p in (tmp_path / "docs" / "envs").iterdir())
    assert written == sorted([f"{g}.md" for g in envs.GAMES] + ["README.md"])
    assert docs.main([str(tmp_path), "--check"]) == 0
    assert docs.main([str(ROOT), "--check"]) == 0, REGENERATE
