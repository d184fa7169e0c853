"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import os
import tempfile

from kahve import envs


def add_game_arguments(parser: argparse.ArgumentParser, nargs=None) -> None:
    parser.add_argument("game", nargs=nargs, help="one of: " + ", ".join(envs.GAMES))
    parser.add_argument("--settings", nargs="*", default=[], metavar="KEY=VALUE",
                        help="game settings as in docs/rules.md, e.g. players=2 target_score=101")


def parse_settings(game: str, items: list[str]) -> dict:
    """``["players=2"]`` -> validated keyword arguments for ``envs.make`` (errors name the setting)."""
    spec = envs.game_class(game).settings_spec
    values = spec.parse_strings(items)
    spec.resolve(values)
    return values


def check_output(path: str, option: str, folder: bool = False) -> None:
    """Refuse, before any work, an output path that could not be written at the end of it: a folder where a file
    is wanted (or a file where a folder is, with ``folder``), something that is not a regular file, a path under a
    file, or a place this process cannot create a file in (``/proc``, a read-only disk, a folder without write
    permission). A ``ValueError`` of one line that begins with ``option`` and the path. Nothing is left behind:
    an existing file is opened to append and closed unchanged, and the folder is tried with a temporary file."""
    where = f"{option} {path}"
    full = os.path.abspath(path)
    if folder:
        if os.path.exists(full) and not os.path.isdir(full):
            raise ValueError(f"{where}: not a folder ({option} names a folder to write into)")
    elif os.path.isdir(full):
        raise ValueError(f"{where}: a folder; give the name of a file to write")
    elif os.path.exists(full) and not os.path.isfile(full):
        raise ValueError(f"{where}: not a regular file")
    base = full if folder else os.path.dirname(full)
    while not os.path.exists(base):            # the folders still to be made are made in the nearest existing one
        base = os.path.dirname(base)
    if not os.path.isdir(base):
        raise ValueError(f"{where}: {base} is a file, not a folder")
    try:
        if not folder and os.path.isfile(full):
            with open(full, "ab"):
                pass
        else:
            with tempfile.TemporaryFile(dir=base):
                pass
    except OSError as err:
        raise ValueError(f"{where}: cannot write there ({err.strerror or err})") from None
