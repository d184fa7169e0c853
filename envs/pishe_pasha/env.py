"""Pishe Pasha as a PettingZoo AEC environment (the engine and its documentation: :mod:`.rules`).

| Import | `from kahve.envs import pishe_pasha; env = pishe_pasha.env(match_target=50)` |
| --- | --- |
| Agents | `player_0`, `player_1` |
| Action space | `Discrete(4)`: 0 turn, 1 give, 2 place, 3 keep |
| Observation | `{"observation": Box(0, 1, (587,), float32), "action_mask": Box(0, 1, (4,), int8)}` |

With the default `skip_single_choice=True` an agent is only asked when it has a real choice (GIVE or TURN,
PLACE or KEEP); every other step is played by the engine. With `give_compulsory=True` every step is forced,
so use `skip_single_choice=False` there (otherwise the match is over before the first agent acts).

Version history: v0, the first release.
"""

from ..core.aec import make_env_functions
from .rules import PishePashaGame

raw_env, env = make_env_functions(PishePashaGame)
