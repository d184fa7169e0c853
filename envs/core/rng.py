"""Random streams on the hot path: a shuffle and a copy, both exactly equal to the standard library's results.

Every deal starts with a shuffle and every search node may copy a generator, so these two are worth doing
without the standard library's per-call overhead. Neither changes a single drawn number: the same seed gives the
same decks as :meth:`random.Random.shuffle` (tests/envs/test_core.py checks it over many seeds), so records,
goldens and mirrored evaluations replay unchanged.
"""

from __future__ import annotations

import _random
import operator
import random

# bit length of every list length a deck can have (two packs are 104 cards); longer lists use random.shuffle
_BITS = tuple(n.bit_length() for n in range(256))


def shuffle(rng: random.Random, cards: list) -> None:
    """Shuffle ``cards`` in place, drawing exactly what ``rng.shuffle(cards)`` draws.

    This is CPython's Fisher-Yates with ``_randbelow`` (rejection sampling on ``getrandbits``) inlined: the
    same calls to ``getrandbits`` in the same order, without a Python function call per card (about twice as
    fast for a 52-card deck).
    """
    if len(cards) >= len(_BITS):
        rng.shuffle(cards)
        return
    getrandbits = rng.getrandbits
    bits = _BITS
    for i in range(len(cards) - 1, 0, -1):
        n = i + 1
        k = bits[n]
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        cards[i], cards[j] = cards[j], cards[i]


def copy_rng(rng: random.Random) -> random.Random:
    """An independent generator in the same state (no seeding from the OS, which ``random.Random()`` does)."""
    new = random.Random.__new__(random.Random)
    new.setstate(rng.getstate())
    return new


def seeded(seed: int) -> random.Random:
    """``random.Random(seed)`` for a non-negative integer seed, without the Python-level dispatch of
    ``Random.seed`` (the same state: CPython seeds an int exactly so). A new deal or search node may seed two
    generators. Any integer type is accepted (``numpy.int64`` too); a negative seed gets a stream of its own
    (CPython would seed ``-n`` exactly like ``n``); anything else is a ``ValueError``."""
    if type(seed) is not int:
        if isinstance(seed, bool) or not hasattr(seed, "__index__"):
            raise ValueError(f"a seed must be an integer, not {seed!r}")
        seed = operator.index(seed)
    new = random.Random.__new__(random.Random)
    _random.Random.seed(new, seed if seed >= 0 else f"negative seed {seed}")
    new.gauss_next = None
    return new
