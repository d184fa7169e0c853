"""Ish as a PettingZoo AEC environment (the engine and its documentation: :mod:`.rules`).

| Import | `from kahve.envs import ish; env = ish.env(players=4)` |
| --- | --- |
| Agents | `player_0` .. `player_{N-1}`, N = 2 to 20 (`players`) |
| Action space | `Discrete(bet_levels + 42)` (52 by default): bet levels, select slot 0-39, no call, call |
| Observation | `{"observation": Box(0, 1, (386,), float32), "action_mask": Box(0, 1, (bet_levels + 42,), int8)}` |
| Rewards | `"chips"` (default): bankroll change per round; `"outcome"`: ±1 at the match end (see rules) |

A player who goes broke is terminated while the others play on.

Version history: v0, the first release.
"""

from ..core.aec import make_env_functions
from .rules import IshGame

raw_env, env = make_env_functions(IshGame)
