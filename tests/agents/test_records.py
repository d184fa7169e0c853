"""Game records (kahve.agents.evaluation.records), ``kahve play --record``, ``kahve evaluate --record`` and ``kahve replay``."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from kahve import envs
from kahve.agents.evaluation.evaluate import evaluate
from kahve.agents.evaluation.records import (check_record, dumps, load_records, make_record, parse_records, replay_states,
                                  write_records)
from tests.helpers import HANG_S

#: a short game per engine (one deal; Pishti also a whole match, several deals)
CASES = [
    ("pasur", {"episode": "deal"}),
    ("pishti", {"players": 2}),
    ("pishti", {"players": 4, "episode": "deal"}),
    ("pis_yedili", {"players": 3, "episode": "deal"}),
    ("pishe_pasha", {"episode": "deal", "skip_single_choice": False}),
    ("ish", {"players": 3, "card_selection": "agent", "reflex": [1.0, 2.0, 0.5], "max_rounds": 3}),
]


def _play(game, seed, deck=None):
    """A seeded random game on the engine: (its actions, every state's to_dict, the final state)."""
    rng = random.Random(seed)
    state = game.new_state(seed, deck)
    actions, dicts = [], [state.to_dict()]
    while state.current_player is not None:
        action = rng.choice(state.legal_actions())
        state.apply(action)
        actions.append(action)
        dicts.append(state.to_dict())
    return actions, dicts, state


def _cli(*args, stdin="", cwd=None):
    return subprocess.run([sys.executable, "-m", "kahve.scripts.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=HANG_S, cwd=cwd)


@pytest.mark.parametrize("name,settings", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_round_trip_replays_exactly(name, settings, tmp_path):
    game = envs.game_class(name)(**settings)
    path = str(tmp_path / "games.jsonl")
    played = []
    for seed in (3, 2**63 + 11):                          # evaluation seeds are 64-bit
        actions, dicts, final = _play(game, seed)
        record = make_record(game, seed, actions, final, players=["random"] * game.num_players)
        assert record["result"] == make_record(game, seed, actions)["result"]  # also from a replay
        write_records(path, [record], append=True)
        played.append((record, dicts, final))
    loaded = load_records(path)
    assert len(loaded) == 2
    for rec, (record, dicts, final) in zip(loaded, played):
        assert rec == json.loads(dumps(record))
        states = replay_states(rec)
        assert [s.to_dict() for s in states] == dicts
        assert states[-1].winners == final.winners and states[-1].returns == final.returns
        for k in (0, len(states) // 2):                   # the seats' views match too
            for seat in range(game.num_players):
                again = replay_states(rec)[k]
                assert (again.observation(seat) == states[k].observation(seat)).all()


def test_a_preset_deck_is_recorded_and_replayed():
    game = envs.game_class("pishti")(players=2, episode="deal")
    deck = [r + s for s in "CDHS" for r in "A23456789TJQK"]
    actions, dicts, final = _play(game, 5, deck)
    record = make_record(game, 5, actions, final, deck=deck)
    assert record["deck"] == deck
    assert [s.to_dict() for s in replay_states(json.loads(dumps(record)))] == dicts


def _good_record():
    game = envs.game_class("pishti")(players=2, episode="deal")
    actions, _, final = _play(game, 1)
    return make_record(game, 1, actions, final)


def _error(lines) -> str:
    with pytest.raises(ValueError) as err:
        parse_records(lines, "f.jsonl")
    return str(err.value)


def test_malformed_and_foreign_records_are_clear_errors(tmp_path):
    good = _good_record()
    ok = dumps(good)
    assert "f.jsonl line 2: not valid JSON" in _error([ok, "{not json"])
    assert "line 1: not a kahve game record" in _error([json.dumps({"name": "chess", "moves": []})])
    assert "not a kahve game record" in _error([json.dumps({**good, "format": "pgn"})])
    assert "a record is a JSON object" in _error(["[1, 2]"])
    assert "lacks 'actions'" in _error([json.dumps({k: v for k, v in good.items() if k != "actions"})])
    assert "unknown key(s) 'moves'" in _error([json.dumps({**good, "moves": []})])
    assert "format version 2 is not supported" in _error([json.dumps({**good, "version": 2})])
    assert "unknown game 'chess'" in _error([json.dumps({**good, "game": "chess"})])
    msg = _error([json.dumps({**good, "env_version": good["env_version"] + 1})])
    assert "cannot be replayed" in msg and f"pishti v{good['env_version'] + 1}" in msg
    msg = _error([json.dumps({**good, "settings": {**good["settings"], "players": 5}})])
    assert "invalid settings" in msg and "'players'" in msg
    assert "unknown setting 'colour'" in _error([json.dumps({**good, "settings": {"colour": "red"}})])
    assert "\"seed\" must be an integer" in _error([json.dumps({**good, "seed": "abc"})])
    assert "invalid deck" in _error([json.dumps({**good, "deck": ["AS", "AS"]})])
    assert "integer action ids" in _error([json.dumps({**good, "actions": ["7H"]})])
    bad = list(good["actions"])
    bad[3] = next(a for a in range(52) if a not in bad)    # a card that no hand holds at that point
    assert "action 3" in _error([json.dumps({**good, "actions": bad})]) and "illegal on replay" in _error(
        [json.dumps({**good, "actions": bad})])
    assert "not over after all" in _error([json.dumps({**good, "actions": good["actions"][:-1]})])
    assert "is over after" in _error([json.dumps({**good, "actions": good["actions"] + [0]})])
    wrong = {**good, "result": {**good["result"], "winners": [1 - good["result"]["winners"][0]]}}
    assert "the replay ends with" in _error([json.dumps(wrong)])
    assert "\"result\" must be an object" in _error([json.dumps({**good, "result": None})])
    check_record(good)                                     # and the good one passes
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="no game records"):
        load_records(str(empty))
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(ValueError, match="not a text file"):
        load_records(str(binary))


def test_play_record_then_replay_through_the_cli(tmp_path):
    path = tmp_path / "mine.jsonl"
    for seed in ("3", "4"):
        done = _cli("play", "pishti", "--settings", "players=2", "episode=deal", "--bot", "random", "--seed", seed,
                    "--record", str(path), stdin="0\n" * 60)
        assert done.returncode == 0, done.stderr
        assert f"match recorded in {path} (seed {seed})" in done.stdout
    records = load_records(str(path))
    assert [r["seed"] for r in records] == [3, 4]
    assert records[0]["players"] == ["you", "random"]
    final = replay_states(records[1])[-1]
    assert final.winners == records[1]["result"]["winners"]

    moves = len(records[1]["actions"])
    done = _cli("replay", str(path), "--game-index", "1", "--seat", "0", stdin="\nn\np\n5\ns 1\na\nx\n999\nq\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"pishti v{records[1]['env_version']}, seed 4, {moves} moves" in out
    for expected in ("position 0/", "position 1/", "position 2/", "position 5/", "player 1's view", "all hands",
                     f"no position 999; positions are 0 to {moves}", "commands:"):
        assert expected in out, expected
    assert out.count(f"== position 1/{moves}") == 2        # next, next, previous
    state = replay_states(records[1])[5]
    assert state.render(1) in out and state.render(None) in out
    move = state.describe_action(records[1]["actions"][5])
    assert f"move 6: player {state.current_player} (" in out and move in out

    done = _cli("replay", str(path), "--all", stdin=f"{len(records[0]['actions'])}\nn\n")   # jump to the end
    assert "== game over: winners" in done.stdout and "at the end of the game" in done.stdout

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "something-else"}\n')
    done = _cli("replay", str(bad))
    assert done.returncode == 2 and "kahve replay: error:" in done.stderr and "line 1" in done.stderr
    done = _cli("replay", str(path), "--game-index", "7")
    assert done.returncode == 2 and "--game-index must be from 0 to 1" in done.stderr


def test_evaluate_records_are_deterministic_and_replay(tmp_path):
    cli_dir, api_dir = tmp_path / "cli", tmp_path / "api"
    done = _cli("evaluate", "pishti", "random", "heuristic", "--settings", "players=2", "episode=deal",
                "--games", "6", "--workers", "1", "--seed", "9", "--record", str(cli_dir))
    assert done.returncode == 0, done.stderr
    report = evaluate("pishti", "random", "heuristic", games=6, settings={"players": 2, "episode": "deal"},
                      seed=9, record_dir=str(api_dir), workers=2)   # the same records whatever the workers
    name = os.path.basename(report["records"])
    assert name == "pishti__random__heuristic__seed9.jsonl" and f"game records: {cli_dir / name}" in done.stdout
    assert (cli_dir / name).read_bytes() == (api_dir / name).read_bytes()
    records = load_records(report["records"])            # loading replays each record and checks its result
    assert len(records) == report["games"] == 6
    a_wins = 0
    for k, rec in enumerate(records):                      # units in order, A in seat 0 then seat 1
        a_seat = k % 2
        assert rec["players"][a_seat] == "random" and rec["players"][1 - a_seat] == "heuristic"
        winners = replay_states(rec)[-1].winners
        assert winners == rec["result"]["winners"]
        a_wins += winners == [a_seat]
    assert a_wins == report["wins"]
    with pytest.raises(ValueError, match="is a folder; give one of its record files, e.g. .*seed9.jsonl"):
        load_records(str(api_dir))
    assert records[0]["seed"] == records[1]["seed"] != records[2]["seed"]     # mirrored deals share a seed
    assert "records" not in evaluate("pishti", "random", "random", games=2, settings={"players": 2,
                                                                                    "episode": "deal"})


# ----- damaged and foreign record files (issue 16) -------------------------------------------------------------
def _random_record(seed: int = 9) -> tuple:
    from kahve.agents import make_policy
    from kahve.agents.evaluation.match import Match
    game = envs.game_class("pishti")(players=2)
    match = Match(game, [make_policy("random", game, 1), make_policy("random", game, 2)], seed=seed)
    match.play_bots()
    return game, make_record(game, seed, match.actions, match.state)


def test_one_bad_line_does_not_cost_the_other_records(tmp_path):
    good = tmp_path / "good.jsonl"
    line = dumps(_random_record()[1])
    good.write_text(line + "\n{not json\n" + line + "\n" + "[" * 100_000 + "\n")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        load_records(str(good))
    problems = []
    records = load_records(str(good), problems=problems)
    assert len(records) == 2
    assert len(problems) == 2 and "line 2" in problems[0] and "line 4: JSON nested too deeply" in problems[1]


@pytest.mark.parametrize("change,match", [
    (lambda r: r["result"].update(returns=5), "\"result\".'returns' must be a list of numbers"),
    (lambda r: r["result"].update(scores=["a", "b"]), "\"result\".'scores' must be a list of numbers"),
    (lambda r: r.update(players=[1, 2]), "\"players\" must list one name \\(a string\\) per seat"),
])
def test_malformed_results_and_players_are_clear_errors(change, match):
    record = _random_record()[1]
    change(record)
    with pytest.raises(ValueError, match=match):
        check_record(record, "x.jsonl line 1")


def test_play_record_into_a_folder_keeps_the_match(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "play", "pishti", "--settings", "players=2",
                        "target_score=50", "--seed", "4", "--bot", "random", "--record", str(tmp_path)],
                       input="0\n" * 3000, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    (path,) = tmp_path.glob("pishti_4.jsonl")
    assert load_records(str(path))[0]["seed"] == 4
