"""tools/rollout_drop.py, the measurement behind docs/search.md's "Dropping settled moves": it replays the search's
own dropping code over values played once, and counts what each drop plays and whether it chooses as the full
search does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kahve import envs
from kahve.agents import make_policy

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("rollout_drop", ROOT / "tools" / "rollout_drop.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def test_replay_drops_a_move_that_trails_and_keeps_one_that_may_win():
    game = envs.game_class("pis_yedili")(players=2, episode="deal")
    search = make_policy("rollout:32,z=1", game, 0)
    base = [float(w % 5) for w in range(32)]
    trailing = [v - 3.0 + (w % 2) for w, v in enumerate(base)]        # behind by 2.5 on average: dropped after 8
    level = [v + (1.0 if w % 2 else -1.0) for w, v in enumerate(base)]  # level on average: plays every world
    ahead = [v + 4.0 + (w % 3) for w, v in enumerate(base)]           # ahead: the full search's choice
    rows = [([10, 11], 10, [base, trailing]), ([10, 11], 10, [base, level]),
            ([10, 11, 12], 10, [base, trailing, ahead])]
    same, played, median = tool.replay(search, rows, 0.5)
    assert same == 1.0
    # 16 + 64 + (32 + 8 + 32) rollouts of the full searches' 64 + 64 + 96
    assert played == (16 + 64 + 72) / (64 + 64 + 96)
    assert median == 72 / 96
    assert "_values" not in vars(search)            # the search plays its own rollouts again
