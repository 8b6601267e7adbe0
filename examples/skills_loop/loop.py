"""The skill store's whole loop, offline: plan → capture → replay → diverge → re-plan → re-capture.

A routine task (pack a folder of notes into a tarball) runs in a temporary folder with real commands.
The first time, the planner's LLM (the scripted stand-in) works it out and the run is captured as a
procedure. One success is not proof, so a person promotes it (`learn promote`; a second successful run
would do too). The second time, the procedure is replayed with zero LLM calls. Then the environment
changes (notes/ becomes docs/), the replay diverges at step 2, planning takes over with what went
wrong, succeeds, and the procedure gets a second version, promoted in turn.

    python examples/skills_loop/loop.py [--home DIR] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from sherpa_skills.cli import main as cli

HERE = Path(__file__).resolve().parent
TASK = "Package the notes folder into a tarball"


def call(*args: str) -> dict[str, Any] | list[Any]:
    """Run a `sherpa-skills` command in-process and return its --json output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli([*args, "--json"])
    return json.loads(out.getvalue())


def solve(home: Path, work: Path) -> dict[str, Any]:
    model = f"scripted/{HERE / 'planner.script.yaml'}"
    result = call(
        "run",
        "planner",
        "--home",
        str(home),
        "--model",
        model,
        "-i",
        f"task={TASK}",
        "-i",
        "task_type=package-notes",
        "-i",
        f"cwd={work}",
    )
    assert isinstance(result, dict)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", help="state folder (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args()
    home = Path(options.home or tempfile.mkdtemp(prefix="sherpa-loop-home-"))
    work = Path(tempfile.mkdtemp(prefix="sherpa-loop-work-"))
    (work / "notes").mkdir()
    (work / "notes" / "monday.txt").write_text("standup at 10\n")

    report: dict[str, Any] = {}
    planned = solve(home, work)
    procedures = call("learn", "procedures", "--home", str(home))
    report["planned"] = {
        "state": planned["state"],
        "llm_calls": planned["llm_calls"],
        "tokens": planned["tokens"],
        "procedures": [(p["id"], p["version"]) for p in procedures],
    }
    for p in procedures:
        call("learn", "promote", p["id"], "--home", str(home))  # a person vouches: it counts as the second success

    replayed = solve(home, work)
    report["replayed"] = {
        "state": replayed["state"],
        "llm_calls": replayed["llm_calls"],
        "tokens": replayed["tokens"],
        "replay": replayed["context"]["replay"]["state"],
    }

    (work / "notes").rename(work / "docs")  # the environment changes under the procedure
    replanned = solve(home, work)
    divergence = replanned["context"]["replay"]["context"].get("divergence") or {}
    report["replanned"] = {
        "state": replanned["state"],
        "llm_calls": replanned["llm_calls"],
        "tokens": replanned["tokens"],
        "replay": replanned["context"]["replay"]["state"],
        "diverged_step": divergence.get("step"),
        "reason": divergence.get("reason"),
    }
    first_id = report["planned"]["procedures"][0][0]
    call("learn", "promote", first_id, "--home", str(home))  # the re-learned version 2, seen once, is promoted too
    version_1 = call("learn", "show", first_id, "--version", "1", "--home", str(home))
    assert isinstance(version_1, dict)

    again = solve(home, work)
    report["replayed_v2"] = {
        "state": again["state"],
        "llm_calls": again["llm_calls"],
        "replay": again["context"]["replay"]["state"],
    }
    procedures = call("learn", "procedures", "--home", str(home))
    report["procedures"] = [
        {k: p[k] for k in ("id", "version", "confidence", "success_count", "failure_count", "health")}
        for p in procedures
    ]
    report["version_1"] = {
        "health": version_1["health"]["status"],
        "rolling_success_rate": version_1["health"]["rolling_success_rate"],
        "counted_executions": version_1["health"]["counted_executions"],
        "success_count": version_1["success_count"],
        "failure_count": version_1["failure_count"],
    }
    report["stats"] = call("learn", "stats", "--home", str(home))
    saved = 1 - report["replayed"]["tokens"] / max(1, report["planned"]["tokens"])
    report["token_saving"] = round(saved, 4)

    if options.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        p = report
        print(
            f"1. planned:   {p['planned']['llm_calls']} LLM calls, "
            f"{p['planned']['tokens']} tokens → captured {p['planned']['procedures']}"
        )
        print(
            f"2. replayed:  {p['replayed']['llm_calls']} LLM calls, "
            f"{p['replayed']['tokens']} tokens ({saved:.0%} fewer)"
        )
        print(
            f"3. notes/ renamed to docs/: replay {p['replanned']['replay']} at step {p['replanned']['diverged_step']} "
            f"({p['replanned']['reason']}); re-planned with {p['replanned']['llm_calls']} LLM calls"
        )
        print(
            f"   version 1 is now {p['version_1']['health']} (rolling success "
            f"{p['version_1']['rolling_success_rate']} over "
            f"{p['version_1']['counted_executions']} executions; health judges from 3)"
        )
        print(f"4. replayed version 2: {p['replayed_v2']['replay']}, {p['replayed_v2']['llm_calls']} LLM calls")
        for proc in p["procedures"]:
            print(f"   {proc['id']} v{proc['version']}: confidence {proc['confidence']}, health {proc['health']}")
        print(
            f"   saved so far: {p['stats']['tokens_saved']} tokens, "
            f"{p['stats']['llm_calls_saved']} LLM calls (home: {home})"
        )
    ok = (
        report["replayed"]["llm_calls"] == 0
        and report["replanned"]["replay"] == "diverged"
        and report["replayed_v2"]["replay"] == "succeeded"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
