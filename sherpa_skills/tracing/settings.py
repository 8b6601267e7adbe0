"""What the OTEL_* variables (and SHERPA_SKILLS_TRACES_FLUSH_SECONDS) ask of the exporter, read and checked on the
run's path so a bad value is a clear error naming it; the exporter itself is built later, off that path."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec

from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

from ..errors import UsageError

FLUSH_VARIABLE = "SHERPA_SKILLS_TRACES_FLUSH_SECONDS"
FLUSH_SECONDS = 1.0  # the longest a run waits at exit for its last spans to leave
ATTEMPT_SECONDS = 2.0  # one batch's export deadline unless OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT says otherwise
SCHEDULE_MILLIS = 1000  # spans leave during the run once a second unless OTEL_BSP_SCHEDULE_DELAY says otherwise
TIMEOUTS = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


def _seconds(env: Mapping[str, str], name: str, *, zero: bool = False) -> float | None:
    """A positive (or, with `zero`, not negative) number of seconds from variable `name`, None when unset; anything
    else is a UsageError naming the variable."""
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise UsageError(f"{name}={raw!r}: expected a {'' if zero else 'positive '}number of seconds")
    return value


def flush_seconds(env: Mapping[str, str] | None = None) -> float:
    """How long a run waits at exit for its spans: SHERPA_SKILLS_TRACES_FLUSH_SECONDS (0: not at all), else
    FLUSH_SECONDS."""
    env = os.environ if env is None else env
    seconds = _seconds(env, FLUSH_VARIABLE, zero=True)
    return FLUSH_SECONDS if seconds is None else seconds


@dataclass(frozen=True)
class Setup:
    """What the OTEL_* variables ask of the exporter, checked on the run's path so a bad value is a clear error."""

    kind: str  # otlp | console
    protocol: str  # grpc | http/protobuf (otlp only)
    attempt_seconds: float  # one batch's export deadline
    user_timeout: bool  # the user set OTEL_EXPORTER_OTLP_*TIMEOUT: the exporter reads it as it always does

    @classmethod
    def read(cls, env: Mapping[str, str]) -> Setup:
        kind = env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
        if kind not in ("otlp", "console"):
            raise UsageError(f"OTEL_TRACES_EXPORTER={kind}: sherpa-skills exports 'otlp' or 'console' (or 'none')")
        protocol = (
            env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc"
        ).strip()
        if kind == "otlp":
            module = {"grpc": "grpc", "http/protobuf": "http"}.get(protocol)
            if module is None:
                raise UsageError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: use grpc or http/protobuf")
            # find_spec imports nothing heavy: the exporter itself is imported in the background
            if find_spec(f"opentelemetry.exporter.otlp.proto.{module}") is None:
                raise UsageError(
                    f"traces over OTLP ({protocol}) need the exporter: pip install 'sherpa-skills[otel]' "
                    f"(opentelemetry-exporter-otlp-proto-{module} missing)"
                )
        user_set = [seconds for seconds in (_seconds(env, name) for name in TIMEOUTS) if seconds is not None]
        return cls(kind, protocol, user_set[0] if user_set else ATTEMPT_SECONDS, bool(user_set))

    def build(self) -> SpanExporter:
        """The exporter (slow: imports gRPC); endpoint, headers and TLS from the OTEL_EXPORTER_OTLP_* variables."""
        if self.kind == "console":
            return ConsoleSpanExporter(out=sys.stderr)  # stdout stays the command's (JSON under --json)
        if self.protocol == "grpc":
            from grpc import StatusCode  # type: ignore[import-untyped]
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            # each batch is tried once: no status is retried, so no backoff can outlast the exit flush
            return OTLPSpanExporter(timeout=self.timeout, retryable_error_codes=frozenset({StatusCode.OK}))
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
            OTLPSpanExporter as HTTPSpanExporter,
        )

        return HTTPSpanExporter(timeout=self.timeout)  # type: ignore[no-any-return]

    @property
    def timeout(self) -> float | None:
        return None if self.user_timeout else self.attempt_seconds
