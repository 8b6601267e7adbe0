"""A divergence says why: the failing step's stderr tail (redacted, limited, made safe for a terminal) reaches the
terminal, `--json`, the execution record (`learn show`, `learn health`) and the browser view; `observed` says what
happened once. Real replays through the CLI, on a real store, in a real shell."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.skills.replay.divergence import TAIL_CHARS, TAIL_LINES, output_tail

MISSING = "ls: cannot access '/no/such/dir': No such file or directory"
TOKEN = "ghp_" + "a1B2" * 9  # a GitHub token's shape: redaction knows it by that alone


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def cli(capsys: pytest.CaptureFixture[str], home: Path, *args: str, json_out: bool = True) -> tuple[int, Any]:
    code = main([*args, *(["--json"] if json_out else []), "--home", str(home)])
    out = capsys.readouterr().out
    return code, (json.loads(out) if json_out else out)


def captured(capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, *commands: str) -> str:
    steps = tmp_path / "steps.yaml"
    steps.write_text(
        "description: List the build folder\nsteps:\n" + "".join(f"  - command: {json.dumps(c)}\n" for c in commands)
    )
    code, proc = cli(capsys, home, "learn", "capture-success", "list-build", "--steps-file", str(steps))
    assert code == 0, proc
    return str(proc["id"])


def replay(capsys: pytest.CaptureFixture[str], home: Path, pid: str, json_out: bool = True) -> tuple[int, Any]:
    return cli(
        capsys,
        home,
        "learn",
        "replay",
        "list the build folder",
        "--procedure",
        pid,
        "--execute",
        "--yes",
        "--min-confidence",
        "0",
        json_out=json_out,
    )


def script(work: Path, body: str) -> str:
    """A step that runs a script file: its stderr is not in the command, so capture cannot redact it away first."""
    (work / "fail.sh").write_text(body)
    return "sh fail.sh"


class TestTheTerminalSaysWhy:
    def test_the_failing_steps_stderr_is_shown(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        pid = captured(capsys, tmp_path, home, "true", "ls /no/such/dir")
        code, out = replay(capsys, home, pid, json_out=False)
        assert code == 1 and "diverged" in out
        step = next(line for line in out.splitlines() if "2. ls /no/such/dir" in line)
        assert "exit code 2, expected 0" in step
        assert MISSING in out, out
        assert out.count(MISSING) == 1, out  # said once: not under the step and again in a reason line

    def test_json_keeps_its_keys_and_observed_says_it_once(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        pid = captured(capsys, tmp_path, home, "ls /no/such/dir")
        code, out = replay(capsys, home, pid)
        assert code == 1 and out["status"] == "diverged" and out["diverged_step"] == 1
        d = out["divergence"]
        assert d["expected"] == "exit code 0" and d["observed"] == "exit code 2"
        assert d["stderr_tail"] == MISSING
        assert d["reason"] == f"exit code 2, expected 0: {MISSING}" and out["reason"] == d["reason"]
        assert MISSING in d["observed_output"] and d["observed_exit_code"] == 2
        assert out["steps"][0]["reason"] == "exit code 2, expected 0"  # the step's own result is unchanged

    def test_observed_has_no_repeated_fragment_for_a_pattern_or_a_timeout(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        steps = tmp_path / "steps.yaml"
        steps.write_text(
            "description: Say hello\nsteps:\n  - {command: 'echo bye', expected_output_pattern: '^hello$'}\n"
        )
        pid = cli(capsys, home, "learn", "capture-success", "hello", "--steps-file", str(steps))[1]["id"]
        d = replay(capsys, home, pid)[1]["divergence"]
        assert d["expected"] == "exit code 0, output matching /^hello$/"
        assert d["observed"] == "exit code 0, output not matching /^hello$/"
        assert d["reason"] == "output does not match /^hello$/" and d["stderr_tail"] is None
        steps.write_text("description: Sleep\nsteps:\n  - {command: 'sleep 5', timeout_secs: 1}\n")
        pid = cli(capsys, home, "learn", "capture-success", "sleep", "--steps-file", str(steps))[1]["id"]
        d = replay(capsys, home, pid)[1]["divergence"]
        assert d["observed"] == "timed out after 1 s" and d["reason"] == "timed out after 1 s"

    def test_a_failing_postcondition_says_why_too(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        steps = tmp_path / "steps.yaml"
        steps.write_text("description: Touch it\nsteps:\n  - command: 'true'\npostconditions: ['ls /no/such/dir']\n")
        pid = cli(capsys, home, "learn", "capture-success", "touch", "--steps-file", str(steps))[1]["id"]
        code, out = replay(capsys, home, pid)
        d = out["divergence"]
        assert out["status"] == "diverged" and d["observed"] == "exit code 2" and d["stderr_tail"] == MISSING
        assert d["reason"] == f"postcondition failed: exit code 2, expected 0: {MISSING}"
        _, text = replay(capsys, home, pid, json_out=False)
        assert text.count(MISSING) == 1, text

    def test_a_secret_in_stderr_is_redacted_everywhere(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        step = script(work, f"echo 'fatal: bad credentials, token {TOKEN}' >&2\nexit 3\n")
        pid = captured(capsys, tmp_path, home, step)
        _, text = replay(capsys, home, pid, json_out=False)
        assert TOKEN not in text and "fatal: bad credentials, token [REDACTED]" in text
        _, out = replay(capsys, home, pid)
        assert TOKEN not in json.dumps(out)  # observed_output, which the LLM's prompt shows, too
        assert out["divergence"]["stderr_tail"] == "fatal: bad credentials, token [REDACTED]"
        for args in (("learn", "show", pid), ("learn", "health"), ("learn", "failures")):
            _, shown = cli(capsys, home, *args, json_out=False)
            assert TOKEN not in shown, args
        _, health = cli(capsys, home, "learn", "health")
        pattern = next(r for r in health if r["procedure_id"] == pid)["failure_pattern"]
        assert pattern and "bad credentials" in pattern and TOKEN not in pattern

    def test_a_passed_variables_value_in_stderr_is_redacted_though_it_has_no_secret_shape(
        self,
        capsys: pytest.CaptureFixture[str],
        tmp_path: Path,
        home: Path,
        work: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        steps = tmp_path / "steps.yaml"
        steps.write_text(
            "description: Log in\nsteps:\n"
            "  - {command: 'echo \"login refused for $APP_KEYPHRASE\" >&2; exit 4', env_vars: [APP_KEYPHRASE]}\n"
        )
        pid = cli(capsys, home, "learn", "capture-success", "login", "--steps-file", str(steps))[1]["id"]
        monkeypatch.setenv("APP_KEYPHRASE", "plainvalue-horse")
        _, text = replay(capsys, home, pid, json_out=False)
        _, out = replay(capsys, home, pid)
        assert (
            "login refused for [REDACTED]" in text
            and out["divergence"]["stderr_tail"] == "login refused for [REDACTED]"
        )
        shown = [cli(capsys, home, *a, json_out=False)[1] for a in (("learn", "show", pid), ("learn", "failures"))]
        assert "plainvalue-horse" not in text + json.dumps(out) + "".join(shown)

    def test_stderr_cannot_restyle_or_drive_the_terminal(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path
    ) -> None:
        """Rich markup in stderr is text, not style (an unmatched `[/]` would crash the printing); escape sequences
        (a screen clear, a title change) never reach the terminal."""
        step = script(
            work, "printf '[/] [bold red]boom[/bold red]\\n\\033[2J\\033]0;owned\\007cleared\\n' >&2\nexit 1\n"
        )
        pid = captured(capsys, tmp_path, home, step)
        code, text = replay(capsys, home, pid, json_out=False)
        assert code == 1 and "[/] [bold red]boom[/bold red]" in text and "cleared" in text
        assert "\x1b" not in text and "\x07" not in text and "owned" not in text
        # The reason quotes it too, and `learn show`, `learn health` and `learn failures` print reasons.
        for args in (("learn", "show", pid), ("learn", "health"), ("learn", "failures")):
            code, shown = cli(capsys, home, *args, json_out=False)
            assert code == 0 and "cleared" in shown and "\x1b" not in shown, (args, shown)
        assert "[/] [bold red]boom[/bold red]" in cli(capsys, home, "learn", "failures", json_out=False)[1]


class TestTheTail:
    def test_only_the_last_lines_and_characters(self) -> None:
        text = "".join(f"line {i}\n" for i in range(50)) + "\n\n"
        assert output_tail(text) == "\n".join(f"line {i}" for i in range(50 - TAIL_LINES, 50))
        long = output_tail("x" * 5000 + "END")
        assert long is not None and len(long) <= TAIL_CHARS and long.startswith("…") and long.endswith("END")

    def test_a_secret_cut_by_the_limit_is_still_redacted(self) -> None:
        """Redacted before it is cut: a token cut in half no longer has the shape redaction knows."""
        text = f"token {TOKEN}" + "\n" + "y" * (TAIL_CHARS - 20)
        tail = output_tail(text, lines=2)
        assert tail is not None and TOKEN[-12:] not in tail

    def test_nothing_printed_is_no_tail(self) -> None:
        assert output_tail("") is None and output_tail(" \n\n") is None

    def test_a_progress_line_keeps_what_it_ended_showing(self) -> None:
        assert output_tail("10%\r50%\r100% failed\r\n") == "100% failed"


def test_the_browser_view_shows_why(capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, work: Path) -> None:
    """The run page says where and why it diverged in one line of its own; the procedure page's executions say why."""
    pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
    pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from sherpa_skills.ui import create_app

    step = script(work, f"echo '{MISSING}' >&2\necho 'auth token {TOKEN}' >&2\nexit 2\n")
    pid = captured(capsys, tmp_path, home, step)
    out = replay(capsys, home, pid)[1]
    with TestClient(create_app(home), base_url="http://127.0.0.1") as client:
        run = client.get(f"/runs/{out['run_id']}")
        proc = client.get(f"/procedures/{pid}")
    assert run.status_code == 200 and proc.status_code == 200
    diverged = re.search(r'<div class="diverged">(.*?)</div>', run.text, re.DOTALL)
    assert diverged, run.text
    said = diverged.group(1)
    assert "step 1" in said and "exit code 2, expected 0" in said
    assert "No such file or directory" in said and said.count("auth token [REDACTED]") == 1
    row = re.search(r'<tr class="o-diverged">(.*?)</tr>', proc.text, re.DOTALL)
    assert row and "auth token [REDACTED]" in row.group(1), proc.text
    assert TOKEN not in run.text and TOKEN not in proc.text
