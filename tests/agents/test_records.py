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
from kahve.agents.evaluation.records import (check_record, checksum, dumps, load_records, make_record, parse_records,
                                            replay_states, seed_deck, write_records)
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
    good.write_text(line + "\n{not json\n" + line + "\n" + "[" * 100_000 + "\n" + '{"seed": ' + "9" * 100_000 + "}\n")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        load_records(str(good))
    problems = []
    records = load_records(str(good), problems=problems)
    assert len(records) == 2
    assert len(problems) == 3 and "line 2" in problems[0] and "line 4: JSON nested too deeply" in problems[1]
    assert "line 5: a number of more than" in problems[2]


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


# ----- records people hand each other: changed, tampered with, endless, with a byte-order mark -----------------
def _deal_record(name: str = "pishti", seed: int = 1, **settings):
    """A checksummed record of one random deal, and its game."""
    game = envs.game_class(name)(**({"players": 2, "episode": "deal"} if name == "pishti" else settings))
    actions, _, final = _play(game, seed)
    return game, make_record(game, seed, actions, final)


def _older(record: dict) -> dict:
    """The record as a kahve before checksums wrote it."""
    return {k: v for k, v in record.items() if k != "checksum"}


def test_every_record_kahve_writes_has_a_checksum_that_only_its_content_gives(tmp_path):
    game, record = _deal_record()
    assert record["checksum"] == checksum(record) and record["checksum"].startswith("sha256:")
    # evaluate's records are built by build_record: they carry one too
    report = evaluate("pishti", "random", "random", games=2, settings={"players": 2, "episode": "deal"}, seed=3,
                      record_dir=str(tmp_path))
    assert all(r["checksum"] == checksum(r) for r in load_records(report["records"]))
    # the same content written another way (keys reordered, spaced out) is the same record, not a changed one
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(dict(sorted(record.items(), reverse=True)), indent=None, separators=(", ", ": ")))
    assert load_records(str(other)) == [record]


def test_a_move_changed_to_another_legal_one_with_the_same_outcome_is_named_changed(tmp_path):
    game, record = _deal_record()
    actions = record["actions"]
    states = replay_states(record)
    edited = None                       # the latest decision that has another legal move ending the same way
    for k in range(len(actions) - 1, -1, -1):
        for alt in states[k].legal_actions():
            candidate = actions[:k] + [alt] + actions[k + 1:]
            if alt != actions[k] and _replays(_older({**record, "actions": candidate})):
                edited = {**record, "actions": candidate}
                break
        if edited:
            break
    assert edited is not None
    # without the checksum (an older record) the edit cannot be seen: the game is legal and ends as recorded
    check_record(_older(edited))
    with pytest.raises(ValueError, match=r"^f.jsonl line 1: the record was changed after it was written "
                                         r"\(checksum sha256:"):
        parse_records([dumps(edited)], "f.jsonl")
    # an edit that breaks the replay says both: that the file was changed, and what no longer replays
    broken = {**record, "actions": actions[:-1]}
    msg = _error([dumps(broken)])
    assert "changed after it was written" in msg and "not over after all" in msg
    # a damaged checksum is a corrupt record, not a changed one
    assert "\"checksum\" must be \"sha256:\" and 64 hex digits" in _error([dumps({**record, "checksum": "md5:x"})])
    # through the command line: one line on stderr, exit status 2, nothing replayed
    path = tmp_path / "edited.jsonl"
    path.write_text(dumps(edited) + "\n")
    done = _cli("replay", str(path), stdin="q\n")
    assert done.returncode == 2 and "changed after it was written (checksum sha256:" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "position 0" not in done.stdout


def _replays(record: dict) -> bool:
    try:
        replay_states(record)
        return True
    except ValueError:
        return False


def _swapped(cards: list, i: int, j: int) -> list:
    cards = list(cards)
    cards[i], cards[j] = cards[j], cards[i]
    return cards


@pytest.mark.parametrize("name,tamper", [
    ("pishti", lambda d: _swapped(d, 0, 1)),               # two of the face-down opening cards
    ("pishti", lambda d: _swapped(d, 50, 51)),             # the last two stock cards (both to one hand)
    ("pishe_pasha", lambda d: d[26:] + d[:26]),            # the two stocks exchanged
], ids=["pishti-face-down", "pishti-last-stock", "pishe_pasha-stocks"])
def test_a_deck_the_seed_does_not_deal_is_refused_as_tampered(name, tamper):
    game, record = _deal_record(name, episode="deal", skip_single_choice=False)
    card = game.state_class.card_str
    dealt = [card(c) for c in seed_deck(game, record["seed"])]
    # the seed's own deck, spelled out in an older record, is no tampering
    check_record({**_older(record), "deck": dealt})
    tampered = {**_older(record), "deck": tamper(dealt)}
    if name == "pishti":                # these swaps change nothing a replay can see: only the seed can tell
        replay_states(tampered, game=game)
    with pytest.raises(ValueError, match=rf"^f.jsonl line 1: tampered with: its \"deck\" is not the one seed "
                                         rf"{record['seed']} deals"):
        parse_records([dumps(tampered)], "f.jsonl")
    # in a checksummed record the same deck is a change after writing
    assert "changed after it was written" in _error([dumps({**record, "deck": tamper(dealt)})])
    # a preset deck that kahve wrote (and checksummed) is no tampering: the checksum vouches for it
    check_record(make_record(game, record["seed"], _play(game, record["seed"], tamper(dealt))[0],
                             deck=tamper(dealt)))


@pytest.mark.parametrize("name,settings", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_seed_deck_is_the_deck_the_engine_deals_for_the_seed(name, settings):
    """seed_deck mirrors the engine's first shuffle: if the engine changed how a seed becomes a deck, the tampering
    check above would refuse honest records; this says so first."""
    game = envs.game_class(name)(**settings)
    for seed in (0, 7, 2**63 + 11):
        deck = seed_deck(game, seed)
        assert game.new_state(seed, deck).to_dict() == game.new_state(seed).to_dict()
        assert game.new_state(seed, _swapped(deck, 0, len(deck) - 1)).to_dict() != game.new_state(seed).to_dict()


def test_a_record_file_is_read_only_when_it_is_a_regular_file_of_bounded_size(tmp_path, monkeypatch):
    from kahve.agents.evaluation import records
    if os.path.exists("/dev/zero"):     # an endless file: refused at once, never read to its end
        # with its memory capped, so that a kahve which reads it anyway fails here instead of filling the machine
        done = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "replay", "/dev/zero"], capture_output=True,
                              text=True, timeout=HANG_S, preexec_fn=_cap_memory)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
        assert "kahve replay: error: /dev/zero: not a regular file" in done.stderr
    line = dumps(_deal_record()[1])
    path = tmp_path / "games.jsonl"
    path.write_text(line + "\n")
    monkeypatch.setattr(records, "MAX_FILE_BYTES", len(line))   # the limit, one byte short of this file
    with pytest.raises(ValueError, match=f"larger than {len(line):,} bytes, the most a record file may have"):
        load_records(str(path))


def _cap_memory() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))      # 1 GiB: kahve replay needs a small part


def test_a_byte_order_mark_before_a_record_is_no_content(tmp_path):
    game, record = _deal_record()
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + dumps(record).encode() + b"\n")     # as some Windows editors save it
    assert load_records(str(path)) == [record]
    done = _cli("replay", str(path), stdin="q\n")
    assert done.returncode == 0, done.stderr
    assert "position 0" in done.stdout and "no checksum" not in done.stdout
    path.write_bytes(b"\xef\xbb\xbf" + dumps(_older(record)).encode() + b"\n")   # an older record: loads, noted
    done = _cli("replay", str(path), stdin="q\n")
    assert done.returncode == 0 and "note: this record has no checksum" in done.stdout


@pytest.mark.parametrize("where", ["proc", "under_a_file", "folder_of_a_file"])
def test_play_refuses_a_record_path_it_could_not_write_before_the_match(where, tmp_path):
    """Found only after the match, a bad --record path would cost the person the game they just played."""
    (tmp_path / "notes.txt").write_text("mine\n")
    path = {"proc": "/proc", "under_a_file": str(tmp_path / "notes.txt" / "sub" / "games.jsonl"),
            "folder_of_a_file": str(tmp_path / "notes.txt" / "sub")}[where]
    if where == "proc" and not os.path.isdir("/proc/self"):
        pytest.skip("no /proc on this system")
    done = _cli("play", "pishti", "--settings", "players=2", "episode=deal", "--bot", "random", "--seed", "4",
                "--record", path, stdin="0\n" * 60)
    assert done.returncode == 2 and "kahve play: error: --record " in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "your moves" not in done.stdout              # refused before the first card
    assert (tmp_path / "notes.txt").read_text() == "mine\n"
