"""Multi-agent workflows: a YAML file declaring several agents and the first event,
run in one process over the in-process bus.

Each agent handles each task (correlation id) in its own durable run, so a later event for the same task resumes it.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..engine.events import Event, EventError, parse_event
from ..engine.inputs import check_inputs
from ..engine.spec import NAME_RE, InputSpec
from ..errors import Problem, RunError, UsageError, WorkflowError
from ..yaml_source import Loc, Located, load_yaml_file
from .bus import InProcessBus, Published

if TYPE_CHECKING:
    from ..engine.agent import Agent, RunResult
    from ..engine.hooks import RunHook
    from ..engine.runstore import RunStore
    from ..engine.workflow import Workflow

__all__ = [
    "AgentHost",
    "AgentSpec",
    "Delivery",
    "EventSpec",
    "Team",
    "TeamMember",
    "TeamResult",
    "TeamRunner",
    "TeamSpec",
    "is_team_file",
    "load_team",
    "run_id_for",
]

log = structlog.get_logger("sherpa_skills.agents.team")

_OVERRIDES = ("policy", "llm", "imports", "context", "max_steps", "domain")
_PLAIN_ID = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


# ---------------------------------------------------------------- the file format


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentSpec(_Strict):
    """One agent of a team: a workflow (a file beside the team file, or inline),
    the topics it hears, optional overrides."""

    workflow: str | dict[str, Any] = Field(
        description="a workflow file (relative to the team file) or a workflow written inline"
    )
    subscribe: list[str] = Field(
        default_factory=list, description="topics this agent receives; direct events (recipient) always reach it"
    )
    policy: dict[str, Any] | None = Field(default=None, description="replaces the workflow's `policy`")
    llm: dict[str, Any] | None = Field(default=None, description="replaces the workflow's `llm`")
    imports: list[str] | None = Field(default=None, description="replaces the workflow's `imports`")
    context: dict[str, Any] | None = Field(
        default=None, description="added to the workflow's `context` (these values win)"
    )
    max_steps: int | None = Field(default=None, ge=1, description="replaces the workflow's `max_steps`")
    domain: str | None = Field(default=None, description="replaces the workflow's `domain`")

    @field_validator("subscribe", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class EventSpec(_Strict):
    """An event written in YAML; string values in the payload may use the team's inputs as jinja2 (`{{ task }}`)."""

    name: str = Field(description="the event's name: the trigger it fires in the agent that receives it")
    topic: str | None = Field(default=None, description="delivered to every agent subscribed to this topic")
    recipient: str | None = Field(default=None, description="delivered to this agent only")
    payload: dict[str, Any] = Field(default_factory=dict, description="the trigger's arguments")
    sender: str = Field(default="operator", description="who sends it")
    correlation_id: str | None = Field(default=None, description="ties the events of one conversation together")
    id: str | None = Field(default=None, description="the event's id (default: a new one)")


class TeamSpec(_Strict):
    """A whole multi-agent file: named agents, the inputs the first event may use, and the first event(s)."""

    name: str = Field(description="the team's name")
    description: str = Field(default="", description="what the team is for")
    inputs: dict[str, InputSpec] = Field(default_factory=dict, description="what `--input` may give the first event")
    agents: dict[str, AgentSpec] = Field(description="the agents by name")
    initial_event: EventSpec | list[EventSpec] | None = Field(
        default=None, description="the event (or events) sent when the team starts"
    )
    max_events: int = Field(
        default=1000, ge=1, description="stop with an error after this many deliveries (a loop guard)"
    )
    output: str | None = Field(
        default=None, description="AGENT.KEY: the context value of that agent's run that is the team's answer"
    )

    def initial_events(self) -> list[EventSpec]:
        if self.initial_event is None:
            return []
        return self.initial_event if isinstance(self.initial_event, list) else [self.initial_event]


@dataclass
class TeamMember:
    name: str
    workflow: Any  # sherpa_skills.engine.workflow.Workflow
    subscribe: list[str]


@dataclass
class Team:
    """A loaded, checked team file."""

    spec: TeamSpec
    members: dict[str, TeamMember]
    path: Path | None

    @property
    def name(self) -> str:
        return self.spec.name

    def initial_events(self, inputs: dict[str, Any] | None = None) -> list[Event]:
        """The file's first event(s), payload strings rendered with the inputs (defaults filled, required checked)."""
        given = check_inputs(self.spec, dict(inputs or {}), starting=False, allow_unknown=True)
        values = {n: d.default for n, d in self.spec.inputs.items() if d.default is not None} | given
        missing = [n for n, d in self.spec.inputs.items() if d.required and n not in values]
        if missing:
            raise UsageError(
                f"team '{self.name}' needs input {', '.join(repr(m) for m in missing)}; pass it with --input NAME=VALUE"
            )
        return [_build_event(e, values) for e in self.spec.initial_events()]


@dataclass
class _Overlay(Located):
    """A workflow's YAML with team-file overrides on top: problems in overridden keys point into the team file."""

    team: Located | None = None
    prefix: tuple[Any, ...] = ()
    keys: frozenset[str] = frozenset()

    def problem(self, loc: Loc, message: str) -> Problem:
        loc = tuple(loc)
        if loc and loc[0] in self.keys and self.team is not None:
            return self.team.problem(self.prefix + loc, message)
        return super().problem(loc, message)


def is_team_file(path: str | Path) -> bool:
    """A multi-agent file is a mapping with `agents:`; anything else is left to the workflow loader."""
    try:
        source = load_yaml_file(path)
    except WorkflowError:
        return False
    return isinstance(source.data, dict) and "agents" in source.data


def load_team(path: str | Path) -> Team:
    """Load a team file and every agent's workflow; raises WorkflowError listing every problem as FILE:LINE."""
    from ..engine.workflow import _pydantic_problems, load_workflow_source
    from ..runtime import SHIPPED_HOOKS

    path = Path(path).resolve()
    source = load_yaml_file(path)
    if not isinstance(source.data, dict):
        raise WorkflowError([source.problem((), "a multi-agent file is a mapping with name, agents and initial_event")])
    try:
        spec = TeamSpec.model_validate(source.data)
    except ValidationError as exc:
        raise WorkflowError(_pydantic_problems(exc, source)) from None
    problems: list[Problem] = []
    members: dict[str, TeamMember] = {}
    for name, agent in spec.agents.items():
        where = ("agents", name)
        if not NAME_RE.match(str(name)):
            problems.append(source.problem(where, f"agent name '{name}' must be a name (letters, digits, _ and -)"))
            continue
        for i, topic in enumerate(agent.subscribe):
            if not topic or any(c.isspace() for c in topic):
                problems.append(source.problem((*where, "subscribe", i), f"topic '{topic}' must be a non-empty word"))
        located, file_path = _agent_source(path, source, name, agent, problems)
        if located is None:
            continue
        try:
            workflow = load_workflow_source(located, path=file_path, hooks=SHIPPED_HOOKS)
        except WorkflowError as exc:
            problems.extend(exc.problems)
            continue
        members[name] = TeamMember(name, workflow, list(agent.subscribe))
    if not spec.agents:
        problems.append(source.problem(("agents",), "a team needs at least one agent"))
    problems += _check_initial_events(spec, source)
    if spec.output is not None and spec.output.partition(".")[0] not in spec.agents:
        problems.append(
            source.problem(
                ("output",),
                f"output '{spec.output}' must be AGENT.KEY with an agent of this file ({', '.join(spec.agents)})",
            )
        )
    if problems:
        raise WorkflowError(problems)
    return Team(spec, members, path)


def _agent_source(
    team_path: Path, team: Located, name: str, agent: AgentSpec, problems: list[Problem]
) -> tuple[Located | None, Path]:
    where = ("agents", name)
    if isinstance(agent.workflow, str):
        file_path = (team_path.parent / agent.workflow).resolve()
        if not file_path.is_file():
            problems.append(
                team.problem(
                    (*where, "workflow"), f"workflow file '{agent.workflow}' not found beside {team_path.name}"
                )
            )
            return None, file_path
        try:
            base = load_yaml_file(file_path)
        except WorkflowError as exc:
            problems.extend(exc.problems)
            return None, file_path
    else:
        file_path = team_path
        prefix = (*where, "workflow")
        lines = {loc[len(prefix) :]: line for loc, line in team.lines.items() if loc[: len(prefix)] == prefix}
        base = Located(agent.workflow, team.file, lines)
    if not isinstance(base.data, dict):
        problems.append(base.problem((), "a workflow must be a mapping with name, initial and states"))
        return None, file_path
    data = dict(base.data)
    keys = []
    for key in _OVERRIDES:
        value = getattr(agent, key)
        if value is None:
            continue
        keys.append(key)
        data[key] = {**(data.get("context") or {}), **value} if key == "context" else value
    return _Overlay(data, base.file, base.lines, team=team, prefix=where, keys=frozenset(keys)), file_path


def _check_initial_events(spec: TeamSpec, source: Located) -> list[Problem]:
    problems = []
    placeholders = {n: d.default if d.default is not None else f"<{n}>" for n, d in spec.inputs.items()}
    topics = {t for a in spec.agents.values() for t in a.subscribe}
    many = isinstance(spec.initial_event, list)
    for i, e in enumerate(spec.initial_events()):
        loc = ("initial_event", i) if many else ("initial_event",)
        try:
            event = _build_event(e, placeholders)
        except (EventError, UsageError) as exc:
            problems.append(source.problem(loc, str(exc)))
            continue
        if event.recipient is not None and event.recipient not in spec.agents:
            problems.append(
                source.problem(
                    (*loc, "recipient"), f"no agent named '{event.recipient}' (agents: {', '.join(spec.agents)})"
                )
            )
        elif event.recipient is None and event.topic not in topics:
            problems.append(
                source.problem(
                    (*loc, "topic"),
                    f"no agent subscribes to topic '{event.topic}' (topics: {', '.join(sorted(topics)) or 'none'})",
                )
            )
    return problems


def _build_event(spec: EventSpec, values: dict[str, Any]) -> Event:
    data = spec.model_dump(exclude_none=True)
    data["payload"] = _render(data.get("payload", {}), values)
    return parse_event(data)


def _render(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _render(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, values) for v in value]
    if isinstance(value, str) and "{{" in value:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import SandboxedEnvironment

        try:
            return SandboxedEnvironment(undefined=StrictUndefined).from_string(value).render(values)
        except Exception as exc:
            raise UsageError(f"initial event payload '{value}': {exc}") from None
    return value


# ---------------------------------------------------------------- one agent, many tasks


def run_id_for(agent: str, correlation_id: str) -> str:
    """The run that handles one task for one agent:
    readable when the correlation id is a plain word, hashed otherwise."""
    cid = (
        correlation_id if _PLAIN_ID.match(correlation_id) else hashlib.sha256(correlation_id.encode()).hexdigest()[:16]
    )
    return f"{agent}.{cid}"


@dataclass
class Delivery:
    """One event handed to one agent, and what came of it."""

    event: Event
    agent: str
    run_id: str
    outcome: str  # handled | duplicate | unavailable | invalid | error
    reason: str | None = None
    status: str = ""
    state: str = ""
    emitted: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        e = self.event
        return {
            "event_id": e.id,
            "name": e.name,
            "sender": e.sender,
            "topic": e.topic,
            "recipient": e.recipient,
            "correlation_id": e.correlation_id,
            "agent": self.agent,
            "run_id": self.run_id,
            "outcome": self.outcome,
            "reason": self.reason,
            "status": self.status,
            "state": self.state,
            "emitted": [x["name"] for x in self.emitted],
        }


class AgentHost:
    """One named agent of a team: a durable run per task (correlation id), resumed from the store when not in memory."""

    def __init__(
        self,
        name: str,
        workflow: Workflow,
        store: RunStore | None = None,
        *,
        model: str | None = None,
        max_cached: int = 256,
        hooks: Sequence[RunHook] = (),
    ):
        self.name, self.workflow, self.store, self.model = name, workflow, store, model
        self.max_cached = max_cached
        #: Hooks given to each task's agent besides its workflow's (a relay, a tracer): they see each run's steps.
        self.hooks = tuple(hooks)
        self.last: OrderedDict[str, RunResult] = OrderedDict()  # correlation id -> latest RunResult
        self._agents: OrderedDict[str, Agent] = OrderedDict()

    def agent(self, correlation_id: str) -> Agent:
        """The task's agent: in memory, else resumed from the store, else a new run. A member whose workflow learns
        matches its task (what the event that starts its run carries) and is captured, like any run."""
        found = self._agents.get(correlation_id)
        if found is not None:
            self._agents.move_to_end(correlation_id)
            return found
        run_id = run_id_for(self.name, correlation_id)
        wf = self.workflow
        if self.store is not None and self.store.has_run(run_id):
            agent = wf.resume(self.store, run_id, model=self.model, name=self.name)
        else:  # the member's name is its identity (shared memory, domains), whichever workflow it runs
            agent = wf.agent(store=self.store, run_id=run_id, model=self.model, name=self.name)
        agent.sender, agent.correlation_id = self.name, correlation_id
        for hook in self.hooks:
            agent.add_hook(hook)
        self._agents[correlation_id] = agent
        if (
            self.store is not None and len(self._agents) > self.max_cached
        ):  # only durable runs can be evicted and resumed
            self._agents.popitem(last=False)
        return agent

    def deliver(self, event: Event) -> Delivery:
        agent = self.agent(event.correlation_id or event.id)
        return self._delivery(event, agent, agent.handle(event))

    async def adeliver(self, event: Event) -> Delivery:
        agent = self.agent(event.correlation_id or event.id)
        return self._delivery(event, agent, await agent.ahandle(event))

    def _delivery(self, event: Event, agent: Agent, result: RunResult) -> Delivery:
        emitted, agent.outbox = list(agent.outbox), []
        task = event.correlation_id or event.id  # the key `agent()` filed this agent under (its correlation_id)
        report = result.event or {}
        outcome, reason = report.get("outcome", "error"), report.get("reason")
        if result.status == "error":
            outcome, reason = "error", result.error
            self._agents.pop(task, None)  # rebuilt from the store next time, not from a half-ticked object
        self.last[task] = result
        self.last.move_to_end(task)
        while len(self.last) > self.max_cached:
            self.last.popitem(last=False)
        return Delivery(event, self.name, agent.run_id, outcome, reason, result.status, result.state, emitted)

    def relay(self, publish: Callable[[dict[str, Any]], object], delivery: Delivery | None = None) -> int:
        """Hand what this agent's runs emitted and committed to `publish`, each event once even with relays on other
        machines (see RunStore.relay): the outbox of `delivery`'s run, or, without one, of all its runs (what a
        process that died before publishing left). Returns how many were published here."""
        if delivery is not None and not delivery.emitted:
            return 0
        if self.store is None:  # no store, no outbox to share: what the delivery emitted goes straight out
            for body in delivery.emitted if delivery is not None else []:
                publish(body)
            return len(delivery.emitted) if delivery is not None else 0
        if delivery is None:
            return self.store.relay(publish, f"{self.name}.")
        return self.store.relay(publish, run_id=delivery.run_id, live={b["id"]: b for b in delivery.emitted})


# ---------------------------------------------------------------- a whole team in one process


@dataclass
class TeamResult:
    """How a team run ended: every delivery in order, what was refused or unroutable, and each agent's runs."""

    team: str
    status: str  # done | error
    deliveries: list[Delivery]
    counters: dict[str, int]
    problems: list[dict[str, Any]]
    runs: dict[str, dict[str, Any]]  # agent -> correlation id -> RunResult
    error: str | None = None
    duration_ms: float = 0.0
    output: Any = None  # the team file's `output` (AGENT.KEY) read from that agent's run for the first task

    def sequence(self) -> list[tuple[str, str, str]]:
        """(sender, event name, receiving agent) in delivery order: the conversation at a glance."""
        return [(d.event.sender, d.event.name, d.agent) for d in self.deliveries]

    def to_dict(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "status": self.status,
            "error": self.error,
            "counters": self.counters,
            "deliveries": [d.to_dict() for d in self.deliveries],
            "problems": self.problems,
            "runs": {a: {cid: r.to_dict() for cid, r in runs.items()} for a, runs in self.runs.items()},
            "output": self.output,
            "duration_ms": round(self.duration_ms, 3),
        }


class TeamRunner:
    """Runs every agent of a team in this process:
    deliver events in FIFO order until none is pending (or max_events)."""

    def __init__(
        self,
        team: Team,
        *,
        store: RunStore | None = None,
        bus: InProcessBus | None = None,
        model: str | None = None,
        max_events: int | None = None,
        on_delivery: Callable[[Delivery], None] | None = None,
        on_problem: Callable[[Published], None] | None = None,
    ):
        self.team = team
        self.store = store
        self.bus = bus or InProcessBus()
        self.max_events = max_events or team.spec.max_events
        self.on_delivery, self.on_problem = on_delivery, on_problem
        self.hosts = {name: AgentHost(name, m.workflow, store, model=model) for name, m in team.members.items()}
        for name, member in team.members.items():
            self.bus.register(name, member.subscribe)
        self.deliveries: list[Delivery] = []
        self.tasks: list[str] = []  # correlation ids of the events sent from outside, in order
        self.counters = dict.fromkeys(("delivered", "handled", "duplicate", "unavailable", "invalid", "error"), 0)

    def send(self, event: Event | dict[str, Any]) -> Published:
        """Publish an event from outside the team (an operator, a test)."""
        published = self.bus.publish(event)
        if published.event is not None and published.event.correlation_id not in self.tasks:
            self.tasks.append(published.event.correlation_id)  # type: ignore[arg-type]
        if not published.ok and self.on_problem is not None:
            self.on_problem(published)
        return published

    def _start(self, inputs: dict[str, Any] | None, events: list[Event] | None) -> None:
        for host in self.hosts.values():  # a previous process committed these but died before publishing them
            host.relay(self.send)
        first = self.team.initial_events(inputs) if events is None else events
        self._keep_tasks(first, inputs)
        for event in first:
            self.send(event)

    def _keep_tasks(self, events: list[Event], inputs: dict[str, Any] | None) -> None:
        """Record each new task's team, inputs, first events and drawing, so the run store (and the browser view) can
        tell a team's task by name, question and answer, not only by the agents' runs."""
        if self.store is None:
            return
        from .diagram import team_to_mermaid
        from .task_store import TaskStore

        spec = self.team.spec
        record = {
            "name": spec.name,
            "description": spec.description,
            "path": str(self.team.path) if self.team.path else None,
            "agents": {name: m.workflow.spec.name for name, m in self.team.members.items()},
            "inputs": dict(inputs or {}),
            "output": spec.output,
            "mermaid": team_to_mermaid(self.team),
        }
        tasks = TaskStore(self.store.db)  # kept in the run store's database, beside the agents' runs
        for cid in dict.fromkeys(e.correlation_id or e.id for e in events):
            body = [e.body() for e in events if (e.correlation_id or e.id) == cid]
            tasks.record_team_task(cid, spec.name, {**record, "events": body})

    def _next(self) -> tuple[AgentHost, Event] | None:
        if not self.bus.pending():
            return None
        if self.counters["delivered"] >= self.max_events:
            raise RunError(
                f"team '{self.team.name}' stopped after {self.max_events} deliveries with {self.bus.pending()} "
                "event(s) still pending; "
                "the agents may be looping: raise max_events (team file or --max-events) or give the loop an end"
            )
        name, event = self.bus.next()  # type: ignore[misc]
        return self.hosts[name], event

    def _after(self, host: AgentHost, delivery: Delivery) -> None:
        self.counters["delivered"] += 1
        self.counters[delivery.outcome] += 1
        self.deliveries.append(delivery)
        if self.on_delivery is not None:
            self.on_delivery(delivery)
        host.relay(self._publish_emitted, delivery)

    def _publish_emitted(self, body: dict[str, Any]) -> None:
        published = self.bus.publish(body)
        if not published.ok and self.on_problem is not None:
            self.on_problem(published)

    def run(self, inputs: dict[str, Any] | None = None, *, events: list[Event] | None = None) -> TeamResult:
        """Send the initial event(s) (or `events`), then deliver until nothing is pending."""
        t0 = perf_counter()
        try:
            self._start(inputs, events)
            while (item := self._next()) is not None:
                host, event = item
                self._after(host, host.deliver(event))
        except (RunError, EventError) as exc:
            return self._result(t0, str(exc))
        return self._result(t0, None)

    async def arun(self, inputs: dict[str, Any] | None = None, *, events: list[Event] | None = None) -> TeamResult:
        """The async twin of `run`: agents' policies and actions are awaited."""
        t0 = perf_counter()
        try:
            self._start(inputs, events)
            while (item := self._next()) is not None:
                host, event = item
                self._after(host, await host.adeliver(event))
        except (RunError, EventError) as exc:
            return self._result(t0, str(exc))
        return self._result(t0, None)

    def _result(self, t0: float, error: str | None) -> TeamResult:
        problems = [p.to_dict() for p in self.bus.problems]
        problems += [
            {"kind": d.outcome, "problem": d.reason, "agent": d.agent, "event": d.event.body()}
            for d in self.deliveries
            if d.outcome not in ("handled", "duplicate")
        ]
        counters = {**self.bus.counters, **self.counters}
        failed = error is not None or self.counters["error"] > 0
        if failed and error is None:
            error = "; ".join(f"{d.agent} ({d.run_id}): {d.reason}" for d in self.deliveries if d.outcome == "error")
        log.info("team_stopped", team=self.team.name, delivered=counters["delivered"], error=error, at=time.time())
        return TeamResult(
            self.team.name,
            "error" if failed else "done",
            list(self.deliveries),
            counters,
            problems,
            {name: dict(h.last) for name, h in self.hosts.items()},
            error,
            (perf_counter() - t0) * 1000,
            self._output(),
        )

    def _output(self) -> Any:
        if not self.team.spec.output:
            return None
        from ..engine.belief import lookup

        agent, _, key = self.team.spec.output.partition(".")
        runs = self.hosts[agent].last
        for cid in [*self.tasks, *reversed(runs)]:
            if cid in runs:
                value = lookup(runs[cid].context, key, None)
                if value is not None:
                    return value
        return None
