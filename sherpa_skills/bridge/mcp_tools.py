"""What each MCP tool does, as plain functions over one home and one agent name (the server only registers them).

Every refusal is a `ToolRefused` with a message for the calling agent: the server turns it into a tool error, never a
crash. The server runs them on its few worker threads (`tool_threads`): each thread's `Home` is its own, and
`close()` closes them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import SherpaError
from ..skills.api import SkillStore
from .match_answer import FindAnswer, find_answer
from .tool_threads import ToolThreads

MAX_TASK_CHARS = 4000
MAX_STEPS = 50
#: Characters a parameter value may not hold over MCP: the value is data, and an agent sending these means a command.
_METACHARACTERS = re.compile(r"[;&|`$<>\\\n\r\x00]")


class ToolRefused(Exception):
    """A tool call refused with a message the calling agent can act on."""


def _task(task: str, field: str = "task") -> str:
    if not isinstance(task, str) or not task.strip():
        raise ToolRefused(f"{field} is empty: say what has to be done, in a sentence")
    if len(task) > MAX_TASK_CHARS:
        raise ToolRefused(f"{field} has {len(task):,} characters, over {MAX_TASK_CHARS:,}: say it in a sentence")
    return task.strip()


def _params(params: dict[str, str] | None) -> dict[str, str]:
    for name, value in (params or {}).items():
        bad = _METACHARACTERS.search(str(value))
        if bad:
            raise ToolRefused(
                f"parameter '{name}' holds the shell metacharacter {bad.group(0)!r}: a value is plain data, "
                "never a command; pass the value alone"
            )
    return {k: str(v) for k, v in (params or {}).items()}


@dataclass
class Bridge:
    """The server's home, who it speaks as, and whether it may execute; `threads` run its calls, and `close()` (when
    the server stops) closes every store they opened."""

    home: Path
    agent: str = "mcp"
    allow_execute: bool = False
    threads: ToolThreads = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.threads = ToolThreads(self.home)

    def close(self) -> None:
        self.threads.close()

    def _skills(self) -> SkillStore:
        return self.threads.home_here().skills

    def _procedure(self, store: SkillStore, procedure_id: str) -> Any:
        try:
            return store.get(procedure_id)
        except SherpaError:
            raise ToolRefused(f"unknown procedure '{procedure_id}': find_procedure lists the ones that fit") from None

    # ------------------------------------------------------------------ procedures

    def find_procedure(self, task: str, params: dict[str, str] | None = None) -> FindAnswer:
        task = _task(task)
        store = self._skills()
        return find_answer(store.match(task, params=_params(params), by=f"agent:{self.agent}"), store)

    def confirm_procedure(self, task: str, procedure_id: str | None) -> dict[str, Any]:
        task = _task(task)
        store = self._skills()
        by = f"agent:{self.agent}"
        if procedure_id is None:
            shown = [c.procedure_id for c in self.find_procedure(task).candidates]
            if not shown:
                raise ToolRefused("find_procedure offers nothing for this task: there is nothing to reject")
            answers = store.reject(task, shown, by=by)
            return {"recorded": "rejected", "task": task, "rejected": shown, "ids": [a.id for a in answers]}
        proc = self._procedure(store, procedure_id)
        try:
            alias = store.confirm(task, proc.id, by=by)
        except SherpaError as exc:  # the task's literals disagree with the procedure
            raise ToolRefused(str(exc)) from None
        return {"recorded": "accepted", "task": task, "procedure_id": proc.id, "alias": alias.id}

    def replay_procedure(
        self, procedure_id: str, params: dict[str, str] | None = None, execute: bool = False, task: str | None = None
    ) -> dict[str, Any]:
        if execute and not self.allow_execute:
            raise ToolRefused(
                "executing is off on this server: it was started without --allow-execute (executing asks; an "
                "annotation is only a hint). Ask for a dry run (execute=false) and run the steps yourself, or have "
                "the server started with --allow-execute."
            )
        store = self._skills()
        proc = self._procedure(store, procedure_id)
        given = _params(params)
        declared = set(store.parameters(proc))
        undeclared = sorted(set(given) - declared)
        if undeclared:
            raise ToolRefused(
                f"procedure '{proc.id}' declares no parameter {', '.join(undeclared)}; "
                f"it declares: {', '.join(sorted(declared)) or 'none'}"
            )
        if task is not None:
            task = _task(task)
            # What the task's literals put into a parameter is the agent's data as much as `params` is: checked alike.
            _params({k: v for k, v in store.matcher.params_for(task, proc).items() if k not in given})
            try:  # naming the procedure for a task is confirming it, as `learn replay QUERY --procedure ID` does
                store.confirm(task, proc.id, by=f"agent:{self.agent}")
            except SherpaError as exc:
                raise ToolRefused(str(exc)) from None
        # Without a task nothing is confirmed: a dry run by id writes no alias (its description is no new wording).
        return store.replay(task, procedure_id=proc.id, params=given, execute=execute, by=f"agent:{self.agent}")

    def record_outcome(
        self, procedure_id: str, outcome: Literal["success", "failure"], note: str | None = None
    ) -> dict[str, Any]:
        """The agent's word on how a procedure went when it ran the steps itself: kept as a claim, shown beside the
        counts, never counted — only replays this store executed and validated (replay_procedure with execute) count,
        even once a person promoted the procedure, since nothing here saw what the agent ran."""
        from ..redact import redact

        store = self._skills()
        proc = self._procedure(store, procedure_id)
        if note is not None and len(note) > MAX_TASK_CHARS:
            raise ToolRefused(f"note has {len(note):,} characters, over {MAX_TASK_CHARS:,}")
        after = store.claim(
            proc.id,
            "agent",
            f"agent:{self.agent}",
            successes=int(outcome == "success"),
            failures=int(outcome != "success"),
            note=redact(note) if note else None,
        )
        return {
            "procedure_id": proc.id,
            "recorded": "claim",
            "outcome": outcome,
            "counted": False,
            "confidence": round(after.confidence, 3),
            "health": store.health_of(proc.id).status,
            "claimed": {"successes": after.claimed_successes, "failures": after.claimed_failures},
            "why": "an agent's report is kept and shown, never counted: replay_procedure(execute=true) runs the steps "
            "under this store's checks, and those runs count",
        }

    def capture_procedure(self, task: str, steps: list[str], description: str | None = None) -> dict[str, Any]:
        task = _task(task)
        if not steps or len(steps) > MAX_STEPS:
            raise ToolRefused(f"steps: give 1 to {MAX_STEPS} shell commands, in the order they ran")
        for i, step in enumerate(steps, 1):
            _task(step, f"steps[{i}]")
        store = self._skills()
        try:  # the agent's word that they worked is a claim: the steps wait for a person's review
            result = store.capture(
                _task_type(task),
                list(steps),
                description=description or task,
                tags=[f"agent:{self.agent}"],
                claimed_by=f"agent:{self.agent}",
            )
        except SherpaError as exc:
            raise ToolRefused(f"not captured: {exc}") from None
        if result.outcome in ("rejected", "error") or result.procedure is None:
            raise ToolRefused(f"not captured: {result.reason}")
        proc = result.procedure
        return {
            "outcome": result.outcome,
            "procedure_id": proc.id,
            "status": proc.status,
            "secrets_to_env": result.secrets_to_env,
            "review": "`sherpa-skills learn candidates` lists it; `learn promote ID` makes it replayable"
            if proc.status == "candidate"
            else "the same steps are stored already: your capture is kept as a claim, not counted",
        }

    # ------------------------------------------------------------------ tools, learnings, memory

    def relevant_tools(self, task: str) -> list[dict[str, Any]]:
        from ..engine.registry import registered_tools
        from ..semantic.tool_index import ToolIndex

        return [r.to_dict() for r in ToolIndex(registered_tools()).relevant(_task(task), limit=5)]

    def learnings_for(self, task: str) -> dict[str, Any]:
        return self._skills().failures_for(_task(task), limit=5).model_dump(mode="json")

    def search_memory(self, query: str) -> dict[str, Any]:
        from ..memory import shared_memory

        result = shared_memory(self.home).search(_task(query, "query"), agent=self.agent, limit=10)
        return result.to_dict()

    def write_memory(self, text: str, scope: Literal["private", "shared"] = "private") -> dict[str, Any]:
        from ..memory import shared_memory

        written = shared_memory(self.home).write(_task(text, "text"), agent=self.agent, scope=scope)
        return written.model_dump(mode="json")


def _task_type(task: str) -> str:
    from ..redact import redact

    words = re.findall(r"[a-z0-9]+", redact(task).lower())[:6]  # a token pasted into the task is no name for it
    return "-".join(words) or "agent-task"
