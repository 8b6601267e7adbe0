"""Cold diagram pages against a cold list page in Chromium (issue 39): the time from navigation to the page's
diagrams-drawn mark (which ui.js sets on every page, a list page's too), each in a new browser context (empty
cache), median of 7, alternating; a diagram page opened after another one in the same context; and, in the same run,
the same pages served by the code before the diagrams were drawn on the server (Mermaid's module build in the
browser, commit BEFORE, run from a copy of its tree in a child process over the same home).

    python bench/view_diagram_bench.py [--rounds 7]

Writes the "Browser view: diagram pages" section of bench/RESULTS.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "ui"), str(ROOT / "bench")]

from _ui_home import make_home  # noqa: E402
from harness import arguments, machine, median, parse, percentile, skip, write_section  # noqa: E402
from test_ui_browser import CHROMIUM_ARGS, _Server  # noqa: E402

TITLE = "Browser view: diagram pages"


BEFORE = "0412fdd"  # the last commit drawing diagrams in the browser (Mermaid's module build, preloaded)


@contextlib.contextmanager
def _old_server(folder: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """`sherpa-skills ui` of commit BEFORE, from a copy of that commit's tree in a child process, over a home that
    commit's own test helper made (a home made by today's code carries migrations it refuses to open); its URL and
    what the helper made."""
    tree = folder / "before"
    tree.mkdir()
    archive = subprocess.run(
        [
            "git",
            "archive",
            "--format=tar",
            BEFORE,
            "sherpa_skills",
            "tests/ui",
            "examples",
            "policies",
            "statemachines",
        ],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    archive_path = folder / "before.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(tree, filter="data")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    home = folder / "before-home"
    maker = (
        "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); from _ui_home import make_home; "
        "print(json.dumps(make_home(Path(sys.argv[2])), default=str))"
    )
    made = json.loads(
        subprocess.run(
            [sys.executable, "-c", maker, str(tree / "tests" / "ui"), str(home)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    child = subprocess.Popen(
        [sys.executable, "-m", "sherpa_skills.cli.main", "ui", "--home", str(made["home"]), "--port", str(port)],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/runs", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or child.poll() is not None:
                    raise RuntimeError(f"the server of {BEFORE} did not start") from None
                time.sleep(0.2)
        yield url, made
    finally:
        child.terminate()
        child.wait(timeout=10)


# In the page's own clock (ms from navigation start): when ui.js marks the diagrams drawn (every page's ui.js, the old
# commit's too, sets it), free of the round trips Playwright adds on a loaded machine.
MARK = """
new MutationObserver(() => {
  if (!window.__drawnAt && document.body && document.body.dataset.diagrams === "drawn") {
    window.__drawnAt = performance.now();
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-diagrams"]});
"""
IN_PAGE = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  return nav && nav.loadEventEnd > 0 && window.__drawnAt ? Math.max(nav.loadEventEnd, window.__drawnAt) : 0;
}"""


def _load(browser: object, url: str, drawn: bool, before: str | None = None) -> tuple[float, float]:
    """(wall ms from navigation to the mark as Playwright sees it, the same in the page's own clock; a list page: to
    `load`, and in the page to the later of `load` and the mark)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    try:
        context.add_init_script(MARK)
        page = context.new_page()
        if before is not None:  # another diagram page first: its stylesheet and script are then in the cache
            page.goto(before)
            page.wait_for_selector("body[data-diagrams=drawn]", timeout=60_000)
        t0 = time.perf_counter()
        page.goto(url, wait_until="load")
        if drawn:
            page.wait_for_selector("body[data-diagrams=drawn]", timeout=60_000)
        wall = (time.perf_counter() - t0) * 1000
        in_page = float(page.wait_for_function(IN_PAGE, timeout=60_000).json_value())
        return wall, in_page
    finally:
        context.close()


def reading(times: dict[str, list[float]], base: float, inside: dict[str, list[float]], base_in: float) -> str:
    run = median(times["run page (machine diagram), cold"]) / base
    team = median(times["team page (team diagram), cold"]) / base
    run_in = median(inside["run page (machine diagram), cold"]) / base_in
    team_in = median(inside["team page (team diagram), cold"]) / base_in
    met = "met" if max(run, team) <= 2 else "missed"
    met_in = "met" if max(run_in, team_in) <= 2 else "missed"
    same = median(inside["`/runs` (list page), cold, to `load` only (as earlier rounds timed it)"]) / base_in
    return (
        f"Reading: in wall time the target is {met}: a cold run page costs {run:.2f}× and a cold team page"
        f" {team:.2f}× the list page (target ≤ 2×); in the page's own clock it is {met_in} ({run_in:.2f}× and"
        f" {team_in:.2f}×). Wall time includes Playwright's round trip after `load` to see the mark, which a loaded"
        " machine stretches; the page's clock has none. The two `/runs` rows are the same page, alike in the page's"
        f" clock: their in-page ratio ({same:.2f}×) is what the machine's load alone does between medians."
        " The diagram arrives"
        " drawn in the page (SVG laid out on the server, once per machine), so a diagram page loads what a list page"
        " loads — the page, style.css and ui.js — and no diagram library; what remains is the larger page (its"
        " timeline, log and the SVG) and the machine's load, which moves single loads by hundreds of ms."
        " The 'before' rows, in the same run, are"
        " Mermaid's module build laying the diagram out in the browser."
    )


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = arguments(__doc__, quick="one round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parse(parser)
    if args.quick:
        args.rounds = 1
    known = subprocess.run(["git", "cat-file", "-e", f"{BEFORE}^{{commit}}"], cwd=ROOT, capture_output=True)
    if known.returncode != 0:
        skip(f"commit {BEFORE} is not in this clone (a shallow one?): the page it drew cannot be measured beside")
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    folder = Path(tempfile.mkdtemp(prefix="view-diagram-bench-"))
    started = time.perf_counter()
    try:
        made = make_home(folder / "home")
        run_id = made["waiting"]["run_id"]
        task = made["team"]["deliveries"][0]["correlation_id"]
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        with (
            _Server(made["home"]) as server,
            _old_server(folder) as (old, old_made),
            sync_playwright() as p,
        ):
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            run, team = f"/runs/{run_id}", f"/teams/{task}"
            now = server.url
            old_run = f"/runs/{old_made['waiting']['run_id']}"
            old_team = f"/teams/{old_made['team']['deliveries'][0]['correlation_id']}"
            pages: dict[str, tuple[str, bool, str | None]] = {
                "`/runs` (list page), cold": (f"{now}/runs", True, None),
                "`/runs` (list page), cold, to `load` only (as earlier rounds timed it)": (f"{now}/runs", False, None),
                "run page (machine diagram), cold": (now + run, True, None),
                "team page (team diagram), cold": (now + team, True, None),
                "run page after the team page (same context)": (now + run, True, now + team),
                f"before ({BEFORE}, Mermaid in the browser): run page, cold": (old + old_run, True, None),
                f"before ({BEFORE}, Mermaid in the browser): team page, cold": (old + old_team, True, None),
                f"before ({BEFORE}): run page after the team page (modules cached)": (
                    old + old_run,
                    True,
                    old + old_team,
                ),
            }
            for url, drawn, before in pages.values():  # one warm-up each: the servers' first answers
                _load(browser, url, drawn, before)
            times: dict[str, list[float]] = {name: [] for name in pages}
            inside: dict[str, list[float]] = {name: [] for name in pages}
            for _ in range(args.rounds):
                for name, (url, drawn, before) in pages.items():
                    wall, in_page = _load(browser, url, drawn, before)
                    times[name].append(wall)
                    inside[name].append(in_page)
            browser.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    base = median(times["`/runs` (list page), cold"])
    base_in = median(inside["`/runs` (list page), cold"])
    rows = "\n".join(
        f"| {name} | {median(v):.0f} | {percentile(v, 90):.0f} | "
        + ("baseline" if name == "`/runs` (list page), cold" else f"{median(v) / base:.2f}×")
        + f" | {median(inside[name]):.0f} | "
        + ("baseline" if name == "`/runs` (list page), cold" else f"{median(inside[name]) / base_in:.2f}×")
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
        "- Each load is a new Chromium context (empty cache), from navigation to the page's diagrams-drawn mark"
        " (`body[data-diagrams=drawn]`, set by ui.js on every page once its diagram, if any, is sized: the list page"
        " is timed to the same mark, so each load ends the same way; earlier rounds timed it to `load`), the pages"
        " alternating; 'wall' is Playwright's clock, 'in-page' the page's own (navigation start to the later of"
        " `load` and the mark, seen by a MutationObserver); 'after the team page' opens the team page first in the"
        f" same context, then times the run page."
        " 'before' rows: the same pages over a home made alike by that commit's own test helper, served by"
        f" commit {BEFORE} (Mermaid's module build drawing in the browser) from a copy of its tree in a child"
        " process, in the same run. Target (issue 39):"
        " a cold diagram page ≤ 2× a list page.",
        "",
        "| what | wall median ms | wall p90 ms | wall ratio to the list page | in-page median ms | in-page ratio |",
        "|---|---:|---:|---|---:|---|",
        rows,
        "",
        reading(times, base, inside, base_in),
    ]
    body = "\n".join(lines) + "\n"
    write_section(TITLE, body)
    print(body)


if __name__ == "__main__":
    main()
