"""The web table's default opponent: the game's trained bot at level ``medium`` wherever a shipped bot fits the
table, the rule-based player elsewhere; the server tells the page which, and a table opened without naming an
opponent gets it."""

from __future__ import annotations

import pytest

from kahve import envs
from kahve.agents.policies.levels import shipped_bot
from kahve.scripts.web import tables
from kahve.scripts.web.tables import TableManager, default_opponent, make_game, opponent_choices

from tests.scripts.test_play_default import ship_only

from .test_tables import bots_of

# tables where a shipped bot fits
FITS = [("pasur", {}), ("pishti", {"players": 2}), ("pis_yedili", {"players": 2}), ("pishe_pasha", {}),
        ("ish", {"players": 4})]
# tables the 2-player Pişti bot does not fit (tests that need no bot to fit ship it alone)
NONE_FITS = [("pishti", {}), ("pishti", {"players": 4, "partnerships": False})]


@pytest.fixture
def pishti_2p_alone(monkeypatch, tmp_path):
    ship_only(monkeypatch, tmp_path, "pishti/ppo_2p", "pasur/ppo")
    monkeypatch.setattr(tables, "_LEVELS_OK", {})           # the levels offered are found again for these bots


@pytest.mark.parametrize("game,settings", FITS, ids=[f"{g}-{s}" for g, s in FITS])
def test_the_default_is_the_trained_bot_where_one_fits(game, settings, monkeypatch):
    monkeypatch.setattr(tables, "_LEVELS_OK", {})
    g = make_game(game, settings)
    assert shipped_bot(g).startswith(f"{game}/")              # the one place that finds a table's shipped bot
    assert default_opponent(opponent_choices(game, g)) == "medium"


@pytest.mark.parametrize("game,settings", NONE_FITS, ids=[f"{g}-{s}" for g, s in NONE_FITS])
def test_the_default_is_the_heuristic_where_no_bot_fits(game, settings, pishti_2p_alone):
    g = make_game(game, settings)
    with pytest.raises(ValueError, match="fits these settings"):
        shipped_bot(g)
    choices = opponent_choices(game, g)
    assert default_opponent(choices) == "heuristic"
    assert next(c for c in choices if c["spec"] == "heuristic")["fits"]


def test_a_table_opened_without_an_opponent_plays_the_default(pishti_2p_alone):
    manager = TableManager()
    manager.create("s", {"game": "pasur", "seed": 1})
    manager.create("s", {"game": "pishti", "settings": {"players": 4}, "seed": 1})
    pasur, pishti = manager.tables.values()
    assert pasur.opponent == "medium" and pasur.opponent_label == tables.LEVEL_LABELS["medium"]
    assert all(bots_of(bot) for bot in pasur.bots.values())               # a trained network plays each seat
    assert pishti.opponent == "heuristic" and not any(bots_of(bot) for bot in pishti.bots.values())


def test_the_server_tells_the_page_the_default(client, pishti_2p_alone):
    games = {g["name"]: g for g in client.get("/api/games").json()["games"]}
    assert games["pasur"]["default_opponent"] == "medium"
    assert games["pishti"]["default_opponent"] == "heuristic"     # its default table: 4 players in partnerships
    r = client.post("/api/check", json={"game": "pishti", "settings": {"players": 2}}).json()
    assert r["valid"] and r["default_opponent"] == "medium"
    assert any(o["spec"] == "medium" and o["fits"] for o in r["opponents"])
    r = client.post("/api/check", json={"game": "pishti", "settings": {"players": 4}}).json()
    assert r["valid"] and r["default_opponent"] == "heuristic"
    r = client.post("/api/check", json={"game": "pasur", "settings": {"target_score": 5}}).json()
    assert not r["valid"] and r["default_opponent"] in {o["spec"] for o in r["opponents"]}


@pytest.mark.parametrize("game", envs.GAMES)
def test_the_default_is_always_offered(game):
    g = envs.game_class(game)()
    choices = {c["spec"]: c for c in opponent_choices(game, g)}
    assert choices[default_opponent(list(choices.values()))]["fits"]


def test_a_bot_of_several_tables_is_labelled_by_its_tables_and_defaults_are_left_out():
    from kahve.scripts.web.tables import _trained_for
    ish = envs.game_class("ish")
    tables = [ish(players=n).settings.as_dict() for n in (4, 2, 3, 5)]
    assert _trained_for("ish", {"settings": tables[0], "tables": tables}) == {"players": "2–5"}
    assert _trained_for("ish", {"settings": tables[0], "tables": [tables[1], tables[3]]}) == {"players": "2 or 5"}
    assert _trained_for("ish", {"settings": {**tables[0], "bet_levels": 5}}) == {"players": 4, "bet_levels": 5}
