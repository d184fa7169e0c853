"""Pis Yedili as a PettingZoo AEC environment (the engine and its documentation: :mod:`.rules`).

| Import | `from kahve.envs import pis_yedili; env = pis_yedili.env(players=2)` |
| --- | --- |
| Agents | `player_0` .. `player_{N-1}`, N = 2, 3 or 4 (3-4 play with two packs) |
| Action space | `Discrete(71)`: 0-51 a card (not a J), 52-67 a J naming a suit, 68 draw, 69 pass, 70 take penalty |
| Observation | `{"observation": Box(-1, 10, (183,), float32), "action_mask": Box(0, 1, (71,), int8)}` |
| Rewards | `"outcome"`: lowest total wins (C-7); `"points"`: the others' mean deal penalty minus one's own |

Version history: v0, the first release.
"""

from ..core.aec import make_env_functions
from .rules import PisYediliGame

raw_env, env = make_env_functions(PisYediliGame)
