"""sherpa_skills.llm.call offline, with the scripted stand-in:
through real litellm as a custom provider, and in-process.

Every test runs on both routes (`SHERPA_SKILLS_SCRIPTED_VIA=litellm` and the default `direct`), so the shortcut that
spares offline runs the litellm import cannot drift from the path a real model takes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.llm.call import (
    MODEL_ENV,
    SCRIPTED_VIA_ENV,
    Completion,
    acomplete,
    complete,
    needs_litellm,
    resolve_model,
    warm_up,
)
from sherpa_skills.testing import estimate_tokens, reset_scripts, scripted_model

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """\
answers:
  - match: "approve"
    respond: '{"trigger": "approve", "args": {}}'
  - match: "deny"
    respond: '{"trigger": "deny", "args": {}}'
  - match: "once"
    respond: "only once"
    times: 1
"""


@pytest.fixture(autouse=True, params=["litellm", "direct"])
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(SCRIPTED_VIA_ENV, request.param)
    return request.param


@pytest.fixture(autouse=True)
def _fresh_scripts():
    reset_scripts()
    yield
    reset_scripts()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "answers.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def ask(text: str) -> list[dict]:
    return [{"role": "system", "content": "Pick a transition."}, {"role": "user", "content": text}]


def test_complete_answers(script):
    answer = complete(ask("please approve"), scripted_model(script))
    assert isinstance(answer, Completion)
    assert answer.text == '{"trigger": "approve", "args": {}}'
    assert answer.model == scripted_model(script)
    assert answer.cost == 0.0


async def test_acomplete_answers(script):
    answer = await acomplete(ask("please deny"), scripted_model(script))
    assert answer.text == '{"trigger": "deny", "args": {}}'


def test_answers_follow_the_prompt_regardless_of_order(script):
    model = scripted_model(script)
    texts = [complete(ask(word), model).text for word in ("deny", "approve", "deny", "approve")]
    assert [t.split('"')[3] for t in texts] == ["deny", "approve", "deny", "approve"]


def test_token_counts_are_deterministic_and_non_zero(script):
    messages = ask("approve this change")
    first = complete(messages, scripted_model(script))
    second = complete(messages, scripted_model(script))
    assert (first.prompt_tokens, first.completion_tokens) == (second.prompt_tokens, second.completion_tokens)
    assert first.prompt_tokens == estimate_tokens("Pick a transition.\napprove this change")
    assert first.completion_tokens == estimate_tokens(first.text) > 0
    assert first.tokens == first.prompt_tokens + first.completion_tokens


def test_times_exhaustion_becomes_model_error(script):
    model = scripted_model(script)
    assert complete(ask("once"), model).text == "only once"
    with pytest.raises(ModelError, match="used up by 'times'"):
        complete(ask("once"), model)


def test_no_match_is_a_model_error_naming_model_script_and_prompt(script, route):
    prompt = "something unexpected " + "y" * 300
    with pytest.raises(ModelError) as caught:
        complete(ask(prompt), scripted_model(script))
    message = str(caught.value)
    assert f"model '{scripted_model(script)}'" in message
    assert str(script.resolve()) in message
    assert prompt[:200] in message
    assert "Traceback" not in message
    assert caught.value.__cause__ is not None
    assert type(caught.value.__cause__).__module__.startswith(
        "litellm" if route == "litellm" else "sherpa_skills.llm.scripted"
    )


async def test_async_no_match_is_a_model_error(script):
    with pytest.raises(ModelError, match="no answer matches"):
        await acomplete(ask("nothing"), scripted_model(script))


def test_bad_script_is_a_model_error_naming_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text('answers:\n  - {match: "(", respond: x}\n', encoding="utf-8")
    with pytest.raises(ModelError, match=r"bad\.yaml: answers\[0\]: bad regex"):
        complete(ask("x"), scripted_model(bad))


def test_relative_script_resolves_against_base_dir(script, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    answer = complete(ask("approve"), "scripted/answers.yaml", base_dir=tmp_path)
    assert answer.model == scripted_model(script)


def test_relative_script_resolves_against_cwd_without_base_dir(script, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert complete(ask("deny"), "scripted/answers.yaml").text == '{"trigger": "deny", "args": {}}'


def test_response_format_and_options_are_accepted(script):
    schema = {"type": "json_schema", "json_schema": {"name": "choice", "schema": {"type": "object"}}}
    answer = complete(ask("approve"), scripted_model(script), response_format=schema, temperature=0.2, max_tokens=50)
    assert answer.text.startswith('{"trigger": "approve"')


def test_unsupported_response_format_is_retried_without_it(monkeypatch):
    import litellm
    from litellm import CustomLLM

    seen: list[dict] = []

    class Picky(CustomLLM):
        """A provider that, like some real ones, refuses response_format."""

        def completion(self, *args, **kwargs):
            seen.append(dict(kwargs["optional_params"]))
            if "response_format" in kwargs["optional_params"]:
                raise litellm.UnsupportedParamsError(message="no response_format here", model="x", llm_provider="picky")
            kwargs["model_response"].choices[0].message.content = "plain"
            return kwargs["model_response"]

    monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "picky", "custom_handler": Picky()}])
    answer = complete(ask("x"), "picky/model", response_format={"type": "json_object"})
    assert answer.text == "plain"
    assert ["response_format" in s for s in seen] == [True, False]


def test_scripted_provider_survives_a_reassigned_provider_map(script, monkeypatch):
    import litellm

    complete(ask("approve"), scripted_model(script))
    monkeypatch.setattr(litellm, "custom_provider_map", [])
    assert complete(ask("deny"), scripted_model(script)).text == '{"trigger": "deny", "args": {}}'


def test_provider_failure_is_a_model_error_naming_the_model():
    with pytest.raises(ModelError, match="model 'no-such-provider-xyz/model'") as caught:
        complete(ask("x"), "no-such-provider-xyz/model")
    assert caught.value.__cause__ is not None


def test_empty_model_is_a_model_error():
    with pytest.raises(ModelError, match=MODEL_ENV):
        complete(ask("x"), "  ")


def test_resolve_model_precedence(monkeypatch):
    monkeypatch.setenv(MODEL_ENV, "env/model")
    assert resolve_model("explicit/model", "workflow/model") == "explicit/model"
    assert resolve_model(None, "workflow/model") == "workflow/model"
    assert resolve_model("", "workflow/model") == "workflow/model"
    assert resolve_model() == "env/model"


def test_resolve_model_without_any_says_how_to_configure(monkeypatch):
    monkeypatch.delenv(MODEL_ENV, raising=False)
    with pytest.raises(ModelError) as caught:
        resolve_model(None, "")
    message = str(caught.value)
    assert MODEL_ENV in message and "openai/gpt-4o-mini" in message and "scripted/PATH.yaml" in message


def test_importing_llm_does_not_import_litellm():
    code = "import sherpa_skills.llm.call, sys; assert 'litellm' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


class TestRoutes:
    """The stand-in answers in-process unless told to go through litellm; real models always need litellm."""

    def test_direct_route_answers_without_importing_litellm(self, script, route):
        """In a fresh interpreter, a scripted answer on the default route leaves litellm unimported."""
        code = (
            "import sys; from sherpa_skills.llm.call import complete;"
            f"a = complete([{{'role': 'user', 'content': 'approve'}}], 'scripted/{script}');"
            "print(a.text, a.prompt_tokens, 'litellm' in sys.modules)"
        )
        env = {k: v for k, v in __import__("os").environ.items() if k != SCRIPTED_VIA_ENV}
        if route == "litellm":
            env[SCRIPTED_VIA_ENV] = "litellm"
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env, timeout=120
        ).stdout
        assert out.splitlines()[-1].split() == [
            '{"trigger":',
            '"approve",',
            '"args":',
            "{}}",
            "1",
            str(route == "litellm"),
        ]

    def test_both_routes_give_the_same_completion(self, script, monkeypatch):
        """Text, token counts, cost and model string agree between the in-process answer and litellm's."""
        answers = {}
        for via in ("litellm", "direct"):
            monkeypatch.setenv(SCRIPTED_VIA_ENV, via)
            reset_scripts()
            answers[via] = complete(ask("please approve, and " + "x" * 50), scripted_model(script))
        assert answers["litellm"] == answers["direct"]

    def test_unknown_route_is_refused_naming_the_variable(self, script, monkeypatch):
        monkeypatch.setenv(SCRIPTED_VIA_ENV, "carrier-pigeon")
        with pytest.raises(ModelError, match=f"{SCRIPTED_VIA_ENV}='carrier-pigeon'.*direct, litellm"):
            complete(ask("approve"), scripted_model(script))

    def test_which_models_need_litellm(self, route):
        assert needs_litellm("openai/gpt-4o-mini")
        assert needs_litellm("scripted/answers.yaml") is (route == "litellm")
        assert not needs_litellm(None) and not needs_litellm("  ")
        assert not warm_up(None)  # nothing to warm for no model


# ---------------------------------------------------------- against a real HTTP server (OpenAI-compatible, on loopback)


SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "choice", "schema": {"type": "object", "properties": {"trigger": {"type": "string"}}}},
}


def test_a_server_refusing_json_schema_is_asked_for_a_json_object_bound_to_the_schema(llama):
    """HTTP 500 to json_schema (llama.cpp): one more request, json_object with the same schema (llama.cpp constrains
    its output to it), the schema in the system prompt too; both requests counted."""
    server = llama()
    answer = complete(ask("approve"), "openai/smol", response_format=SCHEMA)
    assert answer.text == '{"trigger": "approve", "args": {}}'
    assert (answer.requests, answer.format_refused) == (2, True)
    first, second = server.requests
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object", "schema": SCHEMA["json_schema"]["schema"]}
    assert '"trigger":{"type":"string"}' in second["messages"][0]["content"]


def test_a_server_refusing_both_formats_is_asked_plain(llama):
    """A server that takes neither format gets the schema in the prompt alone: three requests, all counted."""
    server = llama(refuse_json_object=True)
    answer = complete(ask("approve"), "openai/smol", response_format=SCHEMA)
    assert (answer.requests, answer.format_refused) == (3, True)
    assert [(r.get("response_format") or {}).get("type") for r in server.requests] == [
        "json_schema",
        "json_object",
        None,
    ]


def test_schema_in_prompt_skips_the_json_schema_request(llama):
    """For a model known to refuse json_schema, the doomed request is skipped."""
    server = llama()
    answer = complete(ask("approve"), "openai/smol", response_format=SCHEMA, schema_in_prompt=True)
    assert (
        answer.requests == 1
        and len(server.requests) == 1
        and server.requests[0]["response_format"]["type"] == "json_object"
    )


def test_the_verifier_asks_a_refusing_server_in_the_form_it_took(llama):
    """The matcher's verifier against a llama.cpp-like server: the first question costs two requests (json_schema
    refused), every later one a single json_object request; all of them counted."""
    from sherpa_skills.skills.match.verifier import Verifier
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    server = llama(answer='{"choice": 0, "params": {}}')
    verifier = Verifier("openai/smol")
    proc = CapturedProcedure(
        id="p-1", task_type="logs", description="Rotate the app logs", steps=[ProcedureStep(command="logrotate x")]
    )
    first, second = (verifier.verify("rotate the logs", proc, []) for _ in range(2))
    assert (
        (first.calls, second.calls) == (2, 1)
        and first.procedure_id is None
        and "none of the candidates" in second.reason
    )
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object", "json_object"]


def test_the_client_does_not_resend_on_its_own(llama):
    """With our own retries off, a server failure is one request, not three silent ones by the provider's client,
    and the error says how many were sent (tests/llm/test_llm_retry.py: our counted retries)."""
    from sherpa_skills.llm.retry import Retry

    server = llama(fail_status=503)
    with pytest.raises(ModelError) as caught:
        complete(ask("approve"), "openai/smol", retry=Retry(attempts=1))
    assert len(server.requests) == 1 and caught.value.requests == 1


def test_a_response_without_usage_is_counted_by_litellm_and_flagged(llama):
    """No usage in the reply: tokens come from litellm's token counter, and the completion says they are estimated."""
    llama(refuse_json_schema=False, usage=False)
    answer = complete(ask("approve"), "openai/smol")
    assert answer.estimated is True and answer.prompt_tokens > 0 and answer.completion_tokens > 0


def test_a_response_with_usage_is_taken_as_reported(llama):
    llama(refuse_json_schema=False, usage=True)
    answer = complete(ask("approve"), "openai/smol")
    assert (answer.prompt_tokens, answer.completion_tokens, answer.estimated) == (11, 7, False)


async def test_acomplete_falls_back_the_same_way(llama):
    server = llama()
    answer = await acomplete(ask("approve"), "openai/smol", response_format=SCHEMA)
    assert (answer.requests, answer.format_refused, len(server.requests)) == (2, True, 2)


# ---------------------------------------------------------------- the LLM policy against that server

TWO_DECISIONS = """
name: two
initial: review
llm: {model: openai/smol}
policy: {type: llm, max_retries: 1}
states:
  review:
    transitions:
      - {trigger: approve, dest: ship}
      - {trigger: reject, dest: done}
  ship:
    transitions:
      - {trigger: approve, dest: done}
      - {trigger: reject, dest: done}
  done: {final: true}
"""

RAMBLE = "Let me think about this carefully. " * 150


def _two(tmp_path: Path):
    from sherpa_skills.engine.workflow import load_workflow_text

    return load_workflow_text(TWO_DECISIONS, name="two.yaml", base_dir=tmp_path)


class TestPolicyAgainstAServer:
    def test_a_refused_format_is_remembered_and_every_request_counted(self, llama, tmp_path):
        """Decision 1: json_schema refused (500), asked for json_object: 2 requests. Decision 2: json_object at once:
        1. llm_calls == 3."""
        server = llama()
        agent = _two(tmp_path).agent()
        result = agent.run()
        assert (result.status, result.state) == ("final", "done"), result.error
        assert result.llm_calls == len(server.requests) == 3
        assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object", "json_object"]

    def test_decisions_are_capped_by_default(self, llama, tmp_path):
        """Without llm.max_tokens a decision asks for at most DECISION_MAX_TOKENS tokens."""
        from sherpa_skills.policy.llm import DECISION_MAX_TOKENS

        server = llama(refuse_json_schema=False)
        _two(tmp_path).agent().run()
        assert {r.get("max_tokens") for r in server.requests} == {DECISION_MAX_TOKENS}

    def test_tokens_without_usage_are_estimated_and_flagged(self, llama, tmp_path):
        """The run counts the estimated tokens, says how many are estimates, and marks each decision's log entry."""
        llama(refuse_json_schema=False, usage=False)
        agent = _two(tmp_path).agent()
        result = agent.run()
        assert result.tokens > 0 and result.estimated_tokens == result.tokens
        assert all(e.outputs.get("tokens_estimated") for e in agent.belief.log if e.action == "policy:llm")

    def test_a_rejected_answer_is_echoed_cut_and_kept_in_the_log(self, llama, tmp_path):
        """A rambling answer is said back cut to a few hundred characters, and the log keeps the cut text and why."""
        server = llama(refuse_json_schema=False)
        server.answer = lambda body: RAMBLE if len(body["messages"]) == 2 else '{"trigger": "approve", "args": {}}'
        agent = _two(tmp_path).agent()
        result = agent.run()
        assert result.status == "final"
        echo = server.requests[1]["messages"][2]
        assert echo["role"] == "assistant" and len(echo["content"]) < 500 and "chars cut" in echo["content"]
        entry = next(e for e in agent.belief.log if e.action == "policy:llm")
        assert entry.outputs["rejected"] == [{"answer": echo["content"], "error": "the answer is not a JSON object"}]

    def test_a_failed_decision_is_a_log_entry_with_what_was_rejected(self, llama, tmp_path):
        """Every answer rambles: the run errors, and the log holds the failed decision,
        its requests and rejected answers."""
        server = llama(refuse_json_schema=False, answer=RAMBLE)
        agent = _two(tmp_path).agent()
        result = agent.run()
        assert result.status == "error" and result.llm_calls == len(server.requests) == 2
        (entry,) = [e for e in agent.belief.log if e.action == "policy:llm"]
        assert entry.status == "error" and entry.error == result.error
        assert entry.outputs["llm_calls"] == 2 and len(entry.outputs["rejected"]) == 2
        assert all(len(r["answer"]) < 500 for r in entry.outputs["rejected"])

    def test_the_planners_answer_cap_is_an_input(self, llama, tmp_path, capsys):
        """`run planner -i max_tokens=64` caps each planning answer at 64 tokens."""
        from sherpa_skills.cli import main

        server = llama(refuse_json_schema=False, answer='{"trigger": "give_up", "args": {}, "reason": "test"}')
        code = main(
            [
                "run",
                "planner",
                "-i",
                "task=pack the notes",
                "-i",
                "task_type=pack",
                "-i",
                "max_tokens=64",
                "--model",
                "openai/smol",
                "--home",
                str(tmp_path / "home"),
                "--json",
            ]
        )
        assert code == 0, capsys.readouterr()
        assert [r["max_tokens"] for r in server.requests] == [64]


def test_the_llm_action_flags_estimated_tokens(llama, tmp_path):
    """The `llm` action against a server without usage: one request counted, tokens estimated and said so."""
    from sherpa_skills.engine.workflow import load_workflow_text

    llama(refuse_json_schema=False, usage=False, answer="a summary")
    agent = load_workflow_text(
        """
name: summarise
initial: a
llm: {model: openai/smol}
states:
  a:
    on_enter: {llm: {prompt: "Summarise the notes."}, save_as: summary}
    transitions: [{trigger: done, dest: b}]
  b: {final: true}
""",
        name="summarise.yaml",
        base_dir=tmp_path,
    ).agent()
    result = agent.run()
    assert result.status == "final" and result.llm_calls == 1 and result.tokens > 0
    assert result.context["summary"]["text"] == "a summary" and result.context["summary"]["tokens_estimated"] is True
