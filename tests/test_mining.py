"""Mining imported session commands: segments, trivial runs, known procedures, candidates and promotion."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sherpa_skills.skills.mining import MiningOptions, is_interactive, is_read_only, mine, segments, suggest_task_type
from sherpa_skills.skills.models import CapturedProcedure, ProcedureStep
from sherpa_skills.skills.store import SkillStore

_ids = iter(range(1, 10_000))


def cmd(command: str, outcome: str = "success", session: str = "s1", cwd: str | None = "/w", ts: float | None = None,
        output: str = "", exit_code: int | None = 0) -> Any:
    """A session command as the session store hands it to mining (the fields mining reads)."""
    n = next(_ids)
    return SimpleNamespace(id=n, source="claude-code", source_file="f.jsonl", session_id=session, seq=n, timestamp=ts or 1000.0 + n,
                           cwd=cwd, command=command, outcome=outcome, exit_code=exit_code if outcome != "failure" else 2, output=output)


class TestSegments:
    def test_a_failure_a_new_directory_or_a_long_pause_cuts_a_segment(self) -> None:
        """Three cuts: after a failure, where cwd changes, and after a pause longer than the gap."""
        cmds = [cmd("make"), cmd("make test", "failure"), cmd("make lint"), cmd("npm ci", cwd="/other"), cmd("npm test", cwd="/other"),
                cmd("npm run build", cwd="/other", ts=99_999.0)]
        cut = [[c.command for c in s] for s in segments(cmds, MiningOptions(gap_secs=900))]
        assert cut == [["make"], ["make lint"], ["npm ci", "npm test"], ["npm run build"]]

    def test_rejected_calls_cut_too_but_unknown_outcomes_do_not(self) -> None:
        """A user's rejection ends a run of commands; shell history's unknown outcomes continue one."""
        cmds = [cmd("a x", "unknown"), cmd("b y", "unknown"), cmd("c z", "rejected"), cmd("d w")]
        assert [[c.command for c in s] for s in segments(cmds, MiningOptions())] == [["a x", "b y"], ["d w"]]


class TestClassification:
    def test_read_only_commands_are_not_steps(self) -> None:
        """Looking around (find | sort, git status, grep) changes nothing; a redirect into a file does."""
        assert is_read_only("find . -name '*.py' | sort | wc -l")
        assert is_read_only("git status && git diff")
        assert not is_read_only("grep foo src > hits.txt")
        assert not is_read_only("git commit -m x")

    def test_interactive_programs_cannot_be_replayed(self) -> None:
        """An editor or a bare REPL is interactive; a script run is not."""
        assert is_interactive("vim README.md") and is_interactive("python3") and is_interactive("fg")
        assert not is_interactive("python3 build.py") and not is_interactive("ssh host uptime")

    def test_task_type_names_programs_and_verbs(self) -> None:
        """git add / git commit / git push → git-add-commit-push."""
        assert suggest_task_type(["git add -A", "git commit -m 'x'", "git push"]) == "git-add-commit-push"
        assert suggest_task_type(["mkdir -p out", "tar -czf out/a.tgz src"]) == "mkdir-tar"


def test_new_sequences_become_candidates_and_repeats_promote_them(tmp_path: Path) -> None:
    """Seen once: a candidate (not replayable); seen three times: promoted to active."""
    store = SkillStore(tmp_path / "store.db")
    for n in range(3):
        result = mine([cmd("npm ci", session=f"s{n}"), cmd("npm run build", session=f"s{n}"), cmd("ls", session=f"s{n}")], store)
        if n == 0:
            assert (result.new_candidates, result.promoted) == (1, 0)
    assert (result.repeated_candidates, result.promoted) == (1, 1)
    (proc,) = store.procedures(status=None)
    assert proc.status == "active" and proc.success_count == 3 and proc.source == "session"
    assert [s.command for s in proc.steps] == ["npm ci", "npm run build"]


def test_a_known_procedure_inside_a_session_gains_a_success(tmp_path: Path) -> None:
    """The Aho-Corasick pass finds a stored procedure's steps within a longer run of commands."""
    store = SkillStore(tmp_path / "store.db")
    known = store.add_procedure(CapturedProcedure(id="", task_type="release", success_count=1,
                                                  steps=[ProcedureStep(command="python -m build"), ProcedureStep(command="twine upload dist/*")]))
    result = mine([cmd("git pull"), cmd("python  -m build"), cmd("twine upload dist/*"), cmd("git tag v1")], store)
    assert (result.known, result.new_candidates) == (1, 0)
    assert store.get(known.id).success_count == 2


def test_trivial_runs_are_dropped_and_failures_are_learned(tmp_path: Path) -> None:
    """Only look-around commands: no candidate; a failed command becomes a defensive learning, secrets redacted."""
    store = SkillStore(tmp_path / "store.db")
    token = "ghp_" + "Z" * 36
    result = mine([cmd("ls"), cmd("cat README.md"), cmd("git status"),
                   cmd(f"GITHUB_TOKEN={token} gh release create v1", "failure", output=f"HTTP 401 token {token}")], store)
    assert (result.trivial, result.new_candidates, result.learnings) == (1, 0, 1)
    (learning,) = store.learnings()
    assert token not in learning.command and token not in learning.error and "[REDACTED]" in learning.command
    assert learning.exit_code == 2
