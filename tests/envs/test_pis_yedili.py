"""Pis Yedili (docs/rules.md §3): scripted deals from exact decks (E1-E3, round 1, ace, twins, going out), invariants
over random deals for 2, 3 and 4 players, hidden information, action text and bad input."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core import IllegalActionError
from kahve.envs.core.cards import card_str, parse_card
from kahve.envs.pis_yedili import PisYediliGame
from kahve.envs.pis_yedili import appraisal
from kahve.envs.pis_yedili.rules import (MOVE_FEATURES, OBS_SIZE, DRAW, FACING_SEVEN, FIRST_ROUND, FOLLOW_UP, NORMAL, PASS, PLAY_J,
                                         POST_DRAW, TAKE_PENALTY)
from tests.helpers import check_hidden_information, random_game

C = parse_card


def cs(*texts):
    return [C(t) for t in texts]


def make_deck(players, hands, stock=(), dealer=0):
    """A full preset deck (top first, C-3) for ``players`` (52 cards for 2 players, 104 for 3-4): ``hands``
    maps a seat to its 7 cards, placed where §3a deals them (card k to seat next(dealer) + k); ``stock`` is
    the top of the stock; every other slot gets the remaining cards in id order."""
    n = players
    packs = 1 if n == 2 else 2
    deck = [None] * (52 * packs)
    first = (dealer + 1) % n
    for seat, cards in hands.items():
        assert len(cards) == 7
        for j, c in enumerate(cards):
            deck[(seat - first) % n + j * n] = c
    for i, c in enumerate(stock):
        deck[7 * n + i] = c
    left = Counter({card_str(i): packs for i in range(52)})
    left.subtract(card_str(C(c)) for c in deck if c is not None)
    assert all(v >= 0 for v in left.values()), f"too many copies: {[k for k, v in left.items() if v < 0]}"
    filler = iter(c for i in range(52) for c in [card_str(i)] * left[card_str(i)])
    return [c if c is not None else next(filler) for c in deck]


def new(players, hands, stock=(), dealer=0, **settings):
    settings.setdefault("skip_single_choice", False)
    game = PisYediliGame(players=players, first_dealer=dealer, **settings)
    return game.new_state(random.Random(0), make_deck(players, hands, stock, dealer))


def play(state, *moves):
    """Apply (seat, text) moves, checking whose turn it is."""
    for seat, text in moves:
        assert state.current_player == seat, (seat, text, state.to_dict())
        state.apply(state.parse_action(text))


def hand(state, seat):
    return sorted(state.hands[seat])


# ----- the deal (§3a) -------------------------------------------------------------------------------------
def test_deal_one_at_a_time_from_next_dealer_no_up_card():
    hands = {1: ["2C", "3D", "4D", "5D", "6D", "8D", "9D"], 2: ["3C", "2H", "3H", "4H", "5H", "6H", "8H"],
             0: ["4C", "2S", "3S", "4S", "5S", "6S", "8S"]}
    st = new(3, hands, stock=["KD", "QD"], dealer=0)
    deck = make_deck(3, hands, stock=["KD", "QD"])
    assert deck[0] == "2C" and deck[1] == "3C" and deck[2] == "4C" and deck[3] == "3D"   # card k -> next(dealer)+k
    assert len(deck) == 104 and Counter(deck)["2C"] == 2
    for seat, cards in hands.items():
        assert hand(st, seat) == sorted(cs(*cards))
    assert st.discard == [] and st.phase == FIRST_ROUND and st.current_player == 1
    assert len(st.stock) == 104 - 21 == 83 and st.stock[-1] == C("KD") and st.stock[-2] == C("QD")
    assert st.observation(1)[52 + 52] == 1                      # top card: "empty"


# ----- round 1 (PY-9) -------------------------------------------------------------------------------------
def test_first_round_forced_draws_until_a_playable_club_then_only_clubs():
    hands = {0: ["AC", "7C", "TC", "JC", "2D", "3D", "4D"], 1: ["2C", "4C", "JH", "5H", "6D", "8D", "9D"]}
    st = new(2, hands, stock=["5D", "KH", "3C", "9S"], dealer=1)
    # P0 holds no club of rank 2-6, 8, 9, Q, K (A, 7, 10, J are forbidden): draws 5D, KH, 3C and stops there
    assert st.current_player == 0 and st.phase == FIRST_ROUND
    assert len(st.hands[0]) == 10 and set(cs("5D", "KH", "3C")) <= set(st.hands[0])
    assert st.stock[-1] == C("9S") and len(st.stock) == 38 - 3
    assert st.legal_actions() == [C("3C")]                      # no draw, no J, no other club
    play(st, (0, "3C"))
    # P1 holds two playable clubs: may choose either, may not draw; JH is not allowed in round 1
    assert st.current_player == 1 and st.phase == FIRST_ROUND
    assert st.legal_actions() == cs("2C", "4C")
    with pytest.raises(IllegalActionError, match="illegal action 68 .*draw.*legal: 1 2C, 3 4C"):
        st.apply(DRAW)
    play(st, (1, "4C"))
    # I2: round 1 is over after N plays and produced no effects; P0 is in NORMAL on 4C
    assert st.current_player == 0 and st.phase == NORMAL and st.pending == 0
    assert DRAW in st.legal_actions()


def test_first_round_has_no_effects_and_no_twin():
    # two identical 2C in round 1 (two packs): no follow-up (PY-6)
    hands = {1: ["2C", "5C", "8H", "9H", "QH", "KH", "KS"], 2: ["2C", "5C", "5D", "6C", "8S", "9S", "QS"],
             0: ["4C", "2H", "3H", "4H", "6H", "8D", "9D"]}
    st = new(3, hands)
    play(st, (1, "2C"), (2, "2C"))
    assert st.current_player == 0 and st.phase == FIRST_ROUND and st.follow == 0


# ----- E1: the 10 bounce (PY-1, PY-2) ---------------------------------------------------------------------
E1_HANDS = {1: ["2C", "TC", "9H", "9D", "9S", "QD", "QS"], 2: ["3C", "4D", "4H", "4S", "5D", "6D", "8D"],
            3: ["4C", "5H", "6H", "8H", "KH", "KD", "KS"], 0: ["5C", "TH", "2D", "2H", "2S", "3D", "3H"]}


def test_E1_ten_bounce_four_players():
    st = new(4, E1_HANDS, dealer=0)
    play(st, (1, "2C"), (2, "3C"), (3, "4C"), (0, "5C"))
    assert st.phase == NORMAL and st.current_player == 1
    play(st, (1, "TC"))
    assert st.current_player == 0                               # prev(P1)
    play(st, (0, "TH"))
    assert st.current_player == 3                               # further left: prev(P0)
    play(st, (3, "5H"))
    assert st.direction == 1
    order = []
    for _ in range(4):                                          # then P0, P1, P2, P3: the direction is unchanged
        order.append(st.current_player)
        st.apply(DRAW)
        st.apply(PASS)
    assert order == [0, 1, 2, 3]
    assert st.observation(0)[182] == 1


def test_ten_reverse_changes_direction():
    st = new(4, E1_HANDS, dealer=0, ten_rule="reverse")
    play(st, (1, "2C"), (2, "3C"), (3, "4C"), (0, "5C"))
    play(st, (1, "TC"))
    assert st.current_player == 0 and st.direction == -1
    assert st.observation(2)[182] == -1
    play(st, (0, "TH"))                                         # reversed again: P1 moves, not P3
    assert st.current_player == 1 and st.direction == 1


def test_ten_with_two_players_has_no_effect():
    hands = {0: ["4C", "TC", "5H", "6H", "8H", "9H", "QH"], 1: ["2C", "3D", "4D", "5D", "6D", "8D", "9D"]}
    st = new(2, hands, dealer=1)
    play(st, (0, "4C"), (1, "2C"), (0, "TC"))
    assert st.current_player == 1 and st.phase == NORMAL


# ----- E2: the 7 chain (PY-3) -----------------------------------------------------------------------------
E2_HANDS = {1: ["2C", "KH", "7S", "4D", "5D", "6D", "8D"], 2: ["3C", "QH", "3D", "9D", "5S", "JH", "2D"],
            3: ["4C", "2H", "3H", "4H", "8S", "9S", "QS"], 0: ["KC", "7H", "2S", "3S", "4S", "6C", "8C"]}
E2_STOCK = ["6S", "8H", "7D", "2D", "9H", "4D", "KS"]


def e2_to_penalty(**settings):
    st = new(4, E2_HANDS, stock=E2_STOCK, dealer=0, **settings)
    play(st, (1, "2C"), (2, "3C"), (3, "4C"), (0, "KC"), (1, "KH"), (2, "QH"), (3, "2H"), (0, "7H"))
    assert st.current_player == 1 and st.phase == FACING_SEVEN and st.pending == 3
    assert st.legal_actions() == [C("7S"), TAKE_PENALTY]        # only 7s answer a 7 (PY-4), no J, no spade
    play(st, (1, "7S"))
    assert st.current_player == 2 and st.phase == FACING_SEVEN and st.pending == 6
    return st


def test_E2_seven_chain_take_penalty_then_post_draw():
    st = e2_to_penalty()
    assert st.legal_actions() == [TAKE_PENALTY] and st.describe_action(TAKE_PENALTY) == "take 6"
    assert st.observation(3)[110] == pytest.approx(6 / 24)
    before = len(st.hands[2])
    play(st, (2, "take 6"))
    assert len(st.hands[2]) == before + 6 and st.pending == 0
    assert set(cs(*E2_STOCK[:6])) <= set(st.hands[2]) and st.stock[-1] == C("KS")
    # P2 continues in POST_DRAW on 7S: a spade, a 7 or a J, or pass; no second draw
    assert st.current_player == 2 and st.phase == POST_DRAW and st.drawn
    legal = st.legal_actions()
    jh = PLAY_J + 4 * 2
    assert legal == sorted(cs("5S", "6S", "7D")) + [jh, jh + 1, jh + 2, jh + 3, PASS]
    # the 7's effect is spent: a new 7 starts a new penalty of 3
    play(st, (2, "7D"))
    assert st.current_player == 3 and st.phase == FACING_SEVEN and st.pending == 3


def test_E2_pass_after_the_penalty():
    st = e2_to_penalty()
    play(st, (2, "take"), (2, "pass"))
    assert st.current_player == 3 and st.phase == NORMAL and st.pending == 0


def test_seven_penalty_lose_turn():
    st = e2_to_penalty(after_seven_penalty="lose_turn")
    play(st, (2, "take 6"))
    assert st.current_player == 3 and st.phase == NORMAL and len(st.hands[2]) == 5 + 6 and st.pending == 0


def test_must_answer_seven():
    st = new(4, E2_HANDS, stock=E2_STOCK, dealer=0, must_answer_seven=True)
    play(st, (1, "2C"), (2, "3C"), (3, "4C"), (0, "KC"), (1, "KH"), (2, "QH"), (3, "2H"), (0, "7H"))
    assert st.legal_actions() == [C("7S")]                      # holding a 7: no TAKE_PENALTY
    play(st, (1, "7S"))
    assert st.legal_actions() == [TAKE_PENALTY]                 # P2 holds none


# ----- E3: going out on a J, Muamele (PY-11) --------------------------------------------------------------
E3_HANDS = {0: ["4C", "5H", "6S", "8D", "9H", "TS", "JD"], 1: ["5C", "6H", "8S", "9D", "QH", "7C", "3D"]}
E3_STOCK = ["TH", "4S", "5S", "KC", "7D", "2H", "9C", "AS"]
E3_MOVES = [(0, "4C"), (1, "5C"), (0, "5H"), (1, "6H"), (0, "6S"), (1, "8S"), (0, "8D"), (1, "9D"), (0, "9H"),
            (1, "draw"), (1, "TH"), (0, "TS"), (1, "draw"), (1, "4S")]


def test_E3_jack_out_doubles_plus_muamele():
    hands = dict(E3_HANDS)
    st = new(2, hands, stock=E3_STOCK, dealer=1, episode="deal")
    play(st, *E3_MOVES)
    assert hand(st, 0) == cs("JD") and hand(st, 1) == sorted(cs("QH", "7C", "3D"))
    assert st.describe_action(PLAY_J + 4 * 1 + 3) == "JD names spades"
    play(st, (0, "JD names spades"))
    assert st.is_terminal
    rep = st.deal_report
    b = rep["breakdown"]
    assert b["end"] == "went_out" and b["last_card"] == "JD" and b["went_out"] == [True, False]
    assert b["hand_value"] == [0, 20] and b["multiplier"][1] == 2
    assert b["muamele_cards"][1] == ["5S", "KC", "7D", "2H", "9C", "AS"]   # the 7D adds 3 more draws
    assert b["muamele_points"] == [0, 44]
    assert rep["deal_points"] == [0, 84] and b["total"] == [0, 84]
    assert rep["winners"] == [0] and st.returns == [1.0, -1.0]


def test_E3_points_reward_is_sign_flipped():
    st = new(2, E3_HANDS, stock=E3_STOCK, dealer=1, episode="deal", reward="points")
    play(st, *E3_MOVES, (0, "JD spades"))
    assert st.rewards == [84.0, -84.0]


def test_muamele_options():
    st = new(2, E3_HANDS, stock=E3_STOCK, dealer=1, episode="deal", muamele_multiplied=True)
    play(st, *E3_MOVES, (0, "JD S"))
    assert st.deal_report["deal_points"] == [0, 40 + 2 * 44]
    st = new(2, E3_HANDS, stock=E3_STOCK, dealer=1, episode="deal", muamele=False)
    play(st, *E3_MOVES, (0, "JD ♠"))
    assert st.deal_report["deal_points"] == [0, 40] and st.deal_report["breakdown"]["muamele_cards"] == [[], []]


def test_going_out_on_a_seven_triples_ends_at_once_and_ends_the_match():
    hands = dict(E3_HANDS)
    hands[0] = ["4C", "5H", "6S", "8D", "9H", "TS", "7S"]
    st = new(2, hands, stock=E3_STOCK, dealer=1)
    play(st, *E3_MOVES, (0, "7S"))
    # PY-7: no FACING_SEVEN for P1; 3 x 20 + Muamele 44 = 104 >= 101: the match is over, P0 has the lowest total
    rep = st.deal_report
    assert rep["deal_points"] == [0, 104] and rep["breakdown"]["multiplier"][1] == 3
    assert st.terminal and st.current_player is None and st.scores == [0, 104]
    assert st.winners == [0] and st.returns == [1.0, -1.0]


def test_going_out_on_a_ten_ends_at_once_no_bounce_effect():
    hands = dict(E3_HANDS)
    hands[0] = ["4C", "5H", "6S", "8D", "9H", "TS", "TD"]
    stock = ["TH", "TC"] + E3_STOCK[2:]
    moves = [m if m != (1, "4S") else (1, "TC") for m in E3_MOVES]
    st = new(2, hands, stock=stock, dealer=1, episode="deal", muamele=False)
    play(st, *moves, (0, "TD"))
    assert st.is_terminal and st.deal_report["deal_points"] == [0, 20]


def test_never_out_on_an_ace():
    hands = dict(E3_HANDS)
    hands[0] = ["4C", "5H", "6S", "8D", "9H", "TS", "AS"]
    st = new(2, hands, stock=E3_STOCK[:-1] + ["AH"], dealer=1)
    play(st, *E3_MOVES)
    assert hand(st, 0) == cs("AS") and st.discard[-1] == C("4S")
    assert st.legal_actions() == [DRAW]                         # the spade ace would be the last card


def test_match_continues_below_the_end_penalty():
    st = new(2, E3_HANDS, stock=E3_STOCK, dealer=1)
    play(st, *E3_MOVES, (0, "JD names hearts"))
    assert not st.is_terminal and st.scores == [0, 84] and st.deals_completed == 1
    assert st.dealer == 0 and st.current_player == 1             # C-2: the dealer moves on
    assert st.phase == FIRST_ROUND and len(st.discard) == 0 and np.allclose(st.observation(0)[175:177], [0, 84 / 101])


# ----- the ace (§3b, PY-5) --------------------------------------------------------------------------------
ACE_HANDS = {1: ["2C", "AC", "5H", "6H", "8H", "9H", "QH"], 2: ["3C", "2D", "3D", "4D", "5D", "6D", "8D"],
             0: ["4C", "2S", "3S", "4S", "5S", "6S", "8S"]}


def test_ace_others_draw_in_turn_order_then_follow_up_draw_only_without_a_legal_card():
    st = new(3, ACE_HANDS, stock=["KD", "KS", "9S", "QD"], dealer=0)
    play(st, (1, "2C"), (2, "3C"), (0, "4C"), (1, "AC"))
    assert C("KD") in st.hands[2] and C("KS") in st.hands[0]    # next(P1) = P2 first, then P0
    assert len(st.hands[2]) == 7 and len(st.hands[0]) == 7 and len(st.hands[1]) == 5
    assert st.current_player == 1 and st.phase == FOLLOW_UP and st.follow == 1
    obs = st.observation(2)
    assert obs[111 + FOLLOW_UP] == 1 and obs[116] == 1 and obs[117] == 0
    assert st.legal_actions() == [DRAW]                         # no club, no ace, no J
    play(st, (1, "draw"))
    assert st.phase == POST_DRAW and C("9S") in st.hands[1] and st.legal_actions() == [PASS]
    play(st, (1, "pass"))
    assert st.current_player == 2 and st.phase == NORMAL


def test_ace_follow_up_must_play_when_able():
    hands = dict(ACE_HANDS)
    hands[1] = ["2C", "AC", "9C", "AH", "8H", "9H", "QH"]
    st = new(3, hands, stock=["KD", "KS", "9S", "QD"], dealer=0)
    play(st, (1, "2C"), (2, "3C"), (0, "4C"), (1, "AC"))
    assert st.legal_actions() == cs("9C", "AH")                 # no DRAW while a card is legal
    play(st, (1, "AH"))                                         # another ace: everyone draws again
    assert st.current_player == 1 and st.phase == FOLLOW_UP and C("9S") in st.hands[2] and C("QD") in st.hands[0]
    play(st, (1, "QH"))
    assert st.current_player == 2 and st.phase == NORMAL


# ----- the twin rule (PY-6) -------------------------------------------------------------------------------
TWIN_HANDS = {1: ["2C", "5C", "8H", "9H", "QH", "KH", "KS"], 2: ["2C", "5C", "5D", "6C", "8S", "9S", "QS"],
              0: ["4C", "2H", "3H", "4H", "6H", "8D", "9D"]}


def twin_state(**settings):
    st = new(3, TWIN_HANDS, **settings)
    play(st, (1, "2C"), (2, "2C"), (0, "4C"), (1, "5C"))
    return st


def test_twin_identical_card_forces_another_play():
    st = twin_state()
    play(st, (2, "5C"))                                         # 5C onto the other 5C
    assert st.current_player == 2 and st.phase == FOLLOW_UP and st.follow == 2
    assert st.legal_actions() == sorted(cs("5D", "6C"))                 # must play; no draw while a card fits
    play(st, (2, "6C"))
    assert st.current_player == 0 and st.phase == NORMAL


@pytest.mark.parametrize("rule,card,follows", [("identical", "5D", False), ("same_rank", "5D", True),
                                               ("off", "5C", False), ("same_rank", "5C", True)])
def test_twin_rule_settings(rule, card, follows):
    st = twin_state(twin_rule=rule)
    play(st, (2, card))
    assert (st.current_player == 2 and st.phase == FOLLOW_UP) == follows
    if not follows:
        assert st.current_player == 0 and st.phase == NORMAL


# ----- the jack (PY-4) ------------------------------------------------------------------------------------
def test_jack_on_anything_names_a_suit():
    st = twin_state()
    st.hands[2].append(C("JS"))                                    # give P2 a J (white-box, to keep the script short)
    st._legal = None
    legal = st.legal_actions()
    assert [a for a in legal if a >= PLAY_J and a < DRAW] == [PLAY_J + 12 + d for d in range(4)]
    play(st, (2, "JS names hearts"))
    assert st.current_player == 0 and st.to_dict()["named_suit"] == "hearts"
    assert st.legal_actions() == sorted(cs("2H", "3H", "4H", "6H")) + [DRAW]   # the named suit, not spades
    obs = st.observation(0)
    assert obs[52 + C("JS")] == 1 and obs[105 + 2] == 1 and obs[109] == 0


# ----- stock exhaustion (PY-10) ---------------------------------------------------------------------------
def test_stock_running_out_ends_the_deal_when_empty_and_on_failed_draw():
    for stock_end in ("when_empty", "on_failed_draw"):
        st = PisYediliGame(players=2, episode="deal", stock_end=stock_end).new_state(5)
        seen_empty = False
        while not st.is_terminal:
            legal = st.legal_actions()
            if not st.stock:
                seen_empty = True
                assert stock_end == "on_failed_draw" and st.current_player is not None
            st.apply(DRAW if DRAW in legal else TAKE_PENALTY if TAKE_PENALTY in legal else legal[-1])
        b = st.deal_report["breakdown"]
        assert b["end"] == "stock_exhausted" and b["multiplier"] == [1, 1]
        assert st.deal_report["deal_points"] == b["hand_value"] and sum(b["muamele_points"]) == 0
        assert seen_empty == (stock_end == "on_failed_draw")
        assert len(st.stock) == 0


def test_muamele_on_exhaustion():
    counts = Counter()
    for seed in range(30):
        st = random_game(PisYediliGame(players=3, episode="deal", muamele_on_exhaustion=True), seed)
        b = st.deal_report["breakdown"]
        if b["end"] == "stock_exhausted":
            for q in range(3):
                assert b["total"][q] == b["hand_value"][q] + b["muamele_points"][q]
                counts[bool(b["muamele_cards"][q])] += 1
    assert counts[True] > 0


# ----- invariants over random deals (§3g I1-I5) -----------------------------------------------------------
def run_invariants(game, deals, seed0=0):
    n, packs = game.num_players, game.packs
    total = 52 * packs
    rng = random.Random(seed0)
    ends = Counter()
    for d in range(deals):
        st = game.new_state(random.Random(seed0 * 100_003 + d))
        first_round = None
        for step in range(5000):
            if st.current_player is None:
                break
            assert sum(map(len, st.hands)) + len(st.stock) + len(st.discard) == total          # I1
            assert st.pending % 3 == 0 and st.pending <= 12 * packs                              # I3
            assert (st.pending > 0) == (st.phase == FACING_SEVEN)
            if not game.on_failed_draw:
                assert st.stock                                                                  # I4
            legal = st.legal_actions()
            assert legal                                                                         # I5
            if first_round is None and st.phase != FIRST_ROUND:
                first_round = st.discard[:]
            st.apply(rng.choice(legal))
        else:
            raise AssertionError("deal did not end")                                            # terminates
        b = st.deal_report["breakdown"]
        ends[b["end"]] += 1
        if b["end"] == "went_out":
            assert b["last_card"][0] != "A"                                                      # I4, PY-7
            assert sum(map(len, st.hands)) + len(st.stock) + len(st.discard) + sum(
                len(m) for m in st.muamele_cards) == total
            w = b["went_out"].index(True)
            assert st.hands[w] == [] and b["total"][w] == 0
        else:
            assert not any(b["went_out"])
        assert st.deal_report["deal_points"] == b["total"]
        # I2: round 1 has N plays, all clubs of rank 2-6, 8, 9, Q, K (fewer only if the stock ran out)
        if first_round is None:
            assert b["end"] == "stock_exhausted"
        else:
            assert len(first_round) == n
            assert all(c // 13 == 0 and c % 13 not in (0, 6, 9, 10) for c in first_round)
    return ends


@pytest.mark.parametrize("players", [2, 3, 4])
def test_invariants_random_deals(players):
    ends = run_invariants(PisYediliGame(players=players, episode="deal"), 2000, seed0=players)
    assert ends["went_out"] > 50 and ends["stock_exhausted"] > 50


@pytest.mark.parametrize("settings", [
    dict(players=4, ten_rule="reverse", twin_rule="same_rank", must_answer_seven=True),
    dict(players=3, stock_end="on_failed_draw", after_seven_penalty="lose_turn", muamele_on_exhaustion=True),
    dict(players=2, twin_rule="same_rank", stock_end="on_failed_draw", skip_single_choice=False),
])
def test_invariants_other_settings(settings):
    run_invariants(PisYediliGame(episode="deal", **settings), 300, seed0=7)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_whole_matches_end_with_lowest_total_winning(players):
    game = PisYediliGame(players=players)
    for seed in range(15):
        st = random_game(game, seed)
        assert st.terminal and max(st.scores) >= 101
        low = min(st.scores)
        assert st.winners == [i for i in range(players) if st.scores[i] == low]                 # PY-12
        assert abs(sum(st.returns)) < 1e-9


def test_observation_shape_and_bounds():
    for players in (2, 3, 4):
        game = PisYediliGame(players=players)
        assert game.observation_size == OBS_SIZE == 183 + 71 * MOVE_FEATURES and game.num_actions == 71

        def check(st):
            for seat in range(players):
                o = st.observation(seat)
                assert o.shape == (OBS_SIZE,) and o.dtype == np.float32
                assert o.min() >= game.obs_low and o.max() <= game.obs_high
                assert o[179 + players - 2] == 1 and o[179:182].sum() == 1
                assert o[52:105].sum() == 1 and o[105:110].sum() == 1
                assert np.allclose(o[:52] * 2, np.bincount(st.hands[seat], minlength=52))
                rows = move_rows(st, seat)
                # a row for every legal action of the player to act (F_PLAY or a draw's F_KEPT is never 0)
                want = st.legal_actions() if seat == st.current_player else []
                assert np.flatnonzero(np.abs(rows).sum(axis=1)).tolist() == want
            assert st.legal_mask().sum() == len(st.legal_actions())
        random_game(game, players, on_state=check)


def move_rows(state, seat):
    return state.observation(seat)[183:].reshape(71, MOVE_FEATURES)


def test_move_rows_weigh_what_a_move_sheds_and_risks():
    # P1 is on one card and P0 plays on 5H holding JS, 2H, KC. The pile shows every other club and jack, so a J
    # naming clubs leaves P1 nothing to follow; 2H leaves them any unseen heart or 2 (white-box state)
    st = PisYediliGame(players=2).new_state(0)
    pile = [c for c in range(52) if c // 13 == 0 and c not in cs("KC")] + cs("JD", "JH", "5H")
    rest = [c for c in range(52) if c not in pile + cs("JS", "2H", "KC", "9D")]
    st.hands, st.discard, st.stock = [cs("JS", "2H", "KC"), cs("9D")], pile, rest
    st.ctx, st.phase, st.current_player, st.first_round_left, st._legal = C("5H"), NORMAL, 0, 0, None
    F = appraisal
    rows = move_rows(st, 0)
    assert move_rows(st, 1).sum() == 0.0                                  # only the player to act reads them
    clubs, hearts, two = PLAY_J + 4 * 3 + 0, PLAY_J + 4 * 3 + 2, C("2H")     # JS names clubs / hearts
    assert rows[clubs][F.F_FOLLOWS] == 0 and rows[clubs][F.F_EXPOSED] == 0
    assert rows[clubs][F.F_JACK] == 1 and rows[clubs][F.F_VALUE] == pytest.approx(1.0)
    assert rows[clubs][F.F_KEPT] == pytest.approx((2 + 10) / 100)
    unseen = 52 - 3 - len(pile)                                           # P1's card is one of them
    follow = (12 - 2) + (4 - 2)                 # the hearts but JH (a jack), 2H and 5H; the 2s but 2H and 2C
    assert rows[two][F.F_FOLLOWS] == pytest.approx(follow / unseen)
    assert rows[two][F.F_EXPOSED] == pytest.approx((25 + 10) / 100 * follow / unseen)
    assert rows[hearts][F.F_FOLLOWS] == pytest.approx((12 - 2) / unseen)     # every jack is seen
    draw = rows[DRAW]
    assert draw[F.F_PLAY] == 0 and draw[F.F_DRAWN] == pytest.approx(0.1) and draw[F.F_KEPT] > (25 + 2 + 10) / 100
    assert not rows[C("KC")].any()                                        # not legal on 5H


# ----- hidden information (C-8) ---------------------------------------------------------------------------
def test_hidden_information():
    rng = random.Random(1)
    changed = 0
    for players in (2, 3, 4):
        game = PisYediliGame(players=players)
        states = []
        random_game(game, 10 + players, on_state=lambda s: states.append(s.clone()) if rng.random() < 0.1 else None)
        for st in states[:40]:
            changed += check_hidden_information(st, rng, tries=2)
    assert changed > 0


def test_determinize_keeps_counts_and_own_hand():
    game = PisYediliGame(players=4)
    st = game.new_state(3)
    rng = random.Random(0)
    for _ in range(30):
        st.apply(rng.choice(st.legal_actions()))
    other = st.determinize(0, random.Random(5))
    assert other.hands[0] == st.hands[0]
    assert [len(h) for h in other.hands] == [len(h) for h in st.hands] and len(other.stock) == len(st.stock)
    pool = lambda s: sorted(c for p in (1, 2, 3) for c in s.hands[p]) + sorted(s.stock)   # noqa: E731
    assert sorted(pool(other)) == sorted(pool(st)) and other.to_dict() != st.to_dict()


def test_clone_is_independent():
    st = PisYediliGame(players=3).new_state(4)
    c = st.clone()
    before = st.to_dict()
    rng = random.Random(2)
    for _ in range(50):
        if c.is_terminal:
            break
        c.apply(rng.choice(c.legal_actions()))
    assert st.to_dict() == before
    # a clone continues exactly like the original
    a, b = st.clone(), st.clone()
    for _ in range(200):
        if a.is_terminal:
            break
        x = rng.choice(a.legal_actions())
        a.apply(x)
        b.apply(x)
    assert a.to_dict() == b.to_dict()


# ----- action text ----------------------------------------------------------------------------------------
def test_describe_parse_round_trip_and_bare_forms():
    rng = random.Random(3)
    kinds = Counter()
    for players in (2, 3, 4):
        st = PisYediliGame(players=players).new_state(players)
        for _ in range(400):
            if st.is_terminal:
                break
            for a in st.legal_actions():
                text = st.describe_action(a)
                assert st.parse_action(text) == a
                for alias in st._action_aliases(a):
                    assert st.parse_action(alias) == a
                kinds[text.split()[0] if a >= DRAW else ("J" if a >= PLAY_J else "card")] += 1
            st.apply(rng.choice(st.legal_actions()))
    assert {"card", "J", "draw", "pass", "take"} <= set(kinds)


def test_action_texts():
    st = e2_to_penalty()
    assert st.describe_action(C("7S")) == "7S" and st.describe_action(DRAW) == "draw"
    assert st.describe_action(PASS) == "pass" and st.describe_action(PLAY_J + 1 * 4 + 3) == "JD names spades"
    assert st.parse_action("take 6") == TAKE_PENALTY == st.parse_action("take penalty")
    st2 = twin_state()
    assert st2.parse_action("play 5d") == C("5D") == st2.parse_action("5♦")


# ----- bad input ------------------------------------------------------------------------------------------
def test_bad_settings():
    with pytest.raises(ValueError, match="unknown setting 'player'.*did you mean 'players'"):
        PisYediliGame(player=3)
    with pytest.raises(ValueError, match="setting 'players': 5 is not allowed"):
        PisYediliGame(players=5)
    with pytest.raises(ValueError, match="setting 'game_end_penalty': 20 is not allowed"):
        PisYediliGame(game_end_penalty=20)
    with pytest.raises(ValueError, match="setting 'ten_rule'"):
        PisYediliGame(ten_rule="skip")
    with pytest.raises(ValueError, match="setting 'jack_out_multiplier'"):
        PisYediliGame(jack_out_multiplier=6)
    with pytest.raises(ValueError, match="setting 'muamele_multiplied': True is not allowed with muamele=False"):
        PisYediliGame(muamele=False, muamele_multiplied=True)
    with pytest.raises(ValueError, match="setting 'muamele_on_exhaustion'"):
        PisYediliGame(muamele=False, muamele_on_exhaustion=True)
    with pytest.raises(ValueError, match="first_dealer"):
        PisYediliGame(players=3, first_dealer=3)


def test_bad_decks():
    one = [card_str(i) for i in range(52)]
    with pytest.raises(ValueError, match="2 packs of 52.*104 cards.*got 52"):
        PisYediliGame(players=4).new_state(0, one)
    with pytest.raises(ValueError, match="one 52-card pack.*got 104"):
        PisYediliGame(players=2).new_state(0, one + one)
    with pytest.raises(ValueError, match="unknown cards: \\['XX'\\]"):
        PisYediliGame(players=2).new_state(0, one[:-1] + ["XX"])
    with pytest.raises(ValueError, match="too many copies of AC.*missing KS"):
        PisYediliGame(players=2).new_state(0, one[:-1] + ["AC"])
    with pytest.raises(ValueError, match="too many copies of 2C \\(\\+1\\).*missing KS"):
        PisYediliGame(players=3).new_state(0, one + one[:-1] + ["2C"])
    with pytest.raises(ValueError):
        envs.make("pis_yedili", players=3).reset(seed=0, options={"deck": one})


def test_illegal_actions_and_bad_text():
    st = e2_to_penalty()
    with pytest.raises(IllegalActionError, match="illegal action 69 \\(pass\\) for player 2.*legal: 70 take 6"):
        st.apply(PASS)
    with pytest.raises(IllegalActionError, match="outside 0..70"):
        st.apply(71)
    with pytest.raises(IllegalActionError, match="integer"):
        st.apply("take")
    with pytest.raises(ValueError, match="'pass' is not a legal action here; legal: take 6"):
        st.parse_action("pass")
    with pytest.raises(ValueError, match="not a legal action"):
        st.parse_action("JH names stars")


# ----- the AEC environment ----------------------------------------------------------------------------------
def test_env_reset_with_deck_and_infos():
    env = envs.make("pis_yedili", players=2, first_dealer=1, episode="deal", skip_single_choice=False)
    env.reset(seed=0, options={"deck": make_deck(2, E3_HANDS, E3_STOCK, dealer=1)})
    for seat, text in E3_MOVES + [(0, "JD names spades")]:
        assert env.agent_selection == f"player_{seat}"
        env.step(env.unwrapped.parse_action(text))
    info = env.infos["player_1"]
    assert info["deal_points"] == [0, 84] and info["scores"] == [0, 84] and info["winners"] == [0]
    assert info["breakdown"]["muamele_points"] == [0, 44]
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}


VALUES = {**{r: i + 2 for i, r in enumerate("23456789T")}, "J": 25, "Q": 10, "K": 10, "A": 11}   # PY-13


def test_muamele_reshuffles_the_discard_pile_without_its_top_card():
    # PY-11: once the stock is empty, Muamele draws from the rest of the discard pile, shuffled (chance stream)
    results = set()
    for seed in range(6):
        game = PisYediliGame(players=2, first_dealer=1, episode="deal", skip_single_choice=False)
        st = game.new_state(random.Random(seed), make_deck(2, E3_HANDS, E3_STOCK, dealer=1))
        play(st, *E3_MOVES)
        # white-box: leave only 5S KC in the stock; the other stock cards go to the bottom of the discard pile
        rest = st.stock[:-2]
        st.stock = st.stock[-2:]
        st.discard = rest + st.discard
        total = len(st.stock) + len(st.discard) + sum(map(len, st.hands))
        play(st, (0, "JD names clubs"))
        b = st.deal_report["breakdown"]
        drawn = b["muamele_cards"][1]
        assert drawn[:2] == ["5S", "KC"] and len(drawn) == 3 + 3 * sum(c[0] == "7" for c in drawn)
        assert st.discard == [C("JD")]                          # the top card stays
        assert len(st.stock) + len(st.discard) + len(drawn) + sum(map(len, st.hands)) == total == 52
        assert b["muamele_points"][1] == sum(VALUES[c[0]] for c in drawn)
        results.add(tuple(drawn))
    assert len(results) > 1                                     # the reshuffle is chance


def test_truncation_at_max_deals_lowest_total_wins():
    for seed in range(10):
        st = random_game(PisYediliGame(players=3, max_deals=1), seed)
        assert st.deals_completed == 1
        low = min(st.scores)
        assert st.winners == [i for i in range(3) if st.scores[i] == low]
        assert st.truncated == (max(st.scores) < 101) and st.terminal == (max(st.scores) >= 101)
