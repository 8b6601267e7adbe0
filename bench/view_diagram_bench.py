"""Cold diagram pages against a cold list page in Chromium (issue 39): the time from navigation to the page's
diagrams-drawn mark (a list page: to `load`), each in a new browser context (empty cache), median of 7, alternating;
and a diagram page opened after another one in the same context (the Mermaid bundle then comes from the cache).

    python bench/view_diagram_bench.py [--rounds 7]

Writes the "Browser view: diagram pages" section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "ui"), str(ROOT / "bench")]

from _results import machine, median, percentile, write_section  # noqa: E402
from _ui_home import make_home  # noqa: E402
from test_ui_browser import CHROMIUM_ARGS, _Server  # noqa: E402

TITLE = "Browser view: diagram pages"


BEFORE = "58fce2a"  # the commit before issue 39: Mermaid's 3.5 MB single-file bundle and the ui.js that used it


def _old_files() -> dict[str, bytes]:
    """The single-file bundle and the old ui.js, from git: served in place of today's for the 'before' rows."""
    import subprocess

    def show(path: str) -> bytes:
        return subprocess.run(["git", "show", f"{BEFORE}:{path}"], cwd=ROOT, capture_output=True, check=True).stdout

    return {
        "bundle": show("sherpa_skills/ui/static/vendor/mermaid.min.js"),
        "ui": show("sherpa_skills/ui/static/ui.js"),
    }


def _as_before(context: Any, old: dict[str, bytes]) -> None:
    """Pages as they were: the bundle by a classic script, no module preloads, the old ui.js."""
    import re

    def page(route: Any) -> None:
        response = route.fetch()
        body = response.text()
        if "modulepreload" in body:
            body = re.sub(r'<link rel="modulepreload"[^>]*>\n?', "", body)
            body = body.replace(
                '<script src="/static/ui.js">',
                '<script src="/static/old/mermaid.min.js"></script><script src="/static/ui.js">',
            )
        route.fulfill(response=response, body=body)

    def asset(kind: str) -> Any:
        return lambda route: route.fulfill(
            status=200, body=old[kind], headers={"content-type": "text/javascript", "cache-control": "max-age=604800"}
        )

    context.route(re.compile(r".*/(runs|teams)/[^/]+$"), page)
    context.route("**/static/old/mermaid.min.js", asset("bundle"))
    context.route("**/static/ui.js", asset("ui"))


def _load(
    browser: object, url: str, drawn: bool, before: str | None = None, old: dict[str, bytes] | None = None
) -> float:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    try:
        if old is not None:
            _as_before(context, old)
        page = context.new_page()
        if before is not None:  # another diagram page first: its bundle is then in this context's cache
            page.goto(before)
            page.wait_for_selector("body[data-diagrams=drawn]", timeout=60_000)
        t0 = time.perf_counter()
        page.goto(url, wait_until="load")
        if drawn:
            page.wait_for_selector("body[data-diagrams=drawn]", timeout=60_000)
        return (time.perf_counter() - t0) * 1000
    finally:
        context.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    folder = Path(tempfile.mkdtemp(prefix="view-diagram-bench-"))
    started = time.perf_counter()
    try:
        made = make_home(folder / "home")
        run_id = made["waiting"]["run_id"]
        task = made["team"]["deliveries"][0]["correlation_id"]
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        with _Server(made["home"]) as server, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            old = _old_files()
            run, team = f"{server.url}/runs/{run_id}", f"{server.url}/teams/{task}"
            pages: dict[str, tuple[str, bool, str | None, dict[str, bytes] | None]] = {
                "`/runs` (list page), cold": (f"{server.url}/runs", False, None, None),
                "run page (machine diagram), cold": (run, True, None, None),
                "team page (team diagram), cold": (team, True, None, None),
                "run page after the team page (modules cached)": (run, True, team, None),
                "before: run page, cold (single-file bundle)": (run, True, None, old),
                "before: team page, cold (single-file bundle)": (team, True, None, old),
                "before: run page after the team page (bundle cached)": (run, True, team, old),
            }
            for url, drawn, before, variant in pages.values():  # one warm-up each: the server's first answers
                _load(browser, url, drawn, before, variant)
            times: dict[str, list[float]] = {name: [] for name in pages}
            for _ in range(args.rounds):
                for name, (url, drawn, before, variant) in pages.items():
                    times[name].append(_load(browser, url, drawn, before, variant))
            browser.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    base = median(times["`/runs` (list page), cold"])
    rows = "\n".join(
        f"| {name} | {median(v):.0f} | {percentile(v, 90):.0f} | "
        + ("baseline" if name.startswith("`/runs`") else f"{median(v) / base:.2f}× the list page")
        + " |"
        for name, v in times.items()
    )
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    lines = [
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- Machine: {machine()}; load average at start {' '.join(load_start)}, at end {' '.join(load_end)}"
        " (other engineers' tests ran at the same time)",
        f"- Command: `python bench/view_diagram_bench.py --rounds {args.rounds}`"
        f" (whole run {time.perf_counter() - started:.0f} s)",
        "- Each load is a new Chromium context (empty cache), from navigation to the page's diagrams-drawn mark (a list"
        " page: to `load`), the pages alternating; 'after the team page' opens the team page first in the same"
        " context, then times the run page. 'before' rows: the same pages as they were before issue 39 (the 3.5 MB"
        f" single-file bundle and the ui.js of commit {BEFORE}, served in their place by the browser), in the same"
        " run. Target (issue 39): a cold diagram page ≤ 2× a list page.",
        "",
        "| what | median ms | p90 ms | ratio in this run |",
        "|---|---:|---:|---|",
        rows,
        "",
        "Reading: the target is missed. A diagram page now loads Mermaid's module build — the 26 modules a state"
        " diagram needs, 0.85 MB instead of the 3.5 MB single-file bundle, named up front so they arrive in"
        " parallel — but what remains is Mermaid laying out and drawing the diagram in the page, which the cache"
        " does not remove (the cached row). Meeting ≤ 2× would take drawing on the server (Mermaid needs a browser"
        " for that; Graphviz is not in a wheel). Against the 'before' rows of the same run the module build is"
        " faster in each case, most when the modules are cached (the single-file bundle is parsed again on every"
        " page).",
    ]
    body = "\n".join(lines) + "\n"
    write_section(TITLE, body)
    print(body)


if __name__ == "__main__":
    main()
