"""Pâsur as a PettingZoo AEC environment (the engine and its documentation: :mod:`.rules`).

| Import | `from kahve.envs import pasur; env = pasur.env(target_score=62)` |
| --- | --- |
| Agents | `player_0`, `player_1` |
| Action space | `Discrete(104)`: 0-51 play a card, 52-103 take a pool card while choosing a capture (§2h) |
| Observation | `{"observation": Box(0, 10, (390,), float32), "action_mask": Box(0, 1, (104,), int8)}` |

Version history: v0, the first release.
"""

from ..core.aec import make_env_functions
from .rules import PasurGame

raw_env, env = make_env_functions(PasurGame)
