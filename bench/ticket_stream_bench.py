"""Tickets in customers' own words through the ticket workflow that learns, against the same tickets unreplayed.

The stream (issue 23): 60 tickets, kinds in turn (refund, crash, question), each in its customer's wording
(`tickets_dev.json`), orders random four-digit numbers, every tenth refund disputed with the bank. The model is the
stand-in that routes by the customer's words (`tickets.script.yaml`), with rules of this bench's own on top for the
judge's multiple-choice question (it picks the offered procedure of the ticket's kind by the same words, else none).

Each ticket runs twice, in two homes: learning (`learn: true`), and unreplayed (`learn=False`). Compared per ticket:
the final state, every context value (each decision's arguments land there: order → refunded, severity) and the
triggers taken. Then the decision memory's cost: the time of a replayed decision (its embedding left out, made once
per run), and `answer()` at 100 and at 10,000 examples.

    python bench/ticket_stream_bench.py              # about a minute; rewrites a section of bench/RESULTS.md
    python bench/ticket_stream_bench.py --no-write   # print it only
    python bench/ticket_stream_bench.py --tickets OTHER.json   # another stream of the same kinds (a held-out one)

Needs SHERPA_SKILLS_LEARNING_DATA (the folder with tickets_dev.json and tickets.script.yaml).
"""

from __future__ import annotations

import json
import os
import random
import shlex
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, median, parse, percentile, skip, write_section  # noqa: E402

TITLE = "Decisions that generalise: tickets in customers' own words"
WORKFLOW = ROOT / "examples" / "ticket_learning" / "workflow.yaml"
KINDS = ("refund", "crash", "question")
# The judge's question, answered as the stand-in routes: the offered procedure of the ticket's own kind, else none.
JUDGE_RULES = r"""
  - match: 'Task: [^\n]*(?i:refund|money back)[^\n]*\n\n(?:[^\n]*\n)?(?:[^\n]*\n)*?(\d)\. [^\n]*(?i:refund|money back)'
    respond: '{"choice": {{ groups[0] }}, "params": {}}'
  - match: 'Task: [^\n]*(?i:crash)[^\n]*\n\n(?:[^\n]*\n)?(?:[^\n]*\n)*?(\d)\. [^\n]*(?i:crash)'
    respond: '{"choice": {{ groups[0] }}, "params": {}}'
  - match: 'Task: '
    respond: '{"choice": 0, "params": {}}'
"""


def data_dir() -> Path:
    found = os.environ.get("SHERPA_SKILLS_LEARNING_DATA")
    if not found:
        skip("set SHERPA_SKILLS_LEARNING_DATA to the folder with tickets_dev.json and tickets.script.yaml")
    return Path(found)


def stream(
    tickets: dict[str, list[str]], seed: int = 23, shuffle: int | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Kinds in turn, each in its customers' words; random four-digit orders; every tenth refund disputed. `shuffle`
    reorders each kind's tickets (another arrival order of the same customers)."""
    rng = random.Random(seed)
    if shuffle is not None:
        order = random.Random(shuffle)
        tickets = {k: order.sample(tickets[k], len(tickets[k])) for k in KINDS}
    out: list[tuple[str, dict[str, Any]]] = []
    refunds = 0
    for n in range(min(len(tickets[k]) for k in KINDS) * len(KINDS)):
        kind = KINDS[n % len(KINDS)]
        inputs: dict[str, Any] = {"ticket": tickets[kind][n // len(KINDS)]}
        if kind == "refund":
            refunds += 1
            inputs["order"] = str(rng.randint(1000, 9999))
            inputs["disputed"] = refunds % 10 == 0
        out.append((kind, inputs))
    return out


def script_with_judge(shared: Path, folder: Path) -> Path:
    """The shared stand-in's answers with the judge rules first, as a script in `folder` (the shared file is read,
    never copied into the repository)."""
    text = shared.read_text(encoding="utf-8")
    head, answers = text.split("answers:", 1)
    path = folder / "tickets-with-judge.script.yaml"
    path.write_text(head + "answers:" + JUDGE_RULES + answers, encoding="utf-8")
    return path


def run_stream(home: Path, script: Path, items: list[tuple[str, dict[str, Any]]], learn: bool) -> list[dict[str, Any]]:
    import sherpa_skills as sk

    text = WORKFLOW.read_text(encoding="utf-8").replace(
        "model: scripted/tickets.script.yaml", f"model: scripted/{script}"
    )
    workflow = sk.load_workflow_text(text, base_dir=WORKFLOW.parent)
    runs = sk.RunStore(home=home)
    rows = []
    try:
        for kind, inputs in items:
            agent = workflow.agent(store=runs, learn=learn, home=home)
            started = time.perf_counter()
            result = agent.run(inputs)
            rows.append(
                {
                    "kind": kind,
                    "state": result.state,
                    "status": result.status,
                    "context": {k: v for k, v in result.context.items() if k != "event"},
                    "triggers": [t.trigger for t in agent.belief.trajectory if t.trigger],
                    "asked": [t.source for t in agent.belief.trajectory if t.trigger and t.decided_by == "llm"],
                    "llm_calls": result.counters["llm_calls"],
                    "replayed": result.counters["replayed_decisions"],
                    "learning": result.learning,
                    "ms": (time.perf_counter() - started) * 1000,
                }
            )
    finally:
        runs.close()
    return rows


def who_asked(rows: list[dict[str, Any]], start: int) -> str:
    """Who asked the model from ticket `start` on: each ticket's model decisions (state, and why the decision memory
    abstained there) and its judge's calls, as `#index kind: ...`."""
    out = []
    for i, r in enumerate(rows[start:], start):
        if not r["llm_calls"]:
            continue
        learning = r["learning"] or {}
        why = {}
        for line in learning.get("memory_abstained") or []:
            state, _, reason = line.partition(": ")
            why.setdefault(state, reason)
        parts = [f"model at {s} (memory: {why.get(s, 'not asked')})" for s in r["asked"]]
        judged = learning.get("judged")
        if isinstance(judged, dict) and judged.get("calls"):
            parts.append(f"judge {judged['calls']} call(s)")
        out.append(f"#{i} {r['kind']}: " + "; ".join(parts or [f"{r['llm_calls']} call(s)"]))
    return " · ".join(out) or "none"


def memory_timing(sizes: tuple[int, ...] = (100, 10_000), reps: int = 2000) -> dict[int, float]:
    """Median µs of one `answer()` that decides by meaning, with `size` examples at the state (3 decisions); the sizes
    are asked in turn, so a busy machine slows both alike."""
    import numpy as np
    from seams import DecisionMemory, Example, ProcedureDatabase, add_examples, scorer

    rng = np.random.default_rng(7)
    centres = rng.normal(size=(3, 384)).astype(np.float32)
    features = {"ctx:disputed": False, "options": "t0,t1,t2"}
    query = centres[1] + rng.normal(scale=0.3, size=384).astype(np.float32)
    memories = {}
    with tempfile.TemporaryDirectory(prefix="sherpa-memory-") as tmp:
        for size in sizes:
            store = ProcedureDatabase(path=Path(tmp) / f"store-{size}.db")
            examples = [
                Example(
                    workflow="w",
                    state="assess",
                    trigger=f"t{i % 3}",
                    args={},
                    features=features,
                    path="",
                    task=f"task {i}",
                    vector=(centres[i % 3] + rng.normal(scale=0.6, size=384).astype(np.float32)).tobytes(),
                    # Calibrated: every example a point the head got right, so `answer()` decides (and is timed).
                    score=0.0,
                    hit=True,
                    scorer=scorer(),
                )
                for i in range(size)
            ]
            add_examples(store, examples)
            memories[size] = DecisionMemory(store)
            memories[size].refresh("w")
            store.close()
        times: dict[int, list[float]] = {size: [] for size in sizes}
        for _ in range(reps):
            for size in sizes:
                started = time.perf_counter()
                answer = memories[size].answer("w", "assess", lambda: query, features, "", 0.05)
                times[size].append((time.perf_counter() - started) * 1e6)
                assert answer.example is not None and answer.example.trigger == "t1", answer.why
    return {size: median(values) for size, values in times.items()}


def readme_routine() -> list[int]:
    """The README's scenario: the example stream (its disputed refund included), then the routine refund three times as
    `sherpa-skills run ... -i order=4500` gives it (a number): the LLM calls of each."""
    import importlib.util

    import sherpa_skills as sk

    spec = importlib.util.spec_from_file_location("stream", ROOT / "examples" / "ticket_learning" / "stream.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with tempfile.TemporaryDirectory(prefix="sherpa-readme-") as tmp:
        example.stream(Path(tmp))
        workflow = sk.load_workflow(WORKFLOW)
        runs = sk.RunStore(home=Path(tmp))
        try:
            inputs = {"ticket": "Please refund my order, it arrived damaged", "order": 4500}
            return [workflow.agent(store=runs).run(inputs).counters["llm_calls"] for _ in range(3)]
        finally:
            runs.close()


def main() -> None:
    parser = arguments(description=__doc__.split("\n", 1)[0], quick="3 tickets of each kind, no other orders")
    parser.add_argument("--tickets", help="a tickets file of the same shape (default: the dev set)")
    parser.add_argument("--orders", type=int, default=3, help="other arrival orders of the same tickets to run too")
    args = parse(parser)
    if args.quick:
        args.orders = 0
    from seams import configure

    configure(level="error")
    data = data_dir()
    tickets_file = Path(args.tickets) if args.tickets else data / "tickets_dev.json"
    tickets = json.loads(tickets_file.read_text(encoding="utf-8"))
    if args.quick:
        tickets = {kind: told[:3] for kind, told in tickets.items()}
    items = stream(tickets)
    with tempfile.TemporaryDirectory(prefix="sherpa-ticket-stream-") as tmp:
        script = script_with_judge(data / "tickets.script.yaml", Path(tmp))
        learned = run_stream(Path(tmp) / "learning", script, items, True)
        plain = run_stream(Path(tmp) / "plain", script, items, False)
    n = len(items)
    third = n - n // 3
    differ = [
        i
        for i, (a, b) in enumerate(zip(learned, plain, strict=True))
        if (a["state"], a["context"], a["triggers"]) != (b["state"], b["context"], b["triggers"])
    ]
    calls_l = sum(r["llm_calls"] for r in learned[third:])
    calls_p = sum(r["llm_calls"] for r in plain[third:])
    total_l, total_p = sum(r["llm_calls"] for r in learned), sum(r["llm_calls"] for r in plain)
    judged = sum(1 for r in learned if (r["learning"] or {}).get("judged"))
    answered_ms = [ms for r in learned for ms in (r["learning"] or {}).get("memory_ms", [])]
    by_kind = {
        k: (
            sum(r["llm_calls"] for r in learned[third:] if r["kind"] == k),
            sum(r["llm_calls"] for r in plain[third:] if r["kind"] == k),
        )
        for k in KINDS
    }
    orders = []
    for shuffle in range(1, args.orders + 1):
        other = stream(tickets, shuffle=shuffle)
        with tempfile.TemporaryDirectory(prefix="sherpa-ticket-stream-") as tmp:
            script = script_with_judge(data / "tickets.script.yaml", Path(tmp))
            a = run_stream(Path(tmp) / "learning", script, other, True)
            b = run_stream(Path(tmp) / "plain", script, other, False)
        orders.append(
            (
                sum(r["llm_calls"] for r in a[third:]),
                sum(r["llm_calls"] for r in b[third:]),
                sum(
                    (x["state"], x["context"], x["triggers"]) != (y["state"], y["context"], y["triggers"])
                    for x, y in zip(a, b, strict=True)
                ),
                who_asked(a, third),
            )
        )
    timing = memory_timing(reps=20) if args.quick else memory_timing()
    routine = readme_routine()
    ratio = timing[10_000] / timing[100]
    command = "python bench/ticket_stream_bench.py" + (
        f" --tickets {shlex.quote(str(tickets_file))}" if args.tickets else ""
    )
    lines = [
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {machine()}.",
        f"Command: `SHERPA_SKILLS_LEARNING_DATA=… {command}`; stream: `{tickets_file.name}`, {n} tickets.",
        "",
        "| figure | measured | target |",
        "|---|---:|---|",
        f"| LLM calls in the last third, learning / unreplayed | {calls_l} / {calls_p} = "
        f"{100 * calls_l / max(calls_p, 1):.0f} % | ≤ 20 % |",
        f"| tickets whose outcome differs from the unreplayed run | {len(differ)} | 0 |",
        f"| LLM calls over the whole stream, learning / unreplayed | {total_l} / {total_p} | stated |",
        f"| runs that asked the judge | {judged} | stated |",
        f"| replayed decision (memory), median / p95, embedding left out | {median(answered_ms):.3f} / "
        f"{percentile(answered_ms, 95):.3f} ms over {len(answered_ms)} | ≤ 3 ms |",
        f"| `answer()` at 100 / 10,000 examples (median µs) | {timing[100]:.0f} / {timing[10_000]:.0f} = "
        f"{ratio:.2f}× | ≤ 2× |",
        f"| the README's routine refund after the example stream (its disputed refund included): LLM calls of runs "
        f"1, 2, 3 | {', '.join(map(str, routine))} | 0 by the third |",
        "",
        "Other arrival orders of the same tickets (each kind shuffled, seeds 1.."
        + str(len(orders))
        + "): last third "
        + ", ".join(f"{a}/{b} = {100 * a / max(b, 1):.0f} %" for a, b, _, _ in orders)
        + "; differing outcomes "
        + ", ".join(str(d) for _, _, d, _ in orders)
        + ".",
        "",
        "Last third by kind (learning / unreplayed LLM calls): "
        + ", ".join(f"{k} {a}/{b}" for k, (a, b) in by_kind.items())
        + ".",
        "",
        "Per ticket (learning): " + " ".join(f"{r['kind'][0]}{r['llm_calls']}" for r in learned),
        "",
        "Who asked the model in the last third (a model decision names the memory's reason to abstain there):",
        "",
        f"- the order above (each kind as the file gives it): {who_asked(learned, third)}",
        *(f"- seed {n}: {orders[n - 1][3]}" for n in range(1, len(orders) + 1)),
    ]
    if differ:
        lines.append("")
        lines.append(
            "Differing tickets: "
            + "; ".join(
                f"#{i} {learned[i]['kind']}: {learned[i]['state']} {learned[i]['triggers']} vs "
                f"{plain[i]['state']} {plain[i]['triggers']}"
                for i in differ
            )
        )
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        write_section(TITLE, body)


if __name__ == "__main__":
    main()
