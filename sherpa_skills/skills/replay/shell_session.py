"""One shell for a whole replay, so `cd` and `export` in a step hold for the steps after it.

The commands of a procedure were recorded in one interactive shell: `cd build` then `make` ran `make` in
build/. Replaying each step in a fresh `/bin/sh -c` would lose that. A session keeps one bash (or sh) alive
for the replay; each step is handed over as a single-quoted string and `eval`ed in the session's own shell,
with stdin from /dev/null and stdout/stderr into files, then a marker line carries its exit status and the
working directory back. One long-lived shell is also cheaper than a process per step: replay costs about what
the same commands cost in one script.

Sessions live in this process only: the working directory is kept in the run's context after each step (a
replay resumed in another process starts its shell there), exported values never leave the shell (they may
be secrets), so a replay resumed elsewhere has lost them and says so in its steps' outcomes.
"""

from __future__ import annotations

import atexit
import os
import selectors
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ...actions.shell import KILL_GRACE_SECS, child_env, kill_process_group

_SHELLS = ("/bin/bash", "/bin/sh")
_READ = 65536


@dataclass
class SessionResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_ms: float
    cwd: str | None
    ended: bool  # the shell itself exited (the step ran `exit`)


class ShellSession:
    """A shell that outlives one command. Not thread-safe: one replay drives it step by step."""

    def __init__(self, cwd: str | None = None, env_names: list[str] | None = None):
        self._dir = tempfile.mkdtemp(prefix="sherpa-replay-")
        self._marker = f"__sherpa_done_{uuid.uuid4().hex}"
        shell = next((s for s in _SHELLS if os.access(s, os.X_OK)), "/bin/sh")
        args = [shell, "--noprofile", "--norc"] if shell.endswith("bash") else [shell]
        self.cwd = str(Path(cwd).expanduser()) if cwd else os.getcwd()
        self.proc = subprocess.Popen(
            args,
            cwd=self.cwd,
            env=child_env(env_names or []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        self._buffer = b""

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, command: str, timeout: float, max_chars: int = 20_000, cwd: str | None = None) -> SessionResult:
        """Run one command in the session; `cwd` runs it in a subshell there (its `cd`/`export` then do not hold)."""
        out, err = Path(self._dir, "out"), Path(self._dir, "err")
        quoted = shlex.quote(command)
        body = 'eval "$__sherpa_cmd"' if cwd is None else f'( cd -- {shlex.quote(cwd)} && eval "$__sherpa_cmd" )'
        script = (
            f"__sherpa_cmd={quoted}\n"
            f"{{ {body}\n}} </dev/null >{shlex.quote(str(out))} 2>{shlex.quote(str(err))}\n"
            f'__sherpa_rc=$?; printf \'\\n%s %d %s\\n\' {self._marker} "$__sherpa_rc" "$PWD"\n'
        )
        started = time.monotonic()
        deadline = started + timeout
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(script.encode("utf-8", "surrogateescape"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._ended(started, out, err, max_chars)
        line, eof = self._read_marker(deadline)
        duration = (time.monotonic() - started) * 1000
        if eof:
            return self._ended(started, out, err, max_chars)
        if line is None:  # still running at the deadline: the whole process group goes
            kill_process_group(self.proc, KILL_GRACE_SECS)
            return SessionResult(None, _read(out, max_chars), _read(err, max_chars), True, duration, self.cwd, True)
        _, code, *where = line.split(" ", 2)
        self.cwd = where[0] if where else self.cwd
        return SessionResult(int(code), _read(out, max_chars), _read(err, max_chars), False, duration, self.cwd, False)

    def _ended(self, started: float, out: Path, err: Path, max_chars: int) -> SessionResult:
        code = self.proc.wait()
        return SessionResult(
            code,
            _read(out, max_chars),
            _read(err, max_chars),
            False,
            (time.monotonic() - started) * 1000,
            self.cwd,
            True,
        )

    def _read_marker(self, deadline: float) -> tuple[str | None, bool]:
        """(the marker line, or None at the deadline; whether the shell exited first)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            for raw in self._buffer.split(b"\n")[:-1]:
                text = raw.decode("utf-8", "surrogateescape")
                if text.startswith(self._marker + " "):
                    self._buffer = self._buffer.split(raw + b"\n", 1)[1]
                    return text, False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, False
            with selectors.DefaultSelector() as selector:  # select() cannot take a descriptor past 1024; epoll can
                selector.register(fd, selectors.EVENT_READ)
                ready = selector.select(remaining)
            if not ready:
                return None, False
            chunk = os.read(fd, _READ)
            if not chunk:
                return None, True  # the shell exited
            self._buffer += chunk

    def close(self) -> None:
        if self.alive:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"exit 0\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                kill_process_group(self.proc, KILL_GRACE_SECS)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        shutil.rmtree(self._dir, ignore_errors=True)


def _read(path: Path, max_chars: int) -> str:
    """Head and tail of a step's output file, at most `max_chars` characters."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            if size <= max_chars * 4:
                text = handle.read().decode("utf-8", "replace")
            else:
                head = handle.read(max_chars * 2).decode("utf-8", "replace")
                handle.seek(-max_chars * 2, os.SEEK_END)
                text = head + "\n…\n" + handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    if len(text) > max_chars:
        half = max_chars // 2
        text = text[:half] + "\n…\n" + text[-half:]
    return text


_sessions: dict[str, ShellSession] = {}
_lock = threading.Lock()


def session_for(run_id: str, cwd: str | None, env_names: list[str]) -> tuple[ShellSession, bool]:
    """This run's shell (and whether it is new: a new one has no exported variables from earlier steps)."""
    with _lock:
        found = _sessions.get(run_id)
        if found is not None and found.alive:
            return found, False
        session = ShellSession(cwd, env_names)
        _sessions[run_id] = session
        return session, True


def end_session(run_id: str) -> None:
    with _lock:
        session = _sessions.pop(run_id, None)
    if session is not None:
        session.close()


@atexit.register
def _close_all() -> None:
    for run_id in list(_sessions):
        end_session(run_id)
