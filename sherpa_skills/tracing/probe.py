"""Is anything listening where the spans go? A plain TCP connect, so a run whose collector is down never pays for
importing gRPC (~0.17 s of CPU): only a refused connection counts as down, anything else is left to the exporter."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from urllib.parse import urlparse

PROBE_SECONDS = 0.25  # a connect that takes longer is not a refusal: the exporter, with its deadline, decides
PROXIES = ("grpc_proxy", "https_proxy", "http_proxy")
DEFAULTS = {"grpc": "http://localhost:4317", "http/protobuf": "http://localhost:4318/v1/traces"}


def collector_address(env: Mapping[str, str], protocol: str) -> tuple[str, int] | None:
    """The collector's host and port as the OTLP exporter will reach them, or None when a plain connect would not
    tell (no scheme, a unix socket, a proxy in between)."""
    endpoint = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULTS[protocol]
    ).strip()
    url = urlparse(endpoint)
    if url.scheme not in ("http", "https") or not url.hostname:
        return None
    if _proxied(env, url.hostname):
        return None  # the exporter goes through the proxy: the collector itself may be out of our reach
    try:
        port = url.port
    except ValueError:  # a port that is not a number: the exporter will say so
        return None
    return url.hostname, port or (443 if url.scheme == "https" else 80)


def _proxied(env: Mapping[str, str], host: str) -> bool:
    """Whether a proxy variable applies to `host` (gRPC reads grpc_proxy, https_proxy, http_proxy and no_proxy)."""
    if not any(env.get(name) or env.get(name.upper()) for name in PROXIES):
        return False
    bypass = env.get("no_grpc_proxy") or env.get("no_proxy") or env.get("NO_PROXY") or ""
    host = host.lower()
    for part in bypass.split(","):
        entry = part.strip().lower()
        if entry.count(":") == 1:  # host:port: the port does not matter here
            entry = entry.split(":")[0]
        domain = entry.lstrip(".")
        if entry == "*" or (domain and (host == domain or host.endswith("." + domain))):
            return False
    return True


def refuses(address: tuple[str, int]) -> bool:
    """True only when every address the host resolves to refuses a TCP connection: nothing listens there."""
    try:
        socket.create_connection(address, timeout=PROBE_SECONDS).close()
    except ConnectionRefusedError:
        return True
    except OSError:  # timed out, unreachable, unresolvable: not known to be down
        return False
    return False
