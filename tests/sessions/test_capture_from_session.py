"""A person picks a session and its commands by number: `sessions list`, `sessions show`, and
`learn capture-success TASK --steps-from-session SESSION_ID --commands 3-7,9`, with every refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main

ENV = "SHERPA_SKILLS_ACCEPTANCE_SESSIONS"
# Real Claude Code session (codemie-ai/codemie-code): 39 commands, 14 and 15 failed with exit 1.
CLAUDE = "claude-code/codemie-ai__codemie-code/session-196820da.jsonl"
CLAUDE_ID = "196820da-1026-4b6f-a513-a6aae42da1a6"
# Real bash history (sanekits/localhist), HISTTIMEFORMAT stamps; no outcome recorded for any command.
BASH = "shell/sanekits__localhist/home1.bash_history"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


def text(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def real(home: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    value = os.environ.get(ENV)
    if not value:
        pytest.skip(f"{ENV} is not set: point it at ../shared/acceptance-sessions (the real session logs)")
    folder = Path(value)
    assert main(["sessions", "import", str(folder / CLAUDE), str(folder / BASH), "--no-mine", "--home", str(home)]) == 0
    capsys.readouterr()
    return folder


@pytest.fixture
def picked_logs(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A bash history where the same release routine ran on three days with other values, and a Claude Code session
    whose only two commands failed and were refused."""
    days = [(1700000000, "1.2.0", "fix-a"), (1700100000, "1.3.0", "fix-b"), (1700200000, "1.4.0", "fix-c")]
    lines = []
    for t, version, branch in days:
        for i, command in enumerate(
            [f"git checkout -b {branch}", f"make release {version}", f"git push -u origin {branch}", "ls"]
        ):
            lines += [f"#{t + i}", command]
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / ".bash_history").write_text("\n".join(lines) + "\n")
    session = "12345678-1234-4123-8123-123456789abc"
    calls = [
        ("t1", "ls nope", "Exit code 2\nls: nope: No such file"),
        ("t2", "rm -rf /", "[Request interrupted by user"),
    ]
    records = [
        {
            "type": "assistant",
            "sessionId": session,
            "uuid": "a",
            "cwd": "/w",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": key, "name": "Bash", "input": {"command": command}}
                    for key, command, _ in calls
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
                    {"type": "tool_result", "tool_use_id": key, "content": out, "is_error": True}
                    for key, _, out in calls
                ],
            },
        },
    ]
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["sessions", "import", str(folder), "--no-mine", "--home", str(home)]) == 0
    capsys.readouterr()
    return folder


def session_of(capsys: pytest.CaptureFixture[str], home: Path, agent: str) -> dict[str, Any]:
    code, listed, _ = cli(capsys, "sessions", "list", "--home", str(home))
    assert code == 0
    return next(s for s in listed["imported_sessions"] if s["agent"] == agent)


class TestSessionsListAndShow:
    def test_list_shows_sessions_beside_the_files(
        self, capsys: pytest.CaptureFixture[str], home: Path, real: Path
    ) -> None:
        """Each session: its id, agent, where it ran, start, commands and failures (the files are still listed)."""
        code, listed, _ = cli(capsys, "sessions", "list", "--home", str(home))
        assert code == 0 and listed["files"] == 2 and len(listed["imported_files"]) == 2
        claude = next(s for s in listed["imported_sessions"] if s["id"] == CLAUDE_ID)
        assert (claude["agent"], claude["cwd"], claude["commands"], claude["failed"]) == (
            "claude-code",
            "/Users/user/repo",
            39,
            2,
        )
        assert claude["started"] is not None
        code, out, _ = text(capsys, "sessions", "list", "--home", str(home))
        assert code == 0 and CLAUDE_ID in out and "bash-history:" in out and "claude-code" in out

    def test_at_80_columns_every_session_id_stays_whole(
        self, capsys: pytest.CaptureFixture[str], home: Path, real: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The id is what capture takes: never cut, whatever the terminal's width (the rest wraps or gives way)."""
        monkeypatch.setenv("COLUMNS", "80")
        code, out, _ = text(capsys, "sessions", "list", "--home", str(home))
        assert code == 0 and CLAUDE_ID in out.split() and "bash-history:" in out
        assert out.rstrip().endswith(f"`sherpa-skills sessions show {CLAUDE_ID}`")

    def test_show_numbers_the_commands_with_their_exit_codes(
        self, capsys: pytest.CaptureFixture[str], home: Path, real: Path
    ) -> None:
        code, shown, _ = cli(capsys, "sessions", "show", CLAUDE_ID[:8], "--home", str(home))
        assert code == 0 and shown["id"] == CLAUDE_ID
        numbers = [c["number"] for c in shown["command_list"]]
        assert numbers == list(range(1, 40))
        assert [c["number"] for c in shown["command_list"] if c["outcome"] == "failure"] == [14, 15]
        assert shown["command_list"][13]["exit_code"] == 1
        code, out, _ = text(capsys, "sessions", "show", CLAUDE_ID, "--home", str(home))
        assert code == 0
        assert "  14. exit 1" in out and "  39. ok        mkdir -p /Users/user/repo/specs" in out

    def test_an_unknown_session_id_is_refused_as_bad_usage(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path
    ) -> None:
        for ref in ("no-such-session", "zzz"):
            code, out, err = cli(capsys, "sessions", "show", ref, "--home", str(home))
            assert (code, out) == (2, None)
            assert f"no session '{ref}'" in err and "sessions list" in err

    def test_a_start_that_fits_several_sessions_names_them(
        self, capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
    ) -> None:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            (tmp_path / name / ".bash_history").write_text("make\n")
        assert main(["sessions", "import", str(tmp_path / "a"), str(tmp_path / "b"), "--home", str(home)]) == 0
        capsys.readouterr()
        code, _, err = cli(capsys, "sessions", "show", "bash-history", "--home", str(home))
        assert code == 2 and "fits several sessions" in err

    def test_the_hints_run_if_pasted(self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path) -> None:
        """`sessions list` hints at `sessions show ID`, which hints at a capture: each runs as printed."""
        import re
        import shlex

        _, listed, _ = text(capsys, "sessions", "list", "--home", str(home))
        shown_hint = re.findall(r"`(sherpa-skills sessions show [^`]+)`", listed)[-1]
        code, shown, _ = text(capsys, *shlex.split(shown_hint)[1:], "--home", str(home))
        assert code == 0 and "   1. no outcome git checkout -b fix-a" in shown
        capture_hint = re.findall(r"`(sherpa-skills learn capture-success [^`]+)`", shown)[-1]
        assert capture_hint.endswith("--commands 1-5")
        code, out, err = cli(capsys, *shlex.split(capture_hint)[1:], "--home", str(home))
        assert code == 0 and out["outcome"] == "captured", err


class TestCaptureFromAClaudeCodeSession:
    def test_chosen_commands_become_a_counted_capture(
        self, capsys: pytest.CaptureFixture[str], home: Path, real: Path
    ) -> None:
        """Commands 36-39 of the real session, chosen by id and numbers: the steps, in order, counted once."""
        code, out, err = cli(
            capsys,
            "learn",
            "capture-success",
            "make-specs-folder",
            "--steps-from-session",
            CLAUDE_ID,
            "--commands",
            "36-37,39",
            "--home",
            str(home),
        )
        assert code == 0, err
        assert out["outcome"] == "captured"
        assert [s["command"] for s in out["steps"]] == [
            'find /Users/user/repo -type d -name "spec*" 2>/dev/null | head -5',
            'ls -la /Users/user/repo/ | grep -E "docs|spec|design" | head -10',
            "mkdir -p /Users/user/repo/specs",
        ]
        # a person's capture from a session they picked: one counted success, not a claim
        assert (out["source"], out["success_count"], out["claimed_successes"], out["status"]) == (
            "session",
            1,
            0,
            "active",
        )
        assert out["context"]["captured_from_session"]["session"] == CLAUDE_ID
        assert out["context"]["captured_from_session"]["commands"] == [36, 37, 39]

    def test_failed_commands_chosen_are_refused_with_why(
        self, capsys: pytest.CaptureFixture[str], home: Path, real: Path
    ) -> None:
        code, out, err = cli(
            capsys,
            "learn",
            "capture-success",
            "t",
            "--steps-from-session",
            CLAUDE_ID,
            "--commands",
            "13-15",
            "--home",
            str(home),
        )
        assert (code, out) == (2, None)
        assert "command 14" in err and "command 15" in err and "failed (exit 1" in err and "no matches found" in err
        assert "command 13" not in err
        _, procedures, _ = cli(capsys, "learn", "procedures", "--all", "--home", str(home))
        assert procedures == []


class TestCaptureFromAShellHistory:
    def test_chosen_by_id_and_numbers_with_parameters_proposed(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path
    ) -> None:
        """The routine ran on three days with other values: what differs becomes a parameter, as mining proposes."""
        session = session_of(capsys, home, "bash-history")
        code, out, err = cli(
            capsys,
            "learn",
            "capture-success",
            "release-branch",
            "--steps-from-session",
            session["id"],
            "--commands",
            "5-7",
            "--home",
            str(home),
        )
        assert code == 0, err
        assert [s["command"] for s in out["steps"]] == [
            "git checkout -b {{ branch }}",
            "make release {{ version }}",
            "git push -u origin {{ branch }}",
        ]
        picked = out["session"]
        assert picked["parameters"] == {"branch": ["fix-b", "fix-a", "fix-c"], "version": ["1.3.0", "1.2.0", "1.4.0"]}
        assert picked["seen_elsewhere"] == 2
        assert picked["outcome_not_recorded"] == [5, 6, 7]  # a history records no outcome: the person's word
        assert out["success_count"] == 1
        # the parameters are the replay's: a dry run renders the values given
        code, replayed, _ = cli(
            capsys,
            "learn",
            "replay",
            "x",
            "--procedure",
            out["id"],
            "-p",
            "branch=fix-z",
            "-p",
            "version=2.0.0",
            "--min-confidence",
            "0",
            "--home",
            str(home),
        )
        assert [s["command"] for s in replayed["steps"]][1] == "make release 2.0.0"

    def test_real_history_by_id_and_numbers(self, capsys: pytest.CaptureFixture[str], home: Path, real: Path) -> None:
        """The real bash history: 27-28 (`gco -b next-rev`, `git push -u upstream next-rev`) ran again elsewhere in
        it with other values, so the branch and the remote become parameters."""
        session = session_of(capsys, home, "bash-history")
        code, out, err = cli(
            capsys,
            "learn",
            "capture-success",
            "new-branch",
            "--steps-from-session",
            session["id"],
            "--commands",
            "27-28",
            "--home",
            str(home),
        )
        assert code == 0, err
        assert [s["command"] for s in out["steps"]] == ["gco -b {{ branch }}", "git push -u {{ value }} {{ branch }}"]
        assert out["session"]["parameters"]["branch"][0] == "next-rev"

    def test_a_secret_redacted_in_the_log_becomes_an_environment_variable(
        self, capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
    ) -> None:
        token = "ghp_" + "a1" * 18
        (tmp_path / ".bash_history").write_text(
            f"export GITHUB_TOKEN={token}\ncurl -H 'Authorization: token {token}' https://api.github.com/user\n"
        )
        assert main(["sessions", "import", str(tmp_path / ".bash_history"), "--no-mine", "--home", str(home)]) == 0
        capsys.readouterr()
        code, out, err = cli(
            capsys, "learn", "capture-success", "gh", "--steps-from-session", "bash-history", "--home", str(home)
        )
        assert code == 0, err
        assert out["steps"][0]["command"] == "export GITHUB_TOKEN=${GITHUB_TOKEN}"
        assert out["secrets_to_env"] == ["GITHUB_TOKEN", "AUTHORIZATION"] and token not in json.dumps(out)

    def test_without_commands_every_command_that_worked_is_kept(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path
    ) -> None:
        session = session_of(capsys, home, "bash-history")
        code, out, err = cli(
            capsys, "learn", "capture-success", "all", "--steps-from-session", session["id"], "--home", str(home)
        )
        assert code == 0, err
        assert len(out["steps"]) == 12 and out["session"]["commands"] == list(range(1, 13))

    def test_the_human_output_says_what_was_kept_and_on_whose_word(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path
    ) -> None:
        session = session_of(capsys, home, "bash-history")
        code, out, _ = text(
            capsys,
            "learn",
            "capture-success",
            "release-branch",
            "--steps-from-session",
            session["id"],
            "--commands",
            "1-3",
            "--home",
            str(home),
        )
        assert code == 0
        assert f"from bash-history session {session['id']}: commands 1-3" in out
        assert "parameter branch: seen as fix-a, fix-b, fix-c" in out
        assert "no outcome recorded for command(s) 1-3" in out and "captured release-branch-" in out


class TestRefusals:
    @pytest.mark.parametrize(
        ("spec", "said"),
        [
            ("", "--commands is empty"),
            ("3-", "'3-' is not a number or a range"),
            ("a", "'a' is not a number or a range"),
            ("1,,2", "'' is not a number or a range"),
            ("7-5", "the range '7-5' runs backwards"),
            ("0", "there is no command 0"),
            ("2-13", "there is no command 13; the session's commands are numbered 1-12"),
            ("99", "there is no command 99"),
        ],
    )
    def test_malformed_or_out_of_range_commands(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path, spec: str, said: str
    ) -> None:
        session = session_of(capsys, home, "bash-history")
        code, out, err = cli(
            capsys,
            "learn",
            "capture-success",
            "t",
            "--steps-from-session",
            session["id"],
            "--commands",
            spec,
            "--home",
            str(home),
        )
        assert (code, out) == (2, None), err
        assert said in err and "Traceback" not in err

    def test_a_refused_call_is_refused_as_never_run(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path
    ) -> None:
        code, _, err = cli(
            capsys,
            "learn",
            "capture-success",
            "t",
            "--steps-from-session",
            "12345678-1234-4123-8123-123456789abc",
            "--commands",
            "2",
            "--home",
            str(home),
        )
        assert code == 2 and "command 2 (rm -rf /) refused by the user: it never ran" in err

    def test_a_session_with_no_command_that_worked(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path
    ) -> None:
        code, _, err = cli(
            capsys, "learn", "capture-success", "t", "--steps-from-session", "12345678", "--home", str(home)
        )
        assert code == 2
        assert "has no command that worked (1 failed, 1 refused): nothing to capture" in err

    def test_an_unknown_session(self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path) -> None:
        code, out, err = cli(
            capsys, "learn", "capture-success", "t", "--steps-from-session", "deadbeef", "--home", str(home)
        )
        assert (code, out) == (2, None) and "no session 'deadbeef'" in err

    @pytest.mark.parametrize(
        "other",
        [["--steps-file", "steps.yaml"], ["--from-run", "r1"]],
    )
    def test_one_source_of_steps_only(
        self, capsys: pytest.CaptureFixture[str], home: Path, picked_logs: Path, other: list[str]
    ) -> None:
        code, out, err = cli(
            capsys, "learn", "capture-success", "t", "--steps-from-session", "12345678", *other, "--home", str(home)
        )
        assert (code, out) == (2, None)
        assert "exactly one of --from-run RUN_ID, --steps-file FILE or --steps-from-session SESSION_ID" in err

    def test_commands_without_a_session(self, capsys: pytest.CaptureFixture[str], home: Path) -> None:
        code, _, err = cli(capsys, "learn", "capture-success", "t", "--steps-file", "x.yaml", "--commands", "1")
        assert code == 2 and "--commands picks commands of a session" in err

    def test_a_whole_long_session_needs_commands_chosen(
        self, capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
    ) -> None:
        (tmp_path / ".bash_history").write_text("".join(f"make target{i}\n" for i in range(40)))
        assert main(["sessions", "import", str(tmp_path / ".bash_history"), "--no-mine", "--home", str(home)]) == 0
        capsys.readouterr()
        session = session_of(capsys, home, "bash-history")
        code, _, err = cli(
            capsys, "learn", "capture-success", "t", "--steps-from-session", session["id"], "--home", str(home)
        )
        assert code == 2 and "choose the ones to keep with --commands" in err
