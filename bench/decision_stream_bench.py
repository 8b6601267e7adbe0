"""Routing learned from real wording: BANKING77 requests through a two-level router workflow that learns (issue 36).

The workflow (built here): `route` decides a domain (9 domains grouping the 77 intents by name) or `out_of_scope`
(a final state); each domain's `pick` decides its intent (a final state, so `RunResult.state` is `domain/intent`).
Its policy is `{type: chain, rules: [], learn: true}`. The model is a local HTTP server on 127.0.0.1 speaking the
OpenAI chat-completions API, reached through litellm as `openai/banking-oracle` with OPENAI_API_BASE: it reads the
state and the request from the transition prompt and answers the request's true label (`--noise P`: wrong for a
share P of (request, state) pairs, fixed by a seeded hash, so "requests the model always answered rightly" is known).
Some intents are held out: their requests fit no intent, and the model answers `out_of_scope` for them.

The stream: `--per-intent N` requests of each intent from `train.csv` (the dev split), in a seeded random order.
Measured: LLM share of the decisions by third of the stream, wrong outcomes (final state not the request's label),
wrong outcomes on requests the model always answered rightly, out-of-scope requests routed into an intent (by the
memory, and by the model itself), time per request early and late, and the tokens / calls the learning reported saved.

    python bench/decision_stream_bench.py --quick            # the first 12 requests, seconds; prints only
    python bench/decision_stream_bench.py --per-intent 10    # the issue's first target's shape (77 intents here)
    python bench/decision_stream_bench.py --per-intent 5 --noise 0.05
    python bench/decision_stream_bench.py ... --label NAME   # write the figures as row NAME of bench/RESULTS.md

Needs SHERPA_SKILLS_LEARNING_DATA (the folder with banking77/). Nothing reaches the internet.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from harness import arguments, machine, median, parse, read_section, skip, write_section  # noqa: E402

TITLE = "Decisions learned from real wording: BANKING77 router stream"
OUT_OF_SCOPE = "out_of_scope"
#: The 77 intents in 9 domains, by their names.
DOMAINS: dict[str, list[str]] = {
    "card_delivery": [
        "card_arrival",
        "card_delivery_estimate",
        "get_physical_card",
        "order_physical_card",
        "getting_spare_card",
        "card_about_to_expire",
        "activate_my_card",
        "card_linking",
    ],
    "card_problems": [
        "card_not_working",
        "contactless_not_working",
        "lost_or_stolen_card",
        "compromised_card",
        "card_swallowed",
        "pin_blocked",
        "change_pin",
        "passcode_forgotten",
        "lost_or_stolen_phone",
        "card_acceptance",
    ],
    "virtual_cards": [
        "getting_virtual_card",
        "virtual_card_not_working",
        "get_disposable_virtual_card",
        "disposable_card_limits",
        "apple_pay_or_google_pay",
        "visa_or_mastercard",
        "supported_cards_and_currencies",
    ],
    "card_payments": [
        "card_payment_wrong_exchange_rate",
        "card_payment_fee_charged",
        "card_payment_not_recognised",
        "pending_card_payment",
        "declined_card_payment",
        "reverted_card_payment?",
        "transaction_charged_twice",
        "extra_charge_on_statement",
        "direct_debit_payment_not_recognised",
        "request_refund",
        "Refund_not_showing_up",
    ],
    "cash": [
        "pending_cash_withdrawal",
        "wrong_amount_of_cash_received",
        "atm_support",
        "declined_cash_withdrawal",
        "wrong_exchange_rate_for_cash_withdrawal",
        "cash_withdrawal_not_recognised",
        "cash_withdrawal_charge",
    ],
    "top_up": [
        "automatic_top_up",
        "top_up_by_bank_transfer_charge",
        "pending_top_up",
        "top_up_limits",
        "top_up_reverted",
        "topping_up_by_card",
        "verify_top_up",
        "top_up_by_cash_or_cheque",
        "top_up_failed",
        "top_up_by_card_charge",
        "balance_not_updated_after_cheque_or_cash_deposit",
    ],
    "transfers": [
        "cancel_transfer",
        "transfer_not_received_by_recipient",
        "declined_transfer",
        "pending_transfer",
        "transfer_timing",
        "beneficiary_not_allowed",
        "transfer_fee_charged",
        "receiving_money",
        "failed_transfer",
        "transfer_into_account",
        "balance_not_updated_after_bank_transfer",
    ],
    "exchange": ["exchange_rate", "fiat_currency_support", "exchange_via_app", "exchange_charge", "country_support"],
    "account": [
        "age_limit",
        "edit_personal_details",
        "why_verify_identity",
        "unable_to_verify_identity",
        "verify_source_of_funds",
        "verify_my_identity",
        "terminate_account",
    ],
}
#: Intents whose requests fit none: the workflow has no state for them (about 10 % of the stream).
HELD_OUT = (
    "card_linking",
    "lost_or_stolen_phone",
    "apple_pay_or_google_pay",
    "extra_charge_on_statement",
    "atm_support",
    "receiving_money",
    "country_support",
)


def trigger_name(intent: str) -> str:
    return re.sub(r"[^a-z0-9_]", "", intent.lower())


def data_dir() -> Path:
    found = os.environ.get("SHERPA_SKILLS_LEARNING_DATA")
    if not found:
        skip("set SHERPA_SKILLS_LEARNING_DATA to the folder with banking77/")
    return Path(found) / "banking77"


def workflow_text(port: int, error_bound: float | None = None) -> str:
    """The two-level router as YAML: route → domain (its `pick` → an intent, final) or out_of_scope (final)."""
    learn = "true" if error_bound is None else f"{{error_bound: {error_bound}}}"
    lines = [
        "name: banking-router",
        "description: Route an online-banking request to the team that handles its intent.",
        "inputs:",
        "  request: {description: the customer's message, required: true}",
        "llm:",
        "  model: openai/banking-oracle",
        "policy:",
        "  type: chain",
        "  rules: []",
        f"  learn: {learn}",
        "initial: route",
        "states:",
        "  route: {description: Decide which area of banking the request is about.}",
        f"  {OUT_OF_SCOPE}: {{final: true}}",
    ]
    for domain, intents in DOMAINS.items():
        lines += [f"  {domain}:", "    initial: pick", "    states:", "      pick: {description: Decide the intent.}"]
        lines += [f"      {trigger_name(i)}: {{final: true}}" for i in intents if i not in HELD_OUT]
    lines.append("transitions:")
    lines.append(
        f"  - {{trigger: {OUT_OF_SCOPE}, source: route, dest: {OUT_OF_SCOPE}, "
        "description: 'None of the areas fits the request.'}"
    )
    for domain, intents in DOMAINS.items():
        shown = ", ".join(i.replace("_", " ").rstrip("?") for i in intents if i not in HELD_OUT)
        lines.append(f"  - {{trigger: to_{domain}, source: route, dest: {domain}, description: '{shown}'}}")
        for intent in intents:
            if intent in HELD_OUT:
                continue
            name = trigger_name(intent)
            lines.append(
                f"  - {{trigger: {name}, source: {domain}/pick, dest: {domain}/{name}, "
                f"description: '{intent.replace('_', ' ').rstrip('?')}'}}"
            )
    return "\n".join(lines) + "\n"


def load_stream(per_intent: int, seed: int) -> list[dict[str, Any]]:
    """`per_intent` requests of each intent from train.csv, shuffled (seeded): text, intent, domain, expected state."""
    by_intent: dict[str, list[str]] = {}
    with (data_dir() / "train.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            by_intent.setdefault(row["category"], []).append(row["text"].strip())
    rng = random.Random(seed)
    domain_of = {i: d for d, intents in DOMAINS.items() for i in intents}
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for intent in sorted(by_intent):
        texts = [t for t in by_intent[intent] if t not in seen]
        for text in rng.sample(texts, min(per_intent, len(texts))):
            seen.add(text)
            held = intent in HELD_OUT
            items.append(
                {
                    "text": text,
                    "intent": intent,
                    "domain": None if held else domain_of[intent],
                    "expected": OUT_OF_SCOPE if held else f"{domain_of[intent]}/{trigger_name(intent)}",
                }
            )
    rng.shuffle(items)
    return items


class Oracle:
    """The model's answers: each request's label, wrong for a seeded share `noise` of (request, state) pairs."""

    def __init__(self, items: list[dict[str, Any]], noise: float, seed: int):
        self.items = {it["text"]: it for it in items}
        self.noise, self.seed = noise, seed
        self.calls = 0
        self.lock = threading.Lock()

    def wrong(self, text: str, state: str) -> bool:
        digest = hashlib.sha256(f"{self.seed}|{state}|{text}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.noise

    def always_right(self, text: str) -> bool:
        item = self.items[text]
        states = ["route"] + ([f"{item['domain']}/pick"] if item["domain"] else [])
        return not any(self.wrong(text, s) for s in states)

    def answer(self, prompt: str) -> str:
        state = re.search(r"Current state: (\S+)", prompt)
        request = re.search(r'"request": ("(?:[^"\\]|\\.)*")', prompt)
        triggers = re.search(r'"trigger": one of (\[[^\]]*\])', prompt)
        if not (state and request and triggers):
            return json.dumps({"trigger": "?", "args": {}, "reason": "unreadable prompt"})
        text, where, offered = json.loads(request.group(1)), state.group(1), json.loads(triggers.group(1))
        item = self.items.get(text)
        with self.lock:
            self.calls += 1
        if item is None:
            choice = OUT_OF_SCOPE if OUT_OF_SCOPE in offered else offered[0]
        elif where == "route":
            choice = OUT_OF_SCOPE if item["domain"] is None else f"to_{item['domain']}"
        else:
            choice = trigger_name(item["intent"])
        if choice in offered and self.wrong(text, where):
            others = sorted(t for t in offered if t != choice)
            rng = random.Random(f"{self.seed}|{where}|{text}|pick")
            choice = rng.choice(others) if others else choice
        if choice not in offered:
            choice = offered[0]
        return json.dumps({"trigger": choice, "args": {}, "reason": "the request's label"})


def serve(oracle: Oracle) -> ThreadingHTTPServer:
    """The OpenAI chat-completions API on 127.0.0.1 (a free port), answering as `oracle`, with token usage."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
            content = oracle.answer(prompt)
            prompt_tokens, completion_tokens = len(prompt) // 4, len(content) // 4
            reply = json.dumps(
                {
                    "id": "chatcmpl-oracle",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "banking-oracle"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_stream(
    home: Path, items: list[dict[str, Any]], noise: float, seed: int, error_bound: float | None = None
) -> tuple[list[dict[str, Any]], Oracle]:
    """Every request through the learning router, in order, in a fresh home; a row per request."""
    import sherpa_skills as sk

    oracle = Oracle(items, noise, seed)
    server = serve(oracle)
    os.environ["OPENAI_API_BASE"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-oracle")
    workflow = sk.load_workflow_text(workflow_text(server.server_address[1], error_bound), base_dir=home)
    runs = sk.RunStore(home=home)
    rows = []
    try:
        for item in items:
            agent = workflow.agent(store=runs, learn=True, home=home)
            started = time.perf_counter()
            result = agent.run({"request": item["text"]})
            decided_by = [t.decided_by for t in agent.belief.trajectory if t.trigger]
            rows.append(
                {
                    **item,
                    "state": result.state,
                    "status": result.status,
                    "llm_calls": result.counters["llm_calls"],
                    "replayed": result.counters["replayed_decisions"],
                    "decided_by": decided_by,
                    "tokens": result.counters["tokens"],
                    "tokens_saved": result.tokens_saved or 0,
                    "calls_saved": result.llm_calls_saved or 0,
                    "memory": (result.learning or {}).get("memory_answered", 0),
                    # The judge's question when a procedure plausibly matched: a call, not a decision (the oracle
                    # answers decisions only, so it is a no).
                    "judge_calls": ((result.learning or {}).get("judged") or {}).get("calls", 0),
                    "always_right": oracle.always_right(item["text"]),
                    "ms": (time.perf_counter() - started) * 1000,
                }
            )
    finally:
        runs.close()
        server.shutdown()
    return rows, oracle


def figures(rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    n = len(rows)
    thirds = [rows[: n // 3], rows[n // 3 : 2 * n // 3], rows[2 * n // 3 :]]

    def share(part: list[dict[str, Any]]) -> float:
        calls = sum(r["llm_calls"] for r in part)
        decided = calls + sum(r["replayed"] for r in part)
        return calls / max(decided, 1)

    wrong = [r for r in rows if r["state"] != r["expected"]]
    oos = [r for r in rows if r["expected"] == OUT_OF_SCOPE]
    routed = [r for r in oos if r["state"] != OUT_OF_SCOPE]
    # Routed into an intent by the memory: the route decision was not the model's.
    routed_by_memory = [r for r in routed if r["decided_by"] and r["decided_by"][0] != "llm"]
    right = [r for r in rows if r["always_right"]]
    ms = [r["ms"] for r in rows]
    return {
        "requests": n,
        "thirds": [round(share(t), 3) for t in thirds],
        "wrong": len(wrong),
        "wrong_share": len(wrong) / max(n, 1),
        "wrong_when_model_right": sum(1 for r in right if r["state"] != r["expected"]),
        "model_right": len(right),
        "oos": len(oos),
        "oos_routed": len(routed),
        "oos_routed_by_memory": len(routed_by_memory),
        "errors": sum(1 for r in rows if r["status"] != "final"),
        "seconds": round(seconds, 1),
        "ms_first": round(median(ms[: max(n // 10, 1)]), 1),
        "ms_last": round(median(ms[-max(n // 10, 1) :]), 1),
        "memory_answered": sum(r["memory"] for r in rows),
        "tokens_saved": sum(r["tokens_saved"] for r in rows),
        "calls_saved": sum(r["calls_saved"] for r in rows),
        "llm_calls": sum(r["llm_calls"] for r in rows),
        **besides_model(rows),
    }


def besides_model(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What a request costs besides the model, by tenth of the stream: whether it stays flat as examples grow.
    A request's time is the workflow's own plus each model call's (litellm and the local server), so per tenth a least
    squares fit of ms on the calls (decisions and judge questions) gives both: its intercept is a request without a
    call, its slope a call. Also the median of the requests that made no call at all (where a tenth has ≥ 5)."""
    import numpy as np

    tenth = max(len(rows) // 10, 1)
    fitted, silent = [], []
    for i in range(0, len(rows), tenth):
        part = rows[i : i + tenth]
        calls = np.asarray([r["llm_calls"] + r["judge_calls"] for r in part], dtype=float)
        ms = np.asarray([r["ms"] for r in part], dtype=float)
        quiet = [r["ms"] for r in part if r["llm_calls"] + r["judge_calls"] == 0]
        silent.append(round(median(quiet), 1) if len(quiet) >= 5 else None)
        if len(set(calls.tolist())) < 2:
            fitted.append(None)
            continue
        slope, intercept = np.polyfit(calls, ms, 1)
        fitted.append([round(float(intercept), 1), round(float(slope), 1)])
    return {"ms_besides_model_by_tenth": fitted, "ms_no_call_by_tenth": silent}


def row(label: str, per_intent: int, noise: float, f: dict[str, Any]) -> str:
    return (
        f"| {label} | {per_intent} | {noise:g} | {f['requests']} | {', '.join(f'{x:.3f}' for x in f['thirds'])} | "
        f"{f['wrong']} ({100 * f['wrong_share']:.2f} %) | {f['wrong_when_model_right']} of {f['model_right']} | "
        f"{f['oos_routed']} of {f['oos']} ({f['oos_routed_by_memory']} by the memory) | {f['memory_answered']} | "
        f"{f['calls_saved']} / {f['tokens_saved']} | {f['ms_first']:.0f} → {f['ms_last']:.0f} | {f['seconds']:.0f} s |"
    )


HEADER = [
    "| run | per intent | noise | requests | LLM share by third | wrong outcomes | wrong where the model was always "
    "right | out-of-scope routed | memory answers | calls / tokens saved (reported) | ms per request, first → last "
    "tenth | time |",
    "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
]


def _cost_store(path: Path, labels: int, per_label: int) -> Any:
    """A skill store with one state of `labels` decisions × `per_label` examples, each a calibration point; and a
    query near the fourth decision."""
    import numpy as np
    from seams import Example, ProcedureDatabase, add_examples, scorer

    rng = np.random.default_rng(36)
    centres = rng.normal(size=(labels, 384)).astype(np.float32)
    store = ProcedureDatabase(path=path)
    add_examples(
        store,
        [
            Example(
                workflow="w",
                state="pick",
                trigger=f"t{i % labels}",
                args={},
                features=COST_FEATURES,
                path="",
                task=f"task {i}",
                vector=(centres[i % labels] + rng.normal(scale=0.5, size=384).astype(np.float32)).tobytes(),
                score=1.0,
                hit=True,
                scorer=scorer(),
            )
            for i in range(labels * per_label)
        ],
    )
    return store, centres[3] + rng.normal(scale=0.5, size=384).astype(np.float32)


COST_FEATURES = {"options": "many"}


def cost_child(db: str, drop: bool) -> None:
    """In a fresh process (imports done first, as a CLI run's are before its first ask): ms from opening the store to
    the memory's first answer, with the persisted snapshot (`drop`: without it, the memory rebuilt from the
    examples). Prints the figure as JSON."""
    import numpy as np
    from seams import DecisionMemory, ProcedureDatabase

    query = np.frombuffer(bytes.fromhex(os.environ["COST_QUERY"]), dtype=np.float32)
    if drop:
        dropping = ProcedureDatabase(path=Path(db))
        dropping.db.transaction(lambda conn: conn.execute("DELETE FROM decision_snapshots"))
        dropping.close()
    started, cpu = time.perf_counter(), time.process_time()
    store = ProcedureDatabase(path=Path(db))
    memory = DecisionMemory(store)
    memory.refresh("w")
    first = memory.answer("w", "pick", lambda: query, COST_FEATURES, "")
    cold, cold_cpu = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
    store.close()
    assert first.guess is not None, first.why
    print(json.dumps({"cold_ms": cold, "cpu_ms": cold_cpu}))


def memory_cost(labels: int = 150, per_label: int = 20, reps: int = 300, fresh: int = 7) -> dict[str, float]:
    """The head's cost at one state with `labels` × `per_label` examples: the median ms a fresh process takes from
    opening the store to the memory's first answer, with the snapshot the first build persisted and without it
    (rebuilt from the examples, the snapshot dropped first; the runs alternate), and the median ms of one ask after
    (its embedding made beforehand) as the examples grow."""
    import subprocess

    from seams import DecisionMemory, ProcedureDatabase

    with tempfile.TemporaryDirectory(prefix="sherpa-head-cost-") as tmp:
        db = Path(tmp) / "skills.db"
        store, query = _cost_store(db, labels, per_label)
        memory = DecisionMemory(store)
        memory.refresh("w")
        asks: dict[int, float] = {}
        for grown in (1, 4):
            if grown > 1:
                # The same decisions with 4× the examples (the head keeps the newest `kept_per_decision` of each).
                more, _ = _cost_store(Path(tmp) / "more.db", labels, per_label * grown)
                more.close()
                memory = DecisionMemory(ProcedureDatabase(path=Path(tmp) / "more.db"))
                memory.refresh("w")
            times = []
            for _ in range(reps):
                started = time.perf_counter()
                memory.answer("w", "pick", lambda: query, COST_FEATURES, "")
                times.append((time.perf_counter() - started) * 1000)
            asks[per_label * grown] = median(times)
        store.close()
        env = {**os.environ, "COST_QUERY": query.tobytes().hex(), "PYTHONPATH": str(ROOT)}
        loaded: list[float] = []
        rebuilt: list[float] = []
        loaded_cpu: list[float] = []
        rebuilt_cpu: list[float] = []
        for i in range(2 * fresh):
            out = subprocess.run(
                [sys.executable, __file__, "--cost-child", str(db), *(["--drop"] if i % 2 else [])],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            got = json.loads(out.strip().splitlines()[-1])
            (rebuilt if i % 2 else loaded).append(got["cold_ms"])
            (rebuilt_cpu if i % 2 else loaded_cpu).append(got["cpu_ms"])
    return {
        "fresh_process_loaded_ms": median(loaded),
        "fresh_process_rebuilt_ms": median(rebuilt),
        "fresh_process_loaded_cpu_ms": median(loaded_cpu),
        "fresh_process_rebuilt_cpu_ms": median(rebuilt_cpu),
        "ask_ms": asks[per_label],
        f"ask_ms_at_{per_label * 4}_per_decision": asks[per_label * 4],
        "examples": labels * per_label,
    }


def main() -> None:
    parser = arguments(description=__doc__.split("\n", 1)[0], quick="the first 12 requests")
    parser.add_argument("--per-intent", type=int, default=10)
    parser.add_argument("--noise", type=float, default=0.0, help="share of decisions the model gets wrong")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--error-bound", type=float, help="the workflow's learn: {error_bound: ...}")
    parser.add_argument("--label", help="write the figures as this row of the RESULTS.md section")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--cost", action="store_true", help="only the head's cost (150 decisions × 20 examples)")
    parser.add_argument("--cost-child", help=argparse.SUPPRESS)
    parser.add_argument("--drop", action="store_true", help=argparse.SUPPRESS)
    args = parse(parser)
    from seams import configure

    configure(level="error")
    if args.cost_child:
        cost_child(args.cost_child, args.drop)
        return
    if args.cost:
        cost = memory_cost()
        print(json.dumps({k: round(v, 2) for k, v in cost.items()}))
        return
    per_intent = 2 if args.quick else args.per_intent
    items = load_stream(per_intent, args.seed)
    if args.quick:
        items = items[:12]  # the stream's path end to end, not its learning curve
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sherpa-decision-stream-") as tmp:
        rows, _ = run_stream(Path(tmp), items, args.noise, args.seed, args.error_bound)
    f = figures(rows, time.perf_counter() - started)
    if args.json:
        print(json.dumps(f))
    else:
        print("\n".join(HEADER + [row(args.label or "this run", per_intent, args.noise, f)]))
    if args.label:
        old = read_section(TITLE) or ""
        kept = [line for line in old.splitlines() if line.startswith("| ") and not line.startswith("| run ")]
        kept = [line for line in kept if not line.startswith(f"| {args.label} |")]
        body = "\n".join(
            [
                f"Last measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {machine()}.",
                "Command: `SHERPA_SKILLS_LEARNING_DATA=… python bench/decision_stream_bench.py --per-intent N "
                "[--noise P] --label NAME`; 70 intents in 9 domains, 7 intents held out as out of scope, seed 36.",
                "LLM share = the model's decisions / all decisions, by third of the stream.",
                "",
                *HEADER,
                *sorted(kept + [row(args.label, per_intent, args.noise, f)]),
            ]
        )
        write_section(TITLE, body)


if __name__ == "__main__":
    main()
