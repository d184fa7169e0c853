"""The page never receives a card the person's seat could not see at that moment.

Deals are played through the HTTP API (the JSON the page gets). The table's seed and actions are then replayed
on a fresh engine, and every answer is checked against the engine state at the step it describes: each card
named anywhere in the JSON must be one the seat sees then (own hand, face-up cards, by the rules of each game),
or saw earlier, or that the engine's move log shows this seat (``state.move_texts(seat)``), or that a deal
report published. The log lines sent are exactly the engine's, as this seat reads them; no action id of a logged
move is sent. A control checks that the full engine state would fail the same check (it is not vacuous).
"""

from __future__ import annotations

import random
import re

import pytest

from kahve.envs.core.engine import mark_you
from kahve.scripts.web.tables import make_game
from tests.envs.test_move_log import FORCED_LABEL

from .plays import create, move, play_deal

STANDARD = re.compile(r"(?<![A-Za-z0-9])(10|[A2-9TJQK])([CDHS])(?![A-Za-z0-9])")
SUN = re.compile(r"(?<![A-Za-z0-9])(?:(1[0-2]|[0-9])([RNS])|CR)(?![A-Za-z0-9])")


def cards_in(data, game: str) -> set:
    """Every card named in a JSON value (strings anywhere inside), as engine card strings."""
    found = set()

    def walk(v):
        if isinstance(v, str):
            if game == "ish":
                for m in SUN.finditer(v):
                    found.add(m.group(0))
            else:
                for m in STANDARD.finditer(v):
                    found.add(("T" if m.group(1) == "10" else m.group(1)) + m.group(2))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(data)
    return found


def visible_now(game: str, d: dict, seat: int) -> set:
    """The cards ``seat`` sees in the engine state ``d`` (``to_dict()``), by the rules of the game."""
    if game == "pishti":
        return set(d["hands"][seat]) | set(d["pile"][d["pile_face_down"]:])
    if game == "pasur":
        out = set(d["hands"][seat]) | set(d["pool"]) | {c for cap in d["captured"] for c in cap}
        out |= set(d["buried_jacks"])                    # face up in the pool before the burial (PA-5)
        if d["selecting"]:
            out.add(d["selecting"]["card"])
        if d["leftover"]:
            out |= set(d["leftover"]["cards"])
        return out
    if game == "pis_yedili":
        return set(d["hands"][seat]) | set(d["discard"])
    if game == "pishe_pasha":
        out = {c for pile in d["suit_piles"] for c in pile} | {c for pile in d["discards"] for c in pile}
        if d["pending"]:
            out.add(d["pending"])
        for p in (0, 1):
            if d["stock_known"][p]:                     # a turned-over discard pile is public (PP-5)
                out |= set(d["stocks"][p])
        return out
    if game == "ish":
        return {c for p in d["order"] for c in d["hands"][p]} if d["phase"] == "CALL" else set()
    raise AssertionError(game)


class Replay:
    """The table's match replayed from its seed and actions: what the seat may know after each step."""

    def __init__(self, game_name: str, settings: dict, seat: int, seed: int, actions: list[int]):
        self.game = game_name
        g = make_game(game_name, settings)
        st = g.new_state(seed, move_log=True)
        self.states = [st.to_dict()]
        self.texts = [st.move_texts(seat)]
        seen = visible_now(game_name, self.states[0], seat) | cards_in(self.texts[0], game_name)
        self.allowed = [set(seen)]
        self.deals = [st.deals_completed]
        for a in actions:
            before = st.deals_completed
            st.apply(a)
            d = st.to_dict()
            self.states.append(d)
            self.texts.append(st.move_texts(seat))
            seen |= visible_now(game_name, d, seat) | cards_in(self.texts[-1], game_name)
            if st.deals_completed > before:
                seen |= cards_in(st.deal_report, game_name)     # every seat gets the deal report
            self.allowed.append(set(seen))
            self.deals.append(st.deals_completed)


CASES = [
    ("pasur", {}, 0), ("pasur", {}, 1),
    ("pishti", {"players": 2}, 0), ("pishti", {"players": 4}, 1), ("pishti", {"players": 4, "partnerships": False}, 2),
    ("pis_yedili", {"players": 2}, 0), ("pis_yedili", {"players": 4}, 3),
    ("pishe_pasha", {}, 0), ("pishe_pasha", {}, 1),
    ("ish", {"players": 3, "card_selection": "agent"}, 0), ("ish", {"players": 4}, 2),
]


@pytest.mark.parametrize("game, settings, seat", CASES, ids=[f"{g}-{'-'.join(f'{k}{v}' for k, v in s.items())}-seat{p}"
                                                             for g, s, p in CASES])
def test_no_hidden_card_reaches_the_page(server, client, game, settings, seat):
    seed = 11 + seat
    answers = play_deal(client, game, settings, seed=seed, seat=seat, deals=3 if game != "ish" else 6,
                        opponent="heuristic" if seat % 2 == 0 else "random")
    table = server.manager.tables[answers[0]["table"]]
    replay = Replay(game, settings, seat, table.seed, table.actions)
    checked = leaky = 0
    for answer in answers:
        for part in answer["events"] + [{"view": answer["view"], "entries": [], "deal_end": None}]:
            view = part["view"]
            k = view["step"]
            d = replay.states[k]
            allowed = replay.allowed[k]
            # the table's id is a random url-safe token, not a card, though it may contain text like "-0N_"
            assert view["table"] == answer["table"]
            shown = cards_in({**part, "view": {**view, "table": ""}}, game)
            assert shown <= allowed, (f"{game} step {k}: the page was sent {sorted(shown - allowed)}, which seat "
                                      f"{seat} cannot see")
            # the control: the whole engine state names cards the seat does not know
            if cards_in(d, game) - allowed:
                leaky += 1
            checked += 1
            # the log lines are the engine's, as this seat reads them, and carry no action ids
            for e in part["entries"]:
                expect = replay.texts[k][e["i"]]
                who = mark_you(f"player {e['seat']}", seat)          # "player 0 (you)" for the seat itself
                got = e["text"] if e["seat"] is None else f"{who}: {e['text']}"
                assert got == expect
                assert "action" not in e
                # "forced" only where this seat could tell (issue 58), as the engine's text says
                assert e["forced"] == (e["seat"] is None or bool(FORCED_LABEL.search(expect)))
            # the structured view agrees with the engine
            assert view["seat"] == seat and view["to_move"] == d["current_player"]
            if game in ("pishti", "pasur", "pis_yedili"):
                assert view["hand"] == d["hands"][seat]
                assert view["stock"] == len(d["stock"])
                assert [s["hand"] for s in view["seat_info"]] == [len(h) for h in d["hands"]]
            if game == "pishti":
                assert view["pile"]["face_up"] == d["pile"][d["pile_face_down"]:]
            if game == "pasur":
                assert view["pool"] == d["pool"]
            if game == "pis_yedili":
                assert view["discard"]["top"] == d["top"]
            if game == "pishe_pasha":
                assert view["discards"] == d["discards"]
                assert [s["count"] for s in view["stocks"]] == [len(s) for s in d["stocks"]]
            if view["your_turn"]:
                assert view["moves"], f"{game} step {k}: the seat is to move but has no moves"
            else:
                assert view["moves"] == []
    assert checked > 20
    assert leaky >= 5, "the check would not catch hidden cards"


def test_moves_offered_are_the_engines_legal_actions(server, client):
    """At every decision of played deals, the moves' actions start with exactly the legal actions (a Pâsur
    capture may add the picks after the first), and every move's text is the engine's."""
    for game, settings in [("pasur", {}), ("pis_yedili", {"players": 3}), ("pishe_pasha", {}),
                           ("ish", {"players": 2, "card_selection": "agent"}), ("pishti", {"players": 4})]:
        answers = play_deal(client, game, settings, seed=5)
        table = server.manager.tables[answers[0]["table"]]
        g = make_game(game, settings)
        st = g.new_state(table.seed)
        step = 0
        for answer in answers:
            view = answer["view"]
            while step < view["step"]:
                st.apply(table.actions[step])
                step += 1
            if view["over"] or not view["your_turn"]:
                continue
            legal = st.legal_actions()
            firsts = sorted({m["actions"][0] for m in view["moves"]})
            assert firsts == legal, (game, firsts, legal)
            for m in view["moves"]:
                if len(m["actions"]) == 1 and m["kind"] != "capture":
                    assert m["text"] == st.describe_action(m["actions"][0])


@pytest.mark.parametrize("game, settings", [("pis_yedili", {"players": 2}), ("pasur", {})])
def test_a_searching_bot_leaves_the_log_alone(server, client, game, settings):
    """ISMCTS plays out thousands of re-dealt copies of the state; none of their moves reach the table's log
    (the log the page shows is the real game's, entry for entry)."""
    answer = create(client, game, settings, opponent="ismcts:100", seed=3)
    rng = random.Random(3)
    for _ in range(6):
        answer = move(client, answer, rng.choice(answer["view"]["moves"]))
    table = server.manager.tables[answer["table"]]
    replay = Replay(game, settings, 0, table.seed, table.actions)
    assert len(table.state.move_log) == len(replay.texts[-1])
    assert table.state.move_texts(0) == replay.texts[-1]
