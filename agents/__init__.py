"""Everything that chooses actions: the Policy protocol, baselines (random, rule-based, search), evaluation."""

from .policy import Policy, RandomPolicy, make_policy, POLICY_SPECS

__all__ = ["Policy", "RandomPolicy", "make_policy", "POLICY_SPECS"]
