# pis_yedili as a PettingZoo AEC environment (the engine: .rules). The module docstring is the environment's
# documentation page, rendered from the code by envs/core/docs.py (also written to docs/envs/pis_yedili.md).

from ..core.aec import make_env_functions
from ..core.docs import render_page
from .rules import PisYediliGame

__doc__ = render_page(PisYediliGame)

raw_env, env = make_env_functions(PisYediliGame)
env.__doc__ = __doc__  # help(kahve.envs.pis_yedili.env) shows the page (the package exports this function)
