# pishti as a PettingZoo AEC environment (the engine: .rules). The module docstring is the environment's
# documentation page, rendered from the code by envs/core/docs.py (also written to docs/envs/pishti.md).

from ..core.aec import make_env_functions
from ..core.docs import render_page
from .rules import PishtiGame

__doc__ = render_page(PishtiGame)

raw_env, env = make_env_functions(PishtiGame)
env.__doc__ = __doc__  # help(kahve.envs.pishti.env) shows the page (the package exports this function)
