"""Rule policy: ordered rules (state pattern + guards over the belief) each naming a trigger."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..engine.compiler import BoundGuard
from ..engine.registry import Registry, default_registry, unknown_args
from ..engine.spec import RuleSpec
from ..errors import Problem, WorkflowError
from ..yaml_source import Loc, Located, load_yaml_file
from .base import Decision, DecisionContext


@dataclass(slots=True)
class _Rule:
    index: int
    pattern: re.Pattern[str]
    guards: tuple[BoundGuard, ...]
    trigger: str
    args: dict[str, Any]


class RulePolicy:
    """First matching rule whose trigger is available wins; rules matching a state are cached per state."""

    def __init__(
        self,
        rules: list[RuleSpec],
        registry: Registry | None = None,
        *,
        source: Located | None = None,
        loc: tuple[int | str, ...] = (),
    ):
        registry = registry or default_registry
        problems: list[Problem] = []
        self._rules: list[_Rule] = []
        for i, rule in enumerate(rules):
            guards = []
            for negate, calls, key in ((False, rule.when, "when"), (True, rule.unless, "unless")):
                for j, call in enumerate(calls):
                    definition = registry.find_guard(call.name)
                    where = (*loc, i, key, j)
                    if definition is None:
                        problems.append(
                            _problem(
                                source,
                                where,
                                f"rule {i + 1}: unknown guard '{call.name}'; known guards: "
                                f"{', '.join(registry.guard_names())}",
                            )
                        )
                        continue
                    unknown = unknown_args(definition.args_model, call.args)
                    if unknown:
                        problems.append(
                            _problem(
                                source,
                                where,
                                f"rule {i + 1}: guard '{call.name}' has no argument '{unknown[0]}'; "
                                f"it takes: {', '.join(definition.args_model.model_fields) or 'none'}",
                            )
                        )
                        continue
                    try:
                        args = definition.args_model.model_validate(call.args)
                    except ValidationError as exc:
                        first = exc.errors()[0]
                        problems.append(
                            _problem(
                                source,
                                where,
                                f"rule {i + 1}: guard '{call.name}': "
                                f"{'.'.join(map(str, first['loc']))}: {first['msg']}",
                            )
                        )
                        continue
                    guards.append(BoundGuard(call.name, definition.fn, args, negate))
            pattern = re.compile(fnmatch.translate(rule.state))
            self._rules.append(_Rule(i, pattern, tuple(guards), rule.trigger, dict(rule.args)))
        if problems:
            raise WorkflowError(problems)
        self._by_state: dict[str, tuple[_Rule, ...]] = {}

    @property
    def triggers(self) -> set[str]:
        return {r.trigger for r in self._rules}

    def _for_state(self, state: str) -> tuple[_Rule, ...]:
        rules = self._by_state.get(state)
        if rules is None:
            rules = tuple(r for r in self._rules if r.pattern.match(state))
            self._by_state[state] = rules
        return rules

    def decide(self, ctx: DecisionContext) -> Decision | None:
        view = ctx.view
        for rule in self._for_state(ctx.state):
            for g in rule.guards:
                if bool(g.fn(view, g.args)) is g.negate:
                    break
            else:
                if ctx.option(rule.trigger) is not None:
                    return Decision(rule.trigger, dict(rule.args), decided_by="rule", reason=f"rule {rule.index + 1}")
        return None

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        return self.decide(ctx)

    @classmethod
    def from_file(cls, path: str | Path, registry: Registry | None = None) -> RulePolicy:
        """Rules from a YAML file holding `rules: [...]` (or a bare list)."""
        located = load_yaml_file(path)
        data = located.data
        loc: Loc = ()
        if isinstance(data, dict) and "rules" in data:
            data, loc = data["rules"], ("rules",)
        try:
            rules = TypeAdapter(list[RuleSpec]).validate_python(data)
        except ValidationError as exc:
            raise WorkflowError([_problem(located, (*loc, *e["loc"]), e["msg"]) for e in exc.errors()]) from None
        return cls(rules, registry, source=located, loc=loc)


def _problem(source: Located | None, loc: Loc, message: str) -> Problem:
    return source.problem(loc, message) if source else Problem("<rules>", 1, message)
