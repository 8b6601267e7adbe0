"""asciinema recordings: typed command lines rebuilt from input events,
and what cannot be known is dropped and counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.sessions import SessionStore, import_paths, sniff

HEADER_V2 = {"version": 2, "width": 80, "height": 24, "timestamp": 1700000000, "env": {"SHELL": "/bin/bash"}}
PROMPT = "\x1b]0;user@host: ~/project\x07$ "


def cast(path: Path, events: list[list[Any]], header: dict[str, Any] | None = None) -> Path:
    lines = [json.dumps(header or HEADER_V2)] + [json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n")
    return path


def typed(start: float, text: str, *, echo: bool = True) -> list[list[Any]]:
    """Keystrokes one by one, each echoed by the terminal unless `echo` is off (a password prompt)."""
    events: list[list[Any]] = []
    t = start
    for char in text:
        events.append([t, "i", char])
        if echo and char not in "\r\x7f":
            events.append([t + 0.001, "o", char])
        t += 0.05
    return events


def stored(home: Path) -> list[Any]:
    with SessionStore(home=home) as store:
        return store.commands_since(0)


class TestCommands:
    def test_typed_lines_become_commands_with_time_and_cwd(self, home: Path, tmp_path: Path) -> None:
        """Each Enter ends a command; the title's path is its cwd;
        the header's timestamp plus the event time is when."""
        events = [
            [0.1, "o", PROMPT],
            *typed(1.0, "make test\r"),
            [2.0, "o", "ok\r\n" + PROMPT],
            *typed(3.0, "git push\r"),
        ]
        summary = import_paths([cast(tmp_path / "demo.cast", events)], home=home)
        assert (summary.commands, summary.unknown) == (2, 2)
        first, second = stored(home)
        assert (first.command, first.cwd, first.timestamp, first.source) == (
            "make test",
            "~/project",
            1700000001.0,
            "asciinema",
        )
        assert second.command == "git push" and first.session_id == second.session_id

    def test_backspace_ctrl_u_and_ctrl_w_edit_the_line(self, home: Path, tmp_path: Path) -> None:
        events = [
            *typed(1.0, "lss\x7f -la\r"),
            *typed(2.0, "rm -rf /\x15echo safe\r"),
            *typed(3.0, "git commit --amend\x17-m x\r"),
        ]
        import_paths([cast(tmp_path / "edit.cast", events)], home=home)
        assert [c.command for c in stored(home)] == ["ls -la", "echo safe", "git commit -m x"]

    def test_osc7_reports_the_working_directory(self, home: Path, tmp_path: Path) -> None:
        events = [[0.1, "o", "\x1b]7;file://host/srv/app\x07$ "], *typed(1.0, "npm run build\r")]
        import_paths([cast(tmp_path / "osc7.cast", events)], home=home)
        assert stored(home)[0].cwd == "/srv/app"

    def test_version_3_event_times_are_intervals(self, home: Path, tmp_path: Path) -> None:
        header = {"version": 3, "term": {"cols": 80, "rows": 24}, "timestamp": 1700000000}
        events = [
            [0.5, "o", "$ "],
            [0.5, "i", "l"],
            [0.0, "o", "l"],
            [0.1, "i", "s"],
            [0.0, "o", "s"],
            [0.1, "i", "\r"],
        ]
        import_paths([cast(tmp_path / "v3.cast", events, header)], home=home)
        (ls,) = stored(home)
        assert ls.command == "ls" and ls.timestamp == pytest.approx(1700000001.0)

    def test_secrets_typed_in_a_command_are_redacted(self, home: Path, tmp_path: Path) -> None:
        events = typed(1.0, "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\r")
        import_paths([cast(tmp_path / "secret.cast", events)], home=home)
        (command,) = stored(home)
        assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in command.command


class TestRefusals:
    def test_keys_inside_a_full_screen_program_are_not_commands(self, home: Path, tmp_path: Path) -> None:
        """vim's `:wq` is typed on the alternate screen: not a shell command."""
        events = [
            *typed(1.0, "vim notes.txt\r"),
            [1.5, "o", "\x1b[?1049h~\r\n~"],
            *typed(2.0, ":wq\r"),
            [3.0, "o", "\x1b[?1049l$ "],
            *typed(4.0, "ls\r"),
        ]
        summary = import_paths([cast(tmp_path / "vim.cast", events)], home=home)
        assert [c.command for c in stored(home)] == ["vim notes.txt", "ls"]
        assert summary.file_results[0].dropped == {"full_screen_keys": 4}

    def test_text_the_terminal_never_echoed_is_not_kept(self, home: Path, tmp_path: Path) -> None:
        """A password typed at a prompt is not echoed: it is dropped, never stored."""
        events = [
            *typed(1.0, "sudo apt update\r"),
            [1.5, "o", "[sudo] password for me: "],
            *typed(2.0, "CorrectHorse9\r", echo=False),
            [3.0, "o", "\r\nReading lists...\r\n$ "],
        ]
        summary = import_paths([cast(tmp_path / "sudo.cast", events)], home=home)
        assert [c.command for c in stored(home)] == ["sudo apt update"]
        assert summary.file_results[0].dropped == {"not_echoed": 1}
        assert b"CorrectHorse9" not in (home / "store.db").read_bytes()

    def test_lines_edited_with_arrows_or_tab_are_dropped_not_guessed(self, home: Path, tmp_path: Path) -> None:
        events = [
            *typed(1.0, "git che"),
            [1.4, "i", "\t"],
            [1.41, "o", "ckout "],
            *typed(1.5, "main\r"),
            [2.0, "i", "\x1b[A"],
            [2.01, "o", "git checkout main"],
            [2.1, "i", "\r"],
            *typed(3.0, "pwd\r"),
        ]
        summary = import_paths([cast(tmp_path / "arrows.cast", events)], home=home)
        assert [c.command for c in stored(home)] == ["pwd"]
        assert summary.file_results[0].dropped == {"edited": 2}  # the tab-completed line and the recalled one

    def test_ctrl_c_abandons_the_line(self, home: Path, tmp_path: Path) -> None:
        summary = import_paths(
            [cast(tmp_path / "ctrlc.cast", [*typed(1.0, "rm -rf build"), [2.0, "i", "\x03"], *typed(3.0, "ls\r")])],
            home=home,
        )
        assert [c.command for c in stored(home)] == ["ls"] and summary.file_results[0].dropped == {"interrupted": 1}

    def test_a_recording_without_input_events_imports_nothing(self, home: Path, tmp_path: Path) -> None:
        summary = import_paths([cast(tmp_path / "out.cast", [[0.1, "o", "$ ls\r\nREADME\r\n"]])], home=home)
        assert (summary.commands, summary.files, summary.errors) == (0, 1, [])

    def test_malformed_event_lines_are_skipped_and_counted(self, home: Path, tmp_path: Path) -> None:
        path = cast(tmp_path / "bad.cast", typed(1.0, "ls\r"))
        path.write_text(
            path.read_text() + 'not json\n[1, 2]\n["x", "i", "y"]\n' + json.dumps([5.0, "i", "pwd\r"]) + "\n"
        )
        summary = import_paths([path], home=home)
        assert summary.skipped_lines == 3 and [c.command for c in stored(home)] == ["ls"]  # `pwd` was never echoed

    def test_version_1_casts_are_named_not_skipped_silently(
        self, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        old = tmp_path / "old.cast"
        old.write_text(json.dumps({"version": 1, "width": 80, "height": 24, "stdout": [[0.1, "$ ls\r\n"]]}, indent=2))
        code = main(["sessions", "import", str(tmp_path), "--home", str(home), "--json"])
        result = json.loads(capsys.readouterr().out)
        assert code in (0, 1) and any("old.cast" in e and "asciinema convert" in e for e in result["errors"])


class TestIncremental:
    def test_a_growing_recording_imports_only_what_was_added(self, home: Path, tmp_path: Path) -> None:
        path = cast(tmp_path / "live.cast", typed(1.0, "make\r"))
        assert import_paths([path], home=home, settle_seconds=float("inf")).commands == 1
        with path.open("a") as handle:
            handle.write("\n".join(json.dumps(e) for e in typed(5.0, "make install\r")) + "\n")
        assert import_paths([path], home=home, settle_seconds=float("inf")).commands == 1
        assert [c.command for c in stored(home)] == ["make", "make install"]

    def test_a_line_typed_across_two_imports_is_one_command(self, home: Path, tmp_path: Path) -> None:
        path = cast(tmp_path / "half.cast", typed(1.0, "docker comp"))
        assert import_paths([path], home=home, settle_seconds=float("inf")).commands == 0
        with path.open("a") as handle:
            handle.write("\n".join(json.dumps(e) for e in typed(2.0, "ose up\r")) + "\n")
        import_paths([path], home=home, settle_seconds=float("inf"))
        assert [c.command for c in stored(home)] == ["docker compose up"]


def test_sniff_knows_a_cast_header() -> None:
    assert sniff(json.dumps(HEADER_V2).encode() + b'\n[0.1, "o", "$ "]\n', "x.cast") == "asciinema"
    assert sniff(b'{"version": 2}\n', "x.jsonl") is None  # no terminal size: not a recording
