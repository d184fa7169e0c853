"""Runs every ```bash command of docs/tutorial.md in order, in a scratch folder, so the tutorial cannot rot."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"


def commands() -> list[str]:
    return [c.strip() for c in re.findall(r"```bash\n(.*?)```", TUTORIAL.read_text(), re.S)]


def test_tutorial_has_the_whole_path():
    cmds = commands()
    verbs = [shlex.split(c)[1] for c in cmds]
    assert verbs == ["demo", "evaluate", "train", "train", "train", "export", "evaluate", "play", "replay"]


def test_every_tutorial_command_runs(tmp_path):
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for cmd in commands():
        argv = shlex.split(cmd)
        assert argv[0] == "kahve"
        stdin = {"play": "0\n" * 3000, "replay": "\n" * 400 + "q\n"}.get(argv[1], "")
        r = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", *argv[1:]], cwd=tmp_path, input=stdin,
                           capture_output=True, text=True, timeout=600, env=env)
        if argv[1] == "play":
            r_play = r
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        # what a person reads: plain lines, never a Python warning (a bot trained with other settings is a note)
        shown = r.stdout + r.stderr
        assert not re.search(r"Warning\b|warnings\.warn|Traceback", shown), f"{cmd}\n{shown[-3000:]}"
    assert (tmp_path / "bots" / "tutorial.onnx").exists() and (tmp_path / "bots" / "tutorial.md").exists()
    assert (tmp_path / "runs" / "tutorial" / "tb").is_dir()
    assert (tmp_path / "games.jsonl").read_text().strip()
    assert "note: the bot was trained with target_score=151; this table plays target_score=50" in r_play.stdout
