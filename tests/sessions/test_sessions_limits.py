"""One enormous command (a heredoc, a long echo) is stored truncated with its length and hash,
and never poisons the home."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from test_sessions_claude_code import bash, result, write

from sherpa_skills.sessions import COMMAND_LIMIT, SessionStore, import_paths, is_truncated
from sherpa_skills.skills.mine.mining import KnownProcedures
from sherpa_skills.skills.replay.runtime import skill_store
from sherpa_skills.skills.store.models import STORED, CapturedProcedure, ProcedureStep


def session_file(folder: Path, tag: str, commands: list[str]) -> Path:
    session = f"{tag * 8}-2222-4333-8444-555555555555"
    lines = []
    for i, command in enumerate(commands):
        lines += [
            bash(f"{tag}call{i}", command, uuid=f"{tag}u{i}", session=session),
            result(f"{tag}call{i}", "ok", uuid=f"{tag}r{i}", session=session),
        ]
    return write(folder / "-work-app" / f"{session}.jsonl", *lines)


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sherpa_skills.cli", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_long_command_is_stored_truncated_with_its_length_and_hash(tmp_path: Path) -> None:
    """Past COMMAND_LIMIT characters the stored text is cut and says so: original length and sha256."""
    big = "cat > notes.txt <<'EOF'\n" + "a line of the heredoc\n" * 30_000 + "EOF"
    import_paths([session_file(tmp_path / "logs", "1", ["git status", big, "make test"])], home=tmp_path / "home")
    with SessionStore(home=tmp_path / "home") as store:
        stored = {c.seq: c.command for c in store.commands_since(0)}
    assert stored[1] == "git status" and stored[3] == "make test"
    assert len(stored[2]) < COMMAND_LIMIT + 200 and stored[2].startswith("cat > notes.txt <<'EOF'\na line")
    assert is_truncated(stored[2]) and not is_truncated(stored[1])
    assert f"{len(big)} characters" in stored[2]
    assert hashlib.sha256(big.encode()).hexdigest() in stored[2]


def test_a_truncated_command_never_becomes_a_procedure_step(tmp_path: Path, home: Path) -> None:
    """A cut command cannot be replayed: mining breaks the sequence there instead of learning half of it."""
    big = "echo " + "x" * (COMMAND_LIMIT * 2)
    import_paths([session_file(tmp_path / "logs", "2", ["make build", big, "make test"])], home=home)
    store = skill_store(home)
    assert not [p for p in store.iter_procedures() if any(is_truncated(s.command) for s in p.steps)]


def test_known_procedures_skip_steps_too_long_to_index(tmp_path: Path) -> None:
    """A home that stored a huge step before the limit existed still mines:
    that procedure is left out of the automaton."""
    store = skill_store(tmp_path / "home")
    store.add_procedure(
        CapturedProcedure(
            id="",
            task_type="huge",
            steps=[  # stored before the limit on a step's command existed: read back as the store reads its rows
                ProcedureStep.model_validate({"command": "echo" + " y" * 350_000}, context=STORED),
                ProcedureStep(command="make"),
            ],
            source="manual",
        )
    )
    small = store.add_procedure(
        CapturedProcedure(
            id="",
            task_type="small",
            steps=[ProcedureStep(command="make build"), ProcedureStep(command="make test")],
            source="manual",
        )
    )
    known = KnownProcedures(store)
    assert known.found_in(["make build", "make test"]) == {small.id}
    assert known.skipped == 1


@pytest.mark.slow
@pytest.mark.parametrize("size", [600_000, 12_000_000])
def test_a_home_survives_the_largest_command_it_accepts(tmp_path: Path, home: Path, size: int) -> None:
    """Import a session holding one huge command, then import again and run a heartbeat: no SIGSEGV, no traceback."""
    big = "echo " + "A" * size
    first = cli(
        "sessions",
        "import",
        str(session_file(tmp_path / "a", "3", ["git pull", big, "make test"]).parent.parent),
        home=home,
    )
    assert first.returncode == 0, first.stderr
    second = cli(
        "sessions",
        "import",
        str(session_file(tmp_path / "b", "4", ["git pull", big, "make test", "make lint"]).parent.parent),
        home=home,
    )
    assert second.returncode == 0, (second.returncode, second.stderr[-2000:])
    beat = cli("heartbeat", "--once", home=home)
    assert beat.returncode == 0, (beat.returncode, beat.stderr[-2000:])
    assert "Traceback" not in first.stderr + second.stderr + beat.stderr
