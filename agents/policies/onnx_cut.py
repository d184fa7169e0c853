"""Cut the part of an ONNX graph that one tensor needs, reading and writing the protobuf bytes directly.

A bot file with an expert network (:func:`kahve.agents.policies.bot.export_onnx`'s ``expert``) runs each row
through one of its two networks only, as two sessions cut out of the file's graph (``bot._split_sessions``).
The ``onnx`` package's extractor did the cutting, which made loading such a bot need ``onnx`` beside numpy and
onnxruntime; this module does the same cut with nothing but the protobuf wire format, so a shipped bot loads
with numpy and onnxruntime only (docs/architecture.md).

Only the fields the cut touches are decoded (field numbers from onnx.proto); every other field is copied as
its bytes, so nothing of the file is reinterpreted. :func:`float_initializers` reads the graph's float weights the
same way, for the check that every weight of a bot file is finite (``bot.check_weights``), and
:func:`split_metadata` splits a model into its metadata properties and the rest of its bytes, for a bot file's
checksum (``bot.checksum``).
"""

from __future__ import annotations

# onnx.proto field numbers
MODEL_GRAPH, MODEL_METADATA_PROPS = 7, 14
ENTRY_KEY, ENTRY_VALUE = 1, 2           # StringStringEntryProto
GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_OUTPUT, GRAPH_VALUE_INFO = 1, 5, 12, 13
NODE_INPUT, NODE_OUTPUT = 1, 2
TENSOR_NAME = 8
VALUE_INFO_NAME = 1

_LENGTH = 2      # wire type of bytes, strings and messages


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def fields(buf: bytes) -> list[tuple[int, bytes | None, bytes]]:
    """A message's fields in order as ``(number, payload, raw)``: ``payload`` the bytes of a length-delimited
    field (None for numbers), ``raw`` the whole field as written (key included), to copy it unchanged."""
    out, i = [], 0
    while i < len(buf):
        start = i
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        payload = None
        if wire == 0:
            _, i = _varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == _LENGTH:
            size, i = _varint(buf, i)
            payload = buf[i:i + size]
            i += size
        else:                       # groups (3, 4) are not in onnx.proto
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if i > len(buf):
            raise ValueError("truncated field")
        out.append((number, payload, buf[start:i]))
    return out


#: TensorProto fields and the floating-point data types whose values :func:`float_initializers` reads
TENSOR_DATA_TYPE, TENSOR_FLOAT_DATA, TENSOR_RAW_DATA, TENSOR_DOUBLE_DATA = 2, 4, 9, 10
_FLOATS = {1: ("<f4", TENSOR_FLOAT_DATA), 11: ("<f8", TENSOR_DOUBLE_DATA)}      # FLOAT, DOUBLE


def float_initializers(model: bytes) -> list:
    """``(name, values)`` of every float and double initializer of the model's graph, ``values`` a flat numpy array
    (from ``raw_data``, or the packed ``float_data``/``double_data``); a malformed model is a ``ValueError``."""
    import numpy as np
    out = []
    for number, graph, _ in fields(model):
        if number != MODEL_GRAPH or graph is None:
            continue
        for n, tensor, _ in fields(graph):
            if n != GRAPH_INITIALIZER or tensor is None:
                continue
            parts = fields(tensor)
            kind = next((_varint(raw, len(_encode_varint(TENSOR_DATA_TYPE << 3)))[0] for k, p, raw in parts
                         if k == TENSOR_DATA_TYPE and p is None), None)
            if kind not in _FLOATS:
                continue
            dtype, packed = _FLOATS[kind]
            data = b"".join(p if p is not None else raw[-np.dtype(dtype).itemsize:] for k, p, raw in parts
                            if k in (TENSOR_RAW_DATA, packed))
            name = next((p.decode(errors="replace") for k, p, _ in parts if k == TENSOR_NAME and p is not None), "")
            out.append((name, np.frombuffer(data, dtype=dtype)))
    return out


def split_metadata(model: bytes) -> tuple[list[tuple[str, str]], bytes]:
    """The model's metadata properties as ``(key, value)`` in file order (an entry's last key and value count, as
    protobuf reads them), and every other field of the model as its bytes, in file order and unchanged (the graph
    with its nodes and weights, the opset, the IR version...). A malformed model is a ``ValueError``."""
    props, rest = [], bytearray()
    for number, payload, raw in fields(model):
        if number != MODEL_METADATA_PROPS or payload is None:
            rest += raw
            continue
        entry = {n: p for n, p, _ in fields(payload) if p is not None and n in (ENTRY_KEY, ENTRY_VALUE)}
        props.append((entry.get(ENTRY_KEY, b"").decode(), entry.get(ENTRY_VALUE, b"").decode()))
    return props, bytes(rest)


def _field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _LENGTH) + _encode_varint(len(payload)) + payload


def _strings(buf: bytes, number: int) -> list[str]:
    return [p.decode() for n, p, _ in fields(buf) if n == number and p is not None]


def cut(model: bytes, output: str, like: str = "logits") -> bytes:
    """The serialized model whose only output is the tensor ``output``, with the nodes and initializers it needs
    and nothing else; its output's type and shape are those of the graph output ``like`` (the expert file's
    ``main_logits`` and ``expert_logits`` have the shape of its ``logits``). Raises ValueError for bytes that
    are not such a model or a graph without ``output``."""
    top = fields(model)
    graphs = [p for n, p, _ in top if n == MODEL_GRAPH]
    if len(graphs) != 1 or graphs[0] is None:
        raise ValueError("not an ONNX model with one graph")
    graph = fields(graphs[0])
    nodes = [(raw, _strings(p, NODE_INPUT), _strings(p, NODE_OUTPUT)) for n, p, raw in graph if n == GRAPH_NODE]
    # walk back from the output: a node is kept when it makes a tensor a kept node (or the output) reads
    needed, keep = {output}, set()
    for k in range(len(nodes) - 1, -1, -1):
        raw, inputs, outputs = nodes[k]
        if needed.intersection(outputs):
            keep.add(k)
            needed.update(inputs)
    if not any(output in nodes[k][2] for k in keep):
        raise ValueError(f"no node of the graph makes {output!r}")
    template = [p for n, p, _ in graph if n == GRAPH_OUTPUT and _strings(p, VALUE_INFO_NAME) == [like]]
    if not template:
        raise ValueError(f"the graph has no output {like!r}")
    renamed = b"".join(raw for n, _, raw in fields(template[0]) if n != VALUE_INFO_NAME)
    new_output = _field(GRAPH_OUTPUT, _field(VALUE_INFO_NAME, output.encode()) + renamed)
    body, k = bytearray(), 0
    for n, p, raw in graph:
        if n == GRAPH_NODE:
            if k in keep:
                body += raw
            k += 1
        elif n == GRAPH_INITIALIZER:
            if set(_strings(p, TENSOR_NAME)) & needed:
                body += raw
        elif n == GRAPH_OUTPUT:
            if new_output:              # the one new output in place of the graph's outputs
                body += new_output
                new_output = b""
        elif n != GRAPH_VALUE_INFO:     # shapes of intermediate tensors: not needed to run, may name dropped ones
            body += raw
    return b"".join(_field(MODEL_GRAPH, bytes(body)) if n == MODEL_GRAPH else raw for n, _, raw in top)
