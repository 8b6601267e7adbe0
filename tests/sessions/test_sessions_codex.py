"""Codex CLI rollouts: calls paired by call_id, every exit-code source, rejections, both file layouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.sessions import SessionStore, import_paths

SESSION = "019e1625-789d-76c0-80ab-3724b5ddb799"
TS = "2026-05-11T08:27:00.000Z"


def item(kind: str, payload: dict[str, Any], ts: str = TS) -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def meta(cwd: str = "/repo") -> str:
    return item(
        "session_meta",
        {"id": SESSION, "timestamp": TS, "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.125.0"},
    )


def turn(cwd: str) -> str:
    return item("turn_context", {"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5"})


def call(call_id: str, name: str, arguments: dict[str, Any], ts: str = TS) -> str:
    return item(
        "response_item",
        {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id},
        ts,
    )


def output(call_id: str, text: Any) -> str:
    return item("response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


def end(
    call_id: str,
    command: list[str],
    exit_code: int,
    *,
    status: str = "completed",
    aggregated: str = "",
    source: str = "agent",
    cwd: str = "/repo",
) -> str:
    return item(
        "event_msg",
        {
            "type": "exec_command_end",
            "call_id": call_id,
            "command": command,
            "cwd": cwd,
            "source": source,
            "stdout": "",
            "stderr": "",
            "aggregated_output": aggregated,
            "exit_code": exit_code,
            "duration": {"secs": 2, "nanos": 500000000},
            "formatted_output": "",
            "status": status,
        },
    )


def rollout(tmp_path: Path, *lines: str, name: str = f"rollout-2026-05-11T11-26-55-{SESSION}.jsonl") -> Path:
    path = tmp_path / "sessions" / "2026" / "05" / "11" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def stored(home: Path) -> dict[str, Any]:
    with SessionStore(home=home) as store:
        return {c.call_id: c for c in store.commands_since(0)}


class TestExitCodes:
    def test_exec_end_event_gives_the_exit_code(self, home: Path, tmp_path: Path) -> None:
        """Unified exec: the call's own output says the process is still running; the end event settles it."""
        log = rollout(
            tmp_path,
            meta(),
            turn("/repo"),
            call("c1", "exec_command", {"cmd": "npm test", "workdir": "/repo"}),
            output(
                "c1",
                "Chunk ID: a1\nWall time: 1.0 seconds\nProcess running with session ID 4242\nOriginal "
                "token count: 0\nOutput:\n",
            ),
            end("c1", ["/bin/zsh", "-lc", "npm test"], 1, status="failed", aggregated="1 test failed"),
        )
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.failed) == (1, 1)
        cmd = stored(home)["c1"]
        assert (cmd.command, cmd.exit_code, cmd.output, cmd.cwd, cmd.duration) == (
            "npm test",
            1,
            "1 test failed",
            "/repo",
            2.5,
        )
        assert cmd.session_id == SESSION and cmd.tool == "exec_command" and cmd.info["exit_code_from"] == "end"

    def test_exit_code_from_output_text(self, home: Path, tmp_path: Path) -> None:
        """`shell_command` results start `Exit code: N`; the body after `Output:` is the excerpt."""
        log = rollout(
            tmp_path,
            meta(),
            call("c1", "shell_command", {"command": "ls", "workdir": "/repo"}),
            output("c1", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nAGENTS.md\nsrc\n"),
            call("c2", "shell_command", {"command": "cat nope"}),
            output("c2", "Exit code: 1\nWall time: 0.1 seconds\nOutput:\ncat: nope: No such file or directory\n"),
        )
        summary = import_paths([log], home=home)
        assert (summary.succeeded, summary.failed) == (1, 1)
        by_id = stored(home)
        assert (by_id["c1"].exit_code, by_id["c1"].output, by_id["c1"].duration) == (0, "AGENTS.md\nsrc\n", 0.1)
        assert (by_id["c2"].exit_code, by_id["c2"].outcome, by_id["c2"].cwd) == (1, "failure", "/repo")

    def test_exit_code_from_json_metadata_and_command_arrays_unwrapped(self, home: Path, tmp_path: Path) -> None:
        """The `shell` tool: argv arrays (`bash -lc CMD` unwrapped) and JSON output with metadata.exit_code."""
        log = rollout(
            tmp_path,
            meta(),
            call("c1", "shell", {"command": ["bash", "-lc", "pytest -q"], "workdir": "/repo"}),
            output("c1", json.dumps({"output": "3 passed", "metadata": {"exit_code": 0, "duration_seconds": 1.25}})),
            call("c2", "shell", {"command": ["git", "commit", "-m", "fix it"]}),
            output("c2", json.dumps({"output": "nothing to commit", "metadata": {"exit_code": 1}})),
        )
        import_paths([log], home=home)
        by_id = stored(home)
        assert (by_id["c1"].command, by_id["c1"].outcome, by_id["c1"].output, by_id["c1"].duration) == (
            "pytest -q",
            "success",
            "3 passed",
            1.25,
        )
        assert (by_id["c2"].command, by_id["c2"].exit_code) == ("git commit -m 'fix it'", 1)

    def test_exit_code_from_a_later_poll_of_the_same_process(self, home: Path, tmp_path: Path) -> None:
        log = rollout(
            tmp_path,
            meta(),
            call("c1", "exec_command", {"cmd": "cargo build"}),
            output(
                "c1",
                "Chunk ID: a\nWall time: 1.0 seconds\nProcess running with session ID 77\nOriginal token "
                "count: 0\nOutput:\nCompiling\n",
            ),
            call("p1", "write_stdin", {"session_id": 77, "chars": ""}),
            output(
                "p1",
                "Chunk ID: b\nWall time: 3.0 seconds\nProcess exited with code 101\nOriginal token count: "
                "9\nOutput:\nerror[E0425]\n",
            ),
        )
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.failed) == (1, 1)  # the poll is not a command of its own
        cmd = stored(home)["c1"]
        assert (cmd.exit_code, cmd.output, cmd.info["exit_code_from"]) == (101, "Compiling\nerror[E0425]\n", "poll")

    def test_end_event_before_the_output_and_user_shell_commands(self, home: Path, tmp_path: Path) -> None:
        """Older versions write the end event first; a command the user ran with `!` has only an end event."""
        log = rollout(
            tmp_path,
            meta(),
            call("c1", "shell", {"command": ["bash", "-lc", "make"]}),
            end("c1", ["bash", "-lc", "make"], 2, aggregated="make: *** No rule"),
            output("c1", json.dumps({"output": "make: *** No rule", "metadata": {"exit_code": 2}})),
            end("u1", ["bash", "-lc", "git pull"], 0, source="user_shell", aggregated="Already up to date."),
        )
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.failed, summary.succeeded) == (2, 1, 1)
        by_id = stored(home)
        assert by_id["c1"].exit_code == 2 and by_id["c1"].tool == "shell"
        assert (by_id["u1"].command, by_id["u1"].tool) == ("git pull", "exec:user_shell")

    def test_no_exit_code_anywhere_is_unknown(self, home: Path, tmp_path: Path) -> None:
        log = rollout(tmp_path, meta(), call("c1", "shell", {"command": ["ls"]}), output("c1", "README.md"))
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.unknown) == (1, 1)


class TestRejections:
    @pytest.mark.parametrize("text", ["exec command rejected by user", "aborted"])
    def test_rejected_or_aborted_is_not_a_failure(self, home: Path, tmp_path: Path, text: str) -> None:
        log = rollout(
            tmp_path, meta(), call("c1", "shell", {"command": ["bash", "-lc", "rm -rf build"]}), output("c1", text)
        )
        summary = import_paths([log], home=home)
        assert (summary.rejected, summary.failed) == (1, 0)

    def test_declined_end_event_is_a_rejection(self, home: Path, tmp_path: Path) -> None:
        log = rollout(
            tmp_path,
            meta(),
            call("c1", "exec_command", {"cmd": "rm -rf /tmp/x"}),
            end(
                "c1",
                ["bash", "-lc", "rm -rf /tmp/x"],
                -1,
                status="declined",
                aggregated="exec command rejected by user",
            ),
        )
        summary = import_paths([log], home=home)
        assert (summary.rejected, summary.failed) == (1, 0)
        assert stored(home)["c1"].exit_code is None


class TestLayouts:
    def test_cwd_from_workdir_then_turn_then_session(self, home: Path, tmp_path: Path) -> None:
        log = rollout(
            tmp_path,
            meta("/home/me/repo"),
            call("c1", "shell_command", {"command": "ls"}),
            output("c1", "Exit code: 0\nOutput:\n"),
            turn("/home/me/repo/web"),
            call("c2", "shell_command", {"command": "ls"}),
            output("c2", "Exit code: 0\nOutput:\n"),
            call("c3", "shell_command", {"command": "ls", "workdir": "src"}),
            output("c3", "Exit code: 0\nOutput:\n"),
        )
        import_paths([log], home=home)
        by_id = stored(home)
        assert [by_id[c].cwd for c in ("c1", "c2", "c3")] == [
            "/home/me/repo",
            "/home/me/repo/web",
            "/home/me/repo/web/src",
        ]

    def test_first_layout_without_payload_wrapper(self, home: Path, tmp_path: Path) -> None:
        """Early rollouts: a bare meta line, then response items as lines, local_shell_call included."""
        lines = [
            json.dumps({"id": SESSION, "timestamp": "2025-05-01T10:00:00Z", "instructions": None}),
            json.dumps({"record_type": "state"}),
            json.dumps(
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps({"command": ["bash", "-lc", "ls"]}),
                    "call_id": "c1",
                }
            ),
            json.dumps(
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": json.dumps({"output": "a\nb", "metadata": {"exit_code": 0}}),
                }
            ),
            json.dumps(
                {
                    "type": "local_shell_call",
                    "call_id": "c2",
                    "status": "completed",
                    "action": {"type": "exec", "command": ["bash", "-lc", "false"], "working_directory": "/srv"},
                }
            ),
            json.dumps(
                {
                    "type": "function_call_output",
                    "call_id": "c2",
                    "output": json.dumps({"output": "", "metadata": {"exit_code": 1}}),
                }
            ),
        ]
        log = rollout(tmp_path, *lines, name="rollout-2025-05-01-old.jsonl")
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.succeeded, summary.failed) == (2, 1, 1)
        by_id = stored(home)
        assert by_id["c2"].cwd == "/srv" and by_id["c2"].tool == "local_shell"
        assert {c.session_id for c in by_id.values()} == {SESSION}

    def test_malformed_lines_and_other_tools(self, home: Path, tmp_path: Path) -> None:
        log = rollout(
            tmp_path,
            meta(),
            "garbage{",
            call("p1", "apply_patch", {"input": "*** Begin Patch"}),
            output("p1", "Done"),
            call("c1", "shell_command", {"command": "ls"}),
            "",
            output("c1", "Exit code: 0\nOutput:\nx\n"),
        )
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.skipped_lines) == (1, 1)


class TestGrowingRollout:
    def test_a_running_process_is_settled_by_a_poll_in_the_next_import(self, home: Path, tmp_path: Path) -> None:
        log = rollout(
            tmp_path,
            meta(),
            call("c1", "exec_command", {"cmd": "npm ci"}),
            output(
                "c1",
                "Chunk ID: a\nWall time: 1.0 seconds\nProcess running with session ID 9\nOriginal "
                "token count: 0\nOutput:\n",
            ),
        )
        assert import_paths([log], home=home).commands == 0
        with log.open("a") as handle:
            handle.write(
                call("p1", "write_stdin", {"session_id": 9, "chars": ""})
                + "\n"
                + output(
                    "p1",
                    "Chunk ID: b\nWall time: 9.0 seconds\nProcess exited with code 0\nOriginal token count: "
                    "3\nOutput:\nadded 12 packages\n",
                )
                + "\n"
            )
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.succeeded) == (1, 1)
        assert stored(home)["c1"].output == "added 12 packages\n"
