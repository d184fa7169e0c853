"""Chances about a hand the observer cannot see, for the appraisals (and heuristics) that weigh a reply.

A hand of ``hand`` cards is taken to be dealt at random from the ``unseen`` cards whose place the observer does
not know; nothing here reads a hidden card.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=65536)     # called at every observation; its arguments are small card counts
def p_none(unseen: int, copies: int, hand: int) -> float:
    """The chance that ``hand`` cards dealt at random from ``unseen`` hold none of ``copies`` given ones
    (hypergeometric; 0 when they cannot avoid them all)."""
    none = 1.0
    for i in range(min(hand, unseen)):
        none *= max(unseen - copies - i, 0) / (unseen - i)
    return none


def expected_best(options: list) -> float:
    """The expected worth of the best option a reply has, from ``(worth, chance it is available)`` pairs taken
    as independent: the best first, each next one counting only when every better one is missing. Sorts
    ``options`` in place (every caller builds the list for this call: no copy in the appraisals' inner loop)."""
    options.sort(reverse=True)
    expect, miss = 0.0, 1.0
    for worth, p in options:
        expect += worth * p * miss
        miss *= 1.0 - p
    return expect
