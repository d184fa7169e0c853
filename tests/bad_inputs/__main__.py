"""``python -m tests.bad_inputs [--sample N] [--kind KIND ...] [--limit SECONDS]``: run the bad-input corpus (all of
it by default) and print its counts per kind as the Markdown table docs/design.md quotes, then every case that
did not end as it must."""

from __future__ import annotations

import argparse
import sys

from .cases import all_cases
from .runner import CASE_LIMIT_S, run_corpus, sample


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bad_inputs")
    parser.add_argument("--sample", type=int, default=0, help="run a fixed sample of about N cases (0: all)")
    parser.add_argument("--kind", nargs="*", default=[], help="only cases of these kinds")
    parser.add_argument("--match", default="", help="only cases whose name holds this text")
    parser.add_argument("--limit", type=float, default=CASE_LIMIT_S, help="seconds a case may take")
    parser.add_argument("--quiet", action="store_true", help="no line per failure while running")
    args = parser.parse_args()
    cases = all_cases()
    if args.kind:
        cases = [c for c in cases if c.kind in args.kind]
    if args.match:
        cases = [c for c in cases if args.match in c.id]
    if args.sample:
        cases = sample(cases, args.sample)
    report = run_corpus(cases, args.limit, log=None if args.quiet else lambda line: print(line, flush=True))
    print(report.table())
    print()
    print(report.summary())
    return 0 if not report.failures() else 1


if __name__ == "__main__":
    sys.exit(main())
