"""How much one step of policy improvement against random is worth in Pâsur's hands 1-5, where it is, and whether a
network learns it: the experiment of docs/bot-log.md, "Where the search's points are in hands 1-5".

* ``label``: the shipped bot (``pasur/ppo``: its main network, and its expert in the last hand) plays single rounds
  against random. At each of its decisions with a choice in the chosen hands, every legal move is played out in
  ``--worlds`` worlds drawn for the bot's seat (``determinize``: what it cannot rule out), the bot in its seat and a
  uniformly random opponent to the end of the round; every move meets the same worlds and the same random streams
  (common random numbers), so the moves' differences are paired per world. Each decision keeps its observation, the
  bot's scores and the round points of every (move, world).
* ``headroom``: what the step is worth, unbiased: half the worlds choose (a move leaves the bot's when its mean
  advantage over the bot's move exceeds ``--z`` standard errors, paired per world), the other half value the choice,
  and the halves swap. Choosing and valuing on the same worlds would count the luckiest move's luck as a gain (the
  winner's curse). Reported per round and by hand.
* ``fit``: a residual network (an MLP or a card-attention network, agents/policies/card_attention.py) whose scores
  are added to the bot's and start at zero (so it starts as the bot) is fitted to the step's choices on four fifths
  of the rounds; on the fifth held out, the advantage of the moves it changes, valued on all the worlds it never
  saw, is its gain per round: unbiased, because its choice does not see those worlds' luck.

    python tools/pasur_policy_step.py label --rounds 100000 --seed 2001 --worlds 64 --hands 5 --out h5_2001.npz
    python tools/pasur_policy_step.py headroom h5_2001.npz h5_2002.npz
    python tools/pasur_policy_step.py fit h5_2001.npz h5_2002.npz --arch attention --z 1 --epochs 8

``label`` writes its file every 500 rounds, so it can be stopped at any time (about 5 decisions a second a process
with 64 worlds in hand 5 on this machine; 6 with 32 worlds in all five hands).
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from kahve import checkpoints
from kahve.agents.policies.bot import Bot
from kahve.agents.policies.card_attention import CardLayout
from kahve.agents.policies.rollout import deal_value
from kahve.agents.training.learner_env import LearnerEnv
from kahve.agents.training.opponents import OpponentPool
from kahve.envs.pasur.rules import (HANDS_PER_ROUND, MOVE_FEATURES, NUM_ACTIONS, NUM_CARDS, OBS_HAND_NUMBER, OBS_MINE,
                                    OBS_PICKED, OBS_PLAYED, OBS_POOL, OBS_REMAINING, OBS_SIZE, OBS_UNSEEN, PLAY, TAKE)

BOT = "pasur/ppo"
SETTINGS = {"episode": "deal", "reward": "points"}
SAVE_EVERY = 500            # rounds between two writes of label's file
# the residual attention network's view: a token for every card in the own hand, the pool, the capture being chosen
# and (--unseen) the unseen cards; the context token reads the captured piles, the unseen block and the scalars
RESIDUAL_ZONES = (0, OBS_POOL, OBS_PLAYED, OBS_PICKED)


def hand_number(obs: np.ndarray) -> np.ndarray:
    """The hand (1-6) of each observation row."""
    return np.asarray(obs)[..., OBS_HAND_NUMBER:OBS_HAND_NUMBER + HANDS_PER_ROUND].argmax(-1) + 1


def move_values(bot: Bot, state, legal: list[int], seat: int, worlds: int, rng: random.Random) -> np.ndarray:
    """[len(legal), worlds]: ``seat``'s round points after each legal move in each world, the bot playing ``seat``
    and a uniformly random opponent the rest; every move meets the same worlds and random streams."""
    deal = state.deals_completed
    drawn = [(state.determinize(seat, rng), rng.getrandbits(32)) for _ in range(worlds)]
    sims, streams = [], []
    for action in legal:
        for world, stream in drawn:
            sim = world.clone()
            sim.apply(action)
            sims.append(sim)
            streams.append(random.Random(stream))

    def going(i: int) -> bool:
        return sims[i].current_player is not None and sims[i].deals_completed == deal

    active = [i for i in range(len(sims)) if going(i)]
    while active:
        mine = [i for i in active if sims[i].current_player == seat]
        if mine:                                    # the bot's moves, one batched forward pass
            obs = np.stack([sims[i].observation(seat) for i in mine])
            mask = np.stack([sims[i].legal_mask() for i in mine])
            for i, a in zip(mine, np.where(mask, bot.batch_logits(obs), -np.inf).argmax(1)):
                sims[i].apply(int(a))
        for i in active:
            if going(i) and sims[i].current_player != seat:
                sims[i].apply(streams[i].choice(sims[i].legal_actions()))
        active = [i for i in active if going(i)]
    points = [deal_value(sim, deal, seat) for sim in sims]
    return np.array(points, np.float32).reshape(len(legal), worlds)


def label(rounds: int, seed: int, worlds: int, hands: list[int], out: str) -> None:
    from kahve.agents.progress import progress_bar
    env = LearnerEnv("pasur", SETTINGS, OpponentPool([("random", 1.0)]), seed=seed)
    bot, rng = Bot.load(checkpoints.find(BOT), env.game), random.Random(seed)
    columns = {"obs": [], "mask": [], "logits": [], "q": [], "round": []}

    def write() -> None:
        np.savez(out, **{k: np.array(v) for k, v in columns.items()})

    start = time.time()
    with progress_bar("labelling") as update:
        for r in range(rounds):
            update(r, rounds)
            obs, _ = env.reset()
            done = False
            while not done:
                mask, state = env.action_masks(), env.state
                logits = bot.logits(obs)
                if mask.sum() > 1 and state.stock and hand_number(obs) in hands:
                    legal = state.legal_actions()
                    q = np.full((len(mask), worlds), np.nan, np.float16)   # round points: whole numbers
                    q[legal] = move_values(bot, state, legal, state.current_player, worlds, rng)
                    for key, value in (("obs", obs.astype(np.float16)), ("mask", mask), ("logits", logits),
                                       ("q", q), ("round", r)):
                        columns[key].append(value)
                obs, _, term, trunc, _ = env.step(int(np.argmax(np.where(mask, logits, -np.inf))))
                done = term or trunc
            if (r + 1) % SAVE_EVERY == 0:
                write()
    write()
    print(f"{out}: {len(columns['obs']):,} decisions from {rounds:,} rounds ({time.time() - start:.0f} s)")


def load(files: list[str]) -> dict:
    data = [np.load(f) for f in files]
    out = {k: np.concatenate([d[k] for d in data]) for k in ("obs", "mask", "logits", "q")}
    out["round"] = np.concatenate([d["round"] + k * 10**7 for k, d in enumerate(data)])    # distinct across files
    out["q"] = out["q"].astype(np.float32)
    out["bot"] = np.where(out["mask"], out["logits"], -np.inf).argmax(1)
    return out


def advantages(q: np.ndarray, bot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each move's mean advantage over the bot's move, paired per world, and its standard error ([n, actions];
    -inf and +inf where the move is not legal)."""
    diff = q - q[np.arange(len(q)), bot][:, None, :]
    legal = np.isfinite(diff[:, :, 0])
    mean = np.where(legal, np.nan_to_num(diff).mean(2), -np.inf)
    se = np.where(legal, np.nan_to_num(diff).std(2, ddof=1) / np.sqrt(q.shape[2]), np.inf)
    return mean, se


def step_choice(q: np.ndarray, bot: np.ndarray, z: float) -> np.ndarray:
    """The step's move: the best move by these worlds where its advantage over the bot's exceeds ``z`` standard
    errors, else the bot's."""
    mean, se = advantages(q, bot)
    best = mean.argmax(1)
    rows = np.arange(len(q))
    return np.where(mean[rows, best] > z * se[rows, best], best, bot)


def split_half_gain(q: np.ndarray, bot: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Per decision, the step's advantage chosen on one half of the worlds and valued on the other (both ways,
    averaged), and whether it left the bot's move (either way, averaged)."""
    half = q.shape[2] // 2
    gain, left = np.zeros(len(q)), np.zeros(len(q))
    for choose, value in ((q[:, :, :half], q[:, :, half:2 * half]), (q[:, :, half:2 * half], q[:, :, :half])):
        move = step_choice(choose, bot, z)
        mean, _ = advantages(value, bot)
        gain += mean[np.arange(len(q)), move] / 2
        left += (move != bot) / 2
    return gain, left


def headroom(files: list[str], z: float) -> None:
    d = load(files)
    rounds = len(np.unique(d["round"]))
    gain, left = split_half_gain(d["q"], d["bot"], z)
    hands = hand_number(d["obs"])
    half = d["q"].shape[2] // 2
    print(f"{len(gain):,} decisions from {rounds:,} rounds, {d['q'].shape[2]} worlds each: choosing on {half} "
          f"and valuing on the other {half}, the step (z={z}) leaves the bot's move in {left.mean():.1%} and gains "
          f"{gain.sum() / rounds:+.3f} points a round (unbiased)")
    for h in sorted(set(hands.tolist())):
        s = hands == h
        print(f"  hand {h}: {s.sum():,} decisions, left {left[s].mean():.1%}, {gain[s].sum() / rounds:+.3f} a round")


def fit(files: list[str], arch: str, width: int, depth: int, epochs: int, lr: float, z: float, unseen: bool,
        seed: int, threads: int = 1) -> None:
    import torch as th
    from kahve.agents.training.card_attention import CardAttentionNet, minibatches, one_cycle_adamw
    th.set_num_threads(threads)
    th.manual_seed(seed)
    d = load(files)
    n, bot = len(d["q"]), d["bot"]
    obs, mask, base = (th.tensor(d[k].astype(np.float32) if k == "obs" else d[k]) for k in ("obs", "mask", "logits"))
    mean, _ = advantages(d["q"], bot)
    value = th.tensor(np.where(np.isfinite(mean), mean, 0.0))     # valued on every world: unbiased held out
    target = th.tensor(step_choice(d["q"], bot, z))
    held = (d["round"] % 5) == 0
    held_rounds = max(1, len(np.unique(d["round"][held])))
    if arch == "attention":
        layout = CardLayout(cards=NUM_CARDS, ranks=13, zones=RESIDUAL_ZONES + ((OBS_UNSEEN,) if unseen else ()),
                            rows_at=OBS_SIZE - NUM_ACTIONS * MOVE_FEATURES, row=MOVE_FEATURES, actions=(PLAY, TAKE),
                            num_actions=NUM_ACTIONS, context=((OBS_MINE, OBS_PLAYED),
                                                              (OBS_REMAINING, OBS_REMAINING + 1)))
        net = CardAttentionNet(layout, width, depth)
        last = net.head
    else:
        net = th.nn.Sequential(th.nn.Linear(OBS_SIZE, width), th.nn.ReLU(), th.nn.Linear(width, width), th.nn.ReLU(),
                               th.nn.Linear(width, NUM_ACTIONS))
        last = net[-1]
    with th.no_grad():                    # the residual starts at zero: the fitted policy starts as the bot
        last.weight.zero_()
        last.bias.zero_()

    def scores(i):
        # (an action that no present card names scores NEG in the attention network: illegal anyway)
        return (base[i] + net(obs[i]).clamp(min=-1e3)).masked_fill(~mask[i], -1e9)

    def report(tag: str) -> None:
        with th.no_grad():
            i = th.tensor(np.flatnonzero(held))
            move = scores(i).argmax(1)
            gain = value[i].gather(1, move[:, None]).sum().item() / held_rounds
            changed = (move.numpy() != bot[held]).mean()
            step = target[i].numpy() != bot[held]
            taken = (move.numpy()[step] == target[i].numpy()[step]).mean() if step.any() else 0.0
        print(f"{tag}: held out, it changes {changed:.2%} of the bot's moves, takes the step's move in {taken:.1%} of "
              f"the step's changes, and gains {gain:+.3f} points a round", flush=True)

    train = np.flatnonzero(~held)
    batch = min(256, max(1, len(train)))
    steps = max(1, epochs * (len(train) // batch))
    parameters = list(net.parameters())
    optimizer, schedule = one_cycle_adamw(parameters, lr, steps)
    rng = np.random.default_rng(seed)
    print(f"{n:,} decisions, {held.sum():,} of them held out; the step (z={z}) changes "
          f"{np.mean(target.numpy() != bot):.1%} of the bot's moves")
    report("start")
    for epoch in range(epochs):
        for i in minibatches(train, batch, rng):
            loss = th.nn.functional.cross_entropy(scores(i), target[i])
            optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
            schedule.step()
        report(f"epoch {epoch + 1}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("label", help="value every legal move of the shipped bot's decisions against random")
    a.add_argument("--rounds", type=int, default=1000)
    a.add_argument("--seed", type=int, default=2001)
    a.add_argument("--worlds", type=int, default=64)
    a.add_argument("--hands", default="1,2,3,4,5", help="the hands whose decisions to label (comma-separated)")
    a.add_argument("--out", required=True, help="the .npz file to write")
    h = sub.add_parser("headroom", help="what the step is worth, unbiased (split-half), per round and by hand")
    h.add_argument("files", nargs="+")
    h.add_argument("--z", type=float, default=1.0, help="standard errors a move must beat the bot's by")
    f = sub.add_parser("fit", help="fit a residual network to the step; its held-out gain")
    f.add_argument("files", nargs="+")
    f.add_argument("--arch", choices=["mlp", "attention"], default="mlp")
    f.add_argument("--width", type=int, default=64)
    f.add_argument("--depth", type=int, default=2, help="attention layers")
    f.add_argument("--epochs", type=int, default=8)
    f.add_argument("--lr", type=float, default=3e-4)
    f.add_argument("--z", type=float, default=1.0)
    f.add_argument("--unseen", action="store_true", help="attention: the unseen cards are tokens too")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "label":
        try:
            hands = sorted({int(x) for x in args.hands.split(",")})
        except ValueError:
            parser.exit(2, f"pasur_policy_step label: --hands {args.hands!r} is not a list of hands 1-5\n")
        if not set(hands) <= set(range(1, HANDS_PER_ROUND)):
            parser.exit(2, f"pasur_policy_step label: --hands {args.hands!r}: hands 1-5 only (the last hand is "
                        "solved exactly: tools/pasur_last_hand.py)\n")
        label(args.rounds, args.seed, args.worlds, hands, args.out)
    elif args.command == "headroom":
        headroom(args.files, args.z)
    else:
        fit(args.files, args.arch, args.width, args.depth, args.epochs, args.lr, args.z, args.unseen, args.seed,
            args.threads)


if __name__ == "__main__":
    main()
