"""What each page shows, as plain dicts built from the stores: the HTML templates and the /api twins read the same data.

Where the CLI has a `--json` shape for the same thing, the dict comes from the CLI's own builder,
so both stay one shape.
"""

from __future__ import annotations

import difflib
import json
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents.task_store import kept_team_tasks
from ..engine.run_json import run_detail, run_summary
from ..errors import SherpaError, StoreError
from ..skills.face.reading import candidate_summary
from .review import candidate_groups

if TYPE_CHECKING:
    from ..db.database import Database
    from ..engine.runstore import RunStore
    from ..heartbeat.state import HeartbeatState
    from ..skills.api import SkillStore
    from ..stores import Home

PER_PAGE = 50
TAIL = 200  # trajectory and log entries a run page shows unless asked for all
LIVE = ("running", "waiting")


@dataclass
class Stores:
    """The home's stores, opened once per server from a `Home` per folder: the run store, the skill store and the
    heartbeat's rows; and where the memory pages open theirs."""

    home: Path
    runs: RunStore
    skills: SkillStore
    heartbeat: HeartbeatState
    memory_home: Path
    domains_home: Path
    homes: list[Home] = field(default_factory=list)  # what close() closes

    @classmethod
    def open(cls, home: Path, elsewhere: dict[str, Path] | None = None) -> Stores:
        """Each part (runs, skills, heartbeat, memory, domains) from `home`, or from the folder `elsewhere` names."""
        from ..heartbeat.state import HeartbeatState
        from ..stores import Home

        where = {**dict.fromkeys(("runs", "skills", "heartbeat", "memory", "domains"), home), **(elsewhere or {})}
        homes: dict[Path, Home] = {}

        def house(part: str) -> Home:
            # Only folders a part is read from: a Home creates its folder.
            if where[part] not in homes:
                homes[where[part]] = Home(where[part])
            return homes[where[part]]

        return cls(
            home,
            house("runs").runs,
            house("skills").skills,
            HeartbeatState(house("heartbeat").database),
            where["memory"],
            where["domains"],
            list(homes.values()),
        )

    def close(self) -> None:
        self.heartbeat.close()
        for house in self.homes:
            house.close()


# ---------------------------------------------------------------- runs


def runs_page(
    stores: Stores,
    *,
    status: str | None = None,
    workflow: str | None = None,
    q: str | None = None,
    page: int = 1,
    per_page: int = PER_PAGE,
) -> dict[str, Any]:
    """One page of the runs table, newest first, with the filters that produced it."""
    page = max(1, page)
    rows, total = stores.runs.search_runs(
        status=status or None, workflow=workflow or None, text=q or None, offset=(page - 1) * per_page, limit=per_page
    )
    replays = stores.skills.run_replays([r.run_id for r in rows])
    children = child_runs(stores, [r.run_id for r in rows])
    now = time.time()
    items = []
    for r in rows:
        item = run_summary(r)
        item.update(
            tokens=r.counters.get("tokens", 0),
            age=_age(now - r.created),
            replay=replays.get(r.run_id),
            duration_s=(now if r.status in LIVE else r.updated) - r.created,
            inputs_text=", ".join(f"{k}={v}" for k, v in r.inputs.items() if v not in (None, "")),
            children=children.get(r.run_id, []),
        )
        items.append(item)
    return {
        "runs": items,
        "total": total,
        "page": page,
        "per_page": per_page,
        "pages": max(1, -(-total // per_page)),
        "filters": {"status": status or "", "workflow": workflow or "", "q": q or ""},
        "workflows": stores.runs.workflows(),
        "statuses": ["running", "waiting", "interrupted", "final", "error"],
    }


def child_runs(stores: Stores, run_ids: list[str]) -> dict[str, list[str]]:
    """The runs each of `run_ids` started with `run_machine` (replay, capture), from the results it logged."""
    import json

    if not run_ids:
        return {}
    marks = ",".join("?" * len(run_ids))
    out: dict[str, list[str]] = {}
    for run_id, outputs in stores.runs.conn.execute(
        f"SELECT run_id, outputs FROM run_log WHERE action = 'run_machine' AND run_id IN ({marks}) ORDER BY id",
        run_ids,
    ):
        try:
            child = json.loads(outputs or "null")
        except ValueError:
            continue
        if isinstance(child, dict) and isinstance(child.get("run_id"), str):
            out.setdefault(run_id, []).append(child["run_id"])
    return out


def parent_run(stores: Stores, run_id: str) -> tuple[str, int] | None:
    """(run, step) whose `run_machine` action started `run_id`, or None for a run started from outside."""
    return started_by(stores.runs.db, run_id)


def started_by(db: Database, run_id: str) -> tuple[str, int] | None:
    """(run, step) of `db`'s run log whose `run_machine` result names `run_id`, or None."""
    # No index on the child id inside the logged result: a scan of run_machine rows, once per run page.
    row = db.conn.execute(
        f"SELECT run_id, tick FROM run_log WHERE action = 'run_machine' AND {db.json_valid('outputs')} AND "
        f"{db.json_text('outputs', 'run_id')} = ? ORDER BY id LIMIT 1",
        (run_id,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def run_detail_json(stores: Stores, run_id: str) -> dict[str, Any]:
    """One run exactly as `show --json` prints it."""
    row = stores.runs.get_run(run_id)
    return run_detail(row, stores.runs.load_belief(row.run_id))


def waiting_options(machine: Any, state: str, belief: Any) -> dict[str, Any]:
    """What a waiting run can take: the transitions out of its state (those whose guards pass now marked ready)
    and its inputs."""
    leaf = machine.leaf_index.get(state)
    triggers: list[dict[str, Any]] = []
    if leaf is not None:
        try:
            ready = {e.trigger for e in machine.available(leaf, belief.view())}
        except SherpaError:
            ready = set()
        seen: set[str] = set()
        for edge in machine.edges[leaf]:
            if edge.trigger in seen:
                continue
            seen.add(edge.trigger)
            triggers.append(
                {
                    "trigger": edge.trigger,
                    "description": edge.description,
                    "dest": edge.dest,
                    "ready": edge.trigger in ready,
                    "arguments": {name: a.model_dump(mode="json") for name, a in edge.arguments.items()},
                }
            )
    inputs = {name: spec.model_dump(mode="json") for name, spec in machine.spec.inputs.items()}
    return {"triggers": triggers, "inputs": inputs}


@lru_cache(maxsize=64)
def _load(path: str, mtime: float) -> Any:
    from ..engine.workflow import load_workflow

    return load_workflow(path).machine


def machine_of(path: str | None) -> Any:
    """The compiled machine a run was started from, while its file still loads (cached per file version)."""
    if not path:
        return None
    try:
        return _load(path, Path(path).stat().st_mtime)
    except Exception:  # a moved or broken workflow file: the page says so instead of failing
        return None


def run_state(stores: Stores, run_id: str) -> dict[str, Any]:
    """The few fields a live page polls to know whether the run moved."""
    row = stores.runs.get_run(run_id)
    return {
        "run_id": row.run_id,
        "status": row.status,
        "state": row.state,
        "tick": row.tick,
        "updated": row.updated,
        "steps": row.counters.get("steps", 0),
    }


# ---------------------------------------------------------------- procedures


def procedures_page(stores: Stores) -> dict[str, Any]:
    """Every procedure with its health and recent outcomes, the candidates awaiting review,
    and the tokens replay saved."""
    store = stores.skills
    items: list[dict[str, Any]] = []
    candidates: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []  # rejected or retired: not active (as `learn procedures` counts), not to review
    every: list[dict[str, Any]] = []
    to_review: list[tuple[Any, dict[str, Any]]] = []
    saved_by_day: dict[str, dict[str, Any]] = {}
    for p in store.procedures(include_candidates=True):
        summary = store.summary(p)
        health = store.health_of(p.id)
        executions = store.executions(p.id, limit=20)
        summary.update(
            rolling_success_rate=health.rolling_success_rate,
            total_executions=health.total_executions,
            recent=[e.outcome for e in reversed(executions)],
        )
        every.append(summary)
        {"active": items, "candidate": candidates}.get(p.status, others).append(summary)
        if p.status == "candidate":
            # What `learn candidates` shows a reviewer: the commands, what varies (with examples), where it was seen.
            to_review.append((p, {**summary, "review": candidate_summary(p)}))
        for e, tokens, calls in store.replay_savings(p):
            day = time.strftime("%Y-%m-%d", time.localtime(e.started))
            bucket = saved_by_day.setdefault(day, {"day": day, "tokens_saved": 0, "llm_calls_saved": 0})
            bucket["tokens_saved"] += tokens
            bucket["llm_calls_saved"] += calls
    return {
        "procedures": items,
        "candidates": candidates,
        "others": others,
        "all": every,  # as `learn procedures --all` lists them (the API's order)
        "review": candidate_groups(to_review),  # the queue a person works through: grouped, most supported first
        "stats": store.stats(),
        "saved_by_day": [saved_by_day[d] for d in sorted(saved_by_day)],
    }


def decisions_page(stores: Stores) -> dict[str, Any]:
    """The decision memory per workflow and state (examples, calibrated coverage, the bound held, why it abstains)
    and what its answers saved: the data of a decision-memory page (served as /api/decisions)."""
    return stores.skills.decision_memory()


def procedure_page(stores: Stores, procedure_id: str, version: int | None = None) -> dict[str, Any]:
    """One procedure: the `learn show --json` data, every version's steps and what changed between them,
    its executions."""
    store = stores.skills
    p = store.get(procedure_id, version)
    detail = store.show(p.id, p.version).detail
    versions = []
    previous: list[str] | None = None
    for v in store.versions(p.id):
        recorded = store.get(p.id, v["version"])
        # A trajectory's steps are its decisions: where, what, with which (parametrised) arguments.
        steps = [s.command for s in recorded.steps] or [
            f"in {d.state}: {d.trigger}" + (f" {json.dumps(d.args, sort_keys=True)}" if d.args else "")
            for d in recorded.decisions
        ]
        change = (
            None
            if previous is None
            else [
                line
                for line in difflib.unified_diff(previous, steps, lineterm="", n=0)
                if not line.startswith(("---", "+++", "@@"))
            ]
        )
        versions.append({**v, "steps": steps, "changes": change})
        previous = steps
    executions = [e.model_dump(mode="json") for e in store.executions(p.id, limit=100)]
    return {"procedure": detail, "versions": versions, "executions": executions}


# ---------------------------------------------------------------- heartbeat


def heartbeat_page(stores: Stores, last: int = 20) -> dict[str, Any]:
    """The latest heartbeat reports (as `heartbeat report --json` lists them) and the watermark they left."""
    from ..heartbeat.phases import WATERMARK

    reports = [{k: v for k, v in r.items() if k != "markdown"} for r in stores.heartbeat.reports(last)]
    return {"reports": reports, "watermark": stores.heartbeat.get(WATERMARK, 0)}


# ---------------------------------------------------------------- teams


def teams_page(stores: Stores, limit: int = 500) -> dict[str, Any]:
    """Multi-agent tasks: the runs named AGENT.TASK (one per agent and task), grouped by task, each with its team's
    name, what it was asked and its answer."""
    rows, _ = stores.runs.search_runs(id_contains=".", limit=limit)
    tasks: dict[str, dict[str, Any]] = {}
    by_task: dict[str, list[Any]] = {}
    for r in rows:
        agent, _, task = r.run_id.partition(".")
        t = tasks.setdefault(task, {"task": task, "agents": [], "statuses": [], "updated": r.updated})
        t["agents"].append(agent)
        t["statuses"].append(r.status)
        t["updated"] = max(t["updated"], r.updated)
        by_task.setdefault(task, []).append(r)
    kept = kept_team_tasks(stores.runs.db, list(tasks))  # read, never migrated: the view may be read-only
    for task, t in tasks.items():
        about = _team_task(stores, kept.get(task), by_task[task])
        t.update(team=about["team"], asked=about["asked"], answer=about["answer"])
    return {"teams": sorted(tasks.values(), key=lambda t: -t["updated"])}


def _team_task(stores: Stores, record: dict[str, Any] | None, rows: list[Any]) -> dict[str, Any]:
    """A task's team name, what it was asked (the first event's name and payload, and the team's inputs) and its
    answer: the team file's `output` (AGENT.KEY) read from that agent's run, else the last value the task's latest run
    wrote. Without a kept record (a task run before teams were kept), the earliest event any agent consumed is the
    question."""
    from ..agents.team import run_id_for
    from ..engine.belief import lookup

    answer: dict[str, Any] = {"value": None, "from": None, "run_id": None}
    task = rows[0].run_id.partition(".")[2]
    first: dict[str, Any]
    if record is not None:
        first = (record.get("events") or [{}])[0]
        asked = {"event": first.get("name"), "payload": first.get("payload", {}), "inputs": record.get("inputs", {})}
        output = record.get("output")
        if output:
            agent, _, key = output.partition(".")
            run_id = run_id_for(agent, task)
            if stores.runs.has_run(run_id):
                value = lookup(stores.runs.load_belief(run_id, 0).context, key, None)
                answer = {"value": value, "from": output, "run_id": run_id}
    else:
        consumed = [e["event"] for r in rows for e in stores.runs.run_events(r.run_id, "in")[:1]]
        first = min(consumed, key=lambda e: e.get("timestamp", 0.0), default={})
        asked = {"event": first.get("name"), "payload": first.get("payload", {}), "inputs": {}}
    if answer["value"] is None:
        latest = max(rows, key=lambda r: r.updated)
        found = stores.runs.conn.execute(
            "SELECT key, value FROM run_context WHERE run_id = ? ORDER BY id DESC LIMIT 1", (latest.run_id,)
        ).fetchone()
        if found is not None:
            answer = {
                "value": _loads(found[1]),
                "from": f"{latest.run_id.partition('.')[0]}.{found[0]}",
                "run_id": latest.run_id,
            }
    return {"team": record.get("name") if record else None, "record": record, "asked": asked, "answer": answer}


def _loads(text: str | None) -> Any:
    import json

    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return text


def team_page(stores: Stores, task: str) -> dict[str, Any]:
    """One task across agents: its team, question and answer, the team drawn as it ran, every delivery in order (who
    sent what to whom, and what came of it) and each agent's run."""
    rows, _ = stores.runs.search_runs(id_contains=f".{task}", limit=1000)
    rows = [r for r in rows if r.run_id.partition(".")[2] == task]
    if not rows:
        raise StoreError(f"no multi-agent task '{task}' in {stores.runs.path}; the teams page lists them")
    deliveries = []
    for r in rows:
        agent = r.run_id.partition(".")[0]
        outs = stores.runs.run_events(r.run_id, "out")
        ins = stores.runs.run_events(r.run_id, "in")
        # What a delivery emitted: the run's events out from its tick up to the next delivery's.
        bounds = [c["tick"] for c in ins[1:]] + [None]
        for consumed, until in zip(ins, bounds, strict=True):
            e = consumed["event"]
            sent = [
                o["event"].get("name")
                for o in outs
                if o["tick"] >= consumed["tick"] and (until is None or o["tick"] < until)
            ]
            deliveries.append(
                {
                    "event_id": e.get("id"),
                    "name": e.get("name"),
                    "sender": e.get("sender"),
                    "topic": e.get("topic"),
                    "recipient": e.get("recipient"),
                    "correlation_id": e.get("correlation_id"),
                    "agent": agent,
                    "run_id": r.run_id,
                    "outcome": consumed["outcome"],
                    "emitted": sent,
                    "tick": consumed["tick"],
                    "timestamp": e.get("timestamp", 0.0),
                }
            )
    deliveries.sort(key=lambda d: (d["timestamp"], d["tick"]))
    runs = {r.run_id.partition(".")[0]: run_summary(r) for r in rows}
    about = _team_task(stores, kept_team_tasks(stores.runs.db, [task]).get(task), rows)
    record = about["record"] or {}
    return {
        "task": task,
        "team": about["team"],
        "description": record.get("description", ""),
        "team_file": record.get("path"),
        "asked": about["asked"],
        "answer": about["answer"],
        "diagram": record.get("mermaid"),
        "deliveries": deliveries,
        "runs": runs,
    }


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
