"""Everything that chooses actions, organised by concern (docs/architecture.md):

- :mod:`.policies`: the Policy protocol, :func:`decide`, spec strings, random, the rule-based heuristics,
  the searches (ISMCTS, rollouts), networks and the exported :class:`Bot`;
- :mod:`.training`: configs and recipes, the run schedule, the learner's view of a game, behaviour cloning, the sb3 and rllib backends, and
  the run folder;
- :mod:`.evaluation`: the match loop, head-to-head evaluation with intervals, leagues, ratings, bot reports
  and game records.

``Bot`` is imported on first use, so ``import kahve.agents`` does not load onnxruntime. ``kahve.agents.__version__``
is the installed kahve's version (``kahve --version`` prints it).
"""

from .policies.base import Policy, RandomPolicy, decide
from .policies.specs import POLICY_SPECS, make_policy

__all__ = ["Bot", "Policy", "RandomPolicy", "decide", "make_policy", "POLICY_SPECS"]


def __getattr__(name: str):
    if name == "Bot":
        from .policies.bot import Bot
        return Bot
    if name == "__version__":
        # the installed distribution's version, whose one source is pyproject.toml: `kahve` is a namespace package
        # (docs/design.md, "Why the folders are mapped"), so there is no kahve/__init__.py to hold kahve.__version__
        from importlib.metadata import version
        return version("kahve")
    raise AttributeError(f"module 'kahve.agents' has no attribute {name!r}")
