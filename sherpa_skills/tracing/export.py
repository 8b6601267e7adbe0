"""Spans leave in the background and never hold a run up: a collector that is down or slow costs a run at most the
exit flush (settings.FLUSH_SECONDS), then what is left is dropped and the count logged.

The SDK alone does not bound this (opentelemetry-sdk 1.45): BatchSpanProcessor ignores `export_timeout_millis`, its
`shutdown()` joins the exporting thread for up to 30 s, and the gRPC exporter retries a refused connection with
backoff inside one export, so a run with its collector down waited ~8 s at exit. Here the exporter is built off the
run's path (importing it costs ~0.17 s of CPU), and not at all while the collector refuses connections; each batch
is tried once with a deadline; the exit flush runs in a thread the run waits for at most a stated time, then cuts the
exporter's channel.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from .probe import collector_address, refuses
from .settings import SCHEDULE_MILLIS, Setup, flush_seconds

log = structlog.get_logger(__name__)


class BackgroundExporter(SpanExporter):
    """Builds the real exporter in a thread of its own, sends each batch once, and counts what got through.

    With an `address`, the exporter is not built while nothing listens there: each batch first checks (a TCP
    connect) and is dropped at once while the collector refuses connections, so a run pays for gRPC only when a
    collector is up."""

    def __init__(self, build: Callable[[], SpanExporter], address: tuple[str, int] | None = None) -> None:
        self.exported = 0
        self.failed = 0
        self.error: str | None = None  # why the exporter could not be built
        self.refused: str | None = None  # the collector's host:port, while it refuses connections
        self._make = build
        self._address = address
        self._inner: SpanExporter | None = None
        self._ready = threading.Event()
        self._closed = False
        threading.Thread(target=self._first, name="sherpa-otel-exporter", daemon=True).start()

    def _first(self) -> None:
        try:
            self._up()
        finally:
            self._ready.set()

    def _up(self) -> SpanExporter | None:
        """The exporter, built the first time the collector does not refuse a connection; None while it does."""
        if self._inner is not None or self.error is not None:
            return self._inner
        if self._address is not None and refuses(self._address):
            self.refused = "{}:{}".format(*self._address)
            return None
        self.refused = None
        try:
            self._inner = self._make()
        except Exception as exc:  # a broken certificate or endpoint must not end the run: its spans are dropped
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("traces_exporter_failed", error=self.error)
        if self._closed:  # shut while it was being built: it must not be left with an open channel
            self.shutdown()
        return self._inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._ready.wait()
        result = SpanExportResult.FAILURE
        inner = None if self._closed else self._up()  # never built again once shut
        if inner is not None and not self._closed:
            result = inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)  # one batch at a time: the processor holds its export lock
        else:
            self.failed += len(spans)
        return result

    def abandon(self) -> None:
        """Stop now: later batches fail at once, and shutting the exporter cancels an export in flight."""
        self._ready.set()
        self.shutdown()

    def shutdown(self) -> None:
        self._closed = True
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # nothing is held here: the processor holds the queue


class CountingProcessor(BatchSpanProcessor):
    """The SDK's batching, counting the spans handed to it so the exit can say how many never left."""

    def __init__(self, exporter: SpanExporter, **kwargs: Any) -> None:
        super().__init__(exporter, **kwargs)
        self.ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        if span.context and span.context.trace_flags.sampled:
            self.ended += 1
        super().on_end(span)


def within(seconds: float, work: Callable[[], object], name: str) -> bool:
    """Run `work` in a daemon thread and wait for it at most `seconds`: True when it finished in time."""
    done = threading.Event()

    def run() -> None:
        try:
            work()
        except Exception as exc:  # a failing flush loses spans, never the run
            log.warning("traces_flush_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    return done.wait(seconds)


class BoundedTracerProvider(TracerProvider):
    """A TracerProvider whose shutdown (at `close`, or at interpreter exit) waits at most `flush_seconds`,
    then drops what is left and logs how many spans never reached the collector."""

    def __init__(
        self,
        exporter: BackgroundExporter,
        *,
        resource: Resource,
        flush_seconds: float,
        attempt_seconds: float,
        schedule_millis: float | None = SCHEDULE_MILLIS,  # None: OTEL_BSP_SCHEDULE_DELAY, as the SDK reads it
    ):
        super().__init__(resource=resource, shutdown_on_exit=False)  # the SDK's exit hook would wait up to 30 s
        self.exporter = exporter
        self.flush_seconds = flush_seconds
        self.processor = CountingProcessor(
            exporter,
            schedule_delay_millis=schedule_millis,
            export_timeout_millis=attempt_seconds * 1000,  # unused by SDK 1.45, kept for the versions that use it
        )
        self.add_span_processor(self.processor)
        self._closed = False
        atexit.register(self.shutdown)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.shutdown)
        in_time = within(self.flush_seconds, super().shutdown, "sherpa-otel-flush")
        if not in_time:
            self.exporter.abandon()
        sent, ended = self.exporter.exported, self.processor.ended
        if sent < ended:
            reason = (
                f"exporter unavailable ({self.exporter.error})"
                if self.exporter.error
                else f"collector refused connections at {self.exporter.refused}"
                if self.exporter.refused
                else "export failed (collector unreachable?)"
                if in_time
                else f"flush took longer than {self.flush_seconds:g}s"
            )
            log.warning("traces_dropped", spans=ended - sent, of=ended, reason=reason, flush_seconds=self.flush_seconds)


def provider_from_environment(env: Mapping[str, str] | None = None) -> BoundedTracerProvider:
    """A TracerProvider exporting as the OTEL_* variables say, in the background and bounded at exit."""
    env = dict(os.environ if env is None else env)
    setup, flush = Setup.read(env), flush_seconds(env)  # both checked before anything starts
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": "sherpa-skills"}
    return BoundedTracerProvider(
        BackgroundExporter(setup.build, collector_address(env, setup.protocol) if setup.kind == "otlp" else None),
        resource=Resource.create(attributes),
        flush_seconds=flush,
        attempt_seconds=setup.attempt_seconds,
        schedule_millis=None if env.get("OTEL_BSP_SCHEDULE_DELAY", "").strip() else SCHEDULE_MILLIS,
    )
