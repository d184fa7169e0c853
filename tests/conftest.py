"""Test-session setup shared by every test module."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_the_session_tmp(tmp_path_factory):
    # SB3 makes a fresh /tmp/SB3-<time> folder for every model trained without a log folder; keep the tests'
    # inside pytest's own temporary directory (subprocesses inherit the variable)
    os.environ.setdefault("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
    yield
