"""Claude Code transcripts: Bash tool_use paired with tool_result, outcomes, sidechains,
sub-agent files, persisted output."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.sessions import SessionStore, import_paths

SESSION = "11111111-2222-4333-8444-555555555555"


def line(
    kind: str,
    content: Any,
    *,
    uuid: str,
    parent: str | None = None,
    ts: str = "2026-01-05T10:00:00.000Z",
    cwd: str = "/work/app",
    sidechain: bool = False,
    session: str = SESSION,
    **extra: Any,
) -> str:
    entry = {
        "parentUuid": parent,
        "isSidechain": sidechain,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.1.38",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": ts,
        "message": {"role": kind, "content": content},
        **extra,
    }
    return json.dumps(entry)


def bash(call_id: str, command: str, *, uuid: str, description: str | None = None, **kw: Any) -> str:
    tool_input: dict[str, Any] = {"command": command}
    if description:
        tool_input["description"] = description
    return line(
        "assistant", [{"type": "tool_use", "id": call_id, "name": "Bash", "input": tool_input}], uuid=uuid, **kw
    )


def result(
    call_id: str, content: Any, *, uuid: str, is_error: bool = False, tool_use_result: Any = None, **kw: Any
) -> str:
    extra = {"toolUseResult": tool_use_result} if tool_use_result is not None else {}
    return line(
        "user",
        [{"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}],
        uuid=uuid,
        **kw,
        **extra,
    )


def write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def commands(home: Path) -> list[Any]:
    with SessionStore(home=home) as store:
        return store.commands_since(0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path / "claude" / "projects" / "-work-app"


class TestPairing:
    def test_tool_use_is_paired_with_its_result_by_id(self, home: Path, project: Path) -> None:
        """Two interleaved calls get their own results, whatever order the results come in."""
        log = write(
            project / f"{SESSION}.jsonl",
            line("user", "list files then show status", uuid="u0"),
            bash("toolu_1", "ls -la", uuid="u1", parent="u0", ts="2026-01-05T10:00:01.000Z", description="List files"),
            bash("toolu_2", "git status", uuid="u2", parent="u1", ts="2026-01-05T10:00:01.500Z"),
            result("toolu_2", "On branch main", uuid="u3", parent="u2", ts="2026-01-05T10:00:03.000Z"),
            result(
                "toolu_1",
                [{"type": "text", "text": "total 0\nREADME.md"}],
                uuid="u4",
                parent="u3",
                ts="2026-01-05T10:00:04.000Z",
            ),
            line(
                "assistant",
                [{"type": "tool_use", "id": "toolu_3", "name": "Read", "input": {"file_path": "/x"}}],
                uuid="u5",
            ),
            result("toolu_3", "file text", uuid="u6"),
        )
        summary = import_paths([log], home=home)
        assert (summary.files, summary.sessions, summary.commands, summary.succeeded) == (1, 1, 2, 2)
        first, second = commands(home)
        assert (first.command, first.output, first.seq, first.line) == ("ls -la", "total 0\nREADME.md", 1, 2)
        assert (second.command, second.output, second.seq) == ("git status", "On branch main", 2)
        assert first.session_id == SESSION and first.source == "claude-code" and first.tool == "Bash"
        assert first.cwd == "/work/app" and first.description == "List files"
        assert first.timestamp == pytest.approx(1767607201.0) and first.duration == pytest.approx(3.0)
        assert first.outcome == "success" and first.exit_code is None

    def test_is_error_is_a_failure(self, home: Path, project: Path) -> None:
        log = write(
            project / f"{SESSION}.jsonl",
            bash("toolu_1", "ls missing/", uuid="u1"),
            result("toolu_1", "ls: cannot access 'missing/': No such file or directory", uuid="u2", is_error=True),
        )
        summary = import_paths([log], home=home)
        assert (summary.failed, summary.succeeded) == (1, 0)
        assert commands(home)[0].outcome == "failure"

    def test_exit_code_prefix_gives_the_code(self, home: Path, project: Path) -> None:
        """Newer versions start a failed result with `Exit code N`; it becomes the exit code and leaves the output."""
        log = write(
            project / f"{SESSION}.jsonl",
            bash("toolu_1", "tree src", uuid="u1"),
            result(
                "toolu_1",
                "Exit code 127\n(eval):1: command not found: tree",
                uuid="u2",
                is_error=True,
                tool_use_result="Error: Exit code 127\n(eval):1: command not found: tree",
            ),
        )
        import_paths([log], home=home)
        (cmd,) = commands(home)
        assert (cmd.outcome, cmd.exit_code, cmd.output) == ("failure", 127, "(eval):1: command not found: tree")

    @pytest.mark.parametrize(
        "content, tool_use_result",
        [
            (
                "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
                "if it was a file edit, the "
                "new_string was NOT written to the file). STOP what you are doing and wait for the user to "
                "tell you how to proceed.",
                "User rejected tool use",
            ),
            ("[Request interrupted by user for tool use]", None),
            ("Claude requested permissions to use Bash, but you haven't granted it yet.", None),
            ("partial output before Esc", {"stdout": "partial output before Esc", "stderr": "", "interrupted": True}),
        ],
        ids=["rejected", "interrupted", "permission-refused", "interrupted-flag"],
    )
    def test_rejected_or_interrupted_is_not_a_failure(
        self, home: Path, project: Path, content: str, tool_use_result: Any
    ) -> None:
        log = write(
            project / f"{SESSION}.jsonl",
            bash("toolu_1", "mix phx.server", uuid="u1"),
            result("toolu_1", content, uuid="u2", is_error=True, tool_use_result=tool_use_result),
        )
        summary = import_paths([log], home=home)
        assert (summary.rejected, summary.failed, summary.succeeded) == (1, 0, 0)
        assert commands(home)[0].outcome == "rejected"

    def test_background_command_has_no_known_outcome(self, home: Path, project: Path) -> None:
        log = write(
            project / f"{SESSION}.jsonl",
            bash("toolu_1", "npm run dev", uuid="u1"),
            result(
                "toolu_1",
                "Command running in background with ID: bash_1",
                uuid="u2",
                tool_use_result={"stdout": "", "stderr": "", "interrupted": False, "backgroundTaskId": "bash_1"},
            ),
        )
        summary = import_paths([log], home=home)
        assert summary.unknown == 1
        (cmd,) = commands(home)
        assert cmd.outcome == "unknown" and cmd.info["background_id"] == "bash_1"

    def test_malformed_lines_are_skipped_and_counted(self, home: Path, project: Path) -> None:
        log = project / f"{SESSION}.jsonl"
        write(log, bash("toolu_1", "make", uuid="u1"), "{not json", "[1, 2]", result("toolu_1", "ok", uuid="u2"))
        with log.open("ab") as handle:
            handle.write(b'{"type": "user", "bad": "\xff\xfe"}\n' + b"\x00\x01garbage\n")
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.succeeded, summary.skipped_lines) == (1, 1, 3)
        with SessionStore(home=home) as store:
            assert store.files()[0].lines_skipped == 3


class TestSubAgents:
    def test_inline_sidechain_threads_are_told_apart(self, home: Path, project: Path) -> None:
        """Older versions write each sub-agent's turns inline (isSidechain), one parentUuid chain per sub-agent."""
        log = write(
            project / f"{SESSION}.jsonl",
            bash("toolu_main", "git log -1", uuid="m1"),
            result("toolu_main", "abc123 fix", uuid="m2", parent="m1"),
            line("user", "Set up the project", uuid="a0", sidechain=True),
            line("user", "Write the types", uuid="b0", sidechain=True),
            bash("toolu_a", "mkdir -p src", uuid="a1", parent="a0", sidechain=True),
            bash("toolu_b", "mkdir -p types", uuid="b1", parent="b0", sidechain=True),
            result("toolu_b", "", uuid="b2", parent="b1", sidechain=True),
            result("toolu_a", "", uuid="a2", parent="a1", sidechain=True),
            bash("toolu_a2", "ls src", uuid="a3", parent="a2", sidechain=True),
            result("toolu_a2", "", uuid="a4", parent="a3", sidechain=True),
        )
        import_paths([log], home=home)
        by_command = {c.command: c for c in commands(home)}
        assert by_command["git log -1"].agent is None and not by_command["git log -1"].sidechain
        agent_a = by_command["mkdir -p src"].agent
        assert by_command["mkdir -p src"].sidechain and agent_a and agent_a.startswith("sidechain:")
        assert by_command["ls src"].agent == agent_a
        assert by_command["mkdir -p types"].agent not in (None, agent_a)
        assert {c.session_id for c in by_command.values()} == {SESSION}

    def test_subagent_file_belongs_to_its_session(self, home: Path, project: Path) -> None:
        """`<session>/subagents/agent-*.jsonl` is found by the folder walk and numbered in the same session."""
        write(
            project / f"{SESSION}.jsonl",
            bash("toolu_1", "git status", uuid="m1"),
            result("toolu_1", "clean", uuid="m2"),
        )
        write(
            project / SESSION / "subagents" / "agent-afc096d.jsonl",
            bash("toolu_s1", "find lib -name '*.ex'", uuid="s1", sidechain=True, agentId="afc096d"),
            result("toolu_s1", "lib/app.ex", uuid="s2", parent="s1", sidechain=True, agentId="afc096d"),
        )
        summary = import_paths([project.parent], home=home)
        assert (summary.files, summary.sessions, summary.commands) == (2, 1, 2)
        main, sub = commands(home)
        assert (main.seq, main.agent) == (1, None)
        assert (sub.seq, sub.agent, sub.sidechain, sub.session_id) == (2, "afc096d", True, SESSION)
        with SessionStore(home=home) as store:
            assert store.count_sessions() == 1


class TestPersistedOutput:
    def persisted(self, project: Path, path: str, *, stdout: str | None = "full stdout from the log line") -> Path:
        text = (
            f"<persisted-output>\nOutput too large (148.2KB). Full output saved to: {path}\n\n"
            "Preview (first 2KB):\ndiff --git a/x b/x\n"
        )
        tool_use_result: dict[str, Any] = {"stderr": "", "interrupted": False, "persistedOutputPath": path}
        if stdout is not None:
            tool_use_result["stdout"] = stdout
        return write(
            project / f"{SESSION}.jsonl",
            bash("toolu_1", "git diff HEAD", uuid="u1"),
            result("toolu_1", text, uuid="u2", tool_use_result=tool_use_result),
        )

    def test_output_is_read_from_the_persisted_file_when_it_exists(self, home: Path, project: Path) -> None:
        """The path names the machine it was written on; the file is also looked for beside the transcript."""
        saved = project / SESSION / "tool-results" / "bx04dz8mt.txt"
        saved.parent.mkdir(parents=True)
        saved.write_text("diff --git a/AGENTS.md b/AGENTS.md\n+the real output\n")
        log = self.persisted(project, f"/Users/someone/.claude/projects/-work-app/{SESSION}/tool-results/bx04dz8mt.txt")
        summary = import_paths([project.parent], home=home)
        assert summary.files == 1  # the tool-results folder holds outputs, not sessions
        (cmd,) = commands(home)
        assert cmd.output == "diff --git a/AGENTS.md b/AGENTS.md\n+the real output\n"
        assert cmd.info["persisted_output_found"] is True and cmd.outcome == "success"
        assert log.exists()

    def test_missing_persisted_file_keeps_what_the_line_says(self, home: Path, project: Path) -> None:
        log = self.persisted(project, "/nowhere/tool-results/gone.txt")
        import_paths([log], home=home)
        (cmd,) = commands(home)
        assert cmd.output == "full stdout from the log line"
        assert cmd.info == {
            **cmd.info,
            "persisted_output": "/nowhere/tool-results/gone.txt",
            "persisted_output_found": False,
        }

    def test_without_stdout_the_preview_is_kept(self, home: Path, project: Path) -> None:
        log = self.persisted(project, "/nowhere/gone.txt", stdout=None)
        import_paths([log], home=home)
        assert commands(home)[0].output == "diff --git a/x b/x\n"


class TestResumedSessions:
    def test_calls_copied_into_a_resumed_session_are_not_stored_twice(self, home: Path, project: Path) -> None:
        """Resuming copies the earlier conversation into the new session's file; each call ran once."""
        write(project / f"{SESSION}.jsonl", bash("toolu_1", "make", uuid="u1"), result("toolu_1", "ok", uuid="u2"))
        resumed = "99999999-2222-4333-8444-555555555555"
        write(
            project / f"{resumed}.jsonl",
            bash("toolu_1", "make", uuid="u1", session=resumed),
            result("toolu_1", "ok", uuid="u2", session=resumed),
            bash("toolu_2", "make test", uuid="u3", session=resumed),
            result("toolu_2", "ok", uuid="u4", session=resumed),
        )
        summary = import_paths([project], home=home)
        assert (summary.commands, summary.sessions) == (2, 2)
        assert [(c.command, c.session_id) for c in commands(home)] == [("make", SESSION), ("make test", resumed)]


class TestGrowingTranscript:
    def test_result_written_after_the_first_import_is_paired(self, home: Path, project: Path) -> None:
        """A live session: the tool_use is read now, its result lands in the next import;
        nothing is stored half-done."""
        log = write(project / f"{SESSION}.jsonl", bash("toolu_1", "pytest -q", uuid="u1"))
        first = import_paths([log], home=home)
        assert first.commands == 0
        with SessionStore(home=home) as store:
            assert store.files()[0].pending_calls == 1
        with log.open("a") as handle:
            handle.write(result("toolu_1", "Exit code 1\n1 failed", uuid="u2", is_error=True) + "\n")
        second = import_paths([log], home=home)
        assert (second.commands, second.failed) == (1, 1)
        assert commands(home)[0].exit_code == 1

    def test_a_call_whose_result_never_came_is_stored_once_the_file_settles(self, home: Path, project: Path) -> None:
        log = write(project / f"{SESSION}.jsonl", bash("toolu_1", "sleep 1000", uuid="u1"))
        assert import_paths([log], home=home).commands == 0
        old = time.time() - 7200
        os.utime(log, (old, old))
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.unknown) == (1, 1)
        assert commands(home)[0].info["no_result"] is True
        assert import_paths([log], home=home).commands == 0

    def test_half_written_last_line_waits_for_the_next_import(self, home: Path, project: Path) -> None:
        log = write(project / f"{SESSION}.jsonl", bash("toolu_1", "make", uuid="u1"))
        whole = result("toolu_1", "built", uuid="u2")
        with log.open("a") as handle:
            handle.write(whole[:40])
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.skipped_lines) == (0, 0)
        with log.open("a") as handle:
            handle.write(whole[40:] + "\n")
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.succeeded, summary.skipped_lines) == (1, 1, 0)
