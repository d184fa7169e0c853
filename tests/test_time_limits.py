"""No test fails because the machine is slow (issue 60): the only wall-clock limit a test may set on a command,
a request or a wait is ``tests.helpers.HANG_S``, a guard against a hang far above any honest run; speed is
measured by ``kahve bench`` and printed, never asserted. This scans the tests for a number of seconds given as a
limit (``timeout=N``, ``time.time() + N``, ``DEADLINE_S = N``), so a tight one cannot come back."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import HANG_S

TESTS = Path(__file__).resolve().parent
#: a timeout or a deadline written as a number of seconds
LIMIT = re.compile(r"\btimeout\s*=\s*(\d+(?:\.\d+)?)|\b(?:time|monotonic|perf_counter)\(\)\s*\+\s*(\d+(?:\.\d+)?)"
                   r"|^\s*[A-Z_]*(?:TIMEOUT|DEADLINE)[A-Z_]*\s*=\s*(\d+(?:\.\d+)?)")
#: what a line says when its number only bounds a retry or a clean-up, whose running out fails nothing
NOT_A_LIMIT = "# not a limit:"


def limits() -> list[tuple[str, int, float, str]]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == Path(__file__).resolve():       # its own examples below
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in LIMIT.finditer(line):
                found.append((str(path.relative_to(TESTS.parent)), no, float(next(g for g in m.groups() if g)), line))
    return found


def test_the_hang_guard_is_far_above_a_slow_run():
    assert HANG_S >= 1800          # the README's suite took 36 minutes at load 5-16 on 2 cores; CI allows 90


def test_no_test_sets_a_wall_clock_limit_tighter_than_the_hang_guard():
    tight = [f"{where}:{no}: {line.strip()}" for where, no, seconds, line in limits()
             if seconds < HANG_S and NOT_A_LIMIT not in line]
    assert not tight, "a wall-clock limit fails a test on a slow machine; use tests.helpers.HANG_S:\n" + "\n".join(tight)


def test_the_scan_sees_the_forms_it_looks_for():
    for text in ("subprocess.run(cmd, timeout=120)", "deadline = time.time() + 60",
                 "deadline = time.monotonic() + 10.5", "proc.communicate(timeout = 30)", "DEADLINE_S = 45.0"):
        assert LIMIT.search(text), text
    assert not LIMIT.search("timeout=HANG_S") and not LIMIT.search("time.time() + HANG_S")
