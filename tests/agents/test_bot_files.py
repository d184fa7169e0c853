"""Bad bot files are a ``BotFileError`` when they are loaded, not a crash or a wrong move later (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

from kahve import envs
from kahve.agents.policies.bot import Bot, BotFileError, bot_expert_input, bot_metadata, export_onnx, mlp_from_bot
from kahve.agents.policies.network import MLP
from tests.helpers import meta_of, rewrite


@pytest.fixture
def good(tmp_path):
    game = envs.game_class("pishti")(players=2)
    rng = np.random.default_rng(0)
    sizes = [game.observation_size, 16, game.num_actions]
    mlp = MLP([rng.normal(0, 0.3, (o, i)) for i, o in zip(sizes, sizes[1:])], [np.zeros(o) for o in sizes[1:]], "tanh")
    path = export_onnx(mlp, tmp_path / "good.onnx", bot_metadata(game, "ppo", 10))
    return game, mlp, path


def test_the_good_file_loads(good):
    game, _, path = good
    assert Bot.load(path, game=game).metadata["game"] == "pishti"


@pytest.mark.parametrize("change,match", [
    (lambda m: [m], "not a kahve bot"),                                  # a list
    (lambda m: "pishti", "not a kahve bot"),                             # a string
    (lambda m: {k: v for k, v in m.items() if k != "game"}, "has no 'game'"),
    (lambda m: {**m, "settings": ["players", 2]}, "'settings' is \\['players', 2\\], not a mapping"),
    (lambda m: {**m, "settings": "players=2"}, "'settings' is 'players=2', not a mapping"),
    (lambda m: {**m, "observation_size": "643"}, "'observation_size' is '643', not a number"),
    (lambda m: {k: v for k, v in m.items() if k != "num_actions"}, "has no 'num_actions'"),
    (lambda m: {**m, "observation_size": 100}, "input 'observation' has shape \\['batch', 643\\]; the metadata says "
                                               "\\[batch, 100\\]"),
    (lambda m: {**m, "num_actions": 53},
     "output 'logits' has shape \\['batch', 52\\]; the metadata says \\[batch, 53\\]"),
])
def test_bad_metadata_is_refused_at_load(good, tmp_path, change, match):
    _, _, path = good
    bad = rewrite(path, tmp_path / "bad.onnx", metadata=change(meta_of(path)))
    with pytest.raises(BotFileError, match=match):
        Bot.load(bad)


def _rename_input(model):
    model.graph.input[0].name = "obs"
    model.graph.node[0].input[0] = "obs"


def _rename_output(model):
    model.graph.output[0].name = "scores"
    model.graph.node[-1].output[0] = "scores"


def _poison(value):
    def edit(model):
        init = model.graph.initializer[0]                     # w0, the first layer's weights
        w = numpy_helper.to_array(init).copy()
        w[3, 5] = value
        init.CopyFrom(numpy_helper.from_array(w, init.name))
    return edit


def _poison_bias(model):
    init = model.graph.initializer[-1]                        # the last layer's biases
    b = numpy_helper.to_array(init).copy()
    b[0] = np.nan
    init.CopyFrom(numpy_helper.from_array(b, init.name))


@pytest.mark.parametrize("edit,match", [
    (_rename_input, "maps \\['obs'\\] to \\['logits'\\]"),
    (_rename_output, "maps \\['observation'\\] to \\['scores'\\]"),
    (_poison(np.nan), "NaN or infinite"),
    (_poison(np.inf), "NaN or infinite"),
    (_poison_bias, "NaN or infinite"),
], ids=["input-name", "output-name", "nan-weight", "inf-weight", "nan-bias"])
def test_a_graph_that_disagrees_with_its_metadata_or_has_broken_weights_is_refused(good, tmp_path, edit, match):
    _, _, path = good
    bad = rewrite(path, tmp_path / "bad.onnx", edit=edit)
    with pytest.raises(BotFileError, match=match):
        Bot.load(bad)


def test_a_graph_of_other_sizes_than_its_metadata_is_refused(good, tmp_path):
    # a graph for 4 players (more observations) carrying the metadata of a 2-player bot
    game4 = envs.game_class("pishti")(players=4)
    rng = np.random.default_rng(1)
    sizes = [game4.observation_size, 8, game4.num_actions]
    mlp = MLP([rng.normal(size=(o, i)) for i, o in zip(sizes, sizes[1:])], [np.zeros(o) for o in sizes[1:]], "relu")
    other = export_onnx(mlp, tmp_path / "four.onnx", bot_metadata(game4, "ppo", 1))
    _, _, path = good
    bad = rewrite(other, tmp_path / "bad.onnx", metadata=meta_of(path))
    with pytest.raises(BotFileError, match="input 'observation' has shape"):
        Bot.load(bad)


def test_an_expert_gives_the_logits_exactly_where_its_flag_is_set(good, tmp_path):
    game, main, plain = good
    rng = np.random.default_rng(1)
    sizes = [game.observation_size, 8, 8, game.num_actions]
    expert = MLP([rng.normal(0, 0.3, (o, i)) for i, o in zip(sizes, sizes[1:])], [rng.normal(0, 0.1, o)
                 for o in sizes[1:]], "relu")
    flag = 5
    path = export_onnx(main, tmp_path / "expert.onnx", bot_metadata(game, "ppo", 10), expert=expert,
                       expert_input=flag)
    bot = Bot.load(path, game=game)
    x = rng.random((6, game.observation_size), dtype=np.float32)
    x[:3, flag], x[3:, flag] = 0.0, 1.0
    logits = np.stack([bot.logits(row) for row in x])
    assert np.allclose(logits[:3], main.forward(x[:3]), atol=1e-5)
    assert np.allclose(logits[3:], expert.forward(x[3:]), atol=1e-5)
    assert not np.allclose(main.forward(x[3:]), expert.forward(x[3:]), atol=1e-2)      # the switch is visible
    # the file's own graph (both networks, Where) agrees with the bot, which runs each row through its own network
    # only, one by one and in batches (what searches run) of any mix and order
    for rows in (x, x[::-1], x[:3], x[3:], x[[4, 0, 5, 1]]):
        graph = bot.session.run(["logits"], {"observation": rows})[0]
        assert np.allclose(bot.batch_logits(rows), graph, atol=1e-5)
        assert np.allclose(np.stack([bot.logits(row) for row in rows]), graph, atol=1e-5)
    assert np.allclose(Bot.load(plain, game=game).batch_logits(x), main.forward(x), atol=1e-5)
    # both networks read back as they were written; the file says which input switches
    assert bot_expert_input(path) == flag and bot_expert_input(plain) is None
    for net, read in ((main, mlp_from_bot(path)), (expert, mlp_from_bot(path, expert=True))):
        assert read.activation == net.activation
        assert all(np.array_equal(a, b) for a, b in zip(read.weights, net.weights))
    with pytest.raises(BotFileError, match="has no expert network"):
        mlp_from_bot(plain, expert=True)
    # a file whose metadata names an expert it does not have, or a flag outside the observation, is refused on load
    meta = meta_of(path)
    for bad, match in (({**meta_of(plain), "expert_input": flag}, "graph has no 'main_logits'"),
                       ({**meta, "expert_input": game.observation_size}, "expert_input is"),
                       ({**meta, "expert_input": 7}, "do not give the graph's logits")):
        with pytest.raises(BotFileError, match=match):
            Bot.load(rewrite(plain if "main_logits" in match else path, tmp_path / "bad.onnx", metadata=bad))
    with pytest.raises(ValueError, match="expert_input 9999 is not an observation input"):
        export_onnx(main, tmp_path / "bad.onnx", bot_metadata(game, "ppo", 10), expert=expert, expert_input=9999)


def test_one_owner_says_whether_a_bot_fits_a_table():
    """bot.fit is the one answer (levels, kahve play and the web table ask it): the settings that change the spaces
    make it refuse, the others only differ, and the settings a bot does not impose never count."""
    from kahve.agents.policies.bot import NOT_IMPOSED, fit
    from kahve import checkpoints
    meta = Bot.read_metadata(checkpoints.find("pishti/ppo_2p"))[1]
    game = envs.game_class("pishti")
    assert fit(meta, game(players=2), "b").ok
    four = fit(meta, game(players=4, partnerships=False), "b")
    assert not four.ok and four.shaping == {"players": (2, 4)} and "\n" not in four.reason
    other = fit(meta, game(players=2, target_score=101), "b")
    assert other.ok and "target_score" in other.other
    free = fit(meta, game(players=2, episode="match", reward="outcome", skip_single_choice=False), "b")
    assert free.ok and not set(free.other) & set(NOT_IMPOSED)


# ----- the checksum: a file changed after kahve wrote it, told apart from a corrupt one (issue 61) -----------------
def _changed(path) -> str:
    return (f"{path}: changed after kahve wrote it (its checksum does not match its weights and metadata); export it "
            "again from its run folder")


def _nudge(model):
    """One finite weight moved by one step of float32: w0[3, 5] of the first layer."""
    init = model.graph.initializer[0]
    w = numpy_helper.to_array(init).copy()
    w[3, 5] = np.nextafter(w[3, 5], np.float32(np.inf))
    assert np.isfinite(w).all()
    init.CopyFrom(numpy_helper.from_array(w, init.name))


def _refused_as_changed(path) -> None:
    """Every reader of a bot file refuses ``path`` with the one line of a changed file."""
    from kahve.agents.policies.bot import expert_from_bot
    for read in (Bot.load, Bot.read_metadata, mlp_from_bot, expert_from_bot, bot_expert_input):
        with pytest.raises(BotFileError) as err:
            read(path)
        assert str(err.value) == _changed(path), read.__name__


def test_a_bot_whose_finite_weight_was_changed_after_export_is_refused(good, tmp_path):
    game, _, path = good
    changed = rewrite(path, tmp_path / "changed.onnx", edit=_nudge, stamp=False)
    _refused_as_changed(changed)
    with pytest.raises(BotFileError, match="changed after kahve wrote it"):
        Bot.load(changed, game=game)
    # the checksum is no signature: whoever changes the weights can compute it anew, and the file is another bot
    other = rewrite(path, tmp_path / "other.onnx", edit=_nudge)
    Bot.load(other, game=game)
    assert mlp_from_bot(other).weights[0][3, 5] != mlp_from_bot(path).weights[0][3, 5]


@pytest.mark.parametrize("change", [
    lambda m: {**m, "settings": {**m["settings"], "target_score": 51}},     # alone, only a warning at load
    lambda m: {**m, "settings": {**m["settings"], "players": 4}},
    lambda m: {**m, "training_steps": m["training_steps"] + 1},
    lambda m: {**m, "note": "hello"},
    lambda m: {**m, "checksum": None},
    lambda m: {**m, "checksum": "sha256:" + "0" * 64},
], ids=["target-score", "players", "training-steps", "a-new-key", "checksum-null", "checksum-zeros"])
def test_a_bot_whose_metadata_was_changed_after_export_is_refused(good, tmp_path, change):
    _, _, path = good
    _refused_as_changed(rewrite(path, tmp_path / "changed.onnx", metadata=change(meta_of(path)), stamp=False))


def test_every_writer_stamps_the_checksum_and_a_file_without_one_still_loads(good, tmp_path):
    from kahve.agents.policies.bot import CHECKSUM, checksum, rewrite_metadata
    game, mlp, path = good
    meta = meta_of(path)
    assert meta[CHECKSUM].startswith("sha256:") and len(meta[CHECKSUM]) == 71
    assert meta[CHECKSUM] == checksum(path.read_bytes(), meta)
    # a recipe's copy with more metadata gets the checksum of its own metadata
    copy = rewrite_metadata(path, tmp_path / "copy.onnx", {**Bot.read_metadata(path)[1], "training_steps": 99})
    assert meta_of(copy)[CHECKSUM] not in ("", meta[CHECKSUM]) and Bot.load(copy).metadata["training_steps"] == 99
    # a file written by a kahve before checksums (the entry absent) loads and plays as the same file with it
    older = rewrite(path, tmp_path / "older.onnx", metadata={k: v for k, v in meta.items() if k != CHECKSUM},
                    stamp=False)
    assert CHECKSUM not in meta_of(older)
    x = np.random.default_rng(2).random((5, game.observation_size), dtype=np.float32)
    assert np.array_equal(Bot.load(older, game=game).batch_logits(x), Bot.load(path, game=game).batch_logits(x))
    assert all(np.array_equal(a, b) for a, b in zip(mlp_from_bot(older).weights, mlp.weights))
    assert bot_expert_input(older) is None
    # ... even with a finite weight changed: no check can tell that from another bot (docs/design.md, "Bad input")
    Bot.load(rewrite(older, tmp_path / "older_changed.onnx", edit=_nudge, stamp=False), game=game)


def test_a_changed_bot_file_is_told_apart_from_a_corrupt_one(good, tmp_path):
    _, _, path = good
    data = path.read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[:len(data) // 2])
    two = rewrite(path, tmp_path / "two.onnx", stamp=False,
                  edit=lambda m: m.metadata_props.add().CopyFrom(m.metadata_props[0]))
    cases = {cut: "not a readable kahve bot file",
             rewrite(path, tmp_path / "nan.onnx", edit=_poison(np.nan), stamp=False): "NaN or infinite",
             rewrite(path, tmp_path / "inf.onnx", edit=_poison_bias, stamp=False): "NaN or infinite",
             rewrite(path, tmp_path / "renamed.onnx", edit=_rename_input, stamp=False): "maps \\['obs'\\]",
             two: "has 2 kahve metadata entries; kahve writes one",
             rewrite(path, tmp_path / "changed.onnx", edit=_nudge, stamp=False): "changed after kahve wrote it"}
    for bad, match in cases.items():
        with pytest.raises(BotFileError, match=match) as err:
            Bot.load(bad)
        assert "\n" not in str(err.value)
        assert ("changed after kahve wrote it" in str(err.value)) == (match == "changed after kahve wrote it")


def test_every_shipped_bot_carries_its_checksum():
    from kahve import checkpoints
    from kahve.agents.policies.bot import CHECKSUM, checksum
    for name in checkpoints.names():
        path = checkpoints.find(name)
        meta = meta_of(path)
        assert meta.get(CHECKSUM) == checksum(path.read_bytes(), meta), name
