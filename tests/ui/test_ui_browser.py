"""The browser view in a real headless Chromium (the distribution's), driven by Playwright: pages, diagram, live run.

Skips, saying why, where Chromium or Playwright is missing; `.ci/run` installs both.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
pytest.importorskip("uvicorn", reason="the ui extra (uvicorn) is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")

from _ui_home import GATED, shared_home  # noqa: E402

CHROMIUM = os.environ.get("SHERPA_SKILLS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    pytest.skip(
        "no Chromium on this machine (apt-get install chromium, or set SHERPA_SKILLS_CHROMIUM)", allow_module_level=True
    )

pytestmark = pytest.mark.slow

# Headless, and nothing that reaches outside hosts (updates, sync, field trials).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """uvicorn serving the app in a thread of this process, on a free loopback port."""

    def __init__(self, home: Path, allow_actions: bool = False, **guard: Any):
        import uvicorn

        from sherpa_skills.ui import create_app

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(home, allow_actions=allow_actions, **guard),
                host="127.0.0.1",
                port=self.port,
                log_level="warning",
                timeout_graceful_shutdown=1,
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return shared_home(tmp_path_factory)


@pytest.fixture(scope="module")
def server(made: dict[str, Any]) -> Any:
    with _Server(made["home"]) as s:
        yield s


@pytest.fixture(scope="module")
def browser() -> Any:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # Everything the pages need is served by the app: any request elsewhere (a CDN) fails the test.
    outside: list[str] = []
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith("http://127.0.0.1:")
            else (outside.append(route.request.url), route.abort())
        ),
    )
    # Every page runs under the view's Content-Security-Policy: a violation (an inline script, an inline style, an
    # eval) fails the test, as the browser reports it both as an event and in the console.
    context.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => console.error("
        "'CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile + ':' + e.lineNumber));"
    )
    p = context.new_page()
    errors: list[str] = []
    violations: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    p.on(
        "console",
        lambda m: (
            violations.append(m.text)
            if m.type == "error" and ("CSP violation" in m.text or "Content Security Policy" in m.text)
            else None
        ),
    )
    yield p
    context.close()
    assert not outside, f"the page asked for outside resources: {outside}"
    assert not errors, f"JavaScript errors: {errors}"
    assert not violations, f"Content-Security-Policy violations: {violations}"


def _diagram(page: Any) -> None:
    page.wait_for_selector("body[data-diagrams=drawn]", timeout=30_000)


def _current_node(page: Any) -> str:
    """The text of the diagram node marked current (the class the server's SVG puts on it)."""
    return page.eval_on_selector("#diagram svg g.node.current", "g => g.textContent.trim()")


def test_runs_page_lists_the_runs(page: Any, server: Any, made: dict[str, Any], tmp_path: Path) -> None:
    """The table shows the runs the examples made, with status and workflow; search narrows it."""
    page.goto(f"{server.url}/runs")
    waiting = made["waiting"]["run_id"]
    row = page.locator(f"tr[data-run='{waiting}']")
    assert row.locator(".status").inner_text() == "waiting"
    assert "support-triage" in row.inner_text()
    page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)
    page.fill("input[name=q]", "critic")
    page.click("form.filters button")
    page.wait_for_url("**/runs?q=critic*")
    ids = page.locator("tr[data-run]").evaluate_all("rows => rows.map(r => r.dataset.run)")
    assert ids and all(i.startswith("critic.") for i in ids)
    assert (tmp_path / "runs.png").stat().st_size > 10_000


def test_run_page_draws_the_machine_with_the_current_state(
    page: Any, server: Any, made: dict[str, Any], tmp_path: Path
) -> None:
    """A waiting run: nested states as nested boxes, visited states and the current one marked,
    trajectory and log shown."""
    run_id = made["waiting"]["run_id"]
    page.goto(f"{server.url}/runs/{run_id}")
    _diagram(page)
    assert _current_node(page) == "approval (waiting)"
    visited = page.eval_on_selector_all("#diagram svg g.node.visited", "gs => gs.map(g => g.textContent.trim())")
    assert {"intake", "assess", "technical", "draft", "check"} <= set(visited)
    clusters = page.eval_on_selector_all(
        "#diagram svg g.statediagram-cluster, #diagram svg g.cluster", "gs => gs.length"
    )
    assert clusters >= 2  # triage and respond drawn as boxes around their states
    timeline = page.locator("ol.timeline li").all_inner_texts()
    assert "respond/approval" in timeline[-1] and "intake" in timeline[0]
    assert page.locator("table.log tbody tr").count() >= 5
    assert "Waiting for input" in page.locator(".waiting").inner_text()
    assert page.title().endswith("sherpa-skills")  # the hostile input was text, not a script
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)


def test_procedures_pages_show_health_versions_and_the_divergence(
    page: Any, server: Any, made: dict[str, Any], tmp_path: Path
) -> None:
    pid = made["loop"]["procedures"][0]["id"]
    page.goto(f"{server.url}/procedures")
    row = page.locator(f"tr[data-procedure='{pid}']")
    assert row.locator(".status").inner_text() == made["loop"]["procedures"][0]["health"]
    assert page.locator("svg.spark rect").count() >= 3
    saved = page.locator(".saved-tokens b").inner_text()
    assert int(saved) > 0
    page.screenshot(path=str(tmp_path / "procedures.png"), full_page=True)
    page.click(f"text={pid}")
    page.wait_for_url(f"**/procedures/{pid}")
    assert page.locator(".version").count() == 2
    assert "-tar -czf build/notes.tar.gz notes" in page.locator(".version[data-version='2'] pre.diff").inner_text()
    diverged = page.locator("table.executions tr.o-diverged").first.inner_text()
    assert "2" in diverged and made["loop"]["replanned"]["reason"] in diverged
    page.screenshot(path=str(tmp_path / "procedure.png"), full_page=True)


def test_heartbeat_and_teams_pages(page: Any, server: Any, made: dict[str, Any], tmp_path: Path) -> None:
    page.goto(f"{server.url}/heartbeat")
    report = page.locator(".report").first
    assert "ran" in report.locator("h2 .status").inner_text()
    assert {"extract", "crystallise"} <= set(report.locator("table.phases td:first-child").all_inner_texts())
    page.screenshot(path=str(tmp_path / "heartbeat.png"), full_page=True)

    task = made["team"]["deliveries"][0]["correlation_id"]
    page.goto(f"{server.url}/teams")
    row = page.locator(f"tr[data-task='{task}']")
    assert "critic-loop" in row.inner_text() and "Explain what a state machine is" in row.inner_text()
    row.locator("a").first.click()
    _diagram(page)  # the team, drawn as it ran: one block per agent
    drawn = page.eval_on_selector("#diagram svg", "svg => svg.textContent")
    assert all(agent in drawn for agent in ("worker", "critic", "aggregator")) and "topic tasks" in drawn
    assert str(made["team"]["output"])[:30] in page.locator("dd.answer").inner_text()
    rows = page.locator("table.deliveries tbody tr")
    assert rows.count() == len(made["team"]["deliveries"])
    first = rows.first.locator("td").all_inner_texts()
    assert first[1:4] == ["operator", "task", "worker"]
    page.screenshot(path=str(tmp_path / "team.png"), full_page=True)


def test_follows_a_run_live(page: Any, server: Any, made: dict[str, Any], tmp_path: Path) -> None:
    """Opened while the run advances, the page moves the current state along without a reload,
    until the run is final."""
    from sherpa_skills.engine.runstore import RunStore
    from sherpa_skills.engine.workflow import load_workflow

    workflow_file = tmp_path / "gated.yaml"
    workflow_file.write_text(GATED)
    gate = tmp_path / "gate"
    gate.mkdir()
    store = RunStore(home=made["home"])
    agent = load_workflow(workflow_file).agent(store=store)
    result: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: result.update(r=agent.run({"gate": str(gate)})), daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while not store.search_runs(workflow="gated-walk", status="running")[0]:
            assert time.monotonic() < deadline and worker.is_alive(), "the gated run did not start"
            time.sleep(0.05)
        run_id = store.search_runs(workflow="gated-walk")[0][0].run_id
        page.goto(f"{server.url}/runs/{run_id}")
        _diagram(page)
        page.evaluate("window.__sameDocument = true")  # gone if the page reloads instead of updating in place
        assert page.locator("#run").get_attribute("data-status") == "running" and page.locator(".live").count() == 1
        assert _current_node(page) == "first"
        assert "shell" in page.locator(".in-flight").inner_text()  # the action it is waiting on
        # A state shows once its entry actions are committed: gate 1 lets `first` finish, gate 2 `middle/one`.
        for steps, expected in (("12", "one"), ("3", "last")):
            for step in steps:
                (gate / step).touch()
            page.wait_for_function(
                "name => { const g = document.querySelector('#diagram svg g.node.current');"
                " return g && g.textContent.trim() === name && document.body.dataset.diagrams === 'drawn'; }",
                arg=expected,
                timeout=60_000,
            )
            assert page.locator("ol.timeline li").last.inner_text().split()[1].endswith(expected)
        assert page.locator("#run").get_attribute("data-status") == "final" and page.locator(".live").count() == 0
        assert page.evaluate("window.__sameDocument") is True
        page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
    finally:
        for step in "123":
            (gate / step).touch()
        worker.join(timeout=60)
        store.close()
    assert result["r"].status == "final"


def test_run_page_after_its_workflow_is_edited_then_deleted_steps_and_fork(page: Any, tmp_path: Path) -> None:
    """Drawn from the run's own record whatever happened to the file; a step picked on the timeline shows the state
    then; the fork button starts a run from that step, which records where it came from."""
    import shutil

    from sherpa_skills.cli import main

    folder = tmp_path / "triage"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "support_triage", folder)
    workflow, home = folder / "workflow.yaml", tmp_path / "home"
    assert main(["run", str(workflow), "--home", str(home), "-i", "ticket=The app crashes with an error", "-q"]) == 0
    with _Server(home, allow_actions=True) as s:
        page.goto(f"{s.url}/runs")
        run_id = page.locator("tr[data-run]").first.get_attribute("data-run")
        workflow.write_text(workflow.read_text().replace("approval", "signoff"))
        page.goto(f"{s.url}/runs/{run_id}")
        _diagram(page)
        assert _current_node(page) == "approval (waiting)"
        assert "has changed since" in page.locator(".file-note").inner_text()
        page.screenshot(path=str(tmp_path / "edited.png"), full_page=True)
        workflow.unlink()
        page.reload()
        _diagram(page)
        assert _current_node(page) == "approval (waiting)"
        assert "deleted" in page.locator(".file-note").inner_text()
        page.click(".steps-bar a[data-tick='2']")
        page.wait_for_url(f"**/runs/{run_id}/steps/2")
        _diagram(page)
        assert _current_node(page) == "technical" and page.locator(".step-state").inner_text() == "triage/technical"
        assert '"team": "engineering"' in page.locator(".step-context").inner_text()
        page.screenshot(path=str(tmp_path / "step.png"), full_page=True)
        # The file is gone: the view refuses to fork (it has nothing to run the fork with), saying why.
        page.fill(".fork-form textarea[name=inputs]", "customer=Ada")
        with page.expect_response(f"**/runs/{run_id}/fork") as answer:
            page.click(".fork-form button")
        assert answer.value.status == 400 and "does not load" in page.locator(".refusal").inner_text()
        page.click("a.back")  # the refusal, in the page, with the way back
        page.wait_for_url(f"**/runs/{run_id}/steps/2")
        shutil.copy(Path(__file__).resolve().parents[2] / "examples" / "support_triage" / "workflow.yaml", workflow)
        page.goto(f"{s.url}/runs/{run_id}/steps/2")
        page.fill(".fork-form textarea[name=inputs]", "customer=Ada")
        page.click(".fork-form button")
        assert "customer=Ada" in page.locator(".fork-preview").inner_text()  # the plan first, as --dry-run says it
        page.click(".fork-confirm button")
        page.wait_for_url("**/runs/*")
        assert run_id not in page.url
        page.wait_for_function("() => document.querySelector('#run').dataset.status === 'waiting'", timeout=30_000)
        assert f"{run_id} at step 2" in page.locator(".provenance").inner_text()
        page.screenshot(path=str(tmp_path / "fork.png"), full_page=True)


def test_memory_and_domains_pages_and_the_styled_404(page: Any, server: Any, tmp_path: Path) -> None:
    """The heartbeat's counts of open tensions and proposals lead to pages that list them; an unknown path is styled."""
    page.goto(f"{server.url}/heartbeat")
    assert "{'" not in page.locator(".report").first.inner_text()  # no Python dicts in the summaries
    page.click("text=open tensions")
    page.wait_for_url("**/memory#tensions")
    assert page.locator("#tensions").count() == 1
    page.fill("input[name=q]", "triage")
    page.click("form.filters button")
    page.wait_for_url("**/memory?q=triage")
    page.screenshot(path=str(tmp_path / "memory.png"), full_page=True)
    page.goto(f"{server.url}/heartbeat")
    page.click("text=open proposals")
    page.wait_for_url("**/domains#proposals")
    assert page.locator("table.domains").count() == 1
    page.screenshot(path=str(tmp_path / "domains.png"), full_page=True)
    answer = page.goto(f"{server.url}/no/such/page")
    assert answer is not None and answer.status == 404
    assert page.locator("header nav").count() == 1 and "no page at /no/such/page" in page.inner_text("main")


TOKEN = "t0ken-for-the-remote-view-0123456789"


def _other_site(link: str) -> Any:
    """A page on another origin (localhost is another site than 127.0.0.1) holding one link: where a token link is
    followed from a chat or a mail."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f'<a id="link" href="{link}">the view</a>'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_remote_view_signs_in_once_from_the_address(
    page: Any, browser: Any, made: dict[str, Any], tmp_path: Path
) -> None:
    """Beyond loopback: without the token a refusal page; the printed address signs the browser in and lands on the
    same page without the token; the cookie (HttpOnly, SameSite=Strict, not the token) then serves every page, the
    diagram and the live stream; another browser profile is still refused."""
    run_id = made["waiting"]["run_id"]
    with _Server(made["home"], allowed_hosts=["127.0.0.1"], token=TOKEN) as s:
        refused = page.goto(f"{s.url}/runs/{run_id}")
        assert refused is not None and refused.status == 401 and "needs its token" in page.inner_text("body")
        landed = page.goto(f"{s.url}/runs/{run_id}?tail=50&token={TOKEN}")
        assert landed is not None and landed.status == 200 and page.url == f"{s.url}/runs/{run_id}?tail=50"
        _diagram(page)
        assert _current_node(page) == "approval (waiting)"
        assert page.evaluate("document.cookie") == ""  # HttpOnly: no script on the page can read it
        (cookie,) = page.context.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]
        for path in ("/procedures", "/heartbeat", "/teams", "/memory", "/domains"):
            answer = page.goto(f"{s.url}{path}")
            assert answer is not None and answer.status == 200, path
        page.goto(f"{s.url}/runs")
        assert page.locator(f"tr[data-run='{run_id}']").count() == 1
        stranger = browser.new_context()
        try:
            answer = stranger.new_page().goto(f"{s.url}/runs")
            assert answer is not None and answer.status == 401
        finally:
            stranger.close()


def test_a_token_link_followed_from_another_site_signs_in(browser: Any, made: dict[str, Any]) -> None:
    """A browser sends no SameSite=Strict cookie along a redirect another site started: the sign-in still lands on the
    page (the view moves on by a navigation of its own), without the token in the address."""
    with _Server(made["home"], allowed_hosts=["127.0.0.1"], token=TOKEN) as s:
        other = _other_site(f"{s.url}/procedures?token={TOKEN}")
        context = browser.new_context()  # not the page fixture's: this test visits another (local) site on purpose
        try:
            page = context.new_page()
            page.goto(f"http://localhost:{other.server_address[1]}/")
            page.click("#link")
            page.wait_for_url(f"{s.url}/procedures")
            assert page.locator("h1").count() >= 1 and "needs its token" not in page.inner_text("body")
        finally:
            context.close()
            other.shutdown()


def test_the_csp_refuses_an_injected_inline_script(browser: Any, server: Any) -> None:
    """Should markup ever slip through escaping, an inline script does not run: the policy allows only the view's own
    script files, and the browser reports the refusal."""
    context = browser.new_context()
    try:
        p = context.new_page()
        reported: list[str] = []
        p.on("console", lambda m: reported.append(m.text) if "Content Security Policy" in m.text else None)
        p.goto(f"{server.url}/runs")
        p.evaluate(
            "() => { const s = document.createElement('script'); s.textContent = 'window.__owned = 1';"
            " document.body.appendChild(s); }"
        )
        p.wait_for_timeout(200)
        assert p.evaluate("typeof window.__owned") == "undefined" and reported, reported
    finally:
        context.close()


def test_an_empty_home_shows_how_to_start_and_stays_empty(page: Any, tmp_path: Path) -> None:
    home = tmp_path / "empty"
    home.mkdir()
    with _Server(home) as s:
        for path in ("/runs", "/procedures", "/heartbeat", "/teams", "/memory", "/domains"):
            page.goto(f"{s.url}{path}")
            assert "Nothing here yet" in page.locator(".empty-home").inner_text(), path
        assert f"sherpa-skills demo --home {home}" in page.locator(".empty-home pre").inner_text()
        page.screenshot(path=str(tmp_path / "empty.png"), full_page=True)
    assert list(home.iterdir()) == []
