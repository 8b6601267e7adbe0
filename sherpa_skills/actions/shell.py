"""The built-in `shell` action: run one command under a timeout, capture bounded output, kill the whole tree."""

from __future__ import annotations

import asyncio
import codecs
import os
import select
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..engine.registry import ActionContext, ActionResult, default_registry
from ..errors import ActionError

__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "KILL_GRACE_SECS",
    "MIN_SECRET_CHARS",
    "ShellArgs",
    "arun_shell",
    "kill_process_group",
    "run_shell",
]

log = structlog.get_logger(__name__)

#: Variables the child inherits by default (only those set in os.environ): enough for tools to find
#: themselves, a home, a locale, a terminal type, a temp dir and a time zone, and nothing secret.
#: Anything else must be named in the action's `env` argument.
DEFAULT_ENV_ALLOWLIST: tuple[str, ...] = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TMPDIR",
    "USER",
    "SHELL",
    "TZ",
)

#: Values of passed variables shorter than this are not treated as secrets (DEBUG=1 would redact every "1").
MIN_SECRET_CHARS = 4

#: Seconds between SIGTERM and SIGKILL when a process group must die.
KILL_GRACE_SECS = 1.0

_SHELL = "/bin/sh"
_READ_CHUNK = 65536
_PIPE_BUF = getattr(select, "PIPE_BUF", 512)  # a write this big to a ready pipe never blocks
_STDERR_TAIL_LINES = 10
_ENV_NAME_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class ShellArgs(BaseModel):
    """Arguments of the `shell` action; `command` is already rendered (and shell-quoted) by the engine."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="Run by /bin/sh -c.")
    cwd: str | None = Field(None, description="Working directory; relative to the process cwd; '~' expands.")
    timeout_secs: float = Field(60, gt=0, description="Wall-clock limit; the whole process group is killed after it.")
    env: list[str] = Field(
        default_factory=list,
        description="Names of extra environment variables passed through (values are never recorded).",
    )
    max_output_chars: int = Field(
        10_000, ge=1, description="stdout and stderr are each cut to this many chars, keeping head and tail."
    )
    expected_exit_code: int = 0
    check: bool = Field(False, description="Raise ActionError on a wrong exit code or a timeout.")
    stdin: str | None = Field(
        None,
        description="Text fed to the command's stdin; a template here is refused where the command runs its stdin "
        "as code (sh, python3 -, ssh host).",
    )

    @field_validator("env")
    @classmethod
    def _env_names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not n or n[0].isdigit() or not set(n) <= _ENV_NAME_CHARS]
        if bad:
            raise ValueError(f"env takes variable names only (letters, digits, '_'), got: {', '.join(map(repr, bad))}")
        return names


class _Capture:
    """Decodes one stream incrementally and keeps only its head and tail, so memory stays bounded."""

    def __init__(self, limit: int):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head_max = limit - limit // 2
        self._tail_max = limit // 2
        self._head = ""
        self._tail = ""
        self.total = 0

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        self.total += len(text)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if text:
            self._tail += text
            if len(self._tail) > 2 * self._tail_max + _READ_CHUNK:
                self._tail = self._tail[-self._tail_max :]

    def result(self) -> tuple[str, bool]:
        """The kept text, with a marker line where the middle was cut, and whether anything was cut."""
        self.feed(b"", final=True)
        tail = self._tail[-self._tail_max :] if self._tail_max else ""
        cut = self.total - len(self._head) - len(tail)
        if cut <= 0:
            return self._head + self._tail, False
        return f"{self._head}\n[... {cut} chars cut ...]\n{tail}", True


def _child_env(extra: list[str]) -> dict[str, str]:
    names = list(DEFAULT_ENV_ALLOWLIST) + [n for n in extra if n not in DEFAULT_ENV_ALLOWLIST]
    return {n: os.environ[n] for n in names if n in os.environ}


#: Public: replay's shell sessions start with the same environment as the shell action.
child_env = _child_env


def passed_secrets(names: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The values of the variables named to pass on (beyond the default allowlist): secrets to everything recorded."""
    values: Mapping[str, str] = os.environ if env is None else env
    return {v for n in names if n not in DEFAULT_ENV_ALLOWLIST and len(v := values.get(n, "")) >= MIN_SECRET_CHARS}


def _resolve_cwd(cwd: str | None) -> str | None:
    if cwd is None:
        return None
    path = Path(cwd).expanduser().absolute()
    if not path.exists():
        raise ActionError("shell", f"working directory '{cwd}' does not exist (resolved to {path})")
    if not path.is_dir():
        raise ActionError("shell", f"working directory '{cwd}' is not a directory (resolved to {path})")
    return str(path)


def _pump(
    sel: selectors.BaseSelector, captures: dict[int, _Capture], stdin_data: memoryview | None, deadline: float
) -> bool:
    """Feed stdin and drain the output pipes until all are closed (True) or the deadline passes (False)."""
    written = 0
    while sel.get_map():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        for key, _ in sel.select(remaining):
            fileobj: IO[bytes] = key.fileobj  # type: ignore[assignment]
            fd = key.fd
            if fd in captures:
                data = os.read(fd, _READ_CHUNK)
                if data:
                    captures[fd].feed(data)
                    continue
            else:
                assert stdin_data is not None
                try:
                    written += os.write(fd, stdin_data[written : written + _PIPE_BUF])
                except BrokenPipeError:
                    written = len(stdin_data)
                if written < len(stdin_data):
                    continue
            sel.unregister(fileobj)
            fileobj.close()
    return True


def kill_process_group(proc: subprocess.Popen[Any], grace: float = KILL_GRACE_SECS) -> None:
    """Kill a process started with `start_new_session=True` and everything in its group: TERM, then KILL."""
    pgid = proc.pid  # a session leader's process group id is its pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        proc.poll()
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader, or its zombie keeps the group alive
        if proc.returncode is not None and not _group_alive(pgid):
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
        log.warning("shell.sigkill", pgid=pgid, grace=grace)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:  # pragma: no cover - a SIGKILLed process that does not die is a kernel matter
        log.error("shell.unkillable", pid=proc.pid)


def _group_alive(pgid: int) -> bool:
    """Whether anything in the group still runs; zombies do not count (a slow-reaping init keeps them for long)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):  # PermissionError: the id now names someone else's group
        return False
    import psutil  # portable process table (Linux /proc, macOS, BSD); imported only when a command is killed

    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return True
        except (OSError, psutil.Error):
            continue  # gone meanwhile, or not ours to inspect
    return False


def _communicate(
    proc: subprocess.Popen[bytes], stdin_data: memoryview | None, deadline: float, out_cap: _Capture, err_cap: _Capture
) -> tuple[bool, int | None]:
    """Exchange data with the process until it ends or the deadline passes: (timed_out, exit code or None)."""
    assert proc.stdout is not None and proc.stderr is not None
    captures = {proc.stdout.fileno(): out_cap, proc.stderr.fileno(): err_cap}
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        if proc.stdin is not None:
            if stdin_data:
                sel.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        try:
            try:
                if _pump(sel, captures, stdin_data, deadline):
                    return False, proc.wait(timeout=max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                pass
            exit_code = proc.poll()  # the shell may have exited while a background child held the pipes
            kill_process_group(proc, KILL_GRACE_SECS)
            if proc.stdin is not None and not proc.stdin.closed:
                sel.unregister(proc.stdin)
                proc.stdin.close()
            # What the group wrote before dying is still in the pipes; a process that escaped the group
            # may hold them open, so this drain is bounded too.
            _pump(sel, captures, None, time.monotonic() + KILL_GRACE_SECS)
            return True, exit_code
        finally:
            for key in list(sel.get_map().values()):
                sel.unregister(key.fileobj)
                key.fileobj.close()  # type: ignore[union-attr]


def _stderr_tail(stderr: str) -> str:
    lines = stderr.rstrip().splitlines()[-_STDERR_TAIL_LINES:]
    return "\n".join(lines) if lines else "(stderr empty)"


@default_registry.action("shell", side_effects=True, shell_fields=("command",), stdin_field="stdin")
def run_shell(args: ShellArgs, ctx: ActionContext) -> ActionResult:
    """Run a shell command with a minimal environment, a hard timeout and bounded, non-deadlocking capture."""
    cwd = _resolve_cwd(args.cwd)
    env = _child_env(args.env)
    # A variable named in `env` is passed because the command needs it: its value is a secret to everything recorded.
    ctx.secrets.update(passed_secrets(args.env, env))
    stdin_data = memoryview(args.stdin.encode("utf-8")) if args.stdin is not None else None
    started = time.monotonic()
    deadline = started + args.timeout_secs
    try:
        proc = subprocess.Popen(
            [_SHELL, "-c", args.command],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise ActionError("shell", f"could not start {_SHELL}: {exc}") from exc
    log.debug("shell.start", pid=proc.pid, state=ctx.state, tick=ctx.tick, cwd=cwd, env_names=sorted(env))

    out_cap, err_cap = _Capture(args.max_output_chars), _Capture(args.max_output_chars)
    try:
        timed_out, exit_code = _communicate(proc, stdin_data, deadline, out_cap, err_cap)
    except BaseException:
        kill_process_group(proc, KILL_GRACE_SECS)  # interrupted: never leave the command running behind us
        raise
    if timed_out:
        log.info("shell.timeout", pid=proc.pid, timeout_secs=args.timeout_secs)

    duration_ms = int((time.monotonic() - started) * 1000)
    stdout, out_cut = out_cap.result()
    stderr, err_cut = err_cap.result()
    outputs = {
        "exit_code": exit_code,
        "stdout": stdout,
        "stderr": stderr,
        "timed_out": timed_out,
        "duration_ms": duration_ms,
        "truncated": out_cut or err_cut,
    }
    status = "timeout" if timed_out else "ok" if exit_code == args.expected_exit_code else "failed"
    log.debug("shell.done", pid=proc.pid, status=status, exit_code=exit_code, duration_ms=duration_ms)
    if args.check and status != "ok":
        if timed_out:
            problem = f"timed out after {args.timeout_secs:g}s"
            if exit_code is not None:
                problem += f" (the shell had exited with {exit_code}, but a background process kept its output open)"
        else:
            problem = f"exit code {exit_code}, expected {args.expected_exit_code}"
        raise ActionError("shell", f"{problem}; last lines of stderr:\n{_stderr_tail(stderr)}")
    return ActionResult(outputs=outputs, status=status)


async def arun_shell(args: ShellArgs, ctx: ActionContext) -> ActionResult:
    """`run_shell` for asyncio callers: the blocking wait happens in a worker thread, not on the loop."""
    return await asyncio.to_thread(run_shell, args, ctx)
