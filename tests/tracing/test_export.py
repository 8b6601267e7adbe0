"""Traces never slow a run: real `sherpa-skills run` subprocesses against a collector that is down (a refused port),
one that hangs (accepts, never answers), one that cannot be built, and bad settings. Each run is timed against the
same run with tracing off, and must say in its log how many spans it dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed (pip install 'sherpa-skills[otel]')")

from _collector import Collector, closed_port, silent_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "shell_build" / "workflow.yaml"
# What tracing may add to a ~1.3 s run here, with room for a machine shared with other work; the old exit waited
# through ~7 s of retry backoff for a refused port and 10 s (the export deadline) for a silent one.
SLACK_S = 3.0
QUICK = """
name: quick
initial: go
states:
  go: {on_enter: {shell: {command: "echo hi"}}}
  done: {final: true}
transitions:
  - {trigger: next, source: go, dest: done}
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SHERPA_SKILLS_TRACES_"))}
    return {**env, **extra}


def _run(tmp_path: Path, name: str, **extra: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    cmd = [sys.executable, "-m", "sherpa_skills", "run", str(EXAMPLE), "--json", "--home", str(tmp_path / "home")]
    cmd += ["-i", f"workdir={tmp_path / name}"]
    start = time.perf_counter()
    out = subprocess.run(cmd, env=_env(**extra), capture_output=True, text=True, timeout=120)
    return time.perf_counter() - start, out


def _log(tmp_path: Path, out: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    """The run's JSON log (HOME/logs/RUN_ID.jsonl) by event name; the run must have ended `final`."""
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)  # stdout is only the JSON result, whatever the exporter does
    assert result["status"] == "final"
    lines = (tmp_path / "home" / "logs" / f"{result['run_id']}.jsonl").read_text().splitlines()
    return {event["event"]: event for event in map(json.loads, lines)}


@pytest.fixture(scope="module")
def off_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The example's run with tracing off: what every traced run here is timed against."""
    elapsed, out = _run(tmp_path_factory.mktemp("off"), "off")
    assert out.returncode == 0, out.stderr
    return elapsed


def test_a_collector_that_is_down_neither_slows_the_run_nor_hides_the_loss(tmp_path: Path, off_s: float) -> None:
    sock = closed_port()
    try:
        port = sock.getsockname()[1]
        elapsed, out = _run(tmp_path, "down", OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
    finally:
        sock.close()
    assert elapsed < off_s + SLACK_S, f"{elapsed:.1f}s with the collector down, {off_s:.1f}s with tracing off"
    dropped = _log(tmp_path, out)["traces_dropped"]
    assert dropped["spans"] == dropped["of"] >= 5  # the workflow and its four steps, none delivered
    assert dropped["reason"] == f"collector refused connections at 127.0.0.1:{port}"


def test_a_collector_that_is_down_costs_no_grpc(tmp_path: Path) -> None:
    """Nothing listens: the exporter (and gRPC, ~0.17 s to import) is never loaded, and stderr stays quiet."""
    sock = closed_port()
    (tmp_path / "w.yaml").write_text(QUICK)
    code = (
        "import sys; from sherpa_skills.cli import main; "
        f"main(['run', {str(tmp_path / 'w.yaml')!r}, '-q', '--home', {str(tmp_path / 'h')!r}]); "
        "print(sorted(m for m in ('grpc', 'opentelemetry.exporter.otlp.proto.grpc') if m in sys.modules))"
    )
    env = _env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{sock.getsockname()[1]}")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    finally:
        sock.close()
    assert out.stdout.strip() == "[]" and out.stderr == "", out.stderr


def test_spans_reach_a_collector_that_comes_up_after_the_run_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExportResult

    from sherpa_skills.tracing.export import BackgroundExporter
    from sherpa_skills.tracing.settings import Setup

    sock = closed_port()
    port = sock.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    exporter = BackgroundExporter(Setup.read(os.environ).build, ("127.0.0.1", port))
    span = TracerProvider().get_tracer("t").start_span("early")
    span.end()
    assert exporter.export([span]) is SpanExportResult.FAILURE
    assert exporter.refused == f"127.0.0.1:{port}" and exporter.failed == 1
    sock.close()
    collector = Collector(port)
    collector.server.start()
    try:
        assert exporter.export([span]) is SpanExportResult.SUCCESS  # checked again, built now, sent
        assert exporter.refused is None and exporter.exported == 1
    finally:
        exporter.shutdown()
        collector.server.stop(0)
    assert [s.name for s in collector.spans()] == ["early"]


def test_a_collector_that_never_answers_costs_at_most_the_flush_time(tmp_path: Path, off_s: float) -> None:
    sock = silent_port()
    try:
        port = sock.getsockname()[1]
        elapsed, out = _run(
            tmp_path,
            "silent",
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
            OTEL_BSP_SCHEDULE_DELAY="60000",  # nothing leaves before the exit flush, so the flush is what hangs
            SHERPA_SKILLS_TRACES_FLUSH_SECONDS="0.3",
        )
    finally:
        sock.close()
    assert elapsed < off_s + SLACK_S, f"{elapsed:.1f}s with the collector silent, {off_s:.1f}s with tracing off"
    dropped = _log(tmp_path, out)["traces_dropped"]
    assert dropped["spans"] == dropped["of"] >= 5
    assert dropped["reason"] == "flush took longer than 0.3s"


def test_an_exporter_that_cannot_be_built_drops_the_spans_not_the_run(tmp_path: Path, off_s: float) -> None:
    sock = silent_port()  # something listens, so the exporter is built (and fails)
    try:
        elapsed, out = _run(
            tmp_path,
            "broken",
            OTEL_EXPORTER_OTLP_ENDPOINT=f"https://127.0.0.1:{sock.getsockname()[1]}",  # TLS: credentials from…
            OTEL_PYTHON_EXPORTER_OTLP_GRPC_CREDENTIAL_PROVIDER="no-such-provider",  # …a provider that is not there
        )
    finally:
        sock.close()
    log = _log(tmp_path, out)
    assert "no-such-provider" in log["traces_exporter_failed"]["error"]
    assert log["traces_dropped"]["reason"].startswith("exporter unavailable")
    assert elapsed < off_s + SLACK_S


def test_a_library_run_never_closed_is_still_bounded_at_exit(tmp_path: Path) -> None:
    """`trace_run` without `close()`: the interpreter's exit flushes, for at most the flush time."""
    sock = silent_port()
    code = (
        "from pathlib import Path; from sherpa_skills.engine.workflow import load_workflow_text; "
        "from sherpa_skills.tracing.otel import trace_run; "
        f"agent = load_workflow_text({QUICK!r}, base_dir=Path({str(tmp_path)!r})).agent(); trace_run(agent); "
        "print(agent.run({}).status)"
    )
    env = _env(
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{sock.getsockname()[1]}",
        OTEL_BSP_SCHEDULE_DELAY="60000",
        SHERPA_SKILLS_TRACES_FLUSH_SECONDS="0.3",
    )
    try:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        elapsed = time.perf_counter() - start
    finally:
        sock.close()
    assert elapsed < 2 * SLACK_S, f"{elapsed:.1f}s: the SDK's own exit hook waited out the 10 s export deadline"
    assert out.returncode == 0 and "final" in out.stdout, out.stderr
    assert "traces_dropped" in out.stdout + out.stderr  # the library's default logging says so


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SHERPA_SKILLS_TRACES_FLUSH_SECONDS", "soon"),
        ("SHERPA_SKILLS_TRACES_FLUSH_SECONDS", "-1"),
        ("SHERPA_SKILLS_TRACES_FLUSH_SECONDS", "inf"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "0"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "nan"),
    ],
)
def test_a_bad_time_setting_is_a_clear_error_naming_it(tmp_path: Path, name: str, value: str) -> None:
    (tmp_path / "w.yaml").write_text(QUICK)
    cmd = [sys.executable, "-m", "sherpa_skills", "run", str(tmp_path / "w.yaml"), "--json"]
    cmd += ["--home", str(tmp_path / "home")]
    env = _env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4317", **{name: value})
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert f"{name}={value!r}" in out.stderr and "Traceback" not in out.stderr
