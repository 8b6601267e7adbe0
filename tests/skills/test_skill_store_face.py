"""What `SkillStore` offers the view, the MCP bridge and the heartbeat: the same answers the CLI gives, and the same
refusals the store's own rules make (a claim is never counted, an import never arrives trusted)."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.errors import UsageError
from sherpa_skills.skills.api import CapturedProcedure, Execution, ProcedureStep, SkillStore


def _cli(home: Path, *argv: str) -> Any:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["--home", str(home), *argv, "--json"]) == 0
    return json.loads(out.getvalue())


def _promoted(skills: SkillStore, name: str, steps: list[str]) -> CapturedProcedure:
    captured = skills.capture(name, steps, description=name.replace("-", " "))
    assert captured.procedure is not None
    return skills.promote(captured.procedure.id)


def _failed(skills: SkillStore, proc: CapturedProcedure, times: int) -> None:
    now = time.time()
    for _ in range(times):
        skills.store.record_execution(
            Execution(
                procedure_id=proc.id,
                version=proc.version,
                started=now,
                ended=now,
                outcome="diverged",
                diverged_step=1,
                reason="x",
            )
        )


class TestReading:
    def test_show_and_stats_are_the_clis_json(self, skill_store: SkillStore, home: Path) -> None:
        """`show` is `learn show ID --json` and `stats` is `learn stats --json`: the view and the CLI print one
        shape."""
        proc = _promoted(skill_store, "pack-logs", ["tar czf logs.tgz logs"])
        assert skill_store.show(proc.id).detail == _cli(home, "learn", "show", proc.id)
        assert skill_store.stats() == _cli(home, "learn", "stats")

    def test_summary_is_the_procedures_row(self, skill_store: SkillStore, home: Path) -> None:
        proc = _promoted(skill_store, "pack-logs", ["tar czf logs.tgz logs"])
        assert [skill_store.summary(proc)] == _cli(home, "learn", "procedures")

    def test_parameters_in_order_and_shapes_set_values_aside(self) -> None:
        """Parameters in the order they first appear; two candidates that differ only in values share a shape, and a
        step the shell parser cannot read has none."""
        first = CapturedProcedure(
            id="a", task_type="t", steps=[ProcedureStep(command="scp {{ file }} {{ host }}:/srv/{{ file }}")]
        )
        assert SkillStore.parameters(first) == ["file", "host"]
        one = CapturedProcedure(id="b", task_type="t", steps=[ProcedureStep(command="git push origin main")])
        two = CapturedProcedure(id="c", task_type="t", steps=[ProcedureStep(command="git push upstream dev")])
        assert SkillStore.step_shapes(one) == SkillStore.step_shapes(two) is not None
        unreadable = CapturedProcedure(id="d", task_type="t", steps=[ProcedureStep(command="echo 'unclosed")])
        assert SkillStore.step_shapes(unreadable) is None

    def test_why_diverged_quotes_the_tails_last_line(self) -> None:
        said = SkillStore.why_diverged("exit code 2, expected 0", "warming up\nls: cannot access 'x'\n")
        assert said == "exit code 2, expected 0: ls: cannot access 'x'"
        assert SkillStore.why_diverged("timed out", None) == "timed out"


class TestOwnConnection:
    def test_own_store_closes_its_connection_the_shared_one_stays(self, home: Path) -> None:
        """A server's store (`own`) closes its connection on close(); the one kept per home and thread stays open
        for the machines that share it."""
        own, shared = SkillStore.own(home), SkillStore(home)
        assert own.store is not shared.store and own.procedures() == shared.procedures() == []
        own.close()
        with pytest.raises(Exception, match="closed"):
            own.store.conn.execute("SELECT 1")
        shared.close()
        assert shared.store.conn.execute("SELECT 1").fetchone()[0] == 1


class TestRefusals:
    def test_a_claim_is_never_counted(self, skill_store: SkillStore) -> None:
        """An agent's word that a procedure worked, however often, moves neither its counts nor its confidence."""
        proc = _promoted(skill_store, "pack-logs", ["tar czf logs.tgz logs"])
        after = skill_store.claim(proc.id, "agent", "agent:eager", successes=1000)
        assert (after.success_count, after.confidence) == (proc.success_count, proc.confidence)
        assert after.claimed_successes == 1000

    def test_an_added_candidate_arrives_untrusted_whatever_it_says(self, skill_store: SkillStore) -> None:
        """A procedure that says it is active, proven and successful is stored as a candidate with no counted
        evidence, and replay refuses it until a person promotes it."""
        forged = CapturedProcedure(
            id="",
            task_type="deploy",
            steps=[ProcedureStep(command="kubectl apply -f prod.yaml")],
            status="active",
            success_count=99,
            proven=True,
        )
        stored = skill_store.add_candidate(forged, "import", "import:somewhere", successes=5)
        assert (stored.status, stored.success_count, stored.claimed_successes) == ("candidate", 0, 5)
        refusal = SkillStore.replay_refusal(stored, skill_store.health_of(stored.id))
        assert refusal is not None and refusal.startswith("a candidate awaiting review")
        found = skill_store.known(forged)  # the same steps, found by their signature
        assert found is not None and found.id == stored.id

    def test_known_answers_none_for_what_is_not_stored(self, skill_store: SkillStore) -> None:
        """An id this store never held, and steps it never saw, are simply not known: no error."""
        stranger = CapturedProcedure(id="no-such-id", task_type="t", steps=[ProcedureStep(command="echo never")])
        assert skill_store.known(stranger) is None

    def test_a_step_over_the_limit_is_refused_naming_it(self) -> None:
        assert SkillStore.step("echo fine", 1).command == "echo fine"
        with pytest.raises(UsageError, match="step 3 command"):
            SkillStore.step("x" * 100_001, 3)

    def test_recheck_pulls_a_broken_procedure_from_replay(self, skill_store: SkillStore) -> None:
        """Failures in a row make it broken: recheck marks it for re-learning, and replay then refuses it."""
        proc = _promoted(skill_store, "pack-logs", ["tar czf logs.tgz logs"])
        _failed(skill_store, proc, 5)
        assert skill_store.recheck(proc.id).status == "broken"
        health = skill_store.health_of(proc.id)
        assert health.status == "needs-relearning"
        assert SkillStore.replay_refusal(skill_store.get(proc.id), health) is not None


class TestUpkeep:
    def test_changed_procedures_after_new_executions_and_new_procedures(self, skill_store: SkillStore) -> None:
        """A procedure never checked is found while the store's generation moves; once checked, only new
        executions bring it back."""
        proc = _promoted(skill_store, "pack-logs", ["tar czf logs.tgz logs"])
        ids, newest = skill_store.changed_procedures(executions_after=0, generation=None, promoted_since=time.time())
        assert proc.id in ids
        skill_store.recheck(proc.id)
        generation = skill_store.generation()
        ids, newest = skill_store.changed_procedures(
            executions_after=newest, generation=generation, promoted_since=time.time()
        )
        assert ids == set()
        _failed(skill_store, proc, 1)
        ids, after = skill_store.changed_procedures(
            executions_after=newest, generation=generation, promoted_since=time.time()
        )
        assert ids == {proc.id} and after > newest

    def test_sync_index_rebuilds_a_missing_index(self, skill_store: SkillStore, home: Path) -> None:
        _promoted(skill_store, "pack-logs", ["tar czf logs.tgz logs"])
        assert skill_store.sync_index()[0] == "updated"
        for path in sorted((home / "index").rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        assert skill_store.sync_index() == ("rebuilt", 1)
