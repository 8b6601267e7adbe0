"""The one place sherpa-skills calls an LLM: litellm, imported on first use, errors as ModelError.

The scripted stand-in (`scripted/PATH.yaml`) answers in-process without importing litellm, which saves seconds of
start-up on every offline run; `SHERPA_SKILLS_SCRIPTED_VIA=litellm` sends it through litellm as a custom provider,
the same path a real model takes (the tests drive both and hold them to the same answers).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from ..errors import ModelError
from ._litellm import is_loaded as litellm_loaded
from ._litellm import load_litellm
from ._litellm import warm_up as start_warm_up
from .retry import DEFAULT as DEFAULT_RETRY
from .retry import Retry, exception_retry_after, transient

__all__ = [
    "MODEL_ENV",
    "SCRIPTED_PREFIX",
    "SCRIPTED_VIA_ENV",
    "Completion",
    "acomplete",
    "complete",
    "needs_litellm",
    "resolve_model",
    "warm_up",
]

MODEL_ENV = "SHERPA_SKILLS_MODEL"
SCRIPTED_PREFIX = "scripted/"
SCRIPTED_VIA_ENV = "SHERPA_SKILLS_SCRIPTED_VIA"
_SCRIPTED_ROUTES = ("direct", "litellm")

log = structlog.get_logger(__name__)

_MODEL_HINT = (
    f"set {MODEL_ENV} to a litellm model string (e.g. openai/gpt-4o-mini), "
    f"or use the offline stand-in {SCRIPTED_PREFIX}PATH.yaml (see sherpa_skills.llm.scripted)"
)

_lock = threading.Lock()
_scripted_handler: Any = None


@dataclass
class Completion:
    """One LLM answer with what it cost, so callers can account tokens and money per decision."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    model: str
    requests: int = 1  # HTTP requests this answer took (2 when the server refused response_format first)
    estimated: bool = False  # the server sent no usage: tokens were counted with litellm's token counter
    format_refused: bool = False  # the server refused json_schema (or any format); the schema went into the prompt

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def resolve_model(explicit: str | None = None, workflow: str | None = None) -> str:
    """Pick the model: the caller's, else the workflow's, else the environment's; never a silent default."""
    for candidate in (explicit, workflow, os.environ.get(MODEL_ENV)):
        if candidate and candidate.strip():
            return candidate.strip()
    raise ModelError(f"no LLM model configured: {_MODEL_HINT}")


def complete(
    messages: list[dict],
    model: str,
    *,
    response_format: dict | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    base_dir: Path | str | None = None,
    schema_in_prompt: bool = False,
    retry: Retry | None = None,
) -> Completion:
    """Ask the model once, synchronously.

    A server that refuses json_schema (llama.cpp answers HTTP 500) is asked once more for a json_object bound to the
    same schema, the schema also written into the prompt; one that refuses that too, once more without any format.
    `schema_in_prompt` skips the doomed json_schema request for a model known to refuse it. A rate limit, server
    error or timeout is asked again as `retry` says (default: 3 attempts in all, waits capped at 30 s).
    """
    if _scripted_direct(model):
        return _scripted_completion(messages, model, base_dir)
    litellm, model, kwargs = _prepare(
        messages, model, response_format, temperature, max_tokens, base_dir, schema_in_prompt
    )
    plan = _requests(litellm, model, kwargs, response_format is not None, retry or DEFAULT_RETRY)
    request, wait = next(plan)
    while True:
        if wait:
            time.sleep(wait)
        try:
            outcome: tuple[Any, Exception | None] = (litellm.completion(**request), None)
        except Exception as exc:
            outcome = (None, exc)
        try:
            request, wait = plan.send(outcome)
        except StopIteration as done:
            return done.value


async def acomplete(
    messages: list[dict],
    model: str,
    *,
    response_format: dict | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    base_dir: Path | str | None = None,
    schema_in_prompt: bool = False,
    retry: Retry | None = None,
) -> Completion:
    """Ask the model once, without blocking the event loop (litellm's first import runs in a worker thread)."""
    if _scripted_direct(model):  # reads one small cached file: nothing to await
        return _scripted_completion(messages, model, base_dir)
    args = (messages, model, response_format, temperature, max_tokens, base_dir, schema_in_prompt)
    if not litellm_loaded():
        litellm, model, kwargs = await asyncio.to_thread(_prepare, *args)
    else:
        litellm, model, kwargs = _prepare(*args)
    plan = _requests(litellm, model, kwargs, response_format is not None, retry or DEFAULT_RETRY)
    request, wait = next(plan)
    while True:
        if wait:
            await asyncio.sleep(wait)
        try:
            outcome: tuple[Any, Exception | None] = (await litellm.acompletion(**request), None)
        except Exception as exc:
            outcome = (None, exc)
        try:
            request, wait = plan.send(outcome)
        except StopIteration as done:
            return done.value


def _requests(
    litellm: ModuleType, model: str, kwargs: dict[str, Any], wanted_format: bool, retry: Retry = DEFAULT_RETRY
) -> Generator[tuple[dict[str, Any], float], tuple[Any, Exception | None], Completion]:
    """The requests of one answer, written once for both faces: send (after the wait yielded with it); retry what a
    busy server may answer later; while the server refuses the format, step down (json_schema, then a json_object
    bound to the schema, then plain JSON). Counts what was sent, so a failure still reports its requests."""
    tally = _Tally()
    response, exc = yield from _attempts(litellm, model, kwargs, retry, tally)
    for step_down in (_as_json_object, _without_response_format):
        if exc is None or not _format_refused(litellm, exc, kwargs):
            break
        lower = step_down(kwargs, model, exc)
        if lower is None:
            continue  # no schema to bind a json_object to
        kwargs = lower
        response, exc = yield from _attempts(litellm, model, kwargs, retry, tally)
    if exc is not None:
        raise _model_error(model, exc, tally.sent, tally.attempts if tally.retried else 0) from exc
    return _completion(litellm, response, model, kwargs, tally.sent, wanted_format)


@dataclass
class _Tally:
    sent: int = 0  # requests that reached the provider
    attempts: int = 0  # attempts of the last request, retries included
    retried: bool = False


def _attempts(
    litellm: ModuleType, model: str, kwargs: dict[str, Any], retry: Retry, tally: _Tally
) -> Generator[tuple[dict[str, Any], float], tuple[Any, Exception | None], tuple[Any, Exception | None]]:
    """One request, sent again after a rate limit, a server error or a timeout (not a refused format: that is the
    step-down's), waiting as the server asked or a jittered backoff, at most `retry.attempts` times in all."""
    wait = 0.0
    tally.attempts = 0
    while True:
        response, exc = yield kwargs, wait
        tally.attempts += 1
        tally.sent += 1 - (_not_sent(litellm, exc) if exc else 0)
        if (
            exc is None
            or tally.attempts >= retry.attempts
            or not transient(exc)
            or _format_refused(litellm, exc, kwargs)
        ):
            return response, exc
        wait = retry.wait(tally.attempts, exception_retry_after(exc))
        tally.retried = True
        log.info("llm_retry", model=model, attempt=tally.attempts, wait=wait, error=_short(exc))


def _prepare(
    messages: list[dict],
    model: str,
    response_format: dict | None,
    temperature: float,
    max_tokens: int | None,
    base_dir: Path | str | None,
    schema_in_prompt: bool = False,
) -> tuple[ModuleType, str, dict[str, Any]]:
    """Shared request building for both faces, so sync and async send exactly the same call."""
    if not model or not model.strip():
        raise ModelError(f"empty model name: {_MODEL_HINT}")
    model = model.strip()
    litellm = _litellm()
    if model.startswith(SCRIPTED_PREFIX):
        model = _scripted_model_string(model, base_dir)
        _ensure_scripted_provider(litellm)
    # max_retries=0: the provider client must not resend on its own, or requests would go uncounted.
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature, "max_retries": 0}
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    if response_format is not None:
        kwargs["response_format"] = response_format
        if schema_in_prompt:
            kwargs = _as_json_object(kwargs) or _without_response_format(kwargs, model, None)
    return litellm, model, kwargs


# HTTP statuses with which servers refuse a response_format they do not support (llama.cpp: 500).
_FORMAT_REFUSAL_STATUS = {400, 422, 500, 501}


def _format_refused(litellm: ModuleType, exc: Exception, kwargs: dict[str, Any]) -> bool:
    """True when a request carrying response_format failed in a way that asking without it may fix."""
    if "response_format" not in kwargs:
        return False
    if isinstance(exc, litellm.UnsupportedParamsError):
        return True
    return getattr(exc, "status_code", None) in _FORMAT_REFUSAL_STATUS


def _not_sent(litellm: ModuleType, exc: Exception) -> int:
    """1 when the failure happened before any request left (litellm refused the parameters itself)."""
    return 1 if isinstance(exc, litellm.UnsupportedParamsError) else 0


def _fell_back(kwargs: dict[str, Any]) -> bool:
    """The request sent is a fallback: no format at all, or the json_object that stands for a refused json_schema."""
    response_format = kwargs.get("response_format")
    return not isinstance(response_format, dict) or "schema" in response_format


def _as_json_object(kwargs: dict[str, Any], model: str = "", exc: Exception | None = None) -> dict[str, Any] | None:
    """The json_schema request as `json_object` with the schema beside it (and in the prompt), or None when the
    request asked for no schema. llama.cpp servers refuse json_schema but constrain json_object to a schema."""
    response_format = kwargs.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not schema:
        return None
    if exc is not None:
        log.info("llm_json_schema_refused", model=model, error=_short(exc))
    plain = _without_response_format(kwargs, model, None)
    return {**plain, "response_format": {"type": "json_object", "schema": schema}}


def _without_response_format(kwargs: dict[str, Any], model: str, exc: Exception | None) -> dict[str, Any]:
    """The same request as plain JSON: no response_format, its schema written at the end of the system prompt."""
    if exc is not None:
        log.info("llm_response_format_refused", model=model, error=_short(exc))
    response_format = kwargs["response_format"]
    schema = (response_format.get("json_schema") or {}).get("schema") if isinstance(response_format, dict) else None
    note = (
        "Answer with one JSON object"
        + (f" matching this JSON schema: {json.dumps(schema, separators=(',', ':'))}" if schema else "")
        + "."
    )
    messages = list(kwargs["messages"])
    index = next((i for i, m in enumerate(messages) if m.get("role") == "system"), None)
    if index is None:
        messages.insert(0, {"role": "system", "content": note})
    else:
        messages[index] = {**messages[index], "content": f"{messages[index].get('content') or ''}\n\n{note}"}
    return {**{k: v for k, v in kwargs.items() if k != "response_format"}, "messages": messages}


def _scripted_model_string(model: str, base_dir: Path | str | None) -> str:
    """Make a scripted model's path absolute: relative to the workflow's folder, or to the current directory when
    there is none or the workflow is a built-in machine (whose folder is inside the installed package)."""
    path = Path(model[len(SCRIPTED_PREFIX) :]).expanduser()
    if not str(path) or str(path) == ".":
        raise ModelError(
            f"model '{model}': the scripted stand-in needs a script path, e.g. {SCRIPTED_PREFIX}answers.yaml"
        )
    if not path.is_absolute():
        path = (Path.cwd() if base_dir is None or _is_builtin_folder(Path(base_dir)) else Path(base_dir)) / path
    return SCRIPTED_PREFIX + str(path.resolve())


def _is_builtin_folder(folder: Path) -> bool:
    from ..data import data_dir

    builtin = data_dir("statemachines").resolve()
    folder = folder.resolve()
    return folder == builtin or builtin in folder.parents


def _litellm() -> ModuleType:
    """Import and quieten litellm on first use (the import costs seconds and must stay offline)."""
    return load_litellm()


def _scripted_route() -> str:
    route = os.environ.get(SCRIPTED_VIA_ENV, "").strip().lower() or "direct"
    if route not in _SCRIPTED_ROUTES:
        raise ModelError(
            f"{SCRIPTED_VIA_ENV}={route!r} is not a route; use one of: {', '.join(_SCRIPTED_ROUTES)} (or unset it)"
        )
    return route


def _scripted_direct(model: str) -> bool:
    """True when the stand-in answers in-process, without litellm."""
    return bool(model) and model.strip().startswith(SCRIPTED_PREFIX) and _scripted_route() == "direct"


def needs_litellm(model: str | None) -> bool:
    """Whether calls to this model import litellm: every real model, and the stand-in when routed through it."""
    return bool(model and model.strip()) and not _scripted_direct(model or "")


def warm_up(model: str | None) -> bool:
    """Start importing litellm in the background when calls to `model` will need it; True if this started it."""
    return needs_litellm(model) and start_warm_up()


def _scripted_completion(messages: list[dict], model: str, base_dir: Path | str | None) -> Completion:
    """The stand-in's answer, counted exactly as its litellm provider counts it; script errors as ModelError."""
    from .scripted import answer_with_usage

    model = _scripted_model_string(model.strip(), base_dir)
    try:
        text, prompt_tokens, completion_tokens = answer_with_usage(model[len(SCRIPTED_PREFIX) :], messages)
    except ModelError as exc:
        raise _model_error(model, exc) from exc
    log.debug("llm_completion", model=model, tokens=prompt_tokens + completion_tokens, cost=0.0)
    return Completion(text, prompt_tokens, completion_tokens, 0.0, model)


def _ensure_scripted_provider(litellm: ModuleType) -> None:
    """Register the scripted stand-in in litellm.custom_provider_map, once, without dropping others' entries."""
    global _scripted_handler
    from .scripted import PROVIDER, make_scripted_model

    with _lock:
        if _scripted_handler is None:
            _scripted_handler = make_scripted_model()
        # Checked on every scripted call: code that reassigns custom_provider_map would otherwise lose us.
        providers = litellm.custom_provider_map
        if not any(item.get("provider") == PROVIDER for item in providers):
            litellm.custom_provider_map = [  # type: ignore[attr-defined]  # untyped in litellm/__init__.py
                *providers,
                {"provider": PROVIDER, "custom_handler": _scripted_handler},
            ]


def _completion(
    litellm: ModuleType, response: Any, model: str, kwargs: dict[str, Any], requests: int, wanted_format: bool
) -> Completion:
    """Flatten litellm's response into what the rest of sherpa-skills needs; count tokens when the server did not."""
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    try:
        text = response.choices[0].message.content or ""
    except (AttributeError, IndexError) as exc:
        raise ModelError(f"model '{model}' returned no message: {response!r:.200}") from exc
    estimated = prompt_tokens + completion_tokens == 0
    if estimated:
        prompt_tokens, completion_tokens = _count_tokens(litellm, model, kwargs["messages"], text)
    completion = Completion(
        text,
        prompt_tokens,
        completion_tokens,
        _cost(litellm, response),
        model,
        requests,
        estimated,
        wanted_format and _fell_back(kwargs),
    )
    log.debug(
        "llm_completion",
        model=model,
        tokens=completion.tokens,
        estimated=estimated,
        requests=requests,
        cost=completion.cost,
    )
    return completion


def _count_tokens(litellm: ModuleType, model: str, messages: list[dict], text: str) -> tuple[int, int]:
    """litellm's own count (its bundled tokenizers, offline) for a response that came without usage."""
    try:
        return int(litellm.token_counter(model=model, messages=messages)), int(
            litellm.token_counter(model=model, text=text)
        ) if text else 0
    except Exception as exc:  # an odd model name or message shape must not lose the answer
        log.debug("llm_token_count_failed", model=model, error=str(exc))
        return sum(len(str(m.get("content") or "")) for m in messages) // 4, len(text) // 4


def _cost(litellm: ModuleType, response: Any) -> float:
    """The call's price when litellm knows the model; unknown models (local, scripted) cost 0.0."""
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:
        return 0.0


_NOISE_MARKERS = ("\nTraceback (most recent call last)", "This looks like a bug in LiteLLM")


def _short(exc: Exception) -> str:
    """litellm's message, minus the traceback and bug-report link it may append."""
    message = str(exc)
    for marker in _NOISE_MARKERS:
        message = message.split(marker, 1)[0]
    return message.strip() or type(exc).__name__


def _model_error(model: str, exc: Exception, requests: int = 0, attempts: int = 0) -> ModelError:
    """Name the model and keep litellm's message (and the attempts, when it was retried); carry how many requests
    were sent, so they are counted."""
    message = _short(exc)
    log.warning("llm_call_failed", model=model, error=message, requests=requests)
    gave_up = f"gave up after {attempts} attempts: " if attempts > 1 else ""
    error = ModelError(f"model '{model}': {gave_up}{message}")
    error.requests = requests
    return error
