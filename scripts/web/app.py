"""The ASGI app of ``kahve serve`` (Starlette): one page, its static files, and a small JSON API.

=======  ===================================  ======================================================
method   path                                 what
=======  ===================================  ======================================================
GET      ``/``                                the page (sets the browser session's cookie)
GET      ``/static/...``                      the page's script, style sheet and card pictures
GET      ``/api/games``                       the games, their settings (form fields), opponents, the default one
POST     ``/api/check``                       ``{game, settings}``: valid?, table size, which opponents fit, the default
POST     ``/api/guide``                       ``{game, settings}``: the player guide, with those house settings
GET      ``/api/tables``                      this browser session's tables (to go back to one)
POST     ``/api/tables``                      ``{game, settings, seat[, opponent][, seed]}``: a new table
GET      ``/api/tables/{id}``                 the table as the person's seat sees it, with the log
DELETE   ``/api/tables/{id}``                 close the table
GET      ``/api/tables/{id}/guide``           the player guide of the table's game, with its settings
POST     ``/api/tables/{id}/move``            ``{actions: [...] | action, seat, step}``: the person's move
POST     ``/api/tables/{id}/new``             a new match at the same table
GET      ``/api/tables/{id}/record``          the finished match as a record file (``kahve replay`` reads it)
=======  ===================================  ======================================================

A table answer is ``{"table", "seat", "events": [{"entries", "deal_end", "view"}, ...], "view"}``: one event per
applied action (the person's, then each bot's up to the person's next decision), with the move-log lines it
produced as the seat saw them, the scoring when it ended a deal, and the seat's view after it.

Every refused request is a 4xx JSON answer ``{"error": message}``: unknown or expired table (404/410), a
malformed body or move (400), a body that is not JSON or nested too deeply (400/415), shorter than its
Content-Length or not arriving within :data:`BODY_WAIT_S` (400), too large (413), a move for another seat
(403), an illegal or stale move or a finished match (409). An unexpected error is a 500 with a message; the
server goes on. The CPU work of a request (the bots' thinking) runs in a worker thread, so a slow table
never holds up the others.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import traceback
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kahve import envs

from . import views
from .tables import TableManager, WebError, default_opponent, make_game, opponent_choices

STATIC = Path(__file__).parent / "static"
COOKIE = "kahve_session"
MAX_BODY = 16 * 1024          # bytes: a move is a few dozen
#: seconds a request body may take to arrive: the page sends a few dozen bytes at once, so a body still missing
#: after this is a client that declared more than it sends (it would hold a worker until the connection dropped)
BODY_WAIT_S = 0.5
#: the page may load nothing but this server's own files (the browser enforces it), and no other site may frame it
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "frame-ancestors 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status)


async def read_json(request: Request, limit: int = MAX_BODY):
    """The request's JSON object, read with a size limit (413) whatever the client claims."""
    ctype = request.headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        raise WebError(415, "send the request body as JSON (Content-Type: application/json)")
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise WebError(413, f"the request body is too large ({declared} bytes; at most {limit})")
        except ValueError:
            raise WebError(400, "a malformed Content-Length header") from None
    body = bytearray()

    async def receive() -> None:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limit:
                raise WebError(413, f"the request body is too large (more than {limit} bytes)")

    try:
        await asyncio.wait_for(receive(), BODY_WAIT_S)
    except asyncio.TimeoutError:
        raise WebError(400, f"the request body did not arrive in full ({len(body)} bytes"
                       + (f" of the {declared} declared" if declared is not None else "")
                       + f" after {BODY_WAIT_S} s)") from None
    if not body:
        return {}
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WebError(400, f"the request body is not valid JSON ({err})") from None
    except RecursionError:           # "[[[[...": Python's parser recurses per level
        raise WebError(400, "the request body is JSON nested too deeply") from None
    except ValueError as err:        # e.g. an integer of more digits than Python converts
        raise WebError(400, f"the request body is not usable JSON ({err})") from None
    if not isinstance(data, dict):
        raise WebError(400, "the request body must be a JSON object")
    return data


def create_app(manager: TableManager | None = None, allowed_hosts: list[str] | None = None,
               debug: bool = False) -> Starlette:
    """The app. ``allowed_hosts`` (Host header names) guards a server bound to localhost against pages of
    other sites reaching it through DNS rebinding; ``None`` allows any."""
    manager = manager or TableManager()

    def session_of(request: Request) -> str | None:
        return request.cookies.get(COOKIE)

    def with_session(response: Response, request: Request, token: str | None = None) -> Response:
        if token is not None and request.cookies.get(COOKIE) != token:
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    def api(handler):
        async def endpoint(request: Request):
            try:
                return await handler(request)
            except WebError as err:
                return _error(err.status, err.message)
            except Exception as err:  # never let one table's trouble take the server down
                if debug:
                    traceback.print_exc()
                return _error(500, f"internal error ({type(err).__name__}: {err}); the server goes on")
        endpoint.__name__ = handler.__name__
        return endpoint

    async def index(request: Request):
        token = session_of(request) or secrets.token_urlsafe(24)
        response = FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)
        return with_session(response, request, token)

    @api
    async def games(request: Request):
        out = []
        for name in envs.GAMES:
            cls = envs.game_class(name)
            choices = opponent_choices(name)
            out.append({"name": name, "title": cls.title, "summary": cls.summary,
                        "summary_words": views.SUMMARIES.get(name, cls.summary),
                        "settings": views.settings_form(name),
                        "opponents": choices, "default_opponent": default_opponent(choices)})
        return JSONResponse({"games": out})

    @api
    async def check(request: Request):
        body = await read_json(request)
        name = body.get("game")
        try:
            game = make_game(name, body.get("settings"))
        except WebError as err:
            if name not in envs.GAMES:
                raise
            choices = opponent_choices(name)
            return JSONResponse({"valid": False, "error": err.message, "opponents": choices,
                                 "default_opponent": default_opponent(choices)})
        choices = await run_in_threadpool(opponent_choices, name, game)
        return JSONResponse({"valid": True, "error": None, "players": game.num_players, "sides": list(game.sides),
                             "opponents": choices, "default_opponent": default_opponent(choices)})

    @api
    async def guide(request: Request):
        body = await read_json(request)
        game = make_game(body.get("game"), body.get("settings"))
        return JSONResponse(views.guide(game))

    @api
    async def listing(request: Request):
        return JSONResponse({"tables": manager.listing(session_of(request))})

    @api
    async def close(request: Request):
        manager.close(session_of(request), request.path_params["tid"])
        return JSONResponse({"closed": request.path_params["tid"]})

    @api
    async def table_guide(request: Request):
        table = manager.get(session_of(request), request.path_params["tid"])
        return JSONResponse(views.guide(table.game))

    @api
    async def create(request: Request):
        body = await read_json(request)
        token = session_of(request) or secrets.token_urlsafe(24)
        answer = await run_in_threadpool(manager.create, token, body)
        return with_session(JSONResponse(answer, status_code=201), request, token)

    @api
    async def show(request: Request):
        return JSONResponse(await run_in_threadpool(manager.show, session_of(request), request.path_params["tid"]))

    @api
    async def move(request: Request):
        body = await read_json(request)
        answer = await run_in_threadpool(manager.move, session_of(request), request.path_params["tid"], body)
        return JSONResponse(answer)

    @api
    async def new_match(request: Request):
        body = await read_json(request)
        answer = await run_in_threadpool(manager.new_match, session_of(request), request.path_params["tid"], body)
        return JSONResponse(answer)

    @api
    async def record(request: Request):
        text, filename = await run_in_threadpool(manager.record, session_of(request), request.path_params["tid"])
        return Response(text, media_type="application/x-ndjson",
                        headers={"Content-Disposition": f'attachment; filename="{filename}"'})

    async def http_error(request: Request, exc: HTTPException):
        message = {404: f"not found: {request.url.path}",
                   405: f"method {request.method} is not allowed on {request.url.path}"}.get(exc.status_code,
                                                                                              exc.detail)
        return _error(exc.status_code, message)

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/favicon.ico", lambda request: Response(status_code=204), methods=["GET"]),
        Route("/api/games", games, methods=["GET"]),
        Route("/api/check", check, methods=["POST"]),
        Route("/api/guide", guide, methods=["POST"]),
        Route("/api/tables", listing, methods=["GET"]),
        Route("/api/tables", create, methods=["POST"]),
        Route("/api/tables/{tid}", show, methods=["GET"]),
        Route("/api/tables/{tid}", close, methods=["DELETE"]),
        Route("/api/tables/{tid}/guide", table_guide, methods=["GET"]),
        Route("/api/tables/{tid}/move", move, methods=["POST"]),
        Route("/api/tables/{tid}/new", new_match, methods=["POST"]),
        Route("/api/tables/{tid}/record", record, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]
    middleware = []
    if allowed_hosts:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: http_error})
    app.state.manager = manager
    return app
