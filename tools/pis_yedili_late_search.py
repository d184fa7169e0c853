"""The Pis Yedili network distilled from a search of the late decisions (docs/bots.md, "pis_yedili/distilled_2p").

The rollout search's gain over the heuristic at Pis Yedili lies in the late decisions: either hand at three cards
or fewer, or a jack among the legal moves (mostly shedding a jack before the opponent goes out). This builds the
shipped ``pis_yedili/ppo_2p`` network in two steps, from the heuristic and that search alone:

``label``: the heuristic plays both seats of 2-player single deals. At every decision with two or more legal
    moves it writes the v1 observation, the mask and a label: the heuristic's move, except at a late decision,
    where ``rollout:K`` over the heuristic (K determinized worlds, common random numbers) replaces it by its best
    move when that beats the heuristic's by ``z`` standard errors of the paired differences. ``--late-only``
    writes only the late decisions (the searched ones); ``--worlds 0`` searches nothing (the heuristic's labels).
    ``--base BOT`` puts a bot in the heuristic's place: it plays both seats and the search's rollouts, and its
    move is the one a label keeps (the next generation of expert iteration: the search over the network it
    improves).
    The file (npz, never a pickle) is rewritten once a minute, so an interrupted run keeps what it made.

``fit``: an MLP with the action-feature head (the network of ``kahve train``, 256x256 tanh) fitted by
    cross-entropy to the heuristic's labels of the early decisions and the search's labels of the late ones, each
    example under a random permutation of the suits (the rules are the same for every suit after round 1, so the
    network cannot tie what it learns to card ids); written as a bot file. ``--init BOT`` starts from a bot
    file's network of the same shape instead of from scratch (to go on with more labels), and
    ``--early-share F`` fits only that share of the heuristic's early labels (so that new late labels weigh more).
    The first file gives the early decisions' labels: the heuristic's, or a bot's own moves (``label --worlds 0
    --base BOT``) when the fit goes on from that bot.

    python tools/pis_yedili_late_search.py label --seed 130000 --count 218380 --worlds 0 --out early.npz
    python tools/pis_yedili_late_search.py label --seed 110000 --count 8804 --out late_1.npz
    python tools/pis_yedili_late_search.py fit early.npz late_1.npz ... --out checkpoints/pis_yedili/ppo_2p.onnx
    # the next generation, over the shipped network (docs/bots.md, "pis_yedili/distilled_2p")
    python tools/pis_yedili_late_search.py label --seed 613000 --count 70000 --worlds 0 \
        --base pis_yedili/distilled_2p --out net_early.npz
    python tools/pis_yedili_late_search.py label --seed 611000 --count 1815 --late-only \
        --base pis_yedili/distilled_2p --out g2_611000.npz
    python tools/pis_yedili_late_search.py fit net_early.npz g2_611000.npz ... --epochs 6 --lr 3e-4 \
        --init pis_yedili/distilled_2p --out next.onnx
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kahve import envs                                                     # noqa: E402
from kahve.agents.policies.base import decide                              # noqa: E402
from kahve.agents.policies.rollout import RolloutPolicy, margin_choice     # noqa: E402
from kahve.agents.policies.specs import bot_path, make_policy              # noqa: E402
from kahve.agents.progress import progress_bar                             # noqa: E402
from kahve.envs.pis_yedili.rules import (DRAW, FIRST_ROUND, MOVE_FEATURES, NUM_ACTIONS, OBS_DISCARD,  # noqa: E402
                                         OBS_MOVES, OBS_NAMED_SUIT, OBS_PHASE, OBS_TOP, PLAY_J)

SAVE_EVERY_S = 60       # the label file is rewritten this often: a rewrite compresses every label made so far
KEYS = ("obs", "masks", "actions", "late", "dev", "gain")


def is_late(state, seat: int, legal: list[int]) -> bool:
    """Either hand at three cards or fewer, or a jack among the legal moves."""
    return (len(state.hands[seat]) <= 3 or len(state.hands[1 - seat]) <= 3
            or any(PLAY_J <= a < DRAW for a in legal))


def label(args) -> None:
    game = envs.game_class("pis_yedili")(players=2, episode="deal")
    try:
        base_policy = make_policy(args.base, game, args.seed)
        rollout_policy = make_policy(args.base, game, args.seed + 1)     # its own instance: the search reseeds it
    except (ValueError, OSError) as err:
        sys.exit(f"--base: {err}")
    search = RolloutPolicy(game, max(args.worlds, 1), seed=args.seed + 1, policy=rollout_policy)
    rng = random.Random(args.seed)
    rows = {k: [] for k in KEYS}

    def save():
        np.savez_compressed(args.out, obs=np.array(rows["obs"], np.float32), masks=np.array(rows["masks"], bool),
                            actions=np.array(rows["actions"]), late=np.array(rows["late"]),
                            dev=np.array(rows["dev"]), gain=np.array(rows["gain"], np.float32))

    start = saved = time.time()
    with progress_bar(f"labelling {args.out}") as update:
        while len(rows["actions"]) < args.count:
            state = game.new_state(rng.getrandbits(32))
            while state.current_player is not None and state.deals_completed == 0 \
                    and len(rows["actions"]) < args.count:
                seat = state.current_player
                legal = state.legal_actions()
                base = decide(base_policy, state)
                late = is_late(state, seat, legal)
                if len(legal) >= 2 and (late or not args.late_only):
                    action, gain = margin_choice(search.action_values(state, legal, seat), legal, base, args.z) \
                        if late and args.worlds else (base, 0.0)
                    for k, v in zip(KEYS, (state.observation(seat), state.legal_mask(), action, late,
                                           action != base, gain)):
                        rows[k].append(v)
                    n = len(rows["actions"])
                    update(n, args.count)
                    if time.time() - saved > SAVE_EVERY_S:
                        save()
                        saved = time.time()
                state.apply(base)
    save()
    dev = np.array(rows["dev"])
    print(f"{args.out}: {len(dev)} labels, {int(np.sum(rows['late']))} late, {int(dev.sum())} changed by the "
          f"search, {time.time() - start:.0f} s")


# ----- the fit -------------------------------------------------------------------------------------------------
def suit_maps(perm, size: int):
    """Index maps for the suit permutation ``perm``: (observation sources, mask sources, action map)."""
    card = [13 * perm[c // 13] + c % 13 for c in range(52)]
    action = card + [PLAY_J + 4 * perm[k // 4] + perm[k % 4] for k in range(16)] + list(range(DRAW, NUM_ACTIONS))
    src = list(range(size))
    for c in range(52):
        src[card[c]], src[OBS_TOP + card[c]], src[OBS_DISCARD + card[c]] = c, OBS_TOP + c, OBS_DISCARD + c
    for s in range(4):
        src[OBS_NAMED_SUIT + perm[s]] = OBS_NAMED_SUIT + s
    for a in range(NUM_ACTIONS):
        for f in range(MOVE_FEATURES):
            src[OBS_MOVES + action[a] * MOVE_FEATURES + f] = OBS_MOVES + a * MOVE_FEATURES + f
    mask_src = [0] * NUM_ACTIONS
    for a in range(NUM_ACTIONS):
        mask_src[action[a]] = a
    return src, mask_src, action


def fit(args) -> None:
    import torch as th
    from kahve.agents.policies.bot import bot_metadata, export_onnx
    from kahve.agents.policies.network import MLP
    from kahve.agents.training.sb3.action_features import FeatureScores, feature_layout

    th.manual_seed(args.seed)
    th.set_num_threads(1)
    game = envs.game_class("pis_yedili")(players=2)
    parts = []
    for i, path in enumerate(args.files):
        with np.load(path, allow_pickle=False) as f:
            part = {k: f[k] for k in KEYS}
        if i == 0:                                  # the heuristic's labels: the early decisions only
            keep = ~part["late"] & (np.random.default_rng(args.seed).random(len(part["late"])) < args.early_share)
            part = {k: v[keep] for k, v in part.items()}
        parts.append(part)
    obs, masks, labels, late, dev = (th.tensor(np.concatenate([p[k] for p in parts]))
                                     for k in ("obs", "masks", "actions", "late", "dev"))
    n = len(labels)
    rng = np.random.default_rng(args.seed)
    held = th.zeros(n, dtype=th.bool)
    held[rng.permutation(n)[: n // 10]] = True
    print(f"{n} labels: {int((~late).sum())} early (the first file), {int(late.sum())} late (search), "
          f"{int(dev.sum())} of them changed by the search; a tenth held out")
    offset, actions, size = feature_layout(game)
    hidden = args.hidden

    class Net(th.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = th.nn.ModuleList([th.nn.Linear(obs.shape[1], hidden), th.nn.Linear(hidden, hidden),
                                            th.nn.Linear(hidden, actions)])
            self.scores = FeatureScores(offset, actions, size)        # kahve's action-feature head

        def forward(self, x):
            h = th.tanh(self.layers[1](th.tanh(self.layers[0](x))))
            return self.layers[2](h) + self.scores(x)

    net = Net()
    if args.init:                                   # go on from a bot file's network (the same shape)
        from kahve.agents.policies.bot import mlp_from_bot
        from kahve.agents.training.sb3.checkpoint import copy_mlp
        start = mlp_from_bot(bot_path(args.init), feature_size=MOVE_FEATURES)
        refusal = f"{args.init}: not a {hidden}x{hidden} tanh network with this game's action-feature head"
        if start.activation != "tanh" or start.feature_offset != offset:
            sys.exit(refusal)
        try:
            copy_mlp(start, list(net.layers), net.scores, args.init)
        except ValueError as err:
            sys.exit(f"{refusal} ({err})")
    opt = th.optim.Adam(net.parameters(), lr=args.lr)
    maps = [suit_maps(p, obs.shape[1]) for p in itertools.permutations(range(4))]     # maps[0]: the identity
    src, mask_src, action_map = (th.tensor([m[k] for m in maps]) for k in range(3))
    first_round = obs[:, OBS_PHASE + FIRST_ROUND] > 0      # clubs are special in round 1: no permutation

    def permuted(idx):
        k = th.randint(0, len(maps), (len(idx),))
        k[first_round[idx]] = 0
        return (obs[idx].gather(1, src[k]), masks[idx].gather(1, mask_src[k]),
                action_map[k].gather(1, labels[idx][:, None])[:, 0])

    def agreement():
        with th.no_grad():
            pick = th.cat([net(obs[i:i + 4096]).masked_fill(~masks[i:i + 4096], -1e9).argmax(1)
                           for i in range(0, n, 4096)])
        ok = pick == labels
        return ", ".join(f"{name} {ok[m].float().mean():.3f}" for name, m in (
            ("early", held & ~late), ("late, heuristic's move", held & late & ~dev), ("late, changed", held & dev)))

    if args.init:
        print(f"starting from {args.init}: held-out agreement: {agreement()}", flush=True)
    train = th.nonzero(~held).flatten().numpy()
    with progress_bar("fitting") as update:
        for epoch in range(args.epochs):
            rng.shuffle(train)
            for s in range(0, len(train), 256):
                x, m, y = permuted(th.tensor(train[s:s + 256]))
                loss = th.nn.functional.cross_entropy(net(x).masked_fill(~m, -1e9), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            update(epoch + 1, args.epochs)
            if epoch % 4 == 3 or epoch == args.epochs - 1:
                print(f"epoch {epoch + 1}: held-out agreement: {agreement()}", flush=True)
    offset, feature_weights = net.scores.exported()
    mlp = MLP([layer.weight.detach().numpy() for layer in net.layers],
              [layer.bias.detach().numpy() for layer in net.layers], "tanh",
              feature_offset=offset, feature_weights=feature_weights)
    command = (f"python tools/pis_yedili_late_search.py fit {' '.join(args.files)} --epochs {args.epochs} "
               f"--lr {args.lr} --hidden {hidden} --seed {args.seed} --early-share {args.early_share}"
               + (f" --init {args.init}" if args.init else ""))
    meta = bot_metadata(game, "distilled", n, network={"hidden": [hidden, hidden], "activation": "tanh"},
                        command=command)
    export_onnx(mlp, args.out, meta)
    print(f"wrote {args.out}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("label", help="play deals with the heuristic and label its decisions")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, required=True, help="labels to write")
    p.add_argument("--worlds", type=int, default=256, help="worlds of the search (0: the heuristic's labels)")
    p.add_argument("--z", type=float, default=2.0, help="the margin, in standard errors")
    p.add_argument("--late-only", action="store_true", help="write only the late decisions")
    p.add_argument("--base", default="heuristic",
                   help="the policy that plays both seats, whose move a label keeps and whose rollouts the search "
                        "plays (a spec: heuristic, or a bot file for the next generation)")
    p.add_argument("--out", required=True)
    p = sub.add_parser("fit", help="fit a network to label files (the first: the early decisions' labels)")
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--early-share", type=float, default=1.0,
                   help="the share of the first file's early decisions to fit (to weigh the late ones more)")
    p.add_argument("--init", help="a bot file or a shipped bot's name whose network the fit starts from "
                                  "(default: from scratch)")
    args = parser.parse_args(argv)
    label(args) if args.command == "label" else fit(args)


if __name__ == "__main__":
    main()
