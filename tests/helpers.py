"""Shared test tools: random play on engines and envs, the hidden-information check (docs/rules.md C-8), and a plain
reference for the values of a last hand against a random opponent, and bot files with their metadata rewritten."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys

import numpy as np
import onnx

#: the one wall-clock limit a test puts on a command or a wait: a guard against a hang, never a speed bar. A test
#: must not fail because the machine is slow or busy (CI's job itself has 90 minutes); what must stay fast is
#: measured by `kahve bench`, not asserted in a test.
HANG_S = 1800


def random_game(game, seed: int, max_steps: int = 200_000, on_state=None, deck=None):
    """Play one random episode on the bare engine; ``on_state(state)`` sees every decision state.
    Returns the final state. Fails if the episode does not end within ``max_steps``."""
    rng = random.Random(seed)
    state = game.new_state(random.Random(seed), deck)
    for _ in range(max_steps):
        if state.current_player is None:
            return state
        if on_state is not None:
            on_state(state)
        legal = state.legal_actions()
        assert legal, f"decision state without a legal action: {state.to_dict()}"
        assert legal == sorted(set(legal)), f"legal actions not sorted and distinct: {legal}"
        state.apply(rng.choice(legal))
    raise AssertionError(f"episode did not end within {max_steps} steps")


def random_env_episode(env, seed: int, max_steps: int = 200_000):
    """Play one random episode through the AEC API; returns (cumulative rewards per agent, steps)."""
    env.reset(seed=seed)
    rng = random.Random(seed)
    totals = {a: 0.0 for a in env.possible_agents}
    steps = 0
    for agent in env.agent_iter(max_steps):
        obs, reward, term, trunc, info = env.last()
        totals[agent] += reward
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(rng.choice(list(legal))))
        steps += 1
    assert not env.agents, "episode did not end"
    return totals, steps


def check_hidden_information(state, rng: random.Random, tries: int = 3) -> bool:
    """For every seat: re-dealing what it cannot see (``determinize``) keeps its observation, and the
    legal mask when it is to move. Returns whether some re-deal really changed the hidden state (a check
    that cannot pass vacuously when called over many states)."""
    changed = False
    base = state.to_dict()
    for seat in range(state.num_players):
        obs = state.observation(seat)
        for _ in range(tries):
            other = state.determinize(seat, rng)
            assert np.array_equal(other.observation(seat), obs), f"seat {seat}'s observation changed"
            if state.current_player == seat:
                assert other.legal_actions() == state.legal_actions()      # the same ids, sorted
            if other.to_dict() != base:
                changed = True
    assert state.to_dict() == base, "determinize changed the original state"
    return changed


def against_random(game, state, action, side):
    """(the value against perfect play, the value against a uniformly random opponent while ``side`` keeps to its
    best moves and takes, among them, the one worth most against random) of ``action``, for ``side``: the
    definition, written out plainly as a reference for the solvers (``solve_lines``)."""
    nxt = state.clone()
    deal, seat = nxt.deals_completed, nxt.current_player
    nxt.apply(action)
    if nxt.current_player is None or nxt.deals_completed != deal:
        v = game.relative_points(nxt.deal_report["deal_points"], seat) * (1 if game.sides[seat] == side else -1)
        return v, v
    pairs = [against_random(game, nxt, a, side) for a in nxt.legal_actions()]
    if game.sides[nxt.current_player] == side:
        best = max(p[0] for p in pairs)
        return best, max(p[1] for p in pairs if p[0] == best)
    return min(p[0] for p in pairs), sum(p[1] for p in pairs) / len(pairs)


def popen_train(args, cwd):
    """``kahve train ARGS`` in a child process of its own session (so a test can Ctrl-C its whole process
    group), unbuffered, with SIGINT handled even when this test run was started in the background of a
    non-interactive shell, which starts its jobs with SIGINT ignored and would pass that on."""
    return subprocess.Popen([sys.executable, "-m", "kahve.scripts.cli", "train", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def rewrite(path, out, metadata=None, edit=None, stamp=True):
    """A copy of the bot file at ``path`` with its metadata replaced (any JSON value) and/or its graph edited. With
    ``stamp`` its checksum is computed anew, as if kahve had written it (to reach the checks behind the checksum);
    without, it keeps the one it had: a file changed after kahve wrote it."""
    from kahve.agents.policies.bot import stamp_checksum
    model = onnx.load(str(path))
    if metadata is not None:
        for prop in model.metadata_props:
            if prop.key == "kahve":
                prop.value = json.dumps(metadata)
    if edit is not None:
        edit(model)
    if stamp:
        stamp_checksum(model)
    onnx.save(model, str(out))
    return out


def meta_of(path) -> dict:
    """The kahve metadata of the bot file at ``path``, read as JSON without any check."""
    model = onnx.load(str(path))
    return json.loads(next(p.value for p in model.metadata_props if p.key == "kahve"))
