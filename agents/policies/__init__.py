"""Policies: the protocol and :func:`decide` (:mod:`.base`), spec strings (:mod:`.specs`), the rule-based
players (:mod:`.heuristics`), the searches (:mod:`.ismcts`, :mod:`.rollout`), networks (:mod:`.network`) and
the exported bot file (:mod:`.bot`)."""
