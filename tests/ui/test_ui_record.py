"""The run page from the run's own record, the step view and fork, over HTTP (no browser): edits and deletes of the
workflow after the run, what is refused, and what the pages load."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")

from starlette.testclient import TestClient  # noqa: E402

from sherpa_skills.cli import main  # noqa: E402
from sherpa_skills.ui import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LOCAL = "http://127.0.0.1"


def triage_home(tmp_path: Path) -> tuple[Path, Path, str]:
    """A home with one run of a copy of the support-triage example left waiting in respond/approval."""
    folder = tmp_path / "triage"
    shutil.copytree(ROOT / "examples" / "support_triage", folder)
    home = tmp_path / "home"
    workflow = folder / "workflow.yaml"
    assert main(["run", str(workflow), "--home", str(home), "-i", "ticket=The app crashes with an error", "-q"]) == 0
    client = TestClient(create_app(home), base_url=LOCAL)
    run_id = client.get("/api/runs").json()[0]["run_id"]
    return home, workflow, run_id


def _marked(html: str, mark: str) -> list[str]:
    """The states the page's diagram (SVG drawn on the server) marks `mark`."""
    return re.findall(rf'<g class="node {mark}" data-state="([^"]+)"', html)


def _current(html: str) -> str | None:
    found = _marked(html, "current")
    return found[0] if len(found) == 1 else None


def test_the_run_page_draws_what_ran_after_the_workflow_is_edited_or_deleted(tmp_path: Path) -> None:
    home, workflow, run_id = triage_home(tmp_path)
    with TestClient(create_app(home), base_url=LOCAL) as client:
        page = client.get(f"/runs/{run_id}").text
        assert "as this run executed it" in page and _current(page) == "respond__approval"
        assert "has changed since" not in page
        # Rename two states: the page still draws the machine the run executed, and says the file changed.
        workflow.write_text(workflow.read_text().replace("approval", "signoff").replace("check:", "review_step:"))
        page = client.get(f"/runs/{run_id}").text
        assert _current(page) == "respond__approval" and "The workflow file" in page and "has changed since" in page
        assert "-        description: A human approves" in page or "signoff" in page  # the diff is shown
        assert "approve" in page  # the waiting transitions come from the record
        workflow.unlink()
        page = client.get(f"/runs/{run_id}").text
        assert _current(page) == "respond__approval" and "has been deleted since" in page


def test_an_errored_run_is_painted_as_failed(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "w.yaml").write_text(
        "name: fails\ninitial: a\nstates:\n  a: {}\n  b: {final: true}\n"
        "transitions:\n  - {trigger: go, source: a, dest: b}\n  - {trigger: stay, source: a, dest: a}\n"
    )
    home = tmp_path / "home"
    assert main(["run", str(folder / "w.yaml"), "--home", str(home), "-q"]) == 1
    with TestClient(create_app(home), base_url=LOCAL) as client:
        run_id = client.get("/api/runs").json()[0]["run_id"]
        page = client.get(f"/runs/{run_id}").text
        assert _marked(page, "failed") == ["a"] and _marked(page, "current") == []


def test_the_step_view_shows_the_state_after_any_step(tmp_path: Path) -> None:
    home, _, run_id = triage_home(tmp_path)
    with TestClient(create_app(home), base_url=LOCAL) as client:
        step = client.get(f"/api/runs/{run_id}/steps/2").json()
        assert step["step"]["state"] == "triage/technical" and step["step"]["duration_s"] >= 0
        assert step["context"]["team"] == "engineering" and "draft" not in step["context"]
        assert [t["tick"] for t in step["timeline"]] == list(range(6))
        draft = client.get(f"/api/runs/{run_id}/steps/3").json()
        assert [a["action"] for a in draft["actions"]] == ["llm"] and "draft" in draft["context"]
        html = client.get(f"/runs/{run_id}/steps/3").text
        assert _marked(html, "current") == ["respond__draft"] and 'class="here"' in html
        assert client.get(f"/runs/{run_id}/steps/42").status_code == 404
        assert client.get(f"/runs/{run_id}/steps/x").status_code == 400


def test_fork_from_the_view_needs_allow_actions_and_the_token(tmp_path: Path) -> None:
    home, _, run_id = triage_home(tmp_path)
    with TestClient(create_app(home), base_url=LOCAL) as client:
        assert client.post(f"/runs/{run_id}/fork", data={"at": "2"}).status_code == 403
        assert "sherpa-skills fork" in client.get(f"/runs/{run_id}/steps/2").text
    app = create_app(home, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as client:
        csrf = app.state.ui.csrf
        assert client.post(f"/runs/{run_id}/fork", data={"at": "2"}).status_code == 403  # no token
        bad = client.post(f"/runs/{run_id}/fork", data={"at": "9", "csrf": csrf})
        assert bad.status_code == 400 and "steps 0 to 5" in bad.json()["error"]
        fields = {"at": "2", "csrf": csrf, "inputs": "customer=Ada"}
        runs = len(client.get("/api/runs").json())
        # Unconfirmed, a fork is only its plan (as `fork --dry-run --json` prints it): nothing is made.
        plan = client.post(f"/runs/{run_id}/fork", data=fields)
        assert (
            plan.status_code == 200 and plan.json()["dry_run"] is True and plan.json()["inputs"] == {"customer": "Ada"}
        )
        assert len(client.get("/api/runs").json()) == runs
        made = client.post(f"/runs/{run_id}/fork", data={**fields, "confirm": "yes"}, follow_redirects=False)
        assert made.status_code == 303
        fork_id = made.headers["location"].rsplit("/", 1)[1]
        deadline = time.monotonic() + 30
        while client.get(f"/api/runs/{fork_id}/state").json()["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.get(f"/api/runs/{fork_id}").json()["belief"]["context"]["customer"] == "Ada"
        assert f'forked from <a href="/runs/{run_id}/steps/2">' in client.get(f"/runs/{fork_id}").text
        assert fork_id in client.get(f"/runs/{run_id}").text


def test_diagrams_come_drawn_in_the_page_with_no_script_library_and_unknown_paths_are_styled(tmp_path: Path) -> None:
    """The run page holds its diagram as SVG (drawn on the server); no page loads a script but the view's own ui.js
    (Mermaid's modules are gone from the package)."""
    home, _, run_id = triage_home(tmp_path)
    with TestClient(create_app(home), base_url=LOCAL) as client:
        listed, run = client.get("/runs").text, client.get(f"/runs/{run_id}").text
        assert '<svg xmlns="http://www.w3.org/2000/svg" class="statechart"' in run and "statechart" not in listed
        for page in (listed, run):
            assert (
                re.findall(r"<script[^>]*>", page) == ['<script src="/static/ui.js">'] and "modulepreload" not in page
            )
        assert client.get("/static/vendor/mermaid/mermaid.esm.min.mjs").status_code == 404
        assert client.get("/static/style.css").headers["cache-control"] == "no-cache"
        missing = client.get("/no/such/page")
        assert missing.status_code == 404 and "<header>" in missing.text and "no page at /no/such/page" in missing.text
        assert client.get("/api/no/such").json() == {"error": "no page at /api/no/such; the menu above lists them"}


def test_memory_and_domains_pages_and_runs_searched_by_input(tmp_path: Path) -> None:
    home, _, run_id = triage_home(tmp_path)
    h = str(home)
    assert (
        main(["memory", "write", "The deploy key rotates every Monday", "--agent", "ops", "--shared", "--home", h]) == 0
    )
    assert main(["memory", "write", "a secret plan about Monday", "--agent", "ops", "--home", h]) == 0
    with TestClient(create_app(home), base_url=LOCAL) as client:
        page = client.get("/memory?q=Monday").text
        assert "The deploy key rotates every Monday" in page and "secret plan" not in page  # the view is no agent
        artifact = re.search(r'data-artifact="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        assert "current" in client.get(f"/memory/{artifact}").text
        assert client.get("/memory/nosuch").status_code == 404
        assert "no open tensions" in client.get("/memory").text
        assert "no domains yet" in client.get("/domains").text
        assert client.get("/api/domains").json() == {"domains": [], "proposals": []}
        missing = client.get("/api/domains/nosuch")
        assert missing.status_code == 404 and "no domain 'nosuch'" in missing.json()["error"]
        page_missing = client.get("/domains/nosuch")
        assert page_missing.status_code == 404 and "<header>" in page_missing.text and "nosuch" in page_missing.text
        assert client.get("/api/domains/no%20such").status_code == 400  # not a domain name at all: a usage error
        runs = client.get("/runs?q=crashes").text  # the ticket text is an input
        assert f'data-run="{run_id}"' in runs and "ticket=The app crashes" in runs
        assert f'data-run="{run_id}"' not in client.get("/runs?q=refund").text


def test_the_procedure_page_shows_its_aliases_and_rejections(tmp_path: Path) -> None:
    """Issue 22's answers on the procedure page: each alias and rejection with its id, wording, who answered and when
    (escaped like every stored text); a procedure without any says so."""
    from sherpa_skills.skills.store.answers import Answers
    from sherpa_skills.skills.store.database import ProcedureDatabase
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep

    store = ProcedureDatabase(home=tmp_path)
    pid = store.add_procedure(
        CapturedProcedure(
            id="", task_type="deploy", source="session", status="active", steps=[ProcedureStep(command="make deploy")]
        )
    ).id
    other = store.add_procedure(
        CapturedProcedure(
            id="", task_type="backup", source="session", status="active", steps=[ProcedureStep(command="make backup")]
        )
    ).id
    answers = Answers(store)
    alias = answers.add_alias(pid, "ship the proxy config <b>now</b>", "ship proxy config now", by="ada")
    rejection = answers.add_rejection(pid, "restore the database from the dump", "restore database dump", by="judge")
    from_run = answers.add_alias(pid, "push the proxy config out", "config proxy push", by="run:r1")
    answers.set_source(from_run.id, "run:r1")
    judged = answers.add_alias(pid, "roll out the proxy config", "config out proxy roll", by="model:judge")
    answers.set_source(judged.id, "run:r2")
    store.close()
    with TestClient(create_app(tmp_path), base_url=LOCAL) as client:
        page = client.get(f"/procedures/{pid}").text
        section = page[page.index('<table class="answers">') :]
        assert f'<tr data-answer="{alias.id}" class="alias">' in section
        assert f'<tr data-answer="{rejection.id}" class="rejection">' in section
        assert "ship the proxy config &lt;b&gt;now&lt;/b&gt;" in section and "<b>now</b>" not in section
        assert "restore the database from the dump" in section and ">ada<" in section and ">judge<" in section
        assert section.count("<time") >= 2  # when each was answered
        assert f"sherpa-skills learn forget {alias.id}" in section  # how to undo one: the view itself is read-only
        # Where an alias came from (issue 40): the run that took the path in its words, or the run a judge was asked in.
        assert '<a href="/runs/r1">run:r1</a>, which took this path' in section
        assert 'model:judge, in <a href="/runs/r2">run:r2</a>' in section
        api = client.get(f"/api/procedures/{pid}").json()
        assert [a["id"] for a in api["aliases"]] == [alias.id, from_run.id, judged.id]
        assert [a["source"] for a in api["aliases"]] == [None, "run:r1", "run:r2"]
        assert [r["id"] for r in api["rejections"]] == [rejection.id]
        assert "no aliases or rejections yet" in client.get(f"/procedures/{other}").text


def test_a_team_task_recorded_before_teams_were_kept_still_reads(tmp_path: Path) -> None:
    """A task whose team was not kept (run before this record existed) is shown as such: its question is the first
    event an agent received, its answer the last value its latest run wrote, and no drawing is invented."""
    import sqlite3

    home = tmp_path / "home"
    assert main(["run", str(ROOT / "examples" / "critic_loop" / "team.yaml"), "--home", str(home), "-q"]) == 0
    with sqlite3.connect(home / "store.db") as conn:
        assert conn.execute("SELECT team FROM team_tasks").fetchall() == [("critic-loop",)]
        conn.execute("DELETE FROM team_tasks")
    with TestClient(create_app(home), base_url=LOCAL) as client:
        (listed,) = client.get("/api/teams").json()["teams"]
        assert listed["team"] is None and listed["asked"]["event"] == "task"
        assert listed["asked"]["payload"] == {"task": "Explain what a state machine is, in one sentence."}
        assert listed["answer"]["value"] is not None and listed["answer"]["run_id"].startswith("aggregator.")
        page = client.get(f"/teams/{listed['task']}").text
        assert "team not recorded" in page and "statechart" not in page and "No drawing" in page
