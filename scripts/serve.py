"""``kahve serve``: a local web table, where a person plays any of the five games against the bots.

Starts the server (Starlette on uvicorn) and prints its address; open it in a browser. It binds to
127.0.0.1 unless ``--host`` says otherwise, and needs the ``web`` extra (``pip install 'kahve[web]'``).
Ctrl-C stops it.
"""

from __future__ import annotations

import ipaddress
import math

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def add_arguments(parser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1: only this machine can connect)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--idle-minutes", type=float, default=30.0,
                        help="a table expires after this many minutes without a request (default 30)")
    parser.add_argument("--max-tables", type=int, default=500, help="tables held at once (default 500)")


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_app(host: str = "127.0.0.1", idle_minutes: float = 30.0, max_tables: int = 500):
    """The app as ``kahve serve`` runs it: on a loopback address, only requests naming a local host are
    answered (a page of another site cannot reach the server by rebinding its name)."""
    try:
        from kahve.scripts.web.app import create_app
        from kahve.scripts.web.tables import TableManager
    except ImportError as err:
        raise ValueError(f"kahve serve needs the web extra ({err.name} is missing): "
                         "pip install 'kahve[web]'") from None
    if math.isnan(idle_minutes) or idle_minutes <= 0:         # (inf: tables never expire, --max-tables bounds them)
        raise ValueError("--idle-minutes must be positive")
    if max_tables < 1:
        raise ValueError("--max-tables must be at least 1")
    allowed = ["localhost", "127.0.0.1", "::1", "[::1]", host] if _is_loopback(host) else None
    return create_app(TableManager(idle_seconds=idle_minutes * 60, max_tables=max_tables), allowed_hosts=allowed)


def run(args) -> int:
    if not 0 < args.port < 65536:
        raise ValueError("--port must be from 1 to 65535")
    app = build_app(args.host, args.idle_minutes, args.max_tables)
    try:
        import uvicorn
    except ImportError:
        raise ValueError("kahve serve needs the web extra (uvicorn is missing): pip install 'kahve[web]'") from None
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"kahve serve: open http://{shown}:{args.port}/ in a browser (Ctrl-C stops the server)", flush=True)
    if not _is_loopback(args.host):
        print(f"kahve serve: listening on {args.host}: other machines can reach this server", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
