"""Screenshots of the browser view's main pages at 1280 and 390 px, over a home made by the examples.

    python docs/screenshots/take.py [HOME]   # HOME: an existing home; without it one is made in a temporary folder

Needs the ui extra, Playwright and a system Chromium (as tests/ui/test_ui_browser.py does).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from _ui_home import make_home  # noqa: E402
from test_ui_browser import CHROMIUM_ARGS, _Server  # noqa: E402

OUT = Path(__file__).parent


def main() -> None:
    from playwright.sync_api import sync_playwright

    home = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "home"
    made = make_home(home) if not (home / "store.db").exists() else None
    from sherpa_skills.engine.runstore import RunStore

    store = RunStore(home=home)
    waiting = made["waiting"]["run_id"] if made else store.search_runs(status="waiting")[0][0].run_id
    failed = store.search_runs(status="error")[0]
    store.close()
    pages = {
        "runs": "/runs",
        "run": f"/runs/{waiting}",
        "step": f"/runs/{waiting}/steps/2",
        "procedures": "/procedures",
        "heartbeat": "/heartbeat",
        "teams": "/teams",
        "memory": "/memory",
    }
    if failed:  # a run whose last step failed: where, and which action
        pages["failed-run"] = f"/runs/{failed[0].run_id}"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with _Server(home) as server, sync_playwright() as p:
        import json
        import urllib.request

        with urllib.request.urlopen(server.url + "/api/teams") as answer:
            teams = json.load(answer)["teams"]
        if teams:  # a team's task: the team drawn as it ran
            pages["team"] = f"/teams/{teams[0]['task']}"
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for width in (1280, 390):
            context = browser.new_context(viewport={"width": width, "height": 900 if width > 400 else 844})
            page = context.new_page()
            for name, path in pages.items():
                page.goto(server.url + path)
                drawn = page.locator("#diagram").count() > 0
                if drawn:
                    page.wait_for_selector("body[data-diagrams=drawn]")
                # A diagram page whole at 1280 too: the diagram is below the fold.
                page.screenshot(path=str(OUT / f"{name}-{width}.png"), full_page=width < 400 or drawn)
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
