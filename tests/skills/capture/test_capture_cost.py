"""What a learning run's capture keeps grows with the run: each action outcome once, with the decision after it."""

from __future__ import annotations

import json
from pathlib import Path

from sherpa_skills.runtime import load_workflow_text
from sherpa_skills.skills.capture.learning import Learner
from sherpa_skills.skills.store.branches import branches
from sherpa_skills.skills.store.database import ProcedureDatabase

# A cycle of three actions and one rule decision (retry or finish) per visit of `check`, as the peers' workload runs.
LOOP = """
name: loop
context: {n: 0, retries: 0}
initial: plan
max_steps: 10000
states:
  plan: {}
  act: {}
  check: {}
  done: {final: true}
transitions:
  - {trigger: execute, source: plan, dest: act, after: [{increment: {key: n}}]}
  - {trigger: verify, source: act, dest: check, after: [{increment: {key: n}}]}
  - trigger: retry
    source: check
    dest: plan
    conditions: [{context_lt: {key: retries, value: %(cycles)d}}]
    after: [{increment: {key: retries}}]
  - {trigger: finish, source: check, dest: done}
policy:
  type: rule
  rules:
    - {state: check, trigger: retry}
    - {state: check, trigger: finish}
"""


def _captured(tmp_path: Path, cycles: int) -> tuple[list[str], str, list[str]]:
    """(the run's actions, the stored decisions' JSON, each decision's outcomes) of one learning run of `cycles`."""
    (tmp_path / f"skills-{cycles}").mkdir()
    store = ProcedureDatabase(path=tmp_path / f"skills-{cycles}" / "skills.db")
    agent = load_workflow_text(LOOP % {"cycles": cycles}, base_dir=tmp_path).agent(learn=Learner(store))
    assert agent.run().state == "done"
    [proc] = store.procedures(status=None)
    stored = store.conn.execute("SELECT decisions FROM procedures WHERE id = ?", (proc.id,)).fetchone()[0]
    store.close()
    acted = [e.action for e in agent.belief.log if not e.action.startswith(("policy:", "check:"))]
    assert all(not d.outcomes_before for d in proc.decisions)  # the form procedures were stored in before: read only
    return acted, stored, [o.action for d in proc.decisions for o in d.outcomes]


def test_each_action_outcome_is_kept_once_with_the_decision_after_it(tmp_path):
    acted, _, kept = _captured(tmp_path, 10)
    assert len(acted) == 32  # (execute, verify, retry) x 10, execute, verify
    # Every outcome before the last decision (the tenth retry; `finish`, the only way left, is no decision), in order,
    # each once.
    assert kept == acted[:-3]


def test_the_record_grows_with_the_run_not_with_its_square(tmp_path):
    """Four times the cycles keep about four times the outcomes (all so far per decision kept sixteen times)."""
    _, short, _ = _captured(tmp_path, 10)
    _, long, _ = _captured(tmp_path, 40)
    assert len(json.loads(long)) == 40 and len(long) < 4.5 * len(short)


def test_the_same_decisions_again_credit_the_procedure_and_other_ones_are_its_branch(tmp_path):
    """The credit a repeated run earns without loading its procedure, and its refusal: the same task (no inputs, one
    description) taking other decisions is not credited to it but kept as its branch."""
    store = ProcedureDatabase(path=tmp_path / "skills.db")
    learner = Learner(store)
    for cycles in (3, 3, 5):
        result = load_workflow_text(LOOP % {"cycles": cycles}, base_dir=tmp_path).agent(learn=learner).run()
        assert result.state == "done"
    [proc] = store.procedures(status=None)
    assert (proc.success_count, len(proc.decisions)) == (2, 3)
    assert result.learning is not None and "branch" in result.learning
    assert [b["runs"] for b in branches(store, proc.id)] == [1]
    store.close()
