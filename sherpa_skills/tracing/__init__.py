"""Runs exported as OpenTelemetry traces when asked (`pip install 'sherpa-skills[otel]'`): see `tracing.otel`.

Switched on by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
OTEL_TRACES_EXPORTER=otlp|console) and off by OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. When it is off,
nothing of opentelemetry is imported and nothing is sent: this module only reads the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engine.agent import Agent
    from .otel import RunTracer

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def tracing_requested(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces (the OpenTelemetry variables, read as the SDK reads them)."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return exporter in ("otlp", "console") or any(env.get(name, "").strip() for name in ENDPOINTS)


def trace_from_environment(agent: Agent) -> RunTracer | None:
    """A RunTracer following `agent` when the environment asks for traces, else None (importing nothing)."""
    if not tracing_requested():
        return None
    from .otel import RunTracer, provider_from_environment

    provider = provider_from_environment()
    return RunTracer(agent, provider, owns_provider=True)


__all__ = ["tracing_requested", "trace_from_environment"]
