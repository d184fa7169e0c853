"""Pişti (docs/rules.md §1): scripted deals from exact decks, invariants over random deals, hidden information,
action text and bad input."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core import IllegalActionError
from kahve.envs.core.cards import card_str, parse_card
from kahve.envs.pishti import PishtiGame
from kahve.envs.pishti import appraisal
from kahve.envs.pishti.rules import MOVE_FEATURES, PishtiState
from tests.helpers import check_hidden_information, random_game

C = parse_card
ALL = [card_str(i) for i in range(52)]


def make_deck(pile, *hands, stock=()):
    """A full deck: the 4 pile cards, then the first packets in deal order (from next(dealer)), then ``stock``
    (top first); every other card is appended at the bottom in id order."""
    head = list(pile) + [c for h in hands for c in h] + list(stock)
    return head + [c for c in ALL if c not in head]


def play(state, *cards):
    for c in cards:
        assert state.current_player is not None
        state.apply(C(c))


def new(deck, **settings):
    settings.setdefault("players", 2)
    return PishtiGame(**settings).new_state(random.Random(0), deck)


# ----- the deal (§1a) ---------------------------------------------------------------------------------------
def test_deal_order_pile_then_hands_from_next_dealer():
    deck = make_deck(["2C", "3C", "4C", "5H"], ["6D", "7D", "8D", "9D"], ["6S", "7S", "8S", "9S"])
    st = new(deck)
    assert st.dealer == 0 and st.current_player == 1                  # C-2: next(dealer) starts
    assert st.hands[1] == [C(c) for c in ["6D", "7D", "8D", "9D"]]    # PI-7: the pile first, then hands
    assert st.hands[0] == [C(c) for c in ["6S", "7S", "8S", "9S"]]
    assert st.pile[-1] == C("5H") and st.pile_face_down == 3 and len(st.stock) == 40
    # the face-down cards are not in anyone's observation: only the top shows
    obs = st.observation(1)
    assert obs[52 + C("5H")] == 1 and obs[105 + C("2C")] == 0 and obs[105 + C("5H")] == 1


@pytest.mark.parametrize("seed", range(20))
def test_face_up_jack_is_buried_below_the_top_and_replaced(seed):
    # PI-6: JH turned up is buried at a random depth >= 1 in the rest; the rest's top card (QD) is turned up.
    deck = make_deck(["2C", "3C", "4C", "JH"], ["QD"])
    st = PishtiGame(players=2).new_state(random.Random(seed), deck)
    assert st.pile == [C("2C"), C("3C"), C("4C"), C("QD")]
    assert C("JH") not in st.pile
    rest_after = [c for h in (st.hands[1], st.hands[0]) for c in h] + st.stock[::-1]
    assert C("JH") in rest_after and len(rest_after) == 48
    assert st.seen[C("JH")] and st.buried_jacks == [C("JH")]
    # everyone saw the jack face up: it is in the "seen" block of a seat that does not hold it
    holder = next((p for p in range(2) if C("JH") in st.hands[p]), None)
    for seat in range(2):
        assert st.observation(seat)[159 + C("JH")] == (0 if seat == holder else 1)


def test_two_jacks_in_a_row_are_both_buried():
    deck = make_deck(["2C", "3C", "4C", "JH"], ["JD", "5S"])
    st = new(deck)
    assert st.pile[-1] == C("5S") and sorted(st.buried_jacks) == sorted([C("JH"), C("JD")])


def test_burial_depth_is_uniform_over_the_rest(monkeypatch):
    deck = make_deck(["2C", "3C", "4C", "JH"])
    rests = []                                  # the undealt rest, top first, as the first packets are dealt
    deal_packets = PishtiState._deal_packets

    def record(self):
        if self.hand_number == 0:
            rests.append(self.stock[::-1])
        deal_packets(self)

    monkeypatch.setattr(PishtiState, "_deal_packets", record)
    depths = []
    for seed in range(3000):
        PishtiGame(players=2).new_state(random.Random(seed), deck)
        depths.append(rests[-1].index(C("JH")))
    # positions 1..48 of the 48-card rest (0 is turned up) map to 0..47 after the top card left
    assert min(depths) == 0 and max(depths) == 47
    counts = np.bincount(depths, minlength=48)
    assert counts.min() > 20 and counts.max() < 110  # expected 62.5 each


# ----- captures and piştis (§1b, §1d) ----------------------------------------------------------------------
def opening(hand1, hand0, pile=("2C", "3C", "4C", "5H"), **settings):
    return new(make_deck(list(pile), hand1, hand0), **settings)


def test_pisti_and_no_pisti_on_the_opening_pile():
    st = opening(["5D", "8S", "KC", "KD"], ["8H", "QC", "QD", "QH"])
    play(st, "5D")                      # takes the opening 4-card pile: a capture, never a pişti (PI-5)
    assert st.captured[1] == [C(c) for c in ["2C", "3C", "4C", "5H", "5D"]] and st.pistis == [0, 0]
    assert st.captured_face_down == [0, 3] and st.last_capturer == 1
    play(st, "8H")                      # trails onto the empty pile
    assert st.pile == [C("8H")]
    play(st, "8S")                      # takes a lone card of the same rank: pişti
    assert st.pistis == [0, 1] and st.pisti_points == [0, 10]
    assert st.captured[1][-2:] == [C("8H"), C("8S")]


@pytest.mark.parametrize("jack_double,jack_on_jack,jack_on_five", [
    ("never", 10, 10), ("jack_on_jack", 20, 10), ("any_jack", 20, 20)])
def test_jack_pisti_values(jack_double, jack_on_jack, jack_on_five):
    # docs/rules.md §1g E2: JS takes a lone JH / a lone 5H
    st = opening(["5D", "JS", "KC", "KD"], ["JH", "QC", "QD", "QH"], jack_double=jack_double)
    play(st, "5D", "JH", "JS")
    assert st.pisti_points[1] == jack_on_jack
    st = opening(["5D", "JS", "KC", "KD"], ["5C", "QC", "QD", "QH"], pile=("2C", "3C", "4C", "5H"),
                 jack_double=jack_double)
    play(st, "5D", "5C")                # 5C trails onto the empty pile ... then JS takes it
    play(st, "JS")
    assert st.pisti_points[1] == jack_on_five


def test_jack_on_lone_card_traditional_rule_is_a_capture_without_pisti():
    st = opening(["5D", "JS", "KC", "KD"], ["5C", "QC", "QD", "QH"], jack_on_lone_card_is_pisti=False)
    play(st, "5D", "5C")
    assert st.describe_action(C("JS")) == "JS takes 1 card"
    play(st, "JS")
    assert st.pistis == [0, 0] and C("5C") in st.captured[1] and st.last_capturer == 1


@pytest.mark.parametrize("counts,jack_double,value", [(False, "jack_on_jack", None), (True, "jack_on_jack", 10),
                                                      (True, "any_jack", 20)])
def test_jack_on_empty_pile(counts, jack_double, value):
    # PI-4: with jack_on_empty_counts the jack takes itself and scores a pişti; otherwise it is trailed
    st = opening(["5D", "KS", "KC", "KD"], ["JC", "QC", "QD", "QH"], jack_on_empty_counts=counts,
                 jack_double=jack_double)
    play(st, "5D", "JC")
    if value is None:
        assert st.pile == [C("JC")] and st.pistis == [0, 0] and st.last_capturer == 1
    else:
        assert st.pile == [] and st.captured[0] == [C("JC")] and st.pisti_points[0] == value
        assert st.last_capturer == 0


def before_the_last_play(seeds):
    """Random 2-player deals played up to the dealer's 48th play, one per seed."""
    game = PishtiGame(players=2, episode="deal", skip_single_choice=False)
    for seed in seeds:
        rng = random.Random(seed)
        st = game.new_state(random.Random(seed))
        while st.play_number < 47:
            st.apply(rng.choice(st.legal_actions()))
        yield st


def test_no_pisti_on_the_48th_play_but_the_capture_counts():
    # PI-5 / §1g E3: search seeded deals for a 48th play that takes a lone card, then check it scores nothing
    found = 0
    for st in before_the_last_play(range(400)):
        if len(st.pile) != 1 or st.current_player != st.dealer:
            continue
        card = st.hands[st.dealer][0]
        if card % 13 not in (10, st.pile[0] % 13):
            continue
        before = list(st.pisti_points)
        lone = st.pile[0]
        assert "(pişti)" not in st.describe_action(card)
        st.apply(card)
        side = st.game.sides[st.dealer]
        assert st.pisti_points == before and st.terminal
        assert lone in st.captured[side] and card in st.captured[side]
        found += 1
    assert found >= 3


def test_leftover_pile_goes_to_the_last_capturer_without_pisti():
    checked = 0
    for st in before_the_last_play(range(60)):
        card = st.hands[st.current_player][0]
        top = st.pile[-1] if st.pile else None
        if top is None or card % 13 in (10, top % 13):
            continue                    # the last play captures: nothing left over
        pile, lc = st.pile + [card], st.last_capturer
        pistis = list(st.pistis)
        st.apply(card)
        assert all(c in st.captured[lc] for c in pile) and st.pistis == pistis
        checked += 1
    assert checked >= 20


# ----- scoring (§1d, §1g) -----------------------------------------------------------------------------------
def test_worked_example_e1_twenty_one_points():
    # A side takes 30 cards incl. 3 J, 2 A and TD with one ordinary pişti: 3 + 2 + 3 + 3 + 10 = 21,
    # and the other side's 22 cards score 13 - 8 = 5 card points.
    st = PishtiGame(players=2, episode="deal").new_state(random.Random(0))
    mine = [C(c) for c in ["JC", "JD", "JH", "AC", "AD", "TD"]]
    rest = [c for c in range(52) if c not in mine and c not in (C("JS"), C("AH"), C("AS"), C("2C"))]
    mine += rest[:24]
    theirs = [c for c in range(52) if c not in mine]
    st.hands = [[], []]
    st.stock, st.pile, st.pile_face_down = [], [], 0
    st.captured = [mine, theirs]
    st.captured_face_down = [0, 0]
    st.pistis, st.pisti_points = [1, 0], [10, 0]
    st.last_capturer = 0
    st._deal_end()
    assert st.deal_report["deal_points"] == [21, 5]
    assert st.deal_report["breakdown"]["cards"] == [30, 22]
    assert st.deal_report["breakdown"]["majority"] == [3, 0]


def test_partnership_scoring_shares_captures():
    game = PishtiGame(players=4, partnerships=True, episode="deal")
    st = random_game(game, seed=5)
    r = st.deal_report
    assert r["deal_points"][0] == r["deal_points"][2] and r["deal_points"][1] == r["deal_points"][3]
    assert len(st.captured) == 2 and sum(len(c) for c in st.captured) == 52
    # seats 1 and 3 are one side: a capture by seat 3 lands in side 1's pile
    st = game.new_state(random.Random(1))
    rng = random.Random(1)
    while st.current_player is not None:
        p = st.current_player
        before = len(st.captured[1])
        card = rng.choice(st.legal_actions())
        takes = bool(st.pile) and (card % 13 == 10 or card % 13 == st.pile[-1] % 13)
        st.apply(card)
        if p == 3 and takes and st.current_player is not None:
            assert len(st.captured[1]) > before
            break
    else:
        pytest.fail("seat 3 never captured")


@pytest.mark.parametrize("table", [dict(players=2), dict(players=4, partnerships=False),
                                   dict(players=4, partnerships=True)], ids=["2", "4alone", "4pairs"])
def test_invariants_over_random_deals(table):
    # I1-I4 over 2,000 random deals per table size
    game = PishtiGame(episode="deal", **table)
    majority_seen = tie_seen = 0
    for seed in range(2000):
        plays = []
        st = random_game(game, seed, on_state=lambda s: plays.append(s.play_number))
        assert st.play_number == 48 and len(plays) == 48 - (48 // 4 if game.settings.skip_single_choice else 0)
        assert not any(st.hands) and not st.stock and not st.pile
        assert sorted(c for cap in st.captured for c in cap) == list(range(52))
        b = st.deal_report["breakdown"]
        per_side = {game.sides[i]: i for i in range(game.num_players)}
        card_pts = sum(b["card_points"][i] for i in per_side.values())
        assert card_pts == 13
        without = sum(b["card_points"][i] + b["majority"][i] for i in per_side.values())
        assert without in (13, 16)
        counts = sorted((b["cards"][i] for i in per_side.values()), reverse=True)
        if counts.count(counts[0]) == 1:
            assert without == 16
            majority_seen += 1
        else:
            assert without == 13
            tie_seen += 1
        assert all(p % 10 == 0 and p >= 0 for p in b["pisti_points"])
    assert majority_seen > 0 and (tie_seen > 0 or game.num_sides == 2)


def test_variant_card_values_total_fifteen():
    game = PishtiGame(players=2, episode="deal", two_clubs_value=3, ten_diamonds_value=4)
    for seed in range(50):
        b = random_game(game, seed).deal_report["breakdown"]
        assert sum(b["card_points"]) == 15


def test_scores_never_go_down_and_match_ends_at_target():
    game = PishtiGame(players=2, target_score=101)
    for seed in range(20):
        totals = []
        st = random_game(game, seed, on_state=lambda s: totals.append(tuple(s.scores)))
        assert all(a <= b for x, y in zip(totals, totals[1:]) for a, b in zip(x, y))
        assert max(st.scores) >= 101 and st.terminal
        assert st.winners == [i for i in range(2) if st.scores[i] == max(st.scores)]
        assert len(st.winners) == 1    # extra_deal: never a shared win


def test_tie_rule_shared_win_and_extra_deal():
    game = PishtiGame(players=2, target_score=50, tie_rule="shared_win")
    st = game.new_state(random.Random(0))
    st.scores = [49, 49]
    st._end_deal([5, 5], {})
    assert st.terminal and st.winners == [0, 1] and st.returns == [0.0, 0.0]
    game = PishtiGame(players=2, target_score=50)
    st = game.new_state(random.Random(0))
    st.scores = [49, 49]
    st._end_deal([5, 5], {})
    assert not st.is_terminal          # a tie at the top plays one more deal


def test_truncation_at_max_deals():
    game = PishtiGame(players=2, target_score=500, max_deals=2)
    st = random_game(game, seed=3)
    assert st.truncated and not st.terminal and st.deals_completed == 2
    assert st.winners and sum(st.returns) == 0


def test_rewards_outcome_and_points_are_zero_sum():
    for reward in ("outcome", "points"):
        for table in (dict(players=2), dict(players=4, partnerships=False)):
            st = random_game(PishtiGame(reward=reward, target_score=60, **table), seed=9)
            assert abs(sum(st.returns)) < 1e-9
    st = random_game(PishtiGame(players=4, partnerships=False, target_score=60), seed=2)
    win = [st.returns[i] for i in st.winners]
    assert win == [1.0 / len(st.winners)] * len(st.winners)


# ----- env level: infos and exact decks ---------------------------------------------------------------------
def test_env_reset_with_deck_and_deal_infos():
    env = envs.make("pishti", players=2, episode="deal")
    deck = make_deck(["2C", "3C", "4C", "5H"], ["6D", "7D", "8D", "9D"], ["6S", "7S", "8S", "9S"])
    env.reset(seed=0, options={"deck": deck})
    assert env.agent_selection == "player_1"
    assert np.flatnonzero(env.observe("player_1")["action_mask"]).tolist() == sorted(C(c) for c in deck[4:8])
    assert not env.observe("player_0")["action_mask"].any()
    rng = random.Random(0)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        if term or trunc:
            assert set(info) == {"deal_points", "breakdown", "scores", "winners"}
            env.step(None)
            continue
        assert info == {}
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))


# ----- the observation's move rows (envs/pishti/appraisal.py) ---------------------------------------------
def move_rows(state, seat):
    return state.observation(seat)[-52 * MOVE_FEATURES:].reshape(52, MOVE_FEATURES) * appraisal.FEATURE_SCALE


def test_move_rows_say_what_a_card_takes_and_risks():
    st = opening(["5D", "8S", "KC", "KD"], ["8H", "QC", "QD", "QH"])
    rows = move_rows(st, 1)
    assert np.flatnonzero(np.abs(rows).sum(axis=1)).tolist() == sorted(C(c) for c in ["5D", "8S", "KC", "KD"])
    assert move_rows(st, 0).sum() == 0.0                   # only the player to act reads them
    take = rows[C("5D")]                                    # takes the opening pile: 5 cards, no pişti (PI-5)
    assert take[appraisal.F_CAPTURE] == 1 and take[appraisal.F_PISTI] == 0
    assert take[appraisal.F_CARDS] == pytest.approx(5) and take[appraisal.F_TAKEN] > 5 * appraisal.CARD_BONUS
    assert rows[C("KC")][appraisal.F_CAPTURE] == 0 and rows[C("KC")][appraisal.F_THREAT] > 0
    play(st, "5D")
    rows = move_rows(st, 0)                                 # onto the empty pile: the next player may pişti it
    # three eights are live for seat 0 (8S is in the other hand), one queen (QS): the eight is the riskier trail
    assert rows[C("8H")][appraisal.F_THREAT] > rows[C("QC")][appraisal.F_THREAT] + 0.5 > 0.5  # (jacks: both)
    assert rows[C("8H")][appraisal.F_TRAILED] == pytest.approx(appraisal.CARD_BONUS)
    play(st, "8H")
    rows = move_rows(st, 1)
    assert rows[C("8S")][appraisal.F_PISTI] == pytest.approx(10) and rows[C("8S")][appraisal.F_CARDS] == 2
    assert rows[C("KC")][appraisal.F_PISTI] == 0


@pytest.mark.parametrize("jack_double, value", [("never", 10), ("any_jack", 20)])
def test_move_row_of_a_jack_pisti_follows_the_settings(jack_double, value):
    st = opening(["5D", "JS", "KC", "KD"], ["8H", "QC", "QD", "QH"], jack_double=jack_double)
    play(st, "5D", "8H")
    assert move_rows(st, 1)[C("JS")][appraisal.F_PISTI] == pytest.approx(value)


def test_move_rows_at_the_last_play_give_the_pile_to_the_last_capturer():
    checked = 0
    for st in before_the_last_play(range(60)):
        card = st.hands[st.current_player][0]
        if not st.pile or card % 13 in (10, st.pile[-1] % 13):
            continue                                        # the last play captures: nothing left over
        row = move_rows(st, st.current_player)[card]
        mine = st.last_capturer == st.game.sides[st.current_player]
        assert (row[appraisal.F_LEFTOVER] > 0) == mine and row[appraisal.F_THREAT] == 0
        checked += 1
    assert checked >= 20


# ----- hidden information (C-8, PI-11) ---------------------------------------------------------------------
@pytest.mark.parametrize("table", [dict(players=2), dict(players=4, partnerships=True)])
def test_determinize_keeps_every_observation(table):
    game = PishtiGame(episode="deal", **table)
    rng = random.Random(0)
    changed = []
    for seed in range(25):
        random_game(game, seed, on_state=lambda s: changed.append(check_hidden_information(s, rng, tries=1))
                    if s.play_number % 7 == 0 else None)
    assert sum(changed) > len(changed) // 2


def test_face_down_pile_cards_stay_hidden_after_capture():
    # PI-11: capturing the opening pile shows only the count of its 3 face-down cards
    a = opening(["5D", "8S", "KC", "KD"], ["8H", "QC", "QD", "QH"], pile=("2C", "3C", "4C", "5H"))
    b = opening(["5D", "8S", "KC", "KD"], ["8H", "QC", "QD", "QH"], pile=("AS", "TD", "2C", "5H"))
    play(a, "5D")
    play(b, "5D")
    for seat in range(2):
        assert np.array_equal(a.observation(seat), b.observation(seat))


# ----- action text ------------------------------------------------------------------------------------------
def test_describe_and_parse_round_trip():
    st = opening(["5D", "8S", "KC", "TD"], ["8H", "QC", "QD", "QH"])
    assert st.describe_action(C("5D")) == "5D takes 4 cards"
    assert st.describe_action(C("KC")) == "KC"
    assert st.parse_action("10d") == C("TD") and st.parse_action("T♦") == C("TD")
    assert st.parse_action("5D takes 4 cards") == C("5D") and st.parse_action("play 5D") == C("5D")
    play(st, "5D", "8H")
    assert st.describe_action(C("8S")) == "8S takes 1 card (pişti)"
    game = PishtiGame(players=4, partnerships=False, episode="deal")
    for seed in range(10):
        random_game(game, seed, on_state=lambda s: [
            (lambda a: (s.parse_action(s.describe_action(a)) == a) or pytest.fail(s.describe_action(a)))(a)
            for a in s.legal_actions()])


# ----- bad input --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("settings,match", [
    (dict(target_scor=100), "unknown setting 'target_scor'.*did you mean 'target_score'"),
    (dict(target_score=49), "setting 'target_score': 49 is not allowed; allowed: an integer from 50 to 500"),
    (dict(jack_pisti_value=12), "steps of 5"),
    (dict(players=3), "setting 'players': 3.*one of 2, 4"),
    (dict(jack_double="sometimes"), "'never', 'jack_on_jack', 'any_jack'"),
    (dict(jack_on_empty_counts="yes"), "True or False"),
    (dict(players=2, partnerships=True), "partnerships need 4 players"),
    (dict(players=2, first_dealer=2), "first_dealer.*below 2"),
    (dict(episode="round"), "'match', 'deal'"),
])
def test_bad_settings(settings, match):
    with pytest.raises(ValueError, match=match):
        envs.make("pishti", **settings)


@pytest.mark.parametrize("deck,match", [
    (ALL[:51], "got 51 cards.*missing KS"),
    (ALL[:51] + ["AC"], "too many copies of AC"),
    (ALL[:51] + ["1X"], "unknown cards: \\['1X'\\]"),
    ("AC 2C", "list of card strings"),
])
def test_bad_decks(deck, match):
    env = envs.make("pishti", players=2)
    with pytest.raises(ValueError, match=match):
        env.reset(seed=0, options={"deck": deck})


def test_illegal_action_names_it_and_the_legal_ones():
    env = envs.make("pishti", players=2)
    deck = make_deck(["2C", "3C", "4C", "5H"], ["6D", "7D", "8D", "9D"], ["6S", "7S", "8S", "9S"])
    env.reset(seed=0, options={"deck": deck})
    state_before = env.unwrapped.state.to_dict()
    with pytest.raises(IllegalActionError, match=r"illegal action 45 \(7S\) for player 1.*legal: 18 6D, 19 7D"):
        env.step(C("7S"))
    with pytest.raises(IllegalActionError, match="outside 0..51"):
        env.step(60)
    with pytest.raises(IllegalActionError, match="integer"):
        env.step("6D")
    assert env.unwrapped.state.to_dict() == state_before        # nothing lost
    with pytest.raises(ValueError, match="not a legal action here; legal: 6D; 7D; 8D; 9D"):
        env.unwrapped.parse_action("KS")
    with pytest.raises(ValueError, match="not a card"):
        parse_card("ZZ")
