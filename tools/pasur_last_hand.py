"""Can the Pâsur network learn its round's last hand? The last-hand expert network of the shipped bot, and the
offline experiments behind it (docs/bots.md, "pasur/ppo").

In Pâsur's last hand every card is known (docs/search.md: the opponent holds exactly the cards the seat has not
seen), and `endgame:pasur/ppo`, the shipped network with that hand solved exactly, makes about half a point a round
more against random than the network alone. This script asks whether the network could carry that half point
itself, without search:

* ``collect``: the shipped network plays single rounds in the learner's seat against random and the heuristic
  (equal weights); at every last-hand decision with more than one legal move the engine's solver
  (:class:`~kahve.agents.policies.endgame.exact.PasurLastHand`) gives the exact value of every legal move, and a
  quarter of the earlier decisions keep the network's logits (what it should go on doing there).
* ``fit``: the shipped network (optionally widened: extra hidden units whose outgoing weights start at zero, so it
  starts as the same function) is fitted to put its probability on the solved best moves (any of them: ties are
  equal) while keeping its own distribution on the earlier decisions (KL), Adam, batches of 256. Every epoch it
  reports, on a fifth of the states held out: how often its greedy move is a best one and the mean points it gives
  away (regret) in the last hand, and how often it still plays its old move earlier in the round. ``--pair-head``
  adds a head that scores each move by a small MLP over the last hidden layer, the move's row and its id.

* ``tree``: the same play, but at the learner's first last-hand decision the engine solves the whole rest of the
  round, and ``--keep`` decision nodes of that tree (the root and a random draw of the others, from either seat's
  view) are kept with the exact values of their moves: far more, and more varied, examples per round. Each move
  also carries its value against a uniformly random opponent (``vs_random``), which breaks the ties among the moves
  that are best against perfect play (:func:`solve_tree`).
* ``expert``: fits a separate, larger network to the tree nodes from scratch (relu, the same action-feature head)
  and writes a bot file that plays the shipped network in hands 1-5 and the expert wherever the observation's
  final-hand flag is set (:func:`~kahve.agents.policies.bot.export_onnx`'s ``expert``): still one greedy forward
  pass, no search. Rounds whose number ends in 0 are held out; it reports on them every epoch. ``--augment``
  relabels the suits of every batch at random (:func:`suit_permutation`, a symmetry of the game), so that the
  network cannot learn a position by its card names; ``--main BOT`` writes the expert over another bot's main
  network (a fine-tune's, exported); ``--tiebreak random`` learns, among the best moves, only those worth most
  against random; ``--init BOT`` starts from that bot's expert. ``--arch attention`` fits a card-attention network
  instead of the MLP (agents/policies/card_attention.py: a token per card in the hands, the pool and the capture
  being chosen, self-attention between them; ``CARD_LAYOUT`` below), with a warm-up and clipped gradients.
  ``combine`` writes an existing expert (either kind) over another main network without fitting it again (a
  fine-tuned main network under the shipped bot's expert).
* ``decisions``: the bot's own last-hand decisions with a choice as it plays single rounds against random, each with
  every legal move's value against perfect play and against random on the tie-break's line (:func:`line_values`);
  ``regret`` scores bots on them, paired: the points a round their moves give away to that line, by the cards left
  in the two hands (docs/bots.md, "pasur/ppo").

    python tools/pasur_last_hand.py collect --rounds 4000 --seed 11 --out lh_11.npz   # about 6 min a process
    python tools/pasur_last_hand.py fit lh_11.npz lh_12.npz --epochs 8 [--widen 256] [--pair-head 64]
    python tools/pasur_last_hand.py tree --rounds 5000 --seed 21 --out tree_21.npz    # about 19 min a process
    python tools/pasur_last_hand.py tree --rounds 4000 --seed 31 --keep 10 --shallow 6 --out shallow_31.npz
    python tools/pasur_last_hand.py expert shallow_31.npz shallow_32.npz tree_21.npz --out ppo.onnx [--augment]
    python tools/pasur_last_hand.py combine runs/x/final.onnx --expert-from pasur/ppo --out ppo.onnx
    python tools/pasur_last_hand.py expert tree_41.npz tree_42.npz --tiebreak random --init pasur/ppo --out x.onnx
    python tools/pasur_last_hand.py tree --rounds 7000 --seed 51 --keep 10 --shallow 6 --out shallow_51.npz
    python tools/pasur_last_hand.py expert tree_41.npz tree_42.npz shallow_51.npz shallow_52.npz --arch attention
        --tiebreak random --augment --early-weight 2 --epochs 2 --threads 2 --out attention.onnx   # (one line)
    python tools/pasur_last_hand.py decisions --rounds 2500 --seed 911 --out dec_911.npz   # about 5 min
    python tools/pasur_last_hand.py regret dec_911.npz dec_912.npz --bots pasur/ppo other.onnx

"The shipped network" is the main network of the shipped bot file (since it carries the expert, that of hands 1-5:
both play the same there, and ``collect`` measures the main network's own last hand, as before the expert).
"""

from __future__ import annotations

import argparse

import numpy as np

from kahve import checkpoints, envs
from kahve.agents.policies.bot import mlp_from_bot
from kahve.agents.policies.endgame.exact import TIE, PasurLastHand, move_lines, solve_lines
from kahve.agents.policies.specs import bot_path
from kahve.agents.training.view.learner_env import LearnerEnv
from kahve.agents.training.view.opponents import OpponentPool
from kahve.agents.policies.card_attention import CardLayout
from kahve.envs.pasur.rules import (MOVE_FEATURES, NUM_ACTIONS, NUM_CARDS, OBS_CLUBS, OBS_MINE, OBS_PICKED, OBS_PLAYED,
                                    OBS_POOL, OBS_REMAINING, OBS_SIZE, OBS_THEIRS, OBS_UNSEEN, PLAY, TAKE)

BOT = "pasur/ppo"
SETTINGS = {"episode": "deal", "reward": "points"}
MID_SHARE = 0.25            # the share of earlier decisions kept as the anchor
NEG = -1e9                  # the logit of an illegal move
EARLY_CARDS = 6             # a last-hand node with this many cards in the two hands is an early, hard one
# where the observation's card-indexed blocks start (0: the own hand), what suit_permutation relabels
CARD_BLOCKS = (0, OBS_POOL, OBS_MINE, OBS_THEIRS, OBS_UNSEEN, OBS_PLAYED, OBS_PICKED)
# the card-attention expert's view of the observation: a token for every card in the own hand, the pool, the unseen
# block (in the last hand, the opponent's hand) or the capture being chosen; it scores PLAY(card) and TAKE(card);
# the context token reads the clubs, surs, points and flags (up to the played card), the remaining sum and both
# captured piles
CARD_LAYOUT = CardLayout(cards=NUM_CARDS, ranks=13, zones=(0, OBS_POOL, OBS_UNSEEN, OBS_PLAYED, OBS_PICKED),
                         rows_at=OBS_SIZE - NUM_ACTIONS * MOVE_FEATURES, row=MOVE_FEATURES, actions=(PLAY, TAKE),
                         num_actions=NUM_ACTIONS, context=((OBS_CLUBS, OBS_PLAYED), (OBS_REMAINING, OBS_REMAINING + 1),
                                                           (OBS_MINE, OBS_UNSEEN)))
# each expert architecture's sizes, learning rate and batch when not given
ARCH_DEFAULTS = {"mlp": {"width": 512, "depth": 3, "lr": 1e-3, "batch": 512},
                 "attention": {"width": 64, "depth": 4, "lr": 1e-3, "batch": 256}}


def suit_permutation(rng) -> np.ndarray:
    """A random relabelling of the cards that changes nothing in Pâsur: within each rank, the suits other than
    clubs (the 7-clubs race, 2C) trade places, the ten of diamonds (3 points) excepted. Captures read only ranks
    and the scoring only clubs, the 2C, the TD and ranks (A, J), so every value and every legal move is carried
    over with its cards: ``perm[c]`` is the card that ``c`` becomes."""
    from kahve.envs.core.cards import CLUBS, DIAMONDS, NUM_CARDS, TEN, card_id
    perm = np.arange(NUM_CARDS)
    for rank in range(13):
        suits = [s for s in range(4) if s != CLUBS and not (rank == TEN and s == DIAMONDS)]
        perm[[card_id(rank, s) for s in suits]] = [card_id(rank, s) for s in rng.permutation(suits)]
    return perm


def relabelled(perm: np.ndarray, card_blocks, moves_offset: int, row: int, size: int):
    """Index arrays that relabel an observation and a row of per-action numbers by ``perm`` (new = old[:, idx]):
    the card-indexed blocks starting at ``card_blocks``, the actions PLAY(c) and TAKE(c) and their feature rows."""
    from kahve.envs.pasur.rules import NUM_CARDS, TAKE
    inverse = np.argsort(perm)
    action_source = np.concatenate([inverse, TAKE + inverse])       # new action a' is old action_source[a']
    obs_source = np.arange(size)
    for start in card_blocks:
        obs_source[start:start + NUM_CARDS] = start + inverse
    moves = moves_offset + (action_source[:, None] * row + np.arange(row)).ravel()
    obs_source[moves_offset:moves_offset + len(moves)] = moves
    return obs_source, action_source


def shipped_network(game):
    return mlp_from_bot(checkpoints.find(BOT), game.action_feature_size)


def collect(rounds: int, seed: int, out: str) -> None:
    env = LearnerEnv("pasur", SETTINGS, OpponentPool([("random", 1.0), ("heuristic", 1.0)]), seed=seed)
    mlp, solver, rng = shipped_network(env.game), PasurLastHand(env.game), np.random.default_rng(seed)
    last = {"obs": [], "mask": [], "values": []}
    mid = {"obs": [], "mask": [], "logits": []}
    for _ in range(rounds):
        obs, _ = env.reset()
        done = False
        while not done:
            mask = env.action_masks()
            logits = mlp.forward(obs[None])[0]
            # the true state is the only world the seat cannot rule out here (PasurLastHand.single_world)
            if mask.sum() > 1 and solver.applies(env.state):
                values = np.full(len(mask), np.nan, np.float32)
                for a, v in solver.move_values(env.state).items():
                    values[a] = v
                last["obs"].append(obs), last["mask"].append(mask), last["values"].append(values)
            elif mask.sum() > 1 and rng.random() < MID_SHARE:
                mid["obs"].append(obs), mid["mask"].append(mask), mid["logits"].append(logits)
            obs, _, term, trunc, _ = env.step(int(np.argmax(np.where(mask, logits, -np.inf))))
            done = term or trunc
    arrays = {f"last_{k}": np.array(v) for k, v in last.items()} | {f"mid_{k}": np.array(v) for k, v in mid.items()}
    np.savez(out, **arrays)
    print(f"{out}: {len(last['obs']):,} last-hand decisions, {len(mid['obs']):,} earlier ones")


def solve_tree(game, state, nodes: list) -> float:
    """The exact value of ``state`` for its player to act; every decision node below it with more than one legal
    move is appended to ``nodes`` as (state, seat, {action: value}, {action: value against random}), children
    before parents (the root last). Plain negamax without pruning, so every move's value is exact (alpha-beta only
    bounds the losing ones).

    The second values break the ties among the best moves: a move's mean points when the seat goes on choosing,
    among its best moves, the one worth most against a uniformly random opponent (the ``random`` policy: every
    legal action alike, each pick of a capture included), and the opponent does play at random. Among moves that
    are equal against perfect play they choose the one that gives a fallible opponent the most ways to go wrong;
    against a perfect opponent they cost nothing."""
    perfect, _ = solve_lines(game, state, nodes)
    sign = 1 if game.sides[state.current_player] == 0 else -1
    return sign * perfect


def best_moves(values: np.ndarray, vs_random: np.ndarray | None = None) -> np.ndarray:
    """Per row (NaN: not legal), the moves that are best against perfect play; with ``vs_random``, only those of
    them that are also worth most against a random opponent (the tie-break of :func:`solve_tree`)."""
    filled = np.nan_to_num(values, nan=-np.inf)
    best = filled >= filled.max(1, keepdims=True) - TIE
    if vs_random is not None:
        among = np.where(best, np.nan_to_num(vs_random, nan=-np.inf), -np.inf)
        best &= among >= among.max(1, keepdims=True) - TIE
    return best


def collect_trees(rounds: int, seed: int, keep: int, out: str, shallow: int = 0) -> None:
    from kahve.agents.progress import progress_bar
    env = LearnerEnv("pasur", SETTINGS, OpponentPool([("random", 1.0), ("heuristic", 1.0)]), seed=seed)
    game, mlp, rng = env.game, shipped_network(env.game), np.random.default_rng(seed)
    columns = {"obs": [], "mask": [], "values": [], "vs_random": [], "root": [], "round": []}
    with progress_bar("solving last hands") as update:
        for r in range(rounds):
            update(r, rounds)
            play_and_solve(env, game, mlp, rng, keep, shallow, r, columns)
    np.savez_compressed(out, **{k: np.array(v) for k, v in columns.items()})
    print(f"{out}: {len(columns['obs']):,} solved decision nodes from {rounds:,} rounds")


def play_and_solve(env, game, mlp, rng, keep: int, shallow: int, r: int, columns: dict) -> None:
    """One round: the shipped network plays up to its first last-hand decision, then the whole tree is solved;
    the root, every node whose two hands still hold ``shallow`` cards or more, and ``keep`` others are kept."""
    obs, _ = env.reset()
    while env.state.stock:
        mask = env.action_masks()
        logits = mlp.forward(obs[None])[0]
        obs, _, term, trunc, _ = env.step(int(np.argmax(np.where(mask, logits, -np.inf))))
        if term or trunc:
            return
    nodes = []
    solve_tree(game, env.state, nodes)
    if not nodes:
        return
    early = [i for i, (state, *_) in enumerate(nodes[:-1]) if shallow and sum(map(len, state.hands)) >= shallow]
    chosen = set(early)
    later = [i for i in range(len(nodes) - 1) if i not in chosen]
    for i in [len(nodes) - 1] + early + list(rng.permutation(later)[:keep]):
        state, seat, values, vs_random = nodes[i]
        mask = np.zeros(game.num_actions, bool)
        row = np.full(game.num_actions, np.nan, np.float32)
        tie_break = row.copy()
        mask[list(values)] = True
        row[list(values)] = list(values.values())
        tie_break[list(vs_random)] = list(vs_random.values())
        for key, value in (("obs", state.observation(seat).astype(np.float16)), ("mask", mask), ("values", row),
                           ("vs_random", tie_break), ("root", i == len(nodes) - 1), ("round", r)):
            columns[key].append(value)


def line_values(game, state) -> tuple[np.ndarray, np.ndarray]:
    """Every legal move's value for the player to act in a last-hand ``state`` ([num_actions], NaN where not legal):
    against perfect play, and against random when the player keeps to the tie-break's line afterwards (its best moves
    against perfect play and, among them, the one worth most against random: :func:`solve_lines`)."""
    side = game.sides[state.current_player]
    sign = 1 if side == 0 else -1                   # side 0's values -> the acting side's
    perfect = np.full(game.num_actions, np.nan, np.float32)
    vs_random = perfect.copy()
    for action, (value, lines) in move_lines(game, state).items():
        perfect[action], vs_random[action] = sign * value, sign * lines[side]
    return perfect, vs_random


def collect_decisions(rounds: int, seed: int, out: str, bot: str = BOT) -> None:
    """The bot's own last-hand decisions with a choice, playing single rounds against random, each with every legal
    move's values (:func:`line_values`) and whether it is the bot's first of the round (``root``): what
    :func:`regret` scores bots on, and examples ``expert`` can fit to (the keys of a tree file)."""
    from kahve.agents.policies.bot import Bot
    from kahve.agents.progress import progress_bar
    env = LearnerEnv("pasur", SETTINGS, OpponentPool([("random", 1.0)]), seed=seed)
    game, player = env.game, Bot.load(bot_path(bot), env.game)
    columns = {"obs": [], "mask": [], "values": [], "vs_random": [], "root": [], "round": []}
    with progress_bar("solving the bot's last-hand decisions") as update:
        for r in range(rounds):
            update(r, rounds)
            obs, _ = env.reset()
            done, first = False, True
            while not done:
                mask = env.action_masks()
                if mask.sum() > 1 and PasurLastHand.applies(env.state):
                    perfect, vs_random = line_values(game, env.state)
                    for key, value in (("obs", obs.astype(np.float16)), ("mask", mask), ("values", perfect),
                                       ("vs_random", vs_random), ("root", first), ("round", r)):
                        columns[key].append(value)
                    first = False
                obs, _, term, trunc, _ = env.step(player.act(obs, mask))
                done = term or trunc
    np.savez_compressed(out, **{k: np.array(v) for k, v in columns.items()})
    print(f"{out}: {len(columns['obs']):,} last-hand decisions from {rounds:,} rounds")


def tiebreak_regret(values: np.ndarray, vs_random: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """Per decision, the points against random that ``moves`` give away to the tie-break's line: the best value
    against random among the moves best against perfect play, less the chosen move's."""
    ideal = np.where(best_moves(values), np.nan_to_num(vs_random, nan=-np.inf), -np.inf).max(1)
    return ideal - vs_random[np.arange(len(moves)), moves]


def regret(files: list[str], bots: list[str]) -> None:
    """Each bot's points a round given away to the tie-break's line on the decisions of :func:`collect_decisions`
    (paired: every bot meets the same decisions), by the cards left in the two hands."""
    from kahve.agents.policies.bot import Bot
    data = [np.load(f) for f in files]
    for f, d in zip(files, data):
        missing = [k for k in ("obs", "mask", "values", "vs_random", "round") if k not in d]
        if missing:
            raise ValueError(f"{f} is not a file of `decisions` (it has no {', '.join(missing)})")
    get = lambda key: np.concatenate([d[key] for d in data])   # noqa: E731
    obs, mask, values, vs_random = get("obs").astype(np.float32), get("mask"), get("values"), get("vs_random")
    rounds = sum(len(np.unique(d["round"])) for d in data)
    cards = cards_in_hands(obs)
    game = envs.game_class("pasur")(**SETTINGS)
    print(f"{len(obs):,} decisions from {rounds:,} rounds")
    for name in bots:
        player = Bot.load(bot_path(name), game)
        scores = np.concatenate([player.batch_logits(obs[i:i + 4096]) for i in range(0, len(obs), 4096)])
        lost = tiebreak_regret(values, vs_random, np.where(mask, scores, -np.inf).argmax(1))
        by_cards = ", ".join(f"{c}: {lost[cards == c].sum() / rounds:.3f}" for c in range(8, 1, -1))
        error = lost.std() * np.sqrt(len(lost)) / rounds
        print(f"{name}: {lost.sum() / rounds:.3f} a round (standard error {error:.3f}), a move off the line in "
              f"{np.mean(lost > TIE):.1%}; by cards in the two hands {by_cards}")


def cards_in_hands(obs):
    """Per last-hand observation row (numpy or torch), the cards in the two hands: the own hand, and the unseen
    block, which in the last hand is the opponent's hand."""
    return obs[:, :OBS_POOL].sum(1) + obs[:, OBS_UNSEEN:OBS_UNSEEN + NUM_CARDS].sum(1)


def held_out_rounds(rounds: np.ndarray) -> np.ndarray:
    """The rounds of tree files kept out of training: one pair of consecutive rounds in ten. The learner's seat
    alternates from round to round (LearnerEnv), and its last-hand root is the hard one when it leads (four cards
    against four): holding out every tenth round alone held out only the other seat's roots."""
    return (rounds // 2) % 10 == 0


def fit_expert(files: list[str], epochs: int, width: int | None, depth: int | None, lr: float | None, seed: int,
               out: str, threads: int = 1, regret_weight: float = 0.0, early_weight: float = 1.0,
               augment: bool = False, main: str = BOT, tiebreak: bool = False, init: str | None = None,
               arch: str = "mlp", heads: int = 4) -> None:
    import torch as th
    from kahve.agents.policies.bot import Bot, expert_from_bot, export_onnx
    from kahve.agents.policies.card_attention import CardAttention
    from kahve.agents.policies.network import MLP
    from kahve.agents.training.card_attention import CardAttentionNet, minibatches, one_cycle_adamw
    from kahve.envs.pasur.rules import NUM_CARDS, OBS_FINAL, OBS_PHASE
    th.set_num_threads(threads)
    th.manual_seed(seed)
    game = envs.game_class("pasur")(**SETTINGS)
    main_path = bot_path(main)                             # a bot file or a shipped bot's name
    main_net = mlp_from_bot(main_path, game.action_feature_size)
    offset, actions, row = main_net.feature_offset, game.num_actions, game.action_feature_size
    data = [np.load(f) for f in files]
    if tiebreak and not all("vs_random" in d for d in data):
        raise ValueError("--tiebreak random needs tree files that carry the values against random (written by "
                         "this version of tree): " + ", ".join(f for f, d in zip(files, data) if "vs_random" not in d))
    get = lambda key: np.concatenate([d[key] for d in data])   # noqa: E731
    x, mask = th.tensor(get("obs").astype(np.float32)), th.tensor(get("mask"))
    values = th.tensor(np.nan_to_num(get("values"), nan=NEG))
    rounds = np.concatenate([d["round"] + k * 10**7 for k, d in enumerate(data)])
    held_out, root = held_out_rounds(rounds), get("root")
    best_value = values.max(1, keepdim=True).values
    # the moves to learn: the best against perfect play, with --tiebreak random only the one(s) of them worth most
    # against a random opponent (solve_tree); regret is always the points given away against perfect play
    best = th.tensor(best_moves(get("values"), get("vs_random") if tiebreak else None)) & mask
    regret = (best_value - values).masked_fill(~mask, 0.0)
    weight = th.where(cards_in_hands(x) >= EARLY_CARDS, early_weight, 1.0)
    attention = arch == "attention"
    width, depth = width or ARCH_DEFAULTS[arch]["width"], depth or ARCH_DEFAULTS[arch]["depth"]
    lr = lr or ARCH_DEFAULTS[arch]["lr"]
    # --init: the expert to go on from, and the epochs behind it (the metadata counts every fit, not the last one)
    start = expert_from_bot(bot_path(init), row) if init is not None else None
    earlier = Bot.read_metadata(bot_path(init))[1].get("expert", {}).get("epochs", 0) if init is not None else 0
    if attention:
        net = CardAttentionNet(CARD_LAYOUT, width, depth, heads)
        if start is not None:            # go on from another bot's card-attention expert of these sizes
            sizes = (start.width, start.layers, start.heads) if isinstance(start, CardAttention) else None
            if sizes != (width, depth, heads):
                raise ValueError(f"--init {init}: its expert is not a card-attention network of --width {width} "
                                 f"--depth {depth} --heads {heads}")
            net.load_arrays(start)
        logits, parameters = net, list(net.parameters())
    else:
        sizes = [game.observation_size] + [width] * depth
        layers = th.nn.ModuleList([th.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]
                                  + [th.nn.Linear(width, actions)])
        rows = th.nn.Parameter(th.tensor(main_net.feature_weights))
        if start is not None:            # go on from another bot's expert (its sizes), e.g. the shipped one's
            if not isinstance(start, MLP):
                raise ValueError(f"--init {init}: its expert is a card-attention network (--arch attention)")
            if [w.shape for w in start.weights] != [tuple(layer.weight.shape) for layer in layers]:
                raise ValueError(f"--init {init}: its expert has layers {[w.shape[0] for w in start.weights[:-1]]}, "
                                 f"not --width {width} --depth {depth}")
            with th.no_grad():
                for layer, w, b in zip(layers, start.weights, start.biases):
                    layer.weight.copy_(th.tensor(w))
                    layer.bias.copy_(th.tensor(b))
                rows.copy_(th.tensor(start.feature_weights))

        def logits(xb):
            h = xb
            for k, layer in enumerate(layers):
                h = layer(h)
                h = th.relu(h) if k < len(layers) - 1 else h
            return h + xb[:, offset:].reshape(len(xb), actions, row) @ rows
        parameters = list(layers.parameters()) + [rows]

    def report(tag: str) -> None:
        with th.no_grad():
            parts = []
            for name, idx in (("held-out nodes", held_out), ("held-out roots", held_out & root),
                              ("trained-on roots", ~held_out & root)):
                i = th.tensor(np.flatnonzero(idx)[:20000])
                move = logits(x[i]).masked_fill(~mask[i], NEG).argmax(1, keepdim=True)
                share = best[i].gather(1, move).float().mean().item()
                regret = (best_value[i] - values[i].gather(1, move)).mean().item()
                parts.append(f"{name} {share:.2%} (regret {regret:.3f})")
        print(f"{tag}: a best move in " + ", ".join(parts), flush=True)

    train = np.flatnonzero(~held_out)
    print(f"{len(x):,} decision nodes, {held_out.sum():,} held out")
    batch = ARCH_DEFAULTS[arch]["batch"]
    steps = max(1, epochs * (len(train) // batch))
    if attention:
        optimizer, schedule = one_cycle_adamw(parameters, lr, steps)
    else:
        optimizer = th.optim.Adam(parameters, lr=lr)
        schedule = th.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    rng = np.random.default_rng(seed)
    if init is not None:
        report(f"{init}'s expert, before")
    for epoch in range(epochs):
        for i in minibatches(train, batch, rng):
            xb, mb, bb, rb = x[i], mask[i], best[i], regret[i]
            if augment:     # the same decisions with the suits relabelled: the network cannot learn them by card
                obs_source, action_source = (th.tensor(a) for a in relabelled(
                    suit_permutation(rng), CARD_BLOCKS, offset, row, game.observation_size))
                # (a capture's picks come in card order, so a relabelled SELECT decision is not one the engine
                # poses: only PLAY decisions are relabelled; with --tiebreak, random's odds among several captures
                # follow the card order too, so a relabelled tie-break is close to the true one, not always equal)
                play = (xb[:, OBS_PHASE] == 1)[:, None]
                xb = th.where(play, xb[:, obs_source], xb)
                mb, bb, rb = (th.where(play, t[:, action_source], t) for t in (mb, bb, rb))
            log_p = th.log_softmax(logits(xb).masked_fill(~mb, NEG), 1)
            on_best = -th.logsumexp(log_p.masked_fill(~bb, NEG), 1)              # all on the best moves
            # the points the policy gives away: weighs each mistake by what it costs, not all alike
            expected_regret = (log_p.exp() * rb).sum(1)
            loss = (weight[i] * (on_best + regret_weight * expected_regret)).sum() / weight[i].sum()
            optimizer.zero_grad()
            loss.backward()
            if attention:
                th.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
            schedule.step()
        report(f"epoch {epoch + 1}")
    if attention:
        expert = net.to_arrays()
        described = expert.description
    else:
        expert = MLP([layer.weight.detach().numpy() for layer in layers],
                     [layer.bias.detach().numpy() for layer in layers], "relu", feature_offset=offset,
                     feature_weights=rows.detach().numpy())
        described = {"hidden": [width] * depth, "activation": "relu"}
    _, meta = Bot.read_metadata(main_path)
    meta = {**meta, "expert": {"plays": "the last hand (the final-hand flag)", **described,
                               "solved_decisions": int(len(train)), "epochs": earlier + epochs}}
    export_onnx(main_net, out, meta, expert=expert, expert_input=OBS_FINAL)
    print(f"wrote {out}: {main} in hands 1-5, the expert in the last hand")


def combine(main: str, expert_from: str, out: str) -> None:
    """Write the network of hands 1-5 of ``main`` with the last-hand expert of ``expert_from`` (bot files or
    shipped bots' names). The metadata is ``main``'s, with the expert's entry of ``expert_from``."""
    from kahve.agents.policies.bot import Bot, check_fits, expert_from_bot, export_onnx
    from kahve.envs.pasur.rules import OBS_FINAL
    game = envs.game_class("pasur")(**SETTINGS)
    size = game.action_feature_size
    main_path, expert_path = bot_path(main), bot_path(expert_from)
    _, meta = Bot.read_metadata(main_path)
    _, expert_meta = Bot.read_metadata(expert_path)
    check_fits(meta, game, main_path)                       # Pâsur bots of this env version and spaces
    check_fits(expert_meta, game, expert_path)
    expert = expert_from_bot(expert_path, size)              # a BotFileError if it has none
    main_net = mlp_from_bot(main_path, size)
    export_onnx(main_net, out, {**meta, "expert": expert_meta["expert"]}, expert=expert, expert_input=OBS_FINAL)
    print(f"wrote {out}: {main} in hands 1-5, the expert of {expert_from} in the last hand")


def widened(mlp, extra: int, generator):
    """The torch parameters of ``mlp`` with ``extra`` more units in each hidden layer: new units get random
    incoming weights and zero outgoing ones, so the network computes the same function at the start."""
    import torch as th
    params, before = [], 0
    for k, (w, b) in enumerate(zip(mlp.weights, mlp.biases)):
        more = extra if k < len(mlp.weights) - 1 else 0
        W = th.zeros(w.shape[0] + more, w.shape[1] + before)
        W[:w.shape[0], :w.shape[1]] = th.tensor(w)
        if more:
            W[w.shape[0]:] = th.randn(more, W.shape[1], generator=generator) / np.sqrt(W.shape[1])
        params.append((th.nn.Parameter(W), th.nn.Parameter(th.cat([th.tensor(b), th.zeros(more)]))))
        before = more
    return params


def fit(files: list[str], epochs: int, extra: int, anchor: float, lr: float, seed: int, pair: int = 0) -> None:
    import torch as th
    th.set_num_threads(1)
    game = envs.game_class("pasur")(**SETTINGS)
    mlp = shipped_network(game)
    data = [np.load(f) for f in files]
    get = lambda key: th.tensor(np.concatenate([d[key] for d in data]))   # noqa: E731
    seen = game.observation_size
    l_obs, l_mask, values = get("last_obs")[:, :seen], get("last_mask"), get("last_values").nan_to_num(NEG)
    m_obs, m_mask, m_logits = get("mid_obs")[:, :seen], get("mid_mask"), get("mid_logits")
    best_value = values.max(1, keepdim=True).values
    best = th.tensor(best_moves(get("last_values").numpy())) & l_mask
    target = th.softmax(m_logits.masked_fill(~m_mask, NEG), 1)
    rng = np.random.default_rng(seed)
    l_train, l_test = np.split(rng.permutation(len(l_obs)), [len(l_obs) * 4 // 5])
    m_train, m_test = np.split(rng.permutation(len(m_obs)), [len(m_obs) * 4 // 5])
    layers = widened(mlp, extra, th.Generator().manual_seed(seed))
    rows = th.nn.Parameter(th.tensor(mlp.feature_weights))
    offset = mlp.feature_offset
    # the pair head (``pair`` units, DouZero's way): each move scored by a small MLP over the last hidden layer, the
    # move's row and an embedding of its id; its output weights start at zero (the same function at the start)
    actions, width = mlp.output_size, layers[-1][0].shape[1]
    g = th.Generator().manual_seed(seed + 1)
    head = [th.nn.Parameter(th.randn(pair, width, generator=g) / np.sqrt(width)),
            th.nn.Parameter(th.randn(pair, len(mlp.feature_weights), generator=g)),
            th.nn.Parameter(th.randn(actions, pair, generator=g) * 0.1),
            th.nn.Parameter(th.zeros(pair))] if pair else []

    def log_probs(x, mask):
        h = x
        for k, (w, b) in enumerate(layers):
            hidden = h
            h = h @ w.T + b
            h = th.tanh(h) if k < len(layers) - 1 else h
        move_rows = x[:, offset:].reshape(len(x), h.shape[1], -1)
        h = h + move_rows @ rows
        if head:
            state, by_row, by_id, out = head
            z = th.tanh((hidden @ state.T)[:, None, :] + move_rows @ by_row.T + by_id[None])
            h = h + z @ out
        return th.log_softmax(h.masked_fill(~mask, NEG), 1)

    def greedy(i):
        return log_probs(l_obs[i], l_mask[i]).argmax(1)[:, None]

    def report(tag: str) -> None:
        with th.no_grad():
            i, j, t = th.tensor(l_test), th.tensor(m_test), th.tensor(l_train)
            move = greedy(i)
            held_out = best[i].gather(1, move).float().mean().item()
            regret = (best_value[i] - values[i].gather(1, move)).mean().item()
            kept = (log_probs(m_obs[j], m_mask[j]).argmax(1) == target[j].argmax(1)).float().mean().item()
            fitted = best[t].gather(1, greedy(t)).float().mean().item()
        print(f"{tag}: held out, last hand: a best move {held_out:.1%}, regret {regret:.3f} points a "
              f"decision; earlier: the old move {kept:.1%} (trained-on last hand: a best move {fitted:.1%})",
              flush=True)

    print(f"{len(l_obs):,} last-hand decisions, {len(m_obs):,} earlier ones; {len(l_test):,} and {len(m_test):,} held out")
    report("the shipped network")
    optimizer = th.optim.Adam([p for layer in layers for p in layer] + [rows] + head, lr=lr)
    batch = 256
    for epoch in range(epochs):
        lp, mp = rng.permutation(l_train), rng.permutation(m_train)
        for s in range(len(lp) // batch):
            i = th.tensor(lp[s * batch:(s + 1) * batch])
            j = th.tensor(np.resize(mp, len(lp))[s * batch:(s + 1) * batch])
            on_best = -th.logsumexp(log_probs(l_obs[i], l_mask[i]).masked_fill(~best[i], NEG), 1).mean()
            kl = (target[j] * (th.log(target[j] + 1e-12) - log_probs(m_obs[j], m_mask[j]))).masked_fill(
                ~m_mask[j], 0.0).sum(1).mean()
            optimizer.zero_grad()
            (on_best + anchor * kl).backward()
            optimizer.step()
        report(f"epoch {epoch + 1}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="play rounds with the shipped network and solve its last-hand decisions")
    c.add_argument("--rounds", type=int, default=4000)
    c.add_argument("--seed", type=int, default=11)
    c.add_argument("--out", required=True, help="the .npz file to write")
    f = sub.add_parser("fit", help="fit the network to the solved last hand, keeping its earlier play")
    f.add_argument("files", nargs="+", help=".npz files from collect")
    f.add_argument("--epochs", type=int, default=8)
    f.add_argument("--widen", type=int, default=0, help="extra units in each hidden layer")
    f.add_argument("--pair-head", type=int, default=0, help="units of a head scoring each move from the last hidden "
                   "layer, its row and its id (0: none)")
    f.add_argument("--anchor", type=float, default=1.0, help="the weight of the earlier decisions' KL")
    f.add_argument("--lr", type=float, default=3e-4)
    f.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("tree", help="solve the whole last hand the shipped network reaches; keep its decision nodes")
    t.add_argument("--rounds", type=int, default=5000)
    t.add_argument("--seed", type=int, default=21)
    t.add_argument("--keep", type=int, default=80, help="decision nodes kept per tree besides its root (and the "
                   "shallow ones)")
    t.add_argument("--shallow", type=int, default=0, help="also keep every node whose two hands hold at least this "
                   "many cards (the hard early decisions of the last hand; 0: none)")
    t.add_argument("--out", required=True, help="the .npz file to write")
    e = sub.add_parser("expert", help="fit a last-hand expert to tree nodes; write the shipped network with it")
    e.add_argument("files", nargs="+", help=".npz files from tree")
    e.add_argument("--epochs", type=int, default=8)
    e.add_argument("--arch", choices=sorted(ARCH_DEFAULTS), default="mlp", help="mlp: a relu MLP over the "
                   "observation; attention: self-attention over a token per card (agents/policies/card_attention.py)")
    e.add_argument("--width", type=int, help="units per layer (mlp 512, attention 64)")
    e.add_argument("--depth", type=int, help="layers (mlp 3, attention 4)")
    e.add_argument("--heads", type=int, default=4, help="attention heads (attention only)")
    e.add_argument("--lr", type=float, help="peak learning rate (1e-3)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--threads", type=int, default=1, help="torch threads")
    e.add_argument("--regret-weight", type=float, default=0.0, help="weight of the expected points given away "
                   "(the policy's regret) beside the loss on the best moves")
    e.add_argument("--early-weight", type=float, default=1.0, help="weight of the nodes whose two hands hold "
                   f"{EARLY_CARDS} cards or more")
    e.add_argument("--augment", action="store_true", help="relabel the suits of every batch at random "
                   "(suit_permutation: the game's symmetries)")
    e.add_argument("--tiebreak", choices=["none", "random"], default="none", help="random: among the moves best "
                   "against perfect play, learn only those worth most against a random opponent (tree files that "
                   "carry vs_random)")
    e.add_argument("--init", help="start from this bot's expert (a bot file or a shipped bot's name; the same "
                   "--width and --depth) instead of from scratch")
    e.add_argument("--main", default=BOT, help="the bot whose main network plays hands 1-5 in the file written "
                   f"(a bot file or a shipped bot's name; default {BOT})")
    e.add_argument("--out", required=True, help="the bot file (.onnx) to write")
    d = sub.add_parser("decisions", help="the bot's own last-hand decisions against random, every move valued")
    d.add_argument("--rounds", type=int, default=2500)
    d.add_argument("--seed", type=int, default=911)
    d.add_argument("--bot", default=BOT, help=f"the bot that plays (default {BOT})")
    d.add_argument("--out", required=True, help="the .npz file to write")
    g = sub.add_parser("regret", help="bots' points a round given away to the tie-break's line on those decisions")
    g.add_argument("files", nargs="+", help=".npz files from decisions")
    g.add_argument("--bots", nargs="+", default=[BOT], help="bot files or shipped bots' names")
    m = sub.add_parser("combine", help="write a bot's main network with a last-hand expert")
    m.add_argument("main", help="the bot whose main network plays hands 1-5 (a bot file or a shipped bot's name)")
    m.add_argument("--expert-from", default=BOT, help=f"the bot whose expert plays the last hand (default {BOT})")
    m.add_argument("--out", required=True, help="the bot file (.onnx) to write")
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(args.rounds, args.seed, args.out)
    elif args.command == "fit":
        fit(args.files, args.epochs, args.widen, args.anchor, args.lr, args.seed, args.pair_head)
    elif args.command == "combine":
        try:
            combine(args.main, args.expert_from, args.out)
        except (OSError, ValueError) as err:      # a bot that is not there, or does not fit (BotFileError): one line
            parser.exit(2, f"pasur_last_hand combine: {err}\n")
    elif args.command == "decisions":
        collect_decisions(args.rounds, args.seed, args.out, args.bot)
    elif args.command == "regret":
        try:
            regret(args.files, args.bots)
        except (OSError, ValueError) as err:      # a missing file or bot, or a bot for another game: one line
            parser.exit(2, f"pasur_last_hand regret: {err}\n")
    elif args.command == "tree":
        collect_trees(args.rounds, args.seed, args.keep, args.out, args.shallow)
    else:
        try:
            fit_expert(args.files, args.epochs, args.width, args.depth, args.lr, args.seed, args.out, args.threads,
                       args.regret_weight, args.early_weight, args.augment, args.main, args.tiebreak == "random",
                       args.init, args.arch, args.heads)
        except (OSError, ValueError) as err:      # a missing file or bot, old tree files, an expert of other sizes
            parser.exit(2, f"pasur_last_hand expert: {err}\n")


if __name__ == "__main__":
    main()
