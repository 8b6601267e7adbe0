"""The browser view without a browser: every /api route answers with the CLI's --json shapes,
and what must be refused is."""

from __future__ import annotations

import contextlib
import io
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")

from _ui_home import HOSTILE, SECRET, cli, shared_home  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from sherpa_skills.cli import main as cli_main  # noqa: E402
from sherpa_skills.ui import create_app  # noqa: E402

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return shared_home(tmp_path_factory)


@pytest.fixture(scope="module")
def client(made: dict[str, Any]) -> Any:
    with TestClient(create_app(made["home"]), base_url=LOCAL) as c:
        yield c


def _home(made: dict[str, Any]) -> str:
    return str(made["home"])


class TestApiMatchesCli:
    def test_runs_is_the_runs_json_list(self, client: Any, made: dict[str, Any]) -> None:
        """/api/runs is `runs --json` (the same page size), with the total in a header."""
        r = client.get("/api/runs?per_page=50")
        assert r.status_code == 200
        assert r.json() == cli("runs", "--home", _home(made), "--limit", "50")
        assert int(r.headers["x-total-count"]) >= len(r.json())

    def test_run_is_show_json(self, client: Any, made: dict[str, Any]) -> None:
        """/api/runs/ID is `show ID --json`, belief and all."""
        run_id = made["waiting"]["run_id"]
        assert client.get(f"/api/runs/{run_id}").json() == cli("show", run_id, "--home", _home(made))

    def test_run_state_is_the_live_poll(self, client: Any, made: dict[str, Any]) -> None:
        state = client.get(f"/api/runs/{made['waiting']['run_id']}/state").json()
        assert state["status"] == "waiting" and state["state"] == "respond/approval"

    def test_procedures_stats_health(self, client: Any, made: dict[str, Any]) -> None:
        """Procedures, stats and health are `learn procedures --all`, `learn stats` and `learn health`."""
        h = _home(made)
        assert client.get("/api/procedures").json() == cli("learn", "procedures", "--all", "--home", h)
        assert client.get("/api/stats").json() == cli("learn", "stats", "--home", h)
        assert client.get("/api/health").json() == cli("learn", "health", "--home", h)

    def test_decisions_is_learn_decisions_states(self, client: Any, made: dict[str, Any]) -> None:
        """/api/decisions is the decision memory per state (`learn decisions --states`) and what its answers saved."""
        data = client.get("/api/decisions").json()
        assert data["states"] == cli("learn", "decisions", "--states", "--home", _home(made))
        assert data["saved"] == cli("learn", "stats", "--home", _home(made))["decision_memory"]

    def test_procedure_is_learn_show(self, client: Any, made: dict[str, Any]) -> None:
        pid = made["loop"]["procedures"][0]["id"]
        assert client.get(f"/api/procedures/{pid}").json() == cli("learn", "show", pid, "--home", _home(made))
        v1 = client.get(f"/api/procedures/{pid}?version=1").json()
        assert v1 == cli("learn", "show", pid, "--version", "1", "--home", _home(made))

    def test_heartbeat_is_heartbeat_report(self, client: Any, made: dict[str, Any]) -> None:
        assert client.get("/api/heartbeat?last=5").json() == cli(
            "heartbeat", "report", "--last", "5", "--home", _home(made)
        )

    def test_team_deliveries_in_order(self, client: Any, made: dict[str, Any]) -> None:
        """A team task lists the deliveries the team run made, in the order it made them, and each agent's run."""
        team = made["team"]
        task = team["deliveries"][0]["correlation_id"]
        assert task in [t["task"] for t in client.get("/api/teams").json()["teams"]]
        data = client.get(f"/api/teams/{task}").json()
        keys = (
            "event_id",
            "name",
            "sender",
            "topic",
            "recipient",
            "correlation_id",
            "agent",
            "run_id",
            "outcome",
            "emitted",
        )
        assert [{k: d[k] for k in keys} for d in data["deliveries"]] == [
            {k: d[k] for k in keys} for d in team["deliveries"]
        ]
        assert sorted(data["runs"]) == sorted(team["runs"])

    def test_team_task_has_its_name_question_answer_and_drawing(self, client: Any, made: dict[str, Any]) -> None:
        """A team's task is shown by the team's name, the event it was asked and the team's `output`, not only by its
        correlation id; its page draws the team as it ran (SVG drawn on the server)."""
        team = made["team"]
        task = team["deliveries"][0]["correlation_id"]
        listed = next(t for t in client.get("/api/teams").json()["teams"] if t["task"] == task)
        assert listed["team"] == "critic-loop" and listed["asked"]["event"] == "task"
        assert listed["asked"]["payload"] == {"task": "Explain what a state machine is, in one sentence."}
        assert listed["answer"]["value"] == team["output"] and listed["answer"]["from"] == "aggregator.answer"
        data = client.get(f"/api/teams/{task}").json()
        assert data["team"] == "critic-loop" and data["answer"] == listed["answer"]
        assert data["diagram"].startswith("stateDiagram-v2") and "topic tasks" in data["diagram"]
        html = client.get("/teams").text
        row = html[html.index(f'data-task="{task}"') :].split("</tr>")[0]
        assert "critic-loop" in row and "Explain what a state machine is" in row and str(team["output"])[:40] in row
        page = client.get(f"/teams/{task}").text
        assert (
            "team critic-loop" in page
            and '<div class="diagram" id="diagram"><svg' in page
            and 'data-state="worker"' in page
            and "topic tasks" in page
        )

    def test_every_route_listed_answers(self, client: Any, made: dict[str, Any]) -> None:
        """Each route /api lists answers 200 once its placeholders are filled."""
        fill = {
            "{run_id}": made["waiting"]["run_id"],
            "{id}": made["loop"]["procedures"][0]["id"],
            "{task}": made["team"]["deliveries"][0]["correlation_id"],
            "{tick}": "1",
        }
        routes = client.get("/api").json()["routes"]
        assert len(routes) >= 10
        for route in routes:
            for k, v in fill.items():
                route = route.replace(k, v)
            assert client.get(route).status_code == 200, route


class TestPages:
    def test_every_page_renders(self, client: Any, made: dict[str, Any]) -> None:
        pid = made["loop"]["procedures"][0]["id"]
        task = made["team"]["deliveries"][0]["correlation_id"]
        for path, expect in [
            ("/runs", made["waiting"]["run_id"]),
            (f"/runs/{made['waiting']['run_id']}", "respond/approval"),
            ("/procedures", pid),
            (f"/procedures/{pid}", "exit code 2"),
            ("/heartbeat", "watermark"),
            ("/teams", task),
            (f"/teams/{task}", "critic"),
        ]:
            r = client.get(path)
            assert r.status_code == 200 and expect in r.text, path

    def test_runs_filter_search_and_pages(self, client: Any, made: dict[str, Any]) -> None:
        """Filters narrow the table; a page past the end is empty, not an error."""
        waiting = client.get("/api/runs?status=waiting").json()
        assert [r["run_id"] for r in waiting] == [made["waiting"]["run_id"]]
        assert all(r["workflow"] == "planner" for r in client.get("/api/runs?workflow=planner").json())
        assert {r["run_id"] for r in client.get("/api/runs?q=critic").json()} == {
            r["run_id"] for r in made["team"]["runs"]["critic"].values()
        }
        one = client.get("/api/runs?per_page=1&page=2")
        assert len(one.json()) == 1 and one.headers["x-page"] == "2"
        assert client.get("/api/runs?page=9999").json() == []
        assert client.get("/api/runs?q=%25").json() == []  # a LIKE wildcard is searched for literally

    def test_a_child_run_links_back_to_its_parent(self, client: Any, made: dict[str, Any]) -> None:
        """A run started by `run_machine` (replay, capture) names the run and the step that started it; the parent
        lists it among the runs it started."""
        import re

        runs = client.get("/runs?per_page=500").text
        parents = re.findall(r'data-run="([^"]+)"', runs)
        pairs = [
            (parent, child)
            for parent in parents
            for child in re.findall(
                r'<p class="children">runs it started: (.*?)</p>', client.get(f"/runs/{parent}").text
            )
        ]
        assert pairs, "the skills loop starts child runs (capture): the home should hold one"
        parent, links = pairs[0]
        child = re.findall(r'href="/runs/([^"]+)"', links)[0]
        page = client.get(f"/runs/{child}").text
        found = re.search(r'<p class="parent">started by <a href="/runs/([^"/]+)/steps/(\d+)">', page)
        assert found and found.group(1) == parent, page[:2000]
        api = client.get(f"/api/runs/{child}/provenance").json()
        assert api["started_by"] == {"run_id": parent, "tick": int(found.group(2))}
        top = client.get(f"/api/runs/{parent}/provenance").json()
        assert top["started_by"] is None and child in top["children"]  # a top-level run was started by nobody
        assert client.get("/api/runs/no-such-run/provenance").status_code == 404

    def test_waiting_run_shows_what_it_can_take(self, client: Any, made: dict[str, Any]) -> None:
        html = client.get(f"/runs/{made['waiting']['run_id']}").text
        assert "Waiting for input" in html and "approve" in html and "reject" in html
        assert "sherpa-skills resume" in html and 'action="/runs/' not in html  # read-only: no form

    def test_hostile_values_are_escaped_and_secrets_stay_redacted(self, client: Any, made: dict[str, Any]) -> None:
        html = client.get(f"/runs/{made['waiting']['run_id']}").text
        assert HOSTILE not in html and "&lt;script&gt;" in html
        assert SECRET not in html and SECRET not in client.get(f"/api/runs/{made['waiting']['run_id']}").text


class TestRefusals:
    def test_unknown_run_procedure_team(self, client: Any) -> None:
        r = client.get("/api/runs/no-such-run")
        assert r.status_code == 404 and "no run 'no-such-run'" in r.json()["error"]
        assert client.get("/runs/no-such-run").status_code == 404
        assert client.get("/api/procedures/no-such").status_code == 404
        assert client.get("/api/teams/no-such").status_code == 404

    def test_bad_query_values(self, client: Any) -> None:
        r = client.get("/api/runs?page=abc")
        assert r.status_code == 400 and "'page' must be a whole number" in r.json()["error"]
        assert client.get("/api/runs?per_page=100000").status_code == 400
        assert client.get("/api/heartbeat?last=-1").status_code == 400

    def test_foreign_host_header_is_refused(self, made: dict[str, Any]) -> None:
        """DNS rebinding: a page served under another name cannot read the API."""
        with TestClient(create_app(made["home"]), base_url="http://evil.example.invalid") as c:
            assert c.get("/api/runs").status_code == 400

    def test_read_only_by_default(self, client: Any, made: dict[str, Any]) -> None:
        """Without --allow-actions every write is refused, and the waiting run stays waiting."""
        run_id = made["waiting"]["run_id"]
        r = client.post(f"/runs/{run_id}/resume", data={"trigger": "approve"})
        assert r.status_code == 403 and "read-only" in r.json()["error"]
        assert client.post(f"/procedures/{made['loop']['procedures'][0]['id']}/promote").status_code == 403
        assert client.post(f"/procedures/{made['loop']['procedures'][0]['id']}/reject").status_code == 403
        assert client.post("/api/runs").status_code == 405
        assert client.get(f"/api/runs/{run_id}/state").json()["status"] == "waiting"


FORM = "application/x-www-form-urlencoded"


class TestActions:
    @pytest.fixture()
    def acting(self, tmp_path: Path) -> Any:
        """A home of its own (actions change it), with one waiting triage run."""
        from _ui_home import ROOT, TECHNICAL

        waiting = cli(
            "run",
            str(ROOT / "examples" / "support_triage" / "workflow.yaml"),
            "--home",
            str(tmp_path),
            "-i",
            f"ticket={TECHNICAL}",
            "-i",
            "customer=Ada",
        )
        app = create_app(tmp_path, allow_actions=True)
        with TestClient(app, base_url=LOCAL, follow_redirects=False) as c:
            yield c, waiting["run_id"], app.state.ui.csrf

    def test_refuses_without_token_or_from_another_origin(self, acting: Any) -> None:
        c, run_id, csrf = acting
        assert c.post(f"/runs/{run_id}/resume", data={"trigger": "approve"}).status_code == 403
        assert c.post(f"/runs/{run_id}/resume", data={"trigger": "approve", "csrf": "guess"}).status_code == 403
        r = c.post(
            f"/runs/{run_id}/resume",
            data={"trigger": "approve", "csrf": csrf},
            headers={"Origin": "http://evil.example.invalid"},
        )
        assert r.status_code == 403
        assert c.get(f"/api/runs/{run_id}/state").json()["status"] == "waiting"

    def test_a_token_that_is_not_ascii_is_refused_not_a_server_error(self, acting: Any) -> None:
        """compare_digest refuses str with non-ASCII characters, which a client is free to send: a 403 that says why,
        not a 500 and a traceback; the run stays waiting."""
        c, run_id, _ = acting
        form = {"content": b"trigger=approve&csrf=%C3%A9", "headers": {"content-type": FORM}}
        for refused in (
            c.post(f"/runs/{run_id}/resume", **form),
            c.post(f"/runs/{run_id}/resume", headers={"x-csrf-token": b"\xc3\xa9"}),
        ):
            assert refused.status_code == 403 and "CSRF token" in refused.json()["error"]
        assert c.get(f"/api/runs/{run_id}/state").json()["status"] == "waiting"

    def test_refuses_a_trigger_the_state_does_not_offer(self, acting: Any) -> None:
        c, run_id, csrf = acting
        r = c.post(f"/runs/{run_id}/resume", data={"trigger": "send", "csrf": csrf})
        assert (
            r.status_code == 400
            and "trigger 'send' is not a transition out of state respond/approval" in r.json()["error"]
        )
        r = c.post(f"/runs/{run_id}/resume", data={"csrf": csrf, "inputs": "no-equals-sign"})
        assert r.status_code == 400 and "not NAME=VALUE" in r.json()["error"]

    def test_resumes_a_waiting_run_once(self, acting: Any) -> None:
        """The form resumes the run with an input (in the background);
        a second resume of the finished run is refused."""
        c, run_id, csrf = acting
        r = c.post(f"/runs/{run_id}/resume", data={"inputs": "approved=true", "csrf": csrf})
        assert r.status_code == 303 and r.headers["location"] == f"/runs/{run_id}"
        deadline = time.monotonic() + 60
        while c.get(f"/api/runs/{run_id}/state").json()["status"] == "waiting" and time.monotonic() < deadline:
            time.sleep(0.2)
        state = c.get(f"/api/runs/{run_id}/state").json()
        assert (state["status"], state["state"]) == ("final", "sent")
        assert c.post(f"/runs/{run_id}/resume", data={"inputs": "approved=true", "csrf": csrf}).status_code == 409

    def test_promotes_a_candidate_once(self, acting: Any, tmp_path: Path) -> None:
        """A mined candidate shows in the review list with a form; promoting makes it active;
        an active one is refused."""
        from sherpa_skills.skills.store.database import ProcedureDatabase
        from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

        c, _, csrf = acting
        store = ProcedureDatabase(home=tmp_path)
        pid = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="tidy-logs",
                source="session",
                status="candidate",
                steps=[ProcedureStep(command="ls logs")],
            )
        ).id
        store.close()
        assert f'action="/procedures/{pid}/promote"' in c.get("/procedures").text
        assert c.post(f"/procedures/{pid}/promote", data={"csrf": "nope"}).status_code == 403
        r = c.post(f"/procedures/{pid}/promote", data={"csrf": csrf})
        promoted = c.get(f"/api/procedures/{pid}").json()
        assert r.status_code == 303 and promoted["status"] == "active"
        assert promoted["confidence"] >= 0.8  # the promotion counts as the second success, as `learn promote` does
        again = c.post(f"/procedures/{pid}/promote", data={"csrf": csrf})
        assert again.status_code == 400 and "already active" in again.json()["error"]

    def test_rejects_a_candidate_for_good(self, acting: Any, tmp_path: Path) -> None:
        """Reject from the review list: never replayed, never proposed again;
        only a candidate can be rejected, with the token."""
        from sherpa_skills.skills.store.database import ProcedureDatabase
        from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

        c, _, csrf = acting
        store = ProcedureDatabase(home=tmp_path)
        pid = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="noise",
                source="session",
                status="candidate",
                steps=[ProcedureStep(command="rm -f x"), ProcedureStep(command="git add y")],
            )
        ).id
        store.close()
        assert f'action="/procedures/{pid}/reject"' in c.get("/procedures").text
        assert c.post(f"/procedures/{pid}/reject", data={"csrf": "nope"}).status_code == 403
        r = c.post(f"/procedures/{pid}/reject", data={"csrf": csrf})
        assert r.status_code == 303 and c.get(f"/api/procedures/{pid}").json()["status"] == "rejected"
        again = c.post(f"/procedures/{pid}/reject", data={"csrf": csrf})
        assert again.status_code == 400 and "already rejected" in again.json()["error"]

    def test_review_queue_groups_near_identical_candidates_most_supported_first(
        self, acting: Any, tmp_path: Path
    ) -> None:
        """Five `./run.sh` candidates that differ only in their values are one row with a count, acting on its
        best-supported member; rows go most-supported first. A POST without the token changes nothing."""
        import re

        from sherpa_skills.skills.store.database import ProcedureDatabase
        from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

        c, _, csrf = acting
        store = ProcedureDatabase(home=tmp_path)

        def candidate(commands: list[str], support: int) -> str:
            return store.add_procedure(
                CapturedProcedure(
                    id="",
                    task_type="run-script",
                    source="session",
                    status="candidate",
                    steps=[ProcedureStep(command=x) for x in commands],
                    context={"mined": {"support": support}},
                )
            ).id

        rare = candidate(["make lint"], 1)
        scripts = [candidate(["cd /srv/app", f"./run.sh --env {env}"], n) for n, env in enumerate("abcde", start=2)]
        common = candidate(["ls logs", "tail -n 50 logs/app.log"], 9)
        store.close()
        page = c.get("/procedures").text
        rows = re.findall(r'<tr data-candidate="([^"]+)" data-group-size="(\d+)" data-support="(\d+)"', page)
        assert rows == [(scripts[-1], "5", "20"), (common, "1", "9"), (rare, "1", "1")]  # total support, most first
        group = page[page.index(f'data-candidate="{scripts[-1]}"') :].split("</tr>")[0]
        assert "5 near-identical" in group and all(f'href="/procedures/{pid}"' in group for pid in scripts)
        assert (
            f'action="/procedures/{scripts[-1]}/promote"' in group and f'action="/procedures/{scripts[0]}/' not in group
        )

        refused = c.post(f"/procedures/{scripts[-1]}/promote")  # the grouped row's form, without its token
        assert refused.status_code == 403 and c.get(f"/api/procedures/{scripts[-1]}").json()["status"] == "candidate"
        assert c.post(f"/procedures/{scripts[-1]}/promote", data={"csrf": csrf}).status_code == 303
        assert c.get(f"/api/procedures/{scripts[-1]}").json()["status"] == "active"
        rows = re.findall(r'<tr data-candidate="([^"]+)" data-group-size="(\d+)"', c.get("/procedures").text)
        assert rows == [(scripts[-2], "4"), (common, "1"), (rare, "1")]  # the rest of the group, under its next best

    def test_page_form_carries_the_token(self, acting: Any) -> None:
        c, run_id, csrf = acting
        html = c.get(f"/runs/{run_id}").text
        assert f'action="/runs/{run_id}/resume"' in html and f'value="{csrf}"' in html


class TestCommand:
    def _run(self, *args: str) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(["ui", *args])
        return code, err.getvalue()

    def test_refuses_a_public_host_without_the_flag(self, tmp_path: Path) -> None:
        code, err = self._run("--home", str(tmp_path), "--host", "0.0.0.0")
        assert (
            code == 2
            and err.startswith("sherpa-skills: --host 0.0.0.0 serves your runs to other machines")
            and "--allow-remote" in err
        )

    def test_refuses_a_bad_port(self, tmp_path: Path) -> None:
        code, err = self._run("--home", str(tmp_path), "--port", "70000")
        assert code == 2 and "--port 70000 is not a TCP port" in err

    def test_says_which_extra_is_missing(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without uvicorn (the ui extra), the command names the install line instead of failing with a traceback."""
        monkeypatch.setitem(sys.modules, "uvicorn", None)
        code, err = self._run("--home", str(tmp_path))
        assert code == 2 and "needs the ui extra (uvicorn is missing): pip install 'sherpa-skills[ui]'" in err

    def test_serves_from_the_command_and_stops(self, tmp_path: Path) -> None:
        """`sherpa-skills ui` in its own process answers /api on 127.0.0.1 and a busy port is a clear error."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [sys.executable, "-m", "sherpa_skills.cli", "ui", "--home", str(tmp_path), "--port", str(port)]
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        try:
            body = None
            deadline = time.monotonic() + 60
            while body is None and time.monotonic() < deadline:
                try:
                    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/runs", timeout=2).read()
                except OSError:
                    time.sleep(0.1)
            assert body == b"[]"
            busy = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            assert busy.returncode == 2 and f"could not listen on 127.0.0.1:{port}" in busy.stderr
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_a_long_run_page_shows_its_tail_and_all_on_request(tmp_path: Path) -> None:
    """A run of 250 steps opens on its last 200 trajectory and log entries; ?all=1 shows every one;
    the JSON twin has all."""
    from sherpa_skills.engine.belief import LogEntry, TrajectoryEntry
    from sherpa_skills.engine.runstore import RunStore, TickRecord

    store = RunStore(home=tmp_path)
    store.create_run(
        "long", "loop", None, None, {}, "a", {}, TickRecord(trajectory=[TrajectoryEntry(tick=0, state="a", at=0.0)])
    )
    for tick in range(1, 250):
        store.commit_tick(
            "long",
            TickRecord(
                trajectory=[TrajectoryEntry(tick=tick, state=f"s{tick}", trigger="t", at=tick)],
                log=[LogEntry(tick=tick, action="shell", started=tick)],
            ),
            status="final",
            state=f"s{tick}",
            tick=tick,
            counters={"steps": tick},
        )
    store.close()
    with TestClient(create_app(tmp_path), base_url=LOCAL) as c:
        html = c.get("/runs/long").text
        assert (
            "last 200 of 250" in html
            and "last 200 of 249 entries" in html
            and "<code>s249</code>" in html
            and "<code>s49</code>" not in html
        )
        assert "No diagram: this run was not started from a workflow file" in html
        full = c.get("/runs/long?all=1").text
        assert "<code>s49</code>" in full and "show all" not in full
        assert len(c.get("/api/runs/long").json()["belief"]["trajectory"]) == 250
