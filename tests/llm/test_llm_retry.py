"""LLM calls that survive a bad minute: rate limits, server errors and timeouts are retried with a bounded, jittered
backoff that honours Retry-After; every attempt is counted; a give-up names the provider's message and the attempts.

All against a real OpenAI-compatible server on loopback (tests/llm/_llm_server.py);
waits are Retry-After 0 or capped tiny.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.llm.call import acomplete, complete
from sherpa_skills.llm.retry import Retry, retry_after_seconds

FAST = Retry(attempts=3, max_wait=0.01)  # 503s without Retry-After back off at most 10 ms here
BAD_MINUTE = [(429, {"Retry-After": "0"}), 503]  # then the server answers well


def ask(text: str = "approve") -> list[dict]:
    return [{"role": "system", "content": "Pick a transition."}, {"role": "user", "content": text}]


def _workflow(tmp_path: Path, llm: str, body: str):
    from sherpa_skills.engine.workflow import load_workflow_text

    return load_workflow_text(f"name: w\ninitial: a\nllm: {llm}\n{body}", name="w.yaml", base_dir=tmp_path).agent()


DECIDE = """policy: {type: llm, max_retries: 0}
states:
  a:
    transitions:
      - {trigger: approve, dest: b}
      - {trigger: reject, dest: b}
  b: {final: true}
"""

SUMMARISE = """states:
  a:
    on_enter: {llm: {prompt: "Summarise the notes."}, save_as: summary}
    transitions: [{trigger: done, dest: b}]
  b: {final: true}
"""


class TestCall:
    def test_a_429_and_a_503_are_retried_and_every_request_counted(self, llama):
        server = llama(refuse_json_schema=False, usage=True, failures=list(BAD_MINUTE))
        answer = complete(ask(), "openai/smol", retry=FAST)
        assert answer.text == '{"trigger": "approve", "args": {}}'
        assert answer.requests == len(server.requests) == 3 and answer.tokens == 18

    async def test_the_async_face_retries_the_same_way(self, llama):
        server = llama(refuse_json_schema=False, failures=list(BAD_MINUTE))
        answer = await acomplete(ask(), "openai/smol", retry=FAST)
        assert answer.requests == len(server.requests) == 3

    def test_give_up_names_the_message_and_the_attempts(self, llama):
        server = llama(fail_status=429, fail_headers={"Retry-After": "0"})
        with pytest.raises(ModelError) as caught:
            complete(ask(), "openai/smol", retry=FAST)
        assert "slow down" in str(caught.value) and "after 3 attempts" in str(caught.value)
        assert caught.value.requests == len(server.requests) == 3

    @pytest.mark.parametrize("status", [400, 401])
    def test_refusals_that_asking_again_cannot_fix_are_not_retried(self, llama, status):
        server = llama(fail_status=status)
        with pytest.raises(ModelError) as caught:
            complete(ask(), "openai/smol", retry=FAST)
        assert caught.value.requests == len(server.requests) == 1 and "attempts" not in str(caught.value)

    def test_retry_after_is_honoured_and_capped(self, llama):
        """Retry-After: 1 is waited for; a cap below a long Retry-After wins (bounds far apart, not a timing race)."""
        llama(refuse_json_schema=False, failures=[(429, {"Retry-After": "1"})])
        started = time.monotonic()
        assert complete(ask(), "openai/smol", retry=Retry(attempts=2, max_wait=30)).requests == 2
        assert time.monotonic() - started >= 1.0
        llama(refuse_json_schema=False, failures=[(429, {"Retry-After": "120"})])
        started = time.monotonic()
        assert complete(ask(), "openai/smol", retry=Retry(attempts=2, max_wait=0.01)).requests == 2
        assert time.monotonic() - started < 60

    def test_a_format_refusal_still_steps_down_not_retries(self, llama):
        """llama.cpp's HTTP 500 to json_schema is a refusal of the format, asked again in another form, not a retry."""
        server = llama(failures=[503])
        answer = complete(
            ask(),
            "openai/smol",
            retry=FAST,
            response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": {"type": "object"}}},
        )
        assert answer.requests == len(server.requests) == 3 and answer.format_refused
        assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_schema", "json_object"]


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date gone by: now
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds(None) is None


def test_backoff_is_jittered_and_bounded():
    waits = [Retry(attempts=5, base=1.0, max_wait=3.0).wait(n, None) for n in (1, 2, 3, 4) for _ in range(20)]
    assert all(0 < w <= 3.0 for w in waits) and len(set(waits)) > 1


class TestWorkflow:
    def test_the_llm_policy_survives_a_bad_minute(self, llama, tmp_path):
        server = llama(refuse_json_schema=False, usage=True, failures=list(BAD_MINUTE))
        agent = _workflow(tmp_path, "{model: openai/smol, retry_max_wait: 0.01}", DECIDE)
        result = agent.run()
        assert (result.status, result.state) == ("final", "b"), result.error
        assert result.llm_calls == len(server.requests) == 3 and result.tokens == 18
        (entry,) = [e for e in agent.belief.log if e.action == "policy:llm"]
        assert entry.outputs["llm_calls"] == 3

    def test_the_policy_gives_up_naming_message_and_attempts(self, llama, tmp_path):
        server = llama(fail_status=429, fail_headers={"Retry-After": "0"})
        result = _workflow(tmp_path, "{model: openai/smol, retries: 1}", DECIDE).run()
        assert result.status == "error" and "slow down" in result.error and "after 2 attempts" in result.error
        assert result.llm_calls == len(server.requests) == 2

    def test_retries_zero_sends_once(self, llama, tmp_path):
        server = llama(refuse_json_schema=False, failures=list(BAD_MINUTE))
        result = _workflow(tmp_path, "{model: openai/smol, retries: 0}", DECIDE).run()
        assert result.status == "error" and result.llm_calls == len(server.requests) == 1

    def test_the_llm_action_survives_a_bad_minute(self, llama, tmp_path):
        server = llama(usage=True, answer="a summary", failures=list(BAD_MINUTE))
        result = _workflow(tmp_path, "{model: openai/smol, retry_max_wait: 0.01}", SUMMARISE).run()
        assert result.status == "final" and result.context["summary"]["text"] == "a summary"
        assert result.llm_calls == len(server.requests) == 3 and result.tokens == 18

    def test_an_llm_action_that_gives_up_counts_its_attempts(self, llama, tmp_path):
        server = llama(fail_status=503)
        result = _workflow(tmp_path, "{model: openai/smol, retry_max_wait: 0.01}", SUMMARISE).run()
        assert result.status == "error" and "overloaded" in result.error and "after 3 attempts" in result.error
        assert result.llm_calls == len(server.requests) == 3

    def test_a_bad_retry_setting_is_refused_naming_the_field(self, tmp_path):
        from sherpa_skills.engine.workflow import load_workflow_text
        from sherpa_skills.errors import WorkflowError

        with pytest.raises(WorkflowError, match="retries"):
            load_workflow_text(
                f"name: w\ninitial: a\nllm: {{retries: -1}}\n{SUMMARISE}", name="w.yaml", base_dir=tmp_path
            )


def test_the_verifier_survives_a_bad_minute(llama):
    from sherpa_skills.skills.match.verifier import Verifier
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    server = llama(refuse_json_schema=False, answer='{"choice": 0, "params": {}}', failures=list(BAD_MINUTE))
    proc = CapturedProcedure(
        id="p-1", task_type="logs", description="Rotate the app logs", steps=[ProcedureStep(command="logrotate x")]
    )
    verdict = Verifier("openai/smol", retry=FAST).verify("rotate the logs", proc, [])
    assert verdict.calls == len(server.requests) == 3 and "none of the candidates" in verdict.reason


def test_the_verifier_gives_up_counting_every_attempt(llama):
    from sherpa_skills.skills.match.verifier import Verifier
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    server = llama(fail_status=429, fail_headers={"Retry-After": "0"})
    proc = CapturedProcedure(
        id="p-1", task_type="logs", description="Rotate the app logs", steps=[ProcedureStep(command="logrotate x")]
    )
    verdict = Verifier("openai/smol", retry=FAST).verify("rotate the logs", proc, [])
    assert (
        verdict.calls == len(server.requests) == 3
        and "slow down" in verdict.reason
        and "after 3 attempts" in verdict.reason
    )
