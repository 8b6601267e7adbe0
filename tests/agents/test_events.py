"""Events: the typed model, an event as a trigger of an agent's machine, durable dedupe,
the in-process bus, and teams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills import RunStore, load_workflow_text
from sherpa_skills.agents.bus import InProcessBus
from sherpa_skills.agents.team import TeamRunner, load_team, run_id_for
from sherpa_skills.cli import main
from sherpa_skills.engine.agent import Agent
from sherpa_skills.engine.events import MAX_PAYLOAD_BYTES, Event, EventError, parse_event

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CRITIC_LOOP = EXAMPLES / "critic_loop" / "team.yaml"

REVIEWER = """
name: reviewer
initial: idle
states:
  idle: {waiting: true}
  reading:
    on_enter: {set: {seen: "{{ event.payload.text }}"}}
  verdict: {waiting: true}
  closed: {final: true}
transitions:
  - trigger: submit
    source: idle
    dest: reading
    arguments:
      text: {type: string}
      pages: {type: integer, required: false, default: 1}
    before: {set: {text: "{{ args.text }}", pages: "{{ args.pages }}"}}
  - {trigger: read, source: reading, dest: verdict}
  - {trigger: close, source: verdict, dest: closed}
"""

EXPECTED_CRITIC_LOOP = [
    ("operator", "task", "worker"),
    ("worker", "draft", "critic"),
    ("critic", "changes_requested", "worker"),
    ("worker", "draft", "critic"),
    ("critic", "approved", "worker"),
    ("worker", "accepted", "aggregator"),
]
FINAL_ANSWER = (
    "A state machine is a set of states with exactly one current, and transitions, fired by events, "
    "that move it from one state to the next. (approved after 2 drafts)"
)


def submit(**payload: object) -> Event:
    return Event(name="submit", topic="reviews", payload=payload)


# ---------------------------------------------------------------- the model


class TestEventModel:
    def test_defaults_give_an_id_a_time_and_a_task(self) -> None:
        """Without a correlation id an event starts its own task: the correlation id is its id."""
        event = Event(name="task", topic="tasks", payload={"x": 1})
        assert len(event.id) == 32 and event.timestamp > 0
        assert event.correlation_id == event.id and event.sender == "operator"

    @pytest.mark.parametrize(
        "data, field, words",
        [
            ({"name": "task", "topic": "t", "colour": "red"}, "colour", "unknown field 'colour'"),
            ({"name": "task", "topic": "t", "payload": [1, 2]}, "payload", "field 'payload'"),
            ({"name": "task", "topic": "t", "timestamp": "yesterday"}, "timestamp", "field 'timestamp'"),
            ({"name": 7, "topic": "t"}, "name", "field 'name'"),
            ({"name": "not a trigger", "topic": "t"}, "name", "is not a trigger name"),
            ({"topic": "t"}, "name", "missing field 'name'"),
            ({"name": "task"}, None, "needs a topic or a recipient"),
            (
                {"name": "task", "topic": "t", "payload": {"blob": "x" * (MAX_PAYLOAD_BYTES + 1)}},
                "payload",
                f"the limit is {MAX_PAYLOAD_BYTES} bytes",
            ),
        ],
    )
    def test_malformed_events_are_refused_naming_the_field(self, data: dict, field: str | None, words: str) -> None:
        with pytest.raises(EventError) as caught:
            parse_event(data)
        assert words in str(caught.value) and caught.value.field == field

    def test_json_text_and_bytes_parse_and_garbage_does_not(self) -> None:
        event = Event(name="task", recipient="worker")
        assert parse_event(event.to_json()) == event == parse_event(event.to_json().encode())
        with pytest.raises(EventError, match="not valid JSON"):
            parse_event("{nope")
        with pytest.raises(EventError, match="JSON object"):
            parse_event("[1]")


# ---------------------------------------------------------------- an event is a trigger


class TestAgentHandle:
    def test_an_event_fires_its_trigger_with_the_payload_as_arguments(self) -> None:
        """Payload keys the transition declares become its arguments (extra keys ignored);
        the event is in the context."""
        agent = load_workflow_text(REVIEWER).agent()
        agent.run()
        result = agent.handle(submit(text="hello", pages=3, unrelated="ignored"))
        assert result.event["outcome"] == "handled"
        assert (result.status, result.state) == ("waiting", "verdict")
        assert result.context["text"] == "hello" and result.context["pages"] == 3 and result.context["seen"] == "hello"
        assert result.context["event"]["payload"]["unrelated"] == "ignored"
        assert agent.belief.trajectory[1].decided_by == "event"

    def test_a_new_agent_is_started_and_brought_to_rest_before_the_event(self) -> None:
        agent = load_workflow_text(REVIEWER).agent()
        result = agent.handle(submit(text="first"))
        assert result.state == "verdict" and [t.state for t in agent.belief.trajectory] == [
            "idle",
            "reading",
            "verdict",
        ]

    def test_an_event_not_available_here_is_reported_and_changes_nothing(self) -> None:
        agent = load_workflow_text(REVIEWER).agent()
        agent.run()
        result = agent.handle(Event(name="close", topic="reviews"))
        assert result.event["outcome"] == "unavailable"
        assert "'close' is not available in state 'idle'; available: submit" in result.event["reason"]
        assert result.state == "idle" and "event" not in result.context

    def test_a_payload_that_does_not_fit_the_arguments_is_refused(self) -> None:
        agent = load_workflow_text(REVIEWER).agent()
        agent.run()
        result = agent.handle(submit(text="x", pages="many"))
        assert result.event["outcome"] == "invalid" and "pages" in result.event["reason"]
        assert result.state == "idle"

    def test_a_malformed_event_raises_before_the_run_is_touched(self) -> None:
        agent = load_workflow_text(REVIEWER).agent()
        agent.run()
        with pytest.raises(EventError, match="unknown field 'urgent'"):
            agent.handle({"name": "submit", "topic": "t", "urgent": True})
        assert agent.state == "idle"

    def test_the_consumed_event_is_committed_with_its_tick_and_never_handled_twice(self, tmp_path: Path) -> None:
        """The dedupe row and the transition share one tick; a resumed agent skips the same event id."""
        workflow = load_workflow_text(REVIEWER)
        store = RunStore(home=tmp_path)
        agent = workflow.agent(store=store, run_id="r1")
        event = submit(text="once")
        assert agent.handle(event).event["outcome"] == "handled"
        [row] = store.run_events("r1", "in")
        fired = [t for t in store.load_belief("r1").trajectory if t.trigger == "submit"]
        assert (
            row["event"]["id"] == event.id and row["outcome"] == "handled" and [t.tick for t in fired] == [row["tick"]]
        )

        again = Agent.resume(store, "r1", workflow.machine, workflow.policy)
        result = again.handle(event)
        assert result.event["outcome"] == "duplicate" and result.state == "verdict"
        assert len(store.run_events("r1", "in")) == 1
        assert [t.trigger for t in store.load_belief("r1").trajectory].count("submit") == 1
        store.close()

    async def test_the_async_twin_handles_events_the_same_way(self) -> None:
        agent = load_workflow_text(REVIEWER).agent()
        await agent.arun()
        result = await agent.ahandle(submit(text="async"))
        assert (result.event["outcome"], result.state, result.context["seen"]) == ("handled", "verdict", "async")
        assert (await agent.ahandle(submit(text="again"))).event["outcome"] == "unavailable"

    def test_emitted_events_carry_the_sender_and_task_and_are_kept_in_the_outbox(self, tmp_path: Path) -> None:
        workflow = load_workflow_text(
            REVIEWER.replace(
                "  verdict: {waiting: true}",
                """  verdict:
    waiting: true
    on_enter:
      - emit: {name: read_it, topic: notes}
      - emit: {name: read_it, topic: notes}""",
            )
        )
        store = RunStore(home=tmp_path)
        agent = workflow.agent(store=store, run_id="r2")
        agent.sender, agent.correlation_id = "reviewer", "task-9"
        agent.handle(submit(text="x"))
        ids = [e["id"] for e in agent.outbox]
        assert len(set(ids)) == 2, "two events of one name in one tick get distinct, stable ids"
        assert {(e["sender"], e["correlation_id"]) for e in agent.outbox} == {("reviewer", "task-9")}
        assert [u[1]["id"] for u in store.unpublished("r2")] == ids
        store.mark_published("r2", ids)
        assert store.unpublished("r2") == []
        store.close()


# ---------------------------------------------------------------- the in-process bus


class TestInProcessBus:
    def test_routes_by_topic_and_by_recipient_in_fifo_order(self) -> None:
        bus = InProcessBus()
        bus.register("a", ["news"])
        bus.register("b", ["news", "sport"])
        bus.publish(Event(name="x", topic="news"))
        bus.publish(Event(name="y", recipient="b", topic="news"))
        assert [(n, e.name) for n, e in list(bus.queue)] == [("a", "x"), ("b", "x"), ("b", "y")]

    def test_unknown_topics_and_agents_and_malformed_events_are_counted_and_kept(self) -> None:
        bus = InProcessBus()
        bus.register("a", ["news"])
        assert (
            bus.publish(Event(name="x", topic="weather")).problem
            == "no agent subscribes to topic 'weather' (topics: news)"
        )
        assert bus.publish(Event(name="x", recipient="zed")).problem == "no agent named 'zed' (agents: a)"
        assert "unknown field 'bogus'" in bus.publish({"name": "x", "topic": "news", "bogus": 1}).problem
        assert bus.counters == {"published": 3, "routed": 0, "malformed": 1, "unrouted": 2}
        assert [p.kind for p in bus.problems] == ["unrouted", "unrouted", "malformed"] and bus.pending() == 0


# ---------------------------------------------------------------- teams in one process


class TestCriticLoopInOneProcess:
    def test_the_critic_loop_runs_to_the_final_answer(self, run_store: RunStore, fresh_scripts: None) -> None:
        """Task → draft → changes requested → revised draft → approved → accepted → final answer; each agent one
        durable run."""
        store = run_store
        result = TeamRunner(load_team(CRITIC_LOOP), store=store).run()
        assert result.status == "done", result.error
        assert result.sequence() == EXPECTED_CRITIC_LOOP
        assert {d.outcome for d in result.deliveries} == {"handled"}
        assert result.output == FINAL_ANSWER
        [task] = {d.event.correlation_id for d in result.deliveries}
        worker = run_id_for("worker", task)
        assert [e["event"]["name"] for e in store.run_events(worker, "in")] == ["task", "changes_requested", "approved"]
        assert [e["event"]["name"] for e in store.run_events(worker, "out")] == ["draft", "draft", "accepted"]
        assert all(e["published"] for e in store.run_events(worker, "out"))
        critic = result.runs["critic"][task]
        assert (critic.state, critic.llm_decisions) == ("approved", 2)
        assert result.problems == []

    async def test_the_async_runner_gives_the_same_conversation(self, fresh_scripts: None) -> None:
        result = await TeamRunner(load_team(CRITIC_LOOP)).arun()
        assert result.sequence() == EXPECTED_CRITIC_LOOP and result.output == FINAL_ANSWER

    def test_from_the_cli(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], fresh_scripts: None) -> None:
        code = main(["run", str(CRITIC_LOOP), "--home", str(tmp_path), "--json"])
        data = json.loads(capsys.readouterr().out)
        assert code == 0 and data["status"] == "done" and data["output"] == FINAL_ANSWER
        assert [(d["sender"], d["name"], d["agent"]) for d in data["deliveries"]] == EXPECTED_CRITIC_LOOP
        assert data["counters"]["handled"] == 6 and data["counters"]["unrouted"] == 0 and data["problems"] == []


PING_PONG = """
name: ping-pong
agents:
  left:
    workflow: player.yaml
    subscribe: [to_left]
    context: {other: to_right}
  right:
    workflow: player.yaml
    subscribe: [to_right]
    context: {other: to_left}
initial_event: {name: ball, topic: to_left, payload: {n: 0}}
max_events: {max_events}
"""

PLAYER = """
name: player
context: {hits: 0, other: nobody}
initial: ready
states:
  ready: {waiting: true}
  done: {final: true}
transitions:
  - trigger: ball
    source: ready
    dest: ready
    arguments: {n: {type: integer}}
    conditions: {context_lt: {key: hits, value: LIMIT}}
    after:
      - increment: {key: hits}
      - emit: {name: ball, topic: "{{ other }}", payload: {n: "{{ args.n + 1 }}"}}
  - trigger: ball
    source: ready
    dest: done
    unless: {context_lt: {key: hits, value: LIMIT}}
"""


def team_file(tmp_path: Path, *, limit: int = 3, max_events: int = 100, team: str = PING_PONG) -> Path:
    (tmp_path / "player.yaml").write_text(PLAYER.replace("LIMIT", str(limit)))
    path = tmp_path / "team.yaml"
    path.write_text(team.replace("{max_events}", str(max_events)))
    return path


class TestTeams:
    def test_ping_pong_stops_when_a_player_is_done(self, tmp_path: Path) -> None:
        result = TeamRunner(load_team(team_file(tmp_path, limit=3))).run()
        assert result.status == "done" and result.counters["delivered"] == 7
        assert [d.agent for d in result.deliveries] == ["left", "right"] * 3 + ["left"]
        assert [d.event.payload["n"] for d in result.deliveries] == list(range(7))

    def test_a_loop_is_stopped_by_max_events_with_a_clear_error(self, tmp_path: Path) -> None:
        result = TeamRunner(load_team(team_file(tmp_path, limit=1000, max_events=10))).run()
        assert result.status == "error" and result.counters["delivered"] == 10
        assert (
            "stopped after 10 deliveries with 1 event(s) still pending" in result.error and "max_events" in result.error
        )

    def test_unavailable_unrouted_and_malformed_events_are_reported(self, tmp_path: Path) -> None:
        runner = TeamRunner(load_team(team_file(tmp_path, limit=1)))
        runner.send(Event(name="serve", topic="to_left"))  # no such trigger in 'ready'
        runner.send(Event(name="ball", topic="the_crowd"))  # nobody listens
        runner.send(Event(name="ball", recipient="referee"))  # no such agent
        runner.send({"name": "ball", "topic": "to_left", "spin": "top"})  # malformed
        result = runner.run(events=[])
        kinds = sorted(p["kind"] for p in result.problems)
        assert kinds == ["malformed", "unavailable", "unrouted", "unrouted"]
        assert (
            result.counters["unavailable"] == 1
            and result.counters["malformed"] == 1
            and result.counters["unrouted"] == 2
        )
        [refused] = [d for d in result.deliveries if d.outcome == "unavailable"]
        assert "'serve' is not available in state 'ready'" in refused.reason

    def test_validate_reports_every_problem_of_a_team_file_as_file_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "player.yaml").write_text("name: player\ninitial: ready\nstates:\n  ready: {waiting: true}\n")
        bad = tmp_path / "team.yaml"
        bad.write_text(
            "name: broken\n"
            "agents:\n"
            "  left:\n"
            "    workflow: player.yaml\n"
            "    subscribe: [a]\n"
            "    colour: blue\n"
            "  right:\n"
            "    workflow: missing.yaml\n"
            "  inline:\n"
            "    workflow:\n"
            "      name: inline\n"
            "      initial: nowhere\n"
            "      states: {here: {}}\n"
            "initial_event: {name: go, topic: b}\n"
        )
        assert main(["validate", str(bad)]) == 2
        out = capsys.readouterr().out
        assert f"{bad}:6: unknown key 'colour'" in out
        bad.write_text(bad.read_text().replace("    colour: blue\n", "    policy: {type: rule}\n"))
        assert main(["validate", str(bad)]) == 2
        lines = capsys.readouterr().out.splitlines()
        assert any(line.startswith(f"{bad}:6:") and "rules" in line for line in lines), lines
        assert f"{bad}:8: workflow file 'missing.yaml' not found beside team.yaml" in lines
        assert any(line.startswith(f"{bad}:12:") and "nowhere" in line for line in lines), lines
        assert f"{bad}:14: no agent subscribes to topic 'b' (topics: a)" in lines

    def test_a_valid_team_file_validates(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["validate", str(CRITIC_LOOP)]) == 0
        assert capsys.readouterr().out.strip().endswith(": ok")
