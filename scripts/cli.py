"""``kahve``: the command-line entry point. Each subcommand lives in its own module, and only the module of the
command being run is imported (``kahve --help`` imports none of them), so every command starts fast."""

from __future__ import annotations

import argparse
import importlib
import sys

#: subcommand -> (module in kahve.scripts, one-line help)
COMMANDS = {
    "demo": ("demo", "play one random match and print it as a readable game record"),
    "train": ("train", "train an agent from a YAML config (masked PPO or DQN, self-play, TensorBoard)"),
    "evaluate": ("evaluate", "play policy A against policy B with rotated seats and mirrored deals"),
    "league": ("league", "round robin of several policies with Bradley-Terry (Elo-scale) ratings"),
    "export": ("export", "write a trained run as one self-contained ONNX bot file (with an evaluation report)"),
    "play": ("play", "play a match in the terminal against bots"),
    "replay": ("replay", "step through a recorded game (kahve play/evaluate --record) in the terminal"),
    "bench": ("bench", "measure random-play throughput of the engines and the AEC API"),
    "serve": ("serve", "a local web table: play any game against the bots in a browser"),
    "configs": ("configs", "list the shipped training configs, print one, or copy one to edit (-o FILE)"),
}


class _Version(argparse.Action):
    """``kahve --version``: the installed distribution's version (pyproject.toml's, its one source; ``kahve`` is a
    namespace package, no module of its own holds it), read only when asked so every other command starts fast."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print kahve's version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import version
        print(f"kahve {version('kahve')}")            # on stdout, as argparse's own version action
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="kahve", description="Coffeehouse card games for reinforcement learning.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="_command", metavar="COMMAND")
    parsers = {name: sub.add_parser(name, help=help_text, description=help_text)
               for name, (_, help_text) in COMMANDS.items()}
    # the top-level parser takes no option but --help, so the first other word is the command
    command = next((a for a in argv if not a.startswith("-")), None)
    module = None
    if command in COMMANDS:
        module = importlib.import_module(f"kahve.scripts.{COMMANDS[command][0]}")
        module.add_arguments(parsers[command])
    args = parser.parse_args(argv)
    if args._command is None:
        parser.print_help()
        return 2
    try:
        return module.run(args) or 0
    except (ValueError, FileNotFoundError) as err:  # bad input: one clear line, no traceback
        print(f"kahve {args._command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
