"""sherpa_skills.llm.call through real litellm, offline, with the scripted stand-in as the provider."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.llm.call import MODEL_ENV, Completion, acomplete, complete, resolve_model
from sherpa_skills.testing import estimate_tokens, reset_scripts, scripted_model

ROOT = Path(__file__).resolve().parents[1]

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


def test_complete_answers_through_litellm(script):
    answer = complete(ask("please approve"), scripted_model(script))
    assert isinstance(answer, Completion)
    assert answer.text == '{"trigger": "approve", "args": {}}'
    assert answer.model == scripted_model(script)
    assert answer.cost == 0.0


async def test_acomplete_answers_through_litellm(script):
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


def test_no_match_is_a_model_error_naming_model_script_and_prompt(script):
    prompt = "something unexpected " + "y" * 300
    with pytest.raises(ModelError) as caught:
        complete(ask(prompt), scripted_model(script))
    message = str(caught.value)
    assert f"model '{scripted_model(script)}'" in message
    assert str(script.resolve()) in message
    assert prompt[:200] in message
    assert "Traceback" not in message
    assert caught.value.__cause__ is not None
    assert type(caught.value.__cause__).__module__.startswith("litellm")


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
