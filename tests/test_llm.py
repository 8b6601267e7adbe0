"""sherpa_skills.llm.call offline, with the scripted stand-in: through real litellm as a custom provider, and in-process.

Every test runs on both routes (`SHERPA_SKILLS_SCRIPTED_VIA=litellm` and the default `direct`), so the shortcut that
spares offline runs the litellm import cannot drift from the path a real model takes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.llm.call import MODEL_ENV, SCRIPTED_VIA_ENV, Completion, acomplete, complete, needs_litellm, resolve_model, warm_up
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
    assert type(caught.value.__cause__).__module__.startswith("litellm" if route == "litellm" else "sherpa_skills.llm.scripted")


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
        code = ("import sys; from sherpa_skills.llm.call import complete;"
                f"a = complete([{{'role': 'user', 'content': 'approve'}}], 'scripted/{script}');"
                "print(a.text, a.prompt_tokens, 'litellm' in sys.modules)")
        env = {k: v for k, v in __import__("os").environ.items() if k != SCRIPTED_VIA_ENV}
        if route == "litellm":
            env[SCRIPTED_VIA_ENV] = "litellm"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env, timeout=120).stdout
        assert out.splitlines()[-1].split() == ['{"trigger":', '"approve",', '"args":', '{}}', "1", str(route == "litellm")]

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
