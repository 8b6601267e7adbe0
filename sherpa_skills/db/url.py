"""Which engine keeps the truth: `--database URL`, else SHERPA_SKILLS_DATABASE, else SQLite in the home folder.

A URL is described to people (errors, logs) by host, port, database and user, never by its password.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from ..errors import StoreFileError, UsageError

ENV = "SHERPA_SKILLS_DATABASE"
SCHEMES = ("postgresql://", "postgres://")

# The CLI's --database for the command being run (reset when it returns); a plain global, not a context variable,
# so threads a command starts (the browser view's workers) see it too.
_chosen: str | None = None
# The CLI's --home, when given on the command line: a store opened from SHERPA_SKILLS_DATABASE says once that its
# truth is not in that folder (asked for, maybe, to keep a throwaway store apart from the shared one).
_home_given: str | None = None
_told = False
# The command keeps its stores in its own home whatever SHERPA_SKILLS_DATABASE names (the demo's throwaway home).
_local = False
_told_lock = threading.Lock()  # the browser view's workers may open their stores at once: one notice, not two


def choose(url: str | None, *, home: str | None = None) -> None:
    """The CLI's --database: checked now (a password in it is refused), used by every store the command opens; and its
    --home, so a store kept in the database SHERPA_SKILLS_DATABASE names says so (None: nothing to say)."""
    global _chosen, _home_given, _told, _local
    if url is not None:
        check_command_line(url, option="--database")
    _chosen, _home_given, _told, _local = url, home or None, False, False


def keep_local() -> None:
    """For the rest of the command, SHERPA_SKILLS_DATABASE is not read: its stores are SQLite in its home, unless
    --database names a database (a throwaway home must not write into a shared one)."""
    global _local
    _local = True


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
    url = explicit or _chosen or (None if _local else os.environ.get(ENV)) or None
    if url is None:
        return None
    check(url, source="--database" if (explicit or _chosen) else ENV)
    if not (explicit or _chosen) and _home_given is not None:
        _tell_home_is_local(_home_given, url)
    return url


def _tell_home_is_local(home: str, url: str) -> None:
    """One line on stderr (stdout may be --json's): the home named on the command line does not hold the stores."""
    global _told
    with _told_lock:
        if _told:
            return
        _told = True
    sys.stderr.write(
        f"sherpa-skills: --home {home} keeps this machine's local files only (logs, indexes); runs, procedures, "
        f"memory and sessions are kept in the {describe(url)} that {ENV} names: unset {ENV} to keep them in "
        f"{home}, or name the database with --database\n"
    )


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
