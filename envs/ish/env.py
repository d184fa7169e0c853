# ish as a PettingZoo AEC environment (the engine: .rules). The module docstring is the environment's
# documentation page, rendered from the code by envs/core/docs.py (also written to docs/envs/ish.md).

from ..core.aec import make_env_functions
from ..core.docs import render_page
from .rules import IshGame

__doc__ = render_page(IshGame)

raw_env, env = make_env_functions(IshGame)
env.__doc__ = __doc__  # help(kahve.envs.ish.env) shows the page (the package exports this function)
