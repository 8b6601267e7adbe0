"""`sherpa-skills ui`: serve the browser view over the home folder, on 127.0.0.1 unless told otherwise; beyond
loopback only with a token and to the Host names it is told."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path
from typing import Any

from .console import EXIT_OK

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """0.0.0.0 or ::: every address of the machine, so the names clients use are not known from it."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _home(args: argparse.Namespace) -> Path:
    """The home folder; read-only, a missing one is not created (the view shows it empty and writes nothing)."""
    from ..home import chosen_home, resolve_home

    folder = chosen_home(args.home)
    return resolve_home(folder) if args.allow_actions or folder.exists() else folder


def _url(host: str, port: int, query: str = "") -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/runs{query}"


def cmd_ui(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..ui.security import LOOPBACK_NAMES, allowed_names, new_token, read_token_file

    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a TCP port (1-65535)")
    local = is_loopback(args.host)
    if not local and not args.allow_remote:
        raise UsageError(
            f"--host {args.host} serves your runs to other machines; "
            "pass --allow-remote as well if that is what you want"
        )
    extra = sorted(allowed_names(args.allowed_host or []))
    if is_wildcard(args.host) and not extra:
        raise UsageError(
            f"--host {args.host} listens on every address of this machine, so the names clients reach it by are "
            "unknown: name each with --allowed-host NAME (this machine's name or address)"
        )
    # Loopback serves as before, with no token unless one is given; beyond loopback a token is required.
    token = read_token_file(args.token_file) if args.token_file else None if local else new_token()
    try:
        import uvicorn  # noqa: F401

        from ..ui.app import create_app
    except ImportError as exc:
        raise UsageError(
            f"the browser view needs the ui extra ({exc.name} is missing): pip install 'sherpa-skills[ui]'"
        ) from None
    home = _home(args)
    hosts = [*LOOPBACK_NAMES, *extra] if local or is_wildcard(args.host) else [args.host, *extra]
    shown_host = extra[0] if is_wildcard(args.host) else args.host
    if token is None:
        url = shown = _url(shown_host, args.port)
    elif args.token_file:
        url, shown = (
            _url(shown_host, args.port),
            _url(shown_host, args.port, f"?token=… (the token in {args.token_file})"),
        )
    else:
        url = shown = _url(shown_host, args.port, f"?token={token}")
    if not local:
        sys.stderr.write(
            f"sherpa-skills: warning: serving {home} on {args.host}:{args.port} (answering to "
            f"{', '.join(hosts)}) over plain HTTP: a client with the token can read your runs"
            f"{' and resume them' if args.allow_actions else ''}; on an untrusted network put TLS in front "
            "(an SSH tunnel or a reverse proxy)\n"
        )
    app = create_app(home, allow_actions=args.allow_actions, allowed_hosts=hosts, token=token)
    if token is not None:
        sys.stderr.write(
            "sherpa-skills ui: open the address below once in a browser (it then keeps a cookie); "
            "API clients send 'Authorization: Bearer TOKEN'\n"
        )
    return serve(app, args.host, args.port, open_browser=args.open, url=url, shown=shown)


def serve(
    app: Any, host: str, port: int, *, open_browser: bool = False, url: str | None = None, shown: str | None = None
) -> int:
    """Serve until Ctrl-C; `url` is what the browser opens, `shown` what stderr says (default: the runs page)."""
    import uvicorn

    from ..errors import UsageError

    url = url or _url(host, port)
    # No access log: a sign-in address carries the token in its query string.
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=2,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    sys.stderr.write(f"sherpa-skills ui: {shown or url} (Ctrl-C stops)\n")
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(0.5, webbrowser.open, (url,)).start()
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    except SystemExit:  # uvicorn exits when it cannot bind; uvicorn has already logged why
        raise UsageError(f"could not listen on {host}:{port} (is the port in use?)") from None
    return EXIT_OK


def add_ui_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ui",
        parents=[common],
        help="browse runs, machines, procedures and the heartbeat in a local web page",
        description="Serve a local, read-only web view of the home folder (runs, diagrams, "
        "procedures, heartbeat, teams). Needs the ui extra: pip install 'sherpa-skills[ui]'.",
    )
    p.set_defaults(fn=cmd_ui)
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; others need --allow-remote)"
    )
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other machines can reach: every client then needs the token printed at start "
        "(or --token-file's), and the Host name must be --host or an --allowed-host",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="another host name or address clients reach the view by (repeatable; needed with --host 0.0.0.0)",
    )
    p.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the token from PATH's first line (chmod 600) instead of printing a new one; also asks for it "
        "on loopback",
    )
    p.add_argument(
        "--allow-actions",
        action="store_true",
        help="let the page resume waiting runs and promote candidates (CSRF-protected)",
    )
