"""Golden playthroughs (tests/golden/*.txt): each seeded game is played again now and compared line by line."""

from __future__ import annotations

import pytest

from tests.golden.regenerate import ALL, HINT, REGENERATE, RULESETS, generate, path_of


@pytest.mark.parametrize("name", list(ALL))
def test_playthrough_matches_golden_file(name):
    path = path_of(name)
    if not path.exists():
        pytest.fail(f"golden file {path.name} is missing; generate it with: {REGENERATE} {name}")
    want = path.read_text(encoding="utf-8").splitlines()
    got = generate(name)
    for number, (w, g) in enumerate(zip(want, got), 1):
        if w != g:
            pytest.fail(f"{path.name} line {number} differs:\n  golden: {w}\n  now:    {g}\n{HINT}", pytrace=False)
    if len(want) != len(got):
        pytest.fail(f"{path.name}: the golden file has {len(want)} lines, the game now gives {len(got)}\n{HINT}",
                    pytrace=False)


def test_every_golden_file_is_listed():
    files = {p.stem for p in path_of("x").parent.glob("*.txt")}
    assert files == set(ALL), f"stray or missing golden files: {sorted(files ^ set(ALL))}"


def test_rule_sets_cover_every_game():
    from kahve import envs
    from tests.golden.regenerate import MATCHES
    assert {game for game, _ in RULESETS.values()} == set(envs.GAMES)
    assert {game for game, _ in MATCHES.values()} == set(envs.GAMES)      # a whole match of every game
