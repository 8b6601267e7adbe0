"""The browser view never says something false, and works on a phone: each defect found in a real Chromium, tested in
one (issue 39). Fixtures and the server come from test_ui_browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import test_ui_browser as base

# The fixtures (a Chromium, a page under the CSP, the shared home and its server) are the browser tests' own.
browser, page, made, server = base.browser, base.page, base.made, base.server
_diagram, _Server = base._diagram, base._Server

pytestmark = pytest.mark.slow

DEPLOY = """
name: deploy-fails
initial: build
states:
  build:
    on_enter: {shell: {command: "echo built"}}
  deploy:
    on_enter: {shell: {command: "echo deploying; exit 3", check: true}}
  done: {final: true}
transitions:
  - {trigger: ship, source: build, dest: deploy}
  - {trigger: finish, source: deploy, dest: done}
"""


def _run(workflow: Path, home: Path, *args: str) -> str:
    from _ui_home import cli

    return str(cli("run", str(workflow), "--home", str(home), *args)["run_id"])


def test_a_failed_entry_action_is_shown_where_it_failed(page: Any, tmp_path: Path) -> None:
    """`deploy`'s entry action fails during the transition from `build`: the page paints `deploy` failed (not `build`),
    names the action, and every link on the page opens, the failed step's included."""
    workflow, home = tmp_path / "deploy.yaml", tmp_path / "home"
    workflow.write_text(DEPLOY)
    run_id = _run(workflow, home)
    with _Server(home) as s:
        page.goto(f"{s.url}/runs/{run_id}")
        _diagram(page)
        failed = page.eval_on_selector_all("#diagram svg g.node.failed", "gs => gs.map(g => g.textContent.trim())")
        assert failed == ["deploy"], failed
        note = page.locator("p.failure").inner_text()
        assert "into deploy" in note and "rests in build" in note and "shell" in note
        hrefs = page.eval_on_selector_all(
            "main a[href^='/']", "as => [...new Set(as.map(a => a.getAttribute('href')))]"
        )
        for href in hrefs:
            answer = page.request.get(f"{s.url}{href}")
            assert answer.status == 200, (href, answer.status)
        page.click("tr.st-error a")
        page.wait_for_url(f"**/runs/{run_id}/steps/1")
        _diagram(page)
        assert page.eval_on_selector_all("#diagram svg g.node.failed", "gs => gs.map(g => g.textContent.trim())") == [
            "deploy"
        ]
        assert "never committed" in page.locator(".step-summary").inner_text()
        row = page.locator("table.step-actions tr.st-error")
        assert row.count() == 1 and "exit code 3" in row.inner_text()


def _procedures_home(home: Path) -> dict[str, str]:
    """An active routine, an active trajectory, a mined candidate (with parameters) and a rejected one."""
    from sherpa_skills.skills.store.database import ProcedureDatabase
    from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep, RecordedDecision

    store = ProcedureDatabase(home=home)
    try:
        routine = store.add_procedure(
            CapturedProcedure(id="", task_type="pack-notes", steps=[ProcedureStep(command="tar -czf n.tgz notes")])
        ).id
        trajectory = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="triage",
                kind="trajectory",
                steps=[],
                decisions=[
                    RecordedDecision(state="intake", trigger="classify"),
                    RecordedDecision(state="assess", trigger="technical", args={"team": "{{ team }}"}),
                ],
            )
        ).id
        mined = {
            "mined": {
                "support": 3,
                "parameters": {"file": ["app.log", "db.log"]},
                "sessions": ["s1", "s2"],
                "project_dir": "/srv/shop",
            }
        }
        candidate = store.add_procedure(
            CapturedProcedure(
                id="",
                task_type="rotate-logs",
                source="session",
                status="candidate",
                context=mined,
                steps=[ProcedureStep(command="gzip logs/{{ file }}")],
            )
        ).id
        rejected = store.add_procedure(
            CapturedProcedure(
                id="", task_type="noise", source="session", status="candidate", steps=[ProcedureStep(command="ls")]
            )
        ).id
        store.set_status(rejected, "rejected")
    finally:
        store.close()
    return {"routine": routine, "trajectory": trajectory, "candidate": candidate, "rejected": rejected}


def test_procedure_counts_equal_the_clis_and_candidates_show_what_varies(page: Any, tmp_path: Path) -> None:
    """'N active' is what `learn procedures` lists (a rejected candidate is not active); a trajectory shows its
    decisions, not '0 steps'; a candidate shows its commands, its parameters with examples and where it was mined."""
    from _ui_home import cli

    home = tmp_path / "home"
    ids = _procedures_home(home)
    active = cli("learn", "procedures", "--home", str(home))
    with _Server(home) as s:
        page.goto(f"{s.url}/procedures")
        assert len(active) == 2 and "2 active, 1 awaiting review" in page.locator("h1").inner_text()
        assert page.locator(f"table.procedures tr[data-procedure='{ids['rejected']}']").count() == 0
        assert page.locator(f"tr[data-procedure='{ids['trajectory']}'] td.size").inner_text() == "2 decisions"
        assert page.locator(f"tr[data-procedure='{ids['routine']}'] td.size").inner_text() == "1 step"
        review = page.locator(f"tr[data-candidate='{ids['candidate']}'] details.review")
        assert "gzip logs/{{ file }}" in review.inner_text()
        assert "app.log" in review.locator("tr[data-parameter='file']").inner_text()
        assert "/srv/shop" in review.locator(".mined").inner_text()
        page.goto(f"{s.url}/procedures/{ids['trajectory']}")
        assert "in assess: technical" in page.locator(".version ol.steps").inner_text()


def test_an_edited_workflow_is_noted_even_when_a_same_machine_file_ran_first(page: Any, tmp_path: Path) -> None:
    """The machine is kept once per spec hash, with the first file that ran it: a second file with the same content,
    edited after its run, is still noted as changed on its run's page."""
    home, first, second = tmp_path / "home", tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(DEPLOY)
    second.write_text(DEPLOY)
    _run(first, home)
    run_id = _run(second, home)
    second.write_text(DEPLOY.replace("echo built", "echo built again"))
    with _Server(home) as s:
        page.goto(f"{s.url}/runs/{run_id}")
        note = page.locator(".file-note")
        assert note.count() == 1 and str(second) in note.inner_text() and "has changed" in note.inner_text()
        page.click(".file-note summary")
        assert '+    on_enter: {shell: {command: "echo built again"}}' in note.locator("pre.diff").inner_text()


TRIAGE = Path(__file__).resolve().parents[2] / "examples" / "support_triage" / "workflow.yaml"


def test_a_refused_resume_says_why_in_the_page_with_a_way_back(page: Any, tmp_path: Path) -> None:
    """A resume the engine would refuse (an argument the transition does not declare, an input of the wrong type) is
    refused before anything runs: the page says why, the run still waits, and a link leads back to it."""
    home = tmp_path / "home"
    run_id = _run(TRIAGE, home, "-i", "ticket=The app crashes with an error")
    with _Server(home, allow_actions=True) as s:
        for trigger, field, value, said in (
            ("approve", "args", "urgency=high", "urgency"),
            ("", "inputs", "approved=maybe", "approved"),
        ):
            page.goto(f"{s.url}/runs/{run_id}")
            if trigger:
                page.select_option(".resume select[name=trigger]", trigger)
            page.fill(f".resume textarea[name={field}]", value)
            page.click(".resume button")
            page.wait_for_selector(".refusal")
            assert said in page.locator(".refusal").inner_text()
            page.click("a.back")
            page.wait_for_url(f"{s.url}/runs/{run_id}")
            assert page.locator("#run").get_attribute("data-status") == "waiting"


def test_fork_asks_first_with_the_plan(page: Any, tmp_path: Path) -> None:
    """As the CLI asks (and offers --dry-run), the view shows the fork's plan and makes nothing until confirmed; a
    cancel leads back to the step."""
    from _ui_home import cli

    home = tmp_path / "home"
    run_id = _run(TRIAGE, home, "-i", "ticket=The app crashes with an error")
    with _Server(home, allow_actions=True) as s:
        page.goto(f"{s.url}/runs/{run_id}/steps/2")
        page.fill(".fork-form textarea[name=inputs]", "customer=Ada")
        page.click(".fork-form button")
        preview = page.locator(".fork-preview")
        preview.wait_for()
        assert "its actions execute" in preview.inner_text() and "customer=Ada" in preview.inner_text()
        assert len(cli("runs", "--home", str(home))) == 1  # nothing made yet
        page.click(".fork-preview a.back")
        page.wait_for_url(f"{s.url}/runs/{run_id}/steps/2")
        # Confirmed, the fork is made with what the preview showed: every input line.
        page.fill(".fork-form textarea[name=inputs]", "customer=Ada\nticket=The printer is on fire")
        page.click(".fork-form button")
        page.click(".fork-confirm button")
        page.wait_for_url("**/runs/*")
        fork_id = page.url.rsplit("/", 1)[1]
        assert fork_id != run_id
        page.wait_for_function("() => document.querySelector('#run').dataset.status !== 'running'", timeout=30_000)
        context = cli("show", fork_id, "--home", str(home))["belief"]["context"]
        assert context["customer"] == "Ada" and context["ticket"] == "The printer is on fire", context


def _main_pages(made: dict[str, Any]) -> list[str]:
    """Every kind of page the view has, over the shared home."""
    run_id = made["waiting"]["run_id"]
    pid = made["loop"]["procedures"][0]["id"]
    task = made["team"]["deliveries"][0]["correlation_id"]
    from sherpa_skills.memory.domains import Domains

    with Domains(home=made["home"]) as store:
        domains = store.list()
    pages = [
        "/runs",
        f"/runs/{run_id}",
        f"/runs/{run_id}/steps/2",
        "/procedures",
        f"/procedures/{pid}",
        "/heartbeat",
        "/teams",
        f"/teams/{task}",
        "/memory",
        "/memory?q=triage",
        "/domains",
        "/no/such/page",
    ]
    if domains:
        pages.append(f"/domains/{domains[0]['name']}")
    return pages


def test_no_page_is_wider_than_a_phone(browser: Any, server: Any, made: dict[str, Any], tmp_path: Path) -> None:
    """At 390 px (a phone), every page lays out within the screen: what is wider (a table, a diagram, JSON) scrolls
    inside its own box, not the page."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    try:
        p = context.new_page()
        wide = {}
        for path in _main_pages(made):
            p.goto(f"{server.url}{path}")
            if p.locator("#diagram").count():
                _diagram(p)
            width = p.evaluate("document.scrollingElement.scrollWidth")
            if width > 390:
                wide[path] = width
        assert not wide, f"wider than 390 px: {wide}"
    finally:
        context.close()


def test_the_step_pages_panels_never_overlap(page: Any, tmp_path: Path) -> None:
    """At 1280 px the actions of a step (a model's reason, an output with a long line) stay in their column: every
    point of the context panel shows the context, not the table beside it."""
    workflow, home = tmp_path / "long.yaml", tmp_path / "home"
    line = "reason-" * 60  # one long word, as a model's reason or a path can be
    workflow.write_text(
        "name: long-line\ninitial: a\nstates:\n"
        f"  a: {{on_enter: {{shell: {{command: 'echo {line}'}}, save_as: said}}}}\n"
        "  b: {final: true}\ntransitions:\n  - {trigger: go, source: a, dest: b}\n"
    )
    run_id = _run(workflow, home)
    with _Server(home) as s:
        page.goto(f"{s.url}/runs/{run_id}/steps/0")
        assert line in page.locator("table.step-actions").inner_text()
        # The table stays within its column (before, it ran under the context panel, its text hidden there).
        table, column, context = (
            page.eval_on_selector(sel, "e => e.getBoundingClientRect().toJSON()")
            for sel in ("table.step-actions", ".columns > div:first-child", ".step-context")
        )
        assert table["right"] <= column["right"] + 1 and table["right"] < context["left"], (table, column, context)


def test_live_updates_keep_open_entries_and_focus(page: Any, server: Any, made: dict[str, Any], tmp_path: Path) -> None:
    """A live run moves on while a person reads a log entry with the keyboard on a link: the update keeps the entry
    open and the focus where it was."""
    import threading
    import time

    from _ui_home import GATED

    from sherpa_skills.engine.runstore import RunStore
    from sherpa_skills.engine.workflow import load_workflow

    workflow_file, gate = tmp_path / "gated.yaml", tmp_path / "gate"
    workflow_file.write_text(GATED.replace("gated-walk", "gated-focus"))
    gate.mkdir()
    store = RunStore(home=made["home"])
    agent = load_workflow(workflow_file).agent(store=store)
    worker = threading.Thread(target=lambda: agent.run({"gate": str(gate)}), daemon=True)
    worker.start()

    def current_is(name: str) -> None:
        page.wait_for_function(
            "name => { const g = document.querySelector('#diagram svg g.node.current');"
            " return g && g.textContent.trim() === name && document.body.dataset.diagrams === 'drawn'; }",
            arg=name,
            timeout=60_000,
        )

    try:
        deadline = time.monotonic() + 30
        while not store.search_runs(workflow="gated-focus", status="running")[0]:
            assert time.monotonic() < deadline and worker.is_alive(), "the gated run did not start"
            time.sleep(0.05)
        run_id = store.search_runs(workflow="gated-focus")[0][0].run_id
        # A state shows once its entry actions are committed: gates 1 and 2 let `first` and `middle/one` finish.
        (gate / "1").touch()
        (gate / "2").touch()
        page.goto(f"{server.url}/runs/{run_id}")
        current_is("one")
        entry = page.locator("table.log details").first  # the oldest entry: new ones are added after it
        entry.locator("summary").click()
        link = page.locator("ol.timeline a.tick").first
        link.focus()
        href = link.get_attribute("href")
        (gate / "3").touch()
        current_is("last")
        assert page.locator("table.log details").first.evaluate("d => d.open") is True
        assert page.evaluate("document.activeElement.getAttribute('href')") == href
    finally:
        for step in "123":
            (gate / step).touch()
        worker.join(timeout=60)
        store.close()


def _diagram_scale(page: Any) -> float:
    """How large the diagram's drawing is on screen against its own units (1: as the server laid it out; its box can
    be larger than the drawing in it, so the box's width does not tell)."""
    return float(page.eval_on_selector("#diagram svg", "s => s.getScreenCTM().a"))


def _smallest_text_px(page: Any) -> float:
    """The smallest text of the diagram as shown: its font size times the drawing's scale on screen."""
    return float(
        page.eval_on_selector(
            "#diagram svg",
            "s => Math.min(...[...s.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize)))"
            " * s.getScreenCTM().a",
        )
    )


def test_diagrams_stay_readable_at_any_size(browser: Any, server: Any, made: dict[str, Any]) -> None:
    """The team diagram (wide: one block per agent) was fitted to 31 %: now never under 75 %, its box scrolls, and
    the zoom buttons change it; on a phone too, without widening the page."""
    task = made["team"]["deliveries"][0]["correlation_id"]
    for width in (1280, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        try:
            p = context.new_page()
            p.goto(f"{server.url}/teams/{task}")
            _diagram(p)
            assert _diagram_scale(p) >= 0.74, (width, _diagram_scale(p))
            assert _smallest_text_px(p) >= 11, (width, _smallest_text_px(p))
            assert p.evaluate("document.scrollingElement.scrollWidth") <= width
            before = _diagram_scale(p)
            p.click(".diagram-tools button[aria-label='zoom in']")
            assert _diagram_scale(p) > before
        finally:
            context.close()


def test_the_memory_page_lists_recent_notes_before_any_search(page: Any, tmp_path: Path) -> None:
    """Opened without a search, the memory page lists the newest shared notes (a private note stays with its agent)."""
    from _ui_home import cli

    home = tmp_path / "home"
    for text, flags in (
        ("the deploy key rotates on Mondays", ["--shared"]),
        ("staging is frozen until Friday", ["--shared"]),
        ("my own scratch note", []),
    ):
        cli("memory", "write", text, "--agent", "ops", "--home", str(home), *flags)
    with _Server(home) as s:
        page.goto(f"{s.url}/memory")
        rows = page.locator("table.memory-recent tbody tr").all_inner_texts()
        assert len(rows) == 2 and "staging is frozen" in rows[0] and "deploy key" in rows[1], rows
        assert "scratch" not in page.inner_text("main")


def test_a_refused_review_says_why_with_a_way_back(page: Any, tmp_path: Path) -> None:
    """A candidate rejected meanwhile (another tab, the CLI) and then promoted from a page still showing it: the page
    says it is already rejected, and leads back to the procedure."""
    from _ui_home import cli

    home = tmp_path / "home"
    ids = _procedures_home(home)
    with _Server(home, allow_actions=True) as s:
        page.goto(f"{s.url}/procedures")
        cli("learn", "reject", ids["candidate"], "--home", str(home))
        page.click(f"tr[data-candidate='{ids['candidate']}'] form[action$='/promote'] button")
        page.wait_for_selector(".refusal")
        assert "already rejected" in page.locator(".refusal").inner_text()
        page.click("a.back")
        page.wait_for_url(f"{s.url}/procedures/{ids['candidate']}")


def test_every_link_of_the_main_pages_opens(page: Any, server: Any, made: dict[str, Any]) -> None:
    """No link on a page of the view answers 404: runs, a run, its steps, procedures, teams, memory, domains."""
    broken = {}
    for path in [p for p in _main_pages(made) if p != "/no/such/page"]:
        page.goto(f"{server.url}{path}")
        hrefs = page.eval_on_selector_all(
            "main a[href^='/']", "as => [...new Set(as.map(a => a.getAttribute('href').split('#')[0]))]"
        )
        for href in hrefs:
            status = page.request.get(f"{server.url}{href}").status
            if status != 200:
                broken[f"{path} → {href}"] = status
    assert not broken, broken


HOSTILE_TOPIC = "</text><script>window.__pwned=1</script>&amp;"


def test_diagrams_come_drawn_by_the_server_and_a_hostile_name_stays_text(page: Any, tmp_path: Path) -> None:
    """A team whose topic is named like markup runs for real; its page shows the name as text in the diagram the
    server drew (no element made of it), and the page loads nothing but itself, the stylesheet and ui.js: no
    diagram library (Mermaid's modules were 0.85 MB of them)."""
    import shutil

    from _ui_home import cli

    folder, home = tmp_path / "team", tmp_path / "home"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "critic_loop", folder)
    for name, old, new in (
        ("team.yaml", "subscribe: accepted", f"subscribe: ['{HOSTILE_TOPIC}']"),
        ("worker.yaml", "topic: accepted,", f"topic: '{HOSTILE_TOPIC}',"),
    ):
        text = (folder / name).read_text()
        assert old in text
        (folder / name).write_text(text.replace(old, new))
    cli("run", str(folder / "team.yaml"), "--home", str(home))
    with _Server(home) as s:
        task = page.request.get(f"{s.url}/api/teams").json()["teams"][0]["task"]
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url.removeprefix(s.url)) if "favicon" not in r.url else None)
        page.goto(f"{s.url}/teams/{task}")
        _diagram(page)
        assert sorted(asked) == sorted([f"/teams/{task}", "/static/style.css", "/static/ui.js"]), asked
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#diagram script, #diagram img").count() == 0
        texts = page.eval_on_selector_all("#diagram svg text", "ts => ts.map(t => t.textContent)")
        assert f"topic {HOSTILE_TOPIC}" in texts and "emits accepted" in texts
