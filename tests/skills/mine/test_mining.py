"""Mining imported session commands: recurring routines become candidates, known procedures gain successes,
failures are learned."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sherpa_skills.skills.mine.mining import found_nothing, is_interactive, is_read_only, mine, suggest_task_type
from sherpa_skills.skills.store.database import ProcedureDatabase
from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

_ids = iter(range(1, 100_000))


def cmd(
    command: str,
    outcome: str = "success",
    session: str = "s1",
    cwd: str | None = "/w",
    ts: float | None = None,
    output: str = "",
    exit_code: int | None = 0,
) -> Any:
    """A session command as the session store hands it to mining (the fields mining reads)."""
    n = next(_ids)
    return SimpleNamespace(
        id=n,
        source="claude-code",
        source_file="f.jsonl",
        session_id=session,
        seq=n,
        timestamp=ts or 1000.0 + n,
        cwd=cwd,
        command=command,
        outcome=outcome,
        exit_code=exit_code if outcome != "failure" else (exit_code or 2),
        output=output,
        agent=None,
    )


def build(session: str, version: str = "1.0") -> list[Any]:
    return [
        cmd("ls", session=session),
        cmd("npm ci", session=session),
        cmd("npm run build", session=session),
        cmd(f"npm version {version}", session=session),
    ]


class TestClassification:
    def test_read_only_commands_are_not_steps(self) -> None:
        """Looking around (find | sort, git status, rg | sed -n) changes nothing; a redirect into a file does."""
        assert is_read_only("find . -name '*.py' | sort | wc -l")
        assert is_read_only("git status && git diff")
        assert is_read_only("rg -n 'a|b' src | sed -n '1,20p'")
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

    def test_nothing_found_is_not_a_failure(self) -> None:
        """grep/rg 1, diff 1, test 1 answer no; exit 2 is still an error."""
        assert (
            found_nothing("rg TODO src", 1)
            and found_nothing("git diff | grep -q x", 1)
            and found_nothing("test -f a", 1)
        )
        assert not found_nothing("rg TODO src", 2) and not found_nothing("npm test", 1)


def test_a_routine_seen_in_one_session_is_not_a_candidate(procedure_db: ProcedureDatabase) -> None:
    store = procedure_db
    result = mine(build("s1"), store)
    assert result.new_candidates == 0 and store.procedures(status=None) == []


def test_recurring_routines_become_candidates_and_their_logged_successes_stay_claims(
    procedure_db: ProcedureDatabase,
) -> None:
    """Seen in two sessions: a parameterised candidate (not replayable); seen succeeding in three: still a candidate,
    its logged successes claims — logs are not this store's evidence, a person promotes."""
    store = procedure_db
    history = build("s1", "1.0") + build("s2", "1.1")
    result = mine(history[4:], store, history=history)
    assert result.new_candidates == 1
    (proc,) = store.procedures(status=None)
    assert proc.status == "candidate" and proc.source == "session"
    assert (proc.success_count, proc.claimed_successes) == (0, 2)
    assert [s.command for s in proc.steps] == ["npm ci", "npm run build", "npm version {{ version }}"]
    assert proc.context["mined"]["parameters"] == {"version": ["1.0", "1.1"]} and proc.context["mined"]["support"] == 2

    history += build("s3", "1.2")
    result = mine(history[8:], store, history=history)
    assert (result.new_candidates, result.updated_candidates) == (0, 1)
    after = store.get(proc.id)
    assert (after.status, after.success_count, after.claimed_successes) == ("candidate", 0, 3)


def test_a_rejected_candidate_is_never_proposed_again(procedure_db: ProcedureDatabase) -> None:
    store = procedure_db
    history = build("s1") + build("s2", "2.0")
    mine(history, store, history=history)
    (proc,) = store.procedures(status=None)
    store.set_status(proc.id, "rejected")
    history += build("s3", "3.0") + build("s4", "4.0")
    result = mine(history[8:], store, history=history)
    assert (result.new_candidates, result.rejected_again) == (0, 1)
    assert store.get(proc.id).status == "rejected"


def test_a_known_procedure_inside_a_session_gains_a_claimed_success(procedure_db: ProcedureDatabase) -> None:
    """Found by shape with one automaton pass, then checked against its templates: the parameter takes any value; the
    log's success is a claim, not a count."""
    store = procedure_db
    known = store.add_procedure(
        CapturedProcedure(
            id="",
            task_type="release",
            success_count=1,
            steps=[ProcedureStep(command="python -m build"), ProcedureStep(command="twine upload {{ files }}")],
        )
    )
    result = mine([cmd("git pull"), cmd("python  -m build"), cmd("twine upload dist/*"), cmd("git tag v1")], store)
    assert (result.known, result.new_candidates) == (1, 0)
    assert (store.get(known.id).success_count, store.get(known.id).claimed_successes) == (1, 1)
    assert [c.source for c in store.claims(known.id)] == ["session"]


def test_a_known_procedure_needs_its_literal_words(procedure_db: ProcedureDatabase) -> None:
    """Same shape, different fixed words: not the same procedure."""
    store = procedure_db
    known = store.add_procedure(
        CapturedProcedure(
            id="",
            task_type="release",
            success_count=1,
            steps=[ProcedureStep(command="make build"), ProcedureStep(command="make deploy ENV=prod")],
        )
    )
    assert mine([cmd("make build"), cmd("make deploy ENV=staging")], store).known == 0
    assert (store.get(known.id).success_count, store.get(known.id).claimed_successes) == (1, 0)


def test_failures_are_learned_with_secrets_redacted_but_nothing_found_is_not(procedure_db: ProcedureDatabase) -> None:
    store = procedure_db
    token = "ghp_" + "Z" * 36
    result = mine(
        [
            cmd("ls"),
            cmd("rg TODO src", "failure", exit_code=1),
            cmd(f"GITHUB_TOKEN={token} gh release create v1", "failure", output=f"HTTP 401 token {token}"),
        ],
        store,
    )
    assert (result.learnings, result.not_failures) == (1, 1)
    (learning,) = store.learnings()
    assert token not in learning.command and token not in learning.error and "[REDACTED]" in learning.command
    assert learning.exit_code == 2


class TestReviewQueue:
    """`learn candidates` lists what mining proposes; `learn promote` and `learn reject` decide."""

    def test_candidates_promote_and_reject_from_the_cli(self, home: Path, capsys: Any) -> None:
        import json

        from sherpa_skills.cli import main

        store = ProcedureDatabase(home=home)
        history = build("s1", "1.0") + build("s2", "1.1")
        mine(history, store, history=history)
        history = [
            cmd("make lint", session="s3"),
            cmd("make test", session="s3"),
            cmd("make lint", session="s4"),
            cmd("make test", session="s4"),
        ]
        mine(history, store, history=history)
        assert main(["learn", "candidates", "--json", "--home", str(home)]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert [r["task_type"] for r in rows] == ["make-lint-test", "npm-ci-run-version"]
        npm = rows[1]
        assert npm["parameters"] == {"version": ["1.0", "1.1"]} and npm["support"] == 2 and npm["sessions"] == 2
        assert npm["steps"] == ["npm ci", "npm run build", "npm version {{ version }}"]

        assert main(["learn", "reject", rows[0]["id"], "--json", "--home", str(home)]) == 0
        assert json.loads(capsys.readouterr().out)["status"] == "rejected"
        assert main(["learn", "promote", npm["id"], "--home", str(home)]) == 0
        capsys.readouterr()
        assert main(["learn", "candidates", "--json", "--home", str(home)]) == 0
        assert json.loads(capsys.readouterr().out) == []
        assert store.get(npm["id"]).status == "active"

        assert (
            main(["learn", "reject", rows[0]["id"], "--home", str(home)]) == 2
        )  # already rejected: said, not a traceback
        assert "already rejected" in capsys.readouterr().err

    def test_a_rejected_procedure_is_never_offered_for_replay(self, tmp_path: Path) -> None:
        from sherpa_skills.skills.match.matcher import Matcher

        store = ProcedureDatabase(path=tmp_path / "store.db")
        proc = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="deploy-site",
                description="deploy the web site",
                success_count=5,
                steps=[ProcedureStep(command="make deploy")],
            )
        )
        store.set_status(proc.id, "rejected")
        decision = Matcher(store).match("deploy the web site")
        assert decision.decision == "no-match" and proc.id not in [c.procedure_id for c in decision.candidates]
