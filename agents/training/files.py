"""Reading and writing the files of a run safely: JSON, YAML, arrays and tensors are read without ever
unpickling anything, and a file is written whole or not at all.

A run folder, a recipe folder and a config are data that people hand each other: a file that cannot be read is a
``ValueError`` naming it, never a traceback, and nothing in one can run code when it is loaded. A file that cannot be
written (a full disk) is a :class:`WriteError` naming it, and the file it was to replace is left as it was.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml


def read_json(path) -> object:
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not readable JSON ({err})") from None


def load_npz(path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file, never unpickling anything."""
    path = Path(path)
    try:
        f = np.load(path, allow_pickle=False)
        if not isinstance(f, np.lib.npyio.NpzFile):
            raise ValueError("not an .npz archive")
        with f:
            return {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing") from None
    except Exception as err:  # numpy raises ValueError, OSError, BadZipFile, EOFError... for a bad file
        raise ValueError(f"{path}: not a readable array file ({type(err).__name__}: {err})") from None


def save_npz(path, arrays: dict) -> None:
    """Write arrays as ``.npz`` (no object arrays: the file must load without pickle)."""
    for name, a in arrays.items():
        if np.asarray(a).dtype == object:
            raise ValueError(f"{path}: array {name!r} holds Python objects")
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load_tensors(path, device="cpu") -> dict:
    """A ``torch.save`` file of tensors and plain values, loaded with ``weights_only=True``."""
    import torch
    path = Path(path)
    try:
        data = torch.load(path, map_location=device, weights_only=True)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing") from None
    except Exception as err:  # an UnpicklingError for anything but tensors and plain values, a zip error...
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else "no details"
        raise ValueError(f"{path}: not a readable weights file ({type(err).__name__}: {first})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a weights file (expected a mapping, got {type(data).__name__})")
    return data


class WriteError(OSError, ValueError):
    """A file kahve could not write (the disk full, a quota, no permission): one line naming it (:func:`write_error`).
    It is a ``ValueError`` too, so that the command line prints it in one line as it does a bad input, and an
    ``OSError`` with the system's ``errno``; ``reason`` is what went wrong, in words."""

    reason = ""


def write_error(target, err: BaseException, line: str = "cannot write {target}: {reason}") -> WriteError:
    """``err`` (an ``OSError``, or the ``RuntimeError`` torch raises when a save fails) as a :class:`WriteError`
    naming ``target``, in ``line`` (with ``{target}`` and ``{reason}`` filled in)."""
    code = getattr(err, "errno", None)
    if isinstance(err, WriteError):
        reason = err.reason
    elif code in (errno.ENOSPC, errno.EDQUOT):
        reason = "no space left on the device"
    else:
        text = getattr(err, "strerror", None) or str(err).strip()
        reason = clip(text.splitlines()[0] if text else type(err).__name__, 200)
    out = WriteError(line.format(target=target, reason=reason))
    out.errno, out.reason = code, reason
    return out


def write_atomic(path, write: Callable[[Path], object]) -> Path:
    """Write a file whole or not at all: ``write(part)`` writes it under a name beside it (``NAME.part.EXT``, so that a
    writer that goes by the extension, as numpy's and ONNX's do, still can), which then replaces ``path``. A reader
    sees the old file or the new one, never half of one; a write that fails leaves the old file as it was and no part
    behind, and one that fails in the system (a full disk) is a :class:`WriteError` naming ``path``."""
    path = Path(path)
    part = path.with_name(f"{path.stem}.part{path.suffix}")
    try:
        write(part)
        os.replace(part, path)
    except BaseException as err:
        try:
            part.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise write_error(path, err) from None
        raise
    return path


def write_text_atomic(path, text: str) -> None:
    """Write a text file so that a reader sees the old or the new content, never half of it (synced to the disk
    before it replaces the old one)."""
    def write(part: Path) -> None:
        with open(part, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    write_atomic(path, write)


def save_npz_atomic(path, arrays: dict) -> Path:
    """:func:`save_npz`, whole or not at all (:func:`write_atomic`), its folder made if need be."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, lambda part: save_npz(part, arrays))


def save_tensors(path, data: dict) -> None:
    """``torch.save`` of tensors and plain values (what :func:`load_tensors` reads back); a save that fails in the
    system (torch says so with a ``RuntimeError``: "file write failed") is a :class:`WriteError` naming the file."""
    import torch
    try:
        torch.save(data, path)
    except (OSError, RuntimeError) as err:
        raise write_error(path, err) from None


def arrays_hash(arrays: dict) -> str:
    """A short hash of named arrays (names, types, shapes and values): what a file records of the network that made
    it."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def check_finite(arrays: dict, source, why: str = "the training diverged or the file is damaged") -> None:
    """Refuse weights that are not all finite (a NaN or an infinity), in one line naming ``source`` and saying
    ``why``; a network that holds one plays garbage."""
    for name, a in arrays.items():
        a = a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)      # (a torch tensor)
        if a.dtype.kind in "fc" and not np.isfinite(a).all():
            bad = int(a.size - np.isfinite(a).sum())
            raise ValueError(f"{source}: {name} holds weights that are not finite (NaN or infinity; {bad:,} of "
                             f"{a.size:,}): {why}")


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: the most a YAML file kahve reads may hold: bytes, nesting levels, and values (an alias counted each time it is
#: used). A config is a page of keys; these bound what a crafted file can make kahve build, check or print (a
#: "billion laughs" of aliases, 50,000 nested lists, /dev/zero), each refused in one line before any work.
YAML_MAX_BYTES = 1 << 20
YAML_MAX_DEPTH = 50
YAML_MAX_VALUES = 100_000


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error (PyYAML keeps the last), and
    a document nested deeper than :data:`YAML_MAX_DEPTH` or of more than :data:`YAML_MAX_VALUES` values is one."""

    _depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > YAML_MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {YAML_MAX_DEPTH} levels",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None and _expanded_size(node, {}) > YAML_MAX_VALUES:
            raise yaml.composer.ComposerError(None, None, f"more than {YAML_MAX_VALUES:,} values (an alias counts "
                                              "each time it is used)", node.start_mark)
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = key in first_line
                except TypeError:
                    continue                 # an unhashable key: the base class says what is wrong with it
                if seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first given on line {first_line[key] + 1})",
                        key_node.start_mark)
                first_line[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


def _expanded_size(node, seen: dict) -> int:
    """The values of a composed YAML node with its aliases expanded (a shared node counts once per use), counted
    without expanding them (each node once), and capped just above the limit."""
    key = id(node)
    if key not in seen:
        seen[key] = 1                       # (a node inside itself: counted once, PyYAML refuses it later)
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = ()
        seen[key] = min(YAML_MAX_VALUES + 1, 1 + sum(_expanded_size(c, seen) for c in children))
    return seen[key]


def read_text_limited(path, limit: int = YAML_MAX_BYTES) -> str:
    """A text file of at most ``limit`` bytes (a config, a run's config.yaml): larger, or endless (/dev/zero), is a
    ``ValueError`` naming it, read no further than the limit."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except IsADirectoryError:
        raise ValueError(f"{path} is a folder, not a file") from None
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit:,} bytes, too large for a config")
    try:
        return data.decode("utf-8-sig")         # a byte-order mark (some editors write one) is not content
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a text file ({err.reason})") from None


def read_yaml(text: str, source: str) -> Any:
    """YAML text read with the safe loader, refusing duplicate keys and what is too large or too deep; errors name
    ``source``."""
    if len(text) > YAML_MAX_BYTES:
        raise ValueError(f"{source}: larger than {YAML_MAX_BYTES:,} bytes, too large for a config")
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as err:
        raise ValueError(f"{source}: not valid YAML ({clip(' '.join(str(err).split()))})") from None
    except RecursionError:
        raise ValueError(f"{source}: nested too deeply") from None


def short(value, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters: error messages quote what a user gave, never all of it."""
    return clip(repr(value), limit)


def clip(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters."""
    return text if len(text) <= limit else text[:limit - 5] + " …" + text[-3:]
