"""Import session logs: find the files, read each from where the last import stopped, store its commands.

Each file keeps an offset and fingerprints of what was read (the first and last 4 KiB before the
offset, the last lines' hashes). When they still match, only bytes past the offset are read, so an
append-only log that grew costs only its new lines. When they do not (a history trimmed at the top,
a file replaced), the last lines read are looked for in the new content and reading resumes after
them; failing that the file is read again from the start, and what was stored already is not stored
twice. A file with the size and modification time it had when last read is not even opened. Big
files are committed every 32 MiB, so an interrupted import keeps what it stored. A malformed line is
skipped and counted; a file that cannot be read is reported and counted.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from stat import S_ISREG
from typing import Any, BinaryIO

import structlog

from ..errors import UsageError
from ..logs import ensure_configured
from ._asciinema import AsciinemaParser
from ._base import Parser, load_json_object
from ._claude_code import ClaudeCodeParser
from ._codex import CodexParser
from ._detect import FORMATS, sniff_file, walk
from ._models import FileResult, ImportSummary
from ._records import CommandRecord
from ._shell_history import BashHistoryParser, ZshHistoryParser
from ._store import Added, Conflict, FileRow, SessionStore

log = structlog.get_logger(__name__)

PARSERS: dict[str, Callable[[Path, dict[str, Any]], Parser]] = {
    "claude-code": ClaudeCodeParser,
    "codex": CodexParser,
    "bash-history": BashHistoryParser,
    "zsh-history": ZshHistoryParser,
    "asciinema": AsciinemaParser,
}
JSON_FORMATS = frozenset({"claude-code", "codex"})

#: A file unchanged for this long is finished: calls still waiting for a result are stored as unknown.
SETTLE_SECONDS = 3600.0
_READ_BYTES = 4 * 1024 * 1024
_COMMIT_BYTES = 32 * 1024 * 1024
_HASH_SPAN = 4096
_ANCHOR_LINES = 3

Progress = Callable[[int, int, FileResult], None]
ReadProgress = Callable[[int, int], None]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _read_range(handle: BinaryIO, start: int, end: int) -> bytes:
    handle.seek(max(0, start))
    return handle.read(max(0, end - max(0, start)))


def _fingerprint(handle: BinaryIO, offset: int) -> tuple[str, str, list[str]]:
    """Hashes of the first and last 4 KiB before `offset`, and of the last few lines before it."""
    head = _digest(_read_range(handle, 0, min(_HASH_SPAN, offset)))
    tail = _digest(_read_range(handle, offset - _HASH_SPAN, offset))
    block = _read_range(handle, offset - 256 * 1024, offset)
    lines = block.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if offset > 256 * 1024 and lines:
        lines = lines[1:]  # the first may be cut
    return head, tail, [_digest(line) for line in lines[-_ANCHOR_LINES:]]


def _find_anchor(handle: BinaryIO, anchor: list[str]) -> tuple[int, int] | None:
    """(offset, line count) just after the last place the anchor lines occur in the file, if they do."""
    if not anchor:
        return None
    handle.seek(0)
    recent: list[str] = []
    found = None
    offset = lineno = 0
    for line in handle:
        offset += len(line)
        lineno += 1
        if not line.endswith(b"\n"):
            break
        recent.append(_digest(line[:-1]))
        if len(recent) > len(anchor):
            recent.pop(0)
        if recent == anchor:
            found = (offset, lineno)
    return found


def _resume(handle: BinaryIO, row: FileRow, size: int) -> tuple[int, int, dict[str, Any], bool]:
    """(offset, lines before it, parser state, whether the file was found rewritten)."""
    if row.id is None or row.offset == 0:
        return 0, 0, {}, False
    if size >= row.offset:
        head, tail, _ = _fingerprint(handle, row.offset)
        if head == row.head_hash and tail == row.tail_hash:
            return row.offset, row.lines_read, row.state, False
    found = _find_anchor(handle, row.anchor)
    if found is not None:
        return found[0], found[1], row.state, True
    return 0, 0, {}, True


def _unchanged(
    quick: tuple[str, int, float | None, int, int] | None, stat: os.stat_result, settled: bool, fmt: str
) -> bool:
    """Same size and mtime as when last read, and nothing left to settle: skipped without opening the file."""
    if quick is None:
        return False
    known_format, size, mtime, offset, pending = quick
    if size != stat.st_size or mtime != stat.st_mtime or (fmt != "auto" and fmt != known_format):
        return False
    return not settled or (offset == size and not pending)


def _feed(parser: Parser, path: Path, line: bytes, lineno: int, offset: int) -> None:
    """One line to the parser; a line whose fields have types no log writes (a list for a string, nesting deeper
    than the JSON decoder goes) is skipped and counted like a malformed one, never the end of the import."""
    try:
        parser.feed(line, lineno, offset)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        log.warning("session_line_skipped", path=str(path), line=lineno, error=f"{type(exc).__name__}: {exc}"[:200])
        parser.skip(lineno)


def _add(result: FileResult, added: Added) -> None:
    result.commands += added.commands
    result.succeeded += added.counts["success"]
    result.failed += added.counts["failure"]
    result.rejected += added.counts["rejected"]
    result.unknown += added.counts["unknown"]


def _import_file(
    store: SessionStore,
    path: Path,
    key: str,
    fmt: str,
    settle: float,
    now: float,
    *,
    explicit: bool,
    stat: os.stat_result | None,
    on_read: Callable[[int], None] | None = None,
) -> tuple[FileResult, set[tuple[str, str]]]:
    result = FileResult(path=str(path))
    sessions: set[tuple[str, str]] = set()
    try:
        stat = stat or os.stat(key)
        if not S_ISREG(stat.st_mode):
            raise OSError(f"{path}: not a regular file")
        for _attempt in range(5):
            row = store.file_row(key)
            try:
                _read_file(
                    store, path, key, row, stat, fmt, settle, now, result, sessions, explicit=explicit, on_read=on_read
                )
                break
            except Conflict:
                stat = os.stat(key)  # another import moved this file on: read again from where it stopped
    except OSError as exc:
        result.status = "unreadable"
        result.error = f"{path}: cannot read: {exc.strerror or exc}"
    result.sessions = len(sessions)
    return result, sessions


def _read_file(
    store: SessionStore,
    path: Path,
    key: str,
    row: FileRow | None,
    stat: os.stat_result,
    fmt: str,
    settle: float,
    now: float,
    result: FileResult,
    sessions: set[tuple[str, str]],
    *,
    explicit: bool,
    on_read: Callable[[int], None] | None = None,
) -> None:
    settled = now - stat.st_mtime >= settle
    if row is None:
        detected = fmt if fmt != "auto" else sniff_file(path)
        if detected is None:
            result.status = "unrecognised"
            if path.suffix == ".cast":
                result.error = (
                    f"{path}: not an asciinema v2 or v3 recording (convert a v1 file with `asciinema convert`)"
                )
            elif explicit:
                result.error = (
                    f"{path}: not a session log this version reads ({', '.join(FORMATS)}); "
                    "pass --format to read it as one of them"
                )
            return
        row = FileRow(id=None, path=key, format=detected)
    elif fmt != "auto" and fmt != row.format:
        row.format, row.offset, row.lines_read, row.lines_skipped, row.state, row.anchor = fmt, 0, 0, 0, {}, []
        row.resets += 1
    result.format = row.format
    with path.open("rb") as handle:
        offset, lineno, state, rewritten = _resume(handle, row, stat.st_size)
        first_line = lineno
        if rewritten:
            result.status = "reset"
            row.resets += 1
            if offset == 0:
                row.lines_skipped, row.content_hash = 0, None
        parser = PARSERS[row.format](path, state)
        hasher = hashlib.blake2b(digest_size=16)
        handle.seek(offset)
        consumed, since_commit, parts = offset, 0, []  # parts: the current, unfinished line
        skipped_before = 0

        def commit(position: int, lines: int, records: list[CommandRecord]) -> None:
            nonlocal hasher, skipped_before
            row.size, row.mtime = stat.st_size, stat.st_mtime
            row.offset, row.lines_read = position, lines
            row.lines_skipped += parser.skipped - skipped_before
            skipped_before = parser.skipped
            row.head_hash, row.tail_hash, row.anchor = _fingerprint(handle, position)
            row.content_hash = _digest(((row.content_hash or "") + hasher.hexdigest()).encode())
            hasher = hashlib.blake2b(digest_size=16)
            row.state = parser.state()
            row.last_error = None
            added = store.commit(row, records, source=row.format)
            _add(result, added)
            sessions.update(added.sessions)

        while True:
            data = handle.read(_READ_BYTES)
            if not data:
                break
            if b"\n" not in data:
                parts.append(data)  # a very long line: gathered, not re-copied each read
                continue
            block = b"".join([*parts, data]) if parts else data
            lines = block.split(b"\n")
            leftover = lines.pop()
            parts = [leftover] if leftover else []
            for line in lines:
                lineno += 1
                _feed(parser, path, line, lineno, consumed)
                consumed += len(line) + 1
                hasher.update(line)
                hasher.update(b"\n")
            since_commit += len(block) - len(leftover)
            if on_read is not None:
                on_read(len(data))
            if since_commit >= _COMMIT_BYTES and parser.resume_point() is None:
                position = handle.tell()
                commit(consumed, lineno, parser.take())
                handle.seek(position)
                since_commit = 0
        leftover = b"".join(parts)
        if leftover:
            # The last line has no newline yet: a writer may be half-way through it. It is read if it is a
            # complete JSON object or the file has settled; otherwise it waits for the next import.
            if settled or (row.format in JSON_FORMATS and load_json_object(leftover) is not None):
                lineno += 1
                _feed(parser, path, leftover, lineno, consumed)
                consumed += len(leftover)
                hasher.update(leftover)
        parser.finish(settled=settled)
        result.bytes_read = consumed - offset
        result.lines_read = lineno - first_line
        commit(consumed, lineno, parser.take())
        if result.bytes_read == 0 and result.commands == 0 and not rewritten:
            result.status = "unchanged"
        result.skipped_lines = parser.skipped
        result.dropped = dict(parser.dropped)
        if parser.skipped:
            shown = ", ".join(map(str, parser.skipped_lines[:5])) + (", ..." if parser.skipped > 5 else "")
            log.info("sessions.malformed_lines", path=str(path), skipped=parser.skipped, lines=shown)


def _expand(paths: list[Path], errors: list[str]) -> list[tuple[str, str, bool]]:
    """(path, resolved path, named explicitly) of the files to read: each file named, and the candidate
    files under each folder named (recursively)."""
    out: list[tuple[str, str, bool]] = []
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        try:
            if path.is_dir():
                found = [(p, key, False) for p, key in walk(path, errors)]
            elif path.exists() or path.is_symlink():
                found = [(str(path), str(path.resolve()), True)]
            else:
                errors.append(f"{path}: no such file or folder")
                continue
        except OSError as exc:  # a name too long, a loop of links: reported and counted, the other paths still read
            errors.append(f"{str(path)[:200]}: {exc.strerror or exc}")
            continue
        for item in found:
            if item[1] not in seen:
                seen.add(item[1])
                out.append(item)
    return out


def _sizes(files: list[tuple[str, str, bool]]) -> dict[str, int]:
    """Each file's size now, for a progress bar in bytes (a file that cannot be read counts 0)."""
    sizes = {}
    for _, key, _ in files:
        try:
            sizes[key] = os.stat(key).st_size
        except OSError:
            sizes[key] = 0
    return sizes


_COUNTED = ("commands", "succeeded", "failed", "rejected", "unknown", "skipped_lines", "lines_read", "bytes_read")


def import_paths(
    paths: list[Path],
    *,
    home: Path | None = None,
    fmt: str = "auto",
    progress: Progress | None = None,
    settle_seconds: float = SETTLE_SECONDS,
    store: SessionStore | None = None,
    read_progress: ReadProgress | None = None,
) -> ImportSummary:
    """Import the session logs at `paths` (files, or folders walked recursively) into the home's store.

    Only what is new since the last import of each file is read and stored; a file unchanged since
    (same size and modification time) is not even opened, and is counted but not listed in
    `file_results`. `progress(done, total, file_result)` is called after each file, and `read_progress(bytes done,
    bytes in all the files)` as a big file is read (a single log of 300,000 commands takes a minute). Never raises for
    bad input: unreadable or unrecognised files and malformed lines are counted and reported.
    """
    ensure_configured()
    if fmt != "auto" and fmt not in FORMATS:
        raise UsageError(f"unknown session format '{fmt}'; choose one of: auto, {', '.join(FORMATS)}")
    started = time.perf_counter()
    summary = ImportSummary()
    files = _expand([Path(p) for p in paths], summary.errors)
    own = store is None
    store = store or SessionStore(home=home)
    sessions: set[tuple[str, str]] = set()
    counts = dict.fromkeys(_COUNTED, 0)
    read = unchanged = unreadable = unrecognised = 0
    on_read: Callable[[int], None] | None = None
    size_of = _sizes(files) if read_progress is not None else {}
    total_bytes, read_bytes = sum(size_of.values()), [0]
    if read_progress is not None:
        report = read_progress

        def on_read(n: int) -> None:
            read_bytes[0] += n
            report(min(read_bytes[0], total_bytes), total_bytes)

    try:
        quick = store.quick_rows()
        for done, (path, key, explicit) in enumerate(files, start=1):
            file_start = read_bytes[0]
            now = time.time()
            try:
                stat: os.stat_result | None = os.stat(key)
            except OSError:
                stat = None
            if (
                stat is not None
                and S_ISREG(stat.st_mode)
                and _unchanged(quick.get(key), stat, now - stat.st_mtime >= settle_seconds, fmt)
            ):
                read += 1
                unchanged += 1
                read_bytes[0] += size_of.get(key, 0)
                if progress is not None:
                    progress(done, len(files), FileResult(path=path, format=quick[key][0], status="unchanged"))
                continue
            result, touched = _import_file(
                store, Path(path), key, fmt, settle_seconds, now, explicit=explicit, stat=stat, on_read=on_read
            )
            sessions |= touched
            summary.file_results.append(result)
            if result.status == "unreadable":
                unreadable += 1
            elif result.status == "unrecognised":
                unrecognised += 1
            else:
                read += 1
                unchanged += result.status == "unchanged"
            if result.error:
                summary.errors.append(result.error)
            for name in _COUNTED:
                counts[name] += getattr(result, name)
            if progress is not None:
                progress(done, len(files), result)
            if read_progress is not None:  # an unchanged or resumed file is done whole, however little was read
                read_bytes[0] = file_start + size_of.get(key, 0)
                read_progress(min(read_bytes[0], total_bytes), total_bytes)
    finally:
        if own:
            store.close()
    for name, value in counts.items():
        setattr(summary, name, value)
    summary.files, summary.unchanged_files, summary.unreadable_files, summary.unrecognised_files = (
        read,
        unchanged,
        unreadable,
        unrecognised,
    )
    summary.sessions = len(sessions)
    summary.seconds = round(time.perf_counter() - started, 3)
    log.info(
        "sessions.imported",
        files=summary.files,
        commands=summary.commands,
        sessions=summary.sessions,
        skipped_lines=summary.skipped_lines,
        errors=len(summary.errors),
    )
    return summary
