"""Pâsur's fixed tables (docs/rules.md §2): action ids, phases, sizes and card points. The rules engine
(:mod:`.rules`) and the appraisal of its moves (:mod:`.appraisal`) both read them, so they live below both."""

from __future__ import annotations

from ..core.cards import ACE, CLUBS, DIAMONDS, JACK, NUM_CARDS, TEN, card_id

# action ranges (§2h)
PLAY = 0                       # PLAY(card) = card
TAKE = NUM_CARDS               # TAKE(card) = 52 + card
NUM_ACTIONS = 2 * NUM_CARDS
# phases (§2c)
PHASE_PLAY, PHASE_SELECT = 0, 1
PHASE_NAMES = ("PLAY", "SELECT")

HAND = 4
HANDS_PER_ROUND = 6
STOCK_SIZE = 40                # PA-11
MOVE_FEATURES = 10             # numbers per action in the observation's last block (appraisal.py)
PLAIN_OBS_SIZE = 390           # observation="plain": every block but the appraisal
OBS_SIZE = PLAIN_OBS_SIZE + NUM_ACTIONS * MOVE_FEATURES   # observation="appraised" (the default)
TWO_CLUBS = card_id(1, CLUBS)
TEN_DIAMONDS = card_id(TEN, DIAMONDS)
HAFT_KHAJ = 7                  # 7 or more clubs
HAFT_KHAJ_POINTS = 7
# card points (§2d): TD 3, 2C 2, each A and J 1; clubs bonus separately
CARD_POINTS = [0] * NUM_CARDS
for _s in range(4):
    CARD_POINTS[card_id(ACE, _s)] = 1
    CARD_POINTS[card_id(JACK, _s)] = 1
CARD_POINTS[TEN_DIAMONDS] = 3
CARD_POINTS[TWO_CLUBS] = 2
IS_CLUB = [1 if c < 13 else 0 for c in range(NUM_CARDS)]
RANK = [c % 13 for c in range(NUM_CARDS)]
#: a card id -> one in its rank's byte of an int: a sum of these over some cards holds, byte by byte, how many of
#: each rank they have (counted in C, no loop over the ranks)
RANK_UNIT = [1 << (8 * r) for r in RANK]

# for bytes.translate (a list of cards turned or filtered in one C call, not a Python loop): card ids -> ranks; and
# for its delete, the queens and kings, and every card of a rank other than r (NOT_RANK[r])
RANK_OF = bytes(RANK) + bytes(256 - NUM_CARDS)
QUEENS_KINGS = bytes(c for c in range(NUM_CARDS) if RANK[c] > JACK)
NOT_RANK = [bytes(c for c in range(NUM_CARDS) if RANK[c] != r) for r in range(13)]
