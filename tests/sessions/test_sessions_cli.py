"""`sherpa-skills sessions import|list`: the JSON interface scripts rely on, the human summary, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main

KEYS = {
    "files",
    "sessions",
    "commands",
    "succeeded",
    "failed",
    "rejected",
    "unknown",
    "skipped_lines",
    "new_procedures",
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    out = captured.out
    return code, (json.loads(out) if "--json" in args else out), captured.err


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / ".zsh_history").write_bytes(b": 1700000000:0;make\n: 1700000001:0;make test\nnot a header\n")
    session = "12345678-1234-4123-8123-123456789abc"
    lines = [
        {
            "type": "assistant",
            "sessionId": session,
            "uuid": "a",
            "cwd": "/w",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "rm -rf /"}},
                ],
            },
        },
        {
            "type": "user",
            "sessionId": session,
            "uuid": "b",
            "cwd": "/w",
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "Exit code 2\nls: x: No such file",
                        "is_error": True,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "[Request interrupted by user for tool use]",
                        "is_error": True,
                    },
                ],
            },
        },
    ]
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines) + "{broken\n")
    return folder


class TestImport:
    def test_json_object_has_the_documented_keys(
        self, capsys: pytest.CaptureFixture[str], home: Path, logs: Path
    ) -> None:
        code, data, _ = run(capsys, "sessions", "import", str(logs), "--json", "--home", str(home))
        assert code == 0 and KEYS <= set(data)
        assert {k: data[k] for k in KEYS} == {
            "files": 2,
            "sessions": 2,
            "commands": 5,
            "succeeded": 0,
            "failed": 1,
            "rejected": 1,
            "unknown": 3,
            "skipped_lines": 1,
            "new_procedures": 0,
        }  # nothing recurs yet
        code, data, _ = run(capsys, "sessions", "import", str(logs), "--json", "--home", str(home))
        assert (code, data["commands"], data["files"], data["unchanged_files"]) == (0, 0, 2, 2)

    def test_format_option(self, capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path) -> None:
        plain = tmp_path / "cmds.txt"
        plain.write_text("ls\npwd\n")
        code, data, _ = run(
            capsys, "sessions", "import", str(plain), "--format", "zsh-history", "--json", "--home", str(home)
        )
        assert (code, data["commands"], data["unknown"]) == (0, 2, 2)

    def test_human_summary(self, capsys: pytest.CaptureFixture[str], home: Path, logs: Path) -> None:
        code, out, _ = run(capsys, "sessions", "import", str(logs), "--home", str(home))
        assert code == 0
        assert (
            "5 new commands from 2 files" in out
            and "1 failed" in out
            and "1 rejected" in out
            and "1 malformed lines skipped" in out
        )

    def test_nothing_readable_exits_1(self, capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path) -> None:
        code, data, _ = run(capsys, "sessions", "import", str(tmp_path / "missing"), "--json", "--home", str(home))
        assert code == 1 and data["files"] == 0 and "no such file" in data["errors"][0]
        code, _, err = run(capsys, "sessions", "import", str(tmp_path / "missing"), "--home", str(home))
        assert code == 1 and "nothing could be read" in err and "Traceback" not in err

    def test_some_readable_exits_0(
        self, capsys: pytest.CaptureFixture[str], home: Path, logs: Path, tmp_path: Path
    ) -> None:
        code, data, _ = run(
            capsys, "sessions", "import", str(logs), str(tmp_path / "missing"), "--json", "--home", str(home)
        )
        assert code == 0 and data["files"] == 2 and len(data["errors"]) == 1

    def test_unknown_format_is_refused_by_the_parser(
        self, capsys: pytest.CaptureFixture[str], home: Path, logs: Path
    ) -> None:
        with pytest.raises(SystemExit) as exc:
            main(["sessions", "import", str(logs), "--format", "fish", "--home", str(home)])
        assert exc.value.code == 2


class TestList:
    def test_lists_imported_files_with_counts(self, capsys: pytest.CaptureFixture[str], home: Path, logs: Path) -> None:
        run(capsys, "sessions", "import", str(logs), "--json", "--home", str(home))
        code, data, _ = run(capsys, "sessions", "list", "--json", "--home", str(home))
        assert code == 0 and (data["files"], data["sessions"], data["commands"], data["max_command_id"]) == (2, 2, 5, 5)
        by_format = {f["format"]: f for f in data["imported_files"]}
        assert (
            by_format["claude-code"]["failed"],
            by_format["claude-code"]["rejected"],
            by_format["claude-code"]["lines_skipped"],
        ) == (1, 1, 1)
        assert (
            by_format["zsh-history"]["unknown"] == 3
            and by_format["zsh-history"]["offset"] == by_format["zsh-history"]["size"]
        )
        code, out, _ = run(capsys, "sessions", "list", "--home", str(home))
        assert code == 0 and "2 sessions, 5 commands" in out

    def test_empty_store(self, capsys: pytest.CaptureFixture[str], home: Path) -> None:
        code, data, _ = run(capsys, "sessions", "list", "--json", "--home", str(home))
        assert code == 0 and data["imported_files"] == [] and data["commands"] == 0
