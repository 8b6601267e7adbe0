"""`sherpa-skills demo`: the support-triage example end to end, offline, with the scripted stand-in model."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from .console import EXIT_ERROR, EXIT_OK, print_commands

TICKETS = [
    ("billing, decided by a rule", "I was charged twice for my subscription this month."),
    ("technical, decided by the LLM, needs a human", "The app crashes with an error every time I open it."),
]


def run_demo(home: str | None = None, as_json: bool = False) -> int:
    from rich.console import Console

    from ..data import data_dir
    from ..logs import configure
    from ..runtime import load_workflow
    from ..stores import Home

    configure(level="error")
    console = Console(stderr=as_json, highlight=False)
    if home is None:
        from ..db.url import keep_local

        keep_local()  # a temporary home holds the demo's stores, whatever SHERPA_SKILLS_DATABASE names
    home_dir = Path(home) if home else Path(tempfile.mkdtemp(prefix="sherpa-skills-demo-"))
    workflow_file = data_dir("examples") / "support_triage" / "workflow.yaml"
    workflow = load_workflow(workflow_file)
    house = Home(home_dir)
    store = house.runs
    console.print(
        f"[bold]sherpa-skills demo[/] — workflow {workflow_file.name} ({workflow.spec.name}), "
        f"model: the offline scripted stand-in, home: {home_dir}\n"
    )
    results: list[dict[str, Any]] = []

    def show(title: str, result: Any) -> None:
        d = result.to_dict()
        results.append({k: v for k, v in d.items() if k != "context"})
        path = " → ".join(t.state for t in store.load_belief(result.run_id).trajectory)
        console.print(
            f"[bold]{title}[/]\n  {path}\n  [bold]{d['status']}[/] in {d['state']}: {d['steps']} steps, "
            f"{d['fast_forwards']} fast-forwarded, {d['rule_decisions']} by rules, {d['llm_decisions']} by the LLM, "
            f"{d['llm_calls']} LLM calls, {d['tokens']} tokens"
        )
        if d["status"] == "waiting":
            console.print(f"  waiting for: {d['waiting_for']}")
        if d["error"]:
            console.print(f"  [red]{d['error']}[/]")

    waiting_run = None
    for label, ticket in TICKETS:
        result = workflow.agent(store=store).run({"ticket": ticket, "customer": "Ada"})
        show(f"ticket: {ticket!r} ({label})", result)
        if result.status == "waiting":
            waiting_run = result.run_id
    if waiting_run:
        resumed = workflow.resume(store, waiting_run).run({"approved": True})
        show(f"a human approves run {waiting_run} (resumed from the store)", resumed)
        console.print(f"\n  the reply that went out: {resumed.context['draft']['text']!r}")
    console.print("\nInspect the runs:")
    print_commands(console, ["sherpa-skills", "runs", "--home", str(home_dir)])
    house.close()
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    return EXIT_OK if all(r["status"] in ("final", "waiting") for r in results) else EXIT_ERROR
