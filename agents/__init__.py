"""Everything that chooses actions, organised by concern (docs/architecture.md):

- :mod:`.policies`: the Policy protocol, :func:`decide`, spec strings, random, the rule-based heuristics,
  the searches (ISMCTS, rollouts), networks and the exported :class:`Bot`;
- :mod:`.training`: configs, the learner's view of a game, opponents, behaviour cloning, DQN, the trainer and
  the run folder;
- :mod:`.evaluation`: the match loop, head-to-head evaluation with intervals, leagues, ratings, bot reports
  and game records.

``Bot`` is imported on first use, so ``import kahve.agents`` does not load onnxruntime.
"""

from .policies.base import Policy, RandomPolicy, decide
from .policies.specs import POLICY_SPECS, make_policy

__all__ = ["Bot", "Policy", "RandomPolicy", "decide", "make_policy", "POLICY_SPECS"]


def __getattr__(name: str):
    if name == "Bot":
        from .policies.bot import Bot
        return Bot
    raise AttributeError(f"module 'kahve.agents' has no attribute {name!r}")
