"""Which of a home's parts the read-only view may open where they are: the stores create the tables of what they open,
so a part the home does not hold (where only `demo` ran there are no skills, memory or domains tables) would be
written. Such a part is read from an empty scratch home outside instead, until the home holds it.

Looked at through a read-only SQLite connection, which creates and changes nothing. A part the home holds in an older
schema is opened there and migrated, as any command does after an upgrade: its rows are worth more than the write.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

PARTS = ("runs", "skills", "heartbeat", "memory", "domains")


def held_parts(home: Path) -> frozenset[str]:
    """The parts home/store.db holds (one of their migrations at least is recorded there).

    A store.db SQLite cannot read counts as holding every part, so opening it gives the stores' own clear refusal.
    """
    file = home / "store.db"
    if not file.is_file():
        return frozenset()
    try:
        conn = sqlite3.connect(f"file:{quote(str(file.resolve()))}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return frozenset(PARTS)
    try:
        held = {row[0] for row in conn.execute("SELECT DISTINCT component FROM _migrations")}
    except sqlite3.OperationalError as exc:
        return frozenset() if "no such table" in str(exc) else frozenset(PARTS)
    except sqlite3.DatabaseError:
        return frozenset(PARTS)
    finally:
        conn.close()
    return frozenset(held) & frozenset(PARTS)


def signature(home: Path) -> tuple[int, int, int, int]:
    """What changes when another process writes the home's store (the file or its WAL): when to look again."""
    out: list[int] = []
    for name in ("store.db", "store.db-wal"):
        try:
            st = (home / name).stat()
            out += [st.st_mtime_ns, st.st_size]
        except OSError:
            out += [0, 0]
    return out[0], out[1], out[2], out[3]
