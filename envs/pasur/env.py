# pasur as a PettingZoo AEC environment (the engine: .rules). The module docstring is the environment's
# documentation page, rendered from the code by envs/core/docs.py (also written to docs/envs/pasur.md).

from ..core.aec import make_env_functions
from ..core.docs import render_page
from .rules import PasurGame

__doc__ = render_page(PasurGame)

raw_env, env = make_env_functions(PasurGame)
env.__doc__ = __doc__  # help(kahve.envs.pasur.env) shows the page (the package exports this function)
