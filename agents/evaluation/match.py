"""The one match loop: a match on the engine with a policy per seat, or ``None`` for a seat a person plays.

Evaluation, bot reports, ``kahve play`` and the web table all run matches through :class:`Match`: bots act
through :func:`~kahve.agents.policies.base.decide`, every chosen action is kept (a record replays them; forced
ones are the engine's), each finished deal's points are collected, and a runaway match is an error.
"""

from __future__ import annotations

from ..policies.base import decide


class Match:
    def __init__(self, game, policies: list, seed: int, move_log: bool = False, max_decisions: int = 1_000_000):
        if len(policies) != game.num_players:
            raise ValueError(f"{game.name} with these settings seats {game.num_players} players, "
                             f"not {len(policies)}")
        self.game, self.policies, self.seed = game, policies, seed
        self.max_decisions = max_decisions
        self.state = game.new_state(seed, move_log=move_log)
        self.actions: list[int] = []                 # every chosen action, in order (for records)
        self.deal_points: list[list] = []            # per finished deal, per seat
        for policy in policies:
            if policy is not None and hasattr(policy, "reset"):
                policy.reset()

    @property
    def over(self) -> bool:
        return self.state.current_player is None

    @property
    def person_to_move(self) -> int | None:
        """The seat a person plays, when it is that seat's turn; else ``None``."""
        seat = self.state.current_player
        return seat if seat is not None and self.policies[seat] is None else None

    def apply(self, action: int) -> None:
        """Apply the action of the seat to move (a person's, or a bot's from :meth:`play_bots`)."""
        state = self.state
        deals = state.deals_completed
        state.apply(action)                           # refuses an illegal action with the state unchanged
        self.actions.append(int(action))
        if state.deals_completed != deals:
            self.deal_points.append(list(state.deal_report["deal_points"]))
        if len(self.actions) > self.max_decisions:
            raise RuntimeError(f"match with seed {self.seed} did not end within {self.max_decisions} decisions")

    def bot_action(self) -> int:
        """The move of the bot to move. The move log is off while it decides, so the clones a search makes of
        the state log nothing (and cost no copy of the log)."""
        state = self.state
        policy = self.policies[state.current_player]
        log, state.move_log = state.move_log, None
        try:
            return decide(policy, state)
        finally:
            state.move_log = log

    def play_bots(self) -> None:
        """Let the bots move until the match is over or a person is to move."""
        state, policies = self.state, self.policies
        while state.current_player is not None and policies[state.current_player] is not None:
            self.apply(self.bot_action())

    def result(self, record: bool = False) -> dict:
        """Winners, returns, deal points and decisions of the finished match (with ``record``: the seed, every
        chosen action and the final scores per seat, for :mod:`.records`)."""
        state = self.state
        out = {"winners": list(state.winners), "returns": list(state.returns), "deal_points": self.deal_points,
               "decisions": len(self.actions), "truncated": state.truncated}
        if record:
            out.update(seed=self.seed, actions=list(self.actions),
                       scores=[state.scores[self.game.sides[i]] for i in range(len(self.policies))])
        return out
