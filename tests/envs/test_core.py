"""The core's random streams: the fast shuffle and copies draw exactly what the standard library draws, and the
lazily made chance stream gives the same games as one made up front."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kahve import envs
from kahve.envs.core.rng import copy_rng, shuffle


@pytest.mark.parametrize("length", [0, 1, 2, 3, 40, 52, 104, 300])
def test_shuffle_draws_what_random_shuffle_draws(length):
    for seed in range(300):
        ours, theirs = list(range(length)), list(range(length))
        a, b = random.Random(seed), random.Random(seed)
        shuffle(a, ours)
        b.shuffle(theirs)
        assert ours == theirs
        assert a.getstate() == b.getstate()        # the same numbers were drawn, none more


def test_shuffle_is_uniform_enough():
    # each of 6 orders of 3 cards about 1/6 of the time (catches an off-by-one in the bounds)
    rng = random.Random(1)
    counts = {}
    for _ in range(6000):
        cards = [0, 1, 2]
        shuffle(rng, cards)
        counts[tuple(cards)] = counts.get(tuple(cards), 0) + 1
    assert len(counts) == 6 and all(850 < c < 1150 for c in counts.values())


def test_copy_rng_is_independent_and_in_the_same_state():
    rng = random.Random(7)
    rng.random()
    copy = copy_rng(rng)
    assert [copy.random() for _ in range(5)] == [rng.random() for _ in range(5)]
    copy.random()
    assert copy.getstate() != rng.getstate()


@pytest.mark.parametrize("game", list(envs.GAMES))
def test_chance_stream_is_made_on_first_use_with_the_same_numbers(game):
    g = envs.game_class(game)()
    state = g.new_state(11)
    seeder = random.Random(11)
    seeder.getrandbits(64)                          # the deck stream's seed comes first
    expected = random.Random(seeder.getrandbits(64))
    fresh = g.new_state(11)
    if fresh._chance_rng is None:                   # nothing drew from it yet: the first draw is the seed's
        assert fresh.chance_rng.random() == expected.random()
    clone = state.clone()
    assert clone.chance_rng.random() == state.chance_rng.random()


# ----- Settings: attribute access is a plain lookup, and the object stays read-only -----------------------------
def test_settings_read_only_attribute_and_item_access_and_pickle():
    import pickle

    from kahve.envs.core.settings import Settings

    s = envs.game_class("pishti")(players=2, target_score=101).settings
    assert s.target_score == s["target_score"] == 101 and s.players == 2
    with pytest.raises(AttributeError, match="read-only"):
        s.target_score = 5
    with pytest.raises(AttributeError):
        s.no_such_setting
    back = pickle.loads(pickle.dumps(s))
    assert dict(back) == dict(s) and back.target_score == 101
    with pytest.raises(AttributeError, match="read-only"):
        back.players = 4
    with pytest.raises(ValueError, match="not allowed"):
        Settings({"items": 1})                     # would shadow the Mapping method


def test_seeded_is_random_random_of_the_seed():
    from kahve.envs.core.rng import seeded
    for seed in (0, 1, 2**31, 2**64 - 1, 12345678901234567890123):
        assert seeded(seed).getstate() == random.Random(seed).getstate()
        assert seeded(np.int64(seed % 2**63)).getstate() == random.Random(seed % 2**63).getstate()


def test_negative_seeds_do_not_alias_positive_ones_and_non_integers_are_refused():
    from kahve.envs.core.rng import seeded
    assert seeded(-5).getstate() != seeded(5).getstate()          # random.Random(-5) is random.Random(5)
    assert seeded(-5).getstate() == seeded(-5).getstate()
    for game in envs.GAMES:
        g = envs.game_class(game)()
        assert g.new_state(-5).to_dict() != g.new_state(5).to_dict()
        assert g.new_state(np.int64(7)).to_dict() == g.new_state(7).to_dict()
    for bad in (1.5, "7", True, [1]):
        with pytest.raises(ValueError, match="a seed must be an integer"):
            seeded(bad)


def test_odds_of_an_unseen_hand_match_counting_every_hand():
    import itertools
    from math import comb

    from kahve.envs.core.odds import expected_best, p_none
    for unseen, copies, hand in [(10, 3, 4), (8, 2, 1), (6, 4, 3), (5, 0, 2), (4, 3, 3), (3, 1, 5)]:
        dealt = min(hand, unseen)
        hands = list(itertools.combinations(range(unseen), dealt))
        without = sum(1 for h in hands if not any(c < copies for c in h))
        assert p_none(unseen, copies, hand) == pytest.approx(without / comb(unseen, dealt))
    # the best available option counts; a worse one only when every better one is missing
    assert expected_best([(2.0, 0.5), (10.0, 0.25)]) == pytest.approx(10 * 0.25 + 2 * 0.5 * 0.75)
    assert expected_best([]) == 0.0
