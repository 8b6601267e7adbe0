"""Procedures and learnings out to a `learn export` file's data, and back in as candidates for review."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ...redact import redact, redact_value
from ..match.failures import FailureFinder
from ..match.matcher import Matcher
from ..store.database import ProcedureDatabase
from ..store.models import CapturedLearning, CapturedProcedure
from ..store.signatures import step_signature

FORMAT = "sherpa-skills/procedures"
_BATCH = 256  # procedures embedded per call while indexing what was imported

Progress = Callable[[int, int], None]


@dataclass
class Imported:
    """What an import added (as candidates), skipped as already known, and refused (each as `procedures[i].field`)."""

    fresh: list[CapturedProcedure] = field(default_factory=list)
    skipped: int = 0
    problems: list[str] = field(default_factory=list)


def export_data(store: ProcedureDatabase) -> dict[str, Any]:
    """Every procedure (with its earlier versions) and learning, as `learn export` writes them."""
    return {
        "format": FORMAT,
        "version": 1,
        "procedures": [
            {
                **p.model_dump(mode="json"),
                "versions": [
                    store.get(p.id, v["version"]).model_dump(mode="json")
                    for v in store.versions(p.id)
                    if v["version"] != p.version
                ],
            }
            for p in store.procedures(status=None)
        ],
        "learnings": [x.model_dump(mode="json") for x in store.learnings(limit=100_000)],
    }


def import_data(
    store: ProcedureDatabase, data: dict[str, Any], file: str, file_name: str, progress: Progress | None = None
) -> Imported:
    """An export's procedures as candidates (known ones skipped), and its learnings; `file` is named in the claims."""
    done = Imported()
    listed = data.get("procedures") or []
    for i, raw in enumerate(listed):
        if progress is not None:
            progress(i, len(listed))
        try:
            proc = CapturedProcedure.model_validate({k: v for k, v in raw.items() if k != "versions"})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
            done.problems.append(f"procedures[{i}]{where}: {first['msg'].removeprefix('Value error, ')}")
            continue
        proc = as_imported(proc)  # a secret in a file is never stored, nor compared as a different procedure
        known = store.find_by_signature(step_signature(proc.steps), proc.task_type)
        exists = known is not None
        if not exists:
            try:
                store.get(proc.id)
                exists = True
            except Exception:
                exists = False
        if exists:
            done.skipped += 1
            continue
        # A file's counts are its author's word: kept as a claim, never counted; the steps wait for review.
        stored, _ = store.add_candidate(
            proc,
            "import",
            f"import:{file_name}",
            successes=proc.success_count + proc.claimed_successes,
            failures=proc.failure_count + proc.claimed_failures,
            note=f"imported from {file}",
        )
        done.fresh.append(stored)
    for raw in data.get("learnings") or []:
        try:
            learning = CapturedLearning.model_validate({**raw, "id": None})
            store.add_learning(
                learning.model_copy(update={k: redact(getattr(learning, k)) for k in ("command", "error", "about")})
            )
        except ValidationError:
            pass
    return done


def as_imported(proc: CapturedProcedure) -> CapturedProcedure:
    """A procedure from a file (an export, an Agent Skill) as this store keeps it: no secret left (a step's literal
    secret becomes an env var the step needs, as a person's capture makes it; its conditions, description, tags and
    context redacted), no mining record (how often it was seen is what this store's own mining says), and no planning
    cost (what a replay saved is what planning cost as this store saw it: a file's figure would be counted as saved)."""
    from ..capture.actions import secrets_to_env

    steps, named = [], set[str]()
    for step in proc.steps:
        command, names = secrets_to_env(step.command, named)
        named.update(names)
        env_vars = list(dict.fromkeys([*step.env_vars, *names]))
        steps.append(step.model_copy(update={"command": command, "env_vars": env_vars}))
    return proc.model_copy(
        update={
            "steps": steps,
            "preconditions": [redact(c) for c in proc.preconditions],
            "postconditions": [redact(c) for c in proc.postconditions],
            "description": redact(proc.description),
            "tags": [redact(t) for t in proc.tags],
            "context": redact_value({k: v for k, v in proc.context.items() if k != "mined"}),
            "planned_tokens": 0,
            "planned_llm_calls": 0,
        }
    )


def index_imported(
    store: ProcedureDatabase, matcher: Matcher, fresh: list[CapturedProcedure], progress: Progress | None = None
) -> str | None:
    """Embed imported procedures now, in batches (matching never silently falls back to words alone), and the
    imported learnings; the first index warning, or None."""
    warnings = []
    for i in range(0, len(fresh), _BATCH):
        if progress is not None:
            progress(i, len(fresh))
        warnings.append(matcher.index_many(fresh[i : i + _BATCH]))
    finder = FailureFinder(store)
    try:
        finder.sync()  # imported learnings are found by meaning on the next plan
    finally:
        finder.close()  # else chromadb holds the companion's files open for the rest of the process
    return next((w for w in warnings if w), None)
