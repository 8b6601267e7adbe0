"""Shared pieces of replay and capture: the store for a home, rendering steps safely, running one step."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...engine.shell_template import render_shell
from ...errors import UsageError
from ...home import per_home
from ..store.database import ProcedureDatabase
from ..store.models import ProcedureStep
from ..store.params import PARAMETER

if TYPE_CHECKING:
    from ..match.failures import FailureFinder
    from ..match.matcher import Matcher


def _open_store(home: Path) -> ProcedureDatabase:
    return ProcedureDatabase(home=home)  # or the PostgreSQL database in force


def skill_store(home: Path | None) -> ProcedureDatabase:
    """One store connection per home and thread, reused across actions."""
    return per_home(_open_store, home)


def _new_matcher(home: Path) -> Matcher:
    from ..match.matcher import Matcher

    return Matcher(skill_store(home))


def skill_matcher(home: Path | None) -> Matcher:
    """One Matcher per store and thread, so its index (vectors, key terms) and embedder outlive a single replay."""
    return per_home(_new_matcher, home)


def _new_finder(home: Path) -> FailureFinder:
    from ..match.failures import FailureFinder

    return FailureFinder(skill_store(home))


def failure_finder(home: Path | None) -> FailureFinder:
    """One FailureFinder per store and thread (its companion opened once): planning asks on every plan."""
    return per_home(_new_finder, home)


_WHOLE_RAW = re.compile(r"\A\{% raw %\}(?:(?!\{% endraw %\}).)*\{% endraw %\}\Z", re.DOTALL)


def as_template(command: str) -> str:
    """Only the documented `{{ name }}` form is a parameter: any other brace text in a step (`${#arr[@]}`, `{#`,
    `awk '{{print}}'`, `{{ .Name }}`) is bash and stays literal, so the text between parameters goes in raw blocks."""
    if _WHOLE_RAW.match(command):
        return command  # a captured command already kept literal whole
    parts, last = [], 0
    for m in PARAMETER.finditer(command):
        parts += [_raw(command[last : m.start()]), "{{ " + m.group(1) + " }}"]
        last = m.end()
    parts.append(_raw(command[last:]))
    return "".join(parts)


def _raw(text: str) -> str:
    if not any(x in text for x in ("{", "}", "%", "#")):
        return text
    # `{% endraw %}` inside the text would close the block early: split it where it starts.
    return "".join(
        "{% raw %}" + piece + "{% endraw %}" for piece in text.replace("{% endraw", "{%\x00 endraw").split("\x00")
    )


def render_command(command: str, params: dict[str, Any]) -> str:
    """Render `{{ name }}` in a sandbox; each value is escaped for the quotes around it,
    so a parameter can never add a command."""
    if "{" not in command:
        return command  # nothing to render: skip compiling a template for every plain step
    from jinja2 import TemplateError, UndefinedError

    try:
        return render_shell(as_template(command), params)
    except UndefinedError as exc:
        names = ", ".join(sorted(set(PARAMETER.findall(command))))
        raise UsageError(
            f"{exc.message}: this step needs parameters {names}; pass them with --param NAME=VALUE"
        ) from None
    except TemplateError as exc:
        raise UsageError(f"step '{command}' is not a valid template: {exc}") from None
    except UsageError as exc:
        raise UsageError(f"step '{command}': {exc}") from None


def parameter_names(steps: list[ProcedureStep]) -> list[str]:
    return sorted({n for s in steps if not _WHOLE_RAW.match(s.command) for n in PARAMETER.findall(s.command)})


@dataclass
class StepOutcome:
    index: int
    command: str
    exit_code: int | None
    passed: bool
    reason: str | None
    stdout: str
    stderr: str
    duration_ms: float
    timed_out: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "command": self.command,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "reason": self.reason,
            "stdout_tail": self.stdout[-500:],
            "stderr_tail": self.stderr[-500:],
            "duration_ms": self.duration_ms,
            "timed_out": self.timed_out,
        }


def run_in_session(
    session: Any, step: ProcedureStep, command: str, index: int, secrets: set[str] | None = None
) -> StepOutcome:
    """Run one rendered step in the replay's shell session (its `cd` and `export` hold for later steps) and validate it.

    The values of the variables the step passes on are added to `secrets` (the replaying agent's), never recorded.
    """
    from ...actions.shell import passed_secrets

    if secrets is not None:
        secrets.update(passed_secrets(step.env_vars))
    out = session.run(command, step.timeout_secs, 20_000, cwd=step.cwd)
    result = {
        "exit_code": out.exit_code,
        "stdout": out.stdout,
        "stderr": out.stderr,
        "timed_out": out.timed_out,
        "duration_ms": out.duration_ms,
    }
    return _validated(step, command, index, result)


def _validated(step: ProcedureStep, command: str, index: int, out: dict[str, Any]) -> StepOutcome:
    reason = None
    if out["timed_out"]:
        reason = f"timed out after {step.timeout_secs:g} s"
    elif out["exit_code"] != step.expected_exit_code:
        reason = f"exit code {out['exit_code']}, expected {step.expected_exit_code}"
    elif step.expected_output_pattern and not re.search(
        step.expected_output_pattern, out["stdout"] + out["stderr"], re.MULTILINE
    ):
        reason = f"output does not match /{step.expected_output_pattern}/"
    return StepOutcome(
        index,
        command,
        out["exit_code"],
        reason is None,
        reason,
        out["stdout"],
        out["stderr"],
        out["duration_ms"],
        out["timed_out"],
    )


def run_step(
    step: ProcedureStep, command: str, index: int, cwd: str | None = None, secrets: set[str] | None = None
) -> StepOutcome:
    """Run one rendered step in its own process group and validate it against what was recorded.

    The values of the variables the step passes on are added to `secrets` (the replaying agent's), never recorded.
    """
    from ...actions.shell import ShellArgs, run_shell
    from ...engine.registry import ActionContext

    args = ShellArgs(
        command=command, cwd=step.cwd or cwd, timeout_secs=step.timeout_secs, env=step.env_vars, max_output_chars=20_000
    )
    out = run_shell(
        args, ActionContext(view=None, state="replay", tick=index, secrets=secrets if secrets is not None else set())
    ).outputs
    return _validated(step, command, index, out)
