"""Declarative game settings with validation (docs/design.md: "Settings are keyword arguments ... validated").

A game lists its settings once, as :class:`Setting` objects. :meth:`SettingsSpec.resolve` turns user keyword
arguments into a frozen :class:`Settings` (attribute access), and every problem is a ``ValueError`` that names
the setting and what is allowed. :meth:`SettingsSpec.parse_strings` does the same for ``key=value`` text from
the command line and config files.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence


class Setting:
    """One named setting with a default. Subclasses define what is allowed."""

    def __init__(self, name: str, default: Any, doc: str = ""):
        self.name = name
        self.default = default
        self.doc = doc

    def allowed(self) -> str:
        raise NotImplementedError

    def check(self, value: Any) -> Any:
        """Return the normalised value or raise ``ValueError``."""
        raise NotImplementedError

    def from_string(self, text: str) -> Any:
        """Convert command-line text to a value (then :meth:`check` it)."""
        return _auto_value(text)

    def _reject(self, value: Any) -> ValueError:
        return ValueError(f"setting {self.name!r}: {short(value)} is not allowed; allowed: {self.allowed()}")


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters: an error quotes what it was given in part, never all of it (a
    crafted record or config may hold a value of megabytes)."""
    try:
        text = repr(value)
    except Exception:      # an int past Python's digit limit for text, an object whose repr fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 5] + " …" + text[-3:]


def _auto_value(text: str) -> Any:
    t = text.strip()
    low = t.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) or (
        hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu" and getattr(value, "ndim", 1) == 0)


class Int(Setting):
    def __init__(self, name: str, default: int, lo: int, hi: int, step: int = 1, doc: str = ""):
        super().__init__(name, default, doc)
        self.lo, self.hi, self.step = lo, hi, step

    def allowed(self) -> str:
        s = f"an integer from {self.lo} to {self.hi}"
        return s + (f" in steps of {self.step}" if self.step != 1 else "")

    def check(self, value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not _is_int(value):
            raise self._reject(value)
        value = int(value)
        if not (self.lo <= value <= self.hi) or (value - self.lo) % self.step:
            raise self._reject(value)
        return value


class Float(Setting):
    def __init__(self, name: str, default: float, lo: float, hi: float, doc: str = ""):
        super().__init__(name, default, doc)
        self.lo, self.hi = lo, hi

    def allowed(self) -> str:
        return f"a number from {self.lo} to {self.hi}"

    def check(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (self.lo <= value <= self.hi):
            raise self._reject(value)
        return float(value)


class Flag(Setting):
    def allowed(self) -> str:
        return "True or False"

    def check(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if hasattr(value, "dtype") and value.dtype == bool and getattr(value, "ndim", 1) == 0:
            return bool(value)
        raise self._reject(value)


class Choice(Setting):
    """One of a fixed list of values (strings or numbers, e.g. ``match_target``: "one_deal", 50, 100)."""

    def __init__(self, name: str, default: Any, options: Sequence, doc: str = ""):
        super().__init__(name, default, doc)
        self.options = tuple(options)

    def allowed(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def check(self, value: Any) -> Any:
        for o in self.options:
            if type(o) is type(value) and o == value:
                return o
            if _is_int(o) and _is_int(value) and int(value) == o:
                return o
        raise self._reject(value)


class Custom(Setting):
    """A setting checked by a function that returns the normalised value or raises ``ValueError``."""

    def __init__(self, name: str, default: Any, checker: Callable[[Any], Any], allowed: str,
                 parser: Callable[[str], Any] | None = None, doc: str = ""):
        super().__init__(name, default, doc)
        self._checker, self._allowed, self._parser = checker, allowed, parser

    def allowed(self) -> str:
        return self._allowed

    def check(self, value: Any) -> Any:
        try:
            return self._checker(value)
        except (ValueError, TypeError):
            raise self._reject(value) from None

    def from_string(self, text: str) -> Any:
        return self._parser(text) if self._parser else _auto_value(text)


def _seat_or_random(value: Any) -> Any:
    if value == "random" and isinstance(value, str):
        return value
    if _is_int(value) and 0 <= int(value) < 20:
        return int(value)
    raise ValueError(value)


class Settings(Mapping):
    """Validated settings: read-only, attribute and item access, picklable.

    Engines read settings on every move, so each value is also an attribute in the instance's ``__dict__``: a
    plain lookup, where a ``__getattr__`` fallback costs several times more."""

    def __init__(self, values: Mapping[str, Any]):
        values = dict(values)
        clash = sorted(k for k in values if hasattr(Settings, k) or not k.isidentifier())
        if clash:
            raise ValueError(f"setting names {clash} are not allowed (Settings attributes or not identifiers)")
        self.__dict__.update(values)
        object.__setattr__(self, "_values", values)

    def __setattr__(self, name, value):
        raise AttributeError("settings are read-only; make a new game to change them")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def __getstate__(self):
        return self._values

    def __setstate__(self, state):
        self.__init__(state)

    def as_dict(self) -> dict:
        return dict(self._values)


@dataclass
class SettingsSpec:
    """The settings of one game, in documentation order."""

    game: str
    settings: tuple

    def __post_init__(self):
        self.settings = tuple(self.settings)
        self.by_name = {s.name: s for s in self.settings}

    def defaults(self) -> dict:
        return {s.name: s.default for s in self.settings}

    def resolve(self, values: Mapping[str, Any] | None = None) -> Settings:
        values = dict(values or {})
        unknown = [k for k in values if k not in self.by_name]
        if unknown:
            k = unknown[0]
            close = difflib.get_close_matches(k, self.by_name, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown setting {short(k)} for {self.game}{hint}; known settings: "
                             + ", ".join(self.by_name))
        out = {}
        for s in self.settings:
            out[s.name] = s.check(values[s.name]) if s.name in values else s.default
        return Settings(out)

    def parse_strings(self, items: Iterable[str]) -> dict:
        """``["target_score=101", "partnerships=false"]`` -> typed dict (still to be resolved)."""
        out = {}
        for item in items:
            if "=" not in item:
                raise ValueError(f"a setting must be written key=value, not {short(item)}")
            key, text = item.split("=", 1)
            key = key.strip()
            if key not in self.by_name:
                self.resolve({key: None})  # raises the unknown-setting error with suggestions
            out[key] = self.by_name[key].from_string(text)
        return out


def common_settings(cap_name: str, cap_default: int, cap_hi: int,
                    reward_options: Sequence[str] = ("outcome", "points"), reward_default: str = "outcome",
                    cap_lo: int = 1) -> list[Setting]:
    """The §0 settings every game has: a truncation cap, ``episode``, ``reward``, ``first_dealer``,
    ``skip_single_choice`` (docs/rules.md C-4, C-6, C-7)."""
    return [
        Int(cap_name, cap_default, cap_lo, cap_hi, doc="truncation cap (C-6)"),
        Choice("episode", "match", ("match", "deal"), doc="one match, or one deal/round (C-6)"),
        Choice("reward", reward_default, tuple(reward_options), doc="reward scheme (C-7)"),
        Custom("first_dealer", 0, _seat_or_random, "a seat number below the number of players, or 'random'",
               doc="first dealer (C-2)"),
        Flag("skip_single_choice", True, doc="the engine plays a decision with exactly one legal action (C-4)"),
    ]


#: the ``observation`` setting's values: what a seat sees alone, or that and every legal move's appraisal
PLAIN, APPRAISED = "plain", "appraised"


def observation_setting(appraised: bool) -> Setting:
    """The ``observation`` setting (each env page, docs/envs/<game>.md, documents both layouts): ``"plain"`` is
    what a seat sees (its cards, the table, the public history), nothing computed by a heuristic or an appraisal;
    ``"appraised"`` adds every legal move's appraisal (the default of the games that have one, whose shipped bots
    read it). A game without an appraisal offers only ``"plain"``. It shapes the observation, so it is one of the
    game's ``space_settings`` (a bot file records it; ``Game`` drops the appraisal blocks for ``"plain"``)."""
    if appraised:
        return Choice("observation", APPRAISED, (APPRAISED, PLAIN),
                      doc="what a seat observes: its view and every legal move's appraisal, or its view alone "
                          "(plain, smaller, cheaper)")
    return Choice("observation", PLAIN, (PLAIN,),
                  doc="what a seat observes: its view alone (this game has no appraisal)")
