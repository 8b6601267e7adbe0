"""Replay policy: LLM calls on a stream of routine tickets with and without learning, µs per replayed vs rule decision,
and injected divergences handed over to the LLM in the same run.

    python bench/replay_bench.py [--tickets 1000] [--runs 300] [--only divergences]

The workflow (bench/replay_tickets/) has five kinds of ticket, each with its own path of LLM decisions and typed
Python actions registered here; the scripted model answers by the ticket's text, so a ticket's kind decides its path.
`--only divergences` learns the stream and runs the injected cases alone, rewriting only their part of the section.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from time import perf_counter
from typing import Any

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import arguments, machine, median, parse, read_section, write_section  # noqa: E402
from seams import ProcedureDatabase, ReplayPolicy, load_builtins, with_advisors  # noqa: E402

from sherpa_skills import ActionResult, Learner, Workflow, default_registry, load_workflow_text  # noqa: E402

DESK = Path(__file__).resolve().parent / "replay_tickets"
#: (kind, ticket text): the scripted model routes by the text; the order number varies per ticket.
KINDS = [
    ("refund", "Please refund my damaged blender"),
    ("replace", "My kettle arrived broken, please send a new one"),
    ("cancel", "Please cancel my subscription"),
    ("track", "My parcel has not arrived yet"),
    ("question", "When do you open on Sundays"),
]
TEXT = dict(KINDS)

#: The world the actions depend on; an injected case changes or breaks one of its parts for one run. The versions are
#: what the actions' checks observe: the price table `price_order` reads, the refund policy `issue_refund` applies, the
#: stock feed `check_stock` asks.
CALM: dict[str, Any] = {"down": set(), "price_table": 1, "refund_policy": 1, "stock_feed": 1}
WORLD: dict[str, Any] = dict(CALM)


class OrderArgs(BaseModel):
    order: str


class ItemArgs(BaseModel):
    item: str


def _registry():
    """The desk's typed Python actions, as a developer's agent registers them;
    a service that is down fails its action."""
    load_builtins()
    registry = default_registry.child()

    def outcome(name: str, outputs: dict[str, Any]) -> ActionResult:
        if name in WORLD["down"]:
            return ActionResult(outputs={"error": f"{name}: service unavailable"}, status="failed")
        return ActionResult(outputs=outputs)

    @registry.action("price_order", check=lambda view: {"price_table": WORLD["price_table"]})
    def price_order(args: OrderArgs, ctx: Any) -> ActionResult:
        return outcome("price_order", {"amount": 20 + sum(map(ord, args.order)) % 80})

    @registry.action("issue_refund", side_effects=True, check=lambda view: {"refund_policy": WORLD["refund_policy"]})
    def issue_refund(args: OrderArgs, ctx: Any) -> ActionResult:
        return outcome("issue_refund", {"refunded": args.order})

    @registry.action("check_stock", check=lambda view: {"stock_feed": WORLD["stock_feed"]})
    def check_stock(args: ItemArgs, ctx: Any) -> ActionResult:
        return outcome("check_stock", {"item": args.item, "in_stock": 12})

    @registry.action("track_parcel")
    def track_parcel(args: OrderArgs, ctx: Any) -> ActionResult:
        return outcome("track_parcel", {"status": "in transit"})

    return registry


REGISTRY = _registry()
WORKFLOW_TEXT = (DESK / "workflow.yaml").read_text()


def desk(text: str = WORKFLOW_TEXT) -> Workflow:
    return load_workflow_text(text, name=str(DESK / "workflow.yaml"), registry=REGISTRY, base_dir=DESK)


#: Rules that take the same decisions as the LLM does for each kind: the baseline a replayed decision is compared with.
RULES = WORKFLOW_TEXT.replace(
    "policy: {type: chain, rules: []}",
    """policy:
  type: chain
  rules:
    - {state: assess, when: {context_matches: {key: ticket, pattern: refund my}}, trigger: refund, args: {order: '1'}}
    - {state: assess, when: {context_matches: {key: ticket, pattern: kettle}}, trigger: replace,
       args: {order: '1', item: kettle}}
    - {state: assess, when: {context_matches: {key: ticket, pattern: cancel my}}, trigger: cancel, args: {order: '1'}}
    - {state: assess, when: {context_matches: {key: ticket, pattern: parcel}}, trigger: track, args: {order: '1'}}
    - {state: assess, trigger: answer}
    - {state: refunding, trigger: approve}
    - {state: replacing, trigger: ship}
    - {state: cancelling, trigger: confirm}
    - {state: tracking, trigger: tell}
    - {state: checked, trigger: close}""",
)


def stream(n: int) -> list[tuple[str, dict[str, str]]]:
    return [(KINDS[i % len(KINDS)][0], {"ticket": KINDS[i % len(KINDS)][1], "order": str(1000 + i)}) for i in range(n)]


def run_stream(workflow: Workflow, tickets, learner: Learner | None = None) -> list[Any]:
    return [(workflow.agent(learn=learner) if learner else workflow.agent()).run(inputs) for _, inputs in tickets]


class Timed:
    """Times the decisions of the policy it wraps (µs each), nothing else."""

    def __init__(self, inner):
        self.inner, self.us, self.with_args = inner, [], []

    def decide(self, ctx):
        t0 = perf_counter()
        decision = self.inner.decide(ctx)
        self.us.append((perf_counter() - t0) * 1e6)
        self.with_args.append(bool(decision.args))
        return decision

    async def adecide(self, ctx):
        return self.decide(ctx)


def _split(costs: dict[str, list[float]], name: str, timed: Timed) -> None:
    costs[name] += timed.us
    for us, with_args in zip(timed.us, timed.with_args, strict=True):
        costs[f"{name}_{'args' if with_args else 'plain'}"].append(us)


def decision_costs(workflow: Workflow, rules: Workflow, learner: Learner, runs: int) -> dict[str, list[float]]:
    """Same process, interleaved: per kind, a run whose decisions the replay answers (its procedure matched once,
    outside the timing, as a run does at its start) against a run of the same path decided by rules.
    µs of the chain policy's `decide` per decision, and µs per step of the whole run."""
    procs = {kind: learner.match(workflow.machine.name, {"ticket": text, "order": "1"})[1] for kind, text in KINDS}
    costs: dict[str, list[float]] = defaultdict(list)
    for i in range(runs):
        kind, text = KINDS[i % len(KINDS)]
        inputs = {"ticket": text, "order": str(9000 + i)}
        proc = procs[kind]
        t0 = perf_counter()
        replay = ReplayPolicy(
            proc.decisions, inputs=inputs, procedure_id=proc.id, version=proc.version, registry=REGISTRY
        )
        costs["construct"].append((perf_counter() - t0) * 1e6)
        timed = Timed(with_advisors(workflow.policy, [replay]))
        result = workflow.agent(policy=timed).run(inputs)
        costs["replay_step"].append((perf_counter() - t0) * 1e6 / result.steps)
        assert result.replayed_decisions == len(proc.decisions) and result.llm_calls == 0, (kind, result.to_dict())
        _split(costs, "replay", timed)
        t0 = perf_counter()
        timed = Timed(rules.policy)
        result = rules.agent(policy=timed).run(inputs)
        costs["rule_step"].append((perf_counter() - t0) * 1e6 / result.steps)
        assert result.rule_decisions == len(proc.decisions) and result.llm_calls == 0, (kind, result.to_dict())
        _split(costs, "rule", timed)
    for _kind, text in KINDS:  # matching the task, once per run: the per-run cost the per-step figures leave out
        for i in range(20):
            t0 = perf_counter()
            learner.match(workflow.machine.name, {"ticket": text, "order": str(7000 + i)})
            costs["match"].append((perf_counter() - t0) * 1e3)
    return costs


# ---------------------------------------------------------------- injected divergences


def _edit(old: str, new: str) -> str:
    assert old in WORKFLOW_TEXT, old
    return WORKFLOW_TEXT.replace(old, new)


#: case -> [(kind, inputs changed, world changed, workflow text)]; each runs on a copy of the learned store.
CASES: dict[str, list[tuple[str, dict[str, str], dict[str, Any], str]]] = {
    "guard change (plan now premium: `close` is guarded)": [
        (kind, {"plan": "premium"}, {}, WORKFLOW_TEXT) for kind, _ in KINDS
    ],
    "action failure (a service the action calls is down)": [
        ("refund", {}, {"down": {"issue_refund"}}, WORKFLOW_TEXT),
        ("replace", {}, {"down": {"check_stock"}}, WORKFLOW_TEXT),
        ("track", {}, {"down": {"track_parcel"}}, WORKFLOW_TEXT),
    ],
    "argument no longer validating": [
        # a recorded literal: the kettle was dropped from the catalogue
        ("replace", {}, {}, _edit("enum: [blender, kettle, toaster]", "enum: [blender, toaster]")),
        # a templated argument: order numbers are now integers, and this ticket's is not one
        (
            "refund",
            {"order": "A-17"},
            {},
            _edit(
                "arguments: {order: {type: string, description: the order number}}\n  - trigger: replace",
                "arguments: {order: {type: integer, description: the order number}}\n  - trigger: replace",
            ),
        ),
    ],
    "state removed": [
        ("refund", {}, {}, WORKFLOW_TEXT.replace("refunding", "reviewing")),
        (
            "track",
            {},
            {},
            _edit("    dest: tracking\n", "    dest: checked\n")
            .replace('    on_enter: {track_parcel: {order: "{{ order }}"}}\n', "")
            .replace(
                "  tracking:\n    description: Look the parcel up, then tell the customer or open an investigation.\n",
                "",
            )
            .replace(
                "  - {trigger: tell, source: tracking, dest: checked}\n  - {trigger: investigate, source: "
                "tracking, dest: checked}\n",
                "",
            ),
        ),
    ],
    # What an action's check observed when the procedure was captured now differs: the price table behind the refund's
    # first action, the refund policy behind its second, the stock feed behind the replacement's.
    "check change (action `check` hook: the world an action depends on changed)": [
        ("refund", {}, {"price_table": 2}, WORKFLOW_TEXT),
        ("refund", {}, {"refund_policy": 2}, WORKFLOW_TEXT),
        ("replace", {}, {"stock_feed": 2}, WORKFLOW_TEXT),
    ],
}


def injected(snapshot: Path, tmp: Path) -> dict[str, list[dict[str, Any]]]:
    """Each injected case on a fresh copy of the learned store:
    did replay start, diverge, and hand over to the LLM in the
    same run, with the divergence in the prompt the model was sent (echoed back by the script, recorded in the log)?"""
    found: dict[str, list[dict[str, Any]]] = {}
    for n, (case, runs) in enumerate(CASES.items()):
        found[case] = []
        for m, (kind, change, world, text) in enumerate(runs):
            home = tmp / f"inject-{n}-{m}"
            shutil.copytree(snapshot, home)
            store = ProcedureDatabase(path=home / "skills.db")
            learner = Learner(store)
            WORLD.update(world)
            try:
                workflow = desk(text)
                agent = workflow.agent(learn=learner)
                result = agent.run({"ticket": TEXT[kind], "order": "4242"} | change)
            finally:
                WORLD.clear()
                WORLD.update(CALM)
            diverged = result.diverged_at or {}
            asked = [e for e in agent.belief.log if e.action == "policy:llm"]
            # The procedure the run followed is its learning hook's (learning is a run hook, not a wrapping agent).
            followed = next((h.procedure for h in agent.hooks if hasattr(h, "procedure")), None)
            # as policies/prompts/_divergence.j2 tells it
            told = (
                f"in state {diverged.get('state')}.",
                f"expected: {diverged.get('expected')}",
                f"observed: {diverged.get('observed')}",
            )
            proc = store.get(followed.id) if followed else None
            found[case].append(
                {
                    "kind": kind,
                    "matched": followed is not None,
                    "diverged": bool(diverged),
                    "replayed": result.replayed_decisions,
                    "llm_calls": result.llm_calls,
                    "status": result.status,
                    "state": result.state,
                    "where": f"{diverged.get('state')}: expected {diverged.get('expected')}, "
                    f"observed {diverged.get('observed')}",
                    # the first LLM prompt of the run reports the divergence: the model answered it in the same run
                    "in_prompt": bool(asked) and all(t in str(asked[0].outputs.get("reason", "")) for t in told),
                    "relearned": proc is not None and proc.version == 2,
                }
            )
            store.close()
    return found


# ---------------------------------------------------------------- the report

#: The first line of the divergence part of the section: `--only divergences` rewrites the section from here on.
DIVERGENCES = "Injected divergences, each on a fresh copy of the learned store"


def kept_to_the_recording(learned: list[Any]) -> None:
    """The checks observe an unchanged world on the stream: no run diverges, and every run after the first two of its
    kind replays without the LLM (a check that saw something per ticket would make each one diverge)."""
    diverged = [i for i, r in enumerate(learned) if r.diverged_at is not None]
    assert not diverged, (diverged[:5], learned[diverged[0]].diverged_at)
    late = [i for i, r in enumerate(learned) if i >= 2 * len(KINDS) and (r.llm_calls or not r.replayed_decisions)]
    assert not late, late[:5]


def divergence_part(found: dict[str, list[dict[str, Any]]]) -> str:
    """The table of injected cases and where each run diverged."""
    inject_rows = []
    for case, results in found.items():
        ok = sum(
            r["matched"] and r["diverged"] and r["llm_calls"] > 0 and r["in_prompt"] and r["status"] == "final"
            for r in results
        )
        inject_rows.append(
            f"| {case} | {', '.join(r['kind'] for r in results)} | **{ok}/{len(results)}** "
            f"| {sum(r['in_prompt'] for r in results)}/{len(results)} | "
            f"{', '.join(str(r['replayed']) for r in results)} "
            f"| {', '.join(r['state'] for r in results)} | {sum(r['relearned'] for r in results)}/{len(results)} |"
        )
    wheres = "\n".join(
        f"- {case}, {r['kind']}: diverged in {r['where']}" for case, results in found.items() for r in results
    )
    return f"""{DIVERGENCES}: the run matches its kind's procedure, replays, diverges,
and the LLM decides from there in the same run; "in the prompt" means the first prompt the model was sent in that run
contains the divergence (state, expected, observed), asserted on the prompt text the script echoes into the log.
The actions `price_order`, `issue_refund` and `check_stock` declare a `check` observing the version of the price table,
refund policy and stock feed they depend on; the check-change case bumps one version for the run.

| case | kinds | fell back in the same run | divergence in the prompt | decisions replayed before | final state | relearned as v2 |
|---|---|---|---|---|---|---|
{chr(10).join(inject_rows)}

{wheres}
"""  # noqa: E501  (a RESULTS.md section as it reads: a table row is one line)


def only_divergences(n: int) -> None:
    """Learn the stream, run the injected cases, and rewrite only the divergence part of the section."""
    workflow = desk()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        skills = tmp / "skills"
        skills.mkdir()
        learner = Learner(ProcedureDatabase(path=skills / "skills.db"))
        kept_to_the_recording(run_stream(workflow, stream(n), learner))
        learner.store.close()
        found = injected(skills, tmp)
    part = (
        f"{divergence_part(found).rstrip()}\n\nThis part alone: machine {machine()}; command "
        f"`python bench/replay_bench.py --tickets {n} --only divergences` (the figures above it are from the "
        f"full run named at the top of the section).\n"
    )
    print(part)
    section = read_section("Replay policy") or ""
    head = section.split(DIVERGENCES, 1)[0] if DIVERGENCES in section else section
    write_section("Replay policy", (head.rstrip() + "\n\n" if head.strip() else "") + part)
    fell = [r for results in found.values() for r in results]
    assert all(r["matched"] and r["diverged"] and r["in_prompt"] and r["llm_calls"] > 0 for r in fell), fell


def main() -> None:
    parser = arguments(__doc__, quick="40 tickets, 10 runs of each policy")
    parser.add_argument("--tickets", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=300, help="runs of each policy for the µs figures")
    parser.add_argument(
        "--only", choices=["divergences"], help="run only the injected divergences (the stream is learned first)"
    )
    opts = parse(parser)
    if opts.quick:
        opts.tickets, opts.runs = 40, 10
    n = opts.tickets
    if opts.only == "divergences":
        only_divergences(n)
        return
    workflow, rules = desk(), desk(RULES)
    tickets = stream(n)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = run_stream(workflow, tickets)
        skills = tmp / "skills"
        skills.mkdir()
        learner = Learner(ProcedureDatabase(path=skills / "skills.db"))
        learned = run_stream(workflow, tickets, learner)
        kept_to_the_recording(learned)
        costs = decision_costs(workflow, rules, learner, opts.runs)
        procs = learner.store.procedures(status=None)
        learner.store.close()
        found = injected(skills, tmp)

    per_kind: dict[str, Counter] = defaultdict(Counter)
    finals: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for (kind, _), a, b in zip(tickets, base, learned, strict=True):
        c = per_kind[kind]
        c.update(
            tickets=1,
            base_calls=a.llm_calls,
            base_tokens=a.tokens,
            calls=b.llm_calls,
            tokens=b.tokens,
            planned=int(b.llm_calls > 0),
            replayed=int(b.replayed_decisions > 0),
            same=int((a.status, a.state) == (b.status, b.state)),
        )
        finals[kind].add((f"{a.status} {a.state}", f"{b.status} {b.state}"))
    total = sum(per_kind.values(), Counter())
    rows = "\n".join(
        f"| {kind} | {c['tickets']} | {' / '.join(sorted(x for x, _ in finals[kind]))} | "
        f"{' / '.join(sorted(y for _, y in finals[kind]))} "
        f"| {c['same']}/{c['tickets']} | {c['planned']} | {c['replayed']} | {c['base_calls']} | {c['calls']} | "
        f"{c['base_tokens']} | {c['tokens']} |"
        for kind, c in per_kind.items()
    )
    after_first = sum(b.llm_calls for i, b in enumerate(learned) if i >= len(KINDS))
    rep, rule, rep_step, rule_step = (median(costs[k]) for k in ("replay", "rule", "replay_step", "rule_step"))
    body = f"""Machine: {machine()}
Command: `python bench/replay_bench.py --tickets {n} --runs {opts.runs}`

Stream of {n} routine tickets of {len(KINDS)} kinds (bench/replay_tickets/: LLM chain policy with the scripted model, typed
Python actions `price_order`, `issue_refund`, `check_stock`, `track_parcel`; a ticket's kind decides its path; the ticket
text of a kind is fixed, its order number varies). Run once without learning and once with `workflow.agent(learn=Learner(store))`
on a fresh store. Procedures captured: {len(procs)} (one per kind). The first two tickets of each kind are planned (one
success is not proof: replay is offered from the second), every later one replays.

| run | LLM calls | tokens | same final state |
|---|---|---|---|
| no replay | {total["base_calls"]} | {total["base_tokens"]} | — |
| with learning | {total["calls"]} | {total["tokens"]} | {total["same"]}/{total["tickets"]} |
| ratio (target: calls ≤ 1 %, tokens ≤ 2 %) | {total["calls"] / total["base_calls"]:.2%} | {total["tokens"] / total["base_tokens"]:.2%} | |

LLM calls after the first ticket of each kind: {after_first} ({after_first / total["base_calls"]:.2%} of the no-replay run's),
all of them on the second ticket of each kind.

Final state per kind, without and with replay:

| kind | tickets | final state, no replay | final state, with learning | same | planned by the LLM | replayed | LLM calls, no replay | with learning | tokens, no replay | with learning |
|---|---|---|---|---|---|---|---|---|---|---|
{rows}

Engine overhead, same process, replayed and rule-decided runs of the same paths interleaved ({opts.runs} runs each, the
five kinds in turn; the replay's procedure matched before the timing, as a run does once at its start). Absolute µs
follow the machine's load (above); the ratios compare runs interleaved in one process. The rule table routes by the
ticket's text (a `context_matches` guard per kind), which is most of a rule decision with arguments. A replayed decision
that leads to `price_order`, `issue_refund` or `check_stock` also runs that action's check and compares what it observes
with the recording (the refund and replace paths), as a learned run does; a rule decision has nothing to compare.

| per | replayed | rule | ratio (target ≤ 2×) |
|---|---|---|---|
| decision (the chain policy's `decide`, median of {len(costs["replay"])} / {len(costs["rule"])}) | {rep:.1f} µs | {rule:.1f} µs | {rep / rule:.2f}× |
| … decisions with arguments (median of {len(costs["replay_args"])} / {len(costs["rule_args"])}) | {median(costs["replay_args"]):.1f} µs | {median(costs["rule_args"]):.1f} µs | {median(costs["replay_args"]) / median(costs["rule_args"]):.2f}× |
| … decisions without arguments (median of {len(costs["replay_plain"])} / {len(costs["rule_plain"])}) | {median(costs["replay_plain"]):.1f} µs | {median(costs["rule_plain"]):.1f} µs | {median(costs["replay_plain"]) / median(costs["rule_plain"]):.2f}× |
| step (a whole run without the match, divided by its steps, median of {len(costs["replay_step"])}) | {rep_step:.0f} µs | {rule_step:.0f} µs | {rep_step / rule_step:.2f}× |

Building the run's ReplayPolicy from the matched procedure (once per run; what a decision no longer does — filling
arguments, the expected outcomes, the argument-free decisions — is done here): median {median(costs["construct"]):.1f} µs.
Arguments filled from the run's inputs are validated on every run; literal ones once per loaded workflow.

Matching the task against the store, once per run before the first decision: median {median(costs["match"]):.2f} ms
({len(costs["match"])} matches).

{divergence_part(found)}"""  # noqa: E501  (a RESULTS.md section as it reads: a table row is one line)
    print(body)
    write_section("Replay policy", body)
    fell = [r for results in found.values() for r in results]
    assert all(r["matched"] and r["diverged"] and r["in_prompt"] and r["llm_calls"] > 0 for r in fell), fell


if __name__ == "__main__":
    main()
