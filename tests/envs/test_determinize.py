"""``state.determinize(seat, rng)`` samples only worlds that ``seat`` cannot rule out (issue 16).

One protocol test over all five games and several settings grids plays random games and checks, on a sample of
decision states and for every seat, that a determinized world

* keeps the seat's observation, and its legal actions when it is to move;
* keeps every card the seat has seen where it was seen (its own hand, face-up cards, known piles);
* keeps the hand sizes and the cards (the same multiset overall);
* respects the public inferences of the game (a buried Pâsur jack is never in a first hand; Pişti's face-down
  places hold only unseen cards; a Pis Yedili hand can be explained by the public history of draws, plays,
  the draws that are only allowed without a card of some kind (not the single choices the engine played: the
  others are not told of those, so they show nothing), checked here by an independent matching);
* leaves the player to move with a legal move (two under ``skip_single_choice``, since a decision state
  never has a single legal action then);
* does not change the original state, and really re-deals something somewhere.

Below it: the three reported failures as regression tests; the Pis Yedili limits checked to be exact (the
independent matching accepts exactly the hands they accept) and its fallback samplers; no move log in a
re-dealt world.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from kahve.envs import game_class
from kahve.envs.core.cards import parse_card
from kahve.envs.pis_yedili.rules import DRAW, FOLLOW_UP, PLAY_J, TAKE_PENALTY, PisYediliState

# ----- Pis Yedili's public history, kept by the test itself (independent of the engine's bookkeeping) ----------

# round 1 (PY-9): clubs of rank 2-6, 8, 9, Q, K; rank ids A=0 ... K=12
FIRST_CLUBS = sum(1 << r for r in (1, 2, 3, 4, 5, 7, 8, 11, 12))
JACKS = sum(1 << (13 * s + 10) for s in range(4))
ACES = sum(1 << (13 * s) for s in range(4))
SEVENS = sum(1 << (13 * s + 6) for s in range(4))


def _follow_mask(top: int, lone: bool) -> int:
    """What would have been legal in FOLLOW_UP on ``top``: any J, its suit, its rank; never a lone ace (PY-7)."""
    m = JACKS
    for c in range(52):
        if c // 13 == top // 13 or c % 13 == top % 13:
            m |= 1 << c
    return m & ~ACES if lone else m


def _fresh_log(state) -> list:
    """Per seat, the public events of the deal now starting: ("draw", k), ("play", card), ("none_of", mask)."""
    log = [[("draw", 7)] for _ in range(state.num_players)]
    p = state.current_player
    if p is not None:                          # the first player's forced round-1 draws (PY-9)
        for _ in range(len(state.hands[p]) - 7):
            log[p] += [("none_of", FIRST_CLUBS), ("draw", 1)]
    return log


def _logged(apply):
    def wrapped(self, action):
        owner, log = self.__dict__.get("_public_log") or (None, None)
        if log is None:
            log = _fresh_log(self)
        elif owner != id(self):                # a clone: the same history so far, its own from now on
            log = [events[:] for events in log]
        self._public_log = (id(self), log)
        p, deals = self.current_player, self.deals_completed
        sizes = [len(h) for h in self.hands]
        first_round = self.first_round_left > 0
        if action == DRAW and self.phase == FOLLOW_UP:     # a draw is only allowed without a legal card (PY-5)
            log[p].append(("none_of", _follow_mask(self.discard[-1], sizes[p] == 1)))
        # (a single choice the engine plays is no public fact, unless the rules or the cards in sight make it one,
        # and those cases are the ones above and below: the others are not told, so it shows nothing)
        if action == TAKE_PENALTY and self.settings.must_answer_seven:
            log[p].append(("none_of", SEVENS))
        played = None                          # the card played, a J for the PLAY_J actions
        if action < PLAY_J:
            played = action
        elif action < DRAW:
            played = 13 * ((action - PLAY_J) // 4) + 10
        apply(self, action)
        if self.deals_completed != deals or self.current_player is None:
            self._public_log = (id(self), _fresh_log(self))
            return
        if played is not None:
            log[p].append(("play", played))
        for q in range(self.num_players):
            drew = len(self.hands[q]) - sizes[q] + (q == p and played is not None)
            if drew > 0 and first_round and self.first_round_left > 0 and q == self.current_player and q != p:
                log[q] += [("none_of", FIRST_CLUBS), ("draw", 1)] * drew
            elif drew > 0:
                log[q].append(("draw", drew))
    return wrapped


def _explained(events: list, hand: list[int]) -> bool:
    """Whether some assignment of the seat's drawn cards explains the history and ends in ``hand``: a
    b-matching of the cards (played ones with their play time, held ones at the end) onto the arrival
    slots of the draws, a card fitting a slot if it arrived before it left and no "none_of" in between
    names it."""
    slots, cards, nones = [], [], []
    for t, (kind, x) in enumerate(events):
        if kind == "draw":
            slots.append((t, x))
        elif kind == "play":
            cards.append((x, t))
        else:
            nones.append((t, x))
    cards += [(c, len(events)) for c in hand]
    if sum(k for _, k in slots) != len(cards):
        return False
    if not nones:
        return True
    adj = [[g for g, (tau, _) in enumerate(slots)
            if tau < u and not any(tau < t < u and m >> c & 1 for t, m in nones)] for c, u in cards]
    room = [k for _, k in slots]
    held = [[] for _ in slots]

    def place(i, seen):
        for g in adj[i]:
            if g in seen:
                continue
            seen.add(g)
            if len(held[g]) < room[g]:
                held[g].append(i)
                return True
            for j in list(held[g]):
                if place(j, seen):
                    held[g].remove(j)
                    held[g].append(i)
                    return True
        return False

    return all(place(i, set()) for i in range(len(cards)))


# ----- what each game must keep ------------------------------------------------------------------------------

def _cards(game: str, d: dict) -> Counter:
    """Every card of the state (to_dict), wherever it is."""
    if game == "pasur":
        out = sum(d["hands"], []) + d["pool"] + d["stock"] + sum(d["captured"], [])
        return Counter(out + ([d["selecting"]["card"]] if d["selecting"] else []))
    if game == "pishti":
        return Counter(sum(d["hands"], []) + d["stock"] + d["pile"] + sum(d["captured"], []))
    if game == "pis_yedili":
        return Counter(sum(d["hands"], []) + d["stock"] + d["discard"])
    if game == "pishe_pasha":
        extra = [d["pending"]] if d["pending"] else []
        return Counter(sum(d["stocks"], []) + sum(d["discards"], []) + sum(d["suit_piles"], []) + extra)
    return Counter(d["slots"])


def _sizes(game: str, d: dict):
    if game == "pishe_pasha":
        return [len(s) for s in d["stocks"]], [len(s) for s in d["discards"]]
    if game == "ish":
        return [len(p) for p in d["picks"]]
    return [len(h) for h in d["hands"]], len(d["stock"])


def _seen(game: str, st, seat: int):
    """What ``seat`` has seen, where it saw it."""
    d = st.to_dict()
    if game == "pasur":
        return d["hands"][seat], d["pool"], d["captured"], d["selecting"]
    if game == "pishti":
        seen_captured = [sorted(parse_card(c) for c in cap if st.seen[parse_card(c)]) for cap in d["captured"]]
        return (d["hands"][seat], d["pile"][d["pile_face_down"]:], d["pile_face_down"], seen_captured,
                d["captured_face_down"])
    if game == "pis_yedili":
        return d["hands"][seat], d["discard"]
    if game == "pishe_pasha":
        known = [s if k else None for s, k in zip(d["stocks"], d["stock_known"])]
        return d["discards"], d["suit_piles"], d["pending"], known
    revealed = d["phase"] in ("CALL", "OVER")
    return d["picks"], d["results"], d["stakes"], d["hands"] if revealed else None, d["calls"][seat]


def _check_inferences(game: str, st, other, seat: int) -> None:
    if game == "pasur":
        if st.hand_number == 1:                # dealt before the pool: no first hand holds a buried jack
            assert not set(other.hands[1 - seat]) & set(st.buried_jacks), "a buried jack in a first hand"
    elif game == "pishti":
        dark = other.pile[:other.pile_face_down]
        assert not any(other.seen[c] for c in dark), "a seen card among the face-down pile cards"
        for side, cap in enumerate(other.captured):
            assert sum(not other.seen[c] for c in cap) == st.captured_face_down[side]
        hidden = other.stock + [c for p, h in enumerate(other.hands) if p != seat for c in h]
        assert all(c in st.buried_jacks for c in hidden if other.seen[c]), "a seen card hidden again"
    elif game == "pis_yedili":
        log = st.__dict__["_public_log"][1] if "_public_log" in st.__dict__ else _fresh_log(st)
        for p in range(st.num_players):
            if p != seat:
                assert _explained(log[p], st.hands[p]), f"the test's own history cannot explain the real hand {p}"
                assert _explained(log[p], other.hands[p]), f"seat {p}'s re-dealt hand contradicts public play"


def _check_world(game: str, st, seat: int, rng: random.Random, tries: int) -> bool:
    """Check ``tries`` worlds for ``seat``; return whether one differed from the real state."""
    base = st.to_dict()
    obs = st.observation(seat)
    legal = st.legal_actions()
    need = min(len(legal), 2 if st.settings.skip_single_choice else 1)
    seen = _seen(game, st, seat)
    changed = False
    for _ in range(tries):
        other = st.determinize(seat, rng)
        d = other.to_dict()
        assert np.array_equal(other.observation(seat), obs), f"seat {seat}'s observation changed"
        if st.current_player == seat:
            assert other.legal_actions() == legal
        assert len(other.legal_actions()) >= need, f"the player to move has {other.legal_actions()}"
        assert _seen(game, other, seat) == seen, "a card the seat has seen moved"
        assert _sizes(game, d) == _sizes(game, base)
        assert _cards(game, d) == _cards(game, base), "cards are not conserved"
        _check_inferences(game, st, other, seat)
        changed |= d != base
    assert st.to_dict() == base, "determinize changed the original state"
    return changed


CASES = [
    ("pasur", dict()),
    ("pasur", dict(skip_single_choice=False, redeal_rule="jacks_only")),
    ("pishti", dict(players=2)),
    ("pishti", dict(players=4)),
    ("pishti", dict(players=4, partnerships=False, skip_single_choice=False)),
    ("pis_yedili", dict(players=2)),
    ("pis_yedili", dict(players=2, skip_single_choice=False, must_answer_seven=True)),
    ("pis_yedili", dict(players=3)),
    ("pis_yedili", dict(players=3, skip_single_choice=False, twin_rule="same_rank", ten_rule="reverse")),
    ("pis_yedili", dict(players=4)),
    ("pis_yedili", dict(players=4, skip_single_choice=False, must_answer_seven=True, stock_end="on_failed_draw",
                        after_seven_penalty="lose_turn")),
    ("pishe_pasha", dict()),
    ("pishe_pasha", dict(give_compulsory=True, skip_single_choice=False, match_target=50)),
    ("ish", dict(players=2)),
    ("ish", dict(players=4, card_selection="agent", skip_single_choice=False)),
]


@pytest.mark.parametrize("game,settings", CASES, ids=[f"{g}-" + "-".join(f"{k}={v}" for k, v in s.items())
                                                      for g, s in CASES])
def test_determinized_worlds_are_possible(game, settings, monkeypatch):
    if game == "pis_yedili":
        monkeypatch.setattr(PisYediliState, "_apply", _logged(PisYediliState._apply))
    g = game_class(game)(**settings)
    rng = random.Random(16)
    checked = changed = 0
    for seed in range(60):                     # random games until 80 sampled decision states
        state = g.new_state(seed)
        play = random.Random(seed)
        for _ in range(600):
            if state.current_player is None or checked == 80:
                break
            if play.random() < 0.15:
                for seat in range(state.num_players):
                    changed += _check_world(game, state, seat, rng, tries=2)
                checked += 1
            state.apply(play.choice(state.legal_actions()))
    assert checked == 80 and changed > checked // 4


# ----- the reported failures -------------------------------------------------------------------------------------

def test_pasur_buried_jack_is_in_no_first_hand():
    ids = [parse_card(c) for c in "7H 8D QC 2S 5C 6D 3S KH 4C JD 5H 9S AD".split()]
    st = game_class("pasur")().new_state(0, deck=ids + [c for c in range(52) if c not in ids])
    assert st.buried_jacks == [parse_card("JD")] and st.hand_number == 1 and st.current_player == 1
    rng = random.Random(0)
    worlds = [st.determinize(1, rng) for _ in range(2000)]
    assert not any(parse_card("JD") in w.hands[0] for w in worlds)
    assert len({tuple(w.hands[0]) for w in worlds}) > 100                 # the rest is still re-dealt
    # from hand 2 on the jack may be in the opponent's hand: every later hand comes from below the burial
    while st.hand_number == 1:
        st.apply(st.legal_actions()[0])
    if parse_card("JD") in st.stock or parse_card("JD") in st.hands[1 - st.current_player]:
        seat = st.current_player
        assert any(parse_card("JD") in st.determinize(seat, rng).hands[1 - seat] for _ in range(400))


def _first_round_drawer():
    """A 3-player deal where seat 2 had to draw for a round-1 club and has played it (seat 0 to move)."""
    g = game_class("pis_yedili")(players=3, skip_single_choice=False)
    for seed in range(500):
        st = g.new_state(seed)
        if len(st.hands[1]) == 7:                                # seat 1 had a club: no draw
            st.apply(st.legal_actions()[0])                       # seat 1 plays; seat 2 draws until a club
            if st.current_player == 2 and len(st.hands[2]) > 7:
                st.apply(st.legal_actions()[0])                   # its only round-1 club
                assert st.current_player == 0
                return st
    raise AssertionError("no such deal")


def test_pis_yedili_first_round_drawer_holds_no_other_round_one_club():
    st = _first_round_drawer()
    assert not any(FIRST_CLUBS >> c & 1 for c in st.hands[2])
    rng = random.Random(0)
    worlds = [st.determinize(0, rng) for _ in range(500)]
    assert not any(FIRST_CLUBS >> c & 1 for w in worlds for c in w.hands[2])
    assert any(FIRST_CLUBS >> c & 1 for w in worlds for c in w.hands[1])   # the other hand is not limited


def test_pis_yedili_first_round_mover_keeps_a_legal_action():
    g = game_class("pis_yedili")(players=3, skip_single_choice=False)
    assert g.new_state(0).determinize(0, random.Random(1)).legal_actions() != []
    rng = random.Random(2)
    for seed in range(40):
        st = g.new_state(seed)
        for _ in range(30):
            assert st.determinize(0, rng).legal_actions()


def test_pis_yedili_limits_are_exact(monkeypatch):
    # the engine's limits accept exactly the hands that the independent matching explains: not one more
    # (the protocol test) and not one fewer (here), on random and near-real candidate hands
    monkeypatch.setattr(PisYediliState, "_apply", _logged(PisYediliState._apply))
    rng = random.Random(3)
    seen = Counter()
    for settings in (dict(players=2, must_answer_seven=True), dict(players=4, skip_single_choice=False)):
        g = game_class("pis_yedili")(**settings)
        for seed in range(12):
            st = g.new_state(seed)
            for _ in range(300):
                if st.current_player is None:
                    break
                log = st._public_log[1] if "_public_log" in st.__dict__ else _fresh_log(st)
                for p in range(st.num_players):
                    if st.limits[p] and rng.random() < 0.3:
                        pool = [c for hand in st.hands for c in hand] + st.stock
                        near = [c if rng.random() < 0.7 else rng.choice(pool) for c in st.hands[p]]
                        for hand in (rng.sample(pool, len(st.hands[p])), near):
                            fits = all(sum(m >> c & 1 for c in hand) <= cap for m, cap in st.limits[p])
                            assert fits == _explained(log[p], hand), (st.limits[p], log[p], hand)
                            seen[fits] += 1
                st.apply(rng.choice(st.legal_actions()))
    assert seen[True] > 50 and seen[False] > 50


@pytest.mark.parametrize("fallback", ["build", "mix"])
def test_pis_yedili_fallbacks_keep_worlds_possible(fallback, monkeypatch):
    # the hand-by-hand build (after failed re-deals) and the exchange walk from the real deal (after failed
    # builds) give possible worlds too
    from kahve.envs.pis_yedili import rules
    monkeypatch.setattr(rules, "_REDEAL_TRIES", 0)
    if fallback == "mix":
        monkeypatch.setattr(rules, "_BUILD_TRIES", 0)
    monkeypatch.setattr(PisYediliState, "_apply", _logged(PisYediliState._apply))
    rng = random.Random(5)
    checked = 0
    for settings in (dict(players=3), dict(players=4, must_answer_seven=True, skip_single_choice=False)):
        g = game_class("pis_yedili")(**settings)
        for seed in range(6):
            st = g.new_state(seed)
            for _ in range(250):
                if st.current_player is None:
                    break
                if rng.random() < 0.1 and any(st.limits):
                    for seat in range(st.num_players):
                        _check_world("pis_yedili", st, seat, rng, tries=1)
                    checked += 1
                st.apply(rng.choice(st.legal_actions()))
    assert checked > 20


@pytest.mark.parametrize("game", ["pasur", "pishti", "pis_yedili", "pishe_pasha", "ish"])
def test_determinized_worlds_carry_no_move_log(game):
    # the move log tells each seat its own cards (and an Ish seat its call): a re-dealt world has none
    st = game_class(game)().new_state(1)
    st.start_move_log()
    st.apply(st.legal_actions()[0])
    assert st.move_log
    for seat in range(st.num_players):
        assert st.determinize(seat, random.Random(seat)).move_log is None
    assert st.move_log
