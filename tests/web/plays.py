"""Scripted play through the HTTP API, as the page does it: create a table, send the person's moves."""

from __future__ import annotations

import random

#: one table per game for the tests: small settings where a deal is short, and the special controls appear
TABLES = [
    ("pasur", {}),
    ("pishti", {"players": 2}),
    ("pis_yedili", {"players": 2}),
    ("pishe_pasha", {}),
    ("ish", {"players": 3, "card_selection": "agent"}),
]


def create(client, game: str, settings: dict, opponent: str = "heuristic", seed: int | None = None, seat: int = 0):
    body = {"game": game, "settings": settings, "opponent": opponent, "seat": seat}
    if seed is not None:
        body["seed"] = seed
    r = client.post("/api/tables", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def move(client, answer: dict, m: dict):
    view = answer["view"]
    r = client.post(f"/api/tables/{answer['table']}/move",
                    json={"actions": m["actions"], "seat": view["seat"], "step": view["step"]})
    assert r.status_code == 200, r.text
    return r.json()


def play_deal(client, game: str, settings: dict, seed: int, opponent: str = "heuristic", seat: int = 0,
              max_moves: int = 2000, whole_match: bool = False, deals: int = 1):
    """Play (random legal moves, seeded) until ``deals`` deals have ended (or the match, with ``whole_match``).
    Returns every answer the server sent, the creation first."""
    rng = random.Random(seed)
    answer = create(client, game, settings, opponent, seed, seat)
    answers = [answer]
    for _ in range(max_moves):
        view = answer["view"]
        if view["over"] or (not whole_match and view["deals_completed"] >= deals):
            return answers
        answer = move(client, answer, rng.choice(view["moves"]))
        answers.append(answer)
    raise AssertionError(f"{game}: the deal did not end within {max_moves} moves")
