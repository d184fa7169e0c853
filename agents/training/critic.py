"""A critic that sees the other hands during training, an actor that never does (``network.critic: hands``).

In a card game most of what decides a deal's points is hidden from the seat: the other hands. A value network
that reads only the seat's observation must average over them, so PPO's advantages (return minus value) carry
the luck of the hidden cards, and with Pis Yedili's penalty points (a spread near 50 points a deal) that luck
buries the few points a better move is worth. PerfectDou (Yang et al. 2022) trains the critic on the full state
and the actor on the player's own view: the advantages lose most of the luck, and the policy that is played
still uses only what its seat knows.

Here the learner's training observation is the seat's own observation followed by :func:`critic_view` (the
other seats' hands); :class:`~.ppo_policy.PPOPolicy` feeds the actor the first ``observation_size`` numbers
only and the critic all of them. The exported bot is the actor, so a bot file, a self-play snapshot and every
opponent read the seat's observation alone; only the learner's value network, which is never exported, sees
the hands. :data:`GAMES` are the games whose states keep hands of card ids (Pishe Pasha and Ish keep none).
"""

from __future__ import annotations

import numpy as np

from kahve.envs.core.cards import NUM_CARDS

#: the ``network.critic`` choices: the seat's observation alone; with the other hands; with the other hands and
#: the next cards of the stock (who draws what next is most of the rest of a deal's luck)
CRITICS = ("observation", "hands", "hands_stock")
#: games whose states hold ``hands`` (per seat, lists of card ids 0..51; two packs: ids repeat) and a ``stock``
#: (its top card last)
GAMES = ("pasur", "pishti", "pis_yedili")
#: the stock cards ``hands_stock`` shows, from the top
STOCK_SHOWN = 12


def learner_observation_size(game, critic: str = "observation") -> int:
    """The length of the learner's observations of ``game`` (a :class:`~kahve.envs.core.Game`): the seat's
    observation, then what :func:`critic_view` adds for ``critic``."""
    if critic not in CRITICS:
        raise ValueError(f"critic {critic!r}: one of {', '.join(CRITICS)}")
    if critic == "observation":
        return game.observation_size
    if game.name not in GAMES:
        raise ValueError(f"{game.name} keeps no hands of cards for the critic to see; network.critic {critic!r} "
                         f"trains {', '.join(GAMES)}")
    return game.observation_size + (game.num_players - 1 + (STOCK_SHOWN if critic == "hands_stock" else 0)) * NUM_CARDS


def critic_view(state, seat: int, critic: str = "hands") -> np.ndarray:
    """The other seats' hands, in seat order after ``seat`` (next(seat) first), per card id: copies / 2; with
    ``hands_stock``, then the top :data:`STOCK_SHOWN` cards of the stock, one-hot each, the top first (zeros
    past its end)."""
    n = state.num_players
    rows = n - 1 + (STOCK_SHOWN if critic == "hands_stock" else 0)
    view = np.zeros((rows, NUM_CARDS), dtype=np.float32)
    for k in range(1, n):
        hand = state.hands[(seat + k) % n]
        if hand:
            view[k - 1] = np.bincount(hand, minlength=NUM_CARDS) * 0.5
    if critic == "hands_stock":
        top = state.stock[:-STOCK_SHOWN - 1:-1]          # the top card is the list's last
        view[np.arange(n - 1, n - 1 + len(top)), top] = 1.0
    return view.reshape(-1)
