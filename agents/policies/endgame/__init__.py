"""Exact play at the end of a deal, over sampled worlds (perfect-information Monte Carlo; docs/search.md).

``endgame[:K]:SPEC`` plays SPEC until the rest of the deal is small enough to solve, then decides by solving it:
K worlds are sampled with ``determinize`` (all the search may know), each distinct world is solved exactly
with both sides playing perfectly, and the move with the best mean value over the worlds is played. Where the
solver can also tell moves that are equal against perfect play apart by their value against a random opponent
(Pâsur's: :meth:`.exact.EngineSolver.tiebreak_values`), the ties go to the move worth most there, and what is still
tied to SPEC's own choice. Games opt in with a solver (:data:`SOLVERS`), today for the last hand of a deal, once the
stock is empty:

* Pişti with 2 players (:mod:`.pishti`): a world differs from the truth only in the opponent's hand and the
  face-down cards, so a few dozen worlds cover nearly all that is possible; a dedicated solver (a fraction of a
  millisecond a world) makes that affordable;
* Pâsur (:class:`.exact.PasurLastHand`): every card not in the seat's hand or seen is in the opponent's hand, so
  there is one world, which the engine itself solves.
"""

from __future__ import annotations

import random

from .exact import PasurLastHand
from .pishti import PishtiLastHand

#: game name -> its solver class: ``Solver.fits(game)``: whether it solves this table at all; ``Solver.applies(state)``:
#: whether the rest of this deal is small enough; ``Solver(game).move_values(world)``: the exact value of every legal
#: action for the side to act in a world where every card is known
SOLVERS = {"pishti": PishtiLastHand, "pasur": PasurLastHand}


def solves_table(game) -> bool:
    """True when ``endgame`` can ever solve at ``game``'s table (else it would only play its policy)."""
    solver = SOLVERS.get(game.name)
    return solver is not None and solver.fits(game)


#: the tables the solvers cover, in words (for errors)
TABLES = "pishti with 2 players, pasur"


class EndgamePolicy:
    DEFAULT_WORLDS = 32

    def __init__(self, game, policy, worlds: int = DEFAULT_WORLDS, seed: int | None = None, name: str | None = None):
        if not solves_table(game):
            raise ValueError(f"endgame has no solver for this table ({game!r}); it solves: {TABLES}")
        self.game = game
        self.policy = policy
        self.worlds = worlds
        self.rng = random.Random(seed)
        self.solver = SOLVERS[game.name](game)
        self.reads_observation = getattr(policy, "reads_observation", True)
        self.reads_mask = getattr(policy, "reads_mask", True)    # (it hands the mask on to its policy)
        self.name = name or f"endgame:{worlds}:{getattr(policy, 'name', type(policy).__name__)}"

    def reset(self) -> None:
        if hasattr(self.policy, "reset"):
            self.policy.reset()

    def act(self, observation, action_mask, state=None) -> int:
        if state is None:
            raise ValueError("endgame needs the engine state (evaluation and play pass it as the third argument)")
        legal = state.legal_actions()
        if len(legal) == 1 or not self.solver.applies(state):
            return self.policy.act(observation, action_mask, state)
        worlds = self.worlds_drawn(state)
        top = _best(self.move_totals(state, worlds))
        if len(top) > 1 and hasattr(self.solver, "tiebreak_values"):     # of equal ones, the best against random
            equal = top
            top = _best(_summed(worlds, equal, lambda world: self.solver.tiebreak_values(world, equal)))
        if len(top) == 1:
            return top[0]
        if observation is None and self.reads_observation:
            observation = state.observation(state.current_player)
        choice = self.policy.act(observation, action_mask, state)
        return choice if choice in top else top[0]

    def worlds_drawn(self, state) -> list:
        """[(world, how often it was drawn)] for K draws from ``determinize``; each distinct world (the hidden
        cards' places) once."""
        counts: dict = {}
        draws = 1 if self.solver.single_world else self.worlds    # a hand without hidden cards: one world, K times
        weight = self.worlds // draws
        for _ in range(draws):
            world = state.determinize(state.current_player, self.rng)
            key = repr(world.to_dict())
            if key in counts:
                counts[key][1] += weight
            else:
                counts[key] = [world, weight]
        return [tuple(c) for c in counts.values()]

    def move_totals(self, state, worlds: list | None = None) -> dict[int, float]:
        """The summed value of every legal move over the K worlds (:meth:`worlds_drawn`), each distinct world
        solved once and counted as often as it was drawn."""
        return _summed(worlds if worlds is not None else self.worlds_drawn(state), state.legal_actions(),
                       self.solver.move_values)


def _summed(worlds: list, moves: list[int], values_of) -> dict[int, float]:
    """Each of ``moves``' values by ``values_of(world)``, summed over the (world, times drawn) of ``worlds``."""
    totals = dict.fromkeys(moves, 0.0)
    for world, n in worlds:
        values = values_of(world)
        for a in moves:
            totals[a] += n * values[a]
    return totals


def _best(totals: dict[int, float]) -> list[int]:
    """The moves of the highest total, in their order."""
    best = max(totals.values())
    return [a for a in totals if totals[a] >= best - 1e-9]
