"""Collectors for trace tests and the trace bench: a real OTLP/gRPC one in this process, a port that refuses
connections (a collector that is down) and one that accepts them and never answers (a collector that hangs)."""

from __future__ import annotations

import socket
import threading
from concurrent import futures
from typing import Any


class Collector:
    """An OTLP/gRPC trace collector in this process, on a free loopback port: what a run sends arrives here."""

    def __init__(self, port: int = 0) -> None:
        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

        self.requests: list[Any] = []
        self.got = threading.Event()
        collector = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 (the gRPC method's name)
                collector.requests.append(request)
                collector.got.set()
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")

    def spans(self) -> list[Any]:
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]


def closed_port() -> socket.socket:
    """A loopback socket bound but not listening: connecting to its port is refused, and no one else can take it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def silent_port() -> socket.socket:
    """A loopback socket listening but never accepting: the kernel completes the handshake, then nothing answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock
