"""Twenty tickets of three kinds through a workflow that learns (`policy: {learn: true}`), with the scripted model.

The first tickets of a kind are planned by the LLM and captured (a procedure is replayed once two successes prove it);
meanwhile the workflow's decision memory takes the decisions its past ones agree on; later tickets replay with no LLM
call. A refund whose charge is disputed diverges where its guard now fails, the LLM takes over in the same run, and
that success becomes the refund procedure's branch: the routine refund after it replays again.
Run it with `python examples/ticket_learning/stream.py [--home DIR]` (default: a fresh temporary folder).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import sherpa_skills as sk
from sherpa_skills.logs import configure

HERE = Path(__file__).resolve().parent
KINDS = {
    "refund": "Please refund my order, it arrived damaged",
    "crash": "The app crashes when I open my account settings",
    "question": "What are your opening hours on Sundays?",
}
ORDER = ["refund", "crash", "question"] * 6 + ["refund", "crash"]  # 20 tickets
DISPUTED = 15  # this refund's charge is disputed with the bank: its close guard fails


def tickets() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for n, kind in enumerate(ORDER):
        inputs: dict[str, Any] = {"ticket": KINDS[kind]}
        if kind == "refund":
            inputs["order"] = str(4400 + n)
            inputs["disputed"] = n == DISPUTED
        out.append((kind, inputs))
    return out


def stream(home: Path) -> list[dict[str, Any]]:
    """Run every ticket in `home` (runs and procedures), and say per ticket how it went."""
    workflow = sk.load_workflow(HERE / "workflow.yaml")
    runs = sk.RunStore(home=home)
    rows = []
    try:
        for n, (kind, inputs) in enumerate(tickets()):
            result = workflow.agent(store=runs).run(inputs)  # learn: true → learns in the home's skill store
            rows.append(
                {
                    "ticket": n,
                    "kind": kind,
                    "status": result.status,
                    "state": result.state,
                    "llm_calls": result.llm_calls,
                    "replayed_decisions": result.replayed_decisions,
                    "tokens_saved": result.tokens_saved,
                    "diverged_at": result.diverged_at,
                    "run_id": result.run_id,
                    "context": result.context,
                }
            )
    finally:
        runs.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--home", help="where runs and procedures are kept (default: a fresh temporary folder)")
    home = Path(parser.parse_args().home or tempfile.mkdtemp(prefix="sherpa-tickets-"))
    configure(level="error")  # the lines below report each ticket; the first match's "no companion yet" is expected
    rows = stream(home)
    for r in rows:
        diverged = (
            f"  diverged at step {r['diverged_at']['step']} in {r['diverged_at']['state']}" if r["diverged_at"] else ""
        )
        print(
            f"{r['ticket']:>2} {r['kind']:<8} {r['state']:<10} LLM calls {r['llm_calls']}  replayed "
            f"{r['replayed_decisions']}  tokens saved {r['tokens_saved']}{diverged}"
        )
    print(
        f"{len(rows)} tickets, {sum(r['llm_calls'] for r in rows)} LLM calls, "
        f"{sum(r['replayed_decisions'] for r in rows)} decisions replayed; home {home}"
    )


if __name__ == "__main__":
    main()
