"""Which engine keeps the truth: `--database URL`, else SHERPA_SKILLS_DATABASE, else SQLite in the home folder.

A URL is described to people (errors, logs) by host, port, database and user, never by its password.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import StoreFileError, UsageError

ENV = "SHERPA_SKILLS_DATABASE"
SCHEMES = ("postgresql://", "postgres://")

# The CLI's --database for the command being run (reset when it returns); a plain global, not a context variable,
# so threads a command starts (the browser view's workers) see it too.
_chosen: str | None = None


def choose(url: str | None) -> None:
    """The CLI's --database: checked now (a password in it is refused), used by every store the command opens."""
    global _chosen
    if url is not None:
        check_command_line(url, option="--database")
    _chosen = url


def check_command_line(url: str, *, option: str) -> None:
    """A URL given as a command-line option: a postgresql:// one, without a password (the process list shows it)."""
    check(url, source=option)
    if parse(url, source=option).get("password"):
        raise UsageError(
            f"{option}: the URL carries a password, which anyone on this machine can read in the process list; "
            "give it through a password file (?passfile=FILE), PGPASSFILE, ~/.pgpass or PGPASSWORD instead"
        )


def database_url(explicit: str | None = None) -> str | None:
    """The PostgreSQL URL in force, or None for SQLite in the home folder (the default)."""
    url = explicit or _chosen or os.environ.get(ENV) or None
    if url is None:
        return None
    check(url, source="--database" if (explicit or _chosen) else ENV)
    return url


def check(url: str, *, source: str) -> None:
    if not url.startswith(SCHEMES):
        shown = url.split("://", 1)[0] + "://…" if "://" in url else url[:40]
        raise StoreFileError(
            f"{source}: '{shown}' is not a postgresql:// URL (SQLite, the default, lives in the home folder: --home)"
        )


def parse(url: str, *, source: str = ENV) -> dict[str, Any]:
    """libpq's own reading of the URL (host, port, dbname, user, password, sslmode, passfile …)."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise StoreFileError(
            f"{source} names a PostgreSQL database, but psycopg is not installed: pip install 'sherpa-skills[postgres]'"
        ) from None
    import psycopg

    try:
        return dict(conninfo_to_dict(url))
    except psycopg.ProgrammingError as exc:
        raise StoreFileError(f"{source}: not a valid PostgreSQL URL ({scrub(str(exc), url)})") from None


def describe(url: str) -> str:
    """ "database 'app' on db1:5432 as user 'sherpa'": what errors and logs name, never the password."""
    try:
        parts = parse(url)
    except StoreFileError:
        return "a PostgreSQL database (unreadable URL)"
    host = parts.get("host") or os.environ.get("PGHOST") or "localhost"
    port = parts.get("port") or os.environ.get("PGPORT") or "5432"
    user = parts.get("user") or os.environ.get("PGUSER")
    dbname = parts.get("dbname") or os.environ.get("PGDATABASE") or user or "?"
    return f"PostgreSQL database '{dbname}' on {host}:{port}" + (f" as user '{user}'" if user else "")


def scrub(text: str, url: str) -> str:
    """`text` with the URL's password (raw and as written in the URL) replaced, whatever libpq or psycopg echoed."""
    secrets = set()
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(url).get("password")
        if password:
            secrets.add(str(password))
    except Exception:  # an unreadable URL: fall back to what sits between ':' and '@'
        pass
    rest = url.split("://", 1)[-1]
    if "@" in rest.split("/", 1)[0]:
        credentials = rest.split("/", 1)[0].rsplit("@", 1)[0]
        if ":" in credentials:
            secrets.add(credentials.split(":", 1)[1])
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    return text
