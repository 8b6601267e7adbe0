"""Nested-state semantics of the compiled machine, checked against `transitions`' HierarchicalMachine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from sherpa_skills.engine.agent import Agent
from sherpa_skills.engine.registry import ActionResult, default_registry
from sherpa_skills.engine.workflow import load_workflow_text

# ---------------------------------------------------------------- one machine, described once, built twice

#: States as a tree; every leaf but `done` waits, so each fired trigger is one observable step.
TREE: dict[str, Any] = {
    "idle": {},
    "a": {"initial": "a1", "states": {"a1": {"initial": "x", "states": {"x": {}, "y": {}}}, "a2": {}}},
    "b": {"initial": "b1", "states": {"b1": {"initial": "p", "states": {"p": {}, "q": {}}}, "b2": {}}},
    "done": {},
}

#: (trigger, source, dest, conditions, unless); guards name boolean flags. Declaration order matters.
TRANSITIONS: list[tuple[str, str, str | None, list[str], list[str]]] = [
    ("start", "idle", "a", [], []),
    ("next", "a/a1/x", "a/a1/y", [], []),  # the child's `next` ...
    ("next", "a", "a/a2", [], []),  # ... shadows the parent's
    ("jump", "a/a1", "b/b1/q", [], []),  # to another branch, three levels deep
    ("again", "b/b1/q", "b/b1/q", [], []),  # self-transition
    ("up", "b/b1/q", "b/b1", [], []),  # into the parent
    ("reset", "b", "b", [], []),  # into the top-level ancestor
    ("poke", "b", None, [], []),  # internal: dest omitted
    ("finish", "b/b1/p", "done", ["ready"], []),  # guarded child declaration ...
    ("finish", "b", "b/b2", [], []),  # ... falls back to the ancestor's
    ("leave", "b/b2", "done", [], ["stuck"]),
]


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for name, state in tree.items():
        path = prefix + name
        out += _leaves(state["states"], path + "/") if state.get("states") else [path]
    return out


def _yaml_states(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, state in tree.items():
        path = prefix + name
        spec: dict[str, Any] = {
            "on_enter": [{"note": {"what": f"enter {path}"}}],
            "on_exit": [{"note": {"what": f"exit {path}"}}],
        }
        if state.get("states"):
            spec["initial"] = state["initial"]
            spec["states"] = _yaml_states(state["states"], path + "/")
        elif path == "done":
            spec["final"] = True
        else:
            spec["waiting"] = True
        out[name] = spec
    return out


def _yaml_transitions() -> list[dict[str, Any]]:
    out = []
    for trigger, source, dest, conditions, unless in TRANSITIONS:
        t: dict[str, Any] = {"trigger": trigger, "source": source}
        if dest is not None:
            t["dest"] = dest
        if conditions:
            t["conditions"] = [{"context_true": {"key": f}} for f in conditions]
        if unless:
            t["unless"] = [{"context_true": {"key": f}} for f in unless]
        out.append(t)
    return out


class NoteArgs(BaseModel):
    what: str


def _registry():
    registry = default_registry.child()

    @registry.action("note")
    def note(args: NoteArgs, ctx: Any) -> ActionResult:
        """Records that a state was entered or left; the execution log keeps the order."""
        return ActionResult(outputs=args.what)

    return registry


def _workflow():
    text = yaml.safe_dump(
        {"name": "nested", "initial": "idle", "states": _yaml_states(TREE), "transitions": _yaml_transitions()},
        sort_keys=False,
    )
    return load_workflow_text(text, name="nested.yaml", registry=_registry())


@dataclass
class Step:
    """One fired trigger: where the machine is afterwards and which states were left and entered, in order."""

    state: str
    notes: list[str] = field(default_factory=list)


class OurMachine:
    """The sherpa-skills engine driven one trigger at a time (every leaf waits, so a trigger is one step).

    `runner` (conftest.py) drives it through `Agent.run` or `Agent.arun`.
    """

    def __init__(self, flags: dict[str, bool], runner: Callable[..., Any]):
        self.agent = Agent(_workflow().machine)
        self.runner = runner
        result = runner(self.agent, dict(flags))
        assert result.status == "waiting", result.error

    def fire(self, trigger: str) -> Step:
        before = len(self.agent.belief.log)
        # A refused trigger ends this stretch with status error; the machine stays put.
        self.runner(self.agent, trigger=trigger)
        notes = [e.outputs for e in self.agent.belief.log[before:] if e.action == "note"]
        return Step(self.agent.state, notes)


class TheirMachine:
    """The same machine in transitions.extensions.HierarchicalMachine, its callbacks logging the same notes."""

    def __init__(self, flags: dict[str, bool]):
        from transitions.extensions import HierarchicalMachine

        self.notes: list[str] = []
        self.flags = dict(flags)
        self.machine = HierarchicalMachine(
            states=self._states(TREE, ""),
            transitions=self._transitions(),
            initial="idle",
            auto_transitions=False,
            ignore_invalid_triggers=True,
        )

    def _states(self, tree: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
        out = []
        for name, state in tree.items():
            path = prefix + name
            spec: dict[str, Any] = {
                "name": name,
                "on_enter": [lambda *_, _p=path, **__: self.notes.append(f"enter {_p}")],
                "on_exit": [lambda *_, _p=path, **__: self.notes.append(f"exit {_p}")],
            }
            if state.get("states"):
                spec["initial"] = state["initial"]
                spec["children"] = self._states(state["states"], path + "/")
            out.append(spec)
        return out

    def _transitions(self) -> list[dict[str, Any]]:
        def flag(name: str) -> Any:
            return lambda *_, **__: bool(self.flags.get(name))

        return [
            {
                "trigger": trigger,
                "source": _theirs(source),
                "dest": _theirs(dest),
                "conditions": [flag(f) for f in conditions],
                "unless": [flag(f) for f in unless],
            }
            for trigger, source, dest, conditions, unless in TRANSITIONS
        ]

    def fire(self, trigger: str) -> Step:
        self.notes.clear()
        self.machine.trigger(trigger)
        return Step(self.machine.state.replace("_", "/"), list(self.notes))


def _theirs(path: str | None) -> str | None:
    return path.replace("/", "_") if path is not None else None


# ---------------------------------------------------------------- the scenario table


@dataclass
class Scenario:
    name: str
    triggers: list[str]
    expected: list[Step]
    flags: dict[str, bool] = field(default_factory=dict)


ENTER_A = ["exit idle", "enter a", "enter a/a1", "enter a/a1/x"]
A_TO_B_Q = ["exit a/a1/x", "exit a/a1", "exit a", "enter b", "enter b/b1", "enter b/b1/q"]

SCENARIOS = [
    Scenario(
        "sibling move",
        ["start", "next"],
        [
            Step("a/a1/x", ENTER_A),
            Step("a/a1/y", ["exit a/a1/x", "enter a/a1/y"]),
        ],
    ),
    Scenario(
        "parent's transition from a grandchild",
        ["start", "next", "next"],
        [
            Step("a/a1/x", ENTER_A),
            Step("a/a1/y", ["exit a/a1/x", "enter a/a1/y"]),
            Step("a/a2", ["exit a/a1/y", "exit a/a1", "enter a/a2"]),
        ],
    ),
    Scenario(
        "another branch three levels deep",
        ["start", "jump"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
        ],
    ),
    Scenario(
        "self-transition re-enters",
        ["start", "jump", "again"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b1/q", ["exit b/b1/q", "enter b/b1/q"]),
        ],
    ),
    Scenario(
        "into the parent re-enters it and its initial child",
        ["start", "jump", "up"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b1/p", ["exit b/b1/q", "exit b/b1", "enter b/b1", "enter b/b1/p"]),
        ],
    ),
    Scenario(
        "into a top-level ancestor re-enters the whole branch",
        ["start", "jump", "reset"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b1/p", ["exit b/b1/q", "exit b/b1", "exit b", "enter b", "enter b/b1", "enter b/b1/p"]),
        ],
    ),
    Scenario(
        "internal transition runs no exit or entry",
        ["start", "jump", "poke"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b1/q", []),
        ],
    ),
    Scenario(
        "child's guard fails: the ancestor's declaration is used",
        ["start", "jump", "up", "finish"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b1/p", ["exit b/b1/q", "exit b/b1", "enter b/b1", "enter b/b1/p"]),
            Step("b/b2", ["exit b/b1/p", "exit b/b1", "enter b/b2"]),
        ],
    ),
    Scenario(
        "child's guard passes: the child's declaration is used",
        ["start", "jump", "up", "finish"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b1/p", ["exit b/b1/q", "exit b/b1", "enter b/b1", "enter b/b1/p"]),
            Step("done", ["exit b/b1/p", "exit b/b1", "exit b", "enter done"]),
        ],
        flags={"ready": True},
    ),
    Scenario(
        "an `unless` guard that passes blocks the move",
        ["start", "jump", "finish", "leave"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b2", ["exit b/b1/q", "exit b/b1", "enter b/b2"]),
            Step("b/b2", []),
        ],
        flags={"stuck": True},
    ),
    Scenario(
        "a long walk through every kind of move",
        ["start", "jump", "again", "up", "reset", "poke", "finish", "leave"],
        [
            Step("a/a1/x", ENTER_A),
            Step("b/b1/q", A_TO_B_Q),
            Step("b/b1/q", ["exit b/b1/q", "enter b/b1/q"]),
            Step("b/b1/p", ["exit b/b1/q", "exit b/b1", "enter b/b1", "enter b/b1/p"]),
            Step("b/b1/p", ["exit b/b1/p", "exit b/b1", "exit b", "enter b", "enter b/b1", "enter b/b1/p"]),
            Step("b/b1/p", []),
            Step("b/b2", ["exit b/b1/p", "exit b/b1", "enter b/b2"]),
            Step("done", ["exit b/b2", "exit b", "enter done"]),
        ],
    ),
]


def _walk(machine: Any, triggers: list[str]) -> list[Step]:
    return [machine.fire(t) for t in triggers]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
class TestEntryExitOrder:
    def test_engine_moves_and_runs_exit_entry_actions_as_the_table_says(self, scenario: Scenario, runner):
        """Each trigger lands in the expected leaf, running exit actions innermost-first, then entry outermost-first."""
        assert _walk(OurMachine(scenario.flags, runner), scenario.triggers) == scenario.expected

    def test_transitions_hierarchical_machine_agrees_step_by_step(self, scenario: Scenario, runner):
        """transitions' HierarchicalMachine, fed the same triggers, reaches the same states with the same enter/exit
        order."""
        ours = _walk(OurMachine(scenario.flags, runner), scenario.triggers)
        theirs = _walk(TheirMachine(scenario.flags), scenario.triggers)
        assert ours == theirs


# ---------------------------------------------------------------- inheritance and shadowing, stated directly


def _agent_at(runner: Callable[..., Any], triggers: list[str], flags: dict[str, bool] | None = None) -> Agent:
    machine = OurMachine(flags or {}, runner)
    for t in triggers:
        machine.fire(t)
    return machine.agent


class TestInheritedTransitions:
    @pytest.mark.parametrize(
        "path, leaf",
        [(["start", "jump"], "b/b1/q"), (["start", "jump", "up"], "b/b1/p"), (["start", "jump", "finish"], "b/b2")],
    )
    def test_a_parent_declared_transition_is_available_in_every_descendant(self, runner, path: list[str], leaf: str):
        """`reset` and `poke`, declared on `b`, are offered in each leaf under `b`."""
        agent = _agent_at(runner, path)
        assert agent.state == leaf
        assert {"reset", "poke"} <= {e.trigger for e in agent.available_transitions()}

    def test_a_parent_declared_transition_is_not_available_outside_the_parent(self, runner):
        """`b`'s transitions are not offered in a leaf of the sibling branch `a`."""
        agent = _agent_at(runner, ["start"])
        assert {e.trigger for e in agent.available_transitions()}.isdisjoint({"reset", "poke", "finish"})

    def test_the_deepest_declaration_of_a_trigger_shadows_the_ancestors(self, runner):
        """In `a/a1/x`, `next` is offered once, with the child's destination, not the parent's."""
        agent = _agent_at(runner, ["start"])
        nexts = [e for e in agent.available_transitions() if e.trigger == "next"]
        assert [e.dest for e in nexts] == ["a/a1/y"]

    def test_a_failing_child_guard_falls_back_to_the_ancestors_declaration(self, runner):
        """In `b/b1/p` with `ready` false, `finish` is offered with `b`'s destination."""
        agent = _agent_at(runner, ["start", "jump", "up"])
        assert [e.dest for e in agent.available_transitions() if e.trigger == "finish"] == ["b/b2"]

    def test_a_passing_child_guard_keeps_the_childs_declaration(self, runner):
        """In `b/b1/p` with `ready` true, `finish` is offered only with the child's destination."""
        agent = _agent_at(runner, ["start", "jump", "up"], {"ready": True})
        assert [e.dest for e in agent.available_transitions() if e.trigger == "finish"] == ["done"]


AVAILABLE = """
name: available
initial: s
context:
  on_flag: true
  off_flag: false
states:
  s:
    waiting: true
    transitions:
      - {trigger: plain, dest: t}
      - {trigger: cond_pass, dest: t, conditions: {context_true: {key: on_flag}}}
      - {trigger: cond_fail, dest: t, conditions: {context_true: {key: off_flag}}}
      - {trigger: unless_pass, dest: t, unless: {context_true: {key: off_flag}}}
      - {trigger: unless_fail, dest: t, unless: {context_true: {key: on_flag}}}
      - trigger: mixed_fail
        dest: t
        conditions: {context_true: {key: on_flag}}
        unless: {context_true: {key: on_flag}}
      - trigger: all_conditions_needed
        dest: t
        conditions: [{context_true: {key: on_flag}}, {context_true: {key: off_flag}}]
  t:
    final: true
transitions:
  - {trigger: from_anywhere, source: "*", dest: t}
  - {trigger: only_from_t, source: t, dest: s}
"""


class TestAvailableTransitions:
    def _waiting_agent(self, runner: Callable[..., Any], **inputs: Any) -> Agent:
        agent = load_workflow_text(AVAILABLE, name="available.yaml").agent()
        assert runner(agent, inputs).status == "waiting"
        return agent

    def test_exactly_the_transitions_whose_source_matches_and_whose_guards_pass(self, runner):
        """Conditions must all pass, `unless` guards must all fail, and other states' transitions are absent."""
        triggers = [e.trigger for e in self._waiting_agent(runner).available_transitions()]
        assert sorted(triggers) == ["cond_pass", "from_anywhere", "plain", "unless_pass"]

    def test_guards_are_evaluated_against_the_current_belief(self, runner):
        """Flipping the context flags flips which guarded transitions are offered."""
        agent = self._waiting_agent(runner, on_flag=False, off_flag=True)
        triggers = {e.trigger for e in agent.available_transitions()}
        assert triggers == {"plain", "cond_fail", "unless_fail", "from_anywhere"}

    def test_the_run_result_of_a_waiting_run_lists_the_same_triggers(self, runner):
        """RunResult.available names what the waiting state offers, so a caller knows what it may fire."""
        agent = load_workflow_text(AVAILABLE, name="available.yaml").agent()
        result = runner(agent)
        assert sorted(result.available) == sorted(e.trigger for e in agent.available_transitions())
