"""Player guides: each game's rules written for people, with the house settings in force.

The text is ``envs/<game>/guide.md`` (read with :mod:`importlib.resources`, so it travels with the package):
the sections *Turn*, *Legal plays*, *Scoring* and *Match end*, with ``{setting}`` placeholders filled in from
the table's settings. :func:`player_guide` adds a *House settings in force* section from the game's
:meth:`~kahve.envs.core.engine.Game.house_settings`. ``kahve play`` shows it on ``?``; the environment page
(:mod:`.docs`) includes it for the default settings. Rule ids and developer notes stay in the rules
modules' docstrings.
"""

from __future__ import annotations

import re
import textwrap
from importlib import resources

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def guide_source(name: str) -> str:
    """The guide of game ``name`` as written, placeholders unfilled."""
    return resources.files(f"kahve.envs.{name}").joinpath("guide.md").read_text(encoding="utf-8")


def house_line(game) -> str:
    """The house settings of ``game`` (a :class:`~kahve.envs.core.engine.Game`) in one sentence."""
    s = game.settings
    phrases = list(game.house_settings())
    fd = s.first_dealer
    phrases.append("a random player deals first" if fd == "random" else f"player {fd} deals first")
    if s.episode == "deal":
        phrases.append("one deal only")
    phrases.append("a move with no alternative is made for you" if s.skip_single_choice
                   else "you confirm even a move with no alternative")
    text = "; ".join(phrases)
    return text[0].upper() + text[1:] + "."


def player_guide(game, heading_level: int = 1) -> str:
    """The guide of ``game`` for its settings, in Markdown. ``heading_level`` 2 demotes every heading one
    level (for a page that has its own title)."""
    text = guide_source(game.name)
    settings = game.settings

    def fill(m):
        key = m.group(1)
        return str(settings[key]) if key in settings else m.group(0)

    text = _PLACEHOLDER.sub(fill, text).rstrip() + "\n\n## House settings in force\n\n" + house_line(game) + "\n"
    if heading_level > 1:
        text = re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + heading_level - 1) + " ", text, flags=re.M)
    return text


def plain(markdown: str) -> str:
    """A guide for a terminal: headings as plain lines, no backticks or emphasis marks."""
    out = []
    for line in markdown.splitlines():
        m = re.match(r"^#+ (.*)", line)
        if m:
            line = m.group(1).upper() if line.startswith("# ") else f"== {m.group(1)} =="
        line = line.replace("`", "").replace("**", "").replace("*", "")
        out.extend(textwrap.wrap(line, 110, subsequent_indent="  " if line.startswith("- ") else "")
                   if len(line) > 110 else [line])
    return "\n".join(out).strip() + "\n"
