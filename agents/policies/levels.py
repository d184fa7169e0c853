"""Difficulty levels for people playing against the bots: one network, three strengths (docs/search.md).

=========  ===========================================================================================
level      policy
=========  ===========================================================================================
``easy``   the network's policy sampled with temperature :data:`EASY_TEMPERATURE` (seeded): softmax of
           its logits, so it plays its favourite moves most of the time and blunders now and then
``medium`` the network, greedy (what the bot file alone plays)
``hard``   the network inside a search at play time, per game in :data:`HARD`: the conservative rollout
           search ``rollout:K,z=Z:BOT`` (:mod:`.rollout`) with its budget chosen so that the median move
           takes at most 250 ms on one core, or, in 2-player Pişti, ``endgame:K:BOT`` (:mod:`.endgame`:
           the network, and the deal's last hand solved exactly), where rollouts added nothing measurable
           over the network and the solved last hand does (docs/search.md has the measurements); in Ish
           the network itself, which already plays the game's known optimum; at more than two players
           where the game's search differs there, per game in :data:`HARD_MORE_PLAYERS`
=========  ===========================================================================================

Specs (:mod:`.specs`): ``BOT:LEVEL`` for a bot file or a shipped bot's name (``pishti/ppo_2p:hard``), or
``LEVEL`` alone for the game's shipped bot: among those that fit the table's settings (a bot trained for 2
players does not fit a 4-player table), the first policy bot (PPO or distilled) by name, else the first other
one (:func:`shipped_bot`).
"""

from __future__ import annotations

import warnings

LEVELS = ("easy", "medium", "hard")
#: the temperature of ``easy``: at 1 the trained networks' own policies were as strong as greedy play (their
#: softmax is peaked); at 5 they lose to the heuristic and still beat random (docs/search.md)
EASY_TEMPERATURE = 5.0
#: ``hard``: the search spec over the bot ``{bot}``, per game (others: :data:`HARD_DEFAULT`). Pâsur's 32 worlds: its
#: observation carries every move's appraisal, which the network's rollouts compute at every step; 64 worlds took a
#: median 256 ms a move on one core, 32 take 133 ms (the bot's last-hand expert costs nothing more: each rollout step
#: runs one of its two networks per row, Bot.batch_logits). Pişti (2 players): rollouts over the fine-tuned network
#: added nothing measurable, the exactly solved last hand does (docs/search.md). ``drop=0.5`` (Pâsur, Pis Yedili):
#: a move that trails the network's by half a standard error after a batch of worlds plays no more of them; the
#: same choice as the full search in 97–98% of the decisions at about 0.6 of the time (docs/search.md). Ish: the
#: network itself, which plays the known optimum (docs/rules.md §5e): a search cannot better it, and at 20 players
#: rollout:64 took a median 314 ms a move
HARD = {"pasur": "endgame:rollout:32,z=1,drop=0.5:{bot}", "pishti": "endgame:64:{bot}",
        "pis_yedili": "rollout:64,z=1,drop=0.5:{bot}", "ish": "{bot}"}
#: ``hard`` at tables of more than two players, where it differs from the game's :data:`HARD` entry.
#: Pişti (its endgame solver wants 2 players): 256 worlds, ``drop=0.5``; head to head against the network alone
#: (``medium``) on the same 1,000 deal seeds at 4 players it made +0.35 points a deal where 64 worlds made +0.13, and
#: +0.29 on fresh seeds (docs/search.md), at a median 39-41 ms a move on one core (64 worlds without drop: 56 ms).
#: Pis Yedili: 128 worlds and ``z=2``. With ``z=1`` a single lucky world lifts a move's advantage to one standard
#: error by itself (a deal's points are heavy-tailed: a jack or a 7 going out doubles or triples them), and at 3 and 4
#: players, where more hands are hidden, the moves it chose over the network's were worse on average when 1,024 fresh
#: worlds judged them; ``z=2`` asks for more than one. Head to head against ``medium`` at 3 players: +3.33 points a
#: deal (+1.85…+4.81) on 600 fresh deal seeds where ``rollout:64,z=1,drop=0.5`` made +0.62 (−1.23…+2.47); at 4
#: players +2.38 (+1.49…+3.26) on 1,000 fresh deal seeds (a first run on 400 made +0.29; docs/search.md). A median
#: 178 ms a move at 4 players on one core (the bot's report)
HARD_MORE_PLAYERS = {"pishti": "rollout:256,z=1,drop=0.5:{bot}", "pis_yedili": "rollout:128,z=2,drop=0.5:{bot}"}
HARD_DEFAULT = "rollout:64,z=1:{bot}"


#: bots whose logits are a policy (``easy`` samples them): PPO's, and networks fitted to a teacher's moves by
#: cross-entropy (a recipe's distill stages: agents/training/distill.py); a DQN's are Q-values
POLICY_ALGORITHMS = ("ppo", "distilled")


def _preference(meta: dict, spec: str) -> tuple:
    """Sort key of a shipped bot for the bare levels: policy bots first, then by name."""
    return meta.get("algorithm") not in POLICY_ALGORITHMS, spec


def shipped_bot(game) -> str:
    """The spec (``pishti/ppo_2p``) of the shipped bot of ``game`` that the bare levels use: among those that
    fit its settings, the first policy bot by name (PPO or distilled: its logits are a policy, which ``easy``
    samples), else the first other one by name."""
    from kahve import checkpoints

    from .bot import Bot, BotFileError, BotSettingsWarning, check_fits
    tried, fitting = [], []
    for path in sorted((checkpoints.ROOT / game.name).glob("*.onnx")):
        spec = f"{game.name}/{path.stem}"
        try:
            meta = Bot.read_metadata(path)[1]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BotSettingsWarning)
                check_fits(meta, game, spec)
        except BotFileError as err:
            tried.append(str(err))
            continue
        fitting.append(_preference(meta, spec))
    if fitting:
        return min(fitting)[1]
    why = ("; ".join(tried)) if tried else "none is shipped"
    raise ValueError(f"no shipped {game.name} bot fits these settings ({why}); name a bot file: BOT:LEVEL")


def first_shipped_bot(game_name: str) -> str | None:
    """The shipped bot of ``game_name`` that the bare levels use when none fits the table: the first policy bot
    by name, else the first one (None: the game ships none)."""
    from kahve import checkpoints

    from .bot import Bot, BotFileError
    found = []
    for path in sorted((checkpoints.ROOT / game_name).glob("*.onnx")):
        try:
            found.append(_preference(Bot.read_metadata(path)[1], f"{game_name}/{path.stem}"))
        except BotFileError:
            continue
    return min(found)[1] if found else None


def hard_spec(game, bot: str) -> str:
    """The search spec that ``BOT:hard`` is at ``game``'s table: at more than two players
    :data:`HARD_MORE_PLAYERS`'s where the game has an entry there, else :data:`HARD`'s; the default where neither
    has one, or where the entry's endgame solver does not fit the table."""
    from .endgame import solves_table
    spec = HARD.get(game.name, HARD_DEFAULT)
    if game.num_players > 2:
        spec = HARD_MORE_PLAYERS.get(game.name, spec)
    if spec.startswith("endgame:") and not solves_table(game):
        spec = HARD_DEFAULT
    return spec.format(bot=bot)
