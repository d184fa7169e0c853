"""``kahve play`` as a player meets it: every move announced (forced ones included) and nothing hidden named,
the player guide on ``?``, deal and match ends in words, bot files that set the table, and no Python warning
text on the screen. A match is played through the command line on standard input, in this process (so the
engine's hooks can be watched, tests/envs/test_move_log.py), and through a subprocess where the real
command matters."""

from __future__ import annotations

import io
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kahve import envs
from kahve.scripts import cli
from kahve.scripts.play import rules_summary
from tests.envs.test_move_log import MOVE_LINE, card_tokens, check_log, watching
from tests.helpers import HANG_S

ROOT = Path(__file__).resolve().parents[2]
PISHTI_BOT = ROOT / "checkpoints" / "pishti" / "ppo_2p.onnx"
ISH_BOT = ROOT / "checkpoints" / "ish" / "ppo_every_table.onnx"
RULE_ID = re.compile(r"\b(?:C|PI|PA|PY|PP|IS)-\d+\b")
FILE_PATH = re.compile(r"\w/\w|\.(?:md|py|txt|json|onnx)\b|shared/|seeds?\b")
WARNING_TEXT = re.compile(r"Warning|warnings\.warn|Traceback|\.py:\d+")


def kahve(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "kahve.scripts.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=HANG_S, cwd=ROOT)


def play_in_process(monkeypatch, capsys, args, stdin):
    """``kahve play ARGS`` with ``stdin``, in this process; (exit status, stdout lines)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli.main(["play", *args])
    # input() writes its "> " prompt with no newline: on piped input the next line follows it directly
    return code, [re.sub(r"^(> )+", "", ln) for ln in capsys.readouterr().out.splitlines()]


# game, settings, seat: short full matches, every game, one seat that is not 0
MATCHES = [
    ("pishti", ["players=2", "target_score=50"], 0, "heuristic"),
    ("pasur", ["target_score=25"], 1, "random"),
    ("pis_yedili", ["players=2", "game_end_penalty=60"], 0, "random"),
    ("pis_yedili", ["players=3", "game_end_penalty=50"], 2, "random"),
    ("pishe_pasha", [], 0, "heuristic"),
    ("ish", ["players=3", "max_rounds=6"], 2, "random"),
]


@pytest.mark.parametrize("game,settings,seat,bot", MATCHES,
                         ids=[f"{g}-{'-'.join(s) or 'default'}-seat{p}" for g, s, p, _ in MATCHES])
def test_a_full_match_announces_every_applied_action_and_no_hidden_card(game, settings, seat, bot, monkeypatch,
                                                                       capsys):
    state_class = envs.game_class(game).state_class
    made = []
    original_new_state = envs.game_class(game).new_state

    def new_state(self, *args, **kwargs):
        st = original_new_state(self, *args, **kwargs)
        made.append(st)
        return st

    monkeypatch.setattr(envs.game_class(game), "new_state", new_state)
    with watching(monkeypatch, state_class, seat) as watch:
        code, lines = play_in_process(monkeypatch, capsys, [game, "--settings", *settings, "--seat", str(seat),
                                                            "--seed", "5", "--bot", bot], "0\n" * 5000)
    assert code == 0, "\n".join(lines[-20:])
    state = next(st for st in made if st.move_log is not None)
    assert state.current_player is None
    texts = check_log(state, watch)          # every action logged, no card the seat could not see
    announced = [ln for ln in lines if MOVE_LINE.match(ln)]
    assert len(announced) == watch.applied, f"{len(announced)} moves announced, {watch.applied} applied"
    # what was printed is the seat's view of the log, in order (events indented), and nothing else names cards
    expected = [t if m.seat is not None else "  " + t for m, t in
                zip(state.move_log, state.move_texts(seat))]
    it = iter(lines)
    assert all(any(ln == e for ln in it) for e in expected), "the log is printed in order"
    assert sum(not m.forced for m in state.move_log if m.seat == seat and m.action is not None) \
        == sum(ln.startswith("your moves:") for ln in lines)
    assert sum(m.forced for m in state.move_log if m.action is not None) > 0 or game == "ish"
    assert any(re.search(r"\((only choice|last card)\)$", ln) for ln in announced) or game == "ish"
    # issue 58: the person is "player k (you)" in every line, never "player k" alone
    assert not any(re.search(rf"\bplayer {seat}\b(?! \(you\))", ln) for ln in announced)
    for ln in lines:
        assert not WARNING_TEXT.search(ln), ln
    assert len(texts) == len(state.move_log)
    # the deal-end and match-end screens: in words, once
    assert sum(bool(re.match(r"  match (over|stopped) ", ln)) for ln in lines) == 1
    assert not any(re.search(r"\[-?\d+(, -?\d+)+\]", ln) for ln in lines), "a Python list shown"
    assert not any(re.search(r"\b(NORMAL|POST_DRAW|FACING_SEVEN|FOLLOW_UP|FIRST_ROUND|PENDING|MAIN|BET|CALL)\b", ln)
                   for ln in lines)
    assert any("(you)" in ln for ln in lines if ln.startswith("to move:"))


def test_pishti_forced_last_cards_are_announced_and_opening_card_shown_first(monkeypatch, capsys):
    code, lines = play_in_process(monkeypatch, capsys, ["pishti", "--settings", "players=2", "target_score=50",
                                                        "--seed", "9", "--bot", "random"], "0\n" * 3000)
    assert code == 0
    plays = [ln for ln in lines if MOVE_LINE.match(ln)]
    deals = sum(1 for ln in lines if re.match(r"  deal \d+ over$", ln))
    assert len(plays) == 48 * deals                        # 48 plays a deal, the forced last cards included
    assert sum(ln.endswith(" (last card)") for ln in plays) == 12 * deals   # both players' last card of 6 hands
    first_move = next(i for i, ln in enumerate(lines) if MOVE_LINE.match(ln))
    assert any("turned up on the pile" in ln for ln in lines[:first_move])
    assert any(ln.startswith("  hand 1 of 6") and "your cards:" in ln for ln in lines[:first_move])
    assert "side 0 (player 0 = you)" in "\n".join(lines) and "of 48 cards played" in "\n".join(lines)


@pytest.mark.parametrize("game", envs.GAMES)
def test_question_mark_shows_the_player_guide(game, monkeypatch, capsys):
    settings = ["players=2"] if game in ("pishti", "pis_yedili", "ish") else []
    code, lines = play_in_process(monkeypatch, capsys, [game, "--settings", *settings, "--seed", "1"], "?\nq\n")
    assert code == 1
    text = "\n".join(lines)
    gc = envs.game_class(game)
    guide = rules_summary(gc(**gc.settings_spec.parse_strings(settings)))
    assert guide.strip() in text
    for section in ("== Turn ==", "== Legal plays ==", "== Scoring ==", "== Match end ==", "== House settings in force =="):
        assert section in guide, section
    assert not RULE_ID.search(guide), RULE_ID.search(guide)
    assert not FILE_PATH.search(guide), FILE_PATH.search(guide)
    assert "RULES" not in guide and "chance stream" not in guide and "docstring" not in guide
    if game == "pishe_pasha":
        assert all(word in guide for word in ("give", "place", "keep"))


def test_the_guide_shows_the_house_settings_in_force():
    g = envs.game_class("pishti")(players=2, target_score=77, pisti_value=7, tie_rule="shared_win")
    guide = rules_summary(g)
    assert "reaches 77 points" in guide and "every pişti: 7 points" in guide
    house = " ".join(guide.split("== House settings in force ==")[1].split())
    assert "2 players" in house and "first side to 77 points" in house and "shares the win" in house
    assert "77" not in rules_summary("pishti").split("== House settings in force ==")[1]


def test_empty_input_is_a_hint_not_an_error(monkeypatch, capsys):
    code, lines = play_in_process(monkeypatch, capsys, ["pishe_pasha", "--seed", "1"], "\n\nq\n")
    assert code == 1
    assert sum("type the number of a move" in ln for ln in lines) == 2
    assert not any("not understood" in ln for ln in lines)


@pytest.mark.skipif(not PISHTI_BOT.exists(), reason="the shipped Pişti bot is not in this checkout")
def test_a_bot_file_sets_the_table():
    r = kahve("play", "pishti", "--bot", str(PISHTI_BOT.relative_to(ROOT)), "--seed", "3", stdin="0\n" * 2000)
    assert r.returncode == 0, r.stderr
    assert "Pişti, 2 players: you are player 0" in r.stdout
    assert "table settings from the bot file: players=2, partnerships=false" in r.stdout
    assert "match over after" in r.stdout and "player 1 hand: " in r.stdout
    assert not WARNING_TEXT.search(r.stdout + r.stderr)


@pytest.mark.skipif(not PISHTI_BOT.exists(), reason="the shipped Pişti bot is not in this checkout")
@pytest.mark.parametrize("level, table", [
    ("easy", None),                                   # the default table (4 in partnerships) has a bot of its own
    ("pishti/ppo_2p:medium", "players=2, partnerships=false"),
])
def test_a_difficulty_level_sets_the_table_of_its_bot(level, table):
    r = kahve("play", "pishti", "--bot", level, "--seed", "3", stdin="q\n")
    assert ("table settings from the bot file" in r.stdout) == (table is not None), r.stdout + r.stderr
    if table:
        assert f"table settings from the bot file: {table}" in r.stdout, r.stdout + r.stderr
        assert f"Pişti, 2 players: you are player 0; opponents: {level}" in r.stdout
    else:
        assert f"Pişti, 4 players: you are player 0; opponents: {level}" in r.stdout


@pytest.mark.skipif(not PISHTI_BOT.exists(), reason="the shipped Pişti bot is not in this checkout")
def test_a_bot_mismatch_is_one_line_naming_the_fix():
    r = kahve("play", "pishti", "--settings", "players=4", "--bot", str(PISHTI_BOT))
    assert r.returncode == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "drop players=4 from --settings" in err and "players=2" in err, err
    assert not WARNING_TEXT.search(err)
    # a difference that the bot can live with is one plain note, never a Python warning
    r = kahve("play", "pishti", "--settings", "target_score=50", "--bot", str(PISHTI_BOT), "--seed", "1",
              stdin="q\n")
    assert "note: the bot was trained with target_score=151; this table plays target_score=50" in r.stdout
    assert not WARNING_TEXT.search(r.stdout + r.stderr), r.stdout + r.stderr


@pytest.mark.skipif(not ISH_BOT.exists(), reason="the shipped Ish bot is not in this checkout")
def test_the_ish_bot_with_the_settings_its_readme_gives():
    r = kahve("play", "ish", "--settings", "players=4", "max_rounds=3", "--bot", str(ISH_BOT), "--seed", "2",
              stdin="0\n" * 200)
    assert r.returncode == 0, r.stderr
    assert "note: the bot was trained with max_rounds=100; this table plays max_rounds=3" in r.stdout
    assert not WARNING_TEXT.search(r.stdout + r.stderr), r.stdout + r.stderr


def test_replay_announces_forced_moves_from_the_log(tmp_path, monkeypatch, capsys):
    path = tmp_path / "g.jsonl"
    code, lines = play_in_process(monkeypatch, capsys, ["pis_yedili", "--settings", "players=2", "episode=deal",
                                                        "--bot", "random", "--seed", "4", "--record", str(path)],
                                  "0\n" * 500)
    assert code == 0
    played = [ln.split(": ", 1)[1] for ln in lines if MOVE_LINE.match(ln)]
    from kahve.agents.evaluation.records import load_records
    record = load_records(str(path))[0]
    moves = len(record["actions"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" * (moves + 2) + "q\n"))
    assert cli.main(["replay", str(path), "--seat", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    shown = [re.match(r"^(?:move \d+: |  )player \d+ \([^)]*\): (.*)$", ln) for ln in out]
    texts = [m.group(1) for m in shown if m]
    # the same lines, and the same "(only choice)" labels: what seat 0 was told (the terminal also marks it "(you)")
    assert len(texts) == len(played) and texts == [t.replace(" (you)", "") for t in played]
    assert len(texts) > moves                                   # forced moves too, which the record omits
    assert any(ln.startswith("  deal 1: player 0 deals") for ln in out)


def test_demo_prints_every_move_and_the_deal_ends():
    r = kahve("demo", "pis_yedili", "--seed", "3", "--settings", "players=2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    total = int(re.search(r"== (\d+) moves", lines[-1]).group(1))
    assert sum(bool(MOVE_LINE.match(ln)) for ln in lines) == total
    assert any(ln.startswith("deal 1 over") for ln in lines) and lines[-2].startswith("match over after")
    assert not any(card_tokens("pis_yedili", ln) for ln in lines if "draw a card" in ln)


def test_a_bare_jack_asks_which_suit():
    """Issue 58: "JC" alone, where a jack is playable, was "not understood ... JC names clubs"; it names the moves
    it could be."""
    from kahve.envs.core.cards import card_str
    from kahve.scripts.play import _ambiguous
    game = envs.game_class("pis_yedili")(players=2)
    rng = random.Random(0)
    for seed in range(50):
        st = game.new_state(seed)
        while st.current_player is not None:
            legal = st.legal_actions()
            jacks = [a for a in legal if 52 <= a < 68]
            if jacks:
                texts = [st.describe_action(a) for a in legal]
                jack = card_str(13 * ((jacks[0] - 52) >> 2) + 10)
                which = _ambiguous(st, jack, texts)
                assert [texts[i] for i in which] == [t for t in texts if t.startswith(jack + " names ")]
                assert len(which) == 4 and _ambiguous(st, jack.lower(), texts) == which
                assert _ambiguous(st, "draw", texts) == [] and _ambiguous(st, "", texts) == []
                return
            st.apply(rng.choice(legal))
    raise AssertionError("no jack to play in 50 deals")
