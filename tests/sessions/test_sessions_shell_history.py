"""bash (`#epoch` stamps) and zsh (extended, multi-line, metafied or invalid UTF-8) histories:
outcome always unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.sessions import SessionStore, import_paths, sniff


def write_bytes(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def stored(home: Path) -> list:
    with SessionStore(home=home) as store:
        return store.commands_since(0)


class TestBash:
    def test_epoch_lines_stamp_the_next_command(self, home: Path, tmp_path: Path) -> None:
        log = write_bytes(
            tmp_path / ".bash_history",
            b"#1663406862\nbash -ls\n#1663431464\ngit clone gh:sanekits/shellkit\n"
            b"#1663431500\n# a comment typed at the prompt\n",
        )
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.unknown, summary.succeeded, summary.failed) == (3, 3, 0, 0)
        first, second, third = stored(home)
        assert (first.command, first.timestamp, first.line, first.outcome, first.exit_code) == (
            "bash -ls",
            1663406862.0,
            2,
            "unknown",
            None,
        )
        assert (second.command, second.timestamp, second.seq) == ("git clone gh:sanekits/shellkit", 1663431464.0, 2)
        assert third.command == "# a comment typed at the prompt"
        assert first.cwd is None and first.source == "bash-history" and first.session_id.startswith("bash-history:")

    def test_lines_before_the_first_stamp_are_commands_and_later_unstamped_lines_continue(
        self, home: Path, tmp_path: Path
    ) -> None:
        log = write_bytes(
            tmp_path / "history", b"ls\ncd /tmp\n#1700000000\nfor f in *; do\n  echo $f\ndone\n#1700000005\npwd\n"
        )
        import_paths([log], home=home, fmt="bash-history")
        assert [(c.command, c.timestamp) for c in stored(home)] == [
            ("ls", None),
            ("cd /tmp", None),
            ("for f in *; do\n  echo $f\ndone", 1700000000.0),
            ("pwd", 1700000005.0),
        ]

    def test_invalid_utf8_is_replaced_not_fatal(self, home: Path, tmp_path: Path) -> None:
        log = write_bytes(tmp_path / ".bash_history", b"#1700000000\necho caf\xe9\n#1700000001\necho ok\n")
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.skipped_lines) == (2, 0)
        first = stored(home)[0]
        assert first.command == "echo caf\ufffd" and first.info == {"invalid_utf8": True}


class TestZsh:
    def test_extended_history_with_durations(self, home: Path, tmp_path: Path) -> None:
        log = write_bytes(tmp_path / ".zsh_history", b": 1624011412:0;mkdir .bin\n: 1624011437:12;make -j4\n")
        import_paths([log], home=home)
        assert [(c.command, c.timestamp, c.duration, c.outcome) for c in stored(home)] == [
            ("mkdir .bin", 1624011412.0, 0.0, "unknown"),
            ("make -j4", 1624011437.0, 12.0, "unknown"),
        ]

    def test_multi_line_commands_continue_after_a_trailing_backslash(self, home: Path, tmp_path: Path) -> None:
        log = write_bytes(
            tmp_path / ".zsh_history",
            b": 1626986800:0;npm i\\\nnpm run build\\\nhttp-server test &\n"
            b": 1624011501:0;curl -fLo plug.vim --create-dirs \\\\\n    https://example.com/plug.vim\n"
            b": 1626986849:0;echo done\n",
        )
        import_paths([log], home=home)
        assert [c.command for c in stored(home)] == [
            "npm i\nnpm run build\nhttp-server test &",
            "curl -fLo plug.vim --create-dirs \\\n    https://example.com/plug.vim",
            "echo done",
        ]

    def test_a_header_always_starts_a_new_command(self, home: Path, tmp_path: Path) -> None:
        """`cd tests\\` then Ctrl-C is saved ending in a backslash; the next stamped line is still its own command."""
        log = write_bytes(tmp_path / ".zsh_history", b": 1630941583:0;cd tests\\\n: 1630941584:0;cd tests\n")
        import_paths([log], home=home)
        assert [c.command for c in stored(home)] == ["cd tests\\", "cd tests"]

    def test_metafied_and_invalid_bytes(self, home: Path, tmp_path: Path) -> None:
        """zsh writes some UTF-8 bytes as 0x83 + (byte ^ 0x20); undone when that yields UTF-8, else replaced."""
        check = "√".encode()  # e2 88 9a: both continuation bytes are metafied by zsh
        metafied = bytes([check[0], 0x83, check[1] ^ 0x20, 0x83, check[2] ^ 0x20])
        log = write_bytes(
            tmp_path / ".zsh_history",
            b": 1636639241:0;PROMPT='%F{green}" + metafied + b"%f'\n"
            b": 1636639242:0;echo \xff\xfe broken\n"
            b": 1636639243:0;echo caf\xc3\xa9\n",
        )
        summary = import_paths([log], home=home)
        assert (summary.commands, summary.skipped_lines) == (3, 0)
        prompt, broken, cafe = stored(home)
        assert prompt.command == "PROMPT='%F{green}√%f'" and prompt.info == {}
        assert broken.command == "echo \ufffd\ufffd broken" and broken.info == {"invalid_utf8": True}
        assert cafe.command == "echo café"


class TestDetection:
    @pytest.mark.parametrize(
        "head, name, expected",
        [
            (b": 1624011412:0;ls\n", "notes.txt", "zsh-history"),
            (b"#1663406862\nls\n", "anything", "bash-history"),
            (b"ls\ncd /tmp\n", ".zsh_history", "zsh-history"),
            (b"ls\ncd /tmp\n", ".bash_history", "bash-history"),
            (b"ls\ncd /tmp\n", "notes.txt", None),
            (b'{"type":"session_meta","payload":{"id":"x"}}\n', "x.log", "codex"),
            (
                b'{"type":"summary","summary":"s","leafUuid":"u"}\n{"sessionId":"s","type":"user","uuid":"u"}\n',
                "x.log",
                "claude-code",
            ),
            (b'{"display":"/clear","timestamp":1,"project":"/p"}\n', "history.jsonl", None),
            (b"", "empty.jsonl", None),
        ],
    )
    def test_format_is_detected_by_content_first(self, head: bytes, name: str, expected: str | None) -> None:
        assert sniff(head, name) == expected
