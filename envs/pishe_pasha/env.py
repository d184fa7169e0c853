# pishe_pasha as a PettingZoo AEC environment (the engine: .rules). The module docstring is the environment's
# documentation page, rendered from the code by envs/core/docs.py (also written to docs/envs/pishe_pasha.md).

from ..core.aec import make_env_functions
from ..core.docs import render_page
from .rules import PishePashaGame

__doc__ = render_page(PishePashaGame)

raw_env, env = make_env_functions(PishePashaGame)
env.__doc__ = __doc__  # help(kahve.envs.pishe_pasha.env) shows the page (the package exports this function)
