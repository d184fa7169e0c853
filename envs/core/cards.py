"""Standard 52-card pack: integer ids and two-character strings (docs/rules.md C-1).

Integer id = 13 * suit + rank, suit C=0 D=1 H=2 S=3, rank A=0, 2=1 ... T=9, J=10, Q=11, K=12.
So ``AC`` = 0, ``2C`` = 1, ``JC`` = 10, ``TD`` = 22, ``AH`` = 26, ``KS`` = 51. Two-pack games reuse
the same ids; the two copies of a card are never told apart.

Games with another deck (Ish) define their own ids and reuse :func:`check_deck`.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable, Sequence

from .settings import short

RANKS = "A23456789TJQK"
SUITS = "CDHS"
NUM_CARDS = 52

ACE, JACK, QUEEN, KING = 0, 10, 11, 12
TEN = 9
SEVEN = 6
CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")

_SUIT_ALIASES = {
    "C": 0, "D": 1, "H": 2, "S": 3,
    "♣": 0, "♦": 1, "♥": 2, "♠": 3,
    "♧": 0, "♢": 1, "♡": 2, "♤": 3,
}
_RANK_ALIASES = {r: i for i, r in enumerate(RANKS)}
_RANK_ALIASES["10"] = TEN
_RANK_ALIASES["1"] = ACE  # tolerated, as some records write the ace as 1

CARD_STRINGS = tuple(r + s for s in SUITS for r in RANKS)


def card_id(rank: int, suit: int) -> int:
    return 13 * suit + rank


def rank_of(card: int) -> int:
    return card % 13


def suit_of(card: int) -> int:
    return card // 13


def card_str(card: int) -> str:
    """``card_str(22) == "TD"``."""
    return CARD_STRINGS[card]


def cards_str(cards: Iterable[int]) -> list[str]:
    return [CARD_STRINGS[c] for c in cards]


def parse_card(text: str) -> int:
    """Parse ``"TD"``, ``"10D"``, ``"td"``, ``"10♦"`` or ``"T♦"`` to a card id.

    Raises ``ValueError`` with the accepted forms when the text is not a card.
    """
    if hasattr(text, "__index__") and not isinstance(text, bool):        # int, numpy.int64, ...
        if 0 <= text < NUM_CARDS:
            return int(text)
        raise ValueError(f"card id {text} is out of range 0..51")
    if not isinstance(text, str):
        raise ValueError(f"a card must be a string like 'TD' or '10D', not {short(text)}")
    s = text.strip().upper()
    if len(s) >= 2:
        rank = _RANK_ALIASES.get(s[:-1])
        suit = _SUIT_ALIASES.get(s[-1])
        if rank is not None and suit is not None:
            return card_id(rank, suit)
    raise ValueError(
        f"not a card: {short(text)}; a card is a rank from {' '.join(RANKS)} (or 10) followed by a suit "
        f"from C D H S (or ♣ ♦ ♥ ♠), e.g. 'TD', '10D', 'QS'"
    )


def check_deck(cards: Sequence, parse: Callable[[object], int], expected: Counter, to_str: Callable[[int], str],
               what: str) -> list[int]:
    """Parse a preset deck and check it holds exactly the ``expected`` multiset of ids.

    Every problem is named: unknown cards, duplicates beyond the allowed count, missing cards, wrong length.
    """
    if isinstance(cards, (str, bytes)) or not isinstance(cards, Sequence):
        raise ValueError(f"a preset deck must be a list of card strings, not {type(cards).__name__}")
    ids, bad = [], []
    for c in cards:
        try:
            ids.append(parse(c))
        except ValueError:
            bad.append(c)
    if bad:
        raise ValueError(f"preset deck has unknown cards: {short(bad, 300)}")
    have = Counter(ids)
    extra = sorted(((to_str(c), have[c] - expected.get(c, 0)) for c in have if have[c] > expected.get(c, 0)))
    missing = sorted(to_str(c) for c in expected if have.get(c, 0) < expected[c])
    total = sum(expected.values())
    if extra or missing or len(ids) != total:
        parts = [f"a preset deck must be {what} ({total} cards); got {len(ids)} cards"]
        if extra:
            parts.append("too many copies of " + ", ".join(f"{c} (+{n})" for c, n in extra))
        if missing:
            parts.append("missing " + ", ".join(missing))
        raise ValueError("; ".join(parts))
    return ids


def check_standard_deck(cards: Sequence, packs: int = 1) -> list[int]:
    """A preset deck of ``packs`` standard 52-card packs (each card exactly ``packs`` times)."""
    what = "one 52-card pack" if packs == 1 else f"{packs} packs of 52, each card {packs} times"
    return check_deck(cards, parse_card, Counter({c: packs for c in range(NUM_CARDS)}), card_str, what)
