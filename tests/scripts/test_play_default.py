"""``kahve play GAME`` without ``--bot``: the game's trained bot at level ``medium`` where a shipped bot fits the
table, the heuristic elsewhere, with one line that says which; the table stays the one asked for."""

from __future__ import annotations

import pytest

from kahve import checkpoints, envs
from kahve.agents.policies.levels import shipped_bot
from kahve.scripts.play import default_opponent

from .test_play import play_in_process


def ship_only(monkeypatch, tmp_path, *names: str) -> None:
    """Make the shipped bots these alone (links to the real files), so that a table no shipped bot fits stays so
    when more bots are shipped."""
    for name in names:
        link = tmp_path / f"{name}.onnx"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(checkpoints.find(name))
    monkeypatch.setattr(checkpoints, "ROOT", tmp_path)


@pytest.mark.parametrize("game,settings", [("pasur", {}), ("pishti", {"players": 2}), ("pishe_pasha", {}),
                                           ("pis_yedili", {"players": 2}), ("ish", {"players": 4})])
def test_the_default_is_the_shipped_bot_at_medium_where_one_fits(game, settings):
    bot = shipped_bot(envs.game_class(game)(**settings))
    spec, lines = default_opponent(game, settings)
    assert spec == f"{bot}:medium" and lines[0] == f"opponents: {bot} (medium)"


@pytest.mark.parametrize("settings,words", [({}, "4 players in partnerships"),
                                            ({"players": 4, "partnerships": False}, "4 players")])
def test_the_heuristic_where_no_bot_fits_in_one_line(settings, words, monkeypatch, tmp_path):
    ship_only(monkeypatch, tmp_path, "pishti/ppo_2p")
    assert default_opponent("pishti", settings) == (
        "heuristic", [f"no trained pishti bot fits this table ({words}); opponents: heuristic"])
    assert default_opponent("pishti", {"players": 2})[0] == "pishti/ppo_2p:medium"


def test_a_setting_the_bot_was_not_trained_with_is_one_note(monkeypatch, tmp_path):
    ship_only(monkeypatch, tmp_path, "pishti/ppo_2p")
    spec, lines = default_opponent("pishti", {"players": 2, "target_score": 50})
    assert spec == "pishti/ppo_2p:medium"
    assert lines == ["opponents: pishti/ppo_2p (medium)",
                     "note: the bot was trained with target_score=151; this table plays target_score=50"]


def test_a_match_without_bot_plays_the_default_at_the_table_asked_for(monkeypatch, capsys, tmp_path):
    # Ish's bots are trained with a false-call fine (docs/design.md): a default opponent leaves the rules as asked
    bot = shipped_bot(envs.game_class("ish")())
    tables = []
    ish = envs.game_class("ish")
    original = ish.new_state

    def new_state(self, *args, **kwargs):             # the settings of the table the match is played at
        tables.append(self.settings)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ish, "new_state", new_state)
    code, lines = play_in_process(monkeypatch, capsys, ["ish", "--seed", "1"], "q\n")
    assert code == 1 and tables and all(t.false_call_fine == 0 for t in tables)
    assert lines[0] == f"opponents: {bot} (medium)"
    assert lines[1] == "note: the bot was trained with false_call_fine=1; this table plays false_call_fine=0"
    assert f"Ish, 4 players: you are player 0; opponents: {bot}:medium." in lines[2]
    assert not any("table settings from the bot file" in ln for ln in lines)
    ship_only(monkeypatch, tmp_path, "pishti/ppo_2p")
    code, lines = play_in_process(monkeypatch, capsys, ["pishti", "--settings", "players=4", "--seed", "1"], "q\n")
    assert lines[0] == "no trained pishti bot fits this table (4 players in partnerships); opponents: heuristic"
    assert "Pişti, 4 players: you are player 0; opponents: heuristic." in lines[1]
