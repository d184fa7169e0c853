"""Regenerate the golden playthroughs in tests/golden/ (after an intended change of rules, observations,
actions or rewards, with the env version bumped): ``python tools/regenerate_goldens.py [NAME ...]``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the repository root, for the tests package

from tests.golden.regenerate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
