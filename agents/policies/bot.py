"""Shipped bots: one self-describing ONNX file per policy (docs/design.md "Policies, bots, configs").

The graph maps ``observation`` (float32, [batch, observation_size]) to ``logits`` ([batch, num_actions]):
action logits for PPO, Q-values for DQN. The action mask is applied outside the graph, so any ONNX runtime
(onnxruntime, the web, game engines) can run it. The file's metadata property ``kahve`` holds JSON: the game,
the env version (observation layout), the settings it was trained under, sizes, algorithm, training steps and
the evaluation summary.

Loading needs only numpy and onnxruntime. A file for another game, another observation layout or space
size, or a file that is not a kahve bot, is refused with a clear error; settings that do not shape the spaces
(a different target score, say) only warn. A file is checked whole when it loads (:class:`BotFileError`):
metadata with every key and type, a graph whose input and output names and sizes are the metadata's, every weight
finite (an infinite bias before a tanh would not show in the outputs) and finite outputs.

The metadata's ``checksum`` tells a file changed after kahve wrote it from a corrupt one (issue 61): ``"sha256:"``
and the SHA-256 of everything in the file that decides the bot's moves (:func:`checksum`): the metadata without its
checksum as canonical JSON (keys sorted, no spaces, ASCII escapes: the same whatever wrote the text), a newline, then
the ONNX model's protobuf bytes as stored, less its metadata properties: the graph (every node, every weight's bytes
in the file's order, the inputs and outputs), the opset, the IR version and the rest. :func:`export_onnx` and
:func:`rewrite_metadata` write it; every reader checks it (:func:`check_checksum`: :meth:`Bot.read_metadata` and so
:meth:`Bot.load`, :func:`mlp_from_bot`, :func:`expert_from_bot`, :func:`bot_expert_input`), after the checks above,
so a file cut short, unreadable or with a NaN weight keeps its own message, and one whose content is sound but not
what kahve wrote (a finite weight edited, a setting in the metadata changed) is refused in one line as changed. It
detects a change, it is no signature: whoever edits a file can compute a new checksum (:func:`stamp_checksum` does),
and then the file is another bot. A file without one (written by a kahve before checksums) loads as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kahve.envs.core.settings import short

from .card_attention import CardAttention
from .network import MLP, masked_choice

FORMAT = "kahve-bot"
FORMAT_VERSION = 1
#: the metadata key of a bot file's checksum (:func:`checksum`)
CHECKSUM = "checksum"
#: settings whose change alters what an observation or action means, even at the same sizes


class BotFileError(ValueError):
    """A bot file that cannot be used here."""


class BotSettingsWarning(UserWarning):
    """A bot plays under settings it was not trained with (that do not change its spaces)."""


def bot_metadata(game, algorithm: str, training_steps: int, evaluation: dict | None = None, **extra) -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "game": game.name, "env_version": game.version,
            "settings": game.settings.as_dict(), "observation_size": game.observation_size,
            "num_actions": game.num_actions, "algorithm": algorithm, "training_steps": int(training_steps),
            "evaluation": evaluation or {}, **extra}


def export_onnx(mlp: MLP, path, metadata: dict, expert: MLP | CardAttention | None = None,
                expert_input: int | None = None) -> Path:
    """Write ``mlp`` as an ONNX graph with ``metadata`` as JSON in the ``kahve`` metadata property.

    ``expert``: a second network (an MLP or a :class:`CardAttention`) of the same sizes that gives the logits
    wherever observation input ``expert_input`` (a 0/1 flag) is 1, ``mlp`` giving them elsewhere; still one greedy
    forward pass, no search (Pâsur's last hand: the expert stage, agents/training/expert.py). The metadata records
    the input as ``expert_input``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    for net in (mlp,) if expert is None else (mlp, expert):
        if net.input_size != metadata["observation_size"] or net.output_size != metadata["num_actions"]:
            raise ValueError(f"network {net.input_size}->{net.output_size} does not fit the game's "
                             f"{metadata['observation_size']}->{metadata['num_actions']}")
    if expert is None:
        nodes, inits = _mlp_graph(mlp, "", "logits")
    else:
        if not (isinstance(expert_input, int) and 0 <= expert_input < mlp.input_size):
            raise ValueError(f"expert_input {expert_input!r} is not an observation input (0 to {mlp.input_size - 1})")
        metadata = {**metadata, "expert_input": expert_input}
        nodes, inits = _mlp_graph(mlp, "", "main_logits")
        more_nodes, more_inits = (expert.graph("expert_", "expert_logits") if isinstance(expert, CardAttention)
                                  else _mlp_graph(expert, "expert_", "expert_logits"))
        nodes += more_nodes
        inits += more_inits + [numpy_helper.from_array(np.array([expert_input], np.int64), "expert_at"),
                               numpy_helper.from_array(np.array([expert_input + 1], np.int64), "expert_end"),
                               numpy_helper.from_array(np.array([1], np.int64), "expert_axis"),
                               numpy_helper.from_array(np.array(0.5, np.float32), "expert_half")]
        nodes += [helper.make_node("Slice", ["observation", "expert_at", "expert_end", "expert_axis"], ["flag"]),
                  helper.make_node("Greater", ["flag", "expert_half"], ["use_expert"]),
                  helper.make_node("Where", ["use_expert", "expert_logits", "main_logits"], ["logits"])]
    graph = helper.make_graph(
        nodes, f"kahve_{metadata['game']}",
        [helper.make_tensor_value_info("observation", TensorProto.FLOAT, ["batch", mlp.input_size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", mlp.output_size])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="kahve")
    model.ir_version = 8
    helper.set_model_props(model, {"kahve": json.dumps(metadata)})
    stamp_checksum(model)
    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def checksum(model: bytes, metadata: dict) -> str:
    """``"sha256:"`` and the hex SHA-256 of a bot file's ``metadata`` without its checksum as canonical JSON (keys
    sorted, no spaces, ASCII escapes), a newline (which canonical JSON never holds), and the serialized ONNX
    ``model`` less its metadata properties (the module's docstring says why)."""
    from .onnx_cut import split_metadata
    body = {k: v for k, v in metadata.items() if k != CHECKSUM}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(text.encode("ascii") + b"\n")
    digest.update(split_metadata(model)[1])
    return "sha256:" + digest.hexdigest()


def stamp_checksum(model) -> None:
    """Write the checksum of the ONNX ``model`` (an ``onnx.ModelProto``, changed in place) into its kahve metadata,
    replacing any it had; a model whose kahve metadata is not one JSON mapping is left as it is."""
    props = [p for p in model.metadata_props if p.key == "kahve"]
    try:
        meta = json.loads(props[0].value) if len(props) == 1 else None
    except (ValueError, RecursionError):
        return
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k != CHECKSUM}
        props[0].value = json.dumps({**meta, CHECKSUM: checksum(model.SerializeToString(), meta)})


def check_checksum(path, data: bytes | None = None) -> None:
    """The bot file at ``path`` (its bytes ``data``, if read already) is as kahve wrote it: its metadata's checksum
    is that of its weights and metadata (:func:`checksum`). A file without one (an older kahve's), or whose metadata
    cannot be read (which :meth:`Bot.read_metadata` refuses), passes; one with two kahve metadata entries does not."""
    from .onnx_cut import split_metadata
    try:
        data = Path(path).read_bytes() if data is None else data
        props, _ = split_metadata(data)
    except (OSError, ValueError) as err:
        raise BotFileError(f"{path} is not a readable ONNX file ({type(err).__name__})") from None
    values = [value for key, value in props if key == "kahve"]
    if len(values) > 1:
        raise BotFileError(f"{path} has {len(values)} kahve metadata entries; kahve writes one")
    try:
        meta = json.loads(values[0]) if values else None
    except (ValueError, RecursionError):
        return
    if not isinstance(meta, dict) or CHECKSUM not in meta:
        return
    if meta[CHECKSUM] != checksum(data, meta):
        raise BotFileError(f"{path}: changed after kahve wrote it (its checksum does not match its weights and "
                           "metadata); export it again from its run folder")


def _mlp_graph(mlp: MLP, prefix: str, output: str) -> tuple[list, list]:
    """The ONNX nodes and initializers of ``mlp`` from ``observation`` to ``output``, every name but those two
    prefixed with ``prefix``."""
    from onnx import helper, numpy_helper

    nodes, inits = [], []
    h = "observation"
    last = len(mlp.weights) - 1
    features = mlp.feature_weights is not None
    for k, (w, b) in enumerate(zip(mlp.weights, mlp.biases)):
        inits += [numpy_helper.from_array(w, f"{prefix}w{k}"), numpy_helper.from_array(b, f"{prefix}b{k}")]
        out = (f"{prefix}mlp_scores" if features else output) if k == last else f"{prefix}z{k}"
        nodes.append(helper.make_node("Gemm", [h, f"{prefix}w{k}", f"{prefix}b{k}"], [out], transB=1))
        if k < last:
            nodes.append(helper.make_node("Tanh" if mlp.activation == "tanh" else "Relu", [out], [f"{prefix}h{k}"]))
            h = f"{prefix}h{k}"
    if features:            # the action-feature head: every action's row times the shared weights, as one matrix
        inits.append(numpy_helper.from_array(np.ascontiguousarray(mlp.feature_matrix().T), f"{prefix}feature_matrix"))
        nodes += [helper.make_node("MatMul", ["observation", f"{prefix}feature_matrix"], [f"{prefix}feature_scores"]),
                  helper.make_node("Add", [f"{prefix}mlp_scores", f"{prefix}feature_scores"], [output])]
    return nodes, inits


def _graph_arrays(path, prefix: str) -> tuple[object, dict]:
    """A bot file's ONNX model and its initializers whose names start with ``prefix``, by name without it (parsing
    protobuf runs nothing; an unreadable file is a :class:`BotFileError`)."""
    import onnx
    from onnx import numpy_helper
    try:
        model = onnx.load(str(path))
    except Exception as err:  # onnx raises protobuf's decode errors
        raise BotFileError(f"{path} is not a readable ONNX file ({type(err).__name__})") from None
    return model, {i.name[len(prefix):]: numpy_helper.to_array(i) for i in model.graph.initializer
                   if i.name.startswith(prefix)}


def rewrite_metadata(source, path, metadata: dict) -> Path:
    """A copy of the bot file ``source`` at ``path`` with its metadata replaced (the networks unchanged), written
    whole or not at all: a recipe's bot is the last stage's with the recipe's record added. The copy's checksum is
    its new metadata's (any ``checksum`` in ``metadata`` is replaced)."""
    import onnx
    model = onnx.load(str(source))
    for prop in model.metadata_props:
        if prop.key == "kahve":
            prop.value = json.dumps(metadata)
    stamp_checksum(model)
    path = Path(path)
    part = path.with_name(path.name + ".part")
    onnx.save(model, str(part))
    os.replace(part, path)
    return path


def mlp_from_bot(path, feature_size: int = 0, expert: bool = False) -> MLP:
    """The network inside a bot file written by :func:`export_onnx`, as arrays (to train it further: ``init_from``).
    ``feature_size``: the game's numbers per action row, if the file has the action-feature head; ``expert``: the
    file's expert network instead of its main one (:func:`bot_expert_input` says whether it has one). Reading an
    ONNX file parses protobuf, it runs nothing; a graph not of :func:`export_onnx`'s shape is a
    :class:`BotFileError`."""
    prefix = "expert_" if expert else ""
    model, arrays = _graph_arrays(path, prefix)
    n = sum(1 for k in arrays if k[:1] == "w" and k[1:].isdigit())
    hidden = {f"{prefix}h{k}" for k in range(n)}
    if n == 0 and expert:
        raise BotFileError(f"{path} has no expert network")
    if n == 0 or any(f"w{k}" not in arrays or f"b{k}" not in arrays for k in range(n)):
        raise BotFileError(f"{path}: the graph is not a kahve MLP (weights w0..w{n - 1} and biases b0..b{n - 1})")
    features = {}
    if "feature_matrix" in arrays:
        if feature_size <= 0:
            raise BotFileError(f"{path} has an action-feature head, but its game has no action features")
        rows = arrays["feature_matrix"].T                       # (actions, inputs), zero outside each action's row
        offset = rows.shape[1] - rows.shape[0] * feature_size
        features = dict(feature_offset=offset, feature_weights=rows[0, offset:offset + feature_size])
    if "move_out" in arrays:        # network.move_layer's graph: reading the MLP alone would drop that layer's scores
        raise BotFileError(f"{path} has a per-move layer (network.move_layer, removed from kahve): its network "
                           "cannot be read back to train further")
    try:
        mlp = MLP([arrays[f"w{k}"] for k in range(n)], [arrays[f"b{k}"] for k in range(n)],
                  "relu" if any(node.op_type == "Relu" and node.output[0] in hidden for node in model.graph.node)
                  else "tanh", **features)
    except ValueError as err:
        raise BotFileError(f"{path}: {err}") from None
    check_checksum(path)        # last, as in Bot.read_metadata
    return mlp


def expert_from_bot(path, feature_size: int = 0) -> MLP | CardAttention:
    """The expert network of a bot file (:func:`export_onnx`'s ``expert``): an MLP, or a :class:`CardAttention`
    when the metadata's ``expert`` entry says so. A file without one is a :class:`BotFileError`."""
    _, meta = Bot.read_metadata(path)
    description = meta.get("expert") if isinstance(meta.get("expert"), dict) else {}
    if description.get("architecture") != CardAttention.ARCHITECTURE:
        return mlp_from_bot(path, feature_size, expert=True)
    _, arrays = _graph_arrays(path, "expert_")
    try:
        return CardAttention.from_graph(description, arrays)
    except (KeyError, TypeError, ValueError) as err:
        raise BotFileError(f"{path}: its card-attention expert cannot be read back ({type(err).__name__}: {err})") \
            from None


def bot_expert_input(path) -> int | None:
    """The observation input that switches a bot file to its expert network (:func:`export_onnx`), or None."""
    import onnx
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as err:  # onnx raises protobuf's decode errors
        raise BotFileError(f"{path} is not a readable ONNX file ({type(err).__name__})") from None
    props = {p.key: p.value for p in model.metadata_props}
    try:
        value = json.loads(props.get("kahve", "{}")).get("expert_input")
    except (json.JSONDecodeError, AttributeError):
        raise BotFileError(f"{path}: the kahve metadata is not a JSON mapping") from None
    check_checksum(path)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _session(model):
    """An onnxruntime session of ``model`` (a path or serialized bytes) on the CPU, one thread."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def _split_sessions(session, metadata: dict, path) -> tuple:
    """A bot file with an expert network (metadata ``expert_input``) as ``(main, expert, flag input)``: two sessions,
    observation -> ``main_logits`` and -> ``expert_logits``, each the part of the graph its output needs, cut out
    by :func:`.onnx_cut.cut` (protobuf bytes, no ``onnx`` package: loading needs numpy and onnxruntime only);
    checked against the whole graph (``session``) with the flag off and on. No expert: ()."""
    at = metadata.get("expert_input")         # checked by check_metadata
    if at is None:
        return ()
    from .onnx_cut import cut
    model = Path(path).read_bytes()
    parts = []
    for output in ("main_logits", "expert_logits"):
        try:
            parts.append(_session(cut(model, output)))
        except Exception as err:  # ValueError from the cut, onnxruntime's own types for a graph that does not load
            raise BotFileError(f"{path} says it has an expert network, but its graph has no {output!r} "
                               f"({type(err).__name__})") from None
    x = np.zeros((2, metadata["observation_size"]), np.float32)
    x[1, at] = 1.0                                        # the flag off, then on
    whole = session.run(["logits"], {"observation": x})[0]
    try:
        halves = [parts[0].run(None, {"observation": x[:1]})[0], parts[1].run(None, {"observation": x[1:]})[0]]
    except Exception as err:  # onnxruntime's own exception types
        raise BotFileError(f"{path}: its expert network does not run ({type(err).__name__})") from None
    if not np.allclose(np.concatenate(halves), whole, atol=1e-4):
        raise BotFileError(f"{path}: its main and expert networks do not give the graph's logits (expert_input {at})")
    return parts[0], parts[1], at


def bot_file(path) -> Path:
    """The file of a bot: ``path`` if it is a file, else the shipped bot of that name (``pishti/ppo_2p``,
    ``checkpoints/pishti/ppo_2p.onnx``: :func:`kahve.checkpoints.find`, the names every command takes), found
    inside the installed package from any working directory. Neither is a one-line ``FileNotFoundError``."""
    if Path(path).is_file():
        return Path(path)
    from kahve import checkpoints
    shipped = checkpoints.find(str(path))
    if shipped is None:
        raise FileNotFoundError(f"no bot file at {path} and no shipped bot of that name; "
                                f"{checkpoints.did_you_mean(str(path))}")
    return shipped


class Bot:
    """A loaded bot file as a Policy: ``act(observation, action_mask, state=None)``."""

    def __init__(self, session, metadata: dict, path: str, temperature: float = 0.0, seed: int | None = None,
                 parts: tuple | None = None):
        """``parts``: :func:`_split_sessions`'s, when the caller has them (a copy of a loaded bot); else made here."""
        self.session = session
        self.metadata = metadata
        self.path = path
        self.temperature = temperature
        self.rng = np.random.default_rng(seed)
        self.name = Path(path).stem
        self.parts = _split_sessions(session, metadata, path) if parts is None else parts

    @classmethod
    def read_metadata(cls, path) -> tuple[object, dict]:
        path = str(bot_file(path))
        try:
            session = _session(path)
            meta = json.loads(session.get_modelmeta().custom_metadata_map["kahve"])
        except Exception as err:  # onnxruntime raises its own exception types for unreadable files
            raise BotFileError(f"{path} is not a readable kahve bot file ({type(err).__name__}: "
                               f"{str(err).splitlines()[0][:200] if str(err) else 'no details'})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise BotFileError(f"{path} is an ONNX file but not a kahve bot (no kahve metadata)")
        if meta.get("format_version") != FORMAT_VERSION:
            raise BotFileError(f"{path} has bot format version {short(meta.get('format_version'))}; this kahve reads "
                               f"version {FORMAT_VERSION}")
        check_metadata(meta, path)
        check_graph(session, meta, path)
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise BotFileError(f"{path} is not a readable kahve bot file ({type(err).__name__})") from None
        check_weights(path, data)
        check_checksum(path, data)      # last: a file that is corrupt as well as changed says what is wrong with it
        return session, meta

    @classmethod
    def load(cls, path, game=None, temperature: float = 0.0, seed: int | None = None) -> "Bot":
        """Load a bot file (a path, or a shipped bot's name: :func:`bot_file`); with ``game`` (a Game object), check
        that the bot fits it."""
        path = bot_file(path)
        session, meta = cls.read_metadata(path)
        if game is not None:
            check_fits(meta, game, str(path))
        return cls(session, meta, str(path), temperature, seed)

    def reset(self) -> None:
        pass

    def logits(self, observation) -> np.ndarray:
        return self.batch_logits(np.asarray(observation, dtype=np.float32).reshape(1, -1))[0]

    def batch_logits(self, observations) -> np.ndarray:
        """The logits of a batch of observations [B, observation_size] -> [B, num_actions]. A file with an expert
        network runs each row through the network that gives its logits only: the graph's ``Where`` computes
        both on every row, which made a move five times slower and a search over the bot a third slower."""
        x = np.asarray(observations, dtype=np.float32)
        if not self.parts:
            return self.session.run(["logits"], {"observation": x})[0]
        main, expert, at = self.parts
        use = x[:, at] > 0.5
        if not use.any():
            return main.run(None, {"observation": x})[0]
        if use.all():
            return expert.run(None, {"observation": x})[0]
        out = np.empty((len(x), self.metadata["num_actions"]), dtype=np.float32)
        out[~use] = main.run(None, {"observation": x[~use]})[0]
        out[use] = expert.run(None, {"observation": x[use]})[0]
        return out

    def act(self, observation, action_mask, state=None) -> int:
        return masked_choice(self.logits(observation), action_mask, self.temperature, self.rng)


#: the metadata every bot file carries, and its type
REQUIRED = {"game": str, "env_version": (int, str), "settings": dict, "observation_size": int, "num_actions": int,
            "algorithm": str}


def check_metadata(meta: dict, path: str = "bot") -> None:
    """The metadata has every key :func:`check_fits` and the players rely on, with the right types."""
    for key, kind in REQUIRED.items():
        if key not in meta:
            raise BotFileError(f"{path}: the bot metadata has no {key!r}")
        value = meta[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise BotFileError(f"{path}: the bot metadata's {key!r} is {short(value)}, not "
                               + ("a mapping" if kind is dict else "a number" if kind is int else "a text"
                                  if kind is str else "a version"))
    if meta["observation_size"] < 1 or meta["num_actions"] < 1:
        raise BotFileError(f"{path}: the bot metadata gives {meta['observation_size']} observations and "
                           f"{meta['num_actions']} actions")
    if not all(isinstance(k, str) for k in meta["settings"]):
        raise BotFileError(f"{path}: the bot metadata's settings have names that are not text")
    tables = meta.get("tables", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) and all(isinstance(k, str) for k in t)
                                               for t in tables):
        raise BotFileError(f"{path}: the bot metadata's tables are not a list of settings")
    at, size = meta.get("expert_input"), meta["observation_size"]
    if at is not None and (isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < size):
        raise BotFileError(f"{path}: the bot metadata's expert_input is {short(at)}, not an observation input "
                           f"(0 to {size - 1})")


def check_graph(session, meta: dict, path: str = "bot") -> None:
    """The graph takes ``observation`` [batch, observation_size] and gives ``logits`` [batch, num_actions] as the
    metadata says, and gives finite numbers (a NaN or infinite weight shows in the output for any input)."""
    inputs, outputs = session.get_inputs(), session.get_outputs()
    want_in, want_out = meta["observation_size"], meta["num_actions"]
    if [i.name for i in inputs] != ["observation"] or [o.name for o in outputs] != ["logits"]:
        raise BotFileError(f"{path}: the graph maps {[i.name for i in inputs]} to {[o.name for o in outputs]}; a "
                           "kahve bot maps ['observation'] to ['logits']")
    for what, node, want in (("input", inputs[0], want_in), ("output", outputs[0], want_out)):
        shape = list(node.shape)
        if len(shape) != 2 or not (shape[1] == want or shape[1] is None or isinstance(shape[1], str)):
            raise BotFileError(f"{path}: the graph's {what} {short(node.name)} has shape {shape}; the metadata says "
                               f"[batch, {want}]")
        if node.type != "tensor(float)":
            raise BotFileError(f"{path}: the graph's {what} {short(node.name)} is {node.type}, not tensor(float)")
    try:
        out = np.concatenate([session.run(["logits"], {"observation": np.full((1, want_in), v, np.float32)})[0]
                              for v in (0.0, 1.0)])
    except Exception as err:  # onnxruntime's own exception types
        raise BotFileError(f"{path}: the graph does not run on observations of {want_in} "
                           f"({type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else 'no details'})") \
            from None
    if out.shape != (2, want_out):
        raise BotFileError(f"{path}: the graph gives logits of shape {list(out.shape)[1:]}; the metadata says "
                           f"{want_out} actions")
    if not np.isfinite(out).all():
        raise BotFileError(f"{path}: the network gives NaN or infinite values (broken weights)")


def check_weights(path, data: bytes | None = None) -> None:
    """Every floating-point weight in the graph of the bot file at ``path`` (its bytes ``data``, if read already) is
    finite: a NaN shows in the outputs, but an infinite bias before a tanh gives finite ones (read from the protobuf
    bytes: numpy and onnxruntime only)."""
    from .onnx_cut import float_initializers
    try:
        weights = float_initializers(Path(path).read_bytes() if data is None else data)
    except ValueError as err:
        raise BotFileError(f"{path}: its graph's weights cannot be read ({err})") from None
    for name, values in weights:
        finite = np.isfinite(values)
        if not finite.all():
            bad = int(finite.size - finite.sum())
            raise BotFileError(f"{path}: the weights {short(name)} hold {bad:,} values that are not finite (NaN or "
                               "infinity: broken weights)")


#: settings a bot does not impose on the table it plays at: how an episode is cut and paid, and whether forced
#: moves are skipped; they change neither what the bot sees nor what it may do. Every other setting it was trained
#: with is the table's default when the bot is named (kahve play, the web table).
NOT_IMPOSED = ("episode", "reward", "skip_single_choice")


@dataclass
class Fit:
    """Whether a bot fits a table: ``reason`` (one line) when it cannot play there; ``shaping``: the settings
    that change its observations or actions, ``(trained, table)`` each; ``other``: the other settings that differ
    (it plays, but was trained otherwise)."""
    reason: str | None
    shaping: dict
    other: dict

    @property
    def ok(self) -> bool:
        return self.reason is None


def trained_at(meta: dict, game) -> dict:
    """The settings the bot was trained under that ``game``'s table is to be held against: its ``settings``, or for a
    bot of several ``tables`` (e.g. Ish at 2 to 20 players) the first of them that shapes observations and actions
    as this table does (the first of all when none does: then it does not fit)."""
    tables = meta.get("tables") or [meta.get("settings", {})]
    return next((table for table in tables if not game.space_changes(table)), tables[0])


def _tables_text(meta: dict, game) -> str:
    """The tables a bot was trained at, by the settings that shape observations and differ from ``game``'s
    (``players=3; players=4``)."""
    tables = meta["tables"]
    keys = [k for k in game.space_settings if any(k in t and t[k] != game.settings[k] for t in tables)]
    return "; ".join(", ".join(f"{k}={short(t[k])}" for k in keys if k in t) for t in tables)


def fit(meta: dict, game, path: str = "bot") -> Fit:
    """Does the bot of metadata ``meta`` fit ``game``'s table (its settings)? The one place that says so."""
    trained = trained_at(meta, game)
    shaping = {k: (trained[k], game.settings[k]) for k in game.space_changes(trained)}
    other = {k: (trained[k], game.settings[k]) for k in trained if k in game.settings and k not in shaping
             and trained[k] != game.settings[k] and k not in NOT_IMPOSED}
    reason = None
    if meta["game"] != game.name:
        reason = f"{path} is a bot for {meta['game'][:80]}, not {game.name}"
    elif meta["env_version"] != game.version:
        reason = (f"{path} was trained on {meta['game']} v{str(meta['env_version'])[:40]}; this kahve has "
                  f"v{game.version}, "
                  "whose observations or actions differ: retrain or use a matching kahve")
    elif (meta["observation_size"], meta["num_actions"]) != (game.observation_size, game.num_actions):
        reason = (f"{path} expects observations of {meta['observation_size']} and {meta['num_actions']} actions; "
                  f"these settings give {game.observation_size} and {game.num_actions}")
    elif shaping and meta.get("tables"):
        reason = (f"{path} was trained at the tables {_tables_text(meta, game)}; these settings give another ("
                  + ", ".join(f"{k}={short(h)}" for k, (_, h) in shaping.items()) + ")")
    elif shaping:
        reason = (f"{path} was trained with " + ", ".join(f"{k}={short(t)}" for k, (t, _) in shaping.items())
                  + "; these settings change what observations and actions mean (here "
                  + ", ".join(f"{k}={short(h)}" for k, (_, h) in shaping.items()) + ")")
    return Fit(reason, shaping, other)


def check_fits(meta: dict, game, path: str = "bot") -> None:
    """:func:`fit` as a check: a :class:`BotFileError` when the bot cannot play at ``game``'s table, a
    :class:`BotSettingsWarning` when it plays under settings it was not trained with."""
    verdict = fit(meta, game, path)
    if not verdict.ok:
        raise BotFileError(verdict.reason)
    if verdict.other:
        warnings.warn(f"{path} was trained with " + ", ".join(f"{k}={short(t)}" for k, (t, _) in verdict.other.items())
                      + "; playing with " + ", ".join(f"{k}={short(h)}" for k, (_, h) in verdict.other.items()),
                      BotSettingsWarning, stacklevel=3)
