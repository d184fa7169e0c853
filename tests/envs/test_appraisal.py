"""The two observations (the ``observation`` setting) and the fast appraisal behind the appraised one.

* Bit for bit: over a corpus of states (random games over many seeds, every decision, every seat, the settings
  of tests/grids.py, which vary everything the appraisals read, and whole matches, where the match totals and
  the sur cap act), every appraised observation is the plain observation of the same state (blocks unchanged
  from v1; the golden playthroughs hold them) followed by the appraisal block as the first implementation
  computed and wrote it (tests/envs/reference/, frozen): zero rows for a seat not to move. The rows the
  heuristics read (``appraisal.move_features``) are the reference's to the bit too.
* The appraisal is computed once per state version, only for the player to act, and never for a plain
  observation; a re-dealt world (``determinize``) is appraised anew.
* The plain observation: the documented size, the appraised one without its appraisal block, nothing hidden in
  it, PettingZoo's api_test; the ``observation`` setting is a space setting, so bot files record it and a bot
  trained before it existed fits the default only.
"""

from __future__ import annotations

import importlib
import pickle
import random

import numpy as np
import pytest
from pettingzoo.test import api_test

from kahve import envs
from kahve.envs.core.docs import observation_layout
from tests.envs.reference import pasur_appraisal, pis_yedili_appraisal, pishti_appraisal
from tests.grids import GRIDS
from tests.helpers import check_hidden_information

#: the games with an appraisal, and the reference that defines its numbers
REFERENCE = {"pasur": pasur_appraisal, "pishti": pishti_appraisal, "pis_yedili": pis_yedili_appraisal}
APPRAISED = list(REFERENCE)

#: every grid table of the appraised games, one deal each, and a whole match at two tables of each
CORPUS = ([(g, {**s, "episode": "deal"}) for g in APPRAISED for s in GRIDS[g]]
          + [("pasur", {}), ("pasur", {"sur_cap": True, "sur_cap_threshold": 20, "target_score": 60}),
             ("pishti", {"players": 2}), ("pishti", {"players": 4, "partnerships": True, "target_score": 60}),
             ("pis_yedili", {"players": 2, "max_deals": 4}), ("pis_yedili", {"players": 4, "max_deals": 3})])
SEEDS = {"deal": range(20), "match": range(3)}


def reference_block(state, game) -> np.ndarray:
    """The appraisal block as the first implementation wrote it: the reference's rows of the player to act as
    float32, divided by the scale in float32, clipped to the observation's bounds; zero rows elsewhere."""
    ref = REFERENCE[game.name]
    block = np.zeros((game.num_actions, game.action_feature_size), dtype=np.float32)
    rows = ref.move_features(state)
    if rows:
        values = np.array(list(rows.values()), dtype=np.float32)
        values /= ref.FEATURE_SCALE
        np.minimum(values, game.obs_high, out=values)
        np.maximum(values, game.obs_low, out=values)
        block[list(rows)] = values
    return block


def same_rows(fast: dict, ref: dict) -> bool:
    """The same actions in the same order, every number the same float64 (the sign of a zero included)."""
    return list(fast) == list(ref) and all(np.array(fast[a], np.float64).tobytes() == np.array(ref[a], np.float64)
                                           .tobytes() for a in ref)


def play(game, seed: int, on_decision) -> int:
    """One random game on ``game``; ``on_decision(state, rng)`` at every decision. Returns the decisions."""
    rng = random.Random(seed)
    state = game.new_state(seed)
    n = 0
    while state.current_player is not None:
        on_decision(state, rng)
        state.apply(rng.choice(state.legal_actions()))
        n += 1
    return n


@pytest.mark.parametrize("name,settings", CORPUS, ids=[f"{g}-{s}" for g, s in CORPUS])
def test_appraised_observations_are_the_references_bit_for_bit(name, settings):
    game = envs.game_class(name)(**settings)
    plain_game = envs.game_class(name)(**settings, observation="plain")
    appraisal = importlib.import_module(f"kahve.envs.{name}.appraisal")
    ref = REFERENCE[name]
    plain_size = plain_game.observation_size
    checked = {"states": 0, "rows": 0}

    def check(state, rng):
        checked["states"] += 1
        want_rows = ref.move_features(state)
        assert same_rows(appraisal.move_features(state), want_rows), state.to_dict()
        assert same_rows(appraisal.appraise(state), want_rows)            # computed anew, not the cached rows
        checked["rows"] += len(want_rows)
        block = reference_block(state, game).ravel()
        plain_state = state.clone()
        plain_state.game = plain_game                                     # the same state, seen plain
        for seat in range(game.num_players):
            obs = state.observation(seat)
            assert obs.dtype == np.float32 and obs.shape == (game.observation_size,)
            plain = plain_state.observation(seat)
            assert plain.tobytes() == obs[:plain_size].tobytes()          # only the appraisal block differs
            want = block if seat == state.current_player else np.zeros_like(block)
            assert obs[plain_size:].tobytes() == want.tobytes(), (seat, state.to_dict())
        if rng.random() < 0.1:                                            # a re-dealt world is appraised anew
            seat = rng.randrange(game.num_players)
            world = state.determinize(seat, rng)
            assert same_rows(world.appraisal(), ref.move_features(world))

    seeds = SEEDS[settings.get("episode", "match")]
    decisions = sum(play(game, seed, check) for seed in seeds)
    assert decisions == checked["states"] > 0 and checked["rows"] > checked["states"]


@pytest.mark.parametrize("name", APPRAISED)
def test_the_appraisal_is_computed_once_per_decision_for_the_player_to_act_only(name, monkeypatch):
    game = envs.game_class(name)(episode="deal")
    module = importlib.import_module(f"kahve.envs.{name}.appraisal")
    calls = []
    real = module.appraise
    monkeypatch.setattr(module, "appraise", lambda state, *a: calls.append(state.current_player) or real(state, *a))
    env = envs.make(name, episode="deal")
    env.reset(seed=3)
    steps = 0
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        for other in env.agents:                     # every seat's observation, as a caller might read them all
            env.observe(other)
        env.observe(agent)
        if term or trunc:
            env.step(None)
            continue
        steps += 1
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert len(calls) == steps                       # one appraisal per decision, however many observations
    # the heuristic and the observation of one decision share it; a plain observation computes none
    state = game.new_state(5)
    calls.clear()
    state.observation(state.current_player)
    module.move_features(state)                      # what the Pâsur heuristic reads
    if name == "pasur":
        from kahve.agents.policies.heuristics import heuristic_for
        heuristic_for(game, seed=0).act(None, state.legal_mask(), state)
    state.observation(state.current_player)
    assert len(calls) == 1
    twin = state.clone()                             # a copy (it may be changed by hand) is appraised anew
    module.move_features(twin)
    assert len(calls) == 2
    state.apply(state.legal_actions()[0])            # a new state version: a new decision
    module.move_features(state)
    assert len(calls) == 3 - (state.current_player is None)
    plain = envs.game_class(name)(episode="deal", observation="plain")
    state = plain.new_state(5)
    calls.clear()
    for seat in range(plain.num_players):
        state.observation(seat)
    assert calls == []


def _swap_a_stock_card_into_the_hand(state, seat):
    hand = state.hands[seat]
    hand[0], state.stock[0] = state.stock[0], hand[0]
    hand.sort()


def _lower_a_bankroll(state, seat):
    state.bankroll[seat] -= 1


#: the games whose states keep their seats' observations up to date move by move (State._views), and a change by
#: hand to a state that the seat to move sees
KEPT_VIEWS = {"pasur": _swap_a_stock_card_into_the_hand, "ish": _lower_a_bankroll}


@pytest.mark.parametrize("name,settings", [(g, {**s, "episode": "deal"}) for g in KEPT_VIEWS for s in GRIDS[g]]
                         + [("pasur", {}), ("pasur", {"sur_cap": True, "sur_cap_threshold": 20, "target_score": 60}),
                            ("ish", {"players": 4, "max_rounds": 40}), ("ish", {"players": 3, "bankroll": 10})])
def test_kept_views_are_what_a_fresh_state_shows(name, settings):
    """The views a state keeps move by move give every seat the observation a copy builds from scratch: read
    now and then by any seat (never by some for many moves), after a pickle, and after a change by hand that
    bumps the state version; a copy never moves the original's views."""
    gc = envs.game_class(name)
    for kind in gc.settings_spec.by_name["observation"].options:
        game = gc(**settings, observation=kind)
        reads = 0
        for seed in range(3):
            rng = random.Random(seed)
            state = game.new_state(seed)
            while state.current_player is not None:
                if rng.random() < 0.3:
                    seat = rng.randrange(game.num_players)
                    assert state.observation(seat).tobytes() == state.clone().observation(seat).tobytes()
                    reads += 1
                if rng.random() < 0.05:                    # a pickled state observes as it did
                    seat = rng.randrange(game.num_players)
                    again = pickle.loads(pickle.dumps(state))
                    assert again.observation(seat).tobytes() == state.observation(seat).tobytes()
                if rng.random() < 0.05:                    # a copy played on leaves the original's views alone
                    seat = rng.randrange(game.num_players)
                    before = state.observation(seat).tobytes()
                    twin = state.clone()
                    twin.observation(seat)
                    twin.apply(rng.choice(twin.legal_actions()))
                    assert state.observation(seat).tobytes() == before
                state.apply(rng.choice(state.legal_actions()))
        assert reads > 0
        # a change by hand, the version bumped: the views are built anew, read at once or after a move
        for read_first in (True, False):
            state = game.new_state(7)
            seat = state.current_player
            before = state.observation(seat).tobytes()
            KEPT_VIEWS[name](state, seat)
            state._version += 1
            if read_first:
                now = state.observation(seat).tobytes()
                assert now != before and now == state.clone().observation(seat).tobytes()
            state.apply(state.legal_actions()[-1])
            assert state.observation(seat).tobytes() == state.clone().observation(seat).tobytes()


@pytest.mark.parametrize("name", envs.GAMES)
def test_the_plain_observation_has_the_documented_layout(name):
    gc = envs.game_class(name)
    setting = gc.settings_spec.by_name["observation"]
    assert "observation" in gc.space_settings and setting.options[-1] == "plain"
    assert setting.default == ("appraised" if name in APPRAISED else "plain")
    for settings in GRIDS[name]:
        plain = gc(**settings, observation="plain")
        assert plain.action_feature_size == 0 and not plain.appraised
        assert not any(b.appraisal for b in plain.observation_blocks)
        layout = observation_layout(plain)
        assert layout[-1][2] == plain.observation_size
        assert len(plain.new_state(1).observation(0)) == plain.observation_size
        if name in APPRAISED:
            full = gc(**settings)
            cut = [b for b in full.observation_blocks if b.appraisal]
            assert len(cut) == 1 and full.observation_blocks[-1] is cut[0]      # the appraisal block is the last
            assert plain.observation_size == full.observation_size - cut[0].size_for(full)
            assert plain.observation_size == full.observation_size - full.num_actions * full.action_feature_size
        else:
            assert gc(**settings).observation_size == plain.observation_size
            with pytest.raises(ValueError, match="observation"):
                gc(**settings, observation="appraised")


@pytest.mark.parametrize("name", APPRAISED)
def test_the_plain_observation_hides_nothing(name):
    rng = random.Random(2)
    changed = 0
    for settings in GRIDS[name][:3]:
        game = envs.game_class(name)(**{**settings, "episode": "deal"}, observation="plain")
        states = []
        play(game, 7, lambda s, r: states.append(s.clone()) if r.random() < 0.15 else None)
        for state in states[:30]:
            changed += check_hidden_information(state, rng, tries=2)
    assert changed > 0


@pytest.mark.parametrize("name", APPRAISED)
def test_pettingzoo_api_test_with_the_plain_observation(name):
    api_test(envs.make(name, episode="deal", observation="plain"), num_cycles=300)


@pytest.mark.parametrize("name", APPRAISED)
def test_bots_fit_the_observation_they_were_trained_on(name):
    from kahve.agents.policies.bot import bot_metadata, fit
    appraised = envs.game_class(name)()
    plain = envs.game_class(name)(observation="plain")
    meta = bot_metadata(appraised, "ppo", 1)
    assert meta["settings"]["observation"] == "appraised"                # bot files record the setting
    assert fit(meta, appraised).ok and not fit(meta, plain).ok
    older = {**meta, "settings": {k: v for k, v in meta["settings"].items() if k != "observation"}}
    assert fit(older, appraised).ok and not fit(older, plain).ok          # trained before the setting: default
    assert "observations of" in fit(older, plain).reason                  # (told by the sizes)
    mine = bot_metadata(plain, "ppo", 1)
    assert fit(mine, plain).ok and not fit(mine, appraised).ok


@pytest.mark.parametrize("name", APPRAISED)
def test_an_env_with_the_plain_observation_pickles_mid_game(name):
    import pickle
    env = envs.make(name, observation="plain")
    env.reset(seed=3)
    for _ in range(5):
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    back = pickle.loads(pickle.dumps(env))
    assert back.unwrapped.game.observation_blocks == env.unwrapped.game.observation_blocks
    for agent in env.possible_agents:
        assert back.observe(agent)["observation"].tobytes() == env.observe(agent)["observation"].tobytes()
