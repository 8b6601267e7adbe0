"""The error tree: one root, branched by phase (load, run) and by who must act.

SherpaError
├── WorkflowError          a workflow file is wrong; carries every problem, each FILE:LINE: message
├── UsageError             the library was called the wrong way (a developer's mistake)
│   └── RefusedError       a resume the run cannot take now (unknown trigger, ...): refused, nothing recorded
├── RegistryError          an unknown or duplicate action / guard name
├── RunError               a failure during a run
│   ├── ActionError        an action failed or timed out
│   ├── PolicyError        no valid decision could be had (garbage LLM answers, no rule, ...)
│   ├── NoTransitionError  nothing can leave a state that is neither final nor waiting
│   └── ReadOnlyBeliefError  a policy or guard tried to write belief
├── StoreError             the run store cannot do what was asked (unknown run id, ...)
│   ├── StoreFileError     the home or its store.db cannot be used (a file, not SQLite, not writable)
│   ├── ConnectionLost     the database connection dropped mid-statement (reconnected; what was sent may or may not
│   │                      have landed: the store decides whether to write again)
│   └── ClaimLost          the run was claimed by another process while the connection was down: it stops here
├── ModelError             the LLM call itself failed (provider, network, scripted model without answer)
└── ModelFileError         a bundled model file is not the one pinned (tampered, truncated, replaced): not run
"""

from __future__ import annotations

from dataclasses import dataclass


class SherpaError(Exception):
    """Root of every error sherpa-skills raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a workflow file, located as precisely as the YAML allows."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class WorkflowError(SherpaError):
    """A workflow could not be loaded; all problems are reported at once."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class UsageError(SherpaError):
    """The library or CLI was used the wrong way; the message says the fix."""


class RefusedError(UsageError):
    """A resume asked for what the run cannot do now (a trigger not available,
    arguments it does not take): nothing is recorded."""


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGTERM) raised where Ctrl-C raises KeyboardInterrupt, so both stop a run the same clean way."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signum)


class RegistryError(SherpaError):
    """An action or guard name is unknown or registered twice."""


class RunError(SherpaError):
    """A failure during a run; the run is recorded with status ``error``."""


class ActionError(RunError):
    def __init__(self, action: str, message: str):
        self.action = action
        super().__init__(f"action '{action}': {message}")


class PolicyError(RunError):
    """The policy could not produce a valid decision."""


class NoTransitionError(RunError):
    """A non-final, non-waiting state has no available transition."""


class ReadOnlyBeliefError(RunError):
    """Policies and guards read belief; only actions (through their results) change it."""


class StoreError(SherpaError):
    """The run store cannot do what was asked."""


class NoSuchRun(StoreError):
    """A run id (or prefix) names no run, or more than one: the user typed it, so it is bad usage (exit 2)."""


class StoreFileError(StoreError):
    """The state folder or a database in it cannot be opened:
    the user pointed at the wrong place, so it is bad usage."""


class ConnectionLost(StoreError):
    """The connection to the database server dropped while a statement ran; a fresh one already replaces it. Whether
    the statement (a COMMIT above all) landed is unknown: the store checks by the write's own key before writing
    again."""


class ClaimLost(StoreError):
    """Another process claimed a run while this one's connection was down: this one stops, recording nothing more."""


class ModelError(SherpaError):
    """The LLM call failed (provider error, or the scripted model had no answer)."""

    requests: int = 0  # requests that reached the provider before the failure, so callers count them


class ModelFileError(SherpaError):
    """A model file on disk is not the one sherpa-skills pins by sha256; it is refused, never run."""
