"""`sherpa_skills.SkillStore`: the skill store for people who embed agents — capture, match, replay, health.

The same machines the CLI runs (statemachines/capture.yaml and replay.yaml), behind plain methods; the CLI's
`learn` commands are built on it and on nothing else of skills/ but the types and helpers in skills/face/.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from .face import transfer
from .face.models import CapturedLearning, Imported, LearningsFound, Picked, ProcedureShown, Removal
from .match.floor import MatchFloor
from .match.matcher import Matcher
from .match.models import MatchCandidate as MatchCandidate  # for callers: what `MatchDecision.offered` holds
from .match.models import MatchDecision
from .replay.payload import replay_payload
from .store.answers import WordingAnswer
from .store.models import (
    CapturedProcedure,
    ClaimSource,
    Execution,
    ProcedureHealthReport,
    ProcedureStep,
    step_problem,
)

if TYPE_CHECKING:
    from ..db.database import Database
    from ..engine.runstore import RunStore
    from ..engine.workflow import Workflow
    from ..sessions import SessionStore
    from .capture.learning import Learner
    from .mine.mining import MiningResult


class CaptureResult(BaseModel):
    """How a capture ended: a new procedure (or version), a success credited to the one it repeats, or a refusal."""

    outcome: Literal["captured", "duplicate", "rejected", "error"]
    procedure: CapturedProcedure | None = None
    reason: str | None = None
    filtered: list[dict[str, Any]] = Field(default_factory=list, description="steps left out, each with why")
    secrets_to_env: list[str] = Field(default_factory=list, description="literal secrets replaced by these env vars")
    index_warning: str | None = None
    run_id: str | None = None


def _machine(name: str) -> Workflow:
    from ..data import data_file
    from ..engine.workflow import load_workflow

    return load_workflow(data_file("statemachines", f"{name}.yaml"))


class SkillStore:
    """The procedures of one home (`--home`, else SHERPA_SKILLS_HOME, else ~/.sherpa-skills).

    `match` decides which procedure a task is about (or none); `replay` runs it (a dry run unless
    `execute=True`); `capture` keeps steps that worked. One instance per thread.
    """

    def __init__(self, home: str | Path | None = None):
        from ..home import resolve_home
        from .replay.runtime import skill_matcher, skill_store

        self.home = resolve_home(str(home) if home is not None else None)
        self.store = skill_store(self.home)  # the connection and matcher the replay and capture machines use too
        self.matcher: Matcher = skill_matcher(self.home)
        self._runs: RunStore | None = None

    def _run_store(self) -> RunStore:
        if self._home_runs is not None:
            return self._home_runs()  # a Home's run store: the Home closes it
        if self._runs is None:
            from ..engine.runstore import RunStore

            self._runs = RunStore(home=self.home)
        return self._runs

    def close(self) -> None:
        """Close the run store; the skill store connection is shared per home and thread and stays open (one of its
        own, from `SkillStore.own`, is closed)."""
        if self._runs is not None:
            self._runs.close()
            self._runs = None
        if self._own_connection:
            self.store.close()

    def __enter__(self) -> SkillStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def learner(self) -> Learner:
        """What `workflow.agent(learn=True, store=this)` learns with: this store and its matcher (the home's Learner,
        kept across runs, unless this store has a connection of its own)."""
        from .capture.learning import Learner, home_learner

        if not self._own_connection:
            return home_learner(self.home)
        if self._learner is None:
            self._learner = Learner(self.store, self.matcher)
        return self._learner

    # ------------------------------------------------------------------ reading

    def procedures(self, task_type: str | None = None, *, include_candidates: bool = False) -> list[CapturedProcedure]:
        return self.store.procedures(task_type, None if include_candidates else "active")

    def get(self, procedure_id: str, version: int | None = None) -> CapturedProcedure:
        """The procedure (its latest version, or `version`); an id prefix is enough when only one has it."""
        return self.store.get(procedure_id, version)

    def health(self, procedure_id: str | None = None) -> list[ProcedureHealthReport]:
        """One procedure's health report, or every procedure's."""
        ids = [self.store.get(procedure_id).id] if procedure_id else [p.id for p in self.store.procedures()]
        return [self.store.health(pid) for pid in ids]

    def match(
        self,
        query: str,
        task_type: str | None = None,
        *,
        params: dict[str, Any] | None = None,
        min_confidence: float | None = None,
        verify: str | None = None,
        by: str | None = None,
    ) -> MatchDecision:
        """Which procedure the task is about, with parameters read from its literals (`match`); the plausible ones
        for you to choose from (`needs-confirmation`: `offered`, then `confirm` or `reject`); or `no-match` and why.
        `verify` names a model that judges a plausible match instead (see skills/match/verifier.py). `by` is who
        asks (default a person): an agent's answers (`agent:NAME`) shape only what that agent is offered."""
        from .match.verifier import Verifier

        return self.matcher.match(
            query,
            task_type=task_type,
            params=params,
            min_confidence=min_confidence,
            verify=Verifier(verify) if verify else None,
            by=by,
        )

    # ------------------------------------------------------------------ answers to needs-confirmation

    def confirm(
        self, query: str, procedure_id: str, task_type: str | None = None, *, by: str | None = None
    ) -> WordingAnswer:
        """The task is this procedure: its wording becomes an alias (in `task_type`'s scope), so it replays next time.
        Refused (UsageError) when the task's literals disagree with the procedure."""
        return self.matcher.confirm(query, procedure_id, task_type=task_type, by=by)

    def reject(
        self,
        query: str,
        procedure_ids: list[str] | None = None,
        task_type: str | None = None,
        *,
        by: str | None = None,
    ) -> list[WordingAnswer]:
        """The task is none of these procedures (default: the ones `match` offers or selects now): remembered, never
        offered for this wording again."""
        if procedure_ids is None:
            decision = self.match(query, task_type, by=by)
            procedure_ids = [c.procedure_id for c in decision.offered] or (
                [decision.procedure_id] if decision.procedure_id else []
            )
        else:
            procedure_ids = [self.store.get(pid).id for pid in procedure_ids]
        return self.matcher.reject(query, procedure_ids, task_type=task_type, by=by)

    def match_floors(self, task_type: str | None = None) -> list[MatchFloor]:
        """The relevance floor matches replay from, per scope (`task_type`'s alone when given; else the unscoped one
        and every task type a question was answered in): the shipped one, or the one a person's answers give."""
        from ..errors import UsageError

        answered = self.matcher.answers.asked_scopes()
        if task_type and task_type not in answered and not self.store.procedures(task_type, status=None):
            raise UsageError(f"no procedure of task type {task_type!r} and no question answered in its scope")
        scopes = [task_type] if task_type else sorted({"", *answered})
        return [MatchFloor.of(scope, self.matcher.floor_for(scope or None)) for scope in scopes]

    def aliases(self, procedure_id: str | None = None, *, shown_to: str | None = None) -> list[WordingAnswer]:
        """Aliases, then rejections (of one procedure, when given); `shown_to` an agent (`agent:NAME`): only those
        that shape its matches (everyone's and its own, never another agent's)."""
        from .store.answers import owner_of, seen_by

        pid = self.store.get(procedure_id).id if procedure_id else None
        found = self.matcher.answers.entries(pid)
        return found if shown_to is None else [a for a in found if seen_by(owner_of(a.by), shown_to)]

    def forget(self, answer_id: str) -> WordingAnswer:
        """Remove one alias (`a<N>`) or rejection (`r<N>`)."""
        return self.matcher.answers.forget(answer_id)

    # ------------------------------------------------------------------ acting

    def capture(
        self,
        task_type: str,
        steps: list[ProcedureStep | dict[str, Any] | str],
        *,
        description: str = "",
        tags: list[str] | None = None,
        preconditions: list[str] | None = None,
        postconditions: list[str] | None = None,
        procedure_id: str | None = None,
        claimed_by: str | None = None,
    ) -> CaptureResult:
        """Keep steps that worked, as given (none dropped; one step is enough); a literal secret becomes an env var.
        Your capture counts as one success of the procedure. `claimed_by` names someone else who says they worked
        (an agent): the steps are kept as a candidate for review with that claim, and count for nothing. A step that
        is not valid (a command over `MAX_COMMAND_CHARS`) is refused, naming it (UsageError)."""
        from pydantic import ValidationError

        from ..errors import UsageError

        if not steps:
            raise UsageError("capture needs at least one step")
        given = []
        for number, step in enumerate(steps, 1):
            try:
                given.append(
                    ProcedureStep(command=step) if isinstance(step, str) else ProcedureStep.model_validate(step)
                )
            except ValidationError as exc:  # refused here, naming the step, before a run is recorded for it
                raise UsageError(step_problem(number, exc)) from None
        inputs: dict[str, Any] = {
            "task_type": task_type,
            "steps": [s.model_dump() for s in given],
            "description": description,
            "tags": list(tags or []),
            "preconditions": list(preconditions or []),
            "postconditions": list(postconditions or []),
        }
        if procedure_id:
            inputs["procedure_id"] = self.store.get(procedure_id).id
        if claimed_by:
            inputs["claimed_by"] = claimed_by
        return self._capture(inputs)

    def _capture(self, inputs: dict[str, Any]) -> CaptureResult:
        result = _machine("capture").agent(store=self._run_store(), home=self.home).run(inputs)
        ctx = result.context
        common = {
            "filtered": ctx.get("filtered") or [],
            "secrets_to_env": ctx.get("secrets_to_env") or [],
            "run_id": result.run_id,
        }
        if result.status == "error":
            return CaptureResult(outcome="error", reason=result.error, **common)
        if result.state == "rejected":
            return CaptureResult(outcome="rejected", reason=ctx.get("rejected_reason"), **common)
        outcome = "duplicate" if result.state == "duplicate" else "captured"
        return CaptureResult(
            outcome=outcome,
            procedure=self.store.get(ctx["procedure"]["id"]),
            index_warning=ctx.get("index_warning"),
            **common,
        )

    def replay(
        self,
        query: str | None = None,
        *,
        procedure_id: str | None = None,
        task_type: str | None = None,
        params: dict[str, Any] | None = None,
        execute: bool = False,
        cwd: str | None = None,
        min_confidence: float | None = None,
        verify: str | None = None,
        confirm: Callable[[dict[str, Any]], tuple[str, dict[str, Any]]] | None = None,
        by: str | None = None,
    ) -> dict[str, Any]:
        """Match and replay: a dry run unless `execute`. With `confirm`, executing first asks it
        (`("approve"|"refuse"|"edit", args)` from the pending payload); without, `execute=True` runs at once.
        `status` is `needs-confirmation` (with `candidates`) when the task is plausibly one of them: choose by calling
        again with `procedure_id` — with the query, that records the confirmation (an alias, `alias` in the payload),
        credited to `by` (an agent: `agent:NAME`; default the OS user), who is also the one asking: an agent's own
        answers shape what it is offered, never what anyone else is."""
        from ..errors import UsageError

        if not procedure_id and not (query or "").strip():  # a usage error, refused before a run is recorded for it
            raise UsageError("replay needs a task to match: a non-empty query (what to do), or a procedure id")
        inputs: dict[str, Any] = {
            "query": query or "",
            "params": dict(params or {}),
            "execute": execute,
            "assume_yes": confirm is None,
        }
        if min_confidence is not None:
            inputs["min_confidence"] = min_confidence
        alias = None
        if procedure_id:
            inputs["procedure_id"] = self.store.get(procedure_id).id
            if (query or "").strip():  # the caller answered a needs-confirmation: remembered as an alias
                alias = self.confirm(query or "", inputs["procedure_id"], task_type, by=by)
        if task_type:
            inputs["task_type"] = task_type
        if cwd:
            inputs["cwd"] = cwd
        if verify:
            inputs["verify"] = verify
        if by:
            inputs["by"] = by
        agent = _machine("replay").agent(store=self._run_store(), home=self.home)
        result = agent.run(inputs)
        while confirm is not None and result.status == "waiting" and result.state == "confirm":
            pending = {**replay_payload(result), "status": "confirm", "procedure": result.context.get("procedure")}
            trigger, targs = confirm(pending)
            result = agent.run(trigger=trigger, args=targs)
        payload = replay_payload(result)
        payload["alias"] = alias.model_dump(mode="json") if alias is not None else None
        return payload

    def promote(self, procedure_id: str, by: str | None = None) -> CapturedProcedure:
        """A person (`by`, else the OS user) vouches for it: active, the promotion counts as its second success, and its
        health starts a fresh evidence window (`new`); see `store.SkillStore.promote`."""
        return self.store.promote(procedure_id, by=by)

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        return self.matcher.reindex(progress)

    # --- the command line's view of the store

    def capture_success(
        self,
        task_type: str,
        *,
        run_id: str | None = None,
        steps: list[dict[str, Any]] | None = None,
        source: str | None = None,
        context: dict[str, Any] | None = None,
        description: str | None = None,
        tags: list[str] | None = None,
        preconditions: list[str] | None = None,
        postconditions: list[str] | None = None,
        procedure_id: str | None = None,
    ) -> CaptureResult:
        """What `learn capture-success` keeps: the steps run `run_id` executed, or `steps` already checked (a steps
        file's, or commands a person picked from a session: `source` "session" and its `context`), as given; a person's
        capture, counted. An unknown `procedure_id` is refused before anything is recorded."""
        given = {
            "run_id": run_id,
            "steps": steps,
            "source": source,
            "context": context,
            "description": description,
            "tags": tags,
            "preconditions": preconditions,
            "postconditions": postconditions,
        }
        inputs: dict[str, Any] = {"task_type": task_type, **{k: v for k, v in given.items() if v is not None}}
        if procedure_id:
            inputs["procedure_id"] = self.store.get(procedure_id).id
        return self._capture(inputs)

    def summaries(self, task_type: str | None = None, *, include_candidates: bool = False) -> list[dict[str, Any]]:
        """Each procedure as `learn procedures --json` lists it: id, version, kind, size, confidence, counts, health."""
        from .store.stats import procedure_summary

        return [
            procedure_summary(self.store, p) for p in self.procedures(task_type, include_candidates=include_candidates)
        ]

    def show(self, procedure_id: str, version: int | None = None, *, executions: int = 10) -> ProcedureShown:
        """One procedure (its current version, or `version`) in full: `learn show --json`'s detail, its health, and
        its latest `executions`. An unknown id or version is refused (StoreError)."""
        from .store.stats import procedure_detail

        p = self.store.get(procedure_id, version)
        detail = procedure_detail(self.store, p)
        health = self.store.health(p.id, version=p.version)
        return ProcedureShown(p, detail, health, self.store.executions(p.id, limit=executions))

    def count(self) -> int:
        """How many procedures the store holds, of every status."""
        return self.store.count()

    def stats(self) -> dict[str, Any]:
        """What replay and the decision memory saved, per procedure, workflow and run (`learn stats --json`)."""
        from .decide.summary import with_memory_savings
        from .store.stats import stats

        return with_memory_savings(self.store, stats(self.store))

    def failures(self, task_type: str | None = None, *, limit: int = 50) -> list[CapturedLearning]:
        """Captured failures (defensive learnings), newest first; only `task_type`'s when given."""
        return self.store.learnings(task_type, limit=limit)

    def failures_for(self, task: str, task_type: str | None = None, *, limit: int = 5) -> LearningsFound:
        """The failures the planner would be shown for `task`: found by meaning, each with its relevance and why."""
        from .match.failures import FailureFinder

        finder = FailureFinder(self.store)
        try:
            return finder.find(task, task_type, limit=limit)
        finally:
            finder.close()  # chromadb keeps a folder's files open until its client is closed, dropped or not

    def reindex_failures(self) -> int:
        """Embed every captured failure again (the procedures: `reindex`); how many."""
        from .match.failures import FailureFinder

        finder = FailureFinder(self.store)
        try:
            return finder.reindex()
        finally:
            finder.close()

    def promotions(self, procedure_id: str) -> list[dict[str, Any]]:
        """Every promotion of the procedure, oldest first: who, when, and what it left behind."""
        return self.store.promotions(self.store.get(procedure_id).id)

    @staticmethod
    def replay_refusal(procedure: CapturedProcedure, health: ProcedureHealthReport | None) -> str | None:
        """Why `procedure` may not be replayed now, or None: replay's own gate, so promote never promises what replay
        refuses."""
        from .store.scoring import replay_refusal

        return replay_refusal(procedure, health)

    def candidates(self, task_type: str | None = None) -> list[CapturedProcedure]:
        """Procedures waiting for review (mined, an agent's, imported): none runs until a person promotes it."""
        return self.store.procedures(task_type, "candidate")

    def reject_candidate(self, procedure_id: str) -> CapturedProcedure:
        """Drop a procedure for good: never replayed, never proposed by mining again. Refused (UsageError) when it
        already is."""
        from ..errors import UsageError

        proc = self.store.get(procedure_id)
        if proc.status == "rejected":
            raise UsageError(f"{proc.id} is already rejected")
        return self.store.set_status(proc.id, "rejected")

    def export_data(self) -> dict[str, Any]:
        """Every procedure (with its earlier versions) and learning, as `learn export` writes them."""
        return transfer.export_data(self.store)

    def import_data(
        self, data: dict[str, Any], file: str, *, progress: Callable[[int, int], None] | None = None
    ) -> Imported:
        """A `learn export` file's data (read from `file`): its procedures become candidates for review, their counts
        kept as the file's claim (known ones are skipped, invalid ones reported as `procedures[i].field`); its
        learnings are added. Index them with `index_imported`."""
        return transfer.import_data(self.store, data, file, Path(file).name, progress)

    def index_imported(
        self, procedures: list[CapturedProcedure], *, progress: Callable[[int, int], None] | None = None
    ) -> str | None:
        """Embed imported procedures now, in batches, and the imported failures; the index's warning, or None."""
        return transfer.index_imported(self.store, self.matcher, procedures, progress)

    def decision_counts(self, workflow: str | None = None) -> list[dict[str, Any]]:
        """The decision memory: how many examples each workflow's LLM decisions left, by state and trigger."""
        from .decide.examples import example_counts

        return example_counts(self.store, workflow)

    def decision_states(self, workflow: str | None = None, error_bound: float | None = None) -> list[dict[str, Any]]:
        """The decision memory's summary per (workflow, state): examples, calibrated coverage at `error_bound`
        (default: the settings'), whether the bound held, why it abstains."""
        from .decide.summary import state_summaries

        return state_summaries(self.store, workflow, error_bound)

    def forget_decisions(self, workflow: str, state: str) -> int:
        """Forget every example of `state` in `workflow` (after the workflow changed there); how many."""
        from .decide.memory import DecisionMemory

        return DecisionMemory(self.store).forget_state(workflow, state)

    def pick_from_session(self, sessions: SessionStore, session_id: str, commands: str | None) -> Picked:
        """Commands of an imported session to keep as steps (`commands` as `3-7,9`, default every one that worked);
        a failed one is refused (UsageError)."""
        from .capture.from_session import pick

        return pick(sessions, session_id, commands)

    def edited_step_problem(self, edited: list[str], shown: list[str]) -> str | None:
        """What is wrong with a step a person wrote at the prompt (as a capture checks it), or None; steps among
        `shown` were rendered from the procedure and pass."""
        from pydantic import ValidationError

        from ..engine.shell_template import check_shell_template
        from ..errors import UsageError
        from .replay.runtime import as_template

        for number, command in enumerate(edited, 1):
            if command in shown:
                continue
            try:
                check_shell_template(as_template(ProcedureStep(command=command).command))
            except ValidationError as exc:
                return step_problem(number, exc)
            except UsageError as exc:
                return f"step {number}: {exc}"
        return None

    def remove_runs(self, runs: RunStore, ids: list[str], *, force: bool = False, dry_run: bool = False) -> Removal:
        """Delete these runs (exact ids) of `runs` with all their rows in one transaction, and their log files; a run
        a procedure, an alias or a kept run refers to stays, with why (waiting and running ones unless `force`)."""
        from .run_removal import remove_runs

        return remove_runs(runs, self.home, ids, force=force, dry_run=dry_run)

    def runs_older_than(self, runs: RunStore, cutoff: float) -> list[str]:
        """Runs of `runs` last updated before `cutoff` (epoch seconds), oldest first: what `runs prune` considers."""
        from .run_removal import older_than

        return older_than(runs, cutoff)

    # --- the view's, bridge's and heartbeat's view of the store

    _own_connection = False  # True from `own`: close() closes the connection too
    _learner: Learner | None = None  # with a connection of its own, the Learner its runs share
    _home_runs: Callable[[], RunStore] | None = None  # from `over`: where capture and replay runs are kept

    @classmethod
    def own(cls, home: str | Path | None = None) -> SkillStore:
        """A store with a connection of its own, which `close()` closes: for a server whose requests run in passing
        worker threads (the view), where the connection kept per home and thread would outlive them."""
        from ..home import resolve_home
        from .store.database import ProcedureDatabase

        skills = cls.__new__(cls)
        skills.home = resolve_home(str(home) if home is not None else None)
        skills.store = ProcedureDatabase(home=skills.home)  # or the PostgreSQL database in force
        skills.matcher = Matcher(skills.store)
        skills._runs = None
        skills._own_connection = True
        return skills

    @classmethod
    def over(
        cls, db: Database, home: str | Path | None = None, *, runs: Callable[[], RunStore] | None = None
    ) -> SkillStore:
        """A store over an opened `Database` (a `Home`'s), which `close()` leaves open; its capture and replay runs go
        to `runs()` when given (the caller closes that), else to a run store of its own."""
        from ..home import resolve_home
        from .store.database import ProcedureDatabase

        skills = cls.__new__(cls)
        skills.home = resolve_home(str(home) if home is not None else None)
        skills.store = ProcedureDatabase(db)
        skills.matcher = Matcher(skills.store)
        skills._runs = None
        skills._home_runs = runs
        skills._own_connection = True  # the store's own parts: it leaves the Database it was given open
        return skills

    # reading, for the view and the MCP tools

    def health_of(self, procedure_id: str, *, window: int = 10, version: int | None = None) -> ProcedureHealthReport:
        """One procedure's health over its last `window` executions (of `version`, when given)."""
        return self.store.health(procedure_id, window=window, version=version)

    def summary(self, procedure: CapturedProcedure) -> dict[str, Any]:
        """The procedure's row as `learn procedures --json` lists it."""
        from .store.stats import procedure_summary

        return procedure_summary(self.store, procedure)

    def versions(self, procedure_id: str) -> list[dict[str, Any]]:
        """Every version of the procedure, oldest first, each with when and why it was made."""
        return self.store.versions(procedure_id)

    def executions(self, procedure_id: str, *, limit: int | None = None) -> list[Execution]:
        """The procedure's recorded executions, newest first (at most `limit`)."""
        return self.store.executions(procedure_id, limit=limit)

    def replay_savings(self, procedure: CapturedProcedure) -> list[tuple[Execution, int, int]]:
        """(execution, tokens saved, LLM calls saved) for each execution that counts in the savings `stats` adds up."""
        from .face.reading import replay_savings

        return replay_savings(self.store, procedure)

    def decision_memory(self) -> dict[str, Any]:
        """The decision memory per workflow and state (`states`: examples, calibrated coverage, the bound held, why it
        abstains) and what its answers saved (`saved`)."""
        from .decide.summary import memory_savings, state_summaries

        return {"states": state_summaries(self.store), "saved": memory_savings(self.store)}

    def run_replays(self, run_ids: list[str]) -> dict[str, dict[str, Any]]:
        """For the replay runs among `run_ids`: the execution each recorded (procedure, version, outcome, and how many
        steps it replayed before it diverged or finished)."""
        from .face.reading import replays

        return replays(self.store, run_ids)

    @staticmethod
    def parameters(procedure: CapturedProcedure) -> list[str]:
        """The `{{ name }}` parameters its steps declare, in the order they first appear."""
        from .store.params import PARAMETER

        return list(dict.fromkeys(n for s in procedure.steps for n in PARAMETER.findall(s.command)))

    @staticmethod
    def step_shapes(procedure: CapturedProcedure) -> tuple[tuple[str, ...], ...] | None:
        """Its steps by program, sub-command, flags and operators, with paths, values and parameters set aside (what
        near-identical candidates share); None for a trajectory or a step the shell parser cannot read."""
        from .face.reading import step_shapes

        return step_shapes(procedure)

    @staticmethod
    def step(command: str, number: int = 1) -> ProcedureStep:
        """A shell command as step `number` of a procedure; refused (UsageError, naming the step and the field) when
        it cannot be one (a command over `MAX_COMMAND_CHARS`)."""
        from pydantic import ValidationError

        from ..errors import UsageError

        try:
            return ProcedureStep(command=command)
        except ValidationError as exc:
            raise UsageError(step_problem(number, exc)) from None

    @staticmethod
    def why_diverged(reason: str, stderr_tail: str | None) -> str:
        """A divergence's `reason` followed by the last line of the step's output tail, the line that most often says
        why."""
        from .replay.divergence import why

        return why(reason, stderr_tail)

    # writing, for the view's review, the MCP tools and Agent Skills import

    def claim(
        self,
        procedure_id: str,
        source: ClaimSource,
        by: str,
        *,
        successes: int = 0,
        failures: int = 0,
        note: str | None = None,
    ) -> CapturedProcedure:
        """`by` says the procedure worked (or failed) where this store did not see it: kept and shown beside the
        counts, never counted."""
        return self.store.add_claim(procedure_id, source, by, successes=successes, failures=failures, note=note)

    def known(self, procedure: CapturedProcedure) -> CapturedProcedure | None:
        """The stored procedure with the same steps (in its task type), else the one with its id; None when neither."""
        from .store.signatures import step_signature

        found = self.store.find_by_signature(step_signature(procedure.steps), procedure.task_type)
        if found is None and procedure.id:
            try:
                found = self.store.get(procedure.id)
            except Exception:  # noqa: BLE001  any lookup failure means: not stored here
                found = None
        return found

    def add_candidate(
        self,
        procedure: CapturedProcedure,
        source: ClaimSource,
        by: str,
        *,
        successes: int = 0,
        failures: int = 0,
        note: str | None = None,
    ) -> CapturedProcedure:
        """Steps this store did not see work, stored as a candidate for review whatever `procedure` says; what `by`
        claims of them is kept as a claim. The same steps already stored gain that claim, never a success."""
        stored, _ = self.store.add_candidate(procedure, source, by, successes=successes, failures=failures, note=note)
        return stored

    def index(self, procedures: list[CapturedProcedure]) -> str | None:
        """Embed these procedures into the matching index now; why not, when it cannot (matching then finds them by
        key terms)."""
        return Matcher(self.store).index_many(procedures)

    # the heartbeat's: mining, health, maintenance

    def mine(
        self,
        commands: Sequence[Any],
        *,
        history: Sequence[Any] | None = None,
        gap_secs: float | None = None,
        min_steps: int | None = None,
        max_steps: int | None = None,
        min_support: int | None = None,
    ) -> MiningResult:
        """Mine session commands new since the last mining: failures become learnings, known procedures gain claimed
        successes, routines in `history` (default: these commands) become candidates for review. An option left None
        is mining's default."""
        from .mine.mining import MiningOptions, mine

        default = MiningOptions()
        options = MiningOptions(
            default.gap_secs if gap_secs is None else gap_secs,
            default.min_steps if min_steps is None else min_steps,
            default.max_steps if max_steps is None else max_steps,
            default.min_support if min_support is None else min_support,
        )
        return mine(commands, self.store, options, history=history)

    def generation(self) -> int:
        """A number that changes whenever a procedure is added, changed or removed."""
        return self.store.generation()

    def changed_procedures(
        self, *, executions_after: int, generation: int | None, promoted_since: float, checked: Collection[str] = ()
    ) -> tuple[set[str], int]:
        """(ids, newest execution id): the procedures whose health may have moved since execution `executions_after`,
        and, when the store's generation is no longer `generation`, those not in `checked` and those promoted since
        `promoted_since`."""
        from .face.upkeep import changed_procedures

        return changed_procedures(self.store, executions_after, generation, promoted_since, checked)

    def recheck(self, procedure_id: str, *, window: int = 10) -> ProcedureHealthReport:
        """The procedure's health over its last `window` executions, kept; a `broken` one is pulled from replay and
        marked for re-learning."""
        report = self.store.health(procedure_id, window=window)
        if report.status == "broken":
            self.store.mark_needs_relearning(procedure_id, True)
        return report

    def sync_index(self) -> tuple[Literal["rebuilt", "updated"], int]:
        """Bring the matching index up to date with the store, rebuilding it when its file is gone: ("rebuilt" or
        "updated", how many procedures it holds). Raises when it cannot; the store, the truth, is unaffected."""
        from .face.upkeep import sync_index

        return sync_index(self.store)

    def sync_failures(self) -> int:
        """Embed the learned failures the planner's finder lacks now rather than on the next plan; returns how many."""
        from .replay.runtime import failure_finder

        return failure_finder(self.home).sync(force=True)

    def delete_executions_before(self, cutoff: float, *, keep_per_procedure: int = 50) -> int:
        """Retention: executions recorded before `cutoff` go, each procedure keeping its latest `keep_per_procedure`."""
        return self.store.delete_executions_before(cutoff, keep_per_procedure)

    def delete_runs_before(self, cutoff: float) -> int:
        """Retention: finished runs that ended before `cutoff` go, except those a procedure's execution, a capture or
        a kept parent refers to (as `runs prune` keeps them)."""
        from .run_removal import must_stay

        return self._run_store().delete_finished_before(cutoff, keep=must_stay)
