"""Shipped bots from the installed package (issue 60): ``Bot.load`` takes the names every command takes, from any
working directory, and every shipped bot loads and plays with numpy and onnxruntime only, giving kahve's logits."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

from kahve import checkpoints, envs
from kahve.agents import Bot
from kahve.agents.policies.bot import mlp_from_bot
from kahve.agents.policies.specs import bot_path
from tests.helpers import HANG_S, random_game

SHIPPED = checkpoints.names()


def test_every_shipped_bot_is_found_by_name():
    assert len(SHIPPED) >= 10 and "pishti/ppo_2p" in SHIPPED and "pasur/ppo" in SHIPPED
    for name in SHIPPED:
        assert checkpoints.find(name) == checkpoints.ROOT / f"{name}.onnx"


def observations(meta: dict, rows: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Observations of real states of the bot's game and table (random play) and their legal-action masks, with
    both values of an expert network's switch (``expert_input``) among them."""
    game = envs.game_class(meta["game"])(**meta["settings"])
    seen, legal = [], []

    def see(state):
        seen.append(state.observation(state.current_player))
        legal.append(state.legal_mask())
    for seed in range(3):
        random_game(game, seed, on_state=see)
    seen, legal = np.asarray(seen, dtype=np.float32), np.asarray(legal, dtype=bool)
    at = meta.get("expert_input")
    if at is None:
        pick = np.linspace(0, len(seen) - 1, rows).astype(int)
    else:                                   # both networks' rows, whatever their share of a game
        on, off = np.flatnonzero(seen[:, at] > 0.5), np.flatnonzero(seen[:, at] <= 0.5)
        assert len(on) and len(off), "random play reached no state of one of the two networks"
        pick = np.concatenate([off[:rows // 2], on[:rows // 2]])
    return seen[pick], legal[pick]


BLOCKED = """
import json, sys
import numpy as np
# the packages a bot must not need: loading and playing use numpy and onnxruntime only
for name in ("onnx", "torch", "stable_baselines3", "sb3_contrib"):
    sys.modules[name] = None
from kahve.agents import Bot
x = np.load(sys.argv[2])
out = {}
for name in json.loads(sys.argv[1]):
    bot = Bot.load(name)
    np.save(f"{name.replace('/', '_')}.npy", bot.batch_logits(x[name]))
    out[name] = {"path": bot.path, "split": bool(bot.parts),
                 "one_by_one": np.stack([bot.logits(row) for row in x[name]]).tolist()}
print(json.dumps(out))
"""


def test_every_shipped_bot_loads_with_numpy_and_onnxruntime_only_and_gives_kahves_logits(tmp_path):
    data = {name: observations(Bot.load(name).metadata) for name in SHIPPED}
    np.savez(tmp_path / "x.npz", **{name: x for name, (x, _) in data.items()})
    # a working directory with nothing of the checkout in it: the names resolve inside the installed package
    r = subprocess.run([sys.executable, "-c", BLOCKED, json.dumps(SHIPPED), str(tmp_path / "x.npz")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    for name in SHIPPED:
        path = checkpoints.find(name)
        meta = Bot.load(name).metadata
        x, legal = data[name]
        assert got[name]["path"] == str(path)
        # the reference: the file's whole graph, as kahve exported it, in a plain onnxruntime session, row by row
        whole = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        reference = np.concatenate([whole.run(["logits"], {"observation": row[None]})[0] for row in x])
        assert np.allclose(got[name]["one_by_one"], reference, atol=1e-4), name
        # in batches, on the legal moves (the logits a player reads): Pâsur's card-attention expert scores the
        # cards absent from a row by what the batch's other rows hold, only ever on illegal moves
        batched = np.load(tmp_path / f"{name.replace('/', '_')}.npy")
        assert np.allclose(batched[legal], reference[legal], atol=1e-4), name
        # and kahve's own numpy network, wherever an MLP gives the logits
        game = envs.game_class(meta["game"])(**meta["settings"])
        main = mlp_from_bot(path, game.action_feature_size)
        at = meta.get("expert_input")
        rows = slice(None) if at is None else x[:, at] <= 0.5
        assert np.allclose(reference[rows], main.forward(x[rows]), atol=1e-4), name
        # a bot with an expert network runs each row through its own network only, cut out without onnx
        assert got[name]["split"] == (at is not None), name


def test_bot_load_takes_the_names_the_commands_take_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                          # nothing of the checkout here
    for name in ("pishti/ppo_2p", "pishti/ppo_2p.onnx", "checkpoints/pishti/ppo_2p.onnx"):
        bot = Bot.load(name)
        assert bot.path == str(checkpoints.ROOT / "pishti" / "ppo_2p.onnx") == bot_path(name)
        assert bot.metadata["game"] == "pishti" and bot.name == "ppo_2p"
    # a file in the working directory wins over a shipped bot of the same name, as it does for the commands
    local = tmp_path / "checkpoints" / "pishti" / "ppo_2p.onnx"
    local.parent.mkdir(parents=True)
    shutil.copyfile(checkpoints.find("ish/ppo_every_table"), local)
    assert Bot.load("checkpoints/pishti/ppo_2p.onnx").metadata["game"] == "ish"
    assert Bot.load("pishti/ppo_2p").metadata["game"] == "pishti"


@pytest.mark.parametrize("name,match", [
    ("pishti/ppo_2", "no bot file at pishti/ppo_2 and no shipped bot of that name; did you mean pishti/ppo_2p"),
    ("checkpoints/pasur/pp.onnx", "did you mean pasur/ppo"),
    ("nothing/like/it.onnx", "shipped bots: ish/"),
])
def test_an_unknown_bot_name_is_one_line_that_names_the_shipped_ones(name, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=match) as err:
        Bot.load(name)
    assert "\n" not in str(err.value)


def test_the_graph_cut_keeps_what_onnx_s_own_extractor_keeps():
    import onnx
    from onnx.utils import Extractor

    from kahve.agents.policies.onnx_cut import cut
    path = checkpoints.find("pasur/ppo")                # a main MLP and a card-attention expert
    raw = path.read_bytes()
    model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    for output in ("main_logits", "expert_logits"):
        ours = onnx.load_from_string(cut(raw, output))
        onnx.checker.check_model(ours)
        theirs = Extractor(model).extract_model(["observation"], [output])
        assert [n.output for n in ours.graph.node] == [n.output for n in theirs.graph.node]
        assert {i.name for i in ours.graph.initializer} == {i.name for i in theirs.graph.initializer}
        assert [o.name for o in ours.graph.output] == [output] and ours.metadata_props == model.metadata_props
    with pytest.raises(ValueError, match="no node of the graph makes 'nothing'"):
        cut(raw, "nothing")
    for junk in (b"", b"\x08\x01", raw[:1000]):
        with pytest.raises(ValueError):
            cut(junk, "main_logits")
