"""Ish (docs/rules.md §5): results, scripted rounds from exact decks, payouts, void rounds, reaction-time tie-breaks,
eliminations and match end, invariants over random rounds, the analytic optimum of §5e by simulation, hidden
information, action text and bad input."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core import IllegalActionError
from kahve.envs.ish import IshGame
from kahve.envs.ish.rules import CROWN, RESULT, card_str, parse_card, result_of
from tests.helpers import check_hidden_information, random_env_episode, random_game

C = parse_card
ALL = [card_str(i) for i in range(40)]
L = 10                                   # default bet_levels
NO_CALL, CALL = L + 40, L + 41           # default action ids (§5g)


def make_deck(*hands):
    """A 40-card deck for auto selection: ``hands`` in seat order from next(dealer); the player at position i
    of m takes slots i and m + i. The other cards follow in id order."""
    m = len(hands)
    head = [None] * (2 * m)
    for i, (a, b) in enumerate(hands):
        head[i], head[m + i] = a, b
    return head + [c for c in ALL if c not in head]


def new(deck=None, seed=0, **settings):
    settings.setdefault("players", 4)
    return IshGame(**settings).new_state(random.Random(seed), deck)


def bet_all(state, levels):
    """Stake ``levels[seat]`` for every seat, in the order the engine asks."""
    while state.phase == 0:
        state.apply(levels[state.current_player])


def random_states(game, seed, max_steps):
    """Up to ``max_steps`` decision states of one random episode (the episode need not end)."""
    rng = random.Random(seed)
    st = game.new_state(random.Random(seed))
    for _ in range(max_steps):
        if st.current_player is None:
            return
        yield st
        st.apply(rng.choice(st.legal_actions()))


def call_all(state, callers):
    """CALL for the seats in ``callers``, NO_CALL for the others."""
    g = state.game
    while state.phase == 2 and state.current_player is not None:
        state.apply(g.call if state.current_player in callers else g.no_call)


# ----- results (§5a, §5f) -----------------------------------------------------------------------------------
@pytest.mark.parametrize("a,b,want", [("12R", "4N", 4), ("8S", "6R", 2), ("12R", "12S", 12), ("0R", "0N", 0),
                                      ("0S", "12N", 12), ("1R", "11R", 12), ("1N", "12S", 1)])
def test_results_of_5f(a, b, want):
    assert result_of(C(a), C(b)) == want == result_of(C(b), C(a))
    # and the same through a round: the first player to act holds (a, b)
    st = new(make_deck((a, b), ("0R", "0N") if {a, b} & {"0R", "0N"} == set() else ("1S", "1N"),
                       ("2S", "3S"), ("4S", "5S")))
    bet_all(st, [0] * 4)
    assert st.results[1] == want


def test_result_distribution_by_enumeration():
    """§5f: over the 741 pairs of non-Crown cards, 0 has 3 pairs, each odd value 63, each even 2..12 60."""
    counts = Counter(RESULT[a][b] for a in range(39) for b in range(a + 1, 39))
    assert sum(counts.values()) == 741
    assert counts[0] == 3
    assert all(counts[v] == 63 for v in range(1, 13, 2))
    assert all(counts[v] == 60 for v in range(2, 13, 2))
    assert all(RESULT[CROWN][b] == 13 for b in range(39))


def test_card_text():
    assert [card_str(i) for i in (0, 12, 13, 26, 38, 39)] == ["0R", "12R", "0N", "0S", "12S", "CR"]
    assert C("12r") == 12 and C("cr") == 39 and C("Crown") == 39 and C(" 5N ") == 18 and C(7) == 7
    for bad in ("13R", "5X", "12", "R", "05R", "", "CRR", 40, -1, True, None, 2.0):
        with pytest.raises(ValueError):
            C(bad)


# ----- one round as a state machine (§5b) --------------------------------------------------------------------
def test_round_order_auto_selection_and_reveal():
    deck = make_deck(("12R", "4N"), ("8S", "6R"), ("CR", "3S"), ("0R", "0N"))
    st = new(deck)
    assert st.dealer == 0 and st.order == [1, 2, 3, 0]                     # C-2: next(dealer) first
    seen = []
    while st.phase == 0:                                                    # BET in seat order
        seen.append(st.current_player)
        assert st.legal_actions() == list(range(L))
        st.apply(0)
    assert seen == [1, 2, 3, 0]
    # SELECT was forced (auto): two passes, lowest free slot; REVEAL done; CALL from next(dealer)
    assert st.phase == 2 and st.current_player == 1
    assert st.picks == [[3, 7], [0, 4], [1, 5], [2, 6]]
    d = st.to_dict()
    assert d["hands"] == [["0R", "0N"], ["12R", "4N"], ["8S", "6R"], ["CR", "3S"]]
    assert d["results"] == [0, 4, 2, "CR"] and d["eligible"] == [3]
    assert st.legal_actions() == [NO_CALL, CALL]
    json.dumps(d)


def test_agent_selection_is_a_decision_in_seat_order():
    st = new(players=3, card_selection="agent")
    bet_all(st, [0] * 3)
    assert st.phase == 1
    movers = []
    slots = [39, 0, 17, 5, 38, 1]
    for slot in slots:
        movers.append(st.current_player)
        assert L + slot in st.legal_actions()
        st.apply(L + slot)
    assert movers == [1, 2, 0, 1, 2, 0]
    assert st.picks == [[17, 1], [39, 5], [0, 38]]
    assert st.phase == 2 and all(st.results[p] == RESULT[st.slots[a]][st.slots[b]]
                                 for p, (a, b) in enumerate(st.picks))
    with pytest.raises(IllegalActionError):
        st2 = new(players=3, card_selection="agent")
        bet_all(st2, [0] * 3)
        st2.apply(L + 7)
        st2.apply(L + 7)                                                   # slot already taken


# ----- the Crown, void rounds, reaction times (IS-1..IS-3) ------------------------------------------------
@pytest.mark.parametrize("seed", range(10))
def test_crown_wins_outright(seed):
    deck = make_deck(("12R", "12S"), ("CR", "0R"), ("6R", "6N"), ("1S", "2S"))   # 12 against the Crown
    st = new(deck, seed=seed)
    bet_all(st, [1, 2, 3, 4])
    assert st.results[2] == 13 and st.results[1] == 12 and st.eligible == [False, False, True, False]
    assert st.current_player == 1 and st.describe_action(CALL) == "call Paoy"
    st.apply(CALL)
    assert st.describe_action(CALL) == "call Kath"                         # the Crown holder shouts Kath
    call_all(st, {2, 3, 0})
    rep = st.deal_report
    assert rep["breakdown"]["winner"] == 2 and not rep["breakdown"]["void"]
    assert rep["deal_points"] == [-2, -3, 2 + 3 + 5, -5]                    # pot: stakes 2, 3, 4, 5


def test_crown_holder_must_call_or_the_round_is_void():
    deck = make_deck(("12R", "12S"), ("CR", "0R"), ("6R", "6N"), ("1S", "2S"))
    st = new(deck)
    bet_all(st, [9] * 4)
    call_all(st, {1, 3, 0})                                                # everyone but the Crown holder
    assert st.deal_report["breakdown"]["void"] and st.deal_report["deal_points"] == [0] * 4
    # with crown_must_call=False the Crown holder wins without calling
    st = new(deck, crown_must_call=False)
    bet_all(st, [9] * 4)
    call_all(st, set())
    assert st.deal_report["breakdown"]["winner"] == 2 and st.deal_report["deal_points"] == [-10, -10, 30, -10]


def test_void_round_refunds_every_stake_and_fine():
    deck = make_deck(("12R", "4N"), ("8S", "6R"), ("5R", "6S"), ("0R", "0N"))   # 11 is the highest: seat 3
    st = new(deck, false_call_fine=5)
    bet_all(st, [2, 5, 7, 9])
    assert st.eligible == [False, False, False, True]
    call_all(st, {0, 1, 2})                                                # wrong calls, the eligible one silent
    b = st.deal_report["breakdown"]
    assert b["void"] and b["winner"] is None and b["fines"] == [0] * 4
    assert st.deal_report["deal_points"] == [0] * 4 and st.bankroll == [100] * 4 and st.rewards == [0.0] * 4
    assert st.deal_report["scores"] == [0] * 4
    assert b["stakes"] == [3, 6, 8, 10] and st.deals_completed == 1 and st.phase == 0   # the next round begins


def test_false_call_fine_goes_to_the_winner_capped_by_the_bankroll():
    deck = make_deck(("12R", "4N"), ("8S", "6R"), ("5R", "6S"), ("0R", "0N"))
    st = new(deck, false_call_fine=5, bankroll=12, max_bet=10)
    bet_all(st, [0, 9, 0, 0])                                              # seat 1 stakes 10 of 12: fine capped at 2
    call_all(st, {0, 1, 2, 3})
    b = st.deal_report["breakdown"]
    assert b["winner"] == 3 and b["fines"] == [5, 2, 5, 0]
    assert st.deal_report["deal_points"] == [-6, -12, -6, 24]
    # with the default fine 0 wrong calls are ignored (IS-7)
    st = new(deck)
    bet_all(st, [0] * 4)
    call_all(st, {0, 1, 2, 3})
    assert st.deal_report["deal_points"] == [-1, -1, -1, 3]


@pytest.mark.parametrize("seed", range(20))
def test_tie_goes_to_the_smallest_reaction_time(seed):
    deck = make_deck(("12R", "0N"), ("8S", "6R"), ("0S", "12N"), ("0R", "1N"))   # seats 1 and 3 tie on 12
    st = new(deck, seed=seed)
    bet_all(st, [0] * 4)
    assert st.eligible == [False, True, False, True]
    call_all(st, {0, 1, 2, 3})
    b = st.deal_report["breakdown"]
    taus = b["reaction_times"]
    assert taus[0] is None and taus[2] is None and 0 <= taus[1] < 1 and 0 <= taus[3] < 1
    assert b["winner"] == (1 if taus[1] < taus[3] else 3)


def test_reaction_times_follow_the_reflex_scales():
    deck = make_deck(("12R", "0N"), ("8S", "6R"), ("0S", "12N"), ("0R", "1N"))
    wins = Counter()
    for seed in range(400):                                                # equal reflexes: a fair coin
        st = new(deck, seed=seed)
        bet_all(st, [0] * 4)
        call_all(st, {1, 3})
        wins[st.deal_report["breakdown"]["winner"]] += 1
    assert set(wins) == {1, 3} and abs(wins[1] - 200) < 4 * math.sqrt(100)
    for seed in range(50):                                                 # seat 3 is a million times faster
        st = new(deck, seed=seed, reflex=[1, 1, 1, 1e-6])
        bet_all(st, [0] * 4)
        call_all(st, {1, 3})
        assert st.deal_report["breakdown"]["winner"] == 3
    # only one of the tied players calls: that one wins, no draw needed against a silent rival
    st = new(deck, reflex=[1, 1, 1, 1e-6])
    bet_all(st, [0] * 4)
    call_all(st, {1})
    assert st.deal_report["breakdown"]["winner"] == 1


# ----- payouts (IS-6) ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("payout,want", [("pot", [-3, -5, -10, 18]), ("matched", [-1, -1, -1, 3])])
def test_payouts(payout, want):
    deck = make_deck(("12R", "4N"), ("8S", "6R"), ("5R", "6S"), ("0R", "0N"))   # seat 3 wins with 11
    st = new(deck, payout=payout)
    bet_all(st, [2, 4, 9, 0])                                              # stakes 3, 5, 10, 1
    call_all(st, {3})
    assert st.deal_report["deal_points"] == want
    assert st.rewards == [float(x) for x in want]                          # reward="chips"
    assert st.bankroll == [100 + x for x in want] and st.scores == want


def test_matched_payout_with_a_large_winning_stake():
    deck = make_deck(("12R", "4N"), ("8S", "6R"), ("5R", "6S"), ("0R", "0N"))
    st = new(deck, payout="matched")
    bet_all(st, [2, 4, 0, 6])                                              # the winner (seat 3) stakes 7
    call_all(st, {3})
    assert st.deal_report["deal_points"] == [-3, -5, -1, 9]


# ----- the stake ladder (§5g) --------------------------------------------------------------------------------
def test_stake_ladder_rounding_duplicates_and_bankroll_cap():
    assert IshGame().stakes == list(range(1, 11))
    assert IshGame(min_bet=5, max_bet=50, bet_levels=4).stakes == [5, 20, 35, 50]
    g = IshGame(min_bet=1, max_bet=3, bet_levels=5)                        # 1, 1.5, 2, 2.5, 3 rounded half up
    assert g.stakes == [1, 2, 2, 3, 3]
    st = g.new_state(0)
    texts = [st.describe_action(a) for a in st.legal_actions()]
    assert texts == ["bet 1", "bet 2 (level 1)", "bet 2 (level 2)", "bet 3 (level 3)", "bet 3 (level 4)"]
    assert [st.parse_action(t) for t in texts] == [0, 1, 2, 3, 4]
    assert st.parse_action("bet 2") == 1 and st.parse_action("level 2") == 2
    # a bankroll below a stake removes it; one affordable level is played by the engine (C-4)
    st = new(bankroll=4, players=2)
    assert st.legal_actions() == [0, 1, 2, 3]
    st = new(bankroll=1, players=2, false_call_fine=1)
    assert st.phase == 2                                                   # both bets were forced
    assert st.stakes == [1, 1]
    st = new(bankroll=1, players=2, skip_single_choice=False)
    assert st.phase == 0 and st.legal_actions() == [0]


# ----- eliminations, dealer rotation, match end (END) -------------------------------------------------------
def test_broke_player_is_out_and_skipped():
    deck = make_deck(("12R", "4N"), ("8S", "6R"), ("5R", "6S"), ("0R", "0N"))   # seat 3 wins with 11
    st = new(deck, bankroll=10, min_bet=2, max_bet=10, bet_levels=9)       # stakes 2..10
    bet_all(st, [0, 8, 4, 0])                                              # seat 1 stakes all 10
    call_all(st, {3})
    assert st.out == [False, True, False, False] and st.bankroll == [8, 0, 4, 28]
    assert st.deal_report["breakdown"]["eliminated"] == [1] and not st.is_terminal
    assert st.dealer == 2 and st.order == [3, 0, 2]                         # dealer skips seat 1 (out), too
    assert st.current_player == 3
    obs = st.observation(0)
    assert obs[3 + 5 * 1 + 1] == 0 and obs[3 + 5 * 1] == 0                   # seat 1: not in, no chips
    assert obs[385] == pytest.approx(3 / 20)
    bet_all(st, [1, 1, 1, 1])                                              # level 1: stake 3
    assert st.stakes == [3, 0, 3, 3]


def test_match_ends_when_one_player_is_left():
    deck = make_deck(("12R", "4N"), ("0R", "0N"))
    st = new(deck, players=2, bankroll=3, max_bet=3, bet_levels=3, reward="outcome")
    bet_all(st, [2, 2])
    call_all(st, {0, 1})                                                   # seat 1 (4) beats seat 0 (0)
    assert st.terminal and not st.truncated and st.winners == [1]
    assert st.rewards == [-1.0, 1.0] and st.returns == [-1.0, 1.0]
    assert st.deal_report["winners"] == [1] and st.out == [True, False] and st.legal_actions() == []
    with pytest.raises(IllegalActionError, match="over"):
        st.apply(0)


def test_truncation_picks_the_highest_bankroll():
    g = IshGame(players=3, max_rounds=3, reward="outcome")
    st = random_game(g, 4)
    assert st.truncated and not st.terminal and st.deals_completed == 3
    best = max(st.bankroll)
    assert st.winners == [p for p in range(3) if st.bankroll[p] == best]
    assert abs(sum(st.returns)) < 1e-9
    for p in range(3):
        assert st.returns[p] > 0 if p in st.winners else st.returns[p] == pytest.approx(-0.5)


def test_outcome_rewards_reach_eliminated_agents_and_sum_to_zero():
    """Through the AEC env: a broke agent is terminated while the others play on, and it has received its
    outcome reward −1/(N−1) before it leaves; all rewards are zero-sum."""
    n = 5
    eliminated_mid_game = 0
    for seed in range(6):
        env = envs.make("ish", players=n, bankroll=4, min_bet=1, max_bet=4, bet_levels=4, reward="outcome")
        env.reset(seed=seed)
        rng = random.Random(seed)
        got = {a: 0.0 for a in env.possible_agents}
        for agent in env.agent_iter(100_000):
            obs, reward, term, trunc, _ = env.last()
            got[agent] += reward
            if term or trunc:
                if term and len(env.agents) > 1 and any(
                        not (env.terminations[a] or env.truncations[a]) for a in env.agents):
                    eliminated_mid_game += 1
                    assert got[agent] == pytest.approx(-1 / (n - 1))
                env.step(None)
                continue
            env.step(int(rng.choice(list(np.flatnonzero(obs["action_mask"])))))
        assert abs(sum(got.values())) < 1e-9
        assert max(got.values()) > 0
    assert eliminated_mid_game > 0


def test_chips_rewards_through_the_env_equal_bankroll_changes():
    env = envs.make("ish", players=3, bankroll=6, max_bet=6, bet_levels=6)
    totals, _ = random_env_episode(env, seed=2)
    st = env.unwrapped.state
    assert [totals[f"player_{p}"] for p in range(3)] == [b - 6 for b in st.bankroll]
    assert sum(st.bankroll) == 18


# ----- invariants over random rounds (§5f) -------------------------------------------------------------------
@pytest.mark.parametrize("settings", [
    dict(players=4),
    dict(players=2, payout="matched"),
    dict(players=7, card_selection="agent", false_call_fine=4, crown_must_call=False),
    dict(players=20, payout="matched", false_call_fine=10, reflex=[0.5 + i / 10 for i in range(20)]),
])
def test_invariants_over_random_rounds(settings):
    g = IshGame(episode="deal", **settings)
    n = g.num_players
    crowns = 0
    for seed in range(2000 if n < 20 else 400):
        st = random_game(g, seed)
        d, b = st.deal_report, st.deal_report["breakdown"]
        deltas = d["deal_points"]
        assert sum(deltas) == 0                                            # chips conserved (fines too)
        assert st.rewards == [float(x) for x in deltas] == st.returns
        assert sorted(c for h in st.to_dict()["hands"] for c in h) == sorted(
            st.to_dict()["slots"][k] for p in st.picks for k in p)
        assert all(len(p) == 2 for p in st.picks) and len({k for p in st.picks for k in p}) == 2 * n
        res = b["results"]
        crowns += "CR" in res
        top = "CR" if "CR" in res else max(res)
        assert b["eligible"] == [p for p in st.order if res[p] == top]
        if b["void"]:
            assert deltas == [0] * n and b["fines"] == [0] * n
        else:
            w = b["winner"]
            assert w in b["eligible"] and (b["calls"][w] or (res[w] == "CR" and not g.settings.crown_must_call))
            assert b["reaction_times"][w] == min(t for t in b["reaction_times"] if t is not None)
            for p in range(n):
                if p == w:
                    continue
                if g.settings.payout == "pot":
                    assert deltas[p] == -b["stakes"][p] - b["fines"][p]
                else:
                    assert deltas[p] == -min(b["stakes"][p], b["stakes"][w]) - b["fines"][p]
        assert st.winners == [p for p in range(n) if deltas[p] == max(deltas)]
    if n == 20:
        assert crowns == 400                                               # 40 cards for 20 players: always


def test_crown_frequency_is_n_over_20():
    g = IshGame(players=6, episode="deal")
    rounds = 3000
    hits = sum("CR" in random_game(g, s).deal_report["breakdown"]["results"] for s in range(rounds))
    p = 6 / 20
    assert abs(hits / rounds - p) < 4 * math.sqrt(p * (1 - p) / rounds)


def test_bankrolls_conserved_and_dealer_active_over_random_matches():
    for seed in range(30):
        g = IshGame(players=2 + seed % 6, bankroll=8, min_bet=2, max_bet=8, bet_levels=4,
                    false_call_fine=seed % 3, payout=("pot", "matched")[seed % 2], first_dealer="random")
        n = g.num_players

        def check(st):
            assert sum(st.bankroll) == 8 * n
            assert not st.out[st.dealer] and not st.out[st.current_player]
            assert all(st.bankroll[p] < 2 for p in range(n) if st.out[p])
            assert st.bankroll == [8 + x for x in st.scores]

        st = random_game(g, seed, on_state=check)
        assert sum(st.bankroll) == 8 * n
        if st.terminal:
            assert st.winners == [p for p in range(n) if not st.out[p]] and len(st.winners) == 1


# ----- the optimum of §5e by simulation ----------------------------------------------------------------------
def _policy_gain(payout: str, my_level: int, rounds: int = 3000, seed: int = 0):
    """Mean chip change of seat 1 (first to act) staking ``my_level`` against three opponents staking 10,
    everyone calling exactly when eligible; returns (mean, half-width of the 95% interval)."""
    g = IshGame(players=4, payout=payout, episode="deal")
    gains = []
    for r in range(rounds):
        st = g.new_state(random.Random(seed * 1_000_003 + r))
        while st.current_player is not None:
            p = st.current_player
            if st.phase == 0:
                st.apply(my_level if p == 1 else 9)
            else:
                st.apply(g.call if st.eligible[p] else g.no_call)
        gains.append(st.returns[1])
    mean = sum(gains) / rounds
    sd = math.sqrt(sum((x - mean) ** 2 for x in gains) / (rounds - 1))
    return mean, 1.96 * sd / math.sqrt(rounds)


def test_minimum_stake_gains_6_75_a_round_with_the_pot_payout():
    """§5e: (1 + 30)/4 − 1 = +6.75 chips a round against three stakes of 10."""
    mean, half = _policy_gain("pot", 0)
    assert mean - half <= 6.75 <= mean + half
    assert mean - half > 0
    mean, half = _policy_gain("pot", 9, rounds=1500)                     # matching the stakes gains nothing
    assert mean - half <= 0 <= mean + half


@pytest.mark.parametrize("level", [0, 9])
def test_no_stake_gains_with_the_matched_payout(level):
    mean, half = _policy_gain("matched", level, rounds=2000, seed=1)
    assert mean - half <= 0 <= mean + half


# ----- observation (§5h) and hidden information (IS-5, calls) ---------------------------------------------
@pytest.mark.parametrize("players", [2, 4, 20])
def test_observation_layout(players):
    g = IshGame(players=players)
    env = envs.make("ish", players=players)
    assert env.observation_space("player_0")["observation"].shape == (386,)
    assert env.action_space("player_0").n == 52 and len(env.possible_agents) == players
    st = g.new_state(3)
    st.apply(4)                                                            # first to act (seat 1) stakes 5
    obs = st.observation(1)
    assert obs.shape == (386,) and obs.dtype == np.float32
    assert list(obs[:3]) == [1, 0, 0]                                      # BET
    assert list(obs[3:8]) == pytest.approx([100 / (100 * players), 1, 0.5, 1, 0])  # self first
    dealer_block = 3 + 5 * ((0 - 1) % players)
    assert obs[dealer_block + 4] == 1 and obs[dealer_block + 3] == 0
    assert not obs[3 + 5 * players:103].any()                              # padding to 20 seats
    assert not obs[103:384].any()                                          # no result before REVEAL
    assert obs[384] == 0 and obs[385] == pytest.approx(players / 20)
    # at the reveal: my result first, padding stays empty, eligibility bit matches
    while st.phase == 0:
        st.apply(0)
    for seat in range(players):
        obs = st.observation(seat)
        assert list(obs[:3]) == [0, 0, 1]
        for k in range(players):
            p = (seat + k) % players
            block = obs[103 + 14 * k:117 + 14 * k]
            assert block.sum() == 1 and block[st.results[p]] == 1
        assert not obs[103 + 14 * players:383].any()
        assert obs[383] == st.eligible[seat]
        assert obs.min() >= 0 and obs.max() <= 1


@pytest.mark.parametrize("selection", ["auto", "agent"])
def test_no_card_is_visible_before_the_reveal(selection):
    """IS-5: two decks that differ everywhere give every seat the same observations until REVEAL, including
    while it holds its own cards face down."""
    deck_a = ALL[:]
    deck_b = ALL[::-1]
    a = new(deck_a, seed=5, card_selection=selection)
    b = new(deck_b, seed=5, card_selection=selection)
    steps = 0
    while a.phase in (0, 1):
        for seat in range(4):
            assert np.array_equal(a.observation(seat), b.observation(seat))
        assert a.legal_actions() == b.legal_actions() and a.current_player == b.current_player
        act = a.legal_actions()[steps % len(a.legal_actions())]
        a.apply(act)
        b.apply(act)
        steps += 1
    assert steps == (4 if selection == "auto" else 12)
    assert a.results != b.results
    assert any(not np.array_equal(a.observation(s), b.observation(s)) for s in range(4))


def test_no_call_is_visible_before_resolution():
    st = new(make_deck(("12R", "4N"), ("8S", "6R"), ("5R", "6S"), ("0R", "0N")))
    bet_all(st, [0] * 4)
    called, silent = st.clone(), st.clone()
    called.apply(CALL)                                                     # seat 1 calls in one copy only
    silent.apply(NO_CALL)
    for _ in range(2):                                                     # and seat 2 too, later
        for seat in range(4):
            assert np.array_equal(called.observation(seat), silent.observation(seat))
        assert called.legal_actions() == silent.legal_actions()
        for s in (called, silent):
            s.apply(CALL if s is called else NO_CALL)
    assert called.calls[1] is True and silent.calls[1] is False
    # the render for another seat does not tell a call from silence either
    assert called.current_player == 0 and called.render(0) == silent.render(0)
    assert "call" in called.render(1).split("\n")[3] and "silent" in silent.render(1).split("\n")[3]


@pytest.mark.parametrize("settings", [dict(players=4), dict(players=3, card_selection="agent"),
                                      dict(players=20), dict(players=2, bankroll=3, max_bet=3, bet_levels=3)])
def test_determinize_keeps_every_observation(settings):
    g = IshGame(**settings)
    rng = random.Random(0)
    changed = []
    phases = set()

    for seed in range(6):
        for st in random_states(g, seed, 300 if g.num_players < 20 else 120):
            if rng.random() < 0.3:
                phases.add(st.phase)
                changed.append(check_hidden_information(st, rng, tries=2))
    assert any(changed) and len(changed) > 20
    assert phases == ({0, 1, 2} if g.settings.card_selection == "agent" else {0, 2})


def test_determinize_redeals_cards_and_hidden_calls():
    st = new(seed=2)
    bet_all(st, [0] * 4)
    st.apply(CALL)
    st.apply(CALL)                                                         # seats 1, 2 called; seat 3 to move
    rng = random.Random(1)
    calls, slots = set(), set()
    for _ in range(40):
        d = st.determinize(3, rng)
        assert d.results == st.results and d.picks == st.picks and d.calls[3] is None
        calls.add((d.calls[1], d.calls[2]))
        slots.add(tuple(d.slots))
        assert [d.slots[k] for p in d.picks for k in p] == [st.slots[k] for p in st.picks for k in p]
    assert len(calls) == 4 and len(slots) > 1
    d = new(seed=2).determinize(0, rng)                                    # before REVEAL: every card moves
    assert d.slots != new(seed=2).slots


# ----- action text ------------------------------------------------------------------------------------------
def test_describe_and_parse_round_trip():
    for settings in (dict(players=3, card_selection="agent"), dict(players=2, min_bet=2, max_bet=5, bet_levels=7)):
        g = IshGame(**settings)

        for seed in range(2):
            for st in random_states(g, seed, 150):
                for a in st.legal_actions():
                    assert st.parse_action(st.describe_action(a)) == a
                    assert st.parse_action(a) == a
    st = new(players=3, card_selection="agent")
    assert st.describe_action(4) == "bet 5" and st.parse_action("bet 5") == 4 and st.parse_action("Stake 5") == 4
    assert st.parse_action("level 7") == 7
    bet_all(st, [0] * 3)
    assert st.describe_action(L + 3) == "select slot 3"
    assert st.parse_action("slot 3") == st.parse_action("select 3") == L + 3
    for _ in range(6):
        st.apply(st.legal_actions()[0])
    assert st.phase == 2
    assert st.describe_action(NO_CALL) == "stay silent"
    for text in ("silent", "no call", "pass", "Stay Silent"):
        assert st.parse_action(text) == NO_CALL
    for text in ("call", "Paoy", "CALL PAOY"):
        assert st.parse_action(text) == CALL


def test_bad_action_text_and_illegal_actions():
    st = new()
    for text in ("5", "bet 11", "call", "select slot 3", "bet five"):
        with pytest.raises(ValueError, match="not a legal action here; legal: bet 1; bet 2"):
            st.parse_action(text)
    with pytest.raises(IllegalActionError, match=r"illegal action 50 \(stay silent\).*legal: 0 bet 1, 1 bet 2"):
        st.apply(NO_CALL)
    with pytest.raises(IllegalActionError, match=r"outside 0\.\.51"):
        st.apply(52)
    with pytest.raises(IllegalActionError, match="integer"):
        st.apply("bet 5")
    poor = new(bankroll=3)
    with pytest.raises(IllegalActionError, match=r"illegal action 3 \(bet 4\).*legal: 0 bet 1, 1 bet 2, 2 bet 3$"):
        poor.apply(3)


# ----- env ---------------------------------------------------------------------------------------------------
def test_env_reset_with_a_deck_and_round_infos():
    env = envs.make("ish", players=3, render_mode="ansi")
    deck = make_deck(("12R", "4N"), ("8S", "6R"), ("5R", "6S"))            # seat 0 (dealer, last) holds 11
    env.reset(seed=1, options={"deck": deck})
    assert env.agent_selection == "player_1"
    for _ in range(3):
        env.step(env.unwrapped.parse_action("bet 2"))
    assert env.agent_selection == "player_1" and env.unwrapped.state.phase == 2
    assert "12R 4N" in env.render()
    for agent, act in (("player_1", "call"), ("player_2", "silent"), ("player_0", "call Paoy")):
        assert env.agent_selection == agent
        env.step(env.unwrapped.parse_action(act))
    info = env.infos["player_1"]
    assert info["deal_points"] == [4, -2, -2] and info["scores"] == [4, -2, -2]
    assert info["breakdown"]["winner"] == 0 and info["breakdown"]["results"] == [11, 4, 2]
    assert env.rewards == {"player_0": 4.0, "player_1": -2.0, "player_2": -2.0}
    assert env.agent_selection == "player_2"                              # the dealer moved to seat 1
    json.dumps(env.unwrapped.state.to_dict())


# ----- bad input ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("settings,match", [
    (dict(player=4), "unknown setting 'player'.*did you mean 'players'"),
    (dict(players=21), "'players'"),
    (dict(players=1), "'players'"),
    (dict(bet_levels=1), "'bet_levels'"),
    (dict(bet_levels=21), "'bet_levels'"),
    (dict(bankroll=0), "'bankroll'"),
    (dict(payout="split"), "'payout'.*'pot', 'matched'"),
    (dict(card_selection="manual"), "'card_selection'"),
    (dict(reward="points"), "'reward'.*'chips', 'outcome'"),
    (dict(crown_must_call=1), "'crown_must_call'"),
    (dict(min_bet=11), "'min_bet'.*max_bet=10"),
    (dict(bankroll=5, min_bet=6, max_bet=10), "'bankroll'.*min_bet=6"),
    (dict(false_call_fine=11), "'false_call_fine'.*max_bet=10"),
    (dict(reflex=0), "'reflex'"),
    (dict(reflex=-1.0), "'reflex'"),
    (dict(reflex=True), "'reflex'"),
    (dict(reflex="fast"), "'reflex'"),
    (dict(reflex=[1.0, 1.0, 0.0, 1.0]), "'reflex'"),
    (dict(reflex=[1.0, 2.0]), "'reflex'.*players=4"),
    (dict(first_dealer=4), "'first_dealer'"),
    (dict(max_rounds=0), "'max_rounds'"),
    (dict(episode="hand"), "'episode'"),
])
def test_bad_settings(settings, match):
    with pytest.raises(ValueError, match=match):
        IshGame(**settings)


def test_reflex_forms():
    assert IshGame(reflex=2).reflex == [2.0] * 4
    assert IshGame(players=2, reflex=[1, 3.5]).reflex == [1.0, 3.5]
    spec = IshGame.settings_spec
    assert IshGame(**spec.parse_strings(["players=3", "reflex=1,2,3"])).reflex == [1.0, 2.0, 3.0]
    assert IshGame(**spec.parse_strings(["reflex=0.5"])).reflex == [0.5] * 4


@pytest.mark.parametrize("deck,match", [
    (ALL[:-1], "40 cards.*got 39.*missing CR"),
    (ALL[:-1] + ["12R"], "too many copies of 12R"),
    (ALL[:-1] + ["13R"], r"unknown cards: \['13R'\]"),
    (ALL + ["CR"], "got 41"),
    ("0R 1R", "list of card strings"),
])
def test_bad_decks(deck, match):
    with pytest.raises(ValueError, match=match):
        IshGame().new_state(0, deck)
    with pytest.raises(ValueError, match=match):
        envs.make("ish").reset(seed=0, options={"deck": deck})


def test_preset_deck_accepts_ids_and_any_case():
    st = IshGame().new_state(0, [c.lower() for c in ALL])
    assert st.slots == list(range(40))
    assert IshGame().new_state(0, list(range(40))).slots == list(range(40))
