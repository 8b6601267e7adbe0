"""`sherpa-skills ui`: serve the browser view over the home folder, on 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import argparse
import ipaddress
import sys
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


def cmd_ui(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..home import resolve_home

    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a TCP port (1-65535)")
    local = is_loopback(args.host)
    if not local and not args.allow_remote:
        raise UsageError(
            f"--host {args.host} serves your runs to other machines; "
            "pass --allow-remote as well if that is what you want"
        )
    try:
        import uvicorn  # noqa: F401

        from ..ui.app import create_app
    except ImportError as exc:
        raise UsageError(
            f"the browser view needs the ui extra ({exc.name} is missing): pip install 'sherpa-skills[ui]'"
        ) from None
    home = resolve_home(args.home)
    if not local:
        sys.stderr.write(
            f"sherpa-skills: warning: serving {home} on {args.host}:{args.port}; "
            f"anyone who can reach it can read your runs{' and resume them' if args.allow_actions else ''}\n"
        )
    app = create_app(home, allow_actions=args.allow_actions, allowed_hosts=None if local else ["*"])
    return serve(app, args.host, args.port, open_browser=args.open)


def serve(app: Any, host: str, port: int, *, open_browser: bool = False) -> int:
    import uvicorn

    from ..errors import UsageError

    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/runs"
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=2, lifespan="on")
    server = uvicorn.Server(config)
    sys.stderr.write(f"sherpa-skills ui: {url} (Ctrl-C stops)\n")
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
        "--allow-remote", action="store_true", help="allow a --host other machines can reach (prints a warning)"
    )
    p.add_argument(
        "--allow-actions",
        action="store_true",
        help="let the page resume waiting runs and promote candidates (CSRF-protected)",
    )
