"""`sherpa-skills validate`: every problem of a workflow file, each as FILE:LINE: message on the right line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.cli import main


def validate(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[str], str]:
    code = main(["validate", *map(str, paths)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def problems(path: Path, lines: list[str]) -> list[tuple[int, str]]:
    """(line, message) of every reported problem, checking each has the FILE:LINE: message shape."""
    prefix = f"{path.resolve()}:"
    out = []
    for text in lines:
        assert text.startswith(prefix), text
        line, sep, message = text[len(prefix) :].partition(": ")
        assert sep and line.isdigit(), text
        out.append((int(line), message))
    return sorted(out)


# Each case: a file with exactly one problem, the line it must be reported on, and words the message must hold.
CASES = {
    "bad YAML syntax": (
        """\
name: broken
initial: a
states:
  a:
    final: true
    description: a: b
""",
        6,
        ["invalid YAML", "mapping values are not allowed"],
    ),
    "unknown key": (
        """\
name: keys
initial: a
states:
  a:
    final: true
    fnal: true
""",
        6,
        ["unknown key 'fnal'"],
    ),
    "unknown action": (
        """\
name: actions
initial: a
states:
  a:
    final: true
    on_enter:
      - set: {x: 1}
      - launch_rockets
""",
        8,
        ["unknown action 'launch_rockets'", "known actions:", "shell"],
    ),
    "unknown guard": (
        """\
name: guards
initial: a
states:
  a:
    transitions:
      - trigger: go
        dest: b
        conditions:
          - context_true: {key: ok}
          - is_sunny
  b:
    final: true
""",
        10,
        ["unknown guard 'is_sunny'", "known guards:", "context_true"],
    ),
    "bad guard argument": (
        """\
name: guards
initial: a
states:
  a:
    transitions:
      - trigger: go
        dest: b
        conditions:
          - context_matches:
              key: title
              pattern: "(unclosed"
  b:
    final: true
""",
        11,
        ["guard 'context_matches'", "pattern", "not a valid regular expression"],
    ),
    "dest to an undefined state": (
        """\
name: dests
initial: a
states:
  a:
    transitions:
      - trigger: go
        dest: b
      - trigger: oops
        dest: nowhere
  b:
    final: true
""",
        9,
        ["transition 'oops'", "dest 'nowhere' is not a state", "states: a, b"],
    ),
    "unreachable state": (
        """\
name: reach
initial: a
states:
  a:
    transitions:
      - {trigger: go, dest: b}
  b:
    final: true
  island:
    final: true
""",
        9,
        ["state 'island' is unreachable from the initial state 'a'"],
    ),
    "non-final, non-waiting state with no way out": (
        """\
name: stuck
initial: a
states:
  a:
    transitions:
      - {trigger: go, dest: b}
  b:
    description: nothing leaves here
""",
        7,
        ["state 'b' has no way out", "final: true", "waiting: true"],
    ),
    "compound state without initial": (
        """\
name: compound
initial: a
states:
  a:
    transitions:
      - {trigger: go, dest: b}
  b:
    states:
      inner:
        final: true
""",
        7,
        ["state 'b' has substates but no 'initial'", "inner"],
    ),
    "duplicate key": (
        """\
name: dup
initial: a
states:
  a:
    final: true
    description: first
    description: second
""",
        7,
        ["duplicate key 'description'"],
    ),
    "bad action argument name (shorthand)": (
        """\
name: args
initial: a
states:
  a:
    final: true
    on_enter:
      - shell:
          timeout_secs: 5
          comand: echo hi
""",
        9,
        ["action 'shell' has no argument 'comand'", "it takes: command"],
    ),
    "bad action argument name (long form)": (
        """\
name: args
initial: a
states:
  a:
    final: true
    on_enter:
      - action: shell
        args:
          command: echo hi
          cwdd: /tmp
""",
        10,
        ["action 'shell' has no argument 'cwdd'", "cwd"],
    ),
    "bad action argument value": (
        """\
name: args
initial: a
states:
  a:
    final: true
    on_enter:
      - increment:
          key: n
          by: lots
""",
        9,
        ["action 'increment'", "by"],
    ),
}

VALID = """\
name: valid
initial: work
inputs:
  topic: {required: true, description: what to work on}
states:
  work:
    initial: draft
    states:
      draft:
        on_enter: {set: {draft: "about {{ topic }}"}}
        transitions:
          - {trigger: review, dest: check}
      check:
        waiting: true
        transitions:
          - {trigger: redo, dest: draft, arguments: {why: {type: string}}}
    transitions:
      - trigger: finish
        dest: done
        conditions: {context_true: {key: approved}}
  done:
    final: true
"""


class TestEachProblem:
    @pytest.mark.parametrize("case", CASES, ids=list(CASES))
    def test_the_problem_is_reported_on_its_line_with_exit_code_2(self, case: str, write_file, capsys):
        """One problem, one `FILE:LINE: message` line naming what is wrong, on exactly the offending line."""
        text, line, words = CASES[case]
        path = write_file("workflow.yaml", text)
        code, lines, err = validate(capsys, path)
        assert code == 2
        assert err == ""
        reported = problems(path, lines)
        assert [n for n, _ in reported] == [line], lines
        for word in words:
            assert word in reported[0][1]


class TestAllProblemsAtOnce:
    THREE = """\
name: three
initial: a
states:
  a:
    on_enter: [launch_rockets]
    transitions:
      - trigger: go
        dest: nowhere
      - trigger: stop
        dest: b
        conditions: [is_sunny]
  b:
    final: true
"""

    def test_a_file_with_three_problems_gets_three_lines(self, write_file, capsys):
        """Validation does not stop at the first problem: unknown action, bad dest and unknown guard all show."""
        path = write_file("three.yaml", self.THREE)
        code, lines, _ = validate(capsys, path)
        assert code == 2
        reported = problems(path, lines)
        assert [n for n, _ in reported] == [5, 8, 11]
        assert "unknown action 'launch_rockets'" in reported[0][1]
        assert "dest 'nowhere'" in reported[1][1]
        assert "unknown guard 'is_sunny'" in reported[2][1]

    def test_several_schema_problems_are_all_reported(self, write_file, capsys):
        """Unknown keys in different places are each reported on their own line."""
        path = write_file(
            "keys.yaml", "name: keys\ninitial: a\ncolour: blue\nstates:\n  a:\n    final: true\n    fnal: true\n"
        )
        code, lines, _ = validate(capsys, path)
        assert code == 2
        assert problems(path, lines) == [(3, "unknown key 'colour'"), (7, "unknown key 'fnal'")]

    def test_several_files_are_checked_in_one_call(self, write_file, capsys):
        """Each file is reported on its own; one bad file makes the exit code 2."""
        good = write_file("good.yaml", VALID)
        bad = write_file("bad.yaml", CASES["unknown action"][0])
        code, lines, _ = validate(capsys, good, bad)
        assert code == 2
        assert lines[0] == f"{good}: ok"
        assert [n for n, _ in problems(bad, lines[1:])] == [8]


class TestValidFiles:
    def test_a_valid_file_exits_0(self, write_file, capsys):
        """A correct workflow (nested states, waiting state, guards, templates, arguments) passes."""
        path = write_file("valid.yaml", VALID)
        code, lines, err = validate(capsys, path)
        assert (code, lines, err) == (0, [f"{path}: ok"], "")

    def test_quiet_prints_nothing_for_a_valid_file(self, write_file, capsys):
        """--quiet shows only problems."""
        path = write_file("valid.yaml", VALID)
        assert main(["validate", "--quiet", str(path)]) == 0
        assert capsys.readouterr().out == ""

    def test_a_missing_file_is_a_problem_not_a_crash(self, tmp_path, capsys):
        """A file that does not exist is reported as FILE:1: no such file."""
        path = tmp_path / "absent.yaml"
        code, lines, _ = validate(capsys, path)
        assert code == 2
        assert problems(path, lines) == [(1, "no such file")]


class TestThroughARealProcess:
    def test_the_installed_command_reports_problems_and_exit_code(self, write_file):
        """`python -m sherpa_skills.cli validate` in a subprocess: same lines, exit 2, no traceback."""
        path = write_file("three.yaml", TestAllProblemsAtOnce.THREE)
        proc = subprocess.run(
            [sys.executable, "-m", "sherpa_skills.cli", "validate", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr
        assert [n for n, _ in problems(path, proc.stdout.splitlines())] == [5, 8, 11]

    def test_the_installed_command_accepts_a_valid_file(self, write_file):
        """A valid file exits 0 from a real process too."""
        path = write_file("valid.yaml", VALID)
        proc = subprocess.run(
            [sys.executable, "-m", "sherpa_skills.cli", "validate", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
