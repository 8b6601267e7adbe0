"""Runs shared by machines through PostgreSQL: each run records the machine and home it ran in, and every other home
lists it saying where its log is (`runs`, `show`, `--json`, the browser view)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.postgres

WORKFLOW = """
name: tiny
initial: start
states:
  start: {on_enter: {set: {seen: 1}}}
  done: {final: true}
transitions:
  - {trigger: go, source: start, dest: done}
"""


def _other_machine(name: str) -> list[str]:
    """A command prefix under which the hostname is `name` (a UTS namespace of its own); skip where none can be had."""
    prefix = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name]
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("no UTS namespace here (unshare --uts needs privileges): another machine cannot be stood in for")
    return prefix


def _cli(url: str, home: Path, *args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "sherpa_skills.cli", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SHERPA_SKILLS_DATABASE": url},
    )


def _run(url: str, home: Path, tmp_path: Path, prefix: list[str] | None = None) -> str:
    workflow = tmp_path / "tiny.yaml"
    workflow.write_text(WORKFLOW)
    done = _cli(url, home, "run", str(workflow), "--json", prefix=prefix)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["run_id"])


def _listed(url: str, home: Path, run_id: str) -> dict[str, Any]:
    listed = _cli(url, home, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    return next(r for r in json.loads(listed.stdout) if r["run_id"] == run_id)


def test_a_run_of_another_home_on_this_machine_names_its_log_file(postgres_url: str, tmp_path: Path) -> None:
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    run_id = _run(postgres_url, home_a, tmp_path)
    log = _listed(postgres_url, home_b, run_id)["log"]
    assert log["here"] and Path(log["path"]).parent == home_a / "logs" and Path(log["path"]).is_file()
    shown = _cli(postgres_url, home_b, "show", run_id, "--json")
    assert json.loads(shown.stdout)["log"] == log


def test_a_run_from_another_machine_says_on_which_machine_its_log_is(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    run_id = _run(postgres_url, home_a, tmp_path, prefix=_other_machine("machine-a"))
    here = _run(postgres_url, home_b, tmp_path)
    log = _listed(postgres_url, home_b, run_id)["log"]
    expected = str(home_a / "logs" / f"{run_id}.jsonl")
    assert log == {"host": "machine-a", "path": expected, "here": False, "text": f"log on machine-a in {expected}"}
    assert _listed(postgres_url, home_b, here)["log"]["here"] is True

    shown = _cli(postgres_url, home_b, "show", run_id)
    assert shown.returncode == 0 and "log on machine-a in" in " ".join(shown.stdout.split()), shown.stdout
    table = _cli(postgres_url, home_b, "runs")
    assert "on machine-a" in table.stdout and "here" in table.stdout

    pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
    pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from sherpa_skills.ui import create_app

    monkeypatch.setenv("SHERPA_SKILLS_DATABASE", postgres_url)
    with TestClient(create_app(home_b), base_url="http://127.0.0.1") as client:
        page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200 and "machine-a" in page.text and f"{run_id}.jsonl" in page.text
