"""The browser view's doors: the headers every answer carries (no framing, a Content-Security-Policy the pages keep),
the Host names it answers to (DNS rebinding), and, when it serves beyond loopback, the token a client presents — once
as `?token=` in the browser (then an HttpOnly, SameSite=Strict cookie) or as an `Authorization: Bearer` header.

An ASGI middleware rather than Starlette's, so a refusal says why and carries the same headers as any page.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import ipaddress
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from ..errors import UsageError

TOKEN_PARAM = "token"
MIN_TOKEN = 16  # characters: a shorter token from a file is guessable, so it is refused
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
# Nothing inline: every script and style is a file under /static (diagrams are SVG drawn on the server, styled by the
# stylesheet), so an injected <script>, <style> or style="" is refused by the browser too.
CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    # Other sites never see a page's address; not no-referrer, under which a form posts 'Origin: null' (a CSRF refusal).
    (b"referrer-policy", b"same-origin"),
]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token in FILE's first line; refused when the file is missing, short, or readable by other users."""
    file = Path(path).expanduser()
    try:
        mode = file.stat().st_mode
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--token-file {file}: cannot read it ({reason})") from None
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(f"--token-file {file}: other users can read it; chmod 600 {file}")
    token = (text.splitlines() or [""])[0].strip()
    if len(token) < MIN_TOKEN or any(c.isspace() or not c.isprintable() for c in token):
        raise UsageError(
            f"--token-file {file}: line 1 must hold a token of at least {MIN_TOKEN} printable characters without "
            "spaces (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def host_name(value: str) -> str | None:
    """The name in a Host header or an --allowed-host value, lower-cased, IPv6 without brackets; None if malformed."""
    try:
        return ipaddress.ip_address(
            value
        ).compressed  # a bare address (an IPv6 one has no brackets on the command line)
    except ValueError:
        pass
    try:
        parts = urlsplit(f"//{value}")
        parts.port  # noqa: B018  # raises on a port that is not a number
    except ValueError:
        return None
    name = parts.hostname
    if not name or parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    if not re.fullmatch(r"[a-z0-9._:%-]+", name):  # letters, digits, dots, hyphens (and an IPv6 address's)
        return None
    try:
        return ipaddress.ip_address(name).compressed  # one spelling per address: [0:0::1] is ::1
    except ValueError:
        return name


def allowed_names(names: Iterable[str]) -> frozenset[str]:
    """The Host names to answer; a wildcard or a malformed name is refused (any Host is what DNS rebinding needs)."""
    out = set()
    for raw in names:
        name = host_name(raw.strip())
        if name is None or "*" in name:
            raise UsageError(f"--allowed-host '{raw[:80]}' is not a host name or address (no port, no wildcard)")
        out.add(name)
    return frozenset(out)


def _same(given: str, expected: str) -> bool:
    # Bytes: compare_digest refuses str with non-ASCII characters, which a client is free to send.
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


class Guard:
    """Security headers on every answer; then the Host check; then, with a token, the credential check."""

    def __init__(self, app: Any, *, allowed_hosts: Iterable[str], token: str | None = None):
        self.app = app
        self.hosts = allowed_names(allowed_hosts)
        self.token = token
        if token is not None:
            key = token.encode()
            # Derived, not the token: the cookie jar never holds the token, and a cookie from another token does not
            # match. The name depends on the token too, so two views on one host (cookies ignore ports) keep theirs.
            self.cookie_value = hmac.new(key, b"sherpa-skills ui session", hashlib.sha256).hexdigest()
            self.cookie_name = "sherpa_ui_" + hmac.new(key, b"cookie name", hashlib.sha256).hexdigest()[:12]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # the view has no websockets
            await send({"type": "websocket.close", "code": 1008})
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [h for h in HEADERS if h[0] not in present]
            await send(message)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._host_refusal(headers.get("host"))
        if refusal is None and self.token is not None:
            refusal = self._credential_refusal(scope, headers)
        if refusal is not None:
            await _answer(scope, send_with_headers, *refusal)
            return
        await self.app(scope, receive, send_with_headers)

    def _host_refusal(self, host: str | None) -> tuple[int, str, list[tuple[str, str]]] | None:
        if host is None:
            return 400, "refused: the request has no Host header", []
        name = host_name(host)
        if name is None or name not in self.hosts:
            return (
                400,
                f"refused: this view does not answer to the host name '{host[:80]}' (a page on another site can point "
                "its own name at this address); start it with --allowed-host NAME if that is how it is reached",
                [],
            )
        return None

    def _credential_refusal(self, scope: Any, headers: dict[str, str]) -> tuple[int, str, list[tuple[str, str]]] | None:
        assert self.token is not None
        challenge = [("www-authenticate", 'Bearer realm="sherpa-skills ui"')]
        how = (
            "open the address `sherpa-skills ui` printed at start (…?token=…) once in this browser, "
            "or send 'Authorization: Bearer TOKEN'"
        )
        authorization = headers.get("authorization")
        if authorization is not None:
            scheme, _, value = authorization.strip().partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                return 401, "refused: the Authorization header must be 'Bearer TOKEN'", challenge
            return None if _same(value.strip(), self.token) else (401, "refused: wrong token", challenge)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == TOKEN_PARAM]
        if given:
            if scope["method"] not in ("GET", "HEAD"):
                return 401, "refused: a token in the address signs in a page (GET) only; send it as a header", challenge
            if len(given) > 1 or not _same(given[0], self.token):
                return 401, f"refused: wrong token in the address; {how}", challenge
            location, *rest = self._login(scope, query)
            if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
                # A link followed from another site: the browser sends no SameSite=Strict cookie along a redirect that
                # site started, so a page of ours moves on instead (its own navigation carries the cookie).
                return 200, "signed in", [*rest, ("refresh", location[1])]
            return 303, "signed in", [location, *rest]
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no credential
            cookie = SimpleCookie()
        morsel = cookie.get(self.cookie_name)
        if morsel is not None:
            if _same(morsel.value, self.cookie_value):
                return None
            return 401, f"refused: this browser's sign-in is for another token; {how}", challenge
        return 401, f"refused: this view needs its token; {how}", challenge

    def _login(self, scope: Any, query: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The same address without the token, and the cookie that stands for it from now on."""
        # Leading slashes folded and backslashes escaped: '//host' or '/\host' would send the browser off-site.
        path = "/" + quote(scope["path"], safe="/:@!$&'()*+,;=-._~").lstrip("/")
        rest = urlencode([(k, v) for k, v in query if k != TOKEN_PARAM])
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        return [
            ("location", path + (f"?{rest}" if rest else "")),
            ("set-cookie", f"{self.cookie_name}={self.cookie_value}; Path=/; HttpOnly; SameSite=Strict{secure}"),
            ("cache-control", "no-store"),
        ]


async def _answer(scope: Any, send: Any, status: int, message: str, headers: list[tuple[str, str]]) -> None:
    """A refusal (JSON for /api and non-browser clients, a short page for a browser) or the sign-in redirect."""
    accept = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"accept"), "")
    refresh = dict(headers).get("refresh")
    if status == 303:
        body, kind = b"", "text/plain; charset=utf-8"
    elif refresh is not None:
        target = html.escape(refresh, quote=True)
        body = (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url='
            f'{target}"><title>signed in · sherpa-skills</title></head><body><main><p>Signed in: '
            f'<a href="{target}">continue</a>.</p></main></body></html>'
        ).encode()
        kind = "text/html; charset=utf-8"
        headers = [h for h in headers if h[0] != "refresh"]
    elif scope["path"].startswith("/api") or "text/html" not in accept:
        body, kind = json.dumps({"error": message}).encode(), "application/json"
    else:
        body = (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>refused · sherpa-skills</title></head>'
            f"<body><main><h1>{status}</h1><p>{html.escape(message)}</p></main></body></html>"
        ).encode()
        kind = "text/html; charset=utf-8"
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    raw += [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode())]
    if not any(k == b"cache-control" for k, _ in raw):
        raw.append((b"cache-control", b"no-store"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


__all__ = ["CSP", "Guard", "LOOPBACK_NAMES", "TOKEN_PARAM", "allowed_names", "new_token", "read_token_file"]
