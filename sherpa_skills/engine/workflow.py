"""Load a workflow file: YAML → spec → compiled machine and policy, every problem reported as FILE:LINE."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..data import data_dir
from ..errors import Problem, UsageError, WorkflowError
from ..llm.call import MODEL_ENV
from ..policy.base import ChainPolicy, NoPolicy, Policy
from ..yaml_source import Located, load_yaml_file, load_yaml_text
from .compiler import CompiledMachine, compile_machine
from .hooks import HookMaker, HookRequest, RunHook
from .registry import Registry, default_registry, load_builtins
from .spec import ContextRef, WorkflowSpec
from .transitions_form import normalise

if TYPE_CHECKING:
    # For the type of `learn=` only: the engine never imports the skill store at run time (tests/test_layout.py).
    from .. import Learner
    from ..skills.api import SkillStore
    from .agent import Agent
    from .runstore import RunStore


@dataclass
class Workflow:
    """A loaded, checked workflow: everything needed to build agents for it."""

    spec: WorkflowSpec
    machine: CompiledMachine
    policy: Policy
    path: Path | None
    registry: Registry
    #: What makes each agent's hooks (what a run learns with, domains): given by the loader that knows them.
    hook_makers: tuple[HookMaker, ...] = ()

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    @property
    def uses_llm(self) -> bool:
        """Whether runs may call a model: an LLM or chain policy, or an `llm` action anywhere in the machine."""
        return self.spec.policy.type in ("llm", "chain") or '"name":"llm"' in self.spec.model_dump_json()

    def warm_up(self, model: str | None = None) -> bool:
        """Start importing litellm in the background when runs will need it (a real model); True if started."""
        from ..llm.call import warm_up

        return self.uses_llm and warm_up(model or self.spec.llm.model or os.environ.get(MODEL_ENV))

    def agent(
        self, *, learn: bool | SkillStore | Learner | None = None, hooks: Sequence[RunHook] = (), **kwargs: Any
    ) -> Agent:
        """An Agent for this workflow; any Agent keyword (policy, store, model, home…) overrides the workflow's.

        Its hooks are `hooks` and those the workflow was loaded with (`sherpa_skills.load_workflow` gives the
        library's: what a run learns with, and domains). With `learn=True` (the default when the workflow's policy says
        `learn: true`), or what to learn with (`SkillStore(home)`, a `Learner`), it replays the procedure the task
        matches and captures the run when it succeeds; `learn=False` never does. Anything else is refused (UsageError).
        """
        from .agent import Agent

        made = self._hooks(learn, kwargs)
        return Agent(self.machine, kwargs.pop("policy", self.policy), hooks=[*made, *hooks], **self._defaults(kwargs))

    def resume(
        self,
        store: RunStore,
        run_id: str,
        *,
        learn: bool | SkillStore | Learner | None = None,
        hooks: Sequence[RunHook] = (),
        **kwargs: Any,
    ) -> Agent:
        """The agent that continues run `run_id` of this workflow, with its workflow's hooks given back: one that learns
        replays from where it was and is captured when it succeeds, whichever process started it. Keywords as `agent`,
        plus `rerun_interrupted` (see `Agent.resume`)."""
        from .agent import Agent

        kwargs["store"] = store
        made = self._hooks(learn, kwargs)
        kwargs.pop("store")
        policy = kwargs.pop("policy", self.policy)
        kwargs = self._defaults(kwargs, path=False)  # the run keeps the workflow path it was started with
        return Agent.resume(store, run_id, self.machine, policy, hooks=[*made, *hooks], **kwargs)

    def _defaults(self, kwargs: dict[str, Any], *, path: bool = True) -> dict[str, Any]:
        kwargs.setdefault("base_dir", self.base_dir)
        if path:
            kwargs.setdefault("workflow_path", str(self.path) if self.path else None)
        kwargs.setdefault("registry", self.registry)
        return kwargs

    def _hooks(self, learn: bool | SkillStore | Learner | None, kwargs: dict[str, Any]) -> list[RunHook]:
        """The hooks the workflow's makers give this agent; a hook to learn with, asked for and not made, is
        refused, not silently dropped."""
        if learn is None:
            learn = bool(self.spec.policy.learn)
        store = kwargs.get("store")
        home = kwargs.get("home") or (store.path.parent if store is not None and hasattr(store, "path") else None)
        request = HookRequest(self, learn, store, Path(home) if home is not None else None)
        made = [hook for make in self.hook_makers if (hook := make(request)) is not None]
        if learn is not False and not any(h.learns for h in made):
            raise UsageError(
                f"workflow '{self.spec.name}' was asked to learn, but it was loaded without the hook that learns: "
                "load it with sherpa_skills.load_workflow (which gives it), or pass learn=False"
            )
        return made


def _set_aside(data: Any, exc: ValidationError) -> Any | None:
    """A copy of `data` without the keys `exc` finds wrong (unknown, or an optional value of the wrong type, which
    falls back to its default), so the rest can still be checked; None when a problem sits inside a list (removing an
    item would shift the lines of the ones after it)."""
    import copy

    data = copy.deepcopy(data)
    for err in exc.errors():
        parent: dict[str, Any] | None = None
        key: Any = None
        node = data
        for part in err["loc"]:
            if isinstance(node, list):
                return None
            if not isinstance(node, dict) or part not in node:
                break  # a name pydantic adds (a union member's type): the key above holds the problem
            parent, key, node = node, part, node[part]
        if parent is None:
            return None
        parent.pop(key, None)
    return data


def _pydantic_problems(exc: ValidationError, source: Located) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden":
            message = f"unknown key '{loc[-1]}'"
        elif err["type"] == "missing":
            message = f"missing required key '{loc[-1]}'"
        else:
            where = ".".join(str(x) for x in loc)
            message = f"{where}: {err['msg']}" if where else err["msg"]
        problems.append(source.problem(loc, message))
    return problems


def _import_modules(spec: WorkflowSpec, source: Located, base_dir: Path) -> list[Problem]:
    import sys

    problems = []
    for i, module in enumerate(spec.imports):
        added = str(base_dir) not in sys.path
        if added:
            sys.path.insert(0, str(base_dir))
        try:
            importlib.import_module(module)
        except Exception as exc:
            problems.append(source.problem(("imports", i), f"cannot import '{module}': {type(exc).__name__}: {exc}"))
        finally:
            if added:
                sys.path.remove(str(base_dir))
    return problems


def build_policy(
    spec: WorkflowSpec, registry: Registry, source: Located, base_dir: Path, machine: CompiledMachine
) -> tuple[Policy, list[Problem]]:
    from ..policy.rule import RulePolicy

    pspec = spec.policy
    problems: list[Problem] = []
    rule_policy: RulePolicy | None = None
    if pspec.type in ("rule", "chain"):
        if pspec.rules is None:
            return NoPolicy(), [
                source.problem(("policy",), f"policy type '{pspec.type}' needs 'rules' (a list, or a rules file)")
            ]
        try:
            if isinstance(pspec.rules, str):
                path = _rules_path(pspec.rules, base_dir)
                if path is None:
                    return NoPolicy(), [
                        source.problem(
                            ("policy", "rules"),
                            f"rules file '{pspec.rules}' is outside the workflow's folder "
                            "and the shipped policies/; name a file beside the workflow",
                        )
                    ]
                if not path.is_file():
                    return NoPolicy(), [
                        source.problem(
                            ("policy", "rules"),
                            f"rules file '{pspec.rules}' not found beside the workflow or in the shipped policies/",
                        )
                    ]
                rule_policy = RulePolicy.from_file(path, registry)
            else:
                rule_policy = RulePolicy(pspec.rules, registry, source=source, loc=("policy", "rules"))
        except WorkflowError as exc:
            return NoPolicy(), exc.problems
        declared: dict[str, set[str]] = {}
        for edges in machine.edges:
            for e in edges:
                declared.setdefault(e.trigger, set()).update(e.arguments)
        for i, rule in enumerate(pspec.rules if isinstance(pspec.rules, list) else []):
            if rule.trigger not in declared:
                problems.append(
                    source.problem(
                        ("policy", "rules", i, "trigger"),
                        f"rule {i + 1} names trigger '{rule.trigger}', which no transition has",
                    )
                )
            elif undeclared := sorted(set(rule.args) - declared[rule.trigger]):
                problems.append(
                    source.problem(
                        ("policy", "rules", i, "args"),
                        f"rule {i + 1} gives '{rule.trigger}' undeclared argument(s) "
                        f"{', '.join(undeclared)}; it declares: {', '.join(sorted(declared[rule.trigger])) or 'none'}",
                    )
                )
    llm_policy = None
    if pspec.type in ("llm", "chain"):
        from ..policy.llm import LLMPolicy

        llm = spec.llm
        # No model pinned on the policy: it asks the run's model (--model, else llm.model, else the environment).
        llm_policy = LLMPolicy(
            None,
            prompt=pspec.prompt,
            max_retries=pspec.max_retries,
            recent=pspec.recent,
            temperature=llm.temperature,
            max_tokens=llm.max_tokens.from_context if isinstance(llm.max_tokens, ContextRef) else llm.max_tokens,
            structured_output=llm.structured_output,
            base_dir=base_dir,
            relevant_options=pspec.relevant_options,
            task_key=pspec.task_key,
            retries=llm.retries,
            retry_max_wait=llm.retry_max_wait,
        )
    if pspec.learn and pspec.type not in ("llm", "chain"):
        problems.append(
            source.problem(
                ("policy", "learn"),
                f"policy 'learn: true' needs an LLM to hand over to when a replay "
                f"diverges; use type chain (or llm), not '{pspec.type}'",
            )
        )
    if pspec.type == "rule":
        return rule_policy or NoPolicy(), problems
    if pspec.type == "llm":
        return llm_policy, problems  # type: ignore[return-value]
    if pspec.type == "chain":
        return ChainPolicy(rule_policy, llm_policy), problems  # type: ignore[arg-type]
    return NoPolicy(), problems


def _rules_path(name: str, base_dir: Path) -> Path | None:
    """The rules file beside the workflow (or below its folder), else the shipped one;
    None when `name` points elsewhere."""
    for folder in (base_dir, data_dir("policies")):
        folder = folder.resolve()
        path = (folder / name).resolve()
        if not path.is_relative_to(folder):
            return None
        if path.is_file():
            return path
    return base_dir / name


def load_workflow_source(
    source: Located,
    *,
    registry: Registry | None = None,
    path: Path | None = None,
    hooks: Sequence[HookMaker] = (),
) -> Workflow:
    load_builtins()
    registry = registry or default_registry.child()
    if not isinstance(source.data, dict):
        raise WorkflowError([source.problem((), "a workflow must be a mapping with name, initial and states")])
    source, problems = normalise(source)
    try:
        spec = WorkflowSpec.model_validate(source.data)
    except ValidationError as exc:
        # Problems of the schema are reported and their keys set aside, so the graph and the calls are still checked in
        # the same pass; when that is not possible (or not enough: a required key is wrong),
        # the schema problems stand alone.
        problems += _pydantic_problems(exc, source)
        stripped = _set_aside(source.data, exc)
        if stripped is None:
            raise WorkflowError(problems) from None
        try:
            spec = WorkflowSpec.model_validate(stripped)
        except ValidationError:
            raise WorkflowError(problems) from None
    base_dir = path.parent if path else Path.cwd()
    problems += _import_modules(spec, source, base_dir)
    machine, compile_problems = compile_machine(spec, registry, source, source.file)
    problems += compile_problems
    if machine is None:
        raise WorkflowError(_in_order(problems))
    policy, policy_problems = build_policy(spec, registry, source, base_dir, machine)
    problems += policy_problems
    if problems:
        raise WorkflowError(_in_order(problems))
    return Workflow(spec, machine, policy, path, registry, tuple(hooks))


def _in_order(problems: list[Problem]) -> list[Problem]:
    """Top to bottom, as a reader goes through the file; a stable sort keeps each line's problems in the order found."""
    return sorted(problems, key=lambda p: (p.file, p.line))


def load_workflow(path: str | Path, *, registry: Registry | None = None, hooks: Sequence[HookMaker] = ()) -> Workflow:
    """Load and check a workflow file; raises WorkflowError listing every problem found. The engine's loader gives
    its agents only the hooks made by `hooks`; `sherpa_skills.load_workflow` gives the library's."""
    path = Path(path).resolve()
    return load_workflow_source(load_yaml_file(path), registry=registry, path=path, hooks=hooks)


def load_workflow_text(
    text: str,
    *,
    name: str = "<workflow>",
    registry: Registry | None = None,
    base_dir: Path | None = None,
    hooks: Sequence[HookMaker] = (),
) -> Workflow:
    """Load a workflow from YAML text (tests, embedding); relative files resolve against `base_dir`."""
    path = (base_dir / "<inline>.yaml") if base_dir else None
    return load_workflow_source(load_yaml_text(text, name), registry=registry, path=path, hooks=hooks)
