"""Console progress (rich), quiet when stderr is not a terminal (logs and CI).

Two views:

- :func:`progress_bar`: one bar with its ETA for one piece of work (an evaluation, a league, ``kahve export
  --report``).
- :func:`run_progress`: the one view of a whole training run or recipe, a line naming the phase under way (in a
  recipe, its stage: ``stage 2/4 finetune``) above one bar for the whole of it, with its overall ETA from the
  start. The work is planned up front as :class:`Phase` s (:mod:`.training.plan` makes them from a config), each a
  count of units (decisions labelled, minibatches fitted, learner steps, games played) with a prior cost per unit
  in seconds; :class:`RunProgress` measures what each unit really costs as the phases run and estimates what is
  left from that. Inside the view, the work reports through :func:`phase` (the phase it is in) and every
  :func:`progress_bar` becomes a part of the phase under way instead of a bar of its own.

How the estimate works (:meth:`RunProgress.rate`): phases with the same ``rate`` key share one cost per unit,
measured as the seconds spent in them over the units they did this session, blended with the prior over the first
seconds (:data:`PSEUDO_SECONDS`); a phase of a key not measured yet takes its prior, scaled by how much slower or
faster than the priors the work measured so far ran once under way (:meth:`RunProgress.speed`; a phase's
start-up, worker processes spawning say, is its own cost). So the first minutes' ETA is a
rough guess, which gets better as each kind of work is measured.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from dataclasses import dataclass, field


@contextlib.contextmanager
def progress_bar(description: str, enabled: bool = True):
    """Yields ``update(done, total)``; a no-op when ``enabled`` is false or stderr is not a terminal. Inside a run's
    view (:func:`run_progress`) it counts into the phase under way instead (:meth:`RunProgress.bar`)."""
    if enabled and _ACTIVE is not None:
        with _ACTIVE.bar(description) as update:
            yield update
        return
    global _SHOWING
    if not enabled or not _terminal() or _SHOWING:      # (one bar at a time: the outer one shows)
        yield lambda done, total=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn
    _SHOWING = True
    try:
        with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), "eta", TimeRemainingColumn(), transient=True) as bar:
            task = bar.add_task(description, total=None)

            def update(done, total=None):
                bar.update(task, completed=done, total=total)
            yield update
    finally:
        _SHOWING = False


#: a bar of :func:`progress_bar` is on the terminal (rich shows one live display at a time)
_SHOWING = False


def _terminal() -> bool:
    """Whether stderr is a terminal (elsewhere, a log file or CI, nothing is shown)."""
    return sys.stderr.isatty()


# ----- the view of a whole run ----------------------------------------------------------------------------------
#: seconds of prior a measured cost per unit is blended with (the first seconds of a phase hold spawns and warm-ups)
PSEUDO_SECONDS = 5.0
#: the priors' error the speed factor may correct, either way
SPEED_LIMITS = (0.05, 20.0)
#: seconds of measured work after which the ETA is no longer shown as a rough guess
SETTLED_SECONDS = 60.0


@dataclass
class Phase:
    """A part of a run's work: ``count`` units (``units`` names them) at ``prior`` seconds each until measured."""
    key: str                  # unique in its stage: "clone.collect", "dagger1.fit", "learn", "eval", "report"
    label: str                # in words: "behaviour cloning: heuristic labels"
    units: str                # "decisions", "batches", "steps", "games", "labels", "rounds"
    count: float
    prior: float              # seconds per unit before any is measured
    rate: str                 # phases with the same key share one measured cost per unit
    stage: int | None = None  # a recipe's stage (1, 2, ...); None: the run's own, or the recipe's bot
    match: str = ""           # progress bars whose description starts with this are this phase's
    done: float = 0.0

    @property
    def left(self) -> float:
        return max(0.0, self.count - self.done)


@dataclass
class _Bar:
    phase: Phase | None
    description: str
    base: float               # the phase's units before this bar
    last: float | None = None
    total: float | None = None
    moving: bool = False      # its units have moved (before that: start-up, spawns; not a measure of speed)
    mark: float = 0.0         # its rate's seconds spent at its last report


@dataclass
class RunProgress:
    """The estimate of a run's (or a recipe's) work: its phases, what is done, what each kind of unit costs. Pure
    bookkeeping with its own ``clock`` (tests drive it); :func:`run_progress` shows it. ``stages``: a recipe's stage
    names (the line says ``stage k/N NAME``)."""
    phases: list
    stages: list | None = None
    title: str = "the run"
    clock: object = time.monotonic
    stage: int | None = None                         # the stage under way (a recipe's)
    spent: dict = field(default_factory=dict)        # rate key -> seconds spent in its phases this session
    units: dict = field(default_factory=dict)        # rate key -> units done in them this session
    steady: dict = field(default_factory=dict)       # rate key -> its seconds since the units began to move
    prior_spent: dict = field(default_factory=dict)  # rate key -> what the units of those seconds cost by the priors
    stack: list = field(default_factory=list)        # the open phases, innermost last
    bars: list = field(default_factory=list)         # the open bars, innermost last

    def __post_init__(self):
        self.phases = list(self.phases)
        if self.stages and self.stage is None:
            self.stage = 1                               # (a recipe starts with its first stage)
        self._lock = threading.RLock()
        self._last = self.started = self.clock()

    # ----- the plan -----------------------------------------------------------------------------------------
    def find(self, key: str, stage: int | None = None) -> Phase | None:
        """The phase ``key`` of ``stage`` (default: the stage under way), else of the whole (a recipe's bot)."""
        stage = self.stage if stage is None else stage
        for where in dict.fromkeys((stage, None)):
            for p in self.phases:
                if p.key == key and p.stage == where:
                    return p
        return None

    def replan(self, phases: list, stage: int | None = None) -> None:
        """``phases`` replace those planned for ``stage`` (default: the stage under way): a stage's session knows
        its work better than the recipe's first guess (what a resumed run has done, say)."""
        stage = self.stage if stage is None else stage
        with self._lock:
            for p in phases:
                p.stage = stage
            at = [i for i, p in enumerate(self.phases) if p.stage == stage]
            where = at[0] if at else next((i for i, p in enumerate(self.phases)
                                           if p.stage is None or (stage is not None and p.stage > stage)),
                                          len(self.phases))
            kept = [p for p in self.phases if p.stage != stage]
            self.phases = kept[:where] + list(phases) + kept[where:]

    def set_stage(self, stage: int | None) -> None:
        with self._lock:
            self._tick()
            self.stage = stage

    def finish(self, *keys: str, stage: int | None = None, everything: bool = False) -> None:
        """Mark phases done: ``keys`` of ``stage`` (default: under way), or with no keys every phase of it, or
        with ``everything`` the whole plan."""
        with self._lock:
            self._tick()
            stage = self.stage if stage is None else stage
            for p in self.phases:
                if everything or (p.stage == stage and (not keys or p.key in keys)):
                    p.done = max(p.done, p.count)

    # ----- the work -----------------------------------------------------------------------------------------
    def _tick(self) -> None:
        """The seconds since the last event go to the innermost open phase's rate."""
        now = self.clock()
        if self.stack:
            key = self.stack[-1].rate
            self.spent[key] = self.spent.get(key, 0.0) + now - self._last
        self._last = now

    @contextlib.contextmanager
    def phase(self, key: str, complete: bool = True):
        """Work in phase ``key`` (of the stage under way): its time counts to it, and the update it yields,
        ``update(done, total=None)``, sets its units done (``done`` counted from where the phase stood when it
        opened; :meth:`bar`). On a normal exit with ``complete``, the phase is done whatever its count said."""
        p = self.find(key)
        if p is None:
            raise KeyError(f"no phase {key!r} planned")
        with self._lock:
            self._tick()
            self.stack.append(p)
        ok = False
        try:
            with self._bar(p, "") as update:
                yield update
            ok = True
        finally:
            with self._lock:
                self._tick()
                self.stack.remove(p)
                if ok and complete:
                    p.done = max(p.done, p.count)

    @contextlib.contextmanager
    def bar(self, description: str):
        """A progress bar inside the view (:func:`progress_bar`): its ``update(done, total)`` counts into the
        phase whose ``match`` the description starts with, else into the innermost open phase; bars one after
        another in a phase add up (a report's bar per opponent). A bar of no phase only shows its line."""
        matched = next((p for p in self.phases if p.match and description.startswith(p.match)
                        and p.stage in (self.stage, None)), None)
        target = matched or (self.stack[-1] if self.stack else None)
        pushed = matched is not None and (not self.stack or self.stack[-1] is not matched)
        if pushed:
            with self._lock:
                self._tick()
                self.stack.append(matched)
        try:
            with self._bar(target, description) as update:
                yield update
        finally:
            if pushed:
                with self._lock:
                    self._tick()
                    self.stack.remove(matched)

    @contextlib.contextmanager
    def _bar(self, p: Phase | None, description: str):
        with self._lock:
            b = _Bar(p, description, p.done if p is not None else 0.0)
            self.bars.append(b)

        def update(done, total=None):
            with self._lock:
                self._tick()
                b.total = total
                if p is not None:
                    spent = self.spent.get(p.rate, 0.0)
                    if b.last is not None and done > b.last:
                        delta = done - b.last
                        self.units[p.rate] = self.units.get(p.rate, 0.0) + delta
                        if b.moving:            # (the speed of the priors: from the first units on)
                            self.steady[p.rate] = self.steady.get(p.rate, 0.0) + spent - b.mark
                            self.prior_spent[p.rate] = self.prior_spent.get(p.rate, 0.0) + delta * p.prior
                        b.moving = True
                    b.mark = spent
                b.last = done                   # (the first report sets where this session's units start)
                if p is not None:
                    p.done = b.base + done
                    p.count = max(p.count, p.done)
        try:
            yield update
        finally:
            with self._lock:
                self.bars.remove(b)

    # ----- the estimate -------------------------------------------------------------------------------------
    def speed(self) -> float:
        """How much slower (above 1) or faster than the priors the measured work ran once under way (a phase's
        start-up, before its first units, is its own cost, not the machine's speed), blended with 1 over the first
        :data:`PSEUDO_SECONDS`."""
        spent = sum(self.steady.values())
        prior = sum(self.prior_spent.values())
        lo, hi = SPEED_LIMITS
        return min(hi, max(lo, (spent + PSEUDO_SECONDS) / (prior + PSEUDO_SECONDS)))

    def rate(self, p: Phase) -> float:
        """Seconds per unit of ``p``: its rate key's measured cost, blended with the prior scaled by
        :meth:`speed`."""
        guess = max(p.prior * self.speed(), 1e-12)
        spent, units = self.spent.get(p.rate, 0.0), self.units.get(p.rate, 0.0)
        return (spent + PSEUDO_SECONDS) / (units + PSEUDO_SECONDS / guess)

    def eta(self) -> float:
        """Seconds of work left, by the estimate (0 once every phase is done)."""
        with self._lock:
            return sum(p.left * self.rate(p) for p in self.phases if p.left > 0)

    def fraction(self) -> float:
        """The share of the whole plan's work done, each phase weighed by its estimated seconds."""
        with self._lock:
            rates = [self.rate(p) for p in self.phases]
            total = sum(p.count * r for p, r in zip(self.phases, rates))
            done = sum(min(p.done, p.count) * r for p, r in zip(self.phases, rates))
        return 1.0 if total <= 0 else done / total

    def settled(self) -> bool:
        """Whether enough work has been measured for the ETA to be more than a rough guess."""
        return sum(self.steady.values()) >= SETTLED_SECONDS

    def line(self) -> str:
        """The phase under way in words: ``stage 2/4 finetune · learning (ppo): 120,000/2,000,000 steps``."""
        with self._lock:
            parts = []
            if self.stages:
                parts.append(f"stage {self.stage}/{len(self.stages)} {self.stages[self.stage - 1]}"
                             if self.stage else "the bot")
            bar = self.bars[-1] if self.bars else None
            p = self.stack[-1] if self.stack else (bar.phase if bar is not None else None)
            if bar is not None and bar.description:
                text = bar.description
                if bar.last is not None:
                    text += f": {_count(bar.last)}" + (f"/{_count(bar.total)}" if bar.total else "")
                parts.append(text)
            elif p is not None:
                parts.append(f"{p.label}: {_count(p.done)}/{_count(p.count)} {p.units}")
            else:
                pending = [q for q in self.phases if q.left > 0]
                ahead = [q for q in pending if q.stage == self.stage] or pending
                parts.append(f"next: {ahead[0].label}" if ahead else "finishing")
            return " · ".join(parts)

    def eta_text(self) -> str:
        seconds = self.eta()
        text = "done" if seconds <= 0 else f"about {_clock(seconds)} left"
        return text if seconds <= 0 or self.settled() else text + " (a rough guess so far)"


def _count(x) -> str:
    return f"{int(round(x)):,}" if x is not None and math.isfinite(x) else "?"


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


#: the view of the run under way in this process (:func:`run_progress`), which every progress bar counts into
_ACTIVE: RunProgress | None = None


@contextlib.contextmanager
def run_progress(phases: list, enabled: bool = True, title: str = "the run", stages: list | None = None):
    """The view of a whole run (or recipe, with ``stages``: their names) over ``phases``; yields its
    :class:`RunProgress`. Shown on a terminal (stderr), kept without showing it otherwise; nothing with
    ``enabled`` false. Inside a recipe's view a stage's run does not open a second view: its ``phases`` replace
    what the recipe planned for the stage under way."""
    global _ACTIVE
    if _ACTIVE is not None:
        _ACTIVE.replan(phases)
        yield _ACTIVE
        return
    view = RunProgress(phases, stages=stages, title=title)
    if not enabled:
        yield view
        return
    _ACTIVE = view
    try:
        if _terminal():
            with _shown(view):
                yield view
        else:
            yield view
    finally:
        _ACTIVE = None


@contextlib.contextmanager
def phase(key: str, label: str, enabled: bool = True, complete: bool = True, own_bar: bool = True):
    """Work in the planned phase ``key`` of the run's view (:meth:`RunProgress.phase`); with no view (or no such
    phase), a :func:`progress_bar` of its own named ``label``, or with ``own_bar`` false nothing (the work inside
    shows bars of its own). Yields ``update(done, total=None)``."""
    view = _ACTIVE
    if enabled and view is not None and view.find(key) is not None:
        with view.phase(key, complete) as update:
            yield update
    else:
        with progress_bar(label, enabled and own_bar) as update:
            yield update


def set_stage(stage: int | None) -> None:
    """The recipe's stage under way (1, 2, ...; None: its bot), for the view's line and its phases."""
    if _ACTIVE is not None:
        _ACTIVE.set_stage(stage)


def finish(*keys: str, everything: bool = False) -> None:
    """Phases done (:meth:`RunProgress.finish`): ``keys`` of the stage under way, all of it, or ``everything``."""
    if _ACTIVE is not None:
        _ACTIVE.finish(*keys, everything=everything)


@contextlib.contextmanager
def _shown(view: RunProgress):
    """The view on the terminal: the phase line above one bar for the whole, refreshed four times a second."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class Shown(Progress):
        def get_renderables(self):
            try:
                line, fraction, eta = view.line(), view.fraction(), view.eta_text()
            except Exception:          # (the view changed under the refresh thread: the next refresh shows it)
                line, fraction, eta = "", None, ""
            for task in self.tasks:
                if fraction is not None:
                    task.completed = 1000 * fraction
                    task.fields["eta"] = eta
            yield Text(line, no_wrap=True, overflow="ellipsis")
            yield self.make_tasks_table(self.tasks)

    with Shown(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
               TimeElapsedColumn(), TextColumn("{task.fields[eta]}"), transient=True,
               refresh_per_second=4) as shown:
        shown.add_task(view.title, total=1000, eta="")
        yield
