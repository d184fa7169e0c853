"""The exact endgame (endgame[:K]:SPEC, agents/policies/endgame): the last hand solved in every world agrees with the
engine playing every line out (Pişti's own solver; Pâsur's alpha-beta over the engine against plain minimax), the
policy reads only what determinize() samples, plays SPEC elsewhere, and in Pâsur's last hand, a game of perfect
information, plays a move of the best exact value, and of those the one worth most against a random opponent."""

from __future__ import annotations

import random

import pytest

from kahve import envs
from kahve.agents import make_policy
from kahve.agents.policies.base import decide
from kahve.agents.policies.bot import Bot
from kahve.agents.policies.endgame import EndgamePolicy, solves_table
from kahve.agents.policies.endgame.exact import PasurLastHand
from kahve.agents.policies.endgame.pishti import PishtiLastHand
from kahve.agents.policies.heuristics import heuristic_for
from kahve.agents.policies.levels import HARD, HARD_MORE_PLAYERS, hard_spec
from kahve.agents.policies.rollout import RolloutPolicy
from tests.helpers import against_random

BOT = "pishti/ppo_2p"


#: the tables the solvers play, single deals
PAIR = {"pishti": dict(players=2, episode="deal"), "pasur": dict(episode="deal")}


def pishti(**settings):
    return envs.game_class("pishti")(**PAIR["pishti"], **settings)


def pasur():
    return envs.game_class("pasur")(**PAIR["pasur"])


def last_hand_states(game, seeds, first_play=40):
    """States of random deals in the last hand (stock empty), at a random play of it (Pişti: from ``first_play``),
    with a choice to make."""
    out = []
    for seed in seeds:
        rng = random.Random(seed)
        st = game.new_state(rng)
        if game.name == "pishti":
            stop = first_play + rng.randrange(6)
            while st.current_player is not None and st.play_number < stop:
                st.apply(rng.choice(st.legal_actions()))
        else:
            plays = rng.randrange(4)
            while st.current_player is not None and (st.stock or plays):
                plays -= not st.stock
                st.apply(rng.choice(st.legal_actions()))
        if st.current_player is not None and len(st.legal_actions()) > 1:
            out.append(st)
    return out


def engine_values(state) -> dict[int, float]:
    """Every legal move's exact value for the side to act, by the engine: clone, apply, recurse (minimax over the
    two sides) to the deal's end, whose report gives the points (forced single moves are the engine's own)."""
    game, me, deal = state.game, state.current_player, state.deals_completed
    out = {}
    for a in state.legal_actions():
        nxt = state.clone()
        nxt.apply(a)
        if nxt.current_player is None or nxt.deals_completed != deal:
            out[a] = game.relative_points(nxt.deal_report["deal_points"], me)
        else:
            best = max(engine_values(nxt).values())
            out[a] = best if game.sides[nxt.current_player] == game.sides[me] else -best
    return out


@pytest.mark.parametrize("name,settings,solver", [
    # Pişti's own solver, under every house rule that changes a last hand's score
    ("pishti", {}, PishtiLastHand), ("pishti", {"jack_on_empty_counts": True}, PishtiLastHand),
    ("pishti", {"jack_double": "any_jack", "jack_on_lone_card_is_pisti": False}, PishtiLastHand),
    ("pishti", {"jack_double": "never", "majority_bonus": 0, "pisti_value": 5}, PishtiLastHand),
    ("pishti", {"two_clubs_value": 3, "ten_diamonds_value": 4}, PishtiLastHand),
    # Pâsur's alpha-beta over the engine against plain minimax
    ("pasur", {}, PasurLastHand), ("pasur", {"sur_value": 10}, PasurLastHand),
])
def test_the_last_hand_solvers_agree_with_the_engine_on_every_move(name, settings, solver):
    game = envs.game_class(name)(**{**PAIR[name], **settings})
    states = last_hand_states(game, range(20))
    assert len(states) >= 10
    for st in states:
        assert solver.applies(st)
        assert solver(game).move_values(st) == engine_values(st), st.to_dict()


def test_the_pasur_last_hand_is_played_perfectly():
    # no card is hidden there: whatever the worlds, the move played has the best exact value in the true one
    game = pasur()
    for st in last_hand_states(game, range(12, 24)):
        exact = engine_values(st)
        assert exact[decide(EndgamePolicy(game, make_policy("random", game, 0), worlds=4, seed=1), st)] == max(
            exact.values())


@pytest.mark.parametrize("game, solver", [(pasur, PasurLastHand), (pishti, PishtiLastHand)])
def test_single_world_says_whether_determinize_can_deal_anything_but_the_truth(game, solver):
    game = game()
    truths = [all(repr(st.determinize(st.current_player, random.Random(k)).to_dict()) == repr(st.to_dict())
                  for k in range(5)) for st in last_hand_states(game, range(30, 40))]
    assert solver.single_world == all(truths)


def test_pasur_last_hand_ties_go_to_the_move_worth_most_against_random():
    # among the moves of the best exact value, the one worth most against a random opponent (the reference
    # recursion in tests/helpers.py), then the inner policy's; it is not the inner policy's choice everywhere
    game = pasur()
    solver = PasurLastHand(game)
    inner = heuristic_for(game, 0)
    checked = overruled = 0
    for st in last_hand_states(game, range(60)):
        exact = engine_values(st)
        top = [a for a in exact if exact[a] == max(exact.values())]
        if len(top) < 2:
            continue
        side = game.sides[st.current_player]
        reference = {a: against_random(game, st, a, side)[1] for a in top}
        assert solver.tiebreak_values(st, top) == pytest.approx(reference)
        a = decide(EndgamePolicy(game, inner, worlds=4, seed=1), st)
        assert a in top and reference[a] == pytest.approx(max(reference.values()))
        plain = decide(inner, st)
        overruled += a != (plain if plain in top else top[0])          # the rule before the tie-break
        checked += 1
    assert checked >= 10 and overruled > 0


def test_the_pasur_last_hand_is_one_world_drawn_once(monkeypatch):
    # PasurLastHand.single_world (checked above): one draw is the true world, counted K times
    game = pasur()
    state_class = type(game.new_state(0))
    real = state_class.determinize
    for st in last_hand_states(game, range(30, 36)):
        draws = []
        monkeypatch.setattr(state_class, "determinize", lambda self, seat, rng: draws.append(1) or real(self, seat, rng))
        totals = EndgamePolicy(game, make_policy("random", game, 0), worlds=16, seed=1).move_totals(st)
        monkeypatch.undo()
        assert len(draws) == 1
        exact = engine_values(st)
        assert totals == {a: 16 * v for a, v in exact.items()}


def test_the_solver_fits_only_two_player_pishti_and_the_last_hand():
    assert PishtiLastHand.fits(pishti()) and solves_table(pishti())
    assert not solves_table(envs.game_class("pishti")(players=4))
    assert solves_table(pasur()) and not solves_table(envs.game_class("pis_yedili")(players=2))
    st = pishti().new_state(3)
    assert not PishtiLastHand.applies(st)                      # the stock is full at the start


def test_endgame_decides_only_from_determinized_worlds(monkeypatch):
    # two states that differ only in what the seat cannot see (the other hand, the face-down cards), each answering
    # determinize() with the same worlds, get the same move: nothing hidden is read but through determinize()
    game = pishti()
    rng = random.Random(5)
    state_class = type(game.new_state(0))
    checked = 0
    for st in last_hand_states(game, range(40)):
        seat = st.current_player
        other = st.determinize(seat, rng)
        assert other.hands[1 - seat] != st.hands[1 - seat] or other.pile != st.pile or checked   # hidden cards moved
        worlds = [st.determinize(seat, random.Random(k)) for k in range(8)]
        moves = []
        for state in (st, other):
            served = iter(worlds)
            monkeypatch.setattr(state_class, "determinize", lambda self, seat, rng: next(served).clone())
            moves.append(decide(EndgamePolicy(game, heuristic_for(game, 0), worlds=8, seed=11), state))
            monkeypatch.undo()
        assert moves[0] == moves[1]
        checked += 1
    assert checked >= 20


def test_endgame_plays_its_policy_before_the_last_hand_and_the_solved_best_in_it():
    game = pishti()
    inner = heuristic_for(game, 0)
    pol = EndgamePolicy(game, inner, worlds=16, seed=2)
    st = game.new_state(8)
    while st.stock:                          # the heuristic breaks ties with its generator: the same draws for both
        inner.rng.seed(st.play_number)
        a = decide(pol, st)
        inner.rng.seed(st.play_number)
        assert decide(inner, st) == a
        st.apply(a)
    differs = 0
    for st in last_hand_states(game, range(60)):
        a = decide(EndgamePolicy(game, inner, worlds=16, seed=2), st)
        totals = EndgamePolicy(game, inner, worlds=16, seed=2).move_totals(st)     # the same worlds
        assert totals[a] == max(totals.values())
        differs += a != decide(inner, st)
    assert differs > 0                       # the solver does overrule the heuristic somewhere


@pytest.mark.parametrize("spec,match", [
    ("endgame:", "name it"),
    ("endgame:16", "name it"),
    ("endgame:0:heuristic", "positive number of worlds"),
])
def test_bad_endgame_specs(spec, match):
    with pytest.raises(ValueError, match=match):
        make_policy(spec, pishti())


def test_endgame_specs_and_the_tables_it_solves():
    game = pishti()
    pol = make_policy(f"endgame:{BOT}", game, 1)
    assert isinstance(pol, EndgamePolicy) and isinstance(pol.policy, Bot)
    assert pol.worlds == EndgamePolicy.DEFAULT_WORLDS and pol.reads_observation
    assert make_policy("endgame:12:rollout:4:heuristic", game).worlds == 12
    assert isinstance(make_policy("endgame:12:rollout:4:heuristic", game).policy, RolloutPolicy)
    with pytest.raises(ValueError, match="no solver for this table"):
        make_policy("endgame:heuristic", envs.game_class("pishti")(players=4))
    with pytest.raises(ValueError, match="no solver for this table"):
        make_policy("endgame:heuristic", envs.game_class("pis_yedili")(players=2))


def test_hard_pishti_is_the_network_with_the_solved_last_hand():
    game = pishti()
    hard = make_policy(f"{BOT}:hard", game, 1)
    assert isinstance(hard, EndgamePolicy) and isinstance(hard.policy, Bot) and hard.name == f"{BOT}:hard"
    assert hard_spec(game, BOT).startswith("endgame:")
    four = envs.game_class("pishti")(players=4)
    assert hard_spec(four, "x.onnx") == HARD_MORE_PLAYERS["pishti"].format(bot="x.onnx")    # the solver wants 2 players


def test_hard_pis_yedili_searches_harder_at_more_players():
    two, three, four = (envs.game_class("pis_yedili")(players=n) for n in (2, 3, 4))
    assert hard_spec(two, "x.onnx") == HARD["pis_yedili"].format(bot="x.onnx")
    more = HARD_MORE_PLAYERS["pis_yedili"].format(bot="x.onnx")
    assert hard_spec(three, "x.onnx") == hard_spec(four, "x.onnx") == more
    assert hard_spec(three, "x.onnx") != hard_spec(two, "x.onnx")
    # a game with no entry at more players keeps its own search there
    assert hard_spec(envs.game_class("ish")(players=6), "x.onnx") == HARD["ish"].format(bot="x.onnx")
