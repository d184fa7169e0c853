"""Reading and writing the files of a run safely: JSON, YAML, arrays and tensors are read without ever
unpickling anything, and a file is written whole or not at all.

A run folder, a recipe folder and a config are data that people hand each other: a file that cannot be read is a
``ValueError`` naming it, never a traceback, and nothing in one can run code when it is loaded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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


def write_text_atomic(path, text: str) -> None:
    """Write a file so that a reader sees the old or the new content, never half of it."""
    path = Path(path)
    part = path.with_name(path.name + ".part")
    with open(part, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)


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


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error (PyYAML keeps the last)."""

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


def read_yaml(text: str, source: str) -> Any:
    """YAML text read with the safe loader, refusing duplicate keys; errors name ``source``."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as err:
        raise ValueError(f"{source}: not valid YAML ({' '.join(str(err).split())})") from None
