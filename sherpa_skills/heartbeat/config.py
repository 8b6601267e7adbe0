"""The home's config.yaml: which session folders to watch, how long to keep history, mining thresholds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import WorkflowError
from ..yaml_source import load_yaml_file


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WatchedPath(_Strict):
    """A session log file or folder the heartbeat imports from."""

    path: str = Field(description="a file or folder; `~` expands")
    format: str = Field(default="auto", description="auto, claude-code, codex, bash-history, zsh-history or asciinema")


class SessionsConfig(_Strict):
    watch: list[WatchedPath] = Field(default_factory=list, description="what each heartbeat imports sessions from")


class MiningConfig(_Strict):
    gap_secs: float = Field(default=900.0, description="a pause longer than this ends a run of commands")
    min_steps: int = Field(default=2, ge=1, description="the fewest commands a routine has")
    max_steps: int = Field(default=8, ge=2, description="the most commands a routine has")
    min_support: int = Field(default=2, ge=2, description="separate sessions or days a routine must recur in")
    history: int = Field(default=50_000, ge=1, description="how many recent commands routines are looked for in")

    @model_validator(mode="before")
    @classmethod
    def _no_auto_promotion(cls, data: Any) -> Any:
        if isinstance(data, dict) and "promote_after" in data:  # said plainly, not as "extra inputs not permitted"
            raise ValueError(
                "promote_after is gone: what session logs show is a claim, never evidence, so mined candidates wait "
                "for a person's `learn promote ID`; remove the key"
            )
        return data


class RetentionConfig(_Strict):
    executions_days: float = Field(default=90.0, description="procedure executions older than this are deleted")
    keep_executions_per_procedure: int = Field(
        default=50, description="the newest executions of each procedure kept whatever their age"
    )
    runs_days: float = Field(
        default=30.0, description="finished runs older than this are deleted (not those something refers to)"
    )


class HeartbeatConfig(_Strict):
    lock_stale_secs: float = Field(default=600.0, description="a heartbeat lock older than this is taken over")
    health_window: int = Field(default=10, description="how many recent executions a procedure's health looks at")


class HomeConfig(_Strict):
    """HOME/config.yaml: every key is optional."""

    sessions: SessionsConfig = Field(default_factory=SessionsConfig, description="session logs to import")
    mining: MiningConfig = Field(default_factory=MiningConfig, description="finding routines in imported sessions")
    retention: RetentionConfig = Field(default_factory=RetentionConfig, description="how long history is kept")
    heartbeat: HeartbeatConfig = Field(default_factory=HeartbeatConfig, description="the heartbeat's own settings")


def load_config(home: Path) -> HomeConfig:
    """HOME/config.yaml, or the defaults when there is none; a bad file is a FILE:LINE error."""
    path = home / "config.yaml"
    if not path.exists():
        return HomeConfig()
    located = load_yaml_file(path)
    try:
        return HomeConfig.model_validate(located.data or {})
    except ValidationError as exc:
        raise WorkflowError(
            [located.problem(tuple(e["loc"]), f"{'.'.join(map(str, e['loc']))}: {e['msg']}") for e in exc.errors()]
        ) from None
