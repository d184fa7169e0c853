"""The table manager's resources (issue 58): one loaded bot serves every table that plays it, an extra table with a
trained bot costs well under 1 MB, and a table that expires gives everything it held back."""

from __future__ import annotations

import gc
import weakref

import pytest

from kahve.scripts.web.tables import TableManager


def bots_of(policy):
    """Every Bot inside a policy (a level's search holds its bot as ``base`` or ``policy``)."""
    from kahve.agents.policies.bot import Bot
    seen, out, todo = set(), [], [policy]
    while todo:
        p = todo.pop()
        if id(p) in seen or p is None:
            continue
        seen.add(id(p))
        if isinstance(p, Bot):
            out.append(p)
        for name in ("base", "policy", "anchor"):
            todo.append(getattr(p, name, None))
    return out


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2 ** 20


@pytest.mark.parametrize("opponent", ["pasur/ppo", "hard", "easy"])
def test_every_table_shares_one_loaded_bot(opponent):
    manager = TableManager()
    for k in range(6):
        manager.create(f"session{k % 3}", {"game": "pasur", "opponent": opponent, "seed": k})
    bots = [b for t in manager.tables.values() for p in t.bots.values() for b in bots_of(p)]
    assert len(bots) >= 6
    assert len({id(b.session) for b in bots}) == 1, "one onnxruntime session for every table"
    assert len({tuple(map(id, b.parts)) for b in bots}) == 1           # the expert network's sessions too
    assert len({id(b) for b in bots}) == len(bots)                      # each table its own Bot (its own generator)
    if opponent == "easy":                                              # which draws apart: tables do not share it
        assert len({id(b.rng) for b in bots}) == len(bots)


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="reads the memory from /proc")
def test_an_extra_table_with_a_trained_bot_costs_under_a_megabyte():
    manager = TableManager(max_tables=1000)
    manager.create("warm", {"game": "pasur", "opponent": "pasur/ppo", "seed": 0})    # the bot's one load
    gc.collect()
    before = rss_mb()
    n = 60
    for k in range(n):
        manager.create(f"s{k}", {"game": "pasur", "opponent": "pasur/ppo", "seed": k})
    gc.collect()
    per_table = (rss_mb() - before) / n
    # a table used to load its own three sessions: about 14 MB each
    assert per_table < 1.0, f"{per_table:.2f} MB a table"


def test_an_expired_table_gives_its_memory_back():
    now = [0.0]
    manager = TableManager(idle_seconds=60, clock=lambda: now[0])
    refs = []
    for k in range(5):
        answer = manager.create(f"s{k}", {"game": "pasur", "opponent": "hard", "seed": k})
        table = manager.tables[answer["table"]]
        refs += [weakref.ref(table), weakref.ref(table.state)] + [weakref.ref(b) for p in table.bots.values()
                                                                  for b in [p, *bots_of(p)]]
        del table
    now[0] = 61.0
    manager.sweep()
    gc.collect()
    assert not manager.tables
    assert all(r() is None for r in refs), "an expired table, its state and its bots are freed"
