"""Bad requests get a clear 4xx answer, never change a table, and never take the server down; tables are
private to their browser session and expire; a finished match downloads as a record that ``kahve replay`` reads."""

from __future__ import annotations

import httpx
import pytest

from kahve.scripts.web.app import MAX_BODY

from .helpers import LiveServer
from .plays import create, move, play_deal


def snapshot(client, tid):
    r = client.get(f"/api/tables/{tid}")
    assert r.status_code == 200, r.text
    data = r.json()
    return data["view"], len(data["log"])


def refused(r, status, words):
    assert r.status_code == status, (r.status_code, r.text)
    data = r.json()
    assert data["status"] == status and words.lower() in data["error"].lower(), data["error"]
    return data["error"]


@pytest.fixture
def table(client):
    answer = create(client, "pishti", {"players": 2}, seed=21)
    return answer


def post_move(client, tid, body):
    return client.post(f"/api/tables/{tid}/move", json=body)


# ----- unknown, expired, foreign tables -----------------------------------------------------------------------
def test_unknown_table(client):
    for method, path in [("GET", "/api/tables/nope"), ("POST", "/api/tables/nope/move"),
                         ("POST", "/api/tables/nope/new"), ("GET", "/api/tables/nope/record")]:
        r = client.request(method, path, json={"action": 1} if method == "POST" else None)
        refused(r, 404, "no such table")


def test_another_sessions_table_is_not_there(server, client, table):
    with httpx.Client(base_url=server.url) as other:
        other.get("/")
        tid = table["table"]
        refused(other.get(f"/api/tables/{tid}"), 404, "no such table")
        refused(post_move(other, tid, {"action": table["view"]["moves"][0]["actions"][0]}), 404, "no such table")
        refused(other.get(f"/api/tables/{tid}/record"), 404, "no such table")
    with httpx.Client(base_url=server.url) as cookieless:
        refused(cookieless.get(f"/api/tables/{tid}"), 404, "no such table")
    assert snapshot(client, tid)[0]["step"] == table["view"]["step"]


def test_table_ids_are_unguessable(client):
    ids = {create(client, "ish", {"players": 2})["table"] for _ in range(4)}
    assert len(ids) == 4 and all(len(t) >= 22 for t in ids)


def test_expired_table():
    now = [1000.0]
    with LiveServer(idle_seconds=60, clock=lambda: now[0]) as srv, httpx.Client(base_url=srv.url) as c:
        c.get("/")
        answer = create(c, "pasur", {})
        tid = answer["table"]
        now[0] += 59
        assert c.get(f"/api/tables/{tid}").status_code == 200      # a request keeps it alive
        now[0] += 61
        refused(c.get(f"/api/tables/{tid}"), 410, "expired")
        refused(post_move(c, tid, {"actions": answer["view"]["moves"][0]["actions"]}), 410, "expired")
        assert tid not in srv.manager.tables


# ----- malformed and refused moves ----------------------------------------------------------------------------
def test_illegal_move_changes_nothing(client, table):
    tid = table["table"]
    before = snapshot(client, tid)
    legal = {m["actions"][0] for m in table["view"]["moves"]}
    illegal = next(a for a in range(52) if a not in legal)
    msg = refused(post_move(client, tid, {"action": illegal, "seat": 0}), 409, "illegal move")
    assert "legal:" in msg
    assert snapshot(client, tid) == before


def test_malformed_moves(client, table):
    tid = table["table"]
    before = snapshot(client, tid)
    legal = table["view"]["moves"][0]["actions"][0]
    cases = [
        ({}, "needs \"action\""),
        ({"actions": []}, "non-empty list"),
        ({"actions": "7H"}, "non-empty list"),
        ({"action": "7H"}, "integers"),
        ({"action": 1.5}, "integers"),
        ({"action": True}, "integers"),
        ({"action": None}, "integers"),
        ({"action": 52}, "outside 0..51"),
        ({"action": -1}, "outside 0..51"),
        ({"actions": [legal] * 65}, "at most 64"),
        ({"action": legal, "extra": 1}, "unknown field"),
        ({"action": legal, "seat": "0"}, "\"seat\" must be an integer"),
        ({"action": legal, "step": "x"}, "\"step\" must be an integer"),
    ]
    for body, words in cases:
        refused(post_move(client, tid, body), 400, words)
    assert snapshot(client, tid) == before


def test_a_body_that_is_not_a_json_object(client, table):
    tid = table["table"]
    before = snapshot(client, tid)
    url = f"/api/tables/{tid}/move"
    refused(client.post(url, content=b"{not json", headers={"Content-Type": "application/json"}), 400, "not valid JSON")
    refused(client.post(url, content=b"\xff\xfe", headers={"Content-Type": "application/json"}), 400, "not valid JSON")
    refused(client.post(url, json=[1, 2]), 400, "JSON object")
    refused(client.post(url, content=b"action=3", headers={"Content-Type": "application/x-www-form-urlencoded"}),
            415, "as JSON")
    refused(client.post(url, content=b'{"action": 3}'), 415, "as JSON")     # no content type
    assert snapshot(client, tid) == before


def test_oversized_body(client, table):
    tid = table["table"]
    before = snapshot(client, tid)
    big = b'{"action": 1, "pad": "' + b"x" * (MAX_BODY + 10) + b'"}'
    refused(client.post(f"/api/tables/{tid}/move", content=big, headers={"Content-Type": "application/json"}),
            413, "too large")

    def chunks():                                   # no Content-Length: the size is counted as it arrives
        yield b'{"action": 1, "pad": "'
        for _ in range(40):
            yield b"y" * 1024
        yield b'"}'
    refused(client.post(f"/api/tables/{tid}/move", content=chunks(), headers={"Content-Type": "application/json"}),
            413, "too large")
    refused(client.post("/api/tables", content=big, headers={"Content-Type": "application/json"}), 413, "too large")
    assert snapshot(client, tid) == before


def test_malformed_bodies_of_any_shape(server, client, table):
    """Issue 58: a deeply nested body was a 500 (RecursionError), a body shorter than its Content-Length was never
    answered. Every shape is a 4xx now, and the table is unchanged."""
    import socket
    tid = table["table"]
    before = snapshot(client, tid)
    url = f"/api/tables/{tid}/move"
    json_type = {"Content-Type": "application/json"}
    nested = b"[" * 8000 + b"]" * 8000                       # under the size limit, deeper than Python parses
    refused(client.post(url, content=nested, headers=json_type), 400, "nested too deeply")
    refused(client.post(url, content=b'{"a":' * 2500 + b"1" + b"}" * 2500, headers=json_type), 400, "nested too deeply")
    refused(client.post(url, content=b'{"action": ' + b"9" * 5000 + b"}", headers=json_type), 400, "not usable JSON")
    refused(client.post(url, content=b'{"action": [[[[1]]]]}', headers=json_type), 400, "integers")
    refused(client.post("/api/tables", content=b'{"game": {"x": [[[]]]}}', headers=json_type), 400, "unknown game")
    refused(client.post("/api/check", content=nested, headers=json_type), 400, "nested too deeply")
    # a body shorter than its Content-Length: answered when the rest does not come, the connection left open
    host, port = server.url.split("//")[1].split(":")
    for declared, sent in ((100, b'{"action": 1'), (50, b""), (MAX_BODY, b"{")):
        with socket.create_connection((host, int(port))) as sock:
            sock.settimeout(60)                           # a guard against a hang, not a speed bar
            cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
            sock.sendall(f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         f"Cookie: {cookie}\r\nContent-Length: {declared}\r\n\r\n".encode() + sent)
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
            answer = answer.decode("latin-1")
        assert answer.startswith("HTTP/1.1 400"), answer[:200]
        assert "did not arrive in full" in answer
    assert snapshot(client, tid) == before
    assert client.get("/api/games").status_code == 200          # and the server goes on


def test_wrong_seat(client):
    answer = create(client, "pishti", {"players": 4}, seat=2, seed=4)
    tid = answer["table"]
    before = snapshot(client, tid)
    a = answer["view"]["moves"][0]["actions"]
    for seat in (0, 1, 3):
        refused(post_move(client, tid, {"actions": a, "seat": seat}), 403, f"seat {seat} is not yours")
    assert snapshot(client, tid) == before
    assert post_move(client, tid, {"actions": a, "seat": 2}).status_code == 200


def test_stale_move(client, table):
    tid = table["table"]
    m = table["view"]["moves"][0]
    step = table["view"]["step"]
    after = move(client, table, m)
    before = snapshot(client, tid)
    refused(post_move(client, tid, {"actions": after["view"]["moves"][0]["actions"], "step": step}), 409, "stale")
    assert snapshot(client, tid) == before


def test_a_sequence_that_turns_illegal_part_way_changes_nothing(client):
    """A move of several actions (a Pâsur capture's picks) is checked whole before any of it is applied."""
    answer = create(client, "pasur", {}, seed=1)
    tid = answer["table"]
    before = snapshot(client, tid)
    first = answer["view"]["moves"][0]["actions"][0]
    refused(post_move(client, tid, {"actions": [first, first]}), 409, "")
    assert snapshot(client, tid) == before


def test_finished_match(client):
    answers = play_deal(client, "pishe_pasha", {"max_turns": 30}, seed=3, whole_match=True)
    last = answers[-1]
    assert last["view"]["over"]
    tid = last["table"]
    refused(post_move(client, tid, {"action": 0}), 409, "the match is over")
    assert client.post(f"/api/tables/{tid}/new", json={}).status_code == 200


def test_record_only_when_the_match_is_over(client, table, tmp_path):
    refused(client.get(f"/api/tables/{table['table']}/record"), 409, "not over yet")


# ----- table creation -----------------------------------------------------------------------------------------
def test_bad_tables(client):
    cases = [
        ({"game": "chess"}, 400, "unknown game"),
        ({"game": None}, 400, "unknown game"),
        ({"game": "pishti", "settings": [1]}, 400, "settings"),
        ({"game": "pishti", "settings": {"players": 3}}, 400, "players"),
        ({"game": "pishti", "settings": {"colour": "red"}}, 400, "unknown setting"),
        ({"game": "pishti", "settings": {"target_score": "many"}}, 400, "“points to win”: 'many'"),
        ({"game": "pishti", "settings": {"episode": "deal"}}, 400, "fixed"),
        ({"game": "pishti", "seat": 9}, 400, "seat"),
        ({"game": "pishti", "seat": "0"}, 400, "seat"),
        ({"game": "pishti", "opponent": "ismcts:100000000"}, 400, "unknown opponent"),
        ({"game": "pishti", "opponent": "/etc/passwd"}, 400, "unknown opponent"),
        ({"game": "pishti", "settings": {"players": 4}, "opponent": "pishti/ppo_2p"}, 400, "does not fit"),
        ({"game": "pishti", "seed": -1}, 400, "seed"),
    ]
    for body, status, words in cases:
        refused(client.post("/api/tables", json=body), status, words)


def test_check_explains_settings_and_opponents(client):
    r = client.post("/api/check", json={"game": "pishti", "settings": {"players": 4}}).json()
    assert r["valid"] and r["players"] == 4
    bot = next(o for o in r["opponents"] if o["spec"] == "pishti/ppo_2p")
    assert not bot["fits"] and "trained for 2 players" in bot["reason"]
    r = client.post("/api/check", json={"game": "pishti", "settings": {"players": 2}}).json()
    assert next(o for o in r["opponents"] if o["spec"] == "pishti/ppo_2p")["fits"]
    r = client.post("/api/check", json={"game": "pasur", "settings": {"target_score": 5}}).json()
    assert not r["valid"] and "“points to win”" in r["error"] and "target_score" not in r["error"]   # player words


# ----- the server itself --------------------------------------------------------------------------------------
def test_unknown_paths_and_methods(client):
    refused(client.get("/api/nothing"), 404, "not found")
    refused(client.delete("/api/tables"), 405, "not allowed")
    refused(client.get("/api/tables/x/move"), 405, "not allowed")


def test_a_foreign_host_name_is_refused(server):
    """Bound to localhost, the server answers only requests naming a local host (no DNS rebinding)."""
    r = httpx.get(server.url + "/api/games", headers={"Host": "evil.example:8000"})
    assert r.status_code == 400


def test_the_server_survives_everything_above(client):
    assert client.get("/api/games").status_code == 200
    assert client.get("/").status_code == 200


def test_an_internal_error_is_a_500_and_the_table_goes_on(server, client, table, monkeypatch):
    """A bot that fails (here: made to) is a 500 with its message; the person's move stands, and the next look at
    the table lets the bot move, so the match goes on."""
    tid = table["table"]
    tab = server.manager.tables[tid]

    def broken(*a, **k):
        raise RuntimeError("boom")
    monkeypatch.setattr(tab.bots[1], "act", broken)
    r = post_move(client, tid, {"actions": table["view"]["moves"][0]["actions"]})
    assert r.status_code == 500 and "boom" in r.json()["error"]
    assert tab.state.current_player == 1 and len(tab.actions) == table["view"]["step"] + 1
    monkeypatch.undo()
    again = client.get(f"/api/tables/{tid}").json()
    assert again["events"] and again["view"]["your_turn"]
    assert post_move(client, tid, {"actions": again["view"]["moves"][0]["actions"]}).status_code == 200


def test_record_downloads_and_replays(client, tmp_path):
    """A finished match downloads in the record format; ``kahve replay`` reads it."""
    from kahve.agents.evaluation.records import load_records
    from kahve.scripts.replay import replay

    answers = play_deal(client, "ish", {"players": 2, "bankroll": 3, "max_bet": 3}, seed=2, whole_match=True)
    tid = answers[-1]["table"]
    r = client.get(f"/api/tables/{tid}/record")
    assert r.status_code == 200
    assert r.headers["content-disposition"].startswith("attachment; filename=\"kahve_ish_")
    path = tmp_path / "m.jsonl"
    path.write_bytes(r.content)
    record = load_records(str(path))[0]
    assert record["players"] == ["you", "heuristic"] and record["seed"] == 2
    lines = []
    answers_typed = iter(["n", "q"])
    assert replay(record, inp=lambda prompt: next(answers_typed), out=lines.append) == 0
    assert any("ish" in line for line in lines)


def test_a_busy_table_refuses_a_second_request(server, client, table):
    tab = server.manager.tables[table["table"]]
    with tab.lock:                                   # as while the bots think on another request
        refused(post_move(client, table["table"], {"actions": table["view"]["moves"][0]["actions"]}), 409, "busy")
    assert post_move(client, table["table"], {"actions": table["view"]["moves"][0]["actions"]}).status_code == 200


def test_limits_on_tables():
    """A session's running matches are never dropped to make room (issue 58: the 9th table used to drop the
    oldest, which then said it had expired): a finished one makes room, else the session is asked to close one.
    A full server says so."""
    with LiveServer(per_session=2, max_tables=3) as srv, httpx.Client(base_url=srv.url) as c:
        c.get("/")
        first, second = (create(c, "ish", {"players": 2})["table"] for _ in range(2))
        refused(c.post("/api/tables", json={"game": "ish", "settings": {"players": 2}}), 409, "close one")
        assert c.get(f"/api/tables/{first}").status_code == 200 and c.get(f"/api/tables/{second}").status_code == 200
        assert c.delete(f"/api/tables/{first}").status_code == 200
        refused(c.get(f"/api/tables/{first}"), 404, "no such table")
        third = create(c, "ish", {"players": 2})["table"]
        assert {t["table"] for t in c.get("/api/tables").json()["tables"]} == {second, third}
        # a finished match makes room for a new one
        srv.manager.tables[second].state.current_player = None
        fourth = create(c, "ish", {"players": 2})["table"]
        assert {t["table"] for t in c.get("/api/tables").json()["tables"]} == {third, fourth}
        with httpx.Client(base_url=srv.url) as other:
            other.get("/")
            create(other, "ish", {"players": 2})
            refused(other.post("/api/tables", json={"game": "ish", "settings": {"players": 2}}), 503, "already holds")


def test_the_page_loads_only_its_own_files(client):
    r = client.get("/")
    assert r.status_code == 200 and "kahve" in r.text
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert client.get("/static/app.js").status_code == 200


# ----- going back to a table, the guide ------------------------------------------------------------------------
def test_a_session_lists_its_tables_and_closes_them(server, client):
    a = create(client, "pasur", {}, seed=1)["table"]
    b = create(client, "pis_yedili", {"players": 3}, seed=2)["table"]
    listed = client.get("/api/tables").json()["tables"]
    mine = {t["table"]: t for t in listed}
    assert {a, b} <= set(mine)
    assert mine[b]["title"] == "Pis Yedili" and mine[b]["players"] == 3 and not mine[b]["over"]
    assert "deal 1" in mine[b]["where"] and [t["table"] for t in listed].index(b) < [t["table"] for t in listed].index(a)
    with httpx.Client(base_url=server.url) as other:              # another browser sees none of them
        other.get("/")
        assert other.get("/api/tables").json() == {"tables": []}
        refused(other.delete(f"/api/tables/{a}"), 404, "no such table")
    assert client.delete(f"/api/tables/{a}").status_code == 200
    assert a not in {t["table"] for t in client.get("/api/tables").json()["tables"]}


@pytest.mark.parametrize("game", ["pasur", "pishti", "pis_yedili", "pishe_pasha", "ish"])
def test_the_guide_in_player_words_with_the_house_settings(client, game):
    settings = {"pasur": {"target_score": 101}, "pishti": {"players": 4}, "pis_yedili": {"ten_rule": "reverse"},
                "pishe_pasha": {"match_target": 100}, "ish": {"players": 5}}[game]
    g = client.post("/api/guide", json={"game": game, "settings": settings}).json()
    text = " ".join(b["text"] for b in g["blocks"])
    heads = [b["text"] for b in g["blocks"] if b["kind"] == "h2"]
    assert "how to play" in g["title"].lower() and "House settings in force" in heads
    assert {"Turn", "Scoring"} <= set(heads) or game == "ish"
    house = {"pasur": "101 points", "pishti": "4 players", "pis_yedili": "reverses the direction",
             "pishe_pasha": "100", "ish": "5 players"}[game]
    assert house in text
    assert "`" not in text and not any(k in text for k in ("target_score", "skip_single_choice", "PY-", "PA-", "C-4"))
    table = create(client, game, settings, seed=3)
    assert client.get(f"/api/tables/{table['table']}/guide").json() == g     # the table's own settings
