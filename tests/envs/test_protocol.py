"""The engine protocol (docs/design.md "The engine protocol"), checked the same way for every game over its
settings grid: action text round trips, clones are independent, bad decks and bad actions are refused with
the state unchanged, and the move log announces every applied action. (Determinized worlds have their own
protocol test in test_determinize.py.)"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core import IllegalActionError
from tests.grids import GRIDS

CASES = [(game, settings) for game in envs.GAMES for settings in GRIDS[game]]
IDS = [f"{game}-{i}" for game in envs.GAMES for i in range(len(GRIDS[game]))]


def states_along_a_random_game(game, seed: int, every: int = 1, limit: int = 400):
    """Decision states of one random game (copies, so the caller may mutate them)."""
    rng = random.Random(seed)
    state = game.new_state(seed)
    n = 0
    while state.current_player is not None and n < limit:
        if n % every == 0:
            yield state.clone()
        state.apply(rng.choice(state.legal_actions()))
        n += 1


@pytest.mark.parametrize("name,settings", CASES, ids=IDS)
def test_describe_then_parse_gives_back_every_legal_action(name, settings):
    game = envs.game_class(name)(**settings)
    for state in states_along_a_random_game(game, seed=11, every=3, limit=240):
        for a in state.legal_actions():
            text = state.describe_action(a)
            assert isinstance(text, str) and text.strip(), f"action {a} has no text"
            assert state.parse_action(text) == a, f"{text!r} parses to another action than {a}"
            assert state.parse_action(a) == a


@pytest.mark.parametrize("name,settings", CASES, ids=IDS)
def test_a_clone_is_independent_of_its_original(name, settings):
    game = envs.game_class(name)(**settings)
    for state in states_along_a_random_game(game, seed=5, every=7, limit=300):
        before = state.to_dict()
        obs = [state.observation(s) for s in range(state.num_players)]
        twin = state.clone()
        assert twin.to_dict() == before
        rng = random.Random(0)
        while twin.current_player is not None:          # play the clone to the end of the match
            twin.apply(rng.choice(twin.legal_actions()))
        assert state.to_dict() == before, "playing a clone changed its original"
        for s in range(state.num_players):
            assert np.array_equal(state.observation(s), obs[s])
        # and the other way round: the original goes on as a fresh copy of its earlier self would
        again = state.clone()
        rng_a, rng_b = random.Random(1), random.Random(1)
        for _ in range(30):
            if state.current_player is None:
                break
            a = rng_a.choice(state.legal_actions())
            assert a == rng_b.choice(again.legal_actions())
            state.apply(a)
            again.apply(a)
        assert state.to_dict() == again.to_dict()


@pytest.mark.parametrize("name,settings", CASES, ids=IDS)
def test_illegal_actions_are_refused_with_the_state_unchanged(name, settings):
    game = envs.game_class(name)(**settings)
    for state in states_along_a_random_game(game, seed=3, every=9, limit=200):
        before = state.to_dict()
        legal = set(state.legal_actions())
        illegal = [a for a in range(game.num_actions) if a not in legal][:5] + [-1, game.num_actions]
        for bad in [*illegal, 1.5, "7H", None, True]:
            with pytest.raises(IllegalActionError):
                state.apply(bad)
            assert state.to_dict() == before, f"refused action {bad!r} changed the state"


@pytest.mark.parametrize("name", envs.GAMES)
def test_bad_decks_are_refused_naming_the_cards(name):
    game = envs.game_class(name)()
    good = game.new_state(0).to_dict()     # any state: only the deck check is under test
    assert good["game"] == game.name
    deck_size = {"ish": 40}.get(name, 52)
    with pytest.raises(ValueError):
        game.new_state(0, deck=["7H"] * deck_size)                  # one card many times
    with pytest.raises(ValueError):
        game.new_state(0, deck=["ZZ"] + ["7H"] * (deck_size - 1))   # not a card at all
    with pytest.raises(ValueError):
        game.new_state(0, deck=[])                                  # too short


@pytest.mark.parametrize("name,settings", CASES, ids=IDS)
def test_the_move_log_announces_every_applied_action_forced_ones_included(name, settings):
    game = envs.game_class(name)(**settings)
    rng = random.Random(8)
    state = game.new_state(8, move_log=True)
    forced_before = sum(m.forced for m in state.move_log if m.action is not None)
    chosen = 0
    while state.current_player is not None and chosen < 500:
        state.apply(rng.choice(state.legal_actions()))
        chosen += 1
    logged = [m for m in state.move_log if m.action is not None]
    assert sum(not m.forced for m in logged) == chosen
    if not game.settings.skip_single_choice:
        assert not any(m.forced for m in logged) and forced_before == 0
    # a clone's log is its own: moves applied to the clone do not reach the original's log
    if state.current_player is not None:
        twin = state.clone()
        n = len(state.move_log)
        twin.apply(twin.legal_actions()[0])
        assert len(state.move_log) == n and len(twin.move_log) > n
    # and with the log off (the default) nothing is recorded
    assert game.new_state(8).move_log is None


@pytest.mark.parametrize("name", envs.GAMES)
def test_space_settings_are_settings_and_every_size_changing_setting_is_one(name):
    gc = envs.game_class(name)
    assert set(gc.space_settings) <= set(gc.settings_spec.by_name)
    # a setting of the grid that changes the observation or action size must be declared as shaping the spaces
    base = gc(**GRIDS[name][0])
    for settings in GRIDS[name][1:]:
        other = gc(**settings)
        if (other.observation_size, other.num_actions) != (base.observation_size, base.num_actions):
            assert any(settings.get(k, gc.settings_spec.by_name[k].default) != base.settings[k]
                       for k in gc.space_settings), settings


@pytest.mark.parametrize("name", envs.GAMES)
def test_views_refuse_a_seat_or_action_that_does_not_exist(name):
    game = envs.game_class(name)()
    state = game.new_state(4)
    n = game.num_players
    for bad in (-1, n, 99, 1.0, None, True):
        with pytest.raises(ValueError, match="is not a seat of this"):
            state.observation(bad)
        with pytest.raises(ValueError, match="is not a seat of this"):
            state.determinize(bad, random.Random(0))
        if bad is not None:
            with pytest.raises(ValueError, match="is not a seat of this"):
                state.render(bad)
    for bad in (-1, game.num_actions, 10**6, 2.0, "x", True):
        with pytest.raises(ValueError, match="is not an action id of"):
            state.describe_action(bad)
    # integer types other than int are seats and actions like any other
    assert np.array_equal(state.observation(np.int64(0)), state.observation(0))
    a = state.legal_actions()[0]
    assert state.describe_action(np.int64(a)) == state.describe_action(a)


def test_bad_game_names_and_nested_ish_reflex_are_clear_errors():
    with pytest.raises(ValueError, match="a game name must be a string"):
        envs.make(None)
    with pytest.raises(ValueError, match="unknown game 'chess'"):
        envs.make("chess")
    with pytest.raises(ValueError, match="setting 'reflex'"):
        envs.game_class("ish")(players=2, reflex=[[1, 1], [1, 1]])


@pytest.mark.parametrize("options,match", [
    ("deck", "reset options must be a dict such as {'deck': [...]}, not str 'deck'"),
    ([1, 2], "reset options must be a dict such as {'deck': [...]}, not list [1, 2]"),
    ({"dek": ["7H"]}, "unknown reset option(s) 'dek'; the only option is 'deck'"),       # a typo of "deck"
    ({"deck": None, "seed": 3}, "unknown reset option(s) 'seed'; the only option is 'deck'"),
])
def test_bad_reset_options_are_one_line_naming_the_one_option_and_change_nothing(options, match):
    """A mistyped option ignored would silently deal another deck than the one asked for."""
    env = envs.make("pishti", players=2)
    env.reset(seed=3)
    want = env.unwrapped.state.to_dict()
    with pytest.raises(ValueError, match=re.escape(match)) as err:
        env.reset(seed=3, options=options)
    assert "\n" not in str(err.value)
    assert env.unwrapped.state.to_dict() == want
    # PettingZoo's api_test probes reset's signature with options={"options": 1}: still a plain reset
    env.reset(seed=3, options={"options": 1})
    assert env.unwrapped.state.to_dict() == want


def test_an_unknown_agent_is_one_line_naming_the_agents():
    env = envs.make("pis_yedili", players=3)
    env.reset(seed=0)
    for method in (env.observe, env.observation_space, env.action_space, env.unwrapped.observe):
        for bad in ("player_3", "bob", 0, None, ["player_0"]):
            with pytest.raises(ValueError, match=re.escape(f"{bad!r} is not an agent of this pis_yedili table; its "
                                                           "agents are player_0, player_1, player_2")):
                method(bad)
    assert env.observation_space("player_2") is env.observation_space("player_0")     # the good ones still work


def test_describe_action_reads_only_integer_action_ids():
    """'3', 3.0 and True are not action 3: a caller that passes them has a bug that a silent int() would hide."""
    env = envs.make("pishti", players=2)
    env.reset(seed=0)
    legal = env.unwrapped.state.legal_actions()
    for bad in (str(legal[0]), float(legal[0]), True, None, [legal[0]]):
        with pytest.raises(ValueError, match=r"is not an action id of pishti \(an int or NumPy integer from 0 to 51"):
            env.unwrapped.describe_action(bad)
    for good in (legal[0], np.int64(legal[0]), np.int8(legal[0])):
        assert env.unwrapped.describe_action(good) == env.unwrapped.state.describe_action(legal[0])
