"""Importing: offsets (nothing twice, only new lines), rewritten files, bad files, redaction,
the store's API for mining."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import sherpa_skills.sessions as sessions
from sherpa_skills.errors import UsageError
from sherpa_skills.sessions import SessionStore, import_paths

SESSION = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


def claude_pair(n: int, command: str | None = None, output: str = "ok", *, error: bool = False) -> str:
    use = {
        "type": "assistant",
        "sessionId": SESSION,
        "uuid": f"a{n}",
        "cwd": "/w",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": command or f"echo {n}"}}
            ],
        },
    }
    res = {
        "type": "user",
        "sessionId": SESSION,
        "uuid": f"r{n}",
        "cwd": "/w",
        "timestamp": "2026-01-01T00:00:01Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": output, "is_error": error}],
        },
    }
    return json.dumps(use) + "\n" + json.dumps(res) + "\n"


def zsh(n: int, command: str | None = None) -> bytes:
    return f": {1700000000 + n}:0;{command or f'echo {n}'}\n".encode()


def test_public_surface_resolves() -> None:
    """Every name in __all__ imports, so the documented surface cannot silently break."""
    for name in sessions.__all__:
        assert getattr(sessions, name) is not None
    assert set(sessions.FORMATS) == {"claude-code", "codex", "bash-history", "zsh-history", "asciinema"}


class TestOffsets:
    def test_importing_the_same_file_twice_imports_nothing_new(self, home: Path, tmp_path: Path) -> None:
        log = tmp_path / f"{SESSION}.jsonl"
        log.write_text(claude_pair(1) + claude_pair(2))
        assert import_paths([log], home=home).commands == 2
        again = import_paths([log], home=home)
        assert (again.files, again.commands, again.sessions, again.unchanged_files, again.bytes_read) == (1, 0, 0, 1, 0)
        with SessionStore(home=home) as store:
            assert store.count_commands() == 2

    def test_touched_but_unchanged_file_imports_nothing(self, home: Path, tmp_path: Path) -> None:
        log = tmp_path / f"{SESSION}.jsonl"
        log.write_text(claude_pair(1))
        import_paths([log], home=home)
        os.utime(log, (1, 1))
        assert import_paths([log], home=home).commands == 0

    def test_a_grown_file_imports_only_its_new_lines(self, home: Path, tmp_path: Path) -> None:
        log = tmp_path / f"{SESSION}.jsonl"
        log.write_text(claude_pair(1) + claude_pair(2))
        first = import_paths([log], home=home)
        size = log.stat().st_size
        appended = claude_pair(3, output="Exit code 2\nboom", error=True)
        with log.open("a") as handle:
            handle.write(appended)
        grown = import_paths([log], home=home)
        assert (grown.commands, grown.failed, grown.lines_read, grown.bytes_read) == (1, 1, 2, len(appended.encode()))
        assert first.lines_read == 4
        with SessionStore(home=home) as store:
            (row,) = store.files()
            assert (row.offset, row.lines_read, row.commands) == (size + len(appended.encode()), 6, 3)
            assert [c.seq for c in store.commands_since(0)] == [1, 2, 3]

    def test_an_unterminated_last_line_waits_until_it_is_complete(self, home: Path, tmp_path: Path) -> None:
        log = tmp_path / ".zsh_history"
        log.write_bytes(zsh(1) + b": 1700000002:0;git comm")
        assert import_paths([log], home=home).commands == 1
        with log.open("ab") as handle:
            handle.write(b"it -m wip\n")
        import_paths([log], home=home)
        with SessionStore(home=home) as store:
            assert [c.command for c in store.commands_since(0)] == ["echo 1", "git commit -m wip"]

    def test_a_history_trimmed_at_the_top_imports_only_what_was_appended(self, home: Path, tmp_path: Path) -> None:
        """Shells rewrite their history file to HISTSIZE: old lines go, new ones come;
        the last lines read anchor the resume."""
        log = tmp_path / ".zsh_history"
        log.write_bytes(b"".join(zsh(n) for n in range(10)))
        assert import_paths([log], home=home).commands == 10
        log.write_bytes(b"".join(zsh(n) for n in range(4, 13)))
        summary = import_paths([log], home=home)
        assert summary.commands == 3
        with SessionStore(home=home) as store:
            assert [c.command for c in store.commands_since(10)] == ["echo 10", "echo 11", "echo 12"]

    def test_a_replaced_file_is_read_again_without_storing_anything_twice(self, home: Path, tmp_path: Path) -> None:
        log = tmp_path / f"{SESSION}.jsonl"
        log.write_text(claude_pair(1) + claude_pair(2))
        import_paths([log], home=home)
        log.write_text(claude_pair(2) + claude_pair(7) + claude_pair(1))  # rewritten, same calls plus one
        summary = import_paths([log], home=home)
        assert summary.commands == 1 and summary.file_results[0].status == "reset"
        with SessionStore(home=home) as store:
            assert sorted(c.command for c in store.commands_since(0)) == ["echo 1", "echo 2", "echo 7"]

    def test_the_same_log_at_two_paths_is_stored_once(self, home: Path, tmp_path: Path) -> None:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        for folder in ("a", "b"):
            (tmp_path / folder / f"{SESSION}.jsonl").write_text(claude_pair(1) + claude_pair(2))
        summary = import_paths([tmp_path / "a", tmp_path / "b"], home=home)
        assert (summary.files, summary.commands) == (2, 2)

    def test_big_file_is_committed_in_chunks_and_resumes(
        self, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from sherpa_skills.sessions import _importer

        monkeypatch.setattr(_importer, "_READ_BYTES", 512)
        monkeypatch.setattr(_importer, "_COMMIT_BYTES", 2048)
        log = tmp_path / f"{SESSION}.jsonl"
        log.write_text("".join(claude_pair(n) for n in range(40)))
        assert import_paths([log], home=home).commands == 40
        with log.open("a") as handle:
            handle.write(claude_pair(40))
        assert import_paths([log], home=home).commands == 1


def test_progress_is_reported_per_file(home: Path, tmp_path: Path) -> None:
    for n in range(3):
        (tmp_path / f"{n}.zsh_history").write_bytes(zsh(n))
    seen: list[tuple[int, int, str]] = []
    import_paths([tmp_path], home=home, progress=lambda done, total, result: seen.append((done, total, result.status)))
    import_paths(
        [tmp_path / "0.zsh_history"],
        home=home,
        progress=lambda done, total, result: seen.append((done, total, result.status)),
    )
    assert seen == [(1, 3, "imported"), (2, 3, "imported"), (3, 3, "imported"), (1, 1, "unchanged")]


NOBODY = 65534  # the usual uid and gid of `nobody`; no passwd entry is needed to act as it


@contextmanager
def _unprivileged() -> Iterator[Path]:
    """A folder the user of `_effective_user` owns, outside pytest's tmp folders (root's are closed to other users)."""
    folder = Path(tempfile.mkdtemp(prefix="sherpa-unprivileged-"))
    try:
        if os.geteuid() == 0:
            os.chown(folder, NOBODY, NOBODY)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _effective_user(folder: Path) -> Iterator[None]:
    """As root (CI runs as root, and root reads any file whatever its mode),
    act as `nobody` for the block; otherwise as is.
    The modules an import loads are loaded first, as root: the checkout may sit where `nobody` cannot read."""
    if os.geteuid() != 0:
        yield
        return
    warm = folder.parent / f"{folder.name}-warm"
    warm.mkdir()
    try:
        (warm / ".zsh_history").write_bytes(zsh(1))
        import_paths([warm / ".zsh_history"], home=warm / "home")
    finally:
        shutil.rmtree(warm, ignore_errors=True)
    for path in folder.iterdir():
        os.chown(path, NOBODY, NOBODY)
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


class TestBadInput:
    def test_unreadable_file_is_reported_and_counted(self, home: Path, tmp_path: Path) -> None:
        fifo = tmp_path / "logs" / "stuck.jsonl"
        fifo.parent.mkdir()
        os.mkfifo(fifo)
        good = tmp_path / "logs" / f"{SESSION}.jsonl"
        good.write_text(claude_pair(1))
        summary = import_paths([fifo.parent], home=home)
        assert (summary.files, summary.unreadable_files, summary.commands) == (1, 1, 1)
        assert any("stuck.jsonl" in e and "cannot read" in e for e in summary.errors)

    def test_file_without_read_permission(self) -> None:
        with _unprivileged() as folder:
            log = folder / ".zsh_history"
            log.write_bytes(zsh(1))
            log.chmod(0)
            with _effective_user(folder):
                summary = import_paths([log], home=folder / "home")
        assert (summary.files, summary.unreadable_files) == (0, 1)
        assert any("cannot read" in e for e in summary.errors)

    def test_missing_path_and_unrecognised_file(self, home: Path, tmp_path: Path) -> None:
        notes = tmp_path / "notes.txt"
        notes.write_text("just some text\n")
        summary = import_paths([tmp_path / "nope", notes], home=home)
        assert (summary.files, summary.unrecognised_files, summary.commands) == (0, 1, 0)
        assert any("no such file" in e for e in summary.errors) and any("--format" in e for e in summary.errors)

    def test_format_can_be_forced(self, home: Path, tmp_path: Path) -> None:
        notes = tmp_path / "notes.txt"
        notes.write_text("make build\nmake test\n")
        assert import_paths([notes], home=home, fmt="bash-history").commands == 2

    def test_unknown_format_is_a_usage_error(self, home: Path, tmp_path: Path) -> None:
        with pytest.raises(UsageError, match="auto, claude-code"):
            import_paths([tmp_path], home=home, fmt="fish")

    def test_folder_walk_reads_only_session_logs(self, home: Path, tmp_path: Path) -> None:
        root = tmp_path / "claude"
        (root / "projects" / "p" / SESSION / "tool-results").mkdir(parents=True)
        (root / "projects" / "p" / f"{SESSION}.jsonl").write_text(claude_pair(1))
        (root / "projects" / "p" / SESSION / "tool-results" / "x.txt").write_text("# output\n")
        (root / "projects" / "p" / SESSION / "tool-results" / "y.jsonl").write_text(claude_pair(9))
        (root / "history.jsonl").write_text('{"display": "/clear", "timestamp": 1, "project": "/p"}\n')
        (root / "settings.json").write_text("{}")
        summary = import_paths([root], home=home)
        assert (summary.files, summary.commands, summary.unrecognised_files, summary.errors) == (1, 1, 1, [])


class TestRedaction:
    TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"

    def test_store_never_holds_a_planted_secret(self, home: Path, tmp_path: Path) -> None:
        """Commands, outputs, descriptions, pending calls and histories are redacted before anything is written."""
        project = tmp_path / "p"
        project.mkdir()
        done = claude_pair(1, f"export GITHUB_TOKEN={self.TOKEN} && gh repo list", output=f"token={self.TOKEN}\nrepos")
        use = json.loads(done.splitlines()[0])
        use["message"]["content"][0]["input"]["description"] = f"List repos with {self.TOKEN}"
        pending = claude_pair(
            2, f"curl -H 'Authorization: Bearer {self.TOKEN}' https://api.example.invalid"
        ).splitlines()[0]
        (project / f"{SESSION}.jsonl").write_text(json.dumps(use) + "\n" + done.splitlines()[1] + "\n" + pending + "\n")
        (project / ".zsh_history").write_bytes(
            zsh(1, f"git clone https://me:{self.TOKEN}@git.example.invalid/me/x.git")
        )
        summary = import_paths([project], home=home)
        assert summary.commands == 2
        with SessionStore(home=home) as store:
            by_command = {c.command: c for c in store.commands_since(0)}
            pending = {Path(f.path).name: f.pending_calls for f in store.files()}
            assert pending == {f"{SESSION}.jsonl": 1, ".zsh_history": 0}  # the curl call waits for its result
        assert "export GITHUB_TOKEN=[REDACTED] && gh repo list" in by_command
        assert "git clone https://me:[REDACTED]@git.example.invalid/me/x.git" in by_command
        for path in home.iterdir():
            if path.is_file():
                assert self.TOKEN.encode() not in path.read_bytes(), path.name
                assert self.TOKEN[4:20].encode() not in path.read_bytes(), path.name


class TestStoreForMining:
    def test_commands_since_a_watermark(self, home: Path, tmp_path: Path) -> None:
        log = tmp_path / ".zsh_history"
        log.write_bytes(b"".join(zsh(n) for n in range(5)))
        import_paths([log], home=home)
        with SessionStore(home=home) as store:
            watermark = store.max_command_id()
            assert (watermark, store.count_commands(), store.count_sessions()) == (5, 5, 1)
            assert [c.command for c in store.commands_since(2, limit=2)] == ["echo 2", "echo 3"]
            assert store.commands_since(watermark) == []
        with log.open("ab") as handle:
            handle.write(zsh(5) + zsh(6))
        import_paths([log], home=home)
        with SessionStore(home=home) as store:
            new = store.commands_since(watermark)
            assert [(c.id, c.seq, c.command) for c in new] == [(6, 6, "echo 5"), (7, 7, "echo 6")]
            assert [c.seq for c in store.session_commands(new[0].session_id, "zsh-history", after_seq=5)] == [6, 7]

    def test_two_imports_at_once_store_each_command_once(self, home: Path, tmp_path: Path) -> None:
        log = tmp_path / f"{SESSION}.jsonl"
        log.write_text("".join(claude_pair(n) for n in range(300)))
        code = (
            "import sys; from pathlib import Path; from sherpa_skills.sessions import import_paths; "
            "s = import_paths([Path(sys.argv[1])], home=Path(sys.argv[2])); print(s.commands)"
        )
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(log), str(home)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [p.communicate(timeout=60) for p in procs]
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0 and out.strip(), f"an import failed:\n{err[-3000:]}"
        counts = [int(out.strip().splitlines()[-1]) for out, _ in outputs]
        assert sum(counts) == 300
        with SessionStore(home=home) as store:
            assert store.count_commands() == 300
            assert sorted(c.seq for c in store.commands_since(0)) == list(range(1, 301))
            assert store.files()[0].commands == 300
