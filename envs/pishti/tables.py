"""Pişti's fixed tables (docs/rules.md §1): sizes and the cards that score or capture. The rules engine
(:mod:`.rules`) and the appraisal of its moves (:mod:`.appraisal`) both read them, so they live below both."""

from __future__ import annotations

from ..core.cards import ACE, JACK, card_id

PLAYS_PER_DEAL = 48
PACKET = 4
MOVE_FEATURES = 8              # numbers per action in the observation's last block (appraisal.py)
TWO_CLUBS = card_id(1, 0)
TEN_DIAMONDS = card_id(9, 1)
JACKS = frozenset(card_id(JACK, suit) for suit in range(4))
ACES = frozenset(card_id(ACE, suit) for suit in range(4))
