"""Belief: read-only to policies and guards, JSON round-trips without loss,
and a writing guard fails the run cleanly."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sherpa_skills.engine.agent import Agent
from sherpa_skills.engine.belief import Belief, LogEntry, TrajectoryEntry
from sherpa_skills.engine.registry import default_registry
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow_text
from sherpa_skills.errors import ReadOnlyBeliefError
from sherpa_skills.policy.base import Decision, DecisionContext


def _belief() -> Belief:
    return Belief(
        trajectory=[
            TrajectoryEntry(tick=0, state="start", decided_by="start", at=1.5),
            TrajectoryEntry(tick=1, state="work/build", trigger="go", source="start", decided_by="llm", at=2.25),
        ],
        log=[
            LogEntry(
                tick=1,
                action="shell",
                inputs={"command": "make", "env": ["PATH"]},
                outputs={"exit_code": 0, "stdout": "ok\n", "lines": [1, 2, {"deep": [None, True, 1.5]}]},
                status="ok",
                started=2.0,
                duration_ms=12.5,
                tokens=0,
                cost=0.0,
            ),
            LogEntry(
                tick=1,
                action="policy:llm",
                inputs={"state": "start"},
                outputs="plain text",
                status="error",
                started=2.1,
                duration_ms=0.0,
                tokens=42,
                cost=0.001,
                error="boom",
            ),
        ],
        context={
            "ticket": {"id": 7, "tags": ["a", "b"], "meta": {"owner": None, "score": 0.75}},
            "count": 3,
            "ok": False,
            "name": "ü",
        },
    )


class TestReadOnlyView:
    @pytest.mark.parametrize(
        "write",
        [
            lambda v: v.context.__setitem__("k", 1),
            lambda v: v.context.__delitem__("count"),
            lambda v: v.context.update({"k": 1}),
            lambda v: v.context.pop("count"),
            lambda v: v.context.setdefault("k", 1),
            lambda v: v.context.clear(),
            lambda v: setattr(v.context, "_data", {}),
        ],
        ids=["setitem", "delitem", "update", "pop", "setdefault", "clear", "setattr"],
    )
    def test_writing_to_the_context_raises(self, write: Any):
        """Every way of changing view.context raises ReadOnlyBeliefError and leaves the belief as it was."""
        belief = _belief()
        before = belief.model_dump()
        with pytest.raises(ReadOnlyBeliefError):
            write(belief.view())
        assert belief.model_dump() == before

    @pytest.mark.parametrize("part", ["trajectory", "log"])
    @pytest.mark.parametrize(
        "write",
        [
            lambda s: s.append(None),
            lambda s: s.extend([]),
            lambda s: s.insert(0, None),
            lambda s: s.pop(),
            lambda s: s.clear(),
            lambda s: s.__setitem__(0, None),
            lambda s: s.__delitem__(0),
            lambda s: setattr(s, "_items", []),
        ],
        ids=["append", "extend", "insert", "pop", "clear", "setitem", "delitem", "setattr"],
    )
    def test_writing_to_the_trajectory_or_log_raises(self, part: str, write: Any):
        """view.trajectory and view.log are windows that refuse every change."""
        belief = _belief()
        before = belief.model_dump()
        with pytest.raises(ReadOnlyBeliefError):
            write(getattr(belief.view(), part))
        assert belief.model_dump() == before

    @pytest.mark.parametrize("name", ["context", "trajectory", "log", "anything"])
    def test_replacing_or_adding_view_attributes_raises(self, name: str):
        """A view's attributes cannot be rebound or deleted."""
        view = _belief().view()
        with pytest.raises(ReadOnlyBeliefError):
            setattr(view, name, {})
        with pytest.raises(ReadOnlyBeliefError):
            delattr(view, name)

    def test_the_view_reads_what_the_belief_holds(self):
        """Reads work: dotted context lookups, lengths, indexing, recent entries and the current state."""
        view = _belief().view()
        assert view.get("ticket.meta.score") == 0.75
        assert view.context.get("ticket.tags.1") == "b"
        assert view.get("missing", "dflt") == "dflt"
        assert len(view.log) == 2 and view.log[-1].action == "policy:llm"
        assert [t.state for t in view.trajectory.recent(1)] == ["work/build"]
        assert view.state == "work/build"

    def test_since_gives_what_was_appended_after_a_place_as_a_copy(self):
        """A reader that keeps its place reads only the new entries, and cannot write the belief through them."""
        belief = _belief()
        view = belief.view()
        assert [e.action for e in view.log.since(1)] == ["policy:llm"] and view.log.since(2) == []
        view.log.since(0).clear()
        assert len(belief.log) == 2

    def test_a_policy_sees_a_read_only_view(self, runner):
        """The view handed to a policy refuses writes, so a policy cannot change what it decides on."""
        seen: list[str] = []

        class WritingPolicy:
            def decide(self, ctx: DecisionContext) -> Decision | None:
                try:
                    ctx.view.context["sneaky"] = True
                except ReadOnlyBeliefError:
                    seen.append("refused")
                return Decision("left", decided_by="test")

            async def adecide(self, ctx: DecisionContext) -> Decision | None:
                return self.decide(ctx)

        workflow = load_workflow_text(TWO_WAYS, name="two_ways.yaml")
        result = runner(Agent(workflow.machine, WritingPolicy()))
        assert result.status == "final"
        assert seen == ["refused"]
        assert "sneaky" not in result.context


TWO_WAYS = """
name: two_ways
initial: s
states:
  s:
    transitions:
      - {trigger: left, dest: done}
      - {trigger: right, dest: done}
  done:
    final: true
"""


class TestJsonRoundTrip:
    def test_belief_round_trips_json_without_loss(self):
        """to_json then from_json gives back an equal belief: nested context values and log outputs included."""
        belief = _belief()
        again = Belief.from_json(belief.to_json())
        assert again == belief
        assert again.model_dump() == belief.model_dump()
        assert again.context["ticket"]["meta"] == {"owner": None, "score": 0.75}
        assert again.log[0].outputs["lines"][2] == {"deep": [None, True, 1.5]}

    def test_the_belief_of_a_real_run_round_trips(self, tmp_path, runner):
        """A belief the engine built (entries made without validation) survives JSON and the run store alike."""
        store = RunStore(path=tmp_path / "store.db")
        workflow = load_workflow_text(COUNTING, name="counting.yaml")
        agent = workflow.agent(store=store)
        assert runner(agent, {"ticket": {"id": 7, "tags": ["x"]}}).status == "final"
        assert Belief.from_json(agent.belief.to_json()) == agent.belief
        assert RunStore(path=tmp_path / "store.db").load_belief(agent.run_id).model_dump() == agent.belief.model_dump()

    def test_entries_the_engine_makes_without_validation_are_what_validation_makes(self, runner):
        """The tick builds its entries directly (no per-field walk); they must be indistinguishable from validated
        ones."""
        workflow = load_workflow_text(COUNTING, name="counting.yaml")
        agent = workflow.agent()
        assert runner(agent).status == "final"
        entries = [*agent.belief.trajectory, *agent.belief.log]
        assert {type(e) for e in entries} == {TrajectoryEntry, LogEntry}
        for entry in entries:
            validated = type(entry).model_validate(entry.model_dump())
            assert entry == validated and entry.model_dump_json() == validated.model_dump_json()
            assert entry.model_fields_set == validated.model_fields_set == set(type(entry).model_fields)
            assert entry.model_copy() == entry and entry.model_dump(exclude_unset=True) == validated.model_dump(
                exclude_unset=True
            )
            with pytest.raises(ReadOnlyBeliefError):
                entry.tick = 99
        # Each entry has its own fields set: pydantic may grow one in place, which must not reach the others.
        assert len({id(e.model_fields_set) for e in entries}) == len(entries)


COUNTING = """
name: counting
initial: a
states:
  a:
    on_enter:
      - {set: {note: {nested: [1, {two: 2}]}}}
    transitions:
      - trigger: go
        dest: b
        after: {increment: {key: count}}
  b:
    final: true
"""


WRITING_GUARD = """
name: writing_guard
initial: s
states:
  s:
    transitions:
      - trigger: go
        dest: done
        conditions: sneaky
  done:
    final: true
"""


class TestGuardsCannotWrite:
    def _registry(self):
        registry = default_registry.child()

        @registry.guard("sneaky")
        def sneaky(view: Any, args: Any = None) -> bool:
            """Tries to change the belief it should only read."""
            view.context["approved"] = True
            return True

        return registry

    def test_a_guard_that_writes_fails_the_run_with_a_clear_error(self, tmp_path, runner):
        """The run ends with status error and a message saying belief is read-only, not with a traceback."""
        store = RunStore(path=tmp_path / "store.db")
        workflow = load_workflow_text(WRITING_GUARD, name="writing_guard.yaml", registry=self._registry())
        agent = workflow.agent(store=store)
        result = runner(agent)
        assert result.status == "error"
        assert result.state == "s"
        assert "read-only" in result.error and "guard 'sneaky'" in result.error
        assert "Traceback" not in result.error
        assert "approved" not in result.context
        row = RunStore(path=tmp_path / "store.db").get_run(agent.run_id)
        assert (row.status, row.state) == ("error", "s")
        assert "read-only" in row.error

    async def test_the_async_run_fails_the_same_way(self):
        """arun reports the writing guard exactly as run does."""
        workflow = load_workflow_text(WRITING_GUARD, name="writing_guard.yaml", registry=self._registry())
        result = await workflow.agent().arun()
        assert result.status == "error"
        assert "read-only" in result.error

    def test_a_guard_that_crashes_fails_the_run_naming_the_guard(self, runner):
        """A guard raising an ordinary exception ends the run with status error, not an exception out of run()."""
        registry = default_registry.child()

        @registry.guard("sneaky")
        def sneaky(view: Any, args: Any = None) -> bool:
            """Reads a key that is not there."""
            return view.context["missing"]

        result = runner(load_workflow_text(WRITING_GUARD, name="writing_guard.yaml", registry=registry).agent())
        assert result.status == "error"
        assert "guard 'sneaky'" in result.error and "KeyError" in result.error


NESTED_WRITES = {
    "nested setitem": lambda v: v.context["ticket"]["meta"].__setitem__("owner", "me"),
    "nested update": lambda v: v.context["ticket"].update({"id": 8}),
    "nested append": lambda v: v.context["ticket"]["tags"].append("c"),
    "nested extend via +=": lambda v: v.get("ticket.tags").__iadd__(["c"]),
    "nested list setitem": lambda v: v.get("ticket.tags").__setitem__(0, "z"),
    "nested sort": lambda v: v.get("ticket.tags").sort(reverse=True),
    "nested pop": lambda v: v.get("ticket").pop("id"),
    "through items()": lambda v: dict(v.context.items())["ticket"]["tags"].clear(),
    "through values()": lambda v: list(v.context.values())[0]["meta"].clear(),
    "log inputs": lambda v: v.log[0].inputs.__setitem__("command", "rm -rf /"),
    "log outputs": lambda v: v.log[0].outputs["lines"].append(3),
    "log deep outputs": lambda v: v.log[0].outputs["lines"][2]["deep"].append(0),
    "log entry field": lambda v: setattr(v.log[-1], "status", "ok"),
    "trajectory entry field": lambda v: setattr(v.trajectory[-1], "state", "elsewhere"),
}


class TestDeeplyReadOnly:
    @pytest.mark.parametrize("write", list(NESTED_WRITES.values()), ids=list(NESTED_WRITES))
    def test_nested_values_refuse_every_write(self, write: Any):
        """Nested dicts and lists in the context, and log entries with their inputs and outputs, are read-only too."""
        belief = Belief.model_validate(_belief().model_dump())
        before = belief.model_dump()
        with pytest.raises((ReadOnlyBeliefError, ValidationError)):
            write(belief.view())
        assert belief.model_dump() == before

    def test_read_only_values_still_read_compare_and_serialise_as_plain_data(self):
        """Frozen values are dicts and lists: equal to plain data, JSON-able, and a deep copy is plain and writable."""
        import copy
        import json
        import pickle

        view = _belief().view()
        ticket = view.get("ticket")
        assert isinstance(ticket, dict) and isinstance(ticket["tags"], list)
        assert ticket == {"id": 7, "tags": ["a", "b"], "meta": {"owner": None, "score": 0.75}}
        assert json.loads(json.dumps(ticket)) == ticket
        assert pickle.loads(pickle.dumps(ticket)) == ticket
        mine = copy.deepcopy(ticket)
        mine["tags"].append("c")
        mine["meta"]["owner"] = "me"
        shallow = dict(ticket)
        shallow["id"] = 8
        assert view.get("ticket.tags") == ["a", "b"] and view.get("ticket.id") == 7
        assert view.context.to_dict()["ticket"]["meta"] == {"owner": None, "score": 0.75}
        view.context.to_dict()["ticket"]["tags"].append("ok: a plain copy")

    def test_a_guard_that_mutates_a_nested_value_fails_the_run_and_the_resumed_run_sees_the_same_data(
        self, tmp_path, runner
    ):
        """A guard appending to a nested list fails the run cleanly; memory and the store still agree afterwards."""
        registry = default_registry.child()

        @registry.guard("nested_sneaky")
        def nested_sneaky(view: Any, args: Any = None) -> bool:
            """Tries to change a nested value it should only read."""
            view.get("note.nested").append("sneaked")
            return True

        store = RunStore(path=tmp_path / "store.db")
        workflow = load_workflow_text(NESTED_GUARD, name="nested_guard.yaml", registry=registry)
        agent = workflow.agent(store=store)
        result = runner(agent)
        assert result.status == "error" and "read-only" in result.error and "nested_sneaky" in result.error
        assert agent.belief.context["note"] == {"nested": [1, {"two": 2}]}
        assert RunStore(path=tmp_path / "store.db").load_belief(agent.run_id).context == agent.belief.context

    def test_a_policy_cannot_change_a_log_entry_it_decides_on(self, runner):
        """view.log[-1].status = ... and view.log[-1].outputs[...] = ... are refused inside a policy."""
        refused: list[str] = []

        class RewritingPolicy:
            def decide(self, ctx: DecisionContext) -> Decision | None:
                for attempt in (
                    lambda: setattr(ctx.view.log[-1], "status", "failed"),
                    lambda: ctx.view.log[-1].outputs.__setitem__("note", "changed"),
                ):
                    try:
                        attempt()
                    except (ReadOnlyBeliefError, ValidationError):
                        refused.append("refused")
                return Decision("left", decided_by="test")

            async def adecide(self, ctx: DecisionContext) -> Decision | None:
                return self.decide(ctx)

        workflow = load_workflow_text(TWO_WAYS_LOGGED, name="two_ways_logged.yaml")
        agent = Agent(workflow.machine, RewritingPolicy())
        result = runner(agent)
        assert result.status == "final" and refused == ["refused", "refused"]
        assert agent.belief.log[0].status == "ok" and agent.belief.log[0].outputs == {"note": {"n": [1]}}

    def test_an_action_keeping_a_reference_to_its_result_cannot_change_the_belief_later(self, runner):
        """What an action returned is copied into the belief: mutating the returned object afterwards changes
        nothing."""
        registry = default_registry.child()
        kept: list[dict[str, Any]] = []

        @registry.action("leaky")
        def leaky(args: Any, ctx: Any) -> Any:
            """Returns a dict it keeps a reference to."""
            value = {"items": [1]}
            kept.append(value)
            from sherpa_skills.engine.registry import ActionResult

            return ActionResult(outputs=value, context={"value": value})

        workflow = load_workflow_text(
            "name: leak\ninitial: a\nstates:\n  a:\n    final: true\n    on_enter: leaky\n",
            name="leak.yaml",
            registry=registry,
        )
        agent = Agent(workflow.machine)
        assert runner(agent).status == "final"
        kept[0]["items"].append(2)
        assert agent.belief.context["value"] == {"items": [1]} and agent.belief.log[0].outputs == {"items": [1]}


NESTED_GUARD = """
name: nested_guard
initial: a
states:
  a:
    on_enter:
      - {set: {note: {nested: [1, {two: 2}]}}}
    transitions:
      - {trigger: go, dest: b, conditions: nested_sneaky}
  b:
    final: true
"""

TWO_WAYS_LOGGED = """
name: two_ways_logged
initial: s
states:
  s:
    on_enter:
      - {set: {note: {n: [1]}}}
    transitions:
      - {trigger: left, dest: done}
      - {trigger: right, dest: done}
  done:
    final: true
"""
