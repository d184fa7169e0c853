"""A console progress bar for long work (rich), quiet when stderr is not a terminal."""

from __future__ import annotations

import contextlib
import sys


@contextlib.contextmanager
def progress_bar(description: str):
    """Yields ``update(done, total)``."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done, total):
            bar.update(task, completed=done, total=total)
        yield update
