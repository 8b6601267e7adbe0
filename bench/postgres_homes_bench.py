"""Two "machines" on one PostgreSQL database: processes in two homes capture, replay and run workflows at once.

Every process alternates three kinds of work for `--seconds`: it captures one of a few routines (all processes
capture the same ones, so first captures collide), replays one by its description with `execute=True` (half the
routines succeed, half fail), and runs a small durable workflow. Each process tallies what it did; afterwards the
database is checked against the tallies:

- 0 duplicate procedures: one row per (task type, steps), one per routine;
- 0 lost updates: each routine's success count is its captures plus its successful replays, its failure count its
  failed replays, and its executions rows the replays the processes counted;
- `sherpa-skills runs --json` from either home lists every run of both homes.

Then the heartbeat is started on both homes at once, `--heartbeats` times: exactly one of each pair runs, the
other is skipped because the lock is held.

The server is a throwaway cluster of the tests' own kind (initdb in a temporary folder, 127.0.0.1 only).

    python bench/postgres_homes_bench.py [--seconds 60] [--processes 8] [--heartbeats 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import arguments, machine, parse, skip, write_section  # noqa: E402

ROUTINES = 6  # routines 0, 2, 4 succeed when replayed; 1, 3, 5 fail
WORKFLOW = """\
name: homes_cycle
context: {n: 0}
initial: plan
states:
  plan: {}
  act: {}
  done: {final: true}
transitions:
  - {trigger: execute, source: plan, dest: act, after: [{increment: {key: n}}]}
  - {trigger: finish, source: act, dest: done, after: [{increment: {key: n}}]}
"""


def routine(k: int) -> dict[str, Any]:
    """The k-th routine: its task type, description and steps (a failing one exits 1 when replayed)."""
    words = ["archive", "rotate", "compress", "verify", "index", "prune"][k]
    command = "true" if k % 2 == 0 else "false"
    return {
        "task_type": f"homes-{words}",
        "description": f"{words} the nightly reports of routine {k}",
        "steps": [f"echo {words} {k}", command],
    }


# ---------------------------------------------------------------------------------------------------- one process


def worker(home: str, seconds: float, index: int, out: str) -> None:
    import sherpa_skills as sk
    from sherpa_skills import SkillStore

    skills = SkillStore(home)
    runs = sk.RunStore(home=home)
    flow = sk.load_workflow_text(WORKFLOW, name="homes_cycle.yaml")
    tally: dict[str, Any] = {
        "captures": [0] * ROUTINES,
        "replayed": [{"success": 0, "failure": 0, "other": 0} for _ in range(ROUTINES)],
        "runs": [],
        "errors": [],
        "ops": 0,
    }
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        k = (i * 5 + index) % ROUTINES
        r = routine(k)
        try:
            if i % 3 == 0:
                result = skills.capture(r["task_type"], r["steps"], description=r["description"])
                if result.outcome in ("captured", "duplicate"):
                    tally["captures"][k] += 1
                else:
                    tally["errors"].append(f"capture {k}: {result.outcome} {result.reason}")
            elif i % 3 == 1:
                if sum(tally["captures"]) == 0 and i < 6:
                    i += 1
                    continue  # nothing captured by this process yet: its first replays could find nothing
                payload = skills.replay(r["description"], task_type=r["task_type"], execute=True)
                outcome = _replay_outcome(payload)
                tally["replayed"][k][outcome] += 1
            else:
                result = flow.agent(store=runs).run()
                if result.status != "final":
                    tally["errors"].append(f"run {result.run_id}: {result.status} {result.error}")
                tally["runs"].append(result.run_id)
        except Exception as exc:  # counted and reported, never hidden
            tally["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
        tally["ops"] += 1
        i += 1
    runs.close()
    skills.close()
    Path(out).write_text(json.dumps(tally))


def _replay_outcome(payload: dict[str, Any]) -> str:
    """What the replay did to the counts: an executed success, an executed failure, or nothing (no match, a dry run)."""
    status = payload.get("status")
    if status == "succeeded":
        return "success"
    if status == "diverged" and payload.get("procedure_id") and any("exit_code" in s for s in payload["steps"]):
        return "failure"
    return "other"


# ---------------------------------------------------------------------------------------------------- the checks


def check_counts(url: str, tallies: list[dict[str, Any]]) -> dict[str, Any]:
    import psycopg

    captures = [sum(t["captures"][k] for t in tallies) for k in range(ROUTINES)]
    success = [sum(t["replayed"][k]["success"] for t in tallies) for k in range(ROUTINES)]
    failure = [sum(t["replayed"][k]["failure"] for t in tallies) for k in range(ROUTINES)]
    rows: list[dict[str, Any]] = []
    with psycopg.connect(url, autocommit=True) as conn:
        duplicates = conn.execute(
            "SELECT count(*) FROM (SELECT task_type, signature FROM procedures GROUP BY task_type, signature "
            "HAVING count(*) > 1) AS d"
        ).fetchone()[0]
        for k in range(ROUTINES):
            task_type = routine(k)["task_type"]
            found = conn.execute(
                "SELECT id, success_count, failure_count FROM procedures WHERE task_type = %s", (task_type,)
            ).fetchall()
            executions = {
                outcome: n
                for outcome, n in conn.execute(
                    "SELECT e.outcome, count(*) FROM executions e JOIN procedures p ON p.id = e.procedure_id "
                    "WHERE p.task_type = %s GROUP BY e.outcome",
                    (task_type,),
                ).fetchall()
            }
            stored_success = sum(r[1] for r in found)
            stored_failure = sum(r[2] for r in found)
            rows.append(
                {
                    "routine": task_type,
                    "procedures": len(found),
                    "captures": captures[k],
                    "replay_success": success[k],
                    "replay_failure": failure[k],
                    "success_count": stored_success,
                    "failure_count": stored_failure,
                    "executions": executions,
                    "lost_success": captures[k] + success[k] - stored_success,
                    "lost_failure": failure[k] - stored_failure,
                }
            )
    return {"duplicate_signatures": int(duplicates), "routines": rows}


def runs_listed(home: str, env: dict[str, str]) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "runs", "--json", "--limit", "100000", "--home", home],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"runs --json failed in {home}: {done.stderr[-500:]}")
    return {r["run_id"] for r in json.loads(done.stdout)}


def heartbeats(homes: list[str], env: dict[str, str], pairs: int) -> dict[str, Any]:
    """Both homes' heartbeats started together, `pairs` times: how many ran each time."""
    ran_counts: list[int] = []
    statuses: list[list[str]] = []
    for _ in range(pairs):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "sherpa_skills", "heartbeat", "--once", "--json", "--home", home],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for home in homes
        ]
        outcome = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            try:
                outcome.append(str(json.loads(out).get("status")))
            except json.JSONDecodeError:
                outcome.append(f"exit {p.returncode}: {err.strip()[-200:]}")
        statuses.append(outcome)
        ran_counts.append(sum(s == "ran" for s in outcome))
    return {"pairs": pairs, "ran": ran_counts, "statuses": statuses, "exactly_one": sum(n == 1 for n in ran_counts)}


# ---------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, quick="2 processes for 2 s, 2 heartbeats")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--heartbeats", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", nargs=4, metavar=("HOME", "SECONDS", "INDEX", "OUT"), help=argparse.SUPPRESS)
    a = parse(ap, argv)
    if a.quick:
        a.seconds, a.processes, a.heartbeats = 2.0, 2, 2
    if a.worker:
        home, seconds, index, out = a.worker
        worker(home, float(seconds), int(index), out)
        return 0

    from _postgres import NoServer, start_cluster

    try:
        cluster = start_cluster()
    except NoServer as exc:
        skip(f"no PostgreSQL server can be started here: {exc}")
    try:
        url = cluster.url(cluster.create_database())
        tmp = Path(tempfile.mkdtemp(prefix="pg-homes-"))
        homes = [str(tmp / "machine-a"), str(tmp / "machine-b")]
        for h in homes:
            Path(h).mkdir()
        env = {**os.environ, "SHERPA_SKILLS_DATABASE": url}
        env.pop("SHERPA_SKILLS_HOME", None)
        started = time.monotonic()
        procs = []
        for i in range(a.processes):
            out = str(tmp / f"tally-{i}.json")
            cmd = [sys.executable, __file__, "--worker", homes[i % 2], str(a.seconds), str(i), out]
            procs.append((subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True), out))
        tallies = []
        for p, out in procs:
            _, err = p.communicate(timeout=a.seconds * 20 + 600)
            if p.returncode != 0:
                raise SystemExit(f"a worker failed (exit {p.returncode}): {err[-1500:]}")
            tallies.append(json.loads(Path(out).read_text()))
        wall = time.monotonic() - started
        counts = check_counts(url, tallies)
        all_runs = {r for t in tallies for r in t["runs"]}
        listed = [runs_listed(h, env) for h in homes]
        missing = [len(all_runs - seen) for seen in listed]
        beats = heartbeats(homes, env, a.heartbeats)
    finally:
        cluster.stop()

    errors = [e for t in tallies for e in t["errors"]]
    lost = sum(abs(r["lost_success"]) + abs(r["lost_failure"]) for r in counts["routines"])
    figures = {
        "processes": a.processes,
        "homes": 2,
        "seconds": a.seconds,
        "wall_s": round(wall, 1),
        "operations": sum(t["ops"] for t in tallies),
        "captures": sum(sum(t["captures"]) for t in tallies),
        "replays": sum(sum(v for v in r.values()) for t in tallies for r in t["replayed"]),
        "replays_refused": sum(r["other"] for t in tallies for r in t["replayed"]),
        "workflow_runs": len(all_runs),
        "duplicate_procedures": counts["duplicate_signatures"]
        + sum(max(0, r["procedures"] - 1) for r in counts["routines"]),
        "lost_updates": lost,
        "runs_missing_from_listing": missing,
        "errors": len(errors),
        "error_samples": errors[:5],
        "routines": counts["routines"],
        "heartbeat": beats,
    }
    if a.json:
        print(json.dumps(figures, indent=2))
    else:
        print(json.dumps({k: v for k, v in figures.items() if k != "routines"}, indent=2))
    if not a.no_write:
        write_section("PostgreSQL: two machines, one database", _markdown(figures, a))
    ok = (
        figures["duplicate_procedures"] == 0
        and lost == 0
        and not any(missing)
        and beats["exactly_one"] == beats["pairs"]
        and not errors
    )
    return 0 if ok else 1


def _markdown(f: dict[str, Any], a: argparse.Namespace) -> str:
    lines = [
        f"Machine: {machine()}.",
        "",
        f"Command: `python bench/postgres_homes_bench.py --seconds {a.seconds:g} --processes {a.processes} "
        f"--heartbeats {a.heartbeats}`",
        "",
        f'{f["processes"]} processes in 2 homes (two "machines": each its own home folder, logs and procedure '
        "index) on one PostgreSQL database (a throwaway local cluster, PostgreSQL's defaults), for "
        f"{f['seconds']:g} s each; every process captures the same {ROUTINES} routines, replays them by their "
        "description with execute (half succeed, half fail) and runs a two-step durable workflow, in turn. "
        f"{f['replays_refused']} replays changed no count: a routine whose replays failed stops being replayed once "
        "its health says so (refused, as it should be), and a process's first replays may find nothing yet.",
        "",
        "| operations | captures | replays | workflow runs | duplicate procedures | lost updates | runs missing "
        "from `runs` (home A, home B) | errors |",
        "|---:|---:|---:|---:|---:|---:|---|---:|",
        f"| {f['operations']} | {f['captures']} | {f['replays']} | {f['workflow_runs']} | "
        f"{f['duplicate_procedures']} | {f['lost_updates']} | {f['runs_missing_from_listing'][0]}, "
        f"{f['runs_missing_from_listing'][1]} | {f['errors']} |",
        "",
        "Per routine (stored counts against the processes' tallies):",
        "",
        "| routine | procedures | captures | replays succeeded | replays failed | success count | failure count |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in f["routines"]:
        lines.append(
            f"| {r['routine']} | {r['procedures']} | {r['captures']} | {r['replay_success']} | "
            f"{r['replay_failure']} | {r['success_count']} | {r['failure_count']} |"
        )
    hb = f["heartbeat"]
    lines += [
        "",
        f"Heartbeat started on both homes at once, {hb['pairs']} times: exactly one ran {hb['exactly_one']} of "
        f"{hb['pairs']} times (runs per pair: {hb['ran']}).",
    ]
    if f["error_samples"]:
        lines += ["", "Errors (first five): " + "; ".join(f"`{e}`" for e in f["error_samples"])]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
