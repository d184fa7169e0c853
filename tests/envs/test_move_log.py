"""The engine's move log (``State.move_log``, ``move_texts``): every applied action is announced, forced ones
included, each deal's scoring and the result once, and a seat's view names no card that seat could not see.

The hidden-card check is mechanical: a :class:`Watch` wraps the game's hooks (``_logged_move``, ``_log_event``,
``_apply``) on the logged state only, and takes a snapshot of what a seat can see (:func:`visible`, from the
engine state: its own hand and every face-up card) at each of them. Entry ``i``'s text, as the seat reads it,
may only name cards seen up to the moment the next entry is made (a played card is face up by then, a drawn
card in the drawer's hand)."""

from __future__ import annotations

import random
import re
from contextlib import contextmanager

import pytest

from kahve import envs
from kahve.envs.core.cards import card_str

STANDARD_CARD = re.compile(r"(?<![A-Za-z0-9])[A2-9TJQK][CDHS](?![A-Za-z0-9])")
ISH_CARD = re.compile(r"(?<![A-Za-z0-9])(?:1[0-2]|[0-9])[RNS](?![A-Za-z0-9])|(?<![A-Za-z])CR(?![A-Za-z])")
MOVE_LINE = re.compile(r"^(you|player \d+(?: \(you\))?): ")


def card_tokens(game_name: str, text: str) -> set[str]:
    return set((ISH_CARD if game_name == "ish" else STANDARD_CARD).findall(text))


def visible(state, seat: int) -> set[str]:
    """The cards ``seat`` sees now: its own hand and everything face up (the engine's state, game by game;
    nothing while the very first deal is being set up)."""
    try:
        return _visible(state, seat)
    except AttributeError:
        return set()


def _visible(state, seat: int) -> set[str]:
    name = state.game.name
    if name == "pishti":
        cards = set(state.hands[seat]) | {c for c in range(52) if state.seen[c]}
        cards |= set(state.pile[state.pile_face_down:])
    elif name == "pasur":
        cards = set(state.hands[seat]) | set(state.pool) | set(state.captured[0]) | set(state.captured[1])
        cards |= set(state.buried_jacks) | ({state.sel_card} if state.sel_card >= 0 else set())
    elif name == "pis_yedili":
        cards = set(state.hands[seat]) | set(state.discard)
    elif name == "pishe_pasha":
        hidden = {c for p in (0, 1) if not state.stock_known[p] for c in state.stocks[p]}
        cards = set(range(52)) - hidden
    elif name == "ish":
        return {state.card_str(state.slots[k]) for p in range(state.num_players) if state.results[p] is not None
                for k in state.picks[p]}
    else:
        raise AssertionError(f"no visibility rule for {name}")
    return {card_str(c) for c in cards}


class Watch:
    """Snapshots of one seat's view at every hook of the logged state, and the applied actions counted."""

    def __init__(self, seat: int):
        self.seat = seat
        self.applied = 0
        self.snaps: list[set] = []        # in time order
        self.made: list[int] = []         # made[i]: index in snaps of the snapshot when entry i was made

    def snap(self, state) -> None:
        self.snaps.append(visible(state, self.seat))

    def known_after(self, i: int) -> set:
        """Every card the seat could see by the time entry ``i + 1`` was made (or by the end)."""
        upto = self.made[i + 1] if i + 1 < len(self.made) else len(self.snaps) - 1
        out = set()
        for s in self.snaps[:upto + 1]:
            out |= s
        return out


@contextmanager
def watching(monkeypatch, state_class, seat: int):
    """Wrap the hooks of ``state_class`` so that the logged state (``move_log`` on) is watched."""
    watch = Watch(seat)
    logged_move, log_event, apply = state_class._logged_move, state_class._log_event, state_class._apply

    def _logged_move(self, *args):
        if self.move_log is not None:
            watch.snap(self)
            watch.made.append(len(watch.snaps) - 1)
        return logged_move(self, *args)

    def _log_event(self, *args):
        if self.move_log is not None:
            watch.snap(self)
            watch.made.append(len(watch.snaps) - 1)
        return log_event(self, *args)

    def _apply(self, action):
        logged = self.move_log is not None
        if logged:
            watch.applied += 1
        out = apply(self, action)
        if logged and self.move_log is not None:
            watch.snap(self)
        return out

    monkeypatch.setattr(state_class, "_logged_move", _logged_move)
    monkeypatch.setattr(state_class, "_log_event", _log_event)
    monkeypatch.setattr(state_class, "_apply", _apply)
    yield watch


def check_log(state, watch: Watch) -> list[str]:
    """The checks every screen relies on; returns the seat's view of the log."""
    seat, name = watch.seat, state.game.name
    log = state.move_log
    assert len(watch.made) == len(log), "every entry is made through a hook"
    actions = [m for m in log if m.action is not None]
    assert len(actions) == watch.applied, f"{len(actions)} moves logged, {watch.applied} actions applied"
    texts = state.move_texts(seat)
    for i, (m, text) in enumerate(zip(log, texts)):
        leaked = card_tokens(name, text) - watch.known_after(i)
        assert not leaked, f"entry {i} shows player {seat} {sorted(leaked)} it could not see: {text!r}"
        if m.seat is not None and m.seat != seat and not state.is_public_action(m.action):
            assert m.text_for(seat) == m.text, f"entry {i}: a hidden move reads {text!r}"
        if m.seat is None:
            assert not MOVE_LINE.match(text), f"entry {i}: a table event reads like a move: {text!r}"
    deals = state.deals_completed
    over = [m for m in log if m.seat is None and m.text.startswith(f"{state.deal_word} ") and " over" in m.text
            or m.seat is None and m.text.startswith(f"{state.deal_word} ") and " is drawn" in m.text]
    assert len(over) == deals, f"{deals} deals, {len(over)} deal-end summaries"
    if state.current_player is None:
        assert log[-1].seat is None and log[-1].text.startswith("match ")
        assert sum(m.text.startswith("match ") for m in log if m.seat is None) == 1
    return texts


CASES = [
    ("pishti", dict(players=2, target_score=50)),
    ("pishti", dict(players=4, partnerships=True, target_score=60)),
    ("pasur", dict(target_score=30)),
    ("pis_yedili", dict(players=2, game_end_penalty=60)),
    ("pis_yedili", dict(players=4, game_end_penalty=60, ten_rule="reverse")),
    ("pis_yedili", dict(players=3, stock_end="on_failed_draw", muamele_on_exhaustion=True)),
    ("pishe_pasha", dict()),
    ("pishe_pasha", dict(match_target=50, skip_single_choice=False)),
    ("ish", dict(players=4, max_rounds=8)),
    ("ish", dict(players=3, max_rounds=5, card_selection="agent", false_call_fine=2)),
]
IDS = [f"{g}-{'-'.join(f'{k}={v}' for k, v in s.items()) or 'default'}" for g, s in CASES]


@pytest.mark.parametrize("name,settings", CASES, ids=IDS)
def test_every_seat_sees_every_move_and_no_hidden_card(name, settings, monkeypatch):
    game = envs.game_class(name)(**settings)
    for seat in range(game.num_players):
        with watching(monkeypatch, game.state_class, seat) as watch:
            rng = random.Random(11)
            state = game.new_state(11 + seat, move_log=True)
            while state.current_player is not None and watch.applied < 3000:
                state.apply(rng.choice(state.legal_actions()))
            assert state.current_player is None, "the match ends"
            check_log(state, watch)
        monkeypatch.undo()


@pytest.mark.parametrize("name", envs.GAMES)
def test_forced_moves_are_the_single_choices_and_the_text_is_state_aware(name):
    game = envs.game_class(name)(**({"players": 2} if name in ("pishti", "pis_yedili") else {}))
    state = game.new_state(3, move_log=True)
    rng = random.Random(3)
    steps = 0
    while state.current_player is not None and steps < 300:
        start = len(state.move_log)
        legal = state.legal_actions()
        action = rng.choice(legal)
        state.apply(action)
        steps += 1
        new = [m for m in state.move_log[start:] if m.action is not None]
        assert new[0].action == action and not new[0].forced
        assert all(m.forced for m in new[1:])                 # what the engine played by itself
    assert any(m.forced for m in state.move_log), "some move was forced"
    # the same game without the log gives the same states (the log only reads)
    plain = game.new_state(3)
    rng = random.Random(3)
    for _ in range(steps):
        if plain.current_player is None:
            break
        plain.apply(rng.choice(plain.legal_actions()))
    assert plain.to_dict() == state.to_dict()


def test_a_draw_shows_the_card_to_the_drawer_only():
    game = envs.game_class("pis_yedili")(players=2)
    state = game.new_state(5, move_log=True)
    rng = random.Random(5)
    draws = []
    while state.current_player is not None and len(draws) < 5:
        legal = state.legal_actions()
        if 68 in legal:
            draws.append((state.current_player, len(state.move_log), card_str(state.stock[-1])))
            state.apply(68)
        else:
            state.apply(rng.choice(legal))
    assert draws
    for p, i, card in draws:
        m = state.move_log[i]
        assert m.seat == p and m.text_for(p) == f"draw {card}"
        assert m.text_for(1 - p) == m.text == "draw a card"
        assert state.move_texts(1 - p, i)[0] == f"player {p}: draw a card"
        assert state.move_texts(p, i, names={p: "you"})[0] == f"you: draw {card}"


def test_ish_calls_stay_hidden_until_the_round_is_resolved():
    game = envs.game_class("ish")(players=3, max_rounds=3)
    state = game.new_state(2, move_log=True)
    rng = random.Random(2)
    while state.current_player is not None:
        state.apply(rng.choice(state.legal_actions()))
    calls = [m for m in state.move_log if m.action is not None and m.action >= game.no_call]
    assert calls
    for m in calls:
        other = (m.seat + 1) % 3
        assert m.text_for(other) == "calls or stays silent (shown when the round is resolved)"
        assert m.text_for(m.seat) in ("call Paoy", "call Kath", "stay silent")
    resolved = [m.text for m in state.move_log if m.seat is None and ("called" in m.text or "stayed silent" in m.text)]
    assert resolved, "the deal summary tells every call"


def test_deal_and_match_end_in_words():
    game = envs.game_class("pishti")(players=2, target_score=50)
    state = game.new_state(4, move_log=True)
    rng = random.Random(4)
    while state.current_player is not None:
        state.apply(rng.choice(state.legal_actions()))
    events = [m for m in state.move_log if m.seat is None]
    summary = [m.text for m in events if m.text.startswith("  player ")]
    assert len(summary) == 2 * state.deals_completed
    assert all("points (" in t and "cards" in t and "match total" in t for t in summary)
    assert not any("[" in m.text for m in events)                 # no Python lists
    last = state.move_log[-1]
    w = state.winners[0]
    assert last.text_for(w).split(": ")[1].startswith("you win") and "you lose" in last.text_for(1 - w)
    assert state.describe_match() == last.text


def test_the_log_is_off_by_default_and_started_later_logs_from_then_on():
    game = envs.game_class("pasur")()
    state = game.new_state(1)
    assert state.move_log is None
    state.apply(state.legal_actions()[0])
    log = state.start_move_log()
    assert log == [] and state.move_log is log
    state.apply(state.legal_actions()[0])
    assert log and log[0].action is not None and not log[0].forced


def test_the_check_catches_a_leak(monkeypatch):
    """The checker is not vacuous: a draw that shows its card to everyone is caught."""
    from kahve.envs.core.engine import Move
    from kahve.envs.pis_yedili.rules import DRAW, PisYediliState
    honest = PisYediliState._logged_move

    def leaky(self, seat, action, forced):
        if action == DRAW and self.stock:
            return Move(seat, action, f"draw {card_str(self.stock[-1])}", forced, self.deals_completed)
        return honest(self, seat, action, forced)

    monkeypatch.setattr(PisYediliState, "_logged_move", leaky)
    game = envs.game_class("pis_yedili")(players=2)
    with watching(monkeypatch, PisYediliState, 0) as watch:
        rng = random.Random(1)
        state = game.new_state(1, move_log=True)
        while state.current_player is not None:
            state.apply(rng.choice(state.legal_actions()))
        with pytest.raises(AssertionError, match="could not see"):
            check_log(state, watch)


# ----- labels: "(only choice)" only where the reader could tell -------------------------------------------------

FORCED_LABEL = re.compile(r" \((only choice|last card)\)$")
LABEL_CASES = [
    ("pishti", dict(players=2), 4), ("pishti", dict(players=4, partnerships=True), 2),
    ("pasur", dict(), 3),
    ("pis_yedili", dict(players=2), 10), ("pis_yedili", dict(players=3), 6),
    ("pis_yedili", dict(players=4, must_answer_seven=True, after_seven_penalty="lose_turn"), 4),
    ("pishe_pasha", dict(), 3),
    ("ish", dict(players=3, card_selection="agent", bankroll=4), 10),
]


def could_tell(before, mover: int, action: int, viewer: int, rng, worlds: int = 12) -> int | None:
    """Whether ``viewer`` could tell that ``mover``'s ``action`` in ``before`` (a state with no auto-play, just
    before it) was the only legal choice: in every world ``viewer`` cannot rule out (``determinize``) in which
    the move, as ``viewer`` saw it, was legal, it was the only legal action. Returns the number of legal actions
    of a world that says otherwise, or None. (Sampled worlds can only prove that the viewer could *not* tell,
    which is the direction a leak needs.)"""
    public = before.is_public_action(action)
    for _ in range(worlds):
        w = before.determinize(viewer, rng)
        legal = w.legal_actions()
        if public and action not in legal:
            continue                      # a world the viewer rules out by seeing the move
        if len(legal) > 1:
            return len(legal)
    return None


def label_leaks(name: str, settings: dict, seed: int, worlds: int = 12) -> tuple[list[str], int]:
    """Play a match of random moves with the log on, and check every label of every entry as every seat (and
    the public view) reads it against the engine: a move may read as forced only to the mover, or to a reader
    who could tell. Returns the leaks found and the number of (forced move, reader) pairs checked."""
    game = envs.game_class(name)(**settings)
    state = game.new_state(seed, move_log=True)
    # the same match without auto-play: its states are the ones just before each move the engine made itself
    twin = envs.game_class(name)(**{**settings, "skip_single_choice": False}).new_state(seed)
    rng = random.Random(seed)
    leaks, checked, done = [], 0, 0
    n = game.num_players
    while state.current_player is not None and len(state.move_log) < 1500:
        state.apply(rng.choice(state.legal_actions()))
        for i in range(done, len(state.move_log)):
            m = state.move_log[i]
            if m.action is None:
                continue
            assert twin.current_player == m.seat and m.action in twin.legal_actions()
            assert m.forced == (len(twin.legal_actions()) == 1)
            lines = {v: state.move_texts(v, i)[0] for v in [*range(n), None]}
            for v, line in lines.items():
                told = bool(FORCED_LABEL.search(line))
                assert told == m.forced_for(v), (line, m)        # the text and the flag agree
                if v == m.seat:
                    assert told == m.forced, f"the mover is told whether its own move was forced: {line!r}"
                elif told:
                    readers = [v] if v is not None else [p for p in range(n) if p != m.seat]
                    for r in readers:
                        checked += 1
                        other = could_tell(twin, m.seat, m.action, r, rng, worlds)
                        if other is not None:
                            leaks.append(f"{name} seed {seed}: {'the public view' if v is None else f'player {v}'} "
                                         f"reads {line!r}, but player {r} cannot rule out a hand with {other} "
                                         f"legal moves there")
                if not m.forced:
                    assert not told
            twin.apply(m.action)
        done = len(state.move_log)
    return leaks, checked


@pytest.mark.parametrize("name,settings,seeds", LABEL_CASES,
                         ids=[f"{g}-{'-'.join(f'{k}={v}' for k, v in s.items()) or 'default'}" for g, s, _ in LABEL_CASES])
def test_no_label_tells_a_seat_what_it_could_not_know(name, settings, seeds):
    """Issue 58: "(only choice)" (and the web's ``forced`` flag, which is :meth:`Move.forced_for`) reaches a seat
    only where that seat could tell the move was forced; a Pis Yedili draw may be chosen (PY-8), so an opponent's
    forced draw reads as a plain draw."""
    leaks, checked = [], 0
    for seed in range(seeds):
        found, k = label_leaks(name, settings, seed)
        leaks += found
        checked += k
    assert not leaks, leaks[:5]
    if name != "pis_yedili":
        assert checked > 10, "forced moves were told to the other seats, and checked"


def test_the_label_check_catches_todays_pis_yedili_labels(monkeypatch):
    """The check is not vacuous: told to everyone, as every forced move was before issue 58, Pis Yedili's
    forced draws, passes and round-1 clubs are caught (the opponent could have held a playable card)."""
    from kahve.envs.pis_yedili.rules import PisYediliState
    monkeypatch.setattr(PisYediliState, "forced_is_public", lambda self, action: True)
    leaks = []
    for seed in range(3):
        leaks += label_leaks("pis_yedili", dict(players=2), seed)[0]
    assert len(leaks) > 10
    assert any("draw a card (only choice)" in x for x in leaks)


def test_what_each_seat_reads_of_a_forced_pis_yedili_draw():
    game = envs.game_class("pis_yedili")(players=2)
    for seed in range(40):
        state = game.new_state(seed, move_log=True)
        rng = random.Random(seed)
        while state.current_player is not None:
            state.apply(rng.choice(state.legal_actions()))
            hidden = [(i, m) for i, m in enumerate(state.move_log) if m.forced and m.action == 68
                      and not m.forced_public]
            if hidden:
                i, m = hidden[0]
                mine, theirs = state.move_texts(m.seat, i)[0], state.move_texts(1 - m.seat, i)[0]
                assert mine.startswith(f"player {m.seat} (you): draw ") and mine.endswith(" (only choice)")
                assert theirs == f"player {m.seat}: draw a card"
                assert state.move_texts(None, i)[0] == f"player {m.seat}: draw a card"
                return
    raise AssertionError("no forced draw in 40 deals")


def test_a_seat_is_named_one_way_in_every_line():
    """"player 0 (you)" everywhere the reader is meant, never "you" in one line and "player 0" in the next."""
    game = envs.game_class("pis_yedili")(players=3)
    state = game.new_state(2, move_log=True)
    rng = random.Random(2)
    while state.current_player is not None:
        state.apply(rng.choice(state.legal_actions()))
    for seat in range(3):
        for line in state.move_texts(seat):
            assert not re.search(rf"\bplayer {seat}\b(?! \(you\))", line), line
            assert not re.search(rf"\bplayer {seat} \(you\) \(you\)", line), line
        assert any(line.startswith(f"player {seat} (you): ") for line in state.move_texts(seat))
        assert any(f"player {seat} (you)" in line and not line.startswith(f"player {seat} (you): ")
                   for line in state.move_texts(seat))
