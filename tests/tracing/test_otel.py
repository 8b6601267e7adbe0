"""Runs as OpenTelemetry spans: GenAI conventions, secrets redacted, nothing imported when off, and the standard
OTEL_EXPORTER_OTLP_* variables against an in-process OTLP collector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed (pip install 'sherpa-skills[otel]')")

from _collector import Collector  # noqa: E402

from sherpa_skills.engine.workflow import load_workflow_text  # noqa: E402

SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"
WORKFLOW = """
name: secret-walk
inputs:
  token: {required: true}
initial: fetch
states:
  fetch:
    on_enter: {shell: {command: "echo fetching with api_key=SECRET --password hunter2hunter2 {{ token }}"}}
  done: {final: true}
transitions:
  - {trigger: go, source: fetch, dest: done}
""".replace("SECRET", SECRET)


def _spans(tmp_path: Path, capture: bool) -> list[Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from sherpa_skills.tracing.otel import trace_run

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = load_workflow_text(WORKFLOW, base_dir=tmp_path).agent()
    tracer = trace_run(agent, provider, capture_content=capture)
    assert agent.run({"token": f"password={SECRET}"}).status == "final"
    tracer.close()
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize("capture", [False, True])
def test_a_run_exports_genai_spans_without_its_secrets(tmp_path: Path, capture: bool) -> None:
    spans = _spans(tmp_path, capture)
    by_op = {s.attributes["gen_ai.operation.name"]: s for s in spans}
    root, tool = by_op["invoke_workflow"], by_op["execute_tool"]
    assert root.name == "invoke_workflow secret-walk" and root.attributes["gen_ai.workflow.name"] == "secret-walk"
    assert tool.name == "execute_tool shell" and tool.parent.span_id == root.context.span_id
    assert ("gen_ai.tool.call.arguments" in tool.attributes) is capture  # content only when asked
    dumped = json.dumps([{**dict(s.attributes), "events": [dict(e.attributes) for e in s.events]} for s in spans])
    assert SECRET not in dumped and "hunter2hunter2" not in dumped
    if capture:
        assert "fetching with" in tool.attributes["gen_ai.tool.call.arguments"]


def test_nothing_of_opentelemetry_is_imported_when_tracing_is_off(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    code = (
        "import sys; from sherpa_skills.cli import main; "
        f"main(['run', {str(tmp_path / 'w.yaml')!r}, '-i', 'token=x', '-q', '--home', {str(tmp_path / 'h')!r}]); "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_cli_sends_spans_to_the_collector_the_otlp_variables_name(tmp_path: Path) -> None:
    collector = Collector()
    collector.server.start()
    try:
        (tmp_path / "w.yaml").write_text(WORKFLOW)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}",
            "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_SERVICE_NAME": "triage-tests",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        }
        cmd = [sys.executable, "-m", "sherpa_skills", "run", str(tmp_path / "w.yaml"), "--json"]
        cmd += ["-i", f"token=api_key={SECRET}", "--home", str(tmp_path / "h")]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)  # stdout is still only the JSON result
        assert result["status"] == "final"
        assert collector.got.wait(30)
        log = (tmp_path / "h" / "logs" / f"{result['run_id']}.jsonl").read_text()
        assert "traces_dropped" not in log  # all of them arrived before the exit flush let go
    finally:
        collector.server.stop(0)
    names = {s.name for s in collector.spans()}
    assert {"invoke_workflow secret-walk", "execute_tool shell"} <= names
    service = collector.requests[0].resource_spans[0].resource.attributes
    assert any(a.key == "service.name" and a.value.string_value == "triage-tests" for a in service)
    assert SECRET not in str(collector.requests)
