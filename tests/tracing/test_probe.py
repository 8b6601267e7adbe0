"""The collector check that spares a run gRPC: only a refused connection means down, and only an address a plain
TCP connect can judge is checked at all."""

from __future__ import annotations

import pytest
from _collector import closed_port, silent_port

from sherpa_skills.tracing.probe import collector_address, refuses


@pytest.mark.parametrize(
    ("env", "protocol", "address"),
    [
        ({}, "grpc", ("localhost", 4317)),  # the OTLP default
        ({}, "http/protobuf", ("localhost", 4318)),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com"}, "grpc", ("otel.example.com", 443)),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2"},
            "grpc",
            ("b", 2),
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}, "grpc", None),  # a gRPC target, not a URL
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "unix:///run/otel.sock"}, "grpc", None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:port"}, "grpc", None),  # the exporter will say why
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "HTTPS_PROXY": "http://proxy:3128"}, "grpc", None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "grpc_proxy": "http://proxy:3128"}, "grpc", None),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
                "http_proxy": "http://p:1",
                "no_proxy": "127.0.0.1",
            },
            "grpc",
            ("127.0.0.1", 4317),  # the proxy is not used for this host: the connect judges it
        ),
    ],
)
def test_only_an_address_a_connect_can_judge_is_checked(
    env: dict[str, str], protocol: str, address: tuple[str, int] | None
) -> None:
    assert collector_address(env, protocol) == address


def test_a_refused_port_is_down_and_a_listening_one_is_not() -> None:
    closed, silent = closed_port(), silent_port()
    try:
        assert refuses(closed.getsockname())
        assert not refuses(silent.getsockname())  # it never answers, but something is there: the exporter decides
    finally:
        closed.close()
        silent.close()
