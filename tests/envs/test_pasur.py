"""Pâsur engine (docs/rules.md §2): the worked examples E1-E3, captures, surs, the pool check, scoring and match
end, invariants over random rounds, hidden information, action text, and bad input."""

from __future__ import annotations

import json
import random
from itertools import combinations

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core import IllegalActionError
from kahve.envs.core.cards import card_str, parse_card
from kahve.envs.pasur.rules import TAKE, PasurGame
from tests.helpers import check_hidden_information, random_game

E1_FIRST = "7H AC JD 5S 2C KH 5C 6D 4C 9D 3H KS".split()
E1_DECK = E1_FIRST + [card_str(c) for c in range(52) if card_str(c) not in E1_FIRST]


def ids(text: str) -> list[int]:
    return [parse_card(t) for t in text.split()]


def strs(cards) -> str:
    return " ".join(card_str(c) for c in cards)


def value(card: int) -> int:
    return card % 13 + 1


def position(hands, pool, *, to_move=1, dealer=0, hand_number=1, stock=None, scores=(0, 0), **settings):
    """A constructed position: ``hands`` (per seat) and ``pool`` as card text; the stock is filled from the
    unused cards (``stock`` of them, by default as many as the hand number leaves)."""
    settings.setdefault("skip_single_choice", False)
    g = PasurGame(**settings)
    st = g.new_state(0, deck=E1_DECK)
    st.hands = [sorted(ids(h)) for h in hands]
    st.pool = ids(pool)
    used = set(st.hands[0]) | set(st.hands[1]) | set(st.pool)
    n = 8 * (6 - hand_number) if stock is None else stock
    st.stock = [c for c in range(52) if c not in used][:n]
    st.dealer, st.current_player, st.hand_number = dealer, to_move, hand_number
    st.scores = list(scores)
    st.round_start_scores = list(scores)
    s = st.settings
    st.sur_capped = [s.sur_cap and x >= s.sur_cap_threshold for x in scores]
    return st


def last_turn(st) -> dict:
    return st.to_dict()["turns"][-1]


# ----- E1: the seed's sample deal --------------------------------------------------------------------
E1_STEPS = [  # (seat to move, action, text, what the turn log then says)
    (1, 32, "7H takes 4C", "7H takes 4C"),
    (0, 1, "2C takes 9D", "2C takes 9D"),
    (1, 0, "AC trails", "AC trails"),
    (0, 38, "KH takes KS", "KH takes KS"),
    (1, 23, "JD takes 3H AC", "JD takes 3H AC"),
    (0, 4, "5C trails", "5C trails"),
    (1, 43, "5S trails", "5S trails"),
    (0, 18, "play 6D", None),
    (0, 95, "take 5S", "6D takes 5S"),
]


@pytest.mark.parametrize("skip", [False, True])
def test_e1_seed_sample_deal(skip):
    """docs/rules.md §2g E1, with both values of skip_single_choice (C-4)."""
    st = PasurGame(skip_single_choice=skip).new_state(5, deck=E1_DECK)
    d = st.to_dict()
    assert d["dealer"] == 0 and st.current_player == 1           # the non-dealer (seat 1) starts
    assert d["hands"] == [["2C", "5C", "6D", "KH"], ["AC", "JD", "7H", "5S"]]  # sorted by card id
    assert d["pool"] == ["4C", "9D", "3H", "KS"] and len(d["stock"]) == 40 and d["redeals"] == 0
    played = []
    for seat, action, text, logged in E1_STEPS:
        if skip and action in (43, 18):        # the engine plays each player's last card of the hand
            continue
        assert st.current_player == seat
        assert action in st.legal_actions()
        assert st.describe_action(action) == text
        n_turns = len(st.turns)
        st.apply(action)
        played.append(action)
        turns = st.to_dict()["turns"]
        if logged is not None:
            assert turns[n_turns]["text"] == logged
        if action == 23:                        # the jack sweep empties the pool and is no sur (PA-7)
            assert st.to_dict()["pool"] == [] and turns[-1]["sur"] is None and st.surs == [0, 0]
        if action == 4 and skip:                # 5S was trailed by the engine, 6D played into SELECT
            assert [t["text"] for t in turns[n_turns:]] == ["5C trails", "5S trails"]
            assert st.to_dict()["selecting"] == {"card": "6D", "picked": [],
                                                 "options": [["5C"], ["5S"]]}
            assert st.legal_actions() == [52 + 4, 52 + 43]
    assert played == ([32, 1, 0, 38, 23, 4, 95] if skip else [32, 1, 0, 38, 23, 4, 43, 18, 95])
    d = st.to_dict()
    assert [t["text"] for t in d["turns"]] == [
        "7H takes 4C", "2C takes 9D", "AC trails", "KH takes KS", "JD takes 3H AC", "5C trails", "5S trails",
        "6D takes 5S"]
    assert all(t["sur"] is None for t in d["turns"])
    assert d["pool"] == ["5C"]
    assert sorted(d["captured"][1]) == sorted("7H 4C JD 3H AC".split())      # P0 of the example
    assert sorted(d["captured"][0]) == sorted("2C 9D KH KS 6D 5S".split())   # P1 of the example
    assert d["surs"] == [0, 0] and d["last_capturer"] == 0
    # the second hand is dealt from the stock: 4 to the non-dealer, then 4 to the dealer
    assert d["hand_number"] == 2 and len(d["stock"]) == 32
    assert d["hands"] == [sorted(E1_DECK[16:20], key=parse_card), sorted(E1_DECK[12:16], key=parse_card)]
    assert st.current_player == 1


def test_e1_through_the_env_and_describe_parse():
    env = envs.make("pasur", skip_single_choice=False, render_mode="ansi")
    env.reset(seed=3, options={"deck": E1_DECK})
    for seat, action, text, _ in E1_STEPS:
        assert env.agent_selection == f"player_{seat}"
        mask = env.observe(env.agent_selection)["action_mask"]
        assert mask[action] == 1
        assert env.unwrapped.describe_action(action) == text
        assert env.unwrapped.parse_action(text) == action
        env.step(action)
    text = env.render()
    assert "pool: 5C" in text and "last play: 6D takes 5S" in text


# ----- E2, E3: capture options -------------------------------------------------------------------------
E2_POOL = "AH 2C 2S 4D TC"
E2 = {10: ["AH"], 9: ["2C", "2S"], 8: ["AH 2C", "AH 2S"], 7: ["4D", "2C 2S"], 6: ["AH 4D", "AH 2C 2S"],
      5: ["2C 4D", "2S 4D"], 4: ["AH 2C 4D", "AH 2S 4D"], 3: ["2C 2S 4D"], 2: ["AH 2C 2S 4D"], 1: ["TC"]}


def reachable_captures(st) -> set:
    """Every capture reachable from a SELECT state by TAKE sequences (depth-first over clones)."""
    out = set()
    for a in st.legal_actions():
        assert a >= 52
        nxt = st.clone()
        nxt.apply(a)
        if nxt.phase == 1:
            out |= reachable_captures(nxt)
        else:
            out.add(frozenset(ids(" ".join(nxt.to_dict()["turns"][-1]["took"]))))
    return out


@pytest.mark.parametrize("v", range(1, 11))
def test_e2_wikipedia_pool_options(v):
    """§2g E2: the options per played value, exactly; each reachable by TAKE steps when there is a choice."""
    card = "A23456789T"[v - 1] + "H" if v != 1 else "AD"
    st = position([card + " KS QS JS", "KC QC JC KD"], E2_POOL, to_move=0)
    want = {frozenset(ids(o)) for o in E2[v]}
    got = st.capture_options(parse_card(card))
    assert {frozenset(o) for o in got} == want and len(got) == len(want)
    assert all(list(o) == sorted(o) for o in got)
    st.apply(parse_card(card))
    if len(want) == 1:
        assert st.phase == 0 and set(ids(" ".join(last_turn(st)["took"]))) == set(next(iter(want)))
    else:
        assert st.phase == 1 and st.current_player == 0
        assert reachable_captures(st) == want


def test_e3_hundred_options_per_ace():
    """§2g E3: all 20 cards of values 2, 4, 6, 8, 10 in the pool, 4 aces in hand: 100 options per ace, 400
    (card, capture) pairs, every one reachable by TAKE sequences and nothing else."""
    pool = " ".join(r + s for r in "2468T" for s in "CDHS")
    st = position(["AC AD AH AS", "KC QC JC KD"], pool, to_move=0)
    pool_ids = ids(pool)
    brute = {frozenset(c) for k in range(1, 6) for c in combinations(pool_ids, k)
             if sum(value(x) for x in c) == 10}
    assert len(brute) == 100
    pairs = 0
    for ace in ids("AC AD AH AS"):
        opts = st.capture_options(ace)
        assert {frozenset(o) for o in opts} == brute and len(opts) == 100
        nxt = st.clone()
        nxt.apply(ace)
        assert nxt.phase == 1
        got = reachable_captures(nxt)
        assert got == brute
        pairs += len(got)
    assert pairs == 400


def test_longest_pick_sequence():
    """§2h: AS on AC 2C AD 2D AH 3H 3S; the capture AC AD AH 2C 2D... needs several picks, in id order."""
    st = position(["AS KS QS JS", "KC QC JC KD"], "AC 2C AD 2D AH 3H 3S", to_move=0)
    st.apply(parse_card("AS"))
    picks = 0
    while st.phase == 1:
        legal = st.legal_actions()
        assert legal == sorted(legal) and all(a >= 52 for a in legal)
        st.apply(legal[0])                     # always the smallest card id
        picks += 1
    took = ids(" ".join(last_turn(st)["took"]))
    assert sum(value(x) for x in took) == 10
    assert picks == 6 and sorted(took) == ids("AC 2C AD 2D AH 3H")


def test_pick_order_is_increasing_card_id():
    """§2h: TAKE offers min(O \\ picked) of each candidate O. 6H on AH 2C 2S 4D: options {AH 4D} and
    {AH 2C 2S}, whose smallest ids are 4D (16) and 2C (1); AH (26) is never a first pick."""
    st = position(["6H KS QS JS", "KC QC JC KD"], "AH 2C 2S 4D", to_move=0)
    st.apply(parse_card("6H"))
    assert st.legal_actions() == [52 + parse_card("2C"), 52 + parse_card("4D")]
    assert st.describe_action(52 + parse_card("4D")) == "take 4D"
    assert st.parse_action("6H takes AH 4D") == 52 + parse_card("4D")
    assert st.parse_action("6H takes 4D AH") == 52 + parse_card("4D")
    st.apply(52 + parse_card("2C"))            # only {2C AH 2S} starts with 2C: captured at once
    assert st.phase == 0 and last_turn(st)["took"] == ["AH", "2C", "2S"]
    assert st.to_dict()["pool"] == ["4D"]


@pytest.mark.parametrize("skip", [False, True])
def test_shared_first_pick(skip):
    """8H on AC 2C 2D: options {AC 2C} and {AC 2D} share their first pick AC, a single legal TAKE that the
    engine applies itself under skip_single_choice (C-4)."""
    st = position(["8H KS QS JS", "KC QC JC KD"], "AC 2C 2D", to_move=0, skip_single_choice=skip)
    st.apply(parse_card("8H"))
    if not skip:
        assert st.legal_actions() == [52 + parse_card("AC")]
        st.apply(52 + parse_card("AC"))
    assert st.phase == 1 and st.to_dict()["selecting"]["picked"] == ["AC"]
    assert st.legal_actions() == [52 + parse_card("2C"), 52 + parse_card("2D")]
    obs = st.observation(0)
    assert obs[337 + parse_card("AC")] == 1.0 and obs[389] == pytest.approx(0.2)   # 8 + 1, 2 to go
    st.apply(52 + parse_card("2D"))
    assert last_turn(st)["text"] == "8H takes AC 2D" and st.to_dict()["pool"] == ["2C"]


# ----- capture rules (§2b) -------------------------------------------------------------------------------
def test_king_queen_take_one_of_their_rank_with_a_choice():
    st = position(["KH QH 9H 8H", "KC QC JC 2D"], "KS KD QS 5C", to_move=0)
    assert st.capture_options(parse_card("QH")) == [(parse_card("QS"),)]
    assert st.describe_action(parse_card("QH")) == "QH takes QS"
    assert st.describe_action(parse_card("KH")) == "play KH"
    st.apply(parse_card("KH"))
    assert st.legal_actions() == [52 + parse_card("KD"), 52 + parse_card("KS")]
    st.apply(52 + parse_card("KS"))
    assert last_turn(st)["took"] == ["KS"] and st.to_dict()["pool"] == ["KD", "QS", "5C"]


def test_jack_sweeps_numbers_and_jacks_but_not_faces():
    st = position(["JH 9H 8H 7H", "KC QC 3D 2D"], "2C 8S KS 5D QD", to_move=0)
    st.pool.append(parse_card("JC"))           # a trailed J can lie in the pool (I3: at most one)
    st.apply(parse_card("JH"))
    t = last_turn(st)
    assert t["text"] == "JH takes 2C 8S 5D JC" and t["sur"] is None
    assert st.to_dict()["pool"] == ["KS", "QD"]


def test_jack_with_nothing_to_take_trails_and_face_cards_trail():
    st = position(["JH 9H 8H 7H", "KC QC 3D 2D"], "KS QD", to_move=0)
    assert st.describe_action(parse_card("JH")) == "JH trails"
    st.apply(parse_card("JH"))
    assert st.to_dict()["pool"] == ["KS", "QD", "JH"] and last_turn(st)["took"] == []
    st.apply(parse_card("QC"))                 # Q takes Q
    assert last_turn(st)["took"] == ["QD"]


def test_mandatory_capture_is_per_card():
    """PA-1: every card in hand may be played; the capturing card must capture, another card may trail."""
    st = position(["7H 8H KH QH", "KC QC 3D 2D"], "4C 9S", to_move=0)
    assert st.legal_actions() == sorted(ids("7H 8H KH QH"))
    assert st.describe_action(parse_card("7H")) == "7H takes 4C"
    st.apply(parse_card("8H"))                 # 8 + 4 = 12, 8 + 9 = 17: trails, though 7H could capture
    assert last_turn(st)["took"] == [] and st.to_dict()["pool"] == ["4C", "9S", "8H"]


# ----- surs (PA-6, PA-7, PA-8) ---------------------------------------------------------------------------
def test_sur_and_cancellation():
    st = position(["7H KH 2H 3H", "6C KC 9D 2D"], "4C", to_move=0)
    assert st.describe_action(parse_card("7H")) == "7H takes 4C (sur)"
    st.apply(parse_card("7H"))
    assert last_turn(st)["sur"] == "sur" and st.surs == [1, 0] and st.to_dict()["pool"] == []
    st.apply(parse_card("KC"))                 # trails onto the empty pool
    st.apply(parse_card("KH"))                 # K takes the lone K: a sur (PA-7)
    assert last_turn(st)["sur"] == "sur" and st.surs == [2, 0]
    st.apply(parse_card("9D"))
    st.apply(parse_card("3H"))                 # 3 + 9 = 12: trails; pool 9D 3H
    st.apply(parse_card("2D"))                 # 2 + 9 = 11 takes 9D: pool not empty, no sur
    assert last_turn(st)["sur"] is None and st.surs == [2, 0]
    st.apply(parse_card("2H"))                 # trail; pool 3H 2H
    st.apply(parse_card("6C"))                 # 6 + 3 + 2 = 11 empties the pool: cancels one of seat 0's
    assert last_turn(st)["sur"] == "cancel" and st.surs == [1, 0]
    assert last_turn(st)["text"] == "6C takes 3H 2H (sur)"


def test_no_cancellation_keeps_both_counts():
    st = position(["7H 2H 3H 4H", "5C 6C 9D 8D"], "4C", to_move=0, sur_cancellation=False)
    st.apply(parse_card("7H"))
    st.apply(parse_card("5C"))                 # trails onto the empty pool
    st.apply(parse_card("2H"))                 # 2 + 5 = 7: trails
    st.apply(parse_card("9D"))                 # 9 + 2 = 11 takes 2H; pool 5C
    st.apply(parse_card("3H"))                 # trails; pool 5C 3H
    st.apply(parse_card("8D"))                 # 8 + 3 = 11, 5C stays
    st.apply(parse_card("4H"))                 # trails; pool 5C 4H
    assert st.surs == [1, 0]
    st.apply(parse_card("6C"))                 # 6 + 5 = 11 takes 5C only: pool 4H remains
    assert st.surs == [1, 0]


def test_sur_in_final_hand_only_with_setting():
    """PA-6: no sur anywhere in the sixth hand (and the leftover sweep never is one, PA-9)."""
    for setting, want in ((False, None), (True, "sur")):
        st = position(["7H KH", "6C KC"], "4C", to_move=0, hand_number=6, sur_on_final_deal=setting)
        assert st.describe_action(parse_card("7H")) == ("7H takes 4C" + (" (sur)" if setting else ""))
        st.apply(parse_card("7H"))
        assert last_turn(st)["sur"] == want
        assert st.surs == ([1, 0] if setting else [0, 0])


def test_jack_sweep_is_never_a_sur():
    st = position(["JH 2H 3H 4H", "5C 6C 9D 8D"], "4C 9S", to_move=0)
    assert st.describe_action(parse_card("JH")) == "JH takes 4C 9S"
    st.apply(parse_card("JH"))
    assert st.to_dict()["pool"] == [] and last_turn(st)["sur"] is None and st.surs == [0, 0]


def test_sur_cap_uses_round_start_total_and_neither_scores_nor_cancels():
    """PA-8: a capped player's sweep has no effect; the cap is judged on the total at the round's start."""
    st = position(["7H 4H 4S 4D", "2D 5C 3D KD"], "4C", to_move=0, scores=(50, 10), sur_cap=True)
    assert st.sur_capped == [True, False]
    assert st.observation(0)[280] == 1.0 and st.observation(0)[281] == 0.0
    assert st.observation(1)[280] == 0.0 and st.observation(1)[281] == 1.0
    st.scores = [0, 70]                        # a total that changes mid-round does not move the cap
    assert st.describe_action(parse_card("7H")) == "7H takes 4C"
    st.apply(parse_card("7H"))                 # a sweep by the capped player: no sur
    assert last_turn(st)["sur"] == "capped" and st.surs == [0, 0] and st.pool == []
    st.apply(parse_card("2D"))                 # trails onto the empty pool
    st.apply(parse_card("4H"))                 # 4 + 2: trails
    assert st.describe_action(parse_card("5C")) == "5C takes 2D 4H (sur)"
    st.apply(parse_card("5C"))                 # 5 + 2 + 4 empties the pool: seat 1 was not capped
    assert last_turn(st)["sur"] == "sur" and st.surs == [0, 1]
    st.apply(parse_card("4S"))                 # trails
    st.apply(parse_card("3D"))                 # 3 + 4: trails
    st.apply(parse_card("4D"))                 # 4 + 4 + 3 empties the pool: capped, cancels nothing
    assert last_turn(st)["sur"] == "capped" and st.surs == [0, 1]
    ok = position(["7H 2H 3H 4H", "7C 5C 9D 8D"], "4C", to_move=0, scores=(49, 10), sur_cap=True)
    ok.apply(parse_card("7H"))
    assert ok.surs == [1, 0]
    off = position(["7H 2H 3H 4H", "7C 5C 9D 8D"], "4C", to_move=0, scores=(55, 10))
    off.apply(parse_card("7H"))                # sur_cap off: the total does not matter
    assert off.surs == [1, 0]


# ----- round end and scoring (PA-9, §2d) ------------------------------------------------------------------
def test_round_end_leftover_to_last_capturer_and_breakdown():
    env = envs.make("pasur", skip_single_choice=False, episode="deal")
    env.reset(seed=1)
    st = env.unwrapped.state
    pos = position(["TD", "9C"], "2C 3C 4C 5C 6C 8C AS", to_move=0, hand_number=6, stock=0, episode="deal")
    pos.captured = [ids("7C JS AH AD"), ids("TC KC QC JC AC JD JH KS KH KD QS QH QD")]
    pos.clubs, pos.points = [1, 5], [3, 4]     # 7C; TC KC QC JC AC
    pos.surs = [0, 2]
    env.unwrapped.state = pos
    env.step(parse_card("TD"))                 # 10 + 1 = 11: takes AS (no sur: the pool is not empty)
    assert pos.surs == [0, 2] and pos.last_capturer == 0
    env.step(parse_card("9C"))                 # 9 + 2 = 11 takes 2C: seat 1 is now the last capturer
    assert pos.is_terminal and pos.leftover == (1, tuple(ids("3C 4C 5C 6C 8C")))
    info = env.infos["player_0"]
    b = info["breakdown"]
    assert b["clubs"] == [1, 12] and b["seven_clubs"] == [0, 7]
    assert b["ten_diamonds"] == [3, 0] and b["two_clubs"] == [0, 2]
    assert b["aces"] == [3, 1] and b["jacks"] == [1, 3]
    assert b["surs"] == [0, 2] and b["sur_points"] == [0, 10]
    assert b["card_points"] == [7, 13] and sum(b["card_points"]) == 20
    assert info["deal_points"] == [7, 23] and info["winners"] == [1]
    assert pos.to_dict()["turns"][-1]["sur"] is None and pos.to_dict()["pool"] == []


def _round_actions_and_points(settings, seed):
    """Play round 1 randomly on a clone; return its action list and deal points."""
    g = PasurGame(**settings)
    st = g.new_state(seed)
    probe = st.clone()
    rng = random.Random(seed)
    acts = []
    while probe.deals_completed == 0:
        a = rng.choice(probe.legal_actions())
        acts.append(a)
        probe.apply(a)
    return st, acts, probe.deal_report["deal_points"]


@pytest.mark.parametrize("tie_rule", ["extra_round", "draw"])
def test_match_end_tie_rule(tie_rule):
    st, acts, pts = _round_actions_and_points(dict(tie_rule=tie_rule, target_score=62), 4)
    st.scores = [62 - pts[0], 62 - pts[1]]     # both reach exactly 62 after the round
    for a in acts:
        st.apply(a)
    assert st.scores == [62, 62]
    if tie_rule == "extra_round":
        assert not st.is_terminal and st.deals_completed == 1 and st.current_player is not None
        assert st.dealer == 1 and st.current_player == 0 and st.to_dict()["hand_number"] == 1
    else:
        assert st.terminal and st.winners == [0, 1] and st.returns == [0.0, 0.0]


def test_match_end_higher_total_wins():
    st, acts, pts = _round_actions_and_points(dict(), 6)
    st.scores = [70 - pts[0], 62 - pts[1]]
    for a in acts:
        st.apply(a)
    assert st.terminal and st.winners == [0] and st.returns == [1.0, -1.0]


def test_max_rounds_truncation():
    g = PasurGame(max_rounds=2, target_score=200)
    st = random_game(g, seed=2)
    assert st.truncated and not st.terminal and st.deals_completed == 2
    best = max(st.scores)
    assert st.winners == [i for i in range(2) if st.scores[i] == best]
    if len(st.winners) == 1:
        assert st.returns[st.winners[0]] == 1.0


def test_points_reward_is_zero_sum_per_round():
    g = PasurGame(reward="points", episode="deal")
    st = random_game(g, seed=9)
    p = st.deal_report["deal_points"]
    assert st.returns == [p[0] - p[1], p[1] - p[0]]


# ----- the pool check (PA-5) -----------------------------------------------------------------------------
def _deck_with_pool(pool: str, replacement: str | None = None) -> list[str]:
    first = "2H 3H 4H 5H 6H 7H 8H 9H".split() + pool.split()
    rest = [card_str(c) for c in range(52) if card_str(c) not in first + ([replacement] if replacement else [])]
    return first + ([replacement] if replacement else []) + rest


def test_single_jack_is_buried_below_the_stock_top_and_replaced():
    deck = _deck_with_pool("4C JD 9S KS", "5D")
    positions = set()
    for seed in range(300):
        st = PasurGame().new_state(seed, deck=deck)
        d = st.to_dict()
        assert d["redeals"] == 0 and d["buried_jacks"] == ["JD"]
        assert d["pool"] == ["4C", "5D", "9S", "KS"]
        stock = d["stock"]
        assert len(stock) == 40
        k = stock.index("JD")
        positions.add(k)
        assert [c for c in stock if c != "JD"] == deck[13:]
        assert "JD" not in d["hands"][0] + d["hands"][1]
    # uniform over every place below the old top: after the top moved to the pool, indices 0..39
    assert positions == set(range(40))


@pytest.mark.parametrize("pool,replacement,rule,redeal", [
    ("JC JD 9S KS", None, "standard", True),
    ("JC JD 9S KS", None, "jacks_only", True),
    ("QC QD QS KS", None, "standard", True),
    ("QC QD QS KS", None, "jacks_only", False),
    ("KC KD KH 4S", None, "standard", True),
    ("QC QD 4S KS", None, "standard", False),
    ("4C JD 9S KS", "JH", "standard", True),           # a replacement jack redeals
    ("QC JD QS KS", "QH", "standard", True),           # a replacement that makes 3 queens
    ("QC JD QS KS", "QH", "jacks_only", False),
])
def test_pool_check_redeals(pool, replacement, rule, redeal):
    deck = _deck_with_pool(pool, replacement)
    st = PasurGame(redeal_rule=rule).new_state(7, deck=deck)
    d = st.to_dict()
    assert (d["redeals"] > 0) == redeal
    ranks = [c[0] for c in d["pool"]]
    assert "J" not in ranks
    if rule == "standard":
        assert ranks.count("Q") <= 2 and ranks.count("K") <= 2
    if redeal:   # a reshuffle from the deck stream: the first 8 cards are no longer the preset ones
        assert sorted(d["hands"][0] + d["hands"][1]) != sorted(deck[:8])
        assert all(len(h) == 4 for h in d["hands"]) and len(d["stock"]) == 40


def test_redeal_reshuffles_from_the_deck_stream():
    """PA-5: a redeal from a preset deck is the deck stream's next shuffle, reproducible under the seed."""
    deck = _deck_with_pool("JC JD 9S KS")
    g = PasurGame()
    for seed in range(100):                   # a seed whose first shuffle passes the pool check untouched
        seeder = random.Random(seed)
        order = list(range(52))
        random.Random(seeder.getrandbits(64)).shuffle(order)
        ranks = [c % 13 for c in order[8:12]]
        if 10 not in ranks and ranks.count(11) < 3 and ranks.count(12) < 3:
            break
    a = g.new_state(seed, deck=deck).to_dict()
    assert a == g.new_state(seed, deck=deck).to_dict()
    assert a["redeals"] == 1 and a["buried_jacks"] == []
    assert a["hands"][1] == [card_str(x) for x in sorted(order[0:4])]      # non-dealer first
    assert a["hands"][0] == [card_str(x) for x in sorted(order[4:8])]
    assert a["pool"] == [card_str(x) for x in order[8:12]]
    assert a["stock"] == [card_str(x) for x in order[12:]]
    other = g.new_state(seed + 1000, deck=deck).to_dict()
    assert (other["hands"], other["pool"]) != (a["hands"], a["pool"])


# ----- invariants over random rounds (§2g I1-I5) ----------------------------------------------------------
def _no_capture_possible(card: int, pool: list[int]) -> bool:
    r = card % 13
    if r == 10:
        return all(x % 13 > 10 for x in pool)
    if r > 10:
        return all(x % 13 != r for x in pool)
    nums = [x for x in pool if x % 13 < 10]
    need = 11 - value(card)
    return not any(sum(value(x) for x in c) == need
                   for k in range(1, len(nums) + 1) for c in combinations(nums, k))


@pytest.mark.parametrize("settings,rounds", [
    (dict(), 2000),
    (dict(sur_on_final_deal=True, sur_cancellation=False, redeal_rule="jacks_only", sur_value=7), 300),
])
def test_random_round_invariants(settings, rounds):
    g = PasurGame(episode="deal", skip_single_choice=False, **settings)
    sv = g.settings.sur_value
    stats = {"sur": 0, "cancel": 0, "select": 0, "trail": 0}
    for seed in range(rounds):
        rng = random.Random(seed)
        st = g.new_state(seed)
        ranks = [c % 13 for c in st.pool]
        assert 10 not in ranks                                    # I3
        if settings.get("redeal_rule") != "jacks_only":
            assert ranks.count(11) <= 2 and ranks.count(12) <= 2
        while st.current_player is not None:
            legal = st.legal_actions()
            assert legal and legal == sorted(legal)
            a = rng.choice(legal)
            hand_before, pool_before, n_turns = st.hand_number, list(st.pool), len(st.turns)
            if a >= 52:
                stats["select"] += 1
            st.apply(a)
            if settings.get("sur_cancellation", True):
                assert min(st.surs) == 0                          # I2: at most one player holds net surs
            if len(st.turns) == n_turns:
                continue
            p, card, taken, sur = st.turns[-1]
            if not taken:                                         # I4: a trail had no capture
                stats["trail"] += 1
                assert _no_capture_possible(card, pool_before)
            if sur in ("sur", "cancel"):
                stats[sur] += 1
            is_sweep = card % 13 != 10 and taken and sorted(taken) == sorted(pool_before)
            final = hand_before == 6 and not settings.get("sur_on_final_deal")
            assert (sur is not None) == bool(is_sweep and not final)      # I2, PA-6, PA-7
            if sur is not None:                                   # I5
                faces = [x for x in pool_before if x % 13 >= 10]
                assert (not faces and sum(value(x) for x in pool_before) <= 10) or \
                    (len(pool_before) == 1 and pool_before[0] % 13 in (11, 12))
        report = st.deal_report
        b = report["breakdown"]
        assert st.last_capturer is not None                       # PA-9's case never shows in practice
        assert sorted(st.captured[0] + st.captured[1]) == list(range(52)) and st.pool == []
        assert sum(b["card_points"]) == 20                        # I1
        assert sum(b["seven_clubs"]) == 7 and sum(b["clubs"]) == 13
        assert sum(report["deal_points"]) == 20 + sv * sum(b["surs"])
        assert b["sur_points"] == [sv * n for n in b["surs"]]
        assert report["winners"] == [i for i in range(2) if report["deal_points"][i] == max(report["deal_points"])]
    assert stats["sur"] > 0 and stats["select"] > 0 and stats["trail"] > 0
    if settings.get("sur_cancellation", True):
        assert stats["cancel"] > 0


# ----- observation, hidden information, clone ------------------------------------------------------------
def test_observation_layout_in_select():
    st = PasurGame(skip_single_choice=False).new_state(5, deck=E1_DECK)
    for a in (32, 1, 0, 38, 23, 4, 43, 18):
        st.apply(a)
    obs = st.observation(0)
    assert obs.shape == (1430,) and obs.dtype == np.float32
    moves = obs[390:].reshape(104, 10)                           # the appraisal of each legal action
    legal = st.legal_actions()
    assert legal == [TAKE + parse_card("5C"), TAKE + parse_card("5S")]
    assert np.flatnonzero(np.abs(moves).sum(axis=1)).tolist() == legal
    for a in legal:                                              # 6D takes one 5: a capture, no sur
        assert moves[a, 3] == pytest.approx(0.2) and moves[a, 2] == 0.0
    assert st.observation(1)[390:].sum() == 0.0                  # only the player to act reads them
    assert obs[284] == 1.0 and obs[283] == 0.0
    assert obs[285 + parse_card("6D")] == 1.0 and obs[285:337].sum() == 1.0
    assert obs[337:389].sum() == 0.0 and obs[389] == pytest.approx(0.5)   # 6 + 5 = 11
    assert obs[52 + parse_card("5C")] == 1.0 and obs[52 + parse_card("5S")] == 1.0 and obs[52:104].sum() == 2
    assert obs[:52].sum() == 0                                   # seat 0's hand is empty now
    assert obs[104:156].sum() == 4 and obs[156:208].sum() == 5   # my captures, theirs
    assert obs[208:260].sum() == 52 - 2 - 9 - 1                  # pool, captures, the card being played
    assert obs[266] == 1.0 and obs[272] == 0.0 and obs[273] == 1.0 and obs[274] == 0.0
    assert obs[275 + 1] == 1.0                                   # last capturer: the opponent (JD)
    assert obs[282] == 1.0                                       # seat 0 deals
    assert obs[260] == pytest.approx(1 / 13) and obs[261] == pytest.approx(2 / 13)
    # points so far: seat 0 has 2C (2), seat 1 has JD, AC (2)
    assert obs[264] == pytest.approx(2 / 20) and obs[265] == pytest.approx(2 / 20)
    other = st.observation(1)
    assert other[52:104].tolist() == obs[52:104].tolist() and other[104:156].tolist() == obs[156:208].tolist()


def test_observations_within_bounds_and_hidden_information():
    g = PasurGame(skip_single_choice=False, episode="deal")
    rng = random.Random(0)
    changed = 0
    count = 0

    def check(st):
        nonlocal changed, count
        count += 1
        if count % 5:
            return
        for seat in range(2):
            o = st.observation(seat)
            assert o.shape == (1430,) and o[:390].min() >= 0.0 and o.min() >= -10.0 and o.max() <= 10.0
            rows = o[390:].reshape(104, 10)                      # appraisals: the acting seat's legal actions
            legal = st.legal_actions() if st.current_player == seat else []
            assert set(np.flatnonzero(np.abs(rows).sum(axis=1))) <= set(legal)
            assert all(rows[a, 3] > 0 or rows[a, 7] > 0 for a in legal)   # each a capture or a trail
        changed += check_hidden_information(st, rng, tries=2)

    for seed in range(25):
        random_game(g, seed, on_state=check)
    assert changed > 0


def test_determinize_keeps_what_the_seat_saw():
    st = PasurGame().new_state(3)
    other = st.determinize(1, random.Random(1))
    d, e = st.to_dict(), other.to_dict()
    assert e["hands"][1] == d["hands"][1] and e["pool"] == d["pool"]
    assert sorted(e["hands"][0] + e["stock"]) == sorted(d["hands"][0] + d["stock"])
    assert (e["hands"][0], e["stock"]) != (d["hands"][0], d["stock"])


def test_clone_is_independent():
    st = PasurGame(skip_single_choice=False).new_state(5, deck=E1_DECK)
    for a in (32, 1, 0, 38, 23, 4, 43, 18):
        st.apply(a)
    cp = st.clone()
    assert cp.to_dict() == st.to_dict()
    assert json.loads(json.dumps(st.to_dict())) == st.to_dict()
    cp.apply(95)
    assert st.to_dict()["selecting"]["card"] == "6D" and st.to_dict()["pool"] == ["5C", "5S"]
    assert cp.to_dict()["pool"] == ["5C"]
    # same future chance: both finish the match identically
    a, b = st.clone(), st.clone()
    ra, rb = random.Random(1), random.Random(1)
    for s, r in ((a, ra), (b, rb)):
        while s.current_player is not None:
            s.apply(r.choice(s.legal_actions()))
    assert a.to_dict() == b.to_dict()


# ----- action text ---------------------------------------------------------------------------------------
def test_describe_parse_round_trip_and_bare_forms():
    g = PasurGame(skip_single_choice=False, episode="deal")
    seen_select = 0

    def check(st):
        nonlocal seen_select
        for a in st.legal_actions():
            text = st.describe_action(a)
            assert st.parse_action(text) == a
            assert st.parse_action(card_str(a % 52)) == a            # the bare card
            assert st.parse_action(card_str(a % 52).lower().replace("t", "10")) == a
        if st.phase == 1:
            seen_select += 1

    for seed in range(15):
        random_game(g, seed, on_state=check)
    assert seen_select > 0


def test_parse_accepts_captures_in_either_order():
    st = PasurGame(skip_single_choice=False).new_state(5, deck=E1_DECK)
    for a in (32, 1, 0, 38):
        st.apply(a)
    assert st.parse_action("JD takes 3H AC") == 23
    assert st.parse_action("J♦ takes A♣ 3♥") == 23
    assert st.parse_action("play JD") == 23


# ----- bad input -----------------------------------------------------------------------------------------
def test_bad_settings():
    with pytest.raises(ValueError, match="unknown setting 'sur_vaule'.*did you mean 'sur_value'"):
        PasurGame(sur_vaule=5)
    with pytest.raises(ValueError, match="setting 'target_score': 10 is not allowed"):
        PasurGame(target_score=10)
    with pytest.raises(ValueError, match="setting 'redeal_rule'"):
        PasurGame(redeal_rule="never")
    with pytest.raises(ValueError, match="setting 'sur_cap_threshold': 80 is not allowed with target_score=62"):
        PasurGame(sur_cap_threshold=80)
    with pytest.raises(ValueError, match="setting 'first_dealer'"):
        PasurGame(first_dealer=2)
    assert PasurGame(target_score=40).settings.sur_cap_threshold == 40   # the default follows a lower target
    with pytest.raises(ValueError, match="setting 'max_rounds'"):
        envs.make("pasur", max_rounds=0)


def test_bad_decks():
    g = PasurGame()
    with pytest.raises(ValueError, match="got 51 cards"):
        g.new_state(0, deck=E1_DECK[:-1])
    with pytest.raises(ValueError, match="unknown cards: \\['ZZ'\\]"):
        g.new_state(0, deck=E1_DECK[:-1] + ["ZZ"])
    with pytest.raises(ValueError, match="too many copies of 7H"):
        g.new_state(0, deck=E1_DECK[:-1] + ["7H"])
    with pytest.raises(ValueError):
        envs.make("pasur").reset(seed=0, options={"deck": "7H AC"})


def test_illegal_actions_and_bad_text():
    st = PasurGame(skip_single_choice=False).new_state(5, deck=E1_DECK)
    with pytest.raises(IllegalActionError, match=r"illegal action 1 \(play 2C\) for player 1.*legal: 0 AC trails"):
        st.apply(1)
    with pytest.raises(IllegalActionError, match=r"illegal action 55 \(take 4C\)"):
        st.apply(55)
    with pytest.raises(IllegalActionError, match="outside 0..103"):
        st.apply(104)
    with pytest.raises(IllegalActionError, match="integer"):
        st.apply("7H")
    with pytest.raises(ValueError, match="'2C takes 9D' is not a legal action here; legal: AC trails"):
        st.parse_action("2C takes 9D")
    with pytest.raises(ValueError, match="not a legal action"):
        st.parse_action("take 4C")
    with pytest.raises(ValueError, match="not a legal action"):
        st.parse_action("7H takes 9D")
    for a in (32, 1, 0, 38, 23, 4, 43, 18):
        st.apply(a)
    with pytest.raises(IllegalActionError, match=r"legal: 56 take 5C, 95 take 5S"):
        st.apply(57)
    with pytest.raises(ValueError, match="not a legal action"):
        st.parse_action("6D")                    # in SELECT only TAKE steps are legal
    done = random_game(PasurGame(episode="deal"), seed=1)
    with pytest.raises(IllegalActionError, match="game is over"):
        done.apply(0)


# ----- the environment ---------------------------------------------------------------------------------------
def test_env_infos_at_round_end():
    env = envs.make("pasur", episode="deal")
    env.reset(seed=2)
    rng = random.Random(2)
    infos = None
    for agent in env.agent_iter(1000):
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            infos = info
            env.step(None)
            continue
        env.step(int(rng.choice(list(np.flatnonzero(obs["action_mask"])))))
    assert set(infos) == {"deal_points", "breakdown", "scores", "winners"}
    assert set(infos["breakdown"]) == {"cards", "clubs", "seven_clubs", "ten_diamonds", "two_clubs", "aces",
                                       "jacks", "surs", "sur_points", "card_points"}
    assert all(len(v) == 2 for v in infos["breakdown"].values())
