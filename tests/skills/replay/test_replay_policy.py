"""A workflow with an LLM policy learns from its successful runs:
replayed with 0 LLM calls, handed back to the LLM on divergence."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.runtime import load_workflow
from sherpa_skills.skills.capture.learning import Learner
from sherpa_skills.skills.capture.run_hook import LearningAdvisor, LearningHook
from sherpa_skills.skills.replay.divergence import Divergence
from sherpa_skills.skills.replay.policy import ActionOutcome, RecordedDecision, ReplayPolicy, fill
from sherpa_skills.skills.store.branches import branches
from sherpa_skills.skills.store.database import ProcedureDatabase

WORKFLOW = """
name: refunds
inputs:
  ticket: {required: true}
  order: {required: true}
  plan: {default: basic}
llm:
  model: scripted/refunds.script.yaml
policy: {type: chain, rules: []}
initial: assess
states:
  assess: {description: Read the ticket.}
  refunding: {description: Refund the order.}
  answering: {description: Answer a question.}
  checked:
    description: Decide how to close the ticket.
    on_enter: {set: {checked: true}}
  closed: {final: true, on_enter: {set: {outcome: closed}}}
  escalated: {final: true, on_enter: {set: {outcome: escalated}}}
transitions:
  - trigger: refund
    source: assess
    dest: refunding
    arguments: {order: {type: string, description: the order number}}
    after: {set: {refunded: "{{ args.order }}"}}
  - {trigger: answer, source: assess, dest: answering}
  - {trigger: verify, source: [refunding, answering], dest: checked}
  - trigger: close
    source: checked
    dest: closed
    conditions: {context_equals: {key: plan, value: basic}}
  - trigger: escalate
    source: checked
    dest: escalated
  - trigger: refer
    source: checked
    dest: escalated
    conditions: {context_equals: {key: plan, value: premium}}
"""

SCRIPT = r"""
answers:
  - match: 'Current state: assess(?=.*?Context:\s*\{[^\n]*?(?:refund|broken|damaged))(?=.*?"order": "?(\d+))'
    respond: '{"trigger": "refund", "args": {"order": "{{ groups[0] }}"}, "reason": "a refund"}'
  - match: "Current state: assess"
    respond: '{"trigger": "answer", "args": {}, "reason": "a question"}'
  - match: "Current state: (refunding|answering)"
    respond: '{"trigger": "verify", "args": {}}'
  - match: "Current state: checked.*did not behave as recorded at decision \\d+ in state checked"
    respond: '{"trigger": "escalate", "args": {}, "reason": "the replay diverged"}'
  - match: "Current state: checked"
    respond: '{"trigger": "close", "args": {}}'
"""

DAMAGED = "Please refund my damaged blender"


def learning(agent) -> LearningHook:
    """The learning hook a learning agent was given: what its run matched and replays."""
    [hook] = [h for h in agent.hooks if isinstance(h, LearningHook)]
    return hook


@pytest.fixture
def workflow(tmp_path: Path):
    (tmp_path / "refunds.script.yaml").write_text(SCRIPT)
    (tmp_path / "refunds.yaml").write_text(WORKFLOW)
    return load_workflow(tmp_path / "refunds.yaml")


@pytest.fixture
def learner(tmp_path: Path):
    (tmp_path / "skills").mkdir()
    store = ProcedureDatabase(path=tmp_path / "skills" / "skills.db")
    yield Learner(store)
    store.close()


def run(workflow, learner, home: Path, **inputs):
    agent = workflow.agent(learn=learner, home=home)
    return agent, agent.run(inputs)


def test_a_run_planned_by_the_llm_is_captured_as_a_trajectory_with_its_inputs_as_parameters(
    workflow, learner, tmp_path
):
    _, result = run(workflow, learner, tmp_path, ticket=DAMAGED, order="4417")
    assert (result.status, result.state, result.llm_calls, result.replayed_decisions) == ("final", "closed", 2, 0)
    [proc] = learner.store.procedures(status=None)
    assert (proc.kind, proc.task_type, proc.steps) == ("trajectory", "refunds", [])
    assert [(d.state, d.trigger, d.args) for d in proc.decisions] == [
        ("assess", "refund", {"order": "{{ order }}"}),
        ("checked", "close", {}),
    ]  # verify was the only way: a fast-forward
    assert [o.action for d in proc.decisions[:2] for o in d.outcomes] == ["set", "set"]  # all before the close
    assert proc.planned_llm_calls == 2 and proc.confidence < 0.8  # one success is not proof


def test_a_second_success_proves_it_and_the_next_run_of_the_kind_replays_with_no_llm_call(workflow, learner, tmp_path):
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="4417")
    _, second = run(workflow, learner, tmp_path, ticket=DAMAGED, order="5120")
    assert second.llm_calls == 2  # not yet trusted: planned again, and the same trajectory is credited, not copied
    [proc] = learner.store.procedures(status=None)
    assert proc.success_count == 2 and proc.confidence >= 0.8
    agent, third = run(workflow, learner, tmp_path, ticket=DAMAGED, order="7731")
    assert learning(agent).match.decision == "match"
    assert (third.status, third.state, third.llm_calls, third.tokens, third.replayed_decisions, third.diverged_at) == (
        "final",
        "closed",
        0,
        0,
        2,
        None,
    )
    assert third.context["refunded"] == "7731"  # the parameter took this run's order, not the recorded one
    [execution] = learner.store.executions(proc.id)
    assert (execution.outcome, execution.llm_calls) == ("success", 0)


def test_a_guard_that_now_fails_hands_over_to_the_llm_in_the_same_run_and_is_a_branch(workflow, learner, tmp_path):
    """An exception, not a replacement: the run that left the routine and succeeded is the procedure's branch; the
    routine stays version 1 and the next routine ticket replays it again."""
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="4417")
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="5120")
    agent, result = run(workflow, learner, tmp_path, ticket=DAMAGED, order="6001", plan="premium")
    assert (result.status, result.state, result.replayed_decisions, result.llm_calls) == ("final", "escalated", 1, 1)
    assert result.diverged_at["state"] == "checked" and result.diverged_at["step"] == 1
    assert Divergence.model_validate(result.diverged_at).reason.startswith("expected trigger 'close' available")
    assert (
        "trigger 'close' available" in result.diverged_at["expected"] and "escalate" in result.diverged_at["observed"]
    )
    # The LLM was told: the script answers `escalate` only to a prompt saying the replay diverged in this state.
    [asked] = [e for e in agent.belief.log if e.action == "policy:llm"]
    assert asked.outputs["reason"] == "the replay diverged"
    [proc] = learner.store.procedures(status=None)
    assert proc.version == 1 and [d.trigger for d in proc.decisions] == ["refund", "close"]
    [branch] = branches(learner.store, proc.id)
    assert [d["trigger"] for d in branch["decisions"]] == ["refund", "escalate"] and branch["runs"] == 1
    assert branch["decisions"][0]["args"] == {"order": "{{ order }}"}  # the replayed part keeps its parameters
    assert branch["state"] == "checked" and "close" in branch["reason"]
    assert result.learning["branch"] == {"procedure": proc.id, "runs": 1}
    assert [e.outcome for e in learner.store.executions(proc.id, version=1)] == ["branch"]  # not a failure
    assert learner.store.health(proc.id).counted_executions == 0
    _, routine = run(workflow, learner, tmp_path, ticket=DAMAGED, order="6002")
    assert (routine.state, routine.llm_calls, routine.replayed_decisions) == ("closed", 0, 2)


def test_a_question_is_not_a_refund_and_is_planned_by_the_llm(workflow, learner, tmp_path):
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="4417")
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="5120")
    agent, result = run(workflow, learner, tmp_path, ticket="When do you open on Sundays?", order="0")
    assert learning(agent).match.decision == "no-match"
    assert (result.state, result.replayed_decisions, result.llm_calls) == ("closed", 0, 2)
    kinds = sorted([d.trigger for d in p.decisions][0] for p in learner.store.procedures(status=None))
    assert kinds == ["answer", "refund"]  # its own trajectory, not a credit to the refund one


def test_another_workflows_procedure_is_never_followed(workflow, learner, tmp_path):
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="4417")
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="5120")
    other_path = tmp_path / "other.yaml"
    other_path.write_text(WORKFLOW.replace("name: refunds", "name: refunds-eu"))
    other = load_workflow(other_path)
    agent, result = run(other, learner, tmp_path, ticket=DAMAGED, order="7731")
    assert learning(agent).procedure is None and result.replayed_decisions == 0 and result.llm_calls == 2


def test_replay_refuses_arguments_the_transition_does_not_accept(workflow):
    from sherpa_skills.engine.agent import Agent

    bad = [RecordedDecision(state="assess", trigger="refund", args={"order": "1", "amount": "9999"})]
    replay = ReplayPolicy(bad, procedure_id="p")
    agent = Agent(workflow.machine, replay)
    result = agent.run({"ticket": DAMAGED, "order": "1"})
    assert result.status == "error" and replay.replayed == 0
    assert "amount" in replay.divergence["observed"]


def test_fill_keeps_a_whole_parameters_type_and_leaves_unknown_names():
    assert fill({"n": "{{ n }}", "s": "order {{ n }} of {{ who }}"}, {"n": 7}) == {"n": 7, "s": "order 7 of {{ who }}"}


# ---------------------------------------------------------------- what the replay's fast path must still refuse

REPLACE = WORKFLOW.replace(
    "  - {trigger: answer, source: assess, dest: answering}",
    """  - trigger: replace
    source: assess
    dest: answering
    arguments: {item: {type: string, enum: [blender, kettle]}}
  - {trigger: answer, source: assess, dest: answering}""",
)


#: Closing after `checked`, whose on_enter `set` ran before (the replace path's only action).
CLOSE_AFTER_CHECK = RecordedDecision(state="checked", trigger="close", outcomes_before=[ActionOutcome(action="set")])


def _replayed(workflow, decisions, **inputs):
    from sherpa_skills.engine.agent import Agent

    replay = ReplayPolicy(decisions, inputs=inputs, procedure_id="p")
    return replay, Agent(workflow.machine, replay).run(inputs)


def test_a_literal_argument_is_validated_again_once_the_workflow_changed(tmp_path):
    """Validation of a recorded literal is kept per transition model: a workflow edited since no longer accepts it."""
    from sherpa_skills.runtime import load_workflow_text

    kettle = [RecordedDecision(state="assess", trigger="replace", args={"item": "kettle"}), CLOSE_AFTER_CHECK]
    before = load_workflow_text(REPLACE, base_dir=tmp_path)
    for order in ("1", "2"):  # the second run reuses the first one's validation
        replay, result = _replayed(before, kettle, ticket="broken kettle", order=order)
        assert (result.state, replay.replayed, replay.divergence) == ("closed", 2, None)
    edited = load_workflow_text(REPLACE.replace("enum: [blender, kettle]", "enum: [blender]"), base_dir=tmp_path)
    replay, result = _replayed(edited, kettle, ticket="broken kettle", order="3")
    assert replay.replayed == 0 and result.status == "error"  # no LLM in this chain: nobody takes over
    assert replay.divergence["step"] == 0 and "item" in replay.divergence["observed"]


def test_a_templated_argument_is_validated_on_every_run(tmp_path):
    """A {{ parameter }} is filled from each run's inputs: one run's valid value does not vouch for the next one's."""
    from sherpa_skills.runtime import load_workflow_text

    workflow = load_workflow_text(REPLACE, base_dir=tmp_path)
    item = [RecordedDecision(state="assess", trigger="replace", args={"item": "{{ item }}"}), CLOSE_AFTER_CHECK]
    replay, result = _replayed(workflow, item, ticket="broken", order="1", item="kettle")
    assert (result.state, replay.replayed, result.context["item"]) == ("closed", 2, "kettle")
    replay, result = _replayed(workflow, item, ticket="broken", order="2", item="toaster")
    assert replay.replayed == 0 and "blender" in replay.divergence["observed"]


def test_a_resumed_run_continues_the_replay_where_it_stopped(workflow, tmp_path):
    """The replay reads only what is new in the belief it follows;
    handed a resumed run's belief, it reads that one whole."""
    from sherpa_skills.engine.agent import Agent
    from sherpa_skills.engine.runstore import RunStore

    decisions = [
        RecordedDecision(state="assess", trigger="refund", args={"order": "{{ order }}"}),
        RecordedDecision(state="checked", trigger="close", outcomes_before=[ActionOutcome(action="set")] * 2),
    ]
    replay = ReplayPolicy(decisions, inputs={"order": "31"}, procedure_id="p")
    store = RunStore(path=tmp_path / "runs.db")
    first = Agent(workflow.machine, replay, store=store, max_steps=1).run({"ticket": DAMAGED, "order": "31"})
    assert (first.status, first.state, replay.replayed) == ("error", "refunding", 1)  # stopped by the step limit
    resumed = Agent.resume(store, first.run_id, workflow.machine, replay)
    result = resumed.run()
    assert (result.status, result.state, replay.replayed, replay.divergence) == ("final", "closed", 2, None)
    assert resumed.belief.context["refunded"] == "31"
    store.close()


def test_an_action_that_now_fails_hands_over_to_the_llm_with_the_divergence_in_its_prompt(tmp_path, learner):
    """A typed Python action whose outcome differs from the recording (its service is down) ends the replay before the
    next decision; the prompt the model is sent says where it diverged, what was expected and what was observed."""
    from sherpa_skills.engine.registry import ActionResult, default_registry, load_builtins
    from sherpa_skills.runtime import load_workflow_text

    load_builtins()
    registry, down = default_registry.child(), set()

    @registry.action("issue_refund", side_effects=True)
    def issue_refund(args, ctx):
        return (
            ActionResult(outputs={"error": "gateway down"}, status="failed")
            if down
            else ActionResult(outputs={"ok": True})
        )

    text = WORKFLOW.replace(
        'after: {set: {refunded: "{{ args.order }}"}}',
        'after: [{set: {refunded: "{{ args.order }}"}}, {issue_refund: {}}]',
    )
    # The model echoes the prompt it was sent when it is told of a divergence: the test reads the prompt, not a flag.
    (tmp_path / "refunds.script.yaml").write_text(
        SCRIPT.replace(
            """respond: '{"trigger": "escalate", "args": {}, "reason": "the replay diverged"}'""",
            """respond: '{"trigger": "escalate", "args": {}, "reason": {{ prompt | tojson }}}'""",
        )
    )
    workflow = load_workflow_text(text, registry=registry, base_dir=tmp_path)
    for order in ("4417", "5120"):
        run(workflow, learner, tmp_path, ticket=DAMAGED, order=order)
    down.add("gateway")
    agent, result = run(workflow, learner, tmp_path, ticket=DAMAGED, order="6001")
    assert (result.status, result.state, result.replayed_decisions, result.llm_calls) == ("final", "escalated", 1, 1)
    [asked] = [e for e in agent.belief.log if e.action == "policy:llm"]
    prompt = asked.outputs["reason"]
    assert prompt.startswith("Current state: checked")
    assert (
        "did not behave as recorded at decision 1 in state checked.\n  replayed before it: 1 step(s) as recorded\n"
        "  expected: action outcome issue_refund: ok\n  observed: issue_refund: failed\n" in prompt
    )


def test_the_replay_is_asked_after_the_rules_that_can_decide_and_before_the_llm(workflow, learner, tmp_path):
    """An empty rule table (`rules: []`) never decides, so a replayed run does not ask it; a real one is asked first."""
    from sherpa_skills.engine.spec import RuleSpec
    from sherpa_skills.policy.llm import LLMPolicy
    from sherpa_skills.policy.rule import RulePolicy

    run(workflow, learner, tmp_path, ticket=DAMAGED, order="4417")
    run(workflow, learner, tmp_path, ticket=DAMAGED, order="5120")
    agent, result = run(workflow, learner, tmp_path, ticket=DAMAGED, order="7731")
    assert result.replayed_decisions == 2
    assert [type(p) for p in agent.decider.policies] == [LearningAdvisor, LLMPolicy]
    rules = RulePolicy([RuleSpec(state="checked", trigger="escalate")])
    llm = next(p for p in workflow.policy.policies if isinstance(p, LLMPolicy))
    agent = workflow.agent(learn=learner, home=tmp_path, policy=type(workflow.policy)(rules, llm))
    result = agent.run({"ticket": DAMAGED, "order": "8800"})
    assert [type(p) for p in agent.decider.policies] == [RulePolicy, LearningAdvisor, LLMPolicy]
    # the rule decided where the recording had the LLM close: the replay was not asked there,
    # and the run left the recording
    assert (result.state, result.rule_decisions, result.replayed_decisions) == ("escalated", 1, 1)
    assert result.diverged_at["expected"] == "a decision in 'checked' (close)"


def test_a_numeric_input_is_a_parameter_too(workflow, learner, tmp_path):
    """`--input order=4417` arrives as a number:
    the LLM's "4417" is still the order, so the next ticket's order fills it."""
    run(workflow, learner, tmp_path, ticket=DAMAGED, order=4417)
    run(workflow, learner, tmp_path, ticket=DAMAGED, order=5120)
    [proc] = learner.store.procedures(status=None)
    assert proc.decisions[0].args == {"order": "{{ order }}"} and proc.success_count == 2
    _, third = run(workflow, learner, tmp_path, ticket=DAMAGED, order=7731)
    assert (third.state, third.llm_calls, third.replayed_decisions) == ("closed", 0, 2)
    assert third.context["refunded"] == "7731"


# ------------------------------------------------------------ outcomes: the status counts, not just how many there were


def _refund_workflow(tmp_path, gateway_up: bool):
    """WORKFLOW whose refund also calls a typed action that succeeds or fails with the gateway:
    the same actions either way."""
    from sherpa_skills.engine.registry import ActionResult, default_registry, load_builtins
    from sherpa_skills.runtime import load_workflow_text

    load_builtins()
    registry = default_registry.child()

    @registry.action("issue_refund", side_effects=True)
    def issue_refund(args, ctx):
        return (
            ActionResult(outputs={"ok": True})
            if gateway_up
            else ActionResult(outputs={"error": "gateway down"}, status="failed")
        )

    text = WORKFLOW.replace(
        'after: {set: {refunded: "{{ args.order }}"}}',
        'after: [{set: {refunded: "{{ args.order }}"}}, {issue_refund: {}}]',
    )
    return load_workflow_text(text, registry=registry, base_dir=tmp_path)


def _recorded(refund_status: str, stored_before: bool = False) -> list[RecordedDecision]:
    """The refund's recording as capture keeps it (each decision the outcomes since the one before), or as procedures
    stored before that kept them (all outcomes so far, in `outcomes_before`)."""
    before_close = [
        ActionOutcome(action="set"),
        ActionOutcome(action="issue_refund", status=refund_status),
        ActionOutcome(action="set"),
    ]
    close = (
        RecordedDecision(state="checked", trigger="close", outcomes_before=before_close)
        if stored_before
        else RecordedDecision(state="checked", trigger="close", outcomes=before_close)
    )
    return [RecordedDecision(state="assess", trigger="refund", args={"order": "{{ order }}"}), close]


FORMS = pytest.mark.parametrize("stored_before", [False, True], ids=["per-decision", "stored-before"])


@FORMS
@pytest.mark.parametrize(("recorded", "now_up"), [("ok", True), ("failed", False)])
def test_the_same_outcomes_replay_to_the_end(tmp_path, recorded: str, now_up: bool, stored_before: bool):
    """The control for the two below: these recordings are what the workflow does,
    so an unchanged world replays whole."""
    recording = _recorded(recorded, stored_before)
    replay, result = _replayed(_refund_workflow(tmp_path, now_up), recording, ticket=DAMAGED, order="12")
    assert (result.status, result.state, replay.replayed, replay.divergence) == ("final", "closed", 2, None)


@FORMS
@pytest.mark.parametrize(("recorded", "now_up", "observed"), [("ok", False, "failed"), ("failed", True, "ok")])
def test_an_outcome_that_changed_status_is_a_divergence(
    tmp_path, recorded: str, now_up: bool, observed: str, stored_before: bool
):
    """ok → failed and failed → ok, with as many outcomes as recorded:
    the replay stops before `close` and says which."""
    recording = _recorded(recorded, stored_before)
    replay, result = _replayed(_refund_workflow(tmp_path, now_up), recording, ticket=DAMAGED, order="12")
    assert result.status == "error" and result.state == "checked" and replay.replayed == 1  # no LLM in this chain
    assert (replay.divergence["step"], replay.divergence["state"]) == (1, "checked")
    assert replay.divergence["expected"] == f"action outcome issue_refund: {recorded}"
    assert replay.divergence["observed"] == f"issue_refund: {observed}"
