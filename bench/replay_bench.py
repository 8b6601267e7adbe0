"""Replay policy: LLM calls on a ticket stream with and without learning, and µs per replayed vs rule decision.

    .venv/bin/python bench/replay_bench.py [--tickets 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from time import perf_counter

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _results import machine, median, write_section  # noqa: E402
from test_replay_policy import SCRIPT, WORKFLOW  # noqa: E402  the workflow the tests use: refund or answer, then close

from sherpa_skills.engine.workflow import load_workflow, load_workflow_text  # noqa: E402
from sherpa_skills.skills.learning import Learner  # noqa: E402
from sherpa_skills.skills.store import SkillStore  # noqa: E402

KINDS = [("Please refund my damaged blender", "refund"), ("When do you open on Sundays", "answer")]
RULES = WORKFLOW.replace("policy: {type: chain, rules: []}",
                         "policy:\n  type: rule\n  rules:\n    - {state: assess, trigger: refund, args: {order: '{{ order }}'}}\n"
                         "    - {state: checked, trigger: close}")


def stream(n: int) -> list[dict[str, str]]:
    return [{"ticket": KINDS[i % len(KINDS)][0], "order": str(1000 + i)} for i in range(n)]


def run_stream(workflow, tickets, learner=None) -> tuple[list[str], int, int, float]:
    states, calls, tokens, started = [], 0, 0, perf_counter()
    for inputs in tickets:
        agent = workflow.agent(learn=learner) if learner else workflow.agent()
        result = agent.run(inputs)
        states.append(result.state)
        calls, tokens = calls + result.llm_calls, tokens + result.tokens
    return states, calls, tokens, perf_counter() - started


class Timed:
    """Times the decisions of the policy it wraps (µs each), nothing else."""

    def __init__(self, inner):
        self.inner, self.us = inner, []

    def decide(self, ctx):
        t0 = perf_counter()
        decision = self.inner.decide(ctx)
        self.us.append((perf_counter() - t0) * 1e6)
        return decision

    async def adecide(self, ctx):
        return self.decide(ctx)


def decision_costs(workflow, rules, learner) -> tuple[list[float], list[float]]:
    """µs per decision, same process: the replay policy answering from the stored procedure, the rule policy from its table."""
    from sherpa_skills.policy.replay import ReplayPolicy

    proc = learner.match(workflow, {"ticket": KINDS[0][0], "order": "1"})[1]
    replay_us, rule_us = [], []
    for i in range(500):
        inputs = {"ticket": KINDS[0][0], "order": str(9000 + i)}
        timed = Timed(ReplayPolicy(proc.decisions, inputs=inputs, procedure_id=proc.id))
        workflow.agent(policy=timed).run(inputs)
        replay_us += timed.us
        timed = Timed(rules.policy)
        rules.agent(policy=timed).run(inputs)
        rule_us += timed.us
    return replay_us, rule_us


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tickets", type=int, default=200)
    n = parser.parse_args().tickets
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "refunds.script.yaml").write_text(SCRIPT)
        (home / "refunds.yaml").write_text(WORKFLOW)
        (home / "skills").mkdir()
        workflow = load_workflow(home / "refunds.yaml")
        tickets = stream(n)
        base_states, base_calls, base_tokens, _ = run_stream(workflow, tickets)
        learner = Learner(SkillStore(home / "skills" / "skills.db"))
        states, calls, tokens, _ = run_stream(workflow, tickets, learner)
        same = sum(a == b for a, b in zip(base_states, states))
        # µs per decision, same process: a replayed run (after learning) against a rule-decided run of the same path.
        rules = load_workflow_text(RULES, base_dir=home)
        replay_us, rule_us = [], []
        for i in range(200):
            inputs = {"ticket": KINDS[0][0], "order": str(5000 + i)}
            t0 = perf_counter()
            r = workflow.agent(learn=learner).run(inputs)
            replay_us.append((perf_counter() - t0) * 1e6 / r.steps)
            t0 = perf_counter()
            r2 = rules.agent().run(inputs)
            rule_us.append((perf_counter() - t0) * 1e6 / r2.steps)
        decide_replay, decide_rule = decision_costs(workflow, rules, learner)
        learner.store.close()
    body = f"""Machine: {machine()}
Command: `.venv/bin/python bench/replay_bench.py --tickets {n}`

Stream of {n} tickets of {len(KINDS)} kinds (the refunds workflow of tests/test_replay_policy.py, scripted model); the
first two tickets of each kind are planned (one success is not proof), the rest replay.

| run | LLM calls | tokens | same final state |
|---|---|---|---|
| no replay | {base_calls} | {base_tokens} | — |
| with learning | {calls} | {tokens} | {same}/{n} |
| ratio | {calls / base_calls:.2%} | {tokens / base_tokens:.2%} | |

µs per step, a whole run (matching the task included) divided by its steps, median of 200:
replayed {median(replay_us):.0f} µs, rule-decided {median(rule_us):.0f} µs, ratio {median(replay_us) / median(rule_us):.2f}×
(matching the task against the store, once per run, is most of the replayed run's time).

µs per decision alone (the policy's `decide`, same process, median of {len(decide_replay)}): replayed
{median(decide_replay):.1f} µs, rule {median(decide_rule):.1f} µs, ratio {median(decide_replay) / median(decide_rule):.2f}× (target ≤ 2×).
"""
    print(body)
    write_section("Replay policy", body)


if __name__ == "__main__":
    main()
