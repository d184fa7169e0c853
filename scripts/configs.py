"""``kahve configs [NAME [-o FILE]]``: list the training configs shipped inside the package, print one, or copy
one to a file of your own to edit and train.

A plain (non-editable) install has no ``configs/`` folder in the working directory: ``kahve train pishti/ppo``
reads the shipped file from the package, and this command shows which files those are and gives you a copy.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", help="a shipped config, e.g. pishti/ppo (without it: list them all)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="copy the config to FILE (without it: print it)")
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")


def run(args) -> int:
    from kahve import configs
    if args.name is None:
        if args.output:
            raise ValueError("name the config to copy, e.g. kahve configs pishti/ppo -o my.yaml")
        names = configs.names()
        width = max(map(len, names))
        print(f"shipped training configs (in {configs.ROOT}):")
        for name in names:
            print(f"  {name:<{width}}  {_short(configs.summary(configs.find(name)))}")
        print("train one: kahve train pishti/ppo; copy one to edit: kahve configs pishti/ppo -o my.yaml")
        return 0
    source = configs.find(args.name)
    if source is None:
        raise FileNotFoundError(f"no shipped config {args.name!r}; {configs.did_you_mean(args.name)}")
    if args.output is None:
        sys.stdout.write(source.read_text(encoding="utf-8"))
        return 0
    from .common import check_output
    target = Path(args.output).expanduser()
    if target.is_dir():
        target = target / source.name
    if target.exists() and not args.force:      # never overwrite a config someone has edited
        raise ValueError(f"{target} exists; choose another file or add --force to overwrite it")
    check_output(str(target), "-o")             # under a file, /dev/null, a folder that cannot be written
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    print(f"copied {args.name} to {target}; train it: kahve train {target}")
    return 0


def _short(text: str, width: int = 96) -> str:
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"
