"""Running the bad-input corpus: the case, the files it works on, the guard against a hang, and the verdict."""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]

ERROR, ACCEPT = "one-line error", "accepted"
OK, TRACEBACK, LONG, HANG, SILENT, REFUSED = ("ok", "traceback", "long message", "hang", "silent acceptance",
                                              "refused")
OUTCOMES = (OK, TRACEBACK, LONG, HANG, SILENT, REFUSED)
#: the longest error message that counts as one clear line (kahve quotes a long value in part: files.short)
MAX_MESSAGE = 2000
#: the time limit of a case in the corpus run whose counts docs/design.md gives (issue 61: "every case under 10 s")
CASE_LIMIT_S = 10.0
#: what a command's error line looks like (scripts/cli.py; argparse's own errors have the same form)
ERROR_LINE = re.compile(r"^kahve(?: [a-z]+)?: error: ")


@dataclass
class Case:
    """One bad (or good) input. ``call(ws)`` exercises the API; ``argv(ws)`` gives a ``kahve`` command line instead,
    run in this process (``main(argv)``) or, with ``subprocess``, in a process of its own. ``stdin`` is what an
    interactive command reads; ``accept_rc``, the exit codes of an accepted command."""
    kind: str
    name: str
    expect: str
    call: Callable[["Workspace"], Any] | None = None
    argv: Callable[["Workspace"], list] | None = None
    subprocess: bool = False
    stdin: str = "q\n"
    accept_rc: tuple = (0,)

    @property
    def id(self) -> str:
        return f"{self.kind}: {self.name}"


@dataclass
class Result:
    case: Case
    outcome: str
    seconds: float
    detail: str = ""


class CaseHang(BaseException):
    """Raised in the main thread when a case runs past its limit (a BaseException: no ``except Exception`` of the
    code under test swallows it)."""


@contextlib.contextmanager
def hang_guard(limit_s: float):
    """Interrupt the block after ``limit_s`` seconds (a signal timer: Python code is interrupted wherever it is; a
    single call into C that never returns is not, and then the whole run shows it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise CaseHang()

    before = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


class Workspace:
    """The files the cases work on, made once per run in a temporary folder: copies of shipped bots, records of
    random games, a tiny training run. Each case also gets a fresh folder of its own (:meth:`path`), removed after
    it."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._cache: dict = {}
        self._case_dir: Path | None = None
        self._count = 0

    # ----- per case ------------------------------------------------------------------------------------
    def begin_case(self) -> None:
        self._count += 1
        self._case_dir = self.root / "cases" / f"c{self._count}"
        self._case_dir.mkdir(parents=True)

    def end_case(self) -> None:
        if self._case_dir is not None:
            shutil.rmtree(self._case_dir, ignore_errors=True)
            self._case_dir = None

    def path(self, name: str) -> Path:
        """A path in the case's own folder (nothing is there yet)."""
        assert self._case_dir is not None
        return self._case_dir / name

    def write(self, name: str, data) -> Path:
        p = self.path(name)
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            p.write_text(data, encoding="utf-8")
        else:
            p.write_bytes(data)
        return p

    def once(self, key, make: Callable[[], Any]):
        """``make()`` the first time ``key`` is asked for; the same value after."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def shared(self, name: str) -> Path:
        p = self.root / "shared" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p


# ----- verdicts --------------------------------------------------------------------------------------------------
def _one_line(message: str) -> str | None:
    """Why ``message`` is not one clear line (None: it is)."""
    if not message.strip():
        return TRACEBACK
    if "\n" in message.strip() or "\r" in message.strip():
        return TRACEBACK
    if len(message) > MAX_MESSAGE:
        return LONG
    return None


def verdict_of_exception(case: Case, err: BaseException | None) -> tuple[str, str]:
    if err is None:
        return (OK, "") if case.expect == ACCEPT else (SILENT, "no error")
    text = f"{type(err).__name__}: {_clip(str(err))}"
    if isinstance(err, (ValueError, FileNotFoundError)):
        bad = _one_line(str(err))
        if bad is not None:
            return bad, text if bad == TRACEBACK else f"{type(err).__name__} of {len(str(err)):,} characters"
        return (OK, text) if case.expect == ERROR else (REFUSED, text)
    return TRACEBACK, text


def verdict_of_command(case: Case, rc, err_text: str) -> tuple[str, str]:
    lines = [line for line in err_text.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if "Traceback (most recent call last)" in err_text:
        return TRACEBACK, "a traceback, ending " + _clip(last)
    if case.expect == ACCEPT:
        if rc in case.accept_rc:
            return OK, ""
        return (REFUSED if rc == 2 else TRACEBACK), f"exit {rc}: {_clip(last)}"
    if rc in case.accept_rc or rc == 0:
        return SILENT, f"exit {rc}"
    if rc != 2 or not ERROR_LINE.match(last):
        return TRACEBACK, f"exit {rc}, last line {_clip(last)!r}"
    firsts = [k for k, line in enumerate(lines) if ERROR_LINE.match(line)]
    if firsts[0] != len(lines) - 1:
        return TRACEBACK, "the error goes on over several lines: " + _clip(" | ".join(lines[firsts[0]:]))
    if len(last) > MAX_MESSAGE:
        return LONG, f"an error line of {len(last):,} characters"
    return OK, _clip(last)


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit - 5] + " …" + text[-3:]


# ----- running ---------------------------------------------------------------------------------------------------
def _forget_loaded_bots() -> None:
    """The process's cache of loaded bot files (one set of sessions per file) holds every edited copy a case loaded;
    a run of the corpus loads hundreds."""
    from kahve.agents.policies import specs
    with specs._LOADING:
        specs._LOADED.clear()


def _in_process_command(case: Case, argv: list) -> tuple[Any, str]:
    from kahve.scripts.cli import main
    out, err = io.StringIO(), io.StringIO()
    stdin = sys.stdin
    sys.stdin = io.StringIO(case.stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main([str(a) for a in argv])
            except SystemExit as exit_:              # argparse
                rc = exit_.code
            except Exception:                         # what main() lets through: the user sees a traceback
                rc = 1
                traceback.print_exc()
    finally:
        sys.stdin = stdin
    return rc, err.getvalue()


def _subprocess_command(case: Case, argv: list, cwd: Path, limit_s: float) -> tuple[Any, str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    try:
        r = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", *[str(a) for a in argv]], cwd=cwd,
                           input=case.stdin, capture_output=True, text=True, timeout=limit_s, env=env)
    except subprocess.TimeoutExpired:
        raise CaseHang() from None
    return r.returncode, r.stderr


def run_case(case: Case, ws: Workspace, limit_s: float) -> Result:
    start = time.perf_counter()
    term = signal.getsignal(signal.SIGTERM)          # kahve train installs its own (Ctrl-C-like) handler
    cwd = os.getcwd()
    ws.begin_case()
    try:
        os.chdir(ws.path("."))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if case.argv is not None:
                    argv = case.argv(ws)
                    if case.subprocess:
                        rc, err_text = _subprocess_command(case, argv, ws.path("."), limit_s)
                    else:
                        with hang_guard(limit_s):
                            rc, err_text = _in_process_command(case, argv)
                    outcome, detail = verdict_of_command(case, rc, err_text)
                else:
                    err = None
                    with hang_guard(limit_s):
                        try:
                            case.call(ws)
                        except (Exception, KeyboardInterrupt, SystemExit) as caught:  # the code under test's own
                            err = caught
                    outcome, detail = verdict_of_exception(case, err)
        except CaseHang:
            outcome, detail = HANG, f"stopped after {limit_s:g} s"
    finally:
        os.chdir(cwd)
        signal.signal(signal.SIGTERM, term)
        ws.end_case()
        _forget_loaded_bots()
    seconds = time.perf_counter() - start
    if outcome != HANG and seconds > limit_s:      # a call into C that the timer could not interrupt
        outcome, detail = HANG, f"took {seconds:.1f} s"
    return Result(case, outcome, seconds, detail)


@dataclass
class Report:
    results: list = field(default_factory=list)
    seconds: float = 0.0
    load: tuple = ()

    def failures(self) -> list:
        return [r for r in self.results if r.outcome != OK]

    def counts(self) -> dict:
        """{kind: Counter of outcomes}, and the whole under ``"all"``."""
        by_kind: dict = defaultdict(Counter)
        for r in self.results:
            by_kind[r.case.kind][r.outcome] += 1
            by_kind["all"][r.outcome] += 1
        return dict(by_kind)

    def table(self) -> str:
        """The counts per kind as a Markdown table (docs/design.md)."""
        kinds = sorted({r.case.kind for r in self.results})
        head = ["kind", "cases", "expect an error", "expect it accepted", "CLI (subprocess)", *OUTCOMES,
                "slowest (s)"]
        rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for kind in [*kinds, "all"]:
            rs = [r for r in self.results if kind in ("all", r.case.kind)]
            c = Counter(r.outcome for r in rs)
            row = [f"**{kind}**" if kind == "all" else kind, f"{len(rs):,}",
                   f"{sum(r.case.expect == ERROR for r in rs):,}", f"{sum(r.case.expect == ACCEPT for r in rs):,}",
                   f"{sum(r.case.argv is not None for r in rs):,} ({sum(r.case.subprocess for r in rs)})",
                   *[f"{c[o]:,}" for o in OUTCOMES], f"{max(r.seconds for r in rs):.1f}"]
            rows.append("| " + " | ".join(row) + " |")
        return "\n".join(rows)

    def summary(self) -> str:
        c = Counter(r.outcome for r in self.results)
        slow = sorted(self.results, key=lambda r: -r.seconds)[:5]
        lines = [f"{len(self.results):,} cases in {self.seconds:.0f} s (load average before/after: "
                 + " / ".join(f"{a:.1f}" for a in self.load) + f", {os.cpu_count()} CPUs): "
                 + ", ".join(f"{o} {c[o]:,}" for o in OUTCOMES),
                 "slowest: " + "; ".join(f"{r.case.id} {r.seconds:.1f} s" for r in slow)]
        lines += [f"  {r.outcome}: {r.case.id}: {r.detail}" for r in self.failures()]
        return "\n".join(lines)


def run_corpus(cases: list, limit_s: float = CASE_LIMIT_S, root: Path | None = None, log=None) -> Report:
    """Run ``cases`` in order in a fresh workspace (under ``root``, else a temporary folder, removed after)."""
    report = Report()
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if root is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kahve_bad_inputs_")))
        if "SB3_LOGDIR" not in os.environ:     # SB3 makes a /tmp/SB3-<time> folder per model trained without one
            os.environ["SB3_LOGDIR"] = str(root / "sb3_logs")
            stack.callback(os.environ.pop, "SB3_LOGDIR", None)
        ws = Workspace(root)
        for k, case in enumerate(cases):
            result = run_case(case, ws, limit_s)
            report.results.append(result)
            if log is not None and (result.outcome != OK or (k + 1) % 200 == 0):
                log(f"[{k + 1}/{len(cases)}] {result.outcome} {case.id} ({result.seconds:.2f} s) {result.detail}")
    report.seconds = time.perf_counter() - start
    report.load = (load_before, os.getloadavg()[0])
    return report


def sample(cases: list, n: int, seed: int = 61, subprocesses: int = 3) -> list:
    """A fixed sample of about ``n`` cases with every kind in it (in proportion, at least 4 of each) and at most
    ``subprocesses`` command lines run in a process of their own, in the corpus's order."""
    rng = random.Random(seed)
    by_kind: dict = defaultdict(list)
    for k, case in enumerate(cases):
        by_kind[case.kind].append(k)
    picked = set()
    for kind, ks in sorted(by_kind.items()):
        inside = [k for k in ks if not cases[k].subprocess]
        want = min(len(inside), max(4, round(n * len(ks) / len(cases))))
        picked.update(rng.sample(inside, want))
    own = [k for k, c in enumerate(cases) if c.subprocess]
    picked.update(rng.sample(own, min(subprocesses, len(own))))
    return [cases[k] for k in sorted(picked)]
