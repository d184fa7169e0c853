"""The web table of ``kahve serve``: play any of the five games against the bots in a browser.

* :mod:`.app`: the ASGI app (Starlette), its page and JSON API;
* :mod:`.tables`: the table manager (one engine state per table, the bots, records, expiry);
* :mod:`.views`: what one seat sees, as JSON data for the page (never a card the seat cannot see);
* ``static/``: the page, its script and style sheet (package data; nothing is fetched from the internet).

Needs the ``web`` extra: ``pip install 'kahve[web]'`` (Starlette and uvicorn).
"""

from __future__ import annotations


def create_app(*args, **kwargs):
    """The ASGI app (see :func:`kahve.scripts.web.app.create_app`)."""
    from .app import create_app as _create
    return _create(*args, **kwargs)


__all__ = ["create_app"]
