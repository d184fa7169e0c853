"""A console progress bar with an ETA for long work (rich): training's behaviour cloning and teacher labelling,
evaluations, leagues and bot reports all use this one. Quiet when stderr is not a terminal (logs and CI)."""

from __future__ import annotations

import contextlib
import sys


@contextlib.contextmanager
def progress_bar(description: str, enabled: bool = True):
    """Yields ``update(done, total)``; a no-op when ``enabled`` is false or stderr is not a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), "eta", TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done, total):
            bar.update(task, completed=done, total=total)
        yield update
