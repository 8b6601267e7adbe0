"""An action's `check`: the features of the world it depends on,
recorded with each call and compared before a replay follows."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from sherpa_skills.engine.registry import ActionContext, ActionResult, default_registry, load_builtins, observe_features
from sherpa_skills.errors import RegistryError
from sherpa_skills.runtime import load_workflow_text
from sherpa_skills.skills.capture.learning import Learner
from sherpa_skills.skills.replay.policy import RecordedCheck
from sherpa_skills.skills.store.database import ProcedureDatabase

WORKFLOW = """
name: quotes
inputs:
  ticket: {required: true}
  order: {required: true}
llm:
  model: scripted/quotes.script.yaml
policy: {type: chain, rules: []}
initial: assess
states:
  assess: {description: Read the ticket.}
  pricing: {description: The order is priced.}
  quoted: {description: Send the quote or escalate.}
  sent: {final: true}
  escalated: {final: true}
transitions:
  - trigger: price
    source: assess
    dest: pricing
    arguments: {order: {type: string}}
    after: {price_order: {order: "{{ args.order }}"}}
  - {trigger: quote, source: pricing, dest: quoted}
  - {trigger: send, source: quoted, dest: sent}
  - {trigger: escalate, source: quoted, dest: escalated}
"""

SCRIPT = r"""
answers:
  - match: 'Current state: assess(?=.*?"order": "(\d+)")'
    respond: '{"trigger": "price", "args": {"order": "{{ groups[0] }}"}, "reason": "a quote"}'
  - match: "Current state: quoted"
    respond: '{"trigger": "send", "args": {}}'
"""

TICKET = "Please quote my order of blenders"


class Order(BaseModel):
    order: str


class World:
    """The environment the pricing action depends on: a price table with a version, which a test may change or break."""

    def __init__(self) -> None:
        self.version: Any = 1
        self.broken = False

    def check(self, view: Any) -> dict[str, Any]:
        if self.broken:
            raise ConnectionError("price service unreachable")
        return {"price_table": self.version}


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def registry(world: World):
    load_builtins()
    registry = default_registry.child()

    @registry.action("price_order", check=world.check)
    def price_order(args: Order, ctx: ActionContext) -> ActionResult:
        return ActionResult(outputs={"total": 42}, context={"total": 42})

    return registry


@pytest.fixture
def workflow(tmp_path: Path, registry):
    (tmp_path / "quotes.script.yaml").write_text(SCRIPT)
    return load_workflow_text(WORKFLOW, registry=registry, base_dir=tmp_path)


@pytest.fixture
def learner(tmp_path: Path):
    store = ProcedureDatabase(path=tmp_path / "skills.db")
    yield Learner(store)
    store.close()


def run(runner, workflow, learner, order: str):
    agent = workflow.agent(learn=learner)
    return agent, runner(agent, {"ticket": TICKET, "order": order})


def proven(runner, workflow, learner) -> None:
    """Two planned successes: the procedure is trusted (one success is not proof)."""
    run(runner, workflow, learner, "4417")
    run(runner, workflow, learner, "5120")


class TestRecording:
    def test_a_run_logs_what_the_check_observed_before_the_action(self, workflow, learner, runner):
        """The check runs before its action, and its features are in the run's log."""
        agent, result = run(runner, workflow, learner, "4417")
        actions = [e.action for e in agent.belief.log if not e.action.startswith("policy:")]
        assert actions == ["check:price_order", "price_order"]
        assert agent.belief.log[1].outputs == {"price_table": 1}
        assert result.actions == 1  # a check is not an action call

    def test_the_captured_procedure_keeps_the_features_with_the_decision_that_led_to_the_action(
        self, workflow, learner, runner
    ):
        run(runner, workflow, learner, "4417")
        [proc] = learner.store.procedures(status=None)
        assert proc.decisions[0].checks == [RecordedCheck(action="price_order", features={"price_table": 1})]
        assert proc.decisions[1].checks == []
        # checks are not outcomes
        assert [o.action for d in proc.decisions[:2] for o in d.outcomes] == ["price_order"]


class TestReplay:
    def test_the_same_world_replays_with_no_llm_call(self, workflow, learner, runner):
        proven(runner, workflow, learner)
        _, result = run(runner, workflow, learner, "7731")
        assert (result.state, result.llm_calls, result.replayed_decisions, result.diverged_at) == ("sent", 0, 2, None)
        assert result.tokens_saved > 0 and result.llm_calls_saved == 2

    def test_a_changed_world_diverges_before_acting_and_the_llm_takes_over_in_the_same_run(
        self, workflow, learner, world, runner
    ):
        proven(runner, workflow, learner)
        world.version = 2
        agent, result = run(runner, workflow, learner, "7731")
        assert (result.status, result.state, result.replayed_decisions, result.llm_calls) == ("final", "sent", 0, 2)
        assert result.diverged_at["step"] == 0 and result.diverged_at["state"] == "assess"
        assert result.diverged_at["expected"] == "check 'price_order' observing {\"price_table\": 1}"
        assert result.diverged_at["observed"] == "check changed: 'price_order' observes {\"price_table\": 2}"
        # The same decisions in a changed world are the procedure's next version, with the features seen now ...
        [proc] = learner.store.procedures(status=None)
        assert proc.version == 2 and proc.decisions[0].checks[0].features == {"price_table": 2}
        [execution] = learner.store.executions(proc.id, version=1)
        assert execution.outcome == "diverged" and "check changed" in execution.reason
        # ... proven by one more planned success (a new version is seen succeeding once), then followed.
        run(runner, workflow, learner, "8000")
        _, again = run(runner, workflow, learner, "8001")
        assert (again.llm_calls, again.replayed_decisions, again.diverged_at) == (0, 2, None)

    def test_the_divergence_is_in_the_llm_prompt(self, workflow, learner, world, tmp_path, runner):
        """The script answers `escalate` only to a prompt that says the check changed."""
        (tmp_path / "quotes.script.yaml").write_text(
            SCRIPT.replace(
                "answers:\n",
                "answers:\n"
                "  - match: 'check changed.*Current state: quoted|Current state: quoted(?s:.*)check changed'\n"
                '    respond: \'{"trigger": "escalate", "args": {}}\'\n',
                1,
            )
        )
        proven(runner, workflow, learner)
        world.version = 2
        _, result = run(runner, workflow, learner, "7731")
        assert result.state == "escalated" and result.diverged_at is not None

    def test_a_check_that_raises_is_a_divergence_with_its_reason_never_a_crash(self, workflow, learner, world, runner):
        proven(runner, workflow, learner)
        world.broken = True
        agent, result = run(runner, workflow, learner, "7731")
        assert (result.status, result.state, result.llm_calls) == ("final", "sent", 2)
        assert (
            result.diverged_at["observed"] == "check 'price_order' failed: ConnectionError: price service unreachable"
        )
        failed = [e for e in agent.belief.log if e.action == "check:price_order"]
        assert [(e.status, e.error) for e in failed] == [("error", "ConnectionError: price service unreachable")]

    def test_a_check_that_raised_when_recorded_records_nothing_and_the_replay_follows(
        self, workflow, learner, world, runner
    ):
        world.broken = True
        proven(runner, workflow, learner)
        [proc] = learner.store.procedures(status=None)
        assert proc.decisions[0].checks == []
        world.broken = False
        _, result = run(runner, workflow, learner, "7731")
        assert (result.llm_calls, result.diverged_at) == (0, None)

    def test_a_check_declared_after_the_capture_has_no_recorded_features_and_the_replay_follows(
        self, tmp_path, learner, world, runner
    ):
        """A procedure captured before the action declared its check has nothing to compare: it is followed."""
        load_builtins()
        registry = default_registry.child()

        @registry.action("price_order")
        def price_order(args: Order, ctx: ActionContext) -> ActionResult:
            return ActionResult(outputs={"total": 42})

        (tmp_path / "quotes.script.yaml").write_text(SCRIPT)
        workflow = load_workflow_text(WORKFLOW, registry=registry, base_dir=tmp_path)
        proven(runner, workflow, learner)
        registry.action("price_order", check=world.check, replace=True)(price_order)
        world.version = 99
        _, result = run(runner, workflow, learner, "7731")
        assert (result.llm_calls, result.replayed_decisions, result.diverged_at) == (0, 2, None)


class TestDeclaring:
    def test_a_check_must_be_a_plain_function(self):
        registry = default_registry.child()
        with pytest.raises(RegistryError, match="check must be a plain function"):
            registry.action("x", check="price_table_version")  # type: ignore[arg-type]

        async def later(view: Any) -> int:
            return 1

        with pytest.raises(RegistryError, match="check must be a plain function"):
            registry.action("y", check=later)


class TestFeatures:
    """Features are compared as the JSON they are stored as:
    what the check returns is read as that JSON would be read back."""

    @staticmethod
    def observed(value: Any) -> Any:
        registry = default_registry.child()
        registry.action("seen", check=lambda view: value)(lambda args, ctx: ActionResult())
        return observe_features(registry.get_action("seen"), None)

    @pytest.mark.parametrize(
        "value",
        [
            {"price_table": 1, "region": "eu", "rate": 0.2, "live": True, "note": None},
            [1, "a", {"b": [2.5, False]}],
            3,
            "v2",
            None,
        ],
    )
    def test_plain_json_is_observed_as_it_is(self, value):
        assert self.observed(value) == value

    @pytest.mark.parametrize(
        "value, stored",
        [
            ({"versions": (1, 2)}, {"versions": [1, 2]}),
            ({1: "a"}, {"1": "a"}),
            ({"at": date(2026, 11, 23)}, {"at": "2026-11-23"}),
            ({"flags": {3}}, {"flags": "{3}"}),
            ({"n": True.__class__(1)}, {"n": True}),
        ],
    )
    def test_other_values_are_observed_as_their_stored_json(self, value, stored):
        assert self.observed(value) == stored

    def test_keys_are_observed_in_the_order_the_stored_json_has(self):
        assert list(self.observed({"refund_policy": 2, "price_table": 1})) == ["price_table", "refund_policy"]

    def test_the_observed_features_are_not_the_checks_own_objects(self):
        """A check that hands out its live state and changes it later must not change what was recorded."""
        live = {"table": {"version": 1}}
        registry = default_registry.child()
        registry.action("seen", check=lambda view: live)(lambda args, ctx: ActionResult())
        observed = observe_features(registry.get_action("seen"), None)
        live["table"]["version"] = 2
        assert observed == {"table": {"version": 1}}


RULED = """
name: lookups
inputs:
  ticket: {required: true}
llm:
  model: scripted/lookups.script.yaml
policy: {type: chain, rules: [{state: assess, trigger: look_up}]}
initial: assess
states:
  assess: {description: Read the ticket.}
  looked_up: {description: Send the quote or escalate.}
  sent: {final: true}
  escalated: {final: true}
transitions:
  - trigger: look_up
    source: assess
    dest: looked_up
    after: {price_order: {order: "0"}}
  - {trigger: wait, source: assess, dest: assess}
  - {trigger: send, source: looked_up, dest: sent}
  - {trigger: escalate, source: looked_up, dest: escalated}
"""


def test_the_checks_of_a_rules_decision_are_compared_at_the_replays_next_decision(
    tmp_path, registry, learner, world, runner
):
    """Rules are asked before the replay, so it never sees their decision: the checks it led to are compared at the
    next one."""
    (tmp_path / "lookups.script.yaml").write_text(
        'answers:\n  - match: "Current state: looked_up"\n    respond: \'{"trigger": "send", "args": {}}\'\n'
    )
    workflow = load_workflow_text(RULED, registry=registry, base_dir=tmp_path)
    for _ in range(2):
        runner(workflow.agent(learn=learner), {"ticket": TICKET})
    [proc] = learner.store.procedures(status=None)
    assert [(d.decided_by, len(d.checks)) for d in proc.decisions] == [("rule", 1), ("llm", 0)]
    replayed = runner(workflow.agent(learn=learner), {"ticket": TICKET})
    assert (replayed.llm_calls, replayed.replayed_decisions, replayed.diverged_at) == (0, 1, None)
    assert [e.outcome for e in learner.store.executions(proc.id)] == [
        "success"
    ]  # the rule's decision was the recorded one
    world.version = 2
    result = runner(workflow.agent(learn=learner), {"ticket": TICKET})
    assert (result.state, result.llm_calls, result.diverged_at["step"]) == ("sent", 1, 1)
    assert result.diverged_at["observed"] == "check changed: 'price_order' observes {\"price_table\": 2}"
