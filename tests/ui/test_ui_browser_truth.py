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
