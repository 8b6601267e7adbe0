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

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "ui"), str(ROOT / "bench")]

from _results import machine, median, percentile, write_section  # noqa: E402
from _ui_home import make_home  # noqa: E402
from test_ui_browser import CHROMIUM_ARGS, _Server  # noqa: E402

TITLE = "Browser view: diagram pages"


def _load(browser: object, url: str, drawn: bool, before: str | None = None) -> float:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    try:
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
            pages = {
                "`/runs` (list page), cold": (f"{server.url}/runs", False, None),
                "run page (machine diagram), cold": (f"{server.url}/runs/{run_id}", True, None),
                "team page (team diagram), cold": (f"{server.url}/teams/{task}", True, None),
                "run page after the team page (bundle cached)": (
                    f"{server.url}/runs/{run_id}",
                    True,
                    f"{server.url}/teams/{task}",
                ),
            }
            for url, drawn, before in pages.values():  # one warm-up each: the server's first answers
                _load(browser, url, drawn, before)
            times: dict[str, list[float]] = {name: [] for name in pages}
            for _ in range(args.rounds):
                for name, (url, drawn, before) in pages.items():
                    times[name].append(_load(browser, url, drawn, before))
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
        " context, then times the run page. Target (issue 39): a cold diagram page ≤ 2× a list page.",
        "",
        "| what | median ms | p90 ms | ratio in this run |",
        "|---|---:|---:|---|",
        rows,
        "",
        "Reading: the target is missed. A diagram page now loads Mermaid's module build — the 26 modules a state"
        " diagram needs, 0.85 MB instead of the 3.5 MB single-file bundle, named up front so they arrive in"
        " parallel — but what remains is Mermaid laying out and drawing the diagram in the page, which the cache"
        " does not remove (the cached row). Meeting ≤ 2× would take drawing on the server (Mermaid needs a browser"
        " for that; Graphviz is not in a wheel). The same script on the single-file bundle, earlier the same day"
        " (3 rounds, load 7): run page 6.49×, team page 8.06×, cached 2.68× its list page.",
    ]
    body = "\n".join(lines) + "\n"
    write_section(TITLE, body)
    print(body)


if __name__ == "__main__":
    main()
