"""Policies: rules, fast-forward, the rules-then-LLM chain, and the LLM policy through real litellm
and the scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.engine.agent import Agent
from sherpa_skills.engine.workflow import load_workflow, load_workflow_text
from sherpa_skills.errors import WorkflowError
from sherpa_skills.policy.base import Decision, DecisionContext
from sherpa_skills.policy.llm import response_schema

pytestmark = pytest.mark.usefixtures("fresh_scripts")


class RecordingPolicy:
    """Answers from a fixed table and remembers every state it was asked in."""

    def __init__(self, answers: dict[str, Decision] | None = None):
        self.answers = answers or {}
        self.asked: list[tuple[str, list[str]]] = []

    def decide(self, ctx: DecisionContext) -> Decision | None:
        self.asked.append((ctx.state, ctx.triggers()))
        return self.answers.get(ctx.state)

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        return self.decide(ctx)


def _trajectory(agent_or_belief: Any) -> list[tuple[str, str | None, str]]:
    belief = getattr(agent_or_belief, "belief", agent_or_belief)
    return [(t.state, t.trigger, t.decided_by) for t in belief.trajectory]


# ---------------------------------------------------------------- rule policy

RULES_WORKFLOW = """
name: rules
initial: review
policy:
  type: rule
  rules:
{rules}
states:
  review:
    initial: first
    states:
      first:
        transitions:
          - {{trigger: fast, dest: done}}
          - trigger: slow
            dest: done
            arguments:
              speed: {{type: integer}}
            after: {{set: {{speed: {{from_arg: speed}}}}}}
          - {{trigger: odd, dest: done}}
  done:
    final: true
"""


def _rules_agent(rules: str, **context: Any) -> tuple[Agent, Any]:
    text = RULES_WORKFLOW.format(rules=rules)
    agent = load_workflow_text(text, name="rules.yaml").agent()
    return agent, agent.run(context)


class TestRulePolicy:
    RULES = """\
    - {state: "other*", trigger: odd}
    - {state: "review/*", when: {context_true: {key: urgent}}, trigger: fast}
    - {state: "review/*", unless: {context_true: {key: urgent}}, trigger: slow, args: {speed: 1}}
    - {state: "*", trigger: slow, args: {speed: 99}}
"""

    def test_a_state_glob_matches_nested_leaves(self):
        """`review/*` matches the nested leaf `review/first`; the rule decides and is counted."""
        agent, result = _rules_agent(self.RULES, urgent=True)
        assert result.status == "final"
        assert _trajectory(agent)[1:] == [("done", "fast", "rule")]
        assert (result.rule_decisions, result.llm_calls) == (1, 0)

    def test_a_rule_whose_glob_does_not_match_never_fires(self):
        """A rule for `other*` is ignored in `review/first`; with no other rule, no policy decides."""
        agent, result = _rules_agent('    - {state: "other*", trigger: odd}\n')
        assert result.status == "error"
        assert "no policy decided in state 'review/first'" in result.error
        assert "fast, slow, odd" in result.error

    def test_guards_select_the_rule(self):
        """`when` guards must pass and `unless` guards must fail for a rule to fire."""
        agent, result = _rules_agent(self.RULES, urgent=False)
        assert _trajectory(agent)[-1] == ("done", "slow", "rule")

    def test_the_first_matching_rule_wins_and_its_args_reach_the_transition(self):
        """The earlier `review/*` rule beats the later `*` rule, and its `speed: 1` is what the action receives."""
        agent, result = _rules_agent(self.RULES, urgent=False)
        assert result.context["speed"] == 1

    def test_a_rule_naming_an_unavailable_trigger_is_skipped(self):
        """A rule whose trigger is not offered in the state gives way to the next matching rule."""
        text = """
name: skip
initial: s
policy:
  type: rule
  rules:
    - {state: "*", trigger: later}
    - {state: "*", trigger: now}
states:
  s:
    transitions:
      - {trigger: now, dest: t}
      - {trigger: other, dest: t}
  t:
    transitions: [{trigger: later, dest: u}]
  u:
    final: true
"""
        agent = load_workflow_text(text, name="skip.yaml").agent()
        result = agent.run()
        assert result.status == "final"
        assert _trajectory(agent) == [("s", None, "start"), ("t", "now", "rule"), ("u", "later", "fast_forward")]


# ---------------------------------------------------------------- fast-forward

STRAIGHT = """
name: straight
initial: a
states:
  a:
    transitions: [{trigger: to_b, dest: b}]
  b:
    transitions:
      - {trigger: to_c, dest: c, arguments: {note: {type: string, required: false, default: none}}}
  c:
    final: true
"""

NEEDS_ARGS = """
name: needs_args
initial: a
states:
  a:
    transitions:
      - trigger: name_it
        dest: b
        arguments:
          name: {type: string, description: what to call it}
        after: {set: {name: {from_arg: name}}}
  b:
    final: true
"""


class TestFastForward:
    def test_a_single_transition_without_arguments_is_taken_without_asking_the_policy(self):
        """Each step with exactly one argument-free option is fast-forwarded, counted, and the policy is never asked."""
        policy = RecordingPolicy()
        agent = Agent(load_workflow_text(STRAIGHT, name="straight.yaml").machine, policy)
        result = agent.run()
        assert result.status == "final"
        assert policy.asked == []
        assert result.fast_forwards == 2
        assert [t[2] for t in _trajectory(agent)] == ["start", "fast_forward", "fast_forward"]

    def test_a_transition_needing_external_arguments_is_never_fast_forwarded(self):
        """Even as the only option, a transition with a required argument goes to the policy for its value."""
        policy = RecordingPolicy({"a": Decision("name_it", {"name": "Ada"}, decided_by="rule")})
        agent = Agent(load_workflow_text(NEEDS_ARGS, name="needs_args.yaml").machine, policy)
        result = agent.run()
        assert policy.asked == [("a", ["name_it"])]
        assert result.fast_forwards == 0
        assert result.context["name"] == "Ada"

    def test_without_a_policy_a_transition_needing_arguments_stops_the_run_clearly(self):
        """No policy to supply the argument: status error naming the state and the trigger, not a crash."""
        result = load_workflow_text(NEEDS_ARGS, name="needs_args.yaml").agent().run()
        assert result.status == "error"
        assert "state 'a'" in result.error and "name_it" in result.error


# ---------------------------------------------------------------- LLM policy, through litellm and the scripted model

LLM_WORKFLOW = """
name: llm_flow
initial: review
llm:
  model: scripted/script.yaml
policy:
  type: llm
  max_retries: {retries}
states:
  review:
    description: a change waits for a verdict
    transitions:
      - {{trigger: approve, dest: done, description: the change is fine}}
      - {{trigger: reject, dest: done, description: the change is not fine}}
      - trigger: classify
        dest: done
        arguments:
          label: {{type: string, enum: [bug, feature], description: what kind of change}}
        after: {{set: {{label: {{from_arg: label}}}}}}
  done:
    final: true
"""

APPROVE = '{"trigger": "approve", "args": {}, "reason": "looks fine"}'


def _llm_workflow(write_file: Any, script: str, retries: int = 2) -> Any:
    write_file("script.yaml", script)
    return load_workflow(write_file("llm_flow.yaml", LLM_WORKFLOW.format(retries=retries)))


class TestLLMPolicy:
    def test_a_valid_answer_is_taken(self, write_file):
        """The model's JSON choice fires its transition; one call, its tokens counted, decided_by llm."""
        workflow = _llm_workflow(
            write_file, f"answers:\n  - match: 'Current state: review'\n    respond: '{APPROVE}'\n"
        )
        agent = workflow.agent()
        result = agent.run()
        assert result.status == "final"
        assert _trajectory(agent)[-1] == ("done", "approve", "llm")
        assert (result.llm_calls, result.llm_decisions) == (1, 1)
        assert result.tokens > 0
        assert [e.action for e in agent.belief.log] == ["policy:llm"]
        assert agent.belief.log[0].outputs == {"trigger": "approve", "args": {}, "reason": "looks fine", "llm_calls": 1}

    def test_an_answer_that_is_not_json_is_reasked_with_the_error(self, write_file):
        """Garbage is said back to the model as rejected; its second, valid answer is taken."""
        script = f"""answers:
  - match: "rejected: the answer is not a JSON object"
    respond: '{APPROVE}'
  - match: "Current state: review"
    respond: "I would approve it, I think."
"""
        result = _llm_workflow(write_file, script).agent().run()
        assert result.status == "final" and result.state == "done"
        assert result.llm_calls == 2 and result.llm_decisions == 1

    def test_an_answer_naming_an_unavailable_trigger_is_reasked(self, write_file):
        """A trigger that is not offered is rejected with the list of available ones, and the model answers again."""
        script = f"""answers:
  - match: "rejected: 'fly' is not an available transition; choose one of approve, reject, classify"
    respond: '{APPROVE}'
  - match: "Current state: review"
    respond: '{{"trigger": "fly", "args": {{}}}}'
"""
        agent = _llm_workflow(write_file, script).agent()
        result = agent.run()
        assert result.status == "final"
        assert _trajectory(agent)[-1] == ("done", "approve", "llm")
        assert result.llm_calls == 2

    def test_arguments_are_validated_against_the_transitions_schema(self, write_file):
        """A label outside the argument's enum is rejected and re-asked; the valid label reaches the action."""
        script = """answers:
  - match: "rejected: arguments of 'classify' are not valid: label"
    respond: '{"trigger": "classify", "args": {"label": "bug"}}'
  - match: "Current state: review"
    respond: '{"trigger": "classify", "args": {"label": "banana"}}'
"""
        result = _llm_workflow(write_file, script).agent().run()
        assert result.status == "final"
        assert result.context["label"] == "bug"
        assert result.llm_calls == 2

    def test_after_max_retries_the_run_ends_in_error_naming_state_and_triggers(self, write_file):
        """Garbage every time: status error after 1 + max_retries calls, a message naming the state and the choices."""
        workflow = _llm_workflow(write_file, "answers: []\ndefault: no idea\n", retries=1)
        result = workflow.agent().run()
        assert result.status == "error"
        assert result.state == "review"
        assert "state 'review'" in result.error
        assert "approve, reject, classify" in result.error
        assert result.llm_calls == 2 and result.tokens > 0

    def test_a_model_failure_ends_the_run_in_error_not_an_exception(self, write_file):
        """The model itself failing (here: the script has no answer) is a run error naming the state."""
        result = _llm_workflow(write_file, "answers:\n  - {match: never-in-a-prompt, respond: x}\n").agent().run()
        assert result.status == "error"
        assert "state 'review'" in result.error and "no answer matches" in result.error

    def test_the_structured_output_schema_enumerates_the_available_triggers(self, write_file):
        """response_schema makes `trigger` an enum of exactly what the state offers."""
        agent = _llm_workflow(write_file, "answers: []\n").agent()
        schema = response_schema(agent.available_transitions())["json_schema"]["schema"]
        assert [c["properties"]["trigger"] for c in schema["anyOf"]] == [
            {"type": "string", "enum": [t]} for t in ("approve", "reject", "classify")
        ]
        assert all(c["required"] == ["trigger", "args"] for c in schema["anyOf"])


# ---------------------------------------------------------------- the chain, and run/arun parity

CHAIN = """
name: chain
initial: intake
llm:
  model: scripted/script.yaml
policy:
  type: chain
  rules:
    - state: intake
      trigger: classify
      args: {label: bug}
states:
  intake:
    transitions:
      - trigger: classify
        dest: routing
        arguments:
          label: {enum: [bug, feature]}
        after: {set: {label: {from_arg: label}}}
      - {trigger: drop, dest: closed}
  routing:
    transitions:
      - {trigger: escalate, dest: closed}
      - {trigger: answer, dest: closed}
  closed:
    final: true
"""

CHAIN_SCRIPT = """answers:
  - match: "Current state: routing"
    respond: '{"trigger": "answer", "args": {}, "reason": "a known bug"}'
"""


class TestChainPolicy:
    def test_rules_decide_first_and_the_llm_only_where_no_rule_does(self, write_file):
        """The rule picks `classify` in intake; the LLM is asked once, in routing; both are counted."""
        write_file("script.yaml", CHAIN_SCRIPT)
        agent = load_workflow(write_file("chain.yaml", CHAIN)).agent()
        result = agent.run()
        assert result.status == "final"
        assert _trajectory(agent) == [
            ("intake", None, "start"),
            ("routing", "classify", "rule"),
            ("closed", "answer", "llm"),
        ]
        assert (result.rule_decisions, result.llm_decisions, result.llm_calls) == (1, 1, 1)
        assert result.tokens > 0
        assert result.context["label"] == "bug"


class TestRunAndArunAgree:
    async def test_arun_gives_the_same_trajectory_and_counters_as_run(self, write_file):
        """The async twin, on the same workflow and script, walks the same states by the same deciders."""
        write_file("script.yaml", CHAIN_SCRIPT)
        workflow = load_workflow(write_file("chain.yaml", CHAIN))
        sync_agent, async_agent = workflow.agent(), workflow.agent()
        sync_result = sync_agent.run()
        async_result = await async_agent.arun()
        assert _trajectory(async_agent) == _trajectory(sync_agent)
        assert (async_result.status, async_result.state, async_result.context) == (
            sync_result.status,
            sync_result.state,
            sync_result.context,
        )
        assert async_result.counters == sync_result.counters

    async def test_arun_fails_the_same_way_after_max_retries(self, write_file):
        """Exhausted retries end arun in the same error as run."""
        workflow = _llm_workflow(write_file, "answers: []\ndefault: no idea\n", retries=1)
        sync_result = workflow.agent().run()
        async_result = await workflow.agent().arun()
        assert (async_result.status, async_result.error, async_result.llm_calls) == (
            sync_result.status,
            sync_result.error,
            sync_result.llm_calls,
        )


# ---------------------------------------------------------------- only declared arguments reach actions

SECRET = "sk-test-do-not-print-4242"

LISTER = """
name: lister
initial: start
llm:
  model: scripted/script.yaml
policy:
  type: llm
  max_retries: {retries}
context: {{pattern: notes.txt}}
states:
  start:
    transitions:
      - trigger: list_files
        dest: done
        description: list the text files here
        before:
          shell: {{command: "ls {{{{ pattern }}}}; cat; printenv OPENAI_API_KEY || true"}}
      - trigger: classify
        dest: done
        arguments:
          label: {{type: string, enum: [bug, feature]}}
        after: {{set: {{label: {{from_arg: label}}}}}}
  done:
    final: true
"""

ATTACK = '{"trigger": "list_files", "args": {"cwd": "/etc", "stdin": "injected-stdin", "env": ["OPENAI_API_KEY"]}}'


def _lister(write_file: Any, script: str, retries: int = 1) -> Any:
    write_file("script.yaml", script)
    write_file("notes.txt", "a note\n")
    return load_workflow(write_file("lister.yaml", LISTER.format(retries=retries)))


def _shell_entries(agent: Agent) -> list[Any]:
    return [e for e in agent.belief.log if e.action == "shell"]


class TestOnlyDeclaredArgumentsReachActions:
    def test_invented_arguments_for_a_transition_without_any_are_refused_and_reasked(
        self, write_file, monkeypatch, tmp_path
    ):
        """The reported attack: cwd/stdin/env sent for `list_files` are rejected, the model is re-asked, and the
        shell runs as declared: here, without the key, without the injected stdin."""
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.chdir(tmp_path)
        script = f"""answers:
  - match: "rejected: 'list_files' takes no arguments; undeclared: cwd, env, stdin"
    respond: '{{"trigger": "list_files", "args": {{}}}}'
  - match: "Current state: start"
    respond: '{ATTACK}'
"""
        agent = _lister(write_file, script).agent()
        result = agent.run()
        assert result.status == "final", result.error
        assert result.llm_calls == 2
        (shell,) = _shell_entries(agent)
        assert set(shell.inputs) == {"command"}
        assert "notes.txt" in shell.outputs["stdout"], shell.outputs
        assert SECRET not in shell.outputs["stdout"] and "injected-stdin" not in shell.outputs["stdout"]

    def test_a_model_that_insists_ends_the_run_before_any_action_runs(self, write_file, monkeypatch):
        """Every answer carries the invented arguments: the run errors naming them, and the shell never runs."""
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        agent = _lister(write_file, f"answers: []\ndefault: '{ATTACK}'\n", retries=1).agent()
        result = agent.run()
        assert result.status == "error" and result.state == "start"
        assert "'list_files' takes no arguments; undeclared: cwd, env, stdin" in result.error
        assert result.llm_calls == 2
        assert _shell_entries(agent) == []

    def test_extra_keys_beside_declared_arguments_are_refused(self, write_file):
        """`classify` declares `label` only: an answer adding `cwd` is re-asked, and only `label` reaches the action."""
        script = """answers:
  - match: "rejected: 'classify' takes only label; undeclared: cwd"
    respond: '{"trigger": "classify", "args": {"label": "bug"}}'
  - match: "Current state: start"
    respond: '{"trigger": "classify", "args": {"label": "bug", "cwd": "/etc"}}'
"""
        agent = _lister(write_file, script).agent()
        result = agent.run()
        assert result.status == "final" and result.context["label"] == "bug"
        assert result.llm_calls == 2

    def test_a_rule_giving_undeclared_arguments_is_refused_at_load(self):
        """Rules are checked when the workflow loads:
        `fast` declares nothing, so a rule giving it `cwd` is a FILE:LINE problem."""
        with pytest.raises(WorkflowError) as caught:
            _rules_agent("    - {state: 'review/*', trigger: fast, args: {cwd: /etc}}")
        assert "rules.yaml:7: rule 1 gives 'fast' undeclared argument(s) cwd; it declares: none" in str(caught.value)

    def test_a_custom_policy_sending_undeclared_arguments_is_a_policy_error(self):
        """Any policy goes through the same check at decision time: the run stops naming the argument, nothing runs."""
        policy = RecordingPolicy({"review/first": Decision("fast", {"cwd": "/etc"})})
        agent = Agent(load_workflow_text(RULES_WORKFLOW.format(rules="    []"), name="rules.yaml").machine, policy)
        result = agent.run()
        assert result.status == "error" and result.state == "review/first"
        assert result.error == "state 'review/first': 'fast' takes no arguments; undeclared: cwd"

    def test_a_user_trigger_with_undeclared_arguments_is_a_usage_error(self, write_file, home, capsys):
        """`resume --trigger T --arg cwd=/etc` on a transition without that argument: refused, nothing run, still
        resumable."""
        from sherpa_skills.cli import main

        write_file("script.yaml", "answers: []\n")
        waiting = write_file(
            "waiting.yaml",
            """
name: waiting
initial: idle
states:
  idle:
    waiting: true
    transitions:
      - trigger: go
        dest: done
        before: {shell: {command: "pwd {{ run_id }}"}}
      - {trigger: stop, dest: done}
  done: {final: true}
""",
        )
        assert main(["run", str(waiting), "--home", str(home), "--quiet"]) == 0
        from sherpa_skills.engine.runstore import RunStore

        run_id = RunStore(path=home / "store.db").list_runs(1)[0].run_id
        capsys.readouterr()
        assert main(["resume", run_id, "--home", str(home), "--trigger", "go", "--arg", "cwd=/etc", "--json"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == "sherpa-skills: state 'idle': 'go' takes no arguments; undeclared: cwd\n"
        row = RunStore(path=home / "store.db").get_run(run_id)
        assert (row.status, row.state, row.tick) == ("waiting", "idle", 0)
        assert main(["resume", run_id, "--home", str(home), "--trigger", "stop", "--quiet"]) == 0

    def test_an_event_payload_is_data_and_only_declared_keys_become_arguments(self, write_file):
        """An event carrying cwd/stdin/env for a transition that declares none fires it with no arguments; the
        payload stays readable as `event.payload`, and the shell runs as declared."""
        workflow = load_workflow_text(
            """
name: receiver
initial: idle
states:
  idle: {waiting: true}
  done: {final: true}
transitions:
  - trigger: list_files
    source: idle
    dest: done
    before: {shell: {command: "echo {{ state }}; cat"}}
""",
            name="receiver.yaml",
        )
        agent = workflow.agent()
        agent.run()
        result = agent.handle(
            {"name": "list_files", "topic": "t", "payload": {"cwd": "/etc", "stdin": "injected-stdin", "env": ["HOME"]}}
        )
        assert result.status == "final" and result.event["outcome"] == "handled"
        (shell,) = _shell_entries(agent)
        assert set(shell.inputs) == {"command"} and "injected-stdin" not in shell.outputs["stdout"]
        assert result.context["event"]["payload"]["cwd"] == "/etc"

    def test_the_structured_output_schema_has_one_closed_object_per_trigger(self, write_file):
        """Each trigger's schema lists exactly its own arguments, with additionalProperties false at both levels."""
        agent = _lister(write_file, "answers: []\n").agent()
        agent.run()  # fails at the policy; the options are what matters
        schema = response_schema(agent.available_transitions())["json_schema"]["schema"]
        by_trigger = {c["properties"]["trigger"]["enum"][0]: c for c in schema["anyOf"]}
        assert set(by_trigger) == {"list_files", "classify"}
        for choice in by_trigger.values():
            assert choice["additionalProperties"] is False
            assert choice["properties"]["args"]["additionalProperties"] is False
        assert by_trigger["list_files"]["properties"]["args"]["properties"] == {}
        assert by_trigger["classify"]["properties"]["args"]["properties"] == {
            "label": {"type": "string", "enum": ["bug", "feature"]}
        }
        assert by_trigger["classify"]["properties"]["args"]["required"] == ["label"]


# ---------------------------------------------------------------- which model the policy asks

REJECT = '{"trigger": "reject", "args": {}, "reason": "the other model"}'


class TestModelPrecedence:
    def _two_scripts(self, write_file: Any) -> tuple[Any, Path]:
        workflow = _llm_workflow(
            write_file, f"answers:\n  - match: 'Current state: review'\n    respond: '{APPROVE}'\n"
        )
        other = write_file("other.yaml", f"answers:\n  - match: 'Current state: review'\n    respond: '{REJECT}'\n")
        return workflow, other

    def test_the_runs_model_overrides_the_workflows_for_the_policy(self, write_file):
        """`workflow.agent(model=...)` (what `--model` does) is the model the policy asks,
        not the workflow's llm.model."""
        from sherpa_skills.testing import scripted_model

        workflow, other = self._two_scripts(write_file)
        agent = workflow.agent(model=scripted_model(other))
        result = agent.run()
        assert _trajectory(agent)[-1] == ("done", "reject", "llm")
        assert result.llm_calls == 1

    def test_cli_model_overrides_the_workflow_and_the_environment(self, write_file, tmp_path, monkeypatch, capsys):
        """`run --model M`: M decides, although the workflow names another model and SHERPA_SKILLS_MODEL a third."""
        from sherpa_skills.cli import main

        workflow, other = self._two_scripts(write_file)
        monkeypatch.setenv("SHERPA_SKILLS_MODEL", "scripted/does-not-exist.yaml")
        code = main(
            ["run", str(workflow.path), "--home", str(tmp_path / "home"), "--model", f"scripted/{other}", "--json"]
        )
        result = json.loads(capsys.readouterr().out)
        assert code == 0 and result["state"] == "done" and result["llm_calls"] == 1
        from sherpa_skills.engine.runstore import RunStore

        belief = RunStore(path=tmp_path / "home" / "store.db").load_belief(result["run_id"])
        assert [t.trigger for t in belief.trajectory][-1] == "reject"

    def test_the_workflows_model_comes_before_the_environment(self, write_file, monkeypatch):
        """Without a run model, llm.model decides; SHERPA_SKILLS_MODEL is only the last resort."""
        workflow, other = self._two_scripts(write_file)
        monkeypatch.setenv("SHERPA_SKILLS_MODEL", f"scripted/{other}")
        agent = workflow.agent()
        agent.run()
        assert _trajectory(agent)[-1] == ("done", "approve", "llm")


# ---------------------------------------------------------------- arun keeps the event loop free

LOOP_PROBE = r"""
import asyncio, json, sys
from pathlib import Path
from sherpa_skills.engine.workflow import load_workflow
from sherpa_skills.llm import _litellm

async def main():
    agent = load_workflow(Path(sys.argv[1])).agent()
    during_import, done = [], False

    async def ticker():
        while not done:
            # litellm is in sys.modules from the moment its import starts; _litellm.is_loaded() once it ends.
            if "litellm" in sys.modules and not _litellm.is_loaded():
                during_import.append(1)
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    result = await agent.arun()
    done = True
    await task
    print(json.dumps({"status": result.status, "ticks_during_import": len(during_import)}))

asyncio.run(main())
"""


class TestArunDoesNotBlockTheLoop:
    @pytest.mark.slow
    def test_litellm_is_imported_off_the_event_loop(self, write_file):
        """In a fresh interpreter, a concurrent task keeps ticking while arun's first LLM decision imports litellm."""
        import subprocess
        import sys

        workflow = _llm_workflow(
            write_file, f"answers:\n  - match: 'Current state: review'\n    respond: '{APPROVE}'\n"
        )
        probe = write_file("probe.py", LOOP_PROBE)
        import os

        env = {
            **os.environ,
            "SHERPA_SKILLS_SCRIPTED_VIA": "litellm",
        }  # the stand-in through litellm, as a real model goes
        done = subprocess.run(
            [sys.executable, str(probe), str(workflow.path)], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["status"] == "final"
        assert report["ticks_during_import"] > 0
