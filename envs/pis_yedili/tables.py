"""Pis Yedili's fixed tables (docs/rules.md §3): action ids, sizes, and what each card is and follows. The
rules engine (:mod:`.rules`) and the appraisal of its moves (:mod:`.appraisal`) both read them, so they live
below both."""

from __future__ import annotations

from ..core.cards import ACE, JACK, NUM_CARDS, SEVEN, TEN

HAND_SIZE = 7
PLAY_J = 52          # 52 + 4 * jack suit + named suit
DRAW = 68
PASS = 69
TAKE_PENALTY = 70
NUM_ACTIONS = 71
MOVE_FEATURES = 16             # numbers per action in the observation's last block (appraisal.py)
PLAIN_OBS_SIZE = 183           # observation="plain": every block but the appraisal
OBS_SIZE = PLAIN_OBS_SIZE + NUM_ACTIONS * MOVE_FEATURES   # observation="appraised" (the default)

# ----- precomputed card tables --------------------------------------------------------------------------
RANK = [c % 13 for c in range(NUM_CARDS)]
ORDINARY = [r not in (ACE, SEVEN, TEN, JACK) for r in range(13)]           # PY-6: 2-6, 8, 9, Q, K
VALUE = [(11 if r == ACE else 25 if r == JACK else 10 if r >= TEN else r + 1) for r in RANK]   # PY-13
FIRST_OK = [c // 13 == 0 and ORDINARY[c % 13] for c in range(NUM_CARDS)]   # PY-9: playable in round 1
IS_JACK = [r == JACK for r in RANK]
JACK_IDS = [13 * s + JACK for s in range(4)]
# MATCH[ctx][c]: non-jack card c follows the context ctx = 13 * suit + rank to match (a J on top: named suit, J)
MATCH = [tuple(c // 13 == ctx // 13 or c % 13 == ctx % 13 for c in range(NUM_CARDS)) for ctx in range(NUM_CARDS)]
# jack actions for a bitmask of jack suits held, already sorted
JACK_ACTIONS = [[PLAY_J + 4 * s + d for s in range(4) if m >> s & 1 for d in range(4)] for m in range(16)]

# ----- a set of cards counted in one integer ----------------------------------------------------------------
# Card c stands for the integer COUNTS[c]: one number a byte, a 1 at the card's own count, at its rank's count
# and, for a card other than a J (a J follows anything, so it is counted apart from its suit), at its suit's
# count; and its value (PY-13) at its suit's value (a J's again apart) and at the cards' total value, two bytes
# each. Summed over a hand or a pile, it is every one of those counts at once, read back as bytes: one loop in C
# (``sum(map(COUNTS.__getitem__, cards))``) instead of one in Python. No field carries into the next: two packs
# hold 104 cards worth 880 points, so no field reaches its top bit (SIGN_BITS), which is how a difference of two
# such sums tells that one of its fields went below zero.
CARD_AT, RANK_AT, SUIT_AT, SUIT_VALUE_AT, VALUE_AT = 0, NUM_CARDS, NUM_CARDS + 13, NUM_CARDS + 17, NUM_CARDS + 25
COUNTS_SIZE = VALUE_AT + 2
assert CARD_AT == 0                # counts[c] is card c's
COUNTS = [(1 << 8 * (CARD_AT + c)) + (1 << 8 * (RANK_AT + RANK[c])) + (VALUE[c] << 8 * VALUE_AT)
          + (0 if IS_JACK[c] else (1 << 8 * (SUIT_AT + c // 13)) + (VALUE[c] << 8 * (SUIT_VALUE_AT + 2 * (c // 13))))
          for c in range(NUM_CARDS)]
SIGN_BITS = (sum(0x80 << 8 * i for i in range(SUIT_VALUE_AT))
             + sum(0x8000 << 8 * i for i in range(SUIT_VALUE_AT, COUNTS_SIZE, 2)))
PACK_COUNTS = {packs: packs * sum(COUNTS) for packs in (1, 2)}     # every card of one pack, of two
