"""Fixtures of the web-table tests (they need the web extra: Starlette, uvicorn, httpx)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the web table needs the web extra: pip install 'kahve[web]'")
pytest.importorskip("uvicorn", reason="the web table needs the web extra: pip install 'kahve[web]'")
pytest.importorskip("httpx", reason="the web-table tests talk HTTP with httpx")

from tests.helpers import HANG_S  # noqa: E402

from .helpers import LiveServer  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with LiveServer() as srv:
        yield srv


@pytest.fixture
def client(server):
    import httpx
    with httpx.Client(base_url=server.url, timeout=HANG_S) as c:
        c.get("/")                      # the page sets the browser session's cookie
        yield c
