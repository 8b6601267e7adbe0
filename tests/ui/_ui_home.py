"""A home folder made by running the examples, shared by the browser view's tests:
runs, procedures, a heartbeat, a team."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TECHNICAL = "The app crashes with an error every time I open it."
HOSTILE = "<script>document.title='owned'</script>"
SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"

# A machine (nested states) whose every state waits for a gate file the test creates:
# a page can watch it advance step by step.
GATED = """
name: gated-walk
initial: first
states:
  first:
    on_enter: {shell: {command: "while [ ! -e {{ gate }}/1 ]; do sleep 0.05; done", timeout_secs: 120}}
  middle:
    initial: one
    states:
      one:
        on_enter: {shell: {command: "while [ ! -e {{ gate }}/2 ]; do sleep 0.05; done", timeout_secs: 120}}
      two:
        on_enter: {shell: {command: "while [ ! -e {{ gate }}/3 ]; do sleep 0.05; done", timeout_secs: 120}}
  last: {final: true}
inputs:
  gate: {required: true}
transitions:
  - {trigger: go, source: first, dest: middle}
  - {trigger: next, source: middle/one, dest: middle/two}
  - {trigger: done, source: middle/two, dest: last}
"""


def cli(*args: str) -> Any:
    """A `sherpa-skills` command in this process, its --json output parsed."""
    from sherpa_skills.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*args, "--json"])
    assert code in (0, 1), (args, code)
    return json.loads(out.getvalue())


def make_home(home: Path) -> dict[str, Any]:
    """Run the demo, the skills loop, the critic team and a heartbeat into `home`; leave one run waiting."""
    h = str(home)
    made: dict[str, Any] = {"home": home}
    cli("demo", "--home", h)
    out, argv = io.StringIO(), sys.argv
    sys.argv = ["loop.py", "--home", h, "--json"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(str(ROOT / "examples" / "skills_loop" / "loop.py"), run_name="__main__")
    except SystemExit as exc:
        assert not exc.code, exc.code
    finally:
        sys.argv = argv
    made["loop"] = json.loads(out.getvalue())
    made["team"] = cli("run", str(ROOT / "examples" / "critic_loop" / "team.yaml"), "--home", h)
    made["heartbeat"] = cli("heartbeat", "--home", h)
    triage = str(ROOT / "examples" / "support_triage" / "workflow.yaml")
    # The hostile value and the secret ride in the ticket text: the workflow declares its inputs, so others are refused.
    made["waiting"] = cli("run", triage, "--home", h, "-i", f"ticket={TECHNICAL} From {HOSTILE}, api_key={SECRET}")
    assert made["waiting"]["status"] == "waiting", made["waiting"]
    return made


def shared_home(tmp_path_factory: Any) -> dict[str, Any]:
    """One home per test session, made on first use: the API and browser tests read the same one."""
    global _MADE
    if _MADE is None:
        _MADE = make_home(tmp_path_factory.mktemp("ui-home"))
    return _MADE


_MADE: dict[str, Any] | None = None
