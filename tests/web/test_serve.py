"""``kahve serve``'s command line, the setup form's data and the list of opponents."""

from __future__ import annotations

import warnings

import pytest

from kahve import envs
from kahve.agents.policies.specs import make_policy
from kahve.scripts import cli, serve
from kahve.scripts.web import tables, views


def test_help_names_host_and_port(capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    text = capsys.readouterr().out
    assert "--host" in text and "--port" in text and "127.0.0.1" in text


def test_bad_arguments_are_clear_errors(capsys):
    assert cli.main(["serve", "--port", "0"]) == 2
    assert "--port" in capsys.readouterr().err
    assert cli.main(["serve", "--idle-minutes", "0"]) == 2
    assert "--idle-minutes" in capsys.readouterr().err


def test_localhost_only_unless_told():
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    app = serve.build_app("127.0.0.1")
    assert any(m.cls is TrustedHostMiddleware for m in app.user_middleware)
    assert not serve.build_app("0.0.0.0").user_middleware
    assert serve._is_loopback("::1") and serve._is_loopback("localhost") and not serve._is_loopback("0.0.0.0")


def test_the_static_page_ships_with_the_package():
    from kahve.scripts.web.app import STATIC
    for name in ("index.html", "app.js", "cards.js", "style.css"):
        assert (STATIC / name).is_file()
    for path in STATIC.iterdir():                              # nothing is fetched from elsewhere
        text = path.read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, path.name


@pytest.mark.parametrize("game", envs.GAMES)
def test_setup_form_has_every_house_setting(game):
    spec = envs.game_class(game).settings_spec
    names = [f["name"] for f in views.settings_form(game)]
    assert names == [s.name for s in spec.settings if s.name not in views.HIDDEN_SETTINGS]


@pytest.mark.parametrize("game", envs.GAMES)
def test_every_offered_opponent_is_a_policy_spec(game):
    g = envs.game_class(game)()
    choices = tables.opponent_choices(game, g)
    specs = [c["spec"] for c in choices]
    assert {"heuristic", "random"} <= set(specs) and any(s.startswith("ismcts:") for s in specs)
    assert any("/" in s for s in specs), "the shipped bots are offered"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in choices:
            if c["fits"]:
                make_policy(c["spec"], g, 0)
            else:
                assert c["reason"]


def test_difficulty_levels_are_offered_where_a_shipped_bot_fits(monkeypatch):
    monkeypatch.setattr(tables, "_LEVELS_OK", {})
    two = [c["spec"] for c in tables.opponent_choices("pis_yedili", envs.game_class("pis_yedili")(players=2))]
    assert two[:3] == ["easy", "medium", "hard"]
    # no shipped Pis Yedili bot reads the plain observation: no level is offered there, the rest still is
    plain = envs.game_class("pis_yedili")(players=4, observation="plain")
    four = [c["spec"] for c in tables.opponent_choices("pis_yedili", plain)]
    assert not set(four) & {"easy", "medium", "hard"} and "heuristic" in four


def test_a_bot_for_other_settings_is_offered_greyed_out():
    choices = {c["spec"]: c for c in tables.opponent_choices("pis_yedili", envs.game_class("pis_yedili")(players=4))}
    assert not choices["pis_yedili/distilled_2p"]["fits"] and "trained for 2 players" in choices["pis_yedili/distilled_2p"]["reason"]
