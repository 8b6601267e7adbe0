"""What the skill store says about its procedures: the summary and detail rows `learn` and the browser view show, and
what replay saved (per execution, procedure, workflow and run)."""

from __future__ import annotations

from typing import Any


def procedure_summary(store: Any, p: Any) -> dict[str, Any]:
    health = store.health(p.id)
    return {
        "id": p.id,
        "task_type": p.task_type,
        "description": p.description,
        "version": p.version,
        "confidence": p.confidence,
        "success_count": p.success_count,
        "failure_count": p.failure_count,
        "claimed_successes": p.claimed_successes,
        "claimed_failures": p.claimed_failures,
        "health": health.status,
        "status": p.status,
        "source": p.source,
        "tags": p.tags,
        "kind": p.kind,
        "steps": len(p.steps),
        "decisions": len(p.decisions),
        "updated": p.updated,
    }


def procedure_detail(store: Any, p: Any) -> dict[str, Any]:
    """One procedure version as `learn show --json` prints it (and the browser view's /api/procedures/ID)."""
    from .answers import Answers
    from .branches import branches

    health = store.health(p.id, version=p.version)
    executions = store.executions(p.id, limit=10)
    answers = [a.model_dump(mode="json") for a in Answers(store).entries(p.id)]
    return {
        **p.model_dump(mode="json"),
        "health": health.model_dump(mode="json"),
        "versions": store.versions(p.id),
        "promotions": store.promotions(p.id),
        "claims": [c.model_dump(mode="json") for c in store.claims(p.id)],
        "aliases": [a for a in answers if a["kind"] == "alias"],
        "rejections": [a for a in answers if a["kind"] == "rejection"],
        "branches": branches(store, p.id) if p.kind == "trajectory" else [],
        "recent_executions": [e.model_dump(mode="json") for e in executions],
    }


def saved_by(planned: Any, tokens: int, llm_calls: int) -> tuple[int, int]:
    """(tokens, LLM calls) a run that followed `planned` saved: what planning that version cost, less what the run
    spent."""
    return max(0, planned.planned_tokens - tokens), max(0, planned.planned_llm_calls - llm_calls)


def savings(store: Any, p: Any, e: Any) -> tuple[int, int]:
    """(tokens, LLM calls) one recorded execution saved, against the version it followed."""
    v = store.get(p.id, e.version) if e.version != p.version else p
    return saved_by(v, e.tokens, e.llm_calls)


def saved_something(p: Any, e: Any) -> bool:
    """Whether an execution counts in the savings: a successful replay, or a trajectory's run that diverged and still
    finished (the LLM took over in the same run, after the replayed decisions; its execution holds the whole run's
    cost)."""
    return e.outcome == "success" or (p.kind == "trajectory" and e.outcome in ("diverged", "branch"))


def stats(store: Any) -> dict[str, Any]:
    """Tokens and LLM calls saved per procedure, per workflow (task type) and per run: every replay would otherwise have
    cost what the planned run cost."""
    per, runs = [], []
    for p in store.procedures(status=None):
        executions = store.executions(p.id)
        replays = [e for e in executions if e.outcome == "success"]
        counted = [e for e in executions if saved_something(p, e)]
        saved = [savings(store, p, e) for e in counted]
        per.append(
            {
                "procedure_id": p.id,
                "task_type": p.task_type,
                "kind": p.kind,
                "replays": len(replays),
                "diverged": sum(e.outcome in ("diverged", "branch") for e in executions),  # left the recording
                "dry_runs": sum(e.outcome == "dry-run" for e in executions),
                "planned_tokens": p.planned_tokens,
                "tokens_saved": sum(t for t, _ in saved),
                "llm_calls_saved": sum(c for _, c in saved),
            }
        )
        runs += [
            {
                "run_id": e.run_id,
                "procedure_id": p.id,
                "version": e.version,
                "task_type": p.task_type,
                "outcome": e.outcome,
                "started": e.started,
                "llm_calls": e.llm_calls,
                "tokens": e.tokens,
                "tokens_saved": t if saved_something(p, e) else 0,
                "llm_calls_saved": c if saved_something(p, e) else 0,
            }
            for e in executions
            if e.run_id
            for t, c in [savings(store, p, e)]
        ]
    workflows: dict[str, dict[str, Any]] = {}
    for x in per:
        w = workflows.setdefault(
            x["task_type"],
            {
                "task_type": x["task_type"],
                "procedures": 0,
                "replays": 0,
                "diverged": 0,
                "tokens_saved": 0,
                "llm_calls_saved": 0,
            },
        )
        w["procedures"] += 1
        for key in ("replays", "diverged", "tokens_saved", "llm_calls_saved"):
            w[key] += x[key]
    runs.sort(key=lambda r: r["started"])
    return {
        "procedures": len(per),
        "replays": sum(x["replays"] for x in per),
        "tokens_saved": sum(x["tokens_saved"] for x in per),
        "llm_calls_saved": sum(x["llm_calls_saved"] for x in per),
        "per_procedure": per,
        "per_workflow": [workflows[k] for k in sorted(workflows)],
        "per_run": runs,
    }
