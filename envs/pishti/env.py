"""Pişti as a PettingZoo AEC environment (the engine and its documentation: :mod:`.rules`).

| Import | `from kahve.envs import pishti; env = pishti.env(players=2)` |
| --- | --- |
| Agents | `player_0` .. `player_{N-1}`, N = 2 or 4 |
| Action space | `Discrete(52)`: the card id to play |
| Observation | `{"observation": Box(0, 10, (227 / 241 / 231,), float32), "action_mask": Box(0, 1, (52,), int8)}` |

Version history: v0, the first release.
"""

from ..core.aec import make_env_functions
from .rules import PishtiGame

raw_env, env = make_env_functions(PishtiGame)
