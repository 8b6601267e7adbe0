"""Workflows as the library runs them: loaded with the hooks it ships — learning (`policy: {learn: true}`, or
`workflow.agent(learn=...)`) and domains (`domain:`). The CLI, teams and `sherpa_skills.load_workflow` load through
here; the engine's own loader (`engine.workflow`) gives its agents no hooks but those it is handed."""

from __future__ import annotations

from pathlib import Path

from .actions.domain import domain_hook
from .engine.hooks import HookMaker
from .engine.registry import Registry
from .engine.workflow import Workflow
from .engine.workflow import load_workflow as _load_workflow
from .engine.workflow import load_workflow_text as _load_workflow_text
from .skills.capture.learning import learning_hook

#: Every agent of a workflow loaded here is given what these make: the domain's hook when it declares one, the
#: learning hook when it learns.
SHIPPED_HOOKS: tuple[HookMaker, ...] = (domain_hook, learning_hook)


def load_workflow(path: str | Path, *, registry: Registry | None = None) -> Workflow:
    """Load and check a workflow file (WorkflowError lists every problem found); its agents learn and keep their
    domain as the file says."""
    return _load_workflow(path, registry=registry, hooks=SHIPPED_HOOKS)


def load_workflow_text(
    text: str, *, name: str = "<workflow>", registry: Registry | None = None, base_dir: Path | None = None
) -> Workflow:
    """Load a workflow from YAML text (tests, embedding), with the library's hooks; relative files resolve against
    `base_dir`."""
    return _load_workflow_text(text, name=name, registry=registry, base_dir=base_dir, hooks=SHIPPED_HOOKS)
