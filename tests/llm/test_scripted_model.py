"""The scripted stand-in: answers chosen by the prompt, counted uses, clear errors for bad scripts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.errors import ModelError
from sherpa_skills.testing import (
    ScriptError,
    estimate_tokens,
    load_script,
    reset_scripts,
    script_answer,
    scripted_model,
)

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """\
# scripted model: answers are picked by matching the prompt, never by call order alone
answers:
  - match: "deploy (\\\\w+) to (?P<env>\\\\w+)"
    respond: '{"trigger": "deploy", "args": {"app": "{{ groups[0] }}", "env": "{{ named.env }}"}}'
  - match: "approve"
    respond: '{"trigger": "approve", "args": {}}'
    times: 2
  - match: "review"
    system_match: "strict reviewer"
    respond: {trigger: reject, args: {reason: strict}}
  - match: "review"
    respond: {trigger: accept, args: {}}
"""


@pytest.fixture(autouse=True)
def _fresh_scripts():
    reset_scripts()
    yield
    reset_scripts()


def write(tmp_path: Path, text: str, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def user(text: str, system: str | None = None) -> list[dict]:
    messages = [{"role": "system", "content": system}] if system else []
    return [*messages, {"role": "user", "content": text}]


def test_answers_follow_the_prompt_not_the_call_order(tmp_path):
    path = write(tmp_path, SCRIPT)
    assert script_answer(path, user("please review")) == '{"trigger": "accept", "args": {}}'
    assert script_answer(path, user("approve it")) == '{"trigger": "approve", "args": {}}'
    assert script_answer(path, user("please review")) == '{"trigger": "accept", "args": {}}'


def test_respond_is_a_template_over_prompt_and_regex_groups(tmp_path):
    path = write(tmp_path, SCRIPT)
    answer = script_answer(path, user("deploy shop to prod now"))
    assert answer == '{"trigger": "deploy", "args": {"app": "shop", "env": "prod"}}'


def test_the_prompt_is_available_to_templates(tmp_path):
    path = write(tmp_path, 'answers:\n  - match: "echo"\n    respond: "you said: {{ prompt }}"\n')
    assert script_answer(path, user("echo this")) == "you said: echo this"


def test_only_the_last_user_message_is_matched(tmp_path):
    path = write(tmp_path, SCRIPT)
    messages = [*user("approve it"), {"role": "assistant", "content": "x"}, {"role": "user", "content": "now review"}]
    assert "accept" in script_answer(path, messages)


def test_system_match_narrows_an_entry(tmp_path):
    path = write(tmp_path, SCRIPT)
    assert script_answer(path, user("review", system="You are a strict reviewer.")) == (
        '{"trigger": "reject", "args": {"reason": "strict"}}'
    )


def test_times_limits_an_entry_then_it_is_skipped(tmp_path):
    path = write(tmp_path, SCRIPT)
    for _ in range(2):
        script_answer(path, user("approve"))
    with pytest.raises(ScriptError, match=r"used up by 'times': \[1\]"):
        script_answer(path, user("approve"))


def test_reset_scripts_restores_times(tmp_path):
    path = write(tmp_path, SCRIPT)
    for _ in range(2):
        script_answer(path, user("approve"))
    reset_scripts()
    assert "approve" in script_answer(path, user("approve"))


def test_exhausted_entry_falls_through_to_a_later_one(tmp_path):
    path = write(tmp_path, 'answers:\n  - {match: "go", respond: first, times: 1}\n  - {match: "go", respond: later}\n')
    assert [script_answer(path, user("go")) for _ in range(3)] == ["first", "later", "later"]


def test_default_answers_when_nothing_matches(tmp_path):
    path = write(tmp_path, 'answers: []\ndefault: "fallback for {{ prompt }}"\n')
    assert script_answer(path, user("anything")) == "fallback for anything"


def test_no_match_without_default_names_the_script_and_the_prompt(tmp_path):
    path = write(tmp_path, SCRIPT)
    prompt = "nothing here " + "x" * 300
    with pytest.raises(ScriptError) as caught:
        script_answer(path, user(prompt))
    message = str(caught.value)
    assert str(path) in message
    assert prompt[:200] in message and prompt[:201] not in message
    assert isinstance(caught.value, ModelError)


def test_counters_are_kept_per_script(tmp_path):
    one = write(tmp_path, SCRIPT, "one.yaml")
    two = write(tmp_path, SCRIPT, "two.yaml")
    for _ in range(2):
        script_answer(one, user("approve"))
    assert "approve" in script_answer(two, user("approve"))


def test_a_changed_script_is_reloaded(tmp_path):
    path = write(tmp_path, 'answers:\n  - {match: "hi", respond: old}\n')
    assert script_answer(path, user("hi")) == "old"
    path.write_text('answers:\n  - {match: "hi", respond: new}\n', encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert script_answer(path, user("hi")) == "new"


def test_parsed_script_is_cached_until_the_file_changes(tmp_path):
    path = write(tmp_path, SCRIPT)
    assert load_script(path) is load_script(path)


def test_message_parts_are_read_as_text(tmp_path):
    path = write(tmp_path, SCRIPT)
    messages = [{"role": "user", "content": [{"type": "text", "text": "please"}, {"type": "text", "text": "approve"}]}]
    assert "approve" in script_answer(path, messages)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("answers: [\n", r"invalid YAML"),
        ("default: hi\n", r"'answers' list"),
        ("answers: {match: x}\n", r"'answers' must be a list"),
        (
            'answers:\n  - {match: "ok", respond: a}\n  - {match: "(", respond: b}\n',
            r"answers\[1\]: bad regex in 'match'",
        ),
        ('answers:\n  - {match: "a", respond: b, system_match: "["}\n', r"answers\[0\]: bad regex in 'system_match'"),
        ("answers:\n  - {respond: b}\n", r"answers\[0\]: 'match' is required"),
        ("answers:\n  - {match: a}\n", r"answers\[0\]: 'respond' is required"),
        ("answers:\n  - {match: a, respond: b, times: 0}\n", r"answers\[0\]: 'times' must be a positive integer"),
        ("answers:\n  - {match: a, response: b}\n", r"answers\[0\]: unknown key\(s\) response"),
        ('answers:\n  - {match: a, respond: "{{ oops"}\n', r"answers\[0\]: bad jinja2 template"),
        ("answers: []\ndefualt: x\n", r"unknown key\(s\) defualt"),
    ],
)
def test_bad_scripts_are_reported_with_file_and_entry(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ScriptError, match=expected) as caught:
        load_script(path)
    assert str(caught.value).startswith(str(path))


def test_missing_script_names_the_file(tmp_path):
    with pytest.raises(ScriptError, match="cannot be read") as caught:
        load_script(tmp_path / "absent.yaml")
    assert "absent.yaml" in str(caught.value)


def test_render_error_names_the_entry(tmp_path):
    path = write(tmp_path, 'answers:\n  - {match: a, respond: "{{ missing }}"}\n')
    with pytest.raises(ScriptError, match=r"answers\[0\]: cannot render"):
        script_answer(path, user("a"))


def test_estimate_tokens_is_a_quarter_of_the_characters_and_never_zero():
    assert estimate_tokens("") == 1
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("x" * 40) == 10


def test_scripted_model_string_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert scripted_model("s.yaml") == f"scripted/{tmp_path.resolve() / 's.yaml'}"


def test_scripted_model_class_is_a_litellm_custom_llm():
    import litellm

    from sherpa_skills import testing

    assert issubclass(testing.ScriptedModel, litellm.CustomLLM)
    assert testing.ScriptedModel.__name__ == "ScriptedModel"


def test_importing_testing_does_not_import_litellm():
    code = "import sherpa_skills.testing, sys; assert 'litellm' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)
