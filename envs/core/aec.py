"""The one AEC adapter: any engine (:mod:`.engine`) as a PettingZoo ``AECEnv``.

A game's ``env.py`` only names its :class:`~.engine.Game` class and calls :func:`make_env_functions`.
Agent selection, reward bookkeeping, masks, infos, seeding and rendering live here, once.

* agents ``player_0`` .. ``player_{N-1}``; observations ``{"observation": float32, "action_mask": int8}``,
  the mask all zeros for agents not to move; spaces built once per env.
* picklable mid-game: a pickle holds the whole engine state and the seed generator.
* ``reset(seed=...)`` seeds a private generator (no global RNG); ``reset(options={"deck": [...]})`` fixes the
  first deal's card order (top card first). ``options`` is a dict whose only key is ``"deck"`` (PettingZoo's own
  ``api_test`` probes the signature with ``{"options": 1}``, which is ignored); anything else is a ``ValueError``.
* a method that takes an agent (``observe``, ``observation_space``, ``action_space``) refuses any other name than
  ``player_0`` .. ``player_{N-1}`` in one ``ValueError``; ``describe_action`` takes an integer action id (an
  ``int`` or a NumPy integer), never ``"3"``, ``3.0`` or ``True``.
* ``infos[agent]`` is ``{}`` except on the step that ends a deal, where every agent's info carries
  ``deal_points``, ``breakdown`` and ``scores`` (and ``winners`` at the match end).
* a seat that leaves the match early (Ish: broke) is terminated while the others play on.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from .engine import Game, IllegalActionError
from .rng import seeded
from .settings import short


class CardGameEnv(AECEnv):
    """PettingZoo AEC environment around one :class:`Game` (set by :func:`make_env_functions`)."""

    game_class: type[Game]
    metadata: dict = {"render_modes": ["ansi"], "name": "card_game_v0", "is_parallelizable": False}
    _rewards_shown = False      # (also for an env pickled before the attribute existed)

    def __init__(self, render_mode: str | None = None, **settings: Any):
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; allowed: None, "
                             + ", ".join(repr(m) for m in self.metadata["render_modes"]))
        self.render_mode = render_mode
        self.game = self.game_class(**settings)
        g = self.game
        self.possible_agents = [f"player_{i}" for i in range(g.num_players)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        obs_space = spaces.Dict({
            "observation": spaces.Box(g.obs_low, g.obs_high, (g.observation_size,), dtype=np.float32),
            "action_mask": spaces.Box(0, 1, (g.num_actions,), dtype=np.int8),
        })
        act_space = spaces.Discrete(g.num_actions)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self._seeder: random.Random | None = None
        self.state = None  # the engine state; set by reset()

    # PettingZoo API ----------------------------------------------------------------------------------
    def observation_space(self, agent: str):
        return self.observation_spaces[self._agent(agent)]

    def action_space(self, agent: str):
        return self.action_spaces[self._agent(agent)]

    def _agent(self, agent) -> str:
        """``agent`` when it names an agent of this table; a one-line ``ValueError`` that lists them otherwise."""
        if not isinstance(agent, str) or agent not in self.agent_name_mapping:
            names = self.possible_agents
            listing = ", ".join(names) if len(names) <= 4 else f"{names[0]} .. {names[-1]}"
            raise ValueError(f"{short(agent)} is not an agent of this {self.game.name} table; its agents are {listing}")
        return agent

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None or self._seeder is None:
            self._seeder = random.Random() if seed is None else seeded(seed)
        deck = None
        if options is not None:
            if not isinstance(options, dict):
                raise ValueError(f"reset options must be a dict such as {{'deck': [...]}}, not {type(options).__name__}"
                                 f" {options!r:.60}")
            # PettingZoo's api_test and parallel_test reset with options={"options": 1} to check the signature
            # only: that key is ignored, every other is refused so that a mistyped "deck" cannot go unnoticed
            unknown = [k for k in options if k not in ("deck", "options")]
            if unknown:
                raise ValueError(f"unknown reset option(s) {', '.join(repr(k) for k in unknown)}; the only "
                                 "option is 'deck' (the first deal's cards, top first)")
            deck = options.get("deck")
        self.state = self.game.new_state(random.Random(self._seeder.getrandbits(64)), deck)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._report_in_infos = False
        self._rewards_shown = False                    # self.rewards holds some nonzero reward
        self._deals_seen = 0
        # set before _sync: a match can end at reset when every decision is forced (e.g. Pishe Pasha with
        # give_compulsory and skip_single_choice), and _sync only moves the selection
        self.agent_selection = self.possible_agents[0]
        self._sync()

    def observe(self, agent: str) -> dict:
        try:
            seat = self.agent_name_mapping[agent]
        except (KeyError, TypeError):                     # (not in the way of the hot path)
            self._agent(agent)
            raise
        st = self.state
        if st.current_player == seat:
            mask = st.legal_mask().view(np.int8)         # bool and int8 share the bytes: no copy
        else:
            mask = np.zeros(self.game.num_actions, dtype=np.int8)
        return {"observation": st.observation(seat), "action_mask": mask}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise IllegalActionError(f"{agent} must act; None is only for agents that are done")
        self.state.apply(action)
        self._cumulative_rewards[agent] = 0.0
        if self._report_in_infos:                      # a deal report is shown on the step that ends the deal only
            self.infos = {a: {} for a in self.agents}
            self._report_in_infos = False
        self._sync()

    def _sync(self) -> None:
        """Copy the engine's rewards, deal report, terminations and the seat to move into the AEC dicts."""
        st, m = self.state, self.agent_name_mapping
        if st._paid or self._rewards_shown:     # rewards come at a deal's end: the dicts change then and after
            rewards, cumulative, paid = self.rewards, self._cumulative_rewards, st.rewards
            for a in self.agents:             # this step's rewards, added up as AECEnv._accumulate_rewards does
                r = float(paid[m[a]])
                rewards[a] = r
                cumulative[a] += r
            self._rewards_shown = st._paid
        if st.deals_completed != self._deals_seen:
            self._deals_seen = st.deals_completed
            self._report_in_infos = True
            for a in self.agents:
                self.infos[a] = dict(st.deal_report)
        someone_out = st.current_player is None or True in st.out     # someone's match is over
        if someone_out:
            for a in self.agents:
                seat = m[a]
                if st.terminal or st.out[seat]:
                    self.terminations[a] = True
                if st.truncated and not st.out[seat]:
                    self.truncations[a] = True
        if st.current_player is not None:
            self.agent_selection = self.possible_agents[st.current_player]
        elif not self.agents or self.agent_selection not in self.agents:
            self.agent_selection = self.agents[0] if self.agents else None
        if someone_out:       # the agents just done step first; no other step makes one done (_was_dead_step
            self._deads_step_first()    # moves on to the next done agent by itself)

    def render(self) -> str | None:
        if self.render_mode is None:
            from gymnasium import logger
            logger.warn("render() was called without a render_mode; pass render_mode='ansi' to the env")
            return None
        return self.state.render(self.state.current_player)

    def close(self) -> None:
        pass

    # kahve conveniences -------------------------------------------------------------------------------
    def describe_action(self, action: int) -> str:
        """Action ``action`` (an integer action id: an ``int`` or a NumPy integer) in words, in the current state
        (e.g. ``"7H takes 4C"``); anything else, ``"3"``, ``3.0`` or ``True``, is a ``ValueError``, never read as
        an id (:meth:`parse_action` reads text)."""
        return self.state.describe_action(action)          # the engine checks the type and the range

    def parse_action(self, text: str) -> int:
        """The legal action that ``text`` names (what :meth:`describe_action` prints, or the bare form)."""
        return self.state.parse_action(text)


def make_env_functions(game_class: type[Game]):
    """Build a game's ``raw_env`` class and ``env()`` factory (PettingZoo's convention)."""
    name = f"{game_class.name}_v{game_class.version}"

    raw_env = type("raw_env", (CardGameEnv,), {
        "game_class": game_class,
        "metadata": {"render_modes": ["ansi"], "name": name, "is_parallelizable": False,
                     "env_id": f"kahve/{game_class.name.replace('_', '-')}-v{game_class.version}"},
        "__module__": game_class.__module__.rsplit(".", 1)[0] + ".env",
        "__doc__": f"The {game_class.name} AEC environment without wrappers (see the module docstring).",
    })

    def env(**kwargs) -> AECEnv:
        """The environment in PettingZoo's standard order-enforcing wrapper."""
        return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))

    return raw_env, env
