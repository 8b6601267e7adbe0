"""The one place sherpa-skills calls an LLM: litellm, imported on first use, errors as ModelError.

The scripted stand-in (`scripted/PATH.yaml`) answers in-process without importing litellm, which saves seconds of
start-up on every offline run; `SHERPA_SKILLS_SCRIPTED_VIA=litellm` sends it through litellm as a custom provider,
the same path a real model takes (the tests drive both and hold them to the same answers).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from ..errors import ModelError
from ._litellm import load_litellm, warm_up as start_warm_up

__all__ = ["MODEL_ENV", "SCRIPTED_PREFIX", "SCRIPTED_VIA_ENV", "Completion", "acomplete", "complete", "needs_litellm",
           "resolve_model", "warm_up"]

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
) -> Completion:
    """Ask the model once, synchronously."""
    if _scripted_direct(model):
        return _scripted_completion(messages, model, base_dir)
    litellm, model, kwargs = _prepare(messages, model, response_format, temperature, max_tokens, base_dir)
    try:
        try:
            response = litellm.completion(**kwargs)
        except litellm.UnsupportedParamsError:
            if "response_format" not in kwargs:
                raise
            response = litellm.completion(**_without_response_format(kwargs, model))
    except Exception as exc:
        raise _model_error(model, exc) from exc
    return _completion(litellm, response, model)


async def acomplete(
    messages: list[dict],
    model: str,
    *,
    response_format: dict | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    base_dir: Path | str | None = None,
) -> Completion:
    """Ask the model once, without blocking the event loop."""
    if _scripted_direct(model):  # reads one small cached file: nothing to await
        return _scripted_completion(messages, model, base_dir)
    litellm, model, kwargs = _prepare(messages, model, response_format, temperature, max_tokens, base_dir)
    try:
        try:
            response = await litellm.acompletion(**kwargs)
        except litellm.UnsupportedParamsError:
            if "response_format" not in kwargs:
                raise
            response = await litellm.acompletion(**_without_response_format(kwargs, model))
    except Exception as exc:
        raise _model_error(model, exc) from exc
    return _completion(litellm, response, model)


def _prepare(
    messages: list[dict],
    model: str,
    response_format: dict | None,
    temperature: float,
    max_tokens: int | None,
    base_dir: Path | str | None,
) -> tuple[ModuleType, str, dict[str, Any]]:
    """Shared request building for both faces, so sync and async send exactly the same call."""
    if not model or not model.strip():
        raise ModelError(f"empty model name: {_MODEL_HINT}")
    model = model.strip()
    litellm = _litellm()
    if model.startswith(SCRIPTED_PREFIX):
        model = _scripted_model_string(model, base_dir)
        _ensure_scripted_provider(litellm)
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    if response_format is not None:
        kwargs["response_format"] = response_format
    return litellm, model, kwargs


def _without_response_format(kwargs: dict[str, Any], model: str) -> dict[str, Any]:
    # Structured output is a nicety: a provider that rejects response_format is asked once more without it.
    log.info("llm_response_format_unsupported", model=model)
    return {k: v for k, v in kwargs.items() if k != "response_format"}


def _scripted_model_string(model: str, base_dir: Path | str | None) -> str:
    """Make a scripted model's path absolute, relative to the workflow's folder when there is one."""
    path = Path(model[len(SCRIPTED_PREFIX):]).expanduser()
    if not str(path) or str(path) == ".":
        raise ModelError(f"model '{model}': the scripted stand-in needs a script path, e.g. {SCRIPTED_PREFIX}answers.yaml")
    if not path.is_absolute():
        path = Path(base_dir or Path.cwd()) / path
    return SCRIPTED_PREFIX + str(path.resolve())


def _litellm() -> ModuleType:
    """Import and quieten litellm on first use (the import costs seconds and must stay offline)."""
    return load_litellm()


def _scripted_route() -> str:
    route = os.environ.get(SCRIPTED_VIA_ENV, "").strip().lower() or "direct"
    if route not in _SCRIPTED_ROUTES:
        raise ModelError(f"{SCRIPTED_VIA_ENV}={route!r} is not a route; use one of: {', '.join(_SCRIPTED_ROUTES)} (or unset it)")
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
        text, prompt_tokens, completion_tokens = answer_with_usage(model[len(SCRIPTED_PREFIX):], messages)
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
        if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map = [
                *litellm.custom_provider_map,
                {"provider": PROVIDER, "custom_handler": _scripted_handler},
            ]


def _completion(litellm: ModuleType, response: Any, model: str) -> Completion:
    """Flatten litellm's response into what the rest of sherpa-skills needs."""
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    try:
        text = response.choices[0].message.content or ""
    except (AttributeError, IndexError) as exc:
        raise ModelError(f"model '{model}' returned no message: {response!r:.200}") from exc
    completion = Completion(text, prompt_tokens, completion_tokens, _cost(litellm, response), model)
    log.debug("llm_completion", model=model, tokens=completion.tokens, cost=completion.cost)
    return completion


def _cost(litellm: ModuleType, response: Any) -> float:
    """The call's price when litellm knows the model; unknown models (local, scripted) cost 0.0."""
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:
        return 0.0


_NOISE_MARKERS = ("\nTraceback (most recent call last)", "This looks like a bug in LiteLLM")


def _model_error(model: str, exc: Exception) -> ModelError:
    """Name the model and keep litellm's message, minus the traceback and bug-report link it may append."""
    message = str(exc)
    for marker in _NOISE_MARKERS:
        message = message.split(marker, 1)[0]
    message = message.strip() or type(exc).__name__
    log.warning("llm_call_failed", model=model, error=message)
    return ModelError(f"model '{model}': {message}")
