"""The one place sherpa-skills calls an LLM: litellm, imported on first use, errors as ModelError."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from ..errors import ModelError

__all__ = ["MODEL_ENV", "SCRIPTED_PREFIX", "Completion", "acomplete", "complete", "resolve_model"]

MODEL_ENV = "SHERPA_SKILLS_MODEL"
SCRIPTED_PREFIX = "scripted/"

log = structlog.get_logger(__name__)

_MODEL_HINT = (
    f"set {MODEL_ENV} to a litellm model string (e.g. openai/gpt-4o-mini), "
    f"or use the offline stand-in {SCRIPTED_PREFIX}PATH.yaml (see sherpa_skills.llm.scripted)"
)

_lock = threading.Lock()
_litellm_module: ModuleType | None = None
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
    """Make a scripted model's path absolute: relative to the workflow's folder, or to the current directory when
    there is none or the workflow is a built-in machine (whose folder is inside the installed package)."""
    path = Path(model[len(SCRIPTED_PREFIX):]).expanduser()
    if not str(path) or str(path) == ".":
        raise ModelError(f"model '{model}': the scripted stand-in needs a script path, e.g. {SCRIPTED_PREFIX}answers.yaml")
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
    global _litellm_module
    if _litellm_module is None:
        with _lock:
            if _litellm_module is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.disable_hf_tokenizer_download = True
                litellm.suppress_debug_info = True
                if hasattr(litellm, "telemetry"):
                    litellm.telemetry = False
                _litellm_module = litellm
    return _litellm_module


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
