"""``kahve evaluate`` and ``kahve export`` options that people get wrong: each is one line and exit status 2 before any
match is played or any file is read, so that nothing is lost to a mistake found at the end of the work."""

from __future__ import annotations

import json
import os

import pytest

from kahve.agents.evaluation.records import load_records
from kahve.scripts import cli

EVALUATE = ["evaluate", "pishti", "random", "heuristic", "--settings", "players=2", "episode=deal", "--games", "2"]


def _refused(capsys, argv: list[str], match: str) -> str:
    """Run the command line in this process; it must fail with one line that contains ``match``, and no report."""
    assert cli.main(argv) == 2
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert len(err) == 1 and match in err[0], out.err
    assert "win rate" not in out.out and not out.out.strip()      # refused before the evaluation, not after it
    return err[0]


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_evaluate_needs_at_least_one_worker(workers, capsys):
    _refused(capsys, [*EVALUATE, "--workers", workers], f"kahve evaluate: error: --workers must be at least 1, "
                                                        f"not {workers}")


def test_evaluate_others_never_drop_b(capsys, tmp_path):
    # two sides (A's and B's): there is no other side for --others to fill
    _refused(capsys, [*EVALUATE, "--others", "greedy"], "this table has 2 sides, A's and B's; --others is for")
    four = ["evaluate", "pishti", "random", "heuristic", "--settings", "players=4", "partnerships=false",
            "episode=deal", "--games", "4", "--workers", "1", "--record", str(tmp_path)]
    # four sides: A's, B's and two more, so --others takes two; one would leave a side to a guess
    _refused(capsys, [*four, "--others", "greedy"], "this table has 4 sides: A's, B's and 2 more, so --others takes 2")
    assert cli.main([*four, "--others", "greedy", "random"]) == 0
    (path,) = tmp_path.glob("*.jsonl")
    first = load_records(str(path))[0]                 # A in seat 0, then B, then --others in side order
    assert first["players"] == ["random", "heuristic", "greedy", "random"]


def test_evaluate_checks_its_output_paths_before_it_plays(capsys, tmp_path):
    existing = tmp_path / "games.jsonl"
    existing.write_text("mine\n")
    _refused(capsys, [*EVALUATE, "--record", str(existing)], f"--record {existing}: not a folder")
    assert existing.read_text() == "mine\n"
    _refused(capsys, [*EVALUATE, "--record", str(existing / "deeper")], f"{existing} is a file, not a folder")
    _refused(capsys, [*EVALUATE, "--json", str(tmp_path)], f"--json {tmp_path}: a folder; give the name of a file")
    _refused(capsys, [*EVALUATE, "--json", str(existing / "report.json")], f"{existing} is a file, not a folder")
    if os.path.isdir("/proc/self"):                    # a folder nobody can create a file in
        _refused(capsys, [*EVALUATE, "--record", "/proc"], "--record /proc: cannot write there")
        _refused(capsys, [*EVALUATE, "--json", "/proc/report.json"], "--json /proc/report.json: cannot write there")
    # and the good paths still work, the record folder made when it is missing
    assert cli.main([*EVALUATE, "--workers", "1", "--json", str(tmp_path / "r.json"),
                     "--record", str(tmp_path / "new" / "records")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["games"] == 2
    assert len(list((tmp_path / "new" / "records").glob("*.jsonl"))) == 1


@pytest.mark.parametrize("where,match", [
    ("folder", "a folder; give the name of a file"),
    ("under_a_file", "is a file, not a folder"),
])
def test_export_checks_its_output_path_before_reading_the_run(where, match, capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    output = {"folder": tmp_path, "under_a_file": tmp_path / "notes.txt" / "bot.onnx"}[where]
    # the run folder does not exist: the output path is checked first, so its error is the one given
    _refused(capsys, ["export", str(tmp_path / "no_run"), "-o", str(output)], f"kahve export: error: -o {output}")
    _refused(capsys, ["export", str(tmp_path / "no_run"), "-o", str(tmp_path / "bot.onnx"), "--sb3", str(output)],
             f"kahve export: error: --sb3 {output}")
