"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import argparse

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
