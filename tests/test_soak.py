"""The soak script (tools/soak.py) on a short budget: random play over every game's settings grid with the
invariants checked. Slow: run with ``python -m pytest -m slow``; the full 10M-step soak is the script itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import HANG_S

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_short_soak_of_every_game_finds_no_failure():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "soak.py"), "--steps", "100000"],
                       capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "no failures" in r.stdout, r.stdout[-2000:]
