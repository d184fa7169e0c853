"""The bad-input corpus (issue 61, tests/bad_inputs): what a user can mistype and what a crafted or damaged file can
hold, each case with the outcome it must have. A bad input is one line of error (a ``ValueError`` or
``FileNotFoundError`` from the API; exit code 2 and one ``kahve COMMAND: error:`` line from the command), never a
traceback, never a hang, and never accepted; a good one is accepted.

The default suite runs a fixed sample of the corpus; ``-m slow`` runs all of it. A case's time guard here is the
suite's own (``HANG_S``: a busy machine makes the suite slower, never red); the corpus run whose counts
docs/design.md gives, ``python -m tests.bad_inputs``, holds every case to 10 seconds."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.bad_inputs import ACCEPT, ERROR, all_cases, run_corpus, sample
from tests.bad_inputs.runner import CASE_LIMIT_S, OK
from tests.helpers import HANG_S

#: the cases of the default suite's sample (a minute or so on an idle 2-core machine)
SAMPLE = 150


def _run(cases, tmp_path):
    report = run_corpus(cases, limit_s=HANG_S, root=tmp_path)
    print(report.table())
    print(report.summary())
    slow = [r for r in report.results if r.seconds > CASE_LIMIT_S]
    print(f"cases over {CASE_LIMIT_S:g} s (the corpus run's limit, not this test's): {len(slow)}")
    assert not report.failures(), "\n" + report.summary()
    return report


def test_the_corpus_has_every_kind_of_bad_input_and_good_ones_beside_them():
    cases = all_cases()
    assert len(cases) >= 2000
    kinds = Counter(c.kind for c in cases)
    assert set(kinds) == {"config", "config file", "recipe", "override", "settings", "policy spec", "bot file",
                          "record", "run folder", "env", "command line"}
    for kind in kinds:          # each kind has cases of both outcomes, so neither can pass by refusing everything
        assert {c.expect for c in cases if c.kind == kind} == {ERROR, ACCEPT}, kind
    assert sum(c.subprocess for c in cases) >= 10           # command lines in a process of their own
    assert len(sample(cases, SAMPLE)) < 2 * SAMPLE


def test_a_sample_of_the_bad_input_corpus_ends_as_it_must(tmp_path):
    report = _run(sample(all_cases(), SAMPLE), tmp_path)
    assert len({r.case.kind for r in report.results}) == 11
    assert all(r.outcome == OK for r in report.results)


@pytest.mark.slow
def test_the_whole_bad_input_corpus_ends_as_it_must(tmp_path):
    report = _run(all_cases(), tmp_path)
    assert len(report.results) >= 2000
