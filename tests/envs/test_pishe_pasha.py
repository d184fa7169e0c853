"""Pishe Pasha (docs/rules.md §4): scripted deals from exact decks, invariants over random deals, hidden
information, settings and bad input."""

from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core import IllegalActionError
from kahve.envs.core.cards import card_id, card_str, parse_card
from kahve.envs.pishe_pasha.rules import (GIVE, KEEP, LOC_MY_DISCARD, LOC_MY_STOCK, LOC_PENDING, LOC_SUIT,
                                          LOC_THEIR_DISCARD, LOC_THEIR_STOCK, LOC_UNSEEN, MAIN, OBS_DEPTH,
                                          OBS_PHASE, OBS_SCORES, OBS_SIZES, OBS_TOPS, PENDING, PLACE, TURN,
                                          PishePashaGame)
from tests.helpers import check_hidden_information, random_game

N, D = 1, 0            # with the default first_dealer=0: seat 1 is the non-dealer and moves first


def cards(text: str) -> list[str]:
    return text.split()


def suit_run(suit: str, lo: str, hi: str) -> list[str]:
    ranks = "A23456789TJQK"
    return [r + suit for r in ranks[ranks.index(lo):ranks.index(hi) + 1]]


def make_deck(nondealer: list[str], dealer: list[str]) -> list[str]:
    """A full deck: the non-dealer's stock (top first) then the dealer's (§4a); each given prefix is filled
    up to 26 with the unused cards in id order."""
    used = {parse_card(c) for c in nondealer + dealer}
    assert len(used) == len(nondealer) + len(dealer)
    rest = [card_str(c) for c in range(52) if c not in used]
    k = 26 - len(nondealer)
    return nondealer + rest[:k] + dealer + rest[k:]


def game(**kw) -> PishePashaGame:
    return PishePashaGame(**kw)


def d(state) -> dict:
    return state.to_dict()


# ----- §4a: the deal -----------------------------------------------------------------------------------

def test_deal_from_preset_deck_4a():
    deck = [card_str(c) for c in range(52)]
    st = game(skip_single_choice=False).new_state(0, deck)
    t = d(st)
    assert t["stocks"][N] == deck[:26] and t["stocks"][D] == deck[26:]
    assert t["discards"] == [[], []] and t["suit_piles"] == [[], [], [], []]
    assert st.current_player == N and t["phase"] == "MAIN" and st.legal_actions() == [TURN]
    st1 = game(skip_single_choice=False, first_dealer=1).new_state(0, deck)
    assert d(st1)["stocks"][0] == deck[:26] and st1.current_player == 0


# ----- §4g E1: a run of gives; PENDING with KEEP and PLACE (PP-1) ----------------------------------------

E1_DECK = make_deck(cards("9C 8D 7S TH 4C"), cards("4S 2S 8H"))


def test_e1_run_of_gives_and_pending_choices():
    st = game().new_state(0, E1_DECK)
    # forced TURNs until the dealer turns 8H, which fits only the non-dealer's 7S: PENDING
    t = d(st)
    assert st.current_player == D and t["phase"] == "PENDING" and t["pending"] == "8H"
    assert t["discards"] == [["4S", "2S"], ["9C", "8D", "7S"]]
    assert st.legal_actions() == [PLACE, KEEP]
    assert st.describe_action(PLACE) == f"place 8H onto player {N}'s 7S" and st.describe_action(KEEP) == "keep 8H"
    assert st.parse_action("place 8H") == PLACE and st.parse_action("place 8H onto 7S") == PLACE
    st.apply(st.parse_action("keep"))                    # KEEP ends the turn
    assert st.current_player == N and st.legal_actions() == [TURN, GIVE]
    # E1: their top is 8, my pile from the top is 7, 8, 9: three separate GIVEs
    for mine, theirs in (("7S", "8H"), ("8D", "7S"), ("9C", "8D")):
        assert st.current_player == N and st.legal_actions() == [TURN, GIVE]
        text = st.describe_action(GIVE)
        assert text == f"give {mine} onto player {D}'s {theirs}"
        assert st.parse_action(f"give {mine} onto {theirs}") == GIVE      # the short form still reads
        st.apply(st.parse_action(text))
    t = d(st)
    assert t["discards"] == [["4S", "2S", "8H", "7S", "8D", "9C"], []]
    # my discard is empty, so TURN was forced: TH fits only their 9C -> PENDING
    assert st.current_player == N and t["pending"] == "TH" and st.legal_actions() == [PLACE, KEEP]
    st.apply(st.parse_action("place TH"))
    # PP-1: the turn continued; the forced TURN turned 4C, which fit nothing and ended the turn; the engine
    # then played on to the next real decision
    t = d(st)
    assert t["discards"][D][:7] == ["4S", "2S", "8H", "7S", "8D", "9C", "TH"]
    assert t["turn_number"] >= 7


def test_e1_step_by_step_without_auto_play():
    st = game(skip_single_choice=False).new_state(0, E1_DECK)
    seq = []
    while not (st.current_player == N and st.phase == PENDING):
        legal = st.legal_actions()
        a = KEEP if st.phase == PENDING else TURN
        assert a in legal
        seq.append(st.describe_action(a))
        st.apply(a)
        while st.current_player == N and GIVE in st.legal_actions():
            seq.append(st.describe_action(GIVE))
            st.apply(GIVE)
    assert seq == ["turn"] * 6 + ["keep 8H"] + [f"give {a} onto player {D}'s {b}" for a, b in
                                                (("7S", "8H"), ("8D", "7S"), ("9C", "8D"))] + ["turn"]
    # PLACE keeps the same player in MAIN (PP-1); KEEP would have ended the turn
    a, b = st.clone(), st.clone()
    a.apply(PLACE)
    assert a.current_player == N and a.phase == MAIN and a.legal_actions() == [TURN]
    b.apply(KEEP)
    assert b.current_player == D and d(b)["discards"][N] == ["TH"]


# ----- §4g E2: going out with 9 + 4 cards left to the opponent, inside CLOSURE ---------------------------

E2_N = cards("KS KH 2S 2H AH AS") + suit_run("H", "3", "Q") + suit_run("S", "3", "Q")
E2_D = suit_run("C", "A", "K") + cards("5D 7D 9D 2D AD 3D 4D 6D 8D TD JD QD KD")
E2_DECK = E2_N + E2_D


def test_e2_score_of_13_win_mid_turn_in_closure():
    st = game(skip_single_choice=False).new_state(0, E2_DECK)
    n = 0
    while st.turn_number < 8:                             # four turns each; the dealer runs the clubs
        st.apply(TURN)
        n += 1
    assert n == 4 + 13 + 4
    t = d(st)
    assert t["suit_piles"][0] == suit_run("C", "A", "K")
    assert t["discards"] == [["5D", "7D", "9D", "2D"], ["KS", "KH", "2S", "2H"]]
    assert len(t["stocks"][D]) == 9 and st.current_player == N and t["turn_number"] == 8
    # PP-4: AH also fits the dealer's 2D, but it goes to its suit pile; CLOSURE then moves 2H (forced)
    st.apply(TURN)
    t = d(st)
    assert t["suit_piles"][2] == ["AH", "2H"] and t["discards"][N] == ["KS", "KH", "2S"]
    assert t["discards"][D] == ["5D", "7D", "9D", "2D"] and st.current_player == N
    for _ in range(20):                                   # AS (2S follows), 3H..QH (KH follows), 3S..JS
        assert st.legal_actions() == [TURN]
        st.apply(TURN)
    t = d(st)
    assert t["stocks"][N] == ["QS"] and t["discards"][N] == ["KS"] and not st.is_terminal
    st.apply(TURN)                                        # QS up, then CLOSURE moves KS: out, mid-turn
    assert st.terminal and st.winners == [N]
    rep = st.deal_report
    assert rep["deal_points"] == [0, 13]
    assert rep["breakdown"]["stock"] == [9, 0] and rep["breakdown"]["discard"] == [4, 0]
    assert rep["breakdown"]["winner"] == N and rep["breakdown"]["turns"] == 8
    assert st.returns == [-1.0, 1.0]


def test_e2_deck_has_no_decision_so_the_engine_plays_it_all():
    st = game().new_state(0, E2_DECK)                     # skip_single_choice=True (C-4)
    assert st.terminal and st.deal_report["deal_points"] == [0, 13] and st.current_player is None


def test_win_with_first_turn_all_to_suit_piles():
    deck = suit_run("C", "A", "K") + suit_run("D", "A", "K") + suit_run("H", "A", "K") + suit_run("S", "A", "K")
    st = game(reward="points").new_state(0, deck)
    assert st.terminal and st.winners == [N]
    assert st.deal_report["deal_points"] == [0, 26] and st.returns == [-26.0, 26.0]
    assert d(st)["turn_number"] == 0                      # the first turn never ended


# a win by GIVE and a win by PLACE, both mid-turn (PP-6, PP-7)
GW_N = cards("3D KH 2S 2H AH AS") + suit_run("H", "3", "Q") + suit_run("S", "3", "Q")
GW_D = suit_run("C", "A", "K") + cards("5D 7D 9D 2D AD 4D 6D 8D TD JD QD KD KS")


def test_win_by_give_and_by_place_mid_turn():
    st = game().new_state(0, GW_N + GW_D)
    # the first decision: 3D (my last discard) may be given onto 2D while stock remains
    t = d(st)
    assert st.current_player == N and st.legal_actions() == [TURN, GIVE] and t["discards"][N] == ["3D"]
    assert len(t["stocks"][N]) == 10
    for _ in range(10):
        assert st.describe_action(GIVE) == f"give 3D onto player {D}'s 2D"
        st.apply(TURN)                                    # 3S..QS go up; the turn goes on
    t = d(st)
    assert t["stocks"][N] == [] and t["discards"][N] == ["3D"] and st.current_player == N
    by_give, by_place = st.clone(), st.clone()
    by_give.apply(by_give.parse_action("give 3D"))
    assert by_give.terminal and by_give.winners == [N]
    assert by_give.deal_report["deal_points"] == [0, 9 + 5]   # the given card counts against the loser
    by_place.apply(TURN)          # recycles [3D], turns it: it fits only their 2D -> PENDING, not yet out (PP-6)
    assert not by_place.is_terminal and by_place.phase == PENDING and d(by_place)["pending"] == "3D"
    assert d(by_place)["stock_known"][N] and d(by_place)["stocks"][N] == []
    by_place.apply(PLACE)
    assert by_place.terminal and by_place.deal_report["deal_points"] == [0, 14]
    kept = st.clone()
    kept.apply(TURN)
    kept.apply(KEEP)
    assert not kept.is_terminal and kept.current_player == D


# ----- forced suit-pile moves: CLOSURE at the start of a turn (PP-2) ------------------------------------

def test_closure_at_turn_start_and_suit_moves_continue_the_turn():
    st = game(skip_single_choice=False).new_state(0, make_deck(cards("2C"), cards("AC 9S")))
    st.apply(TURN)                                        # 2C fits nothing: discard, turn over
    assert st.current_player == D and d(st)["discards"][N] == ["2C"]
    st.apply(TURN)                                        # AC goes up; the dealer's turn continues
    assert st.current_player == D and d(st)["suit_piles"][0] == ["AC"] and d(st)["discards"] == [[], ["2C"]]
    st.apply(TURN)                                        # 9S: discard, turn over; CLOSURE moves 2C (forced)
    t = d(st)
    assert st.current_player == N and t["suit_piles"][0] == ["AC", "2C"] and t["discards"] == [["9S"], []]
    assert st.legal_actions() == [TURN]


# ----- §4g E3: recycling, oldest card first (PP-5) --------------------------------------------------------

E3_N = cards("3C 9H KD") + suit_run("S", "A", "K") + suit_run("H", "A", "8") + cards("AD 2D")
E3_DECK = make_deck(E3_N, cards("7C 5C 6D"))


def test_e3_recycling_order():
    st = game(skip_single_choice=False).new_state(0, E3_DECK)
    for _ in range(6):
        st.apply(TURN)
    for _ in range(23):                                   # all of it to the suit piles, one turn
        assert st.current_player == N
        st.apply(TURN)
    t = d(st)
    assert t["stocks"][N] == [] and t["discards"][N] == ["3C", "9H", "KD"] and not t["stock_known"][N]
    assert st.current_player == N and st.legal_actions() == [TURN]
    obs_before = st.observation(D)
    st.apply(TURN)
    t = d(st)
    assert t["discards"][N] == ["3C"] and t["stocks"][N] == ["9H", "KD"] and t["stock_known"][N]
    assert st.current_player == D
    # the recycled stock's order is public: both seats see it, with depths from its top
    obs = st.observation(D)
    for c, depth in (("9H", 0), ("KD", 1)):
        i = parse_card(c)
        assert obs[7 * i + LOC_THEIR_STOCK] == 1 and obs[OBS_DEPTH + i] == pytest.approx(depth / 52)
        assert obs_before[7 * i + LOC_THEIR_DISCARD] == 1
    own = st.observation(N)
    assert own[7 * parse_card("KD") + LOC_MY_STOCK] == 1
    # nothing about the recycled stock is re-dealt by determinize
    for seat in (0, 1):
        again = st.determinize(seat, random.Random(1))
        assert d(again)["stocks"][N] == ["9H", "KD"]


# ----- settings: give_compulsory, rank_wrap, match targets, truncation ------------------------------------

def test_give_compulsory_forces_give_and_place():
    st = game(give_compulsory=True, skip_single_choice=False).new_state(0, E1_DECK)
    for _ in range(6):
        st.apply(TURN)
    assert st.phase == PENDING and st.legal_actions() == [PLACE]          # KEEP is not offered
    with pytest.raises(IllegalActionError, match="keep"):
        st.apply(KEEP)
    st.apply(PLACE)                                       # 8H onto 7S; the dealer's turn goes on
    assert st.current_player == D and st.legal_actions() == [TURN]
    # in the compulsory game, whenever GIVE is legal it is the only action
    rng = random.Random(0)
    seen = 0
    for seed in range(30):
        s = game(give_compulsory=True, skip_single_choice=False, episode="deal").new_state(seed)
        while s.current_player is not None:
            legal = s.legal_actions()
            assert len(legal) == 1 and (s.phase == MAIN or legal == [PLACE])
            seen += legal == [GIVE]
            s.apply(legal[0])
    assert seen > 0
    # with skip_single_choice the engine plays the whole match itself (documented)
    auto = game(give_compulsory=True).new_state(rng.getrandbits(32))
    assert auto.is_terminal


def test_rank_wrap_never_changes_play():
    """With PP-4 an ace always goes to its suit pile, so no ace lies on a discard pile and wrap-around is moot."""
    a_game, b_game = game(episode="deal", skip_single_choice=False), game(episode="deal", skip_single_choice=False,
                                                                           rank_wrap=True)
    assert b_game.adj[parse_card("KS")][parse_card("AH")] and not a_game.adj[parse_card("KS")][parse_card("AH")]
    for seed in range(40):
        ra, rb = random.Random(seed), random.Random(seed)
        a, b = a_game.new_state(seed), b_game.new_state(seed)
        while a.current_player is not None:
            assert a.legal_actions() == b.legal_actions()
            for s in (a, b):
                for pile in s.discards:
                    assert all(c % 13 != 0 for c in pile)
            x = ra.choice(a.legal_actions())
            assert rb.choice(b.legal_actions()) == x
            a.apply(x)
            b.apply(x)
        assert b.current_player is None and a.deal_report == b.deal_report


def test_max_turns_one_deal_is_a_truncated_draw():
    st = game(max_turns=5).new_state(0, E2_DECK)
    assert st.truncated and not st.terminal and st.winners == [0, 1]
    rep = st.deal_report
    assert rep["deal_points"] == [0, 0] and rep["breakdown"]["truncated"] and rep["breakdown"]["turns"] == 5
    assert st.returns == [0.0, 0.0]
    st = game(max_turns=5, episode="deal", match_target=50).new_state(0, E2_DECK)
    assert st.truncated and st.returns == [0.0, 0.0]


def test_drawn_deal_in_a_match_goes_on_and_max_deals_truncates():
    g = game(match_target=50, max_turns=4, max_deals=3, skip_single_choice=False)
    st = g.new_state(5)
    dealers = []
    while st.current_player is not None:
        if st.turn_number == 0 and st.legal_actions() == [TURN] and not d(st)["discards"][st.current_player]:
            dealers.append((st.deals_completed, st.dealer))
        st.apply(st.legal_actions()[0])
    assert st.deals_completed == 3 and st.truncated and st.scores == [0, 0] and st.winners == [0, 1]
    assert sorted(set(dealers)) == [(0, 0), (1, 1), (2, 0)]     # the dealer changes every deal


@pytest.mark.parametrize("target", [50, 100])
def test_match_to_target(target):
    g = game(match_target=target, reward="outcome")
    for seed in range(3):
        st = random_game(g, seed)
        assert st.terminal
        w = st.winners[0]
        assert st.winners == [w] and st.scores[w] >= target > st.scores[1 - w]
        assert st.returns[w] == 1.0 and st.returns[1 - w] == -1.0
        assert st.deals_completed >= 1 and st.deal_report["scores"] == st.scores


def test_points_reward_per_deal():
    g = game(match_target=100, reward="points", skip_single_choice=False)
    st = g.new_state(2)
    rng = random.Random(2)
    while st.current_player is not None:
        before = st.deals_completed
        st.apply(rng.choice(st.legal_actions()))
        if st.deals_completed != before:
            pts = st.deal_report["deal_points"]
            assert st.rewards == [pts[0] - pts[1], pts[1] - pts[0]]
        else:
            assert st.rewards == [0.0, 0.0]
    assert st.returns[0] == st.scores[0] - st.scores[1]


# ----- invariants over random deals (§4g I1-I3, every deal ends, score = loser's cards) ----------------

def _check_invariants(st, last_levels):
    stocks, discards, levels = st.stocks, st.discards, st.levels
    pile_cards = [13 * s + r for s in range(4) for r in range(levels[s])]
    everything = stocks[0] + stocks[1] + discards[0] + discards[1] + pile_cards
    if st.pending >= 0:
        everything.append(st.pending)
    assert sorted(everything) == list(range(52)), "I1: 52 cards accounted for"
    assert all(a >= b for a, b in zip(levels, last_levels)), "I2: suit piles only grow"
    p = st.current_player
    if p is not None and st.phase == MAIN and discards[p]:
        top = discards[p][-1]
        assert levels[top // 13] != top % 13, "I3: CLOSURE has run"
    if st.phase == PENDING:
        x = st.pending
        assert levels[x // 13] != x % 13 and discards[1 - p] and abs(x % 13 - discards[1 - p][-1] % 13) == 1
    return list(levels)


@pytest.mark.parametrize("skip,deals", [(False, 2000), (True, 1000)])
def test_invariants_over_random_deals(skip, deals):
    g = game(episode="deal", skip_single_choice=skip)
    rng = random.Random(skip)
    wins = [0, 0]
    for seed in range(deals):
        st = g.new_state(seed)
        last = _check_invariants(st, [0, 0, 0, 0])
        steps = 0
        while st.current_player is not None:
            st.apply(rng.choice(st.legal_actions()))
            steps += 1
            assert steps < 5000
            if st.current_player is not None:
                last = _check_invariants(st, last)
        rep = st.deal_report
        w = rep["breakdown"]["winner"]
        assert st.terminal and w is not None and rep["breakdown"]["turns"] < 1000
        assert st.stocks[w] == [] and st.discards[w] == [] and st.pending < 0
        loser_left = len(st.stocks[1 - w]) + len(st.discards[1 - w])
        assert rep["deal_points"][w] == loser_left > 0 and rep["deal_points"][1 - w] == 0
        assert loser_left + sum(st.levels) == 52
        t = st.to_dict()
        for s, pile in enumerate(t["suit_piles"]):                  # I2: a prefix A..k of its suit
            assert [parse_card(c) for c in pile] == [card_id(r, s) for r in range(len(pile))]
        wins[w] += 1
    assert min(wins) > deals // 4                                    # both seats win deals


# ----- observation (§4i) and hidden information (C-8) ---------------------------------------------------

def test_observation_layout():
    st = game().new_state(0, E1_DECK)                     # the dealer is pending with 8H
    g = st.game
    assert g.observation_size == 587
    for seat in (0, 1):
        obs = st.observation(seat)
        assert obs.shape == (587,) and obs.dtype == np.float32
        assert obs.min() >= g.obs_low and obs.max() <= g.obs_high
        assert np.all(obs[:364].reshape(52, 7).sum(axis=1) == 1)
    obs = st.observation(D)
    assert obs[7 * parse_card("8H") + LOC_PENDING] == 1
    assert obs[7 * parse_card("7S") + LOC_THEIR_DISCARD] == 1
    assert obs[OBS_DEPTH + parse_card("9C")] == pytest.approx(2 / 52)
    assert obs[7 * parse_card("2S") + LOC_MY_DISCARD] == 1
    assert obs[OBS_DEPTH + parse_card("4S")] == pytest.approx(1 / 52)
    assert obs[7 * parse_card("4C") + LOC_UNSEEN] == 1 and obs[OBS_DEPTH + parse_card("4C")] == 0
    assert list(obs[OBS_SIZES:OBS_SIZES + 4] * 52) == pytest.approx([23, 2, 23, 3])
    assert obs[OBS_TOPS + parse_card("2S")] == 1 and obs[OBS_TOPS + 53 + parse_card("7S")] == 1
    assert obs[OBS_TOPS + 106 + parse_card("8H")] == 1
    assert list(obs[OBS_PHASE:OBS_PHASE + 2]) == [0, 1]
    other = st.observation(N)
    assert other[7 * parse_card("8H") + LOC_PENDING] == 1 and other[7 * parse_card("7S") + LOC_MY_DISCARD] == 1
    # every call returns arrays of its own, writable: the observation (assembled in a buffer of its own) and the mask
    # (a copy of a shared one)
    obs, mask = st.observation(D), st.legal_mask()
    obs[:] = 2.0
    mask[:] = False
    assert st.observation(D).max() == 1 and list(st.legal_mask()) == [False, False, True, True]
    # suit piles, and the match score block
    st = game(skip_single_choice=False).new_state(0, make_deck(cards("2C"), cards("AC 9S")))
    for _ in range(3):
        st.apply(TURN)
    obs = st.observation(N)
    assert obs[7 * parse_card("2C") + LOC_SUIT] == 1 and obs[OBS_DEPTH + parse_card("AC")] == pytest.approx(1 / 52)
    assert obs[416] == pytest.approx(2 / 13)
    end = game().new_state(0, E2_DECK)
    assert list(end.observation(N)[OBS_SCORES:]) == pytest.approx([13 / 52, 0])
    assert list(end.observation(N)[OBS_PHASE:OBS_PHASE + 2]) == [0, 0]


def test_hidden_information():
    g = game(episode="deal", skip_single_choice=False)
    rng = random.Random(7)
    changed = checked = recycled = 0
    for seed in range(60):
        st = g.new_state(seed)
        step = 0
        while st.current_player is not None:
            if step % 9 == 0:
                hidden = sum(len(st.stocks[p]) for p in (0, 1) if not st.stock_known[p])
                ch = check_hidden_information(st, rng, tries=2)
                if hidden < 2:
                    assert not ch                         # nothing left to re-deal
                else:
                    changed += ch
                    checked += 1
                recycled += all(st.stock_known)
            st.apply(rng.choice(st.legal_actions()))
            step += 1
    assert changed > 0.9 * checked and checked > 200 and recycled > 0


def test_observation_ignores_unseen_stock_order():
    a = game(skip_single_choice=False).new_state(0, E1_DECK)
    deck = list(E1_DECK)
    deck[10], deck[40] = deck[40], deck[10]       # two unturned cards, one in each original stock
    b = game(skip_single_choice=False).new_state(0, deck)
    for _ in range(5):
        a.apply(TURN)
        b.apply(TURN)
    for seat in (0, 1):
        assert np.array_equal(a.observation(seat), b.observation(seat))
    assert a.to_dict() != b.to_dict()


# ----- text, views, env ------------------------------------------------------------------------------

def test_describe_parse_round_trip_and_views():
    g = game(skip_single_choice=False, match_target=50)
    rng = random.Random(3)
    st = g.new_state(3)
    kinds = set()
    while st.current_player is not None:
        for a in st.legal_actions():
            text = st.describe_action(a)
            assert st.parse_action(text) == a
            bare = text.split()[0]
            assert st.parse_action(bare) == a
            kinds.add(bare)
        st.apply(rng.choice(st.legal_actions()))
    assert kinds == {"turn", "give", "place", "keep"}
    json.dumps(st.to_dict())
    text = st.render(0)
    assert "Pishe Pasha" in text and "winners" in text


def test_render_and_to_dict_mid_game():
    st = game().new_state(0, E1_DECK)
    text = st.render(D)
    assert "8H" in text and "place it there or keep it" in text and "place 8H" in text and "23 face down" in text
    assert "PENDING" not in text and "MAIN" not in text            # phases in words, not engine names
    t = st.to_dict()
    assert set(t) == {"game", "settings", "players", "dealer", "current_player", "phase", "stocks", "stock_known",
                      "discards", "suit_piles", "pending", "turn_number", "scores", "deals_completed",
                      "terminal", "truncated", "winners"}
    json.dumps(t)
    c = st.clone()
    c.apply(KEEP)
    assert st.to_dict() == t and c.to_dict() != t
    assert pickle.loads(pickle.dumps(st)).to_dict() == t


def test_env_scripted_e1():
    env = envs.make("pishe_pasha", render_mode="ansi")
    env.reset(seed=0, options={"deck": E1_DECK})
    assert env.agent_selection == "player_0"
    assert list(env.observe("player_0")["action_mask"]) == [0, 0, 1, 1]
    env.step(env.unwrapped.parse_action("keep 8H"))
    assert env.agent_selection == "player_1"
    for _ in range(3):
        env.step(env.unwrapped.parse_action("give"))
    assert env.unwrapped.describe_action(PLACE) == f"place TH onto player {D}'s 9C"
    assert "TH" in env.render()


# ----- bad input ------------------------------------------------------------------------------------------

def test_bad_settings():
    with pytest.raises(ValueError, match="unknown setting 'match_targt'.*match_target"):
        game(match_targt=50)
    with pytest.raises(ValueError, match="'match_target': 75"):
        game(match_target=75)
    with pytest.raises(ValueError, match="'max_turns'"):
        game(max_turns=0)
    with pytest.raises(ValueError, match="'give_compulsory'"):
        game(give_compulsory="yes")
    with pytest.raises(ValueError, match="'first_dealer': 2"):
        game(first_dealer=2)                              # needs a seat of this 2-player table


def test_bad_decks():
    g = game()
    deck = [card_str(c) for c in range(52)]
    with pytest.raises(ValueError, match="got 51 cards"):
        g.new_state(0, deck[:51])
    with pytest.raises(ValueError, match="unknown cards: \\['ZZ'\\]"):
        g.new_state(0, deck[:51] + ["ZZ"])
    with pytest.raises(ValueError, match="too many copies of AC"):
        g.new_state(0, deck[:51] + ["AC"])


def test_illegal_actions_and_bad_text():
    st = game(skip_single_choice=False).new_state(0, E1_DECK)
    with pytest.raises(IllegalActionError, match=r"illegal action 1 \(give\).*legal: 0 turn"):
        st.apply(GIVE)
    with pytest.raises(IllegalActionError, match="outside 0..3"):
        st.apply(7)
    with pytest.raises(IllegalActionError):
        st.apply(KEEP)
    with pytest.raises(IllegalActionError):
        st.apply("turn")
    with pytest.raises(ValueError, match="'fold' is not a legal action here; legal: turn"):
        st.parse_action("fold")
    with pytest.raises(ValueError, match="legal: turn"):
        st.parse_action("give")
    end = game().new_state(0, E2_DECK)
    with pytest.raises(IllegalActionError, match="over"):
        end.apply(TURN)


def test_clone_is_independent_across_deals():
    g = game(match_target=50, skip_single_choice=False)
    st = g.new_state(4)
    for _ in range(150):
        st.apply(st.legal_actions()[-1])
    twin = st.clone()
    ra, rb = random.Random(9), random.Random(9)
    while st.current_player is not None:
        st.apply(ra.choice(st.legal_actions()))
    assert twin.deals_completed == 0 and twin.current_player is not None
    while twin.current_player is not None:
        twin.apply(rb.choice(twin.legal_actions()))
    assert st.deals_completed > 1 and twin.to_dict() == st.to_dict()
