"""The records mining reads and the summaries scripts read: pydantic models at the store's boundary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Outcome = Literal["success", "failure", "rejected", "unknown"]


class SessionCommand(BaseModel):
    """One imported command. `id` only grows (the table is AUTOINCREMENT): mining's watermark."""

    id: int
    source: str = Field(description="format of the log: claude-code, codex, bash-history, zsh-history, asciinema")
    source_file: str
    session_id: str
    seq: int = Field(description="1, 2, ... within the session, in import order")
    timestamp: float | None = None
    cwd: str | None = None
    command: str
    outcome: Outcome
    exit_code: int | None = None
    output: str | None = Field(default=None, description="redacted start of the output, at most ~2000 characters")
    duration: float | None = None
    tool: str | None = None
    agent: str | None = Field(
        default=None, description="sub-agent id (or sidechain thread) that ran it; None for the main agent"
    )
    sidechain: bool = False
    description: str | None = Field(default=None, description="what the agent said the command was for (Claude Code)")
    line: int | None = None
    call_id: str = Field(description="the log's own id for the call (tool_use id, call_id) or a history entry key")
    info: dict[str, Any] = Field(default_factory=dict)
    imported: float


class FileResult(BaseModel):
    """What one import did with one file."""

    path: str
    format: str | None = None
    status: Literal["imported", "unchanged", "reset", "unreadable", "unrecognised"] = "imported"
    commands: int = 0
    succeeded: int = 0
    failed: int = 0
    rejected: int = 0
    unknown: int = 0
    sessions: int = 0
    lines_read: int = 0
    skipped_lines: int = 0
    dropped: dict[str, int] = Field(default_factory=dict, description="read but not kept as commands, by reason")
    bytes_read: int = 0
    error: str | None = None


class ImportSummary(BaseModel):
    """The result of `import_paths`; `sessions import --json` prints it. Counts are of what this import added."""

    files: int = Field(0, description="files read (including those with nothing new)")
    sessions: int = Field(0, description="sessions that gained commands")
    commands: int = Field(0, description="commands newly imported")
    succeeded: int = 0
    failed: int = 0
    rejected: int = Field(0, description="refused or interrupted by the user: not failures")
    unknown: int = Field(0, description="no outcome recorded (shell histories, background commands)")
    skipped_lines: int = Field(0, description="malformed lines skipped")
    new_procedures: int = Field(0, description="procedures crystallised from these commands (filled by mining)")
    lines_read: int = 0
    bytes_read: int = 0
    unchanged_files: int = 0
    unreadable_files: int = 0
    unrecognised_files: int = 0
    seconds: float = 0.0
    errors: list[str] = Field(default_factory=list)
    file_results: list[FileResult] = Field(
        default_factory=list, description="files read or found wrong; unchanged files are only counted"
    )


class ImportedFile(BaseModel):
    """A file the store has read, with how far and what it held."""

    path: str
    format: str
    size: int
    mtime: float | None
    offset: int
    lines_read: int
    lines_skipped: int
    commands: int
    succeeded: int
    failed: int
    rejected: int
    unknown: int
    sessions: int
    content_hash: str | None
    first_imported: float | None
    last_imported: float | None
    pending_calls: int = 0
    last_error: str | None = None


class SessionSummary(BaseModel):
    """One session (an agent's conversation, a shell history file): what `sessions list` shows and capture picks by."""

    id: str = Field(description="the session's own id (Claude Code's or Codex's session id, a history's key)")
    agent: str = Field(description="the log's format: claude-code, codex, bash-history, zsh-history, asciinema")
    cwd: str | None = Field(default=None, description="where it ran (the first folder its commands name)")
    started: float | None = None
    ended: float | None = None
    commands: int = 0
    succeeded: int = 0
    failed: int = 0
    rejected: int = 0
    unknown: int = 0
