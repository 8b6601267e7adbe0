"""Where sherpa-skills keeps its state: `--home`, else SHERPA_SKILLS_HOME, else ~/.sherpa-skills."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from .errors import StoreFileError

T = TypeVar("T")


def chosen_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The state folder named (`--home`, SHERPA_SKILLS_HOME, ~/.sherpa-skills), creating nothing: a reader that must
    not write (the read-only browser view) looks before it opens."""
    return Path(home or os.environ.get("SHERPA_SKILLS_HOME") or Path.home() / ".sherpa-skills").expanduser()


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The state folder, created when missing; a path that cannot be one is refused with the reason."""
    path = chosen_home(home)
    if path.exists() and not path.is_dir():
        raise StoreFileError(f"home '{path}' is a file, not a folder; pass --home a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreFileError(f"home '{path}' cannot be created: {exc.strerror or exc}") from None
    return path


def store_path(home: str | os.PathLike[str] | None = None) -> Path:
    return resolve_home(home) / "store.db"


_per_home: dict[tuple[Any, str, int], Any] = {}
_per_home_lock = threading.RLock()  # re-entrant: a matcher's factory asks for the store of the same home


def per_home(factory: Callable[[Path], T], home: str | os.PathLike[str] | None = None) -> T:
    """One `factory(home folder)` per factory, home and thread, made on first use and reused (SQLite connections stay in
    the thread that opened them)."""
    folder = resolve_home(home)
    key = (factory, str(folder), threading.get_ident())
    with _per_home_lock:
        found = _per_home.get(key)
        if found is None:
            found = _per_home[key] = factory(folder)
        return found


def close_per_thread(threads: Collection[threading.Thread]) -> int:
    """Forget what `per_home` made for these threads (a server's workers, as it stops) and close each, newest first
    (a memory before the store it reads); a thread id the system hands out again then starts afresh. How many closed."""
    idents = {t.ident for t in threads}
    return _forget_and_close(lambda key: key[2] in idents)


@contextmanager
def per_home_scope() -> Iterator[None]:
    """What `per_home` makes in this thread inside the block is forgotten and closed on leaving it: one CLI command
    run in-process (a test, a notebook) must not leave its homes' connections and index files open for good."""
    thread = threading.get_ident()
    with _per_home_lock:
        before = {key for key in _per_home if key[2] == thread}
    try:
        yield
    finally:
        _forget_and_close(lambda key: key[2] == thread and key not in before)


def _forget_and_close(chosen: Callable[[tuple[Any, str, int]], bool]) -> int:
    """Forget the chosen `per_home` entries, then close each, newest first; how many closed."""
    with _per_home_lock:
        made = [(key, found) for key, found in _per_home.items() if chosen(key)]
        for key, _ in made:
            del _per_home[key]
    closed = 0
    for key, found in reversed(made):
        close = getattr(found, "close", None)
        if not callable(close):
            continue
        try:
            close()
            closed += 1
        except Exception as exc:  # one failing must not keep the others open
            import structlog

            structlog.get_logger(__name__).warning("per_thread_close_failed", made=repr(key[0]), error=str(exc))
    return closed
