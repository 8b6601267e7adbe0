"""A deterministic stand-in LLM for tests, the demo and examples:
answered in-process, or through litellm like a real one.

A script is a YAML file; the model string ``scripted/PATH.yaml`` selects it::

    # scripted model: answers are picked by matching the prompt, never by call order alone
    answers:
      - match: "regex searched in the last user message"   # required; Python re, DOTALL
        respond: '{"trigger": "approve", "args": {}}'        # text (a jinja2 template: prompt, groups, named),
                                                              # or a mapping/list, sent as JSON
        times: 2            # optional: use at most N times, then this entry is skipped
        system_match: "..." # optional regex searched in the system message(s)
    default: null           # optional text when nothing matches; absent/null makes a no-match an error

Entries are tried in file order; the first whose regexes match and whose ``times`` is not used up answers.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from ..errors import ModelError

if TYPE_CHECKING:
    import jinja2

__all__ = [
    "PROVIDER",
    "ScriptedAnswer",
    "Script",
    "ScriptError",
    "ScriptedModel",  # noqa: F822  (built on first access by the module __getattr__ below)
    "answer_with_usage",
    "estimate_tokens",
    "load_script",
    "make_scripted_model",
    "reset_scripts",
    "script_answer",
    "scripted_model",
]

PROVIDER = "scripted"

_ENTRY_KEYS = ("match", "respond", "times", "system_match")
_TOP_KEYS = ("answers", "default")

log = structlog.get_logger(__name__)

_lock = threading.Lock()
_cache: dict[str, tuple[int, Script]] = {}
_uses: dict[str, dict[int, int]] = {}


class ScriptError(ModelError):
    """A script file is wrong, or it has no answer for a prompt; the message names the file."""


@dataclass(frozen=True)
class ScriptedAnswer:
    """One scripted answer and the prompt it is for."""

    index: int
    match: re.Pattern[str]
    respond: jinja2.Template
    times: int | None = None
    system_match: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Script:
    """A parsed script file."""

    path: Path
    answers: tuple[ScriptedAnswer, ...]
    default: jinja2.Template | None = None


def scripted_model(path: str | Path) -> str:
    """The model string that selects the script at ``path``, made absolute so it works from any cwd."""
    return f"{PROVIDER}/{Path(path).expanduser().resolve()}"


def estimate_tokens(text: str) -> int:
    """The stand-in's token count: about four characters a token, an approximation, never zero."""
    return max(1, len(text) // 4)


def reset_scripts() -> None:
    """Forget every ``times`` counter and parsed script, so each test starts fresh."""
    with _lock:
        _uses.clear()
        _cache.clear()


def load_script(path: str | Path) -> Script:
    """Parse and check a script, cached until the file changes (which also resets its counters)."""
    path = Path(path).expanduser().resolve()
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise ScriptError(f"{path}: scripted model script cannot be read: {exc.strerror or exc}") from exc
    key = str(path)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached[0] == mtime:
            return cached[1]
    script = _parse(path)
    with _lock:
        _cache[key] = (mtime, script)
        _uses.pop(key, None)
    return script


def script_answer(path: str | Path, messages: list[dict]) -> str:
    """The scripted text for these messages; counts the use of a ``times``-limited entry."""
    script = load_script(path)
    prompt, system = _last_user(messages), _system(messages)
    exhausted: list[int] = []
    for answer in script.answers:
        found = answer.match.search(prompt)
        if found is None or (answer.system_match is not None and answer.system_match.search(system) is None):
            continue
        if not _take(script, answer):
            exhausted.append(answer.index)
            continue
        log.debug("scripted_answer", script=str(script.path), entry=answer.index)
        return _render(script, answer.respond, f"answers[{answer.index}]", prompt, found)
    if script.default is not None:
        log.debug("scripted_answer", script=str(script.path), entry="default")
        return _render(script, script.default, "default", prompt, None)
    used_up = f" (matching entries used up by 'times': {exhausted})" if exhausted else ""
    raise ScriptError(
        f"scripted model {script.path}: no answer matches and the script has no default{used_up}; "
        f"last user message starts: {prompt[:200]!r}"
    )


def answer_with_usage(path: str | Path, messages: list[dict]) -> tuple[str, int, int]:
    """The scripted text with its prompt and completion token counts: what both routes (in-process, litellm) report."""
    text = script_answer(path, messages)
    prompt = "\n".join(_text(m.get("content")) for m in messages)
    return text, estimate_tokens(prompt), estimate_tokens(text)


def make_scripted_model() -> Any:
    """A fresh ``ScriptedModel`` handler for ``litellm.custom_provider_map`` (imports litellm)."""
    return _scripted_model_class()()


def __getattr__(name: str) -> Any:
    # ScriptedModel subclasses litellm.CustomLLM; it is built on first access so importing this module stays cheap.
    if name == "ScriptedModel":
        return _scripted_model_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _scripted_model_class() -> type:
    """Build the litellm handler class; litellm is imported here, never at module import."""
    from ._litellm import load_litellm

    load_litellm()  # configured (offline cost map, quiet) before any part of litellm loads
    from litellm.llms.custom_llm import CustomLLM, CustomLLMError
    from litellm.types.utils import Usage

    class ScriptedModel(CustomLLM):
        """litellm custom provider answering from a script; the model name after ``scripted/`` is its path."""

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            return self._answer(kwargs["model"], kwargs["messages"], kwargs["model_response"])

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            return self._answer(kwargs["model"], kwargs["messages"], kwargs["model_response"])

        def _answer(self, model: str, messages: list[dict], response: Any) -> Any:
            try:
                text, prompt_tokens, completion_tokens = answer_with_usage(model, messages)
            except ScriptError as exc:
                # A 4xx CustomLLMError reaches the caller as a plain BadRequestError, not a "bug in LiteLLM" report.
                raise CustomLLMError(status_code=400, message=str(exc)) from exc
            response.choices[0].message.content = text
            response.choices[0].finish_reason = "stop"
            response.model = f"{PROVIDER}/{model}"
            response.usage = Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            )
            return response

    ScriptedModel.__module__, ScriptedModel.__qualname__ = __name__, "ScriptedModel"
    return ScriptedModel


def _take(script: Script, answer: ScriptedAnswer) -> bool:
    """Count one use of an entry; False when its ``times`` are used up."""
    if answer.times is None:
        return True
    with _lock:
        uses = _uses.setdefault(str(script.path), {})
        if uses.get(answer.index, 0) >= answer.times:
            return False
        uses[answer.index] = uses.get(answer.index, 0) + 1
        return True


def _render(script: Script, template: jinja2.Template, where: str, prompt: str, found: re.Match[str] | None) -> str:
    try:
        return template.render(
            prompt=prompt,
            groups=list(found.groups()) if found else [],
            named=found.groupdict() if found else {},
        )
    except Exception as exc:
        raise ScriptError(f"{script.path}: {where}: cannot render 'respond': {exc}") from exc


def _last_user(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def _system(messages: list[dict]) -> str:
    return "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")


def _text(content: object) -> str:
    """Message content as text, whether a string or a list of OpenAI-style parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


# --- parsing -----------------------------------------------------------------------------------------------


def _parse(path: Path) -> Script:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ScriptError(f"{path}: invalid YAML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(f"{path}: scripted model script cannot be read: {exc}") from exc
    if not isinstance(data, dict) or "answers" not in data:
        raise ScriptError(f"{path}: a script is a mapping with an 'answers' list of {{match, respond}} entries")
    _no_unknown_keys(path, "", data, _TOP_KEYS)
    entries = data["answers"]
    if not isinstance(entries, list):
        raise ScriptError(f"{path}: 'answers' must be a list of {{match, respond}} entries")
    answers = tuple(_parse_entry(path, i, entry) for i, entry in enumerate(entries))
    default = data.get("default")
    return Script(path, answers, None if default is None else _template(path, "default", default))


def _parse_entry(path: Path, index: int, entry: object) -> ScriptedAnswer:
    where = f"answers[{index}]"
    if not isinstance(entry, dict):
        raise ScriptError(f"{path}: {where}: an entry is a mapping with 'match' and 'respond'")
    _no_unknown_keys(path, f"{where}: ", entry, _ENTRY_KEYS)
    for required in ("match", "respond"):
        if entry.get(required) is None:
            raise ScriptError(f"{path}: {where}: '{required}' is required")
    times = entry.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
        raise ScriptError(f"{path}: {where}: 'times' must be a positive integer, got {times!r}")
    system_match = entry.get("system_match")
    return ScriptedAnswer(
        index=index,
        match=_regex(path, where, "match", entry["match"]),
        respond=_template(path, where, entry["respond"]),
        times=times,
        system_match=None if system_match is None else _regex(path, where, "system_match", system_match),
    )


def _no_unknown_keys(path: Path, where: str, data: dict, allowed: tuple[str, ...]) -> None:
    unknown = [str(k) for k in data if k not in allowed]
    if unknown:
        raise ScriptError(f"{path}: {where}unknown key(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})")


def _regex(path: Path, where: str, key: str, pattern: object) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise ScriptError(f"{path}: {where}: '{key}' must be a regex string, got {pattern!r}")
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error as exc:
        raise ScriptError(f"{path}: {where}: bad regex in '{key}' {pattern!r}: {exc}") from exc


def _template(path: Path, where: str, respond: object) -> jinja2.Template:
    """Compile an answer at load, so a broken template is reported before any run."""
    import jinja2

    source = respond if isinstance(respond, str) else json.dumps(respond)
    try:
        return _jinja().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ScriptError(
            f"{path}: {where}: bad jinja2 template in 'respond' (line {exc.lineno}): {exc.message}"
        ) from exc


@cache
def _jinja() -> jinja2.Environment:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
