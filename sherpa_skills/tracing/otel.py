"""A run as OpenTelemetry spans, built by a run hook that hears each step (`RunHook.on_action`, `on_decision`, ...).

Follows the GenAI semantic conventions as published in OpenTelemetry semantic-conventions **v1.41.0** (status:
Development, so pinned here by name): the run is an `invoke_workflow` span (`gen_ai.workflow.name`); each LLM call (a
policy's decision or an `llm` action) a `chat` span (`gen_ai.request.model`, `gen_ai.usage.*`); every other action an
`execute_tool` span (`gen_ai.tool.name`, `gen_ai.tool.type`). Decisions are events on the run's span. Message content
and tool arguments/results are left out unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and every
attribute value goes through the same redaction as everything the run store keeps.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ..engine.hooks import HookReport, RunHook
from ..redact import redact_value
from .export import provider_from_environment, within
from .settings import FLUSH_SECONDS

if TYPE_CHECKING:
    from ..engine.agent import Agent
    from ..engine.belief import LogEntry
    from ..engine.run.result import RunResult
    from ..engine.run.view import RunView

log = structlog.get_logger(__name__)

SEMCONV_VERSION = "1.41.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MAX_ATTRIBUTE = 4096  # a long output is cut: a trace backend is not the run store
LLM_ACTIONS = ("llm", "policy:llm")


def _text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(redact_value(value), default=str, ensure_ascii=False)
    text = redact_value(text)
    return text if len(text) <= MAX_ATTRIBUTE else text[: MAX_ATTRIBUTE - 1] + "…"


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attribute values as OpenTelemetry takes them (no None), strings redacted."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        out[key] = _text(value) if isinstance(value, str | dict | list | tuple) else value
    return out


class RunTracer(RunHook):
    """Follows one agent's run, as one of its hooks, and turns each step it hears of into spans; `close()` flushes
    them."""

    def __init__(
        self,
        agent: Agent,
        provider: TracerProvider,
        *,
        owns_provider: bool = False,
        capture_content: bool | None = None,
    ):
        self.agent = agent
        self.provider = provider
        self.owns_provider = owns_provider
        self.capture = (
            os.environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"
            if capture_content is None
            else capture_content
        )
        self.tracer = provider.get_tracer("sherpa_skills", schema_url=SCHEMA_URL)
        self.root: Span | None = None
        agent.add_hook(self)

    def _started(self) -> Span:
        """The run's span, started by the first thing the tracer hears."""
        if self.root is None:
            self.root = self._start_root()
        return self.root

    def _start_root(self) -> Span:
        agent = self.agent
        name = agent.machine.name
        return self.tracer.start_span(
            f"invoke_workflow {name}",
            kind=SpanKind.INTERNAL,
            attributes=_clean(
                {
                    "gen_ai.operation.name": "invoke_workflow",
                    "gen_ai.workflow.name": name,
                    "gen_ai.agent.name": agent.name,
                    "gen_ai.conversation.id": agent.run_id,
                    "sherpa_skills.run_id": agent.run_id,
                    "sherpa_skills.workflow_path": agent.workflow_path,
                }
            ),
        )

    def on_action(
        self, *, run: RunView, action: str, status: str, duration_ms: float, error: str | None, state: str
    ) -> None:
        self._heard("action", action=action, status=status, duration_ms=duration_ms, error=error, state=state)

    def on_decision(self, *, run: RunView, state: str, trigger: str, decided_by: str, reason: str | None) -> None:
        self._heard("decision", state=state, trigger=trigger, decided_by=decided_by, reason=reason)

    def on_transition(
        self, *, run: RunView, state: str, trigger: str | None, source: str | None, decided_by: str, tick: int
    ) -> None:
        self._heard("transition", state=state, trigger=trigger, source=source, decided_by=decided_by, tick=tick)

    def on_stop(self, *, run: RunView, result: RunResult) -> HookReport | None:
        self._heard("status", **{k: v for k, v in result.to_dict().items() if k != "context"})
        return None

    def _heard(self, kind: str, **payload: Any) -> None:
        root = self._started()
        if kind == "action":
            self._action(payload)
        elif kind == "decision":
            root.add_event(
                "decision",
                _clean(
                    {
                        "sherpa_skills.state": payload.get("state"),
                        "sherpa_skills.trigger": payload.get("trigger"),
                        "sherpa_skills.decided_by": payload.get("decided_by"),
                    }
                ),
            )
            self._llm_decision(payload)
        elif kind == "transition":
            root.add_event(
                "transition",
                _clean(
                    {
                        "sherpa_skills.state": payload.get("state"),
                        "sherpa_skills.trigger": payload.get("trigger"),
                        "sherpa_skills.tick": payload.get("tick"),
                    }
                ),
            )
        elif kind == "status":
            self._end(payload)

    def _entry(self, action: str) -> LogEntry | None:
        """The log entry the agent appended just before telling its hooks (tokens, inputs, outputs)."""
        log = self.agent.belief.log
        return log[-1] if log and log[-1].action == action else None

    def _span(self, name: str, kind: SpanKind, attributes: dict[str, Any], duration_ms: float, error: object) -> None:
        end = time.time_ns()
        span = self.tracer.start_span(
            name,
            context=trace.set_span_in_context(self._started()),
            kind=kind,
            attributes=_clean(attributes),
            start_time=end - int(duration_ms * 1e6),
        )
        if error:
            span.set_status(Status(StatusCode.ERROR, _text(error)))
            span.set_attribute("error.type", "action_failed")
        span.end(end_time=end)

    def _action(self, p: dict[str, Any]) -> None:
        action = p["action"]
        if action.startswith("check:"):
            return
        entry = self._entry(action)
        if action in LLM_ACTIONS:
            model = self.agent.model
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.provider.name": model.split("/", 1)[0] if model else None,
                "sherpa_skills.tokens": entry.tokens if entry else None,
                "sherpa_skills.state": p.get("state"),
            }
            if self.capture and entry is not None:
                attrs["gen_ai.input.messages"] = entry.inputs
                attrs["gen_ai.output.messages"] = entry.outputs
            self._span(f"chat {model or ''}".strip(), SpanKind.CLIENT, attrs, p.get("duration_ms", 0.0), p.get("error"))
            return
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": action,
            "gen_ai.tool.type": "function",
            "sherpa_skills.state": p.get("state"),
            "sherpa_skills.action.status": p.get("status"),
        }
        if self.capture and entry is not None:
            attrs["gen_ai.tool.call.arguments"] = entry.inputs
            attrs["gen_ai.tool.call.result"] = entry.outputs
        self._span(f"execute_tool {action}", SpanKind.INTERNAL, attrs, p.get("duration_ms", 0.0), p.get("error"))

    def _llm_decision(self, p: dict[str, Any]) -> None:
        """A decision the LLM policy made: its call is logged as `policy:llm` (no action notification of its own)."""
        if p.get("decided_by") != "llm":
            return
        entry = self._entry("policy:llm")
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self.agent.model,
            "sherpa_skills.tokens": entry.tokens if entry else None,
            "sherpa_skills.state": p.get("state"),
            "sherpa_skills.trigger": p.get("trigger"),
        }
        if self.capture and entry is not None:
            attrs["gen_ai.output.messages"] = entry.outputs
        self._span(f"chat {self.agent.model or ''}".strip(), SpanKind.CLIENT, attrs, 0.0, None)

    def _end(self, p: dict[str, Any]) -> None:
        root, self.root = self.root, None
        if root is None:
            return
        root.set_attributes(
            _clean(
                {
                    "sherpa_skills.status": p.get("status"),
                    "sherpa_skills.state": p.get("state"),
                    "sherpa_skills.steps": p.get("steps"),
                    "sherpa_skills.llm_calls": p.get("llm_calls"),
                    "sherpa_skills.tokens": p.get("tokens"),
                }
            )
        )
        if p.get("status") == "error":
            root.set_status(Status(StatusCode.ERROR, _text(p.get("error") or "error")))
            root.set_attribute("error.type", "run_error")
        root.end()

    def close(self) -> None:
        """End a span a stopped run left open (Ctrl-C), and flush; shut the provider down when it is ours.

        Ours waits at most its flush time; a provider passed in is flushed for at most FLUSH_SECONDS, then left to
        finish in the background (its exporter is its owner's to bound)."""
        if self.root is not None:
            self.root.set_status(Status(StatusCode.ERROR, "interrupted"))
            self.root.end()
            self.root = None
        if self.owns_provider:
            self.provider.shutdown()
        elif not within(FLUSH_SECONDS, self.provider.force_flush, "sherpa-otel-flush"):
            log.warning("traces_flush_unfinished", flush_seconds=FLUSH_SECONDS)


def trace_run(
    agent: Agent, provider: TracerProvider | None = None, *, capture_content: bool | None = None
) -> RunTracer:
    """Export `agent`'s runs as spans through `provider` (default: as the OTEL_* variables say)."""
    owns = provider is None
    return RunTracer(
        agent, provider or provider_from_environment(), owns_provider=owns, capture_content=capture_content
    )
