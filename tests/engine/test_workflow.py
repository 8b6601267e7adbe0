"""Loading workflow files: every problem at once, files kept inside their folders, hostile values refused, and the
`transitions` library's way of writing a machine understood."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.workflow import load_workflow


def validate(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, list[str]]:
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, (out + err).splitlines()


def run(capsys: pytest.CaptureFixture[str], path: Path, tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["run", str(path), "--home", str(tmp_path / "home"), *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


class TestRulesFiles:
    @pytest.mark.parametrize(
        "rules", ["../../../../etc/passwd", "/etc/passwd", "../outside.rules.yaml", "sub/../../outside.rules.yaml"]
    )
    def test_a_rules_path_outside_the_workflow_folder_and_policies_is_refused(
        self, tmp_path: Path, capsys, rules: str
    ) -> None:
        """`policy.rules` names a file beside the workflow (or a shipped one), never one elsewhere on disk."""
        (tmp_path / "outside.rules.yaml").write_text("- {trigger: go}\n")
        folder = tmp_path / "flows"
        folder.mkdir()
        path = folder / "w.yaml"
        path.write_text(f"""name: w
initial: a
policy: {{type: rule, rules: "{rules}"}}
states:
  a: {{}}
  b: {{final: true}}
transitions:
  - {{trigger: go, source: a, dest: b}}
""")
        code, lines = validate(capsys, path)
        assert code == 2
        assert any(f"{path.resolve()}:3:" in line and "outside" in line for line in lines), lines

    def test_a_rules_file_in_a_subfolder_is_fine(self, tmp_path: Path) -> None:
        (tmp_path / "rules").mkdir()
        (tmp_path / "rules" / "r.yaml").write_text("- {trigger: go}\n")
        path = tmp_path / "w.yaml"
        path.write_text(
            "name: w\ninitial: a\npolicy: {type: rule, rules: rules/r.yaml}\nstates:\n  a: {}\n  b: {final: true}\n"
            "transitions:\n  - {trigger: go, source: a, dest: b}\n"
        )
        assert load_workflow(path).spec.policy.rules == "rules/r.yaml"


class TestHostileValues:
    def test_a_lone_surrogate_in_a_name_fails_validate_not_run(self, tmp_path: Path, capsys) -> None:
        path = tmp_path / "w.yaml"
        path.write_text('name: "bad\\ud800name"\ninitial: a\nstates:\n  a: {final: true}\n')
        code, lines = validate(capsys, path)
        assert code == 2 and lines[0].startswith(f"{path.resolve()}:1:")
        code, out, err = run(capsys, path, tmp_path)
        assert code == 2 and f"{path.resolve()}:1:" in err

    def test_a_recursive_alias_is_a_clear_error(self, tmp_path: Path, capsys) -> None:
        path = tmp_path / "w.yaml"
        path.write_text("name: w\ninitial: a\ncontext:\n  a: &a [*a]\nstates:\n  a: {final: true}\n")
        code, lines = validate(capsys, path)
        assert code == 2 and lines == [f"{path.resolve()}:4: recursive alias: a value contains itself"]


class TestEveryProblemAtOnce:
    def test_unknown_keys_do_not_hide_semantic_problems(self, tmp_path: Path, capsys) -> None:
        """A typo in one key is reported together with the graph and call problems elsewhere in the file."""
        path = tmp_path / "w.yaml"
        path.write_text("""name: many
initial: a
colour: blue
states:
  a:
    fnal: true
    on_enter: [launch_rockets]
  b: {}
transitions:
  - {trigger: go, source: a, dest: nowhere}
  - {trigger: back, source: b, dest: a, conditions: [no_such_guard]}
""")
        code, lines = validate(capsys, path)
        assert code == 2
        text = "\n".join(lines)
        for line, words in [
            (3, "unknown key 'colour'"),
            (6, "unknown key 'fnal'"),
            (7, "unknown action 'launch_rockets'"),
            (10, "transition 'go': dest 'nowhere' is not a state"),
            (11, "unknown guard 'no_such_guard'"),
        ]:
            assert f"{path.resolve()}:{line}: {words}" in text, text

    def test_a_mistyped_optional_value_does_not_hide_the_rest(self, tmp_path: Path, capsys) -> None:
        path = tmp_path / "w.yaml"
        path.write_text(
            "name: w\nmax_steps: many\ninitial: a\nstates:\n  a: {on_enter: [launch_rockets]}\n  b: {final: true}\n"
            "transitions:\n  - {trigger: go, source: a, dest: b}\n"
        )
        code, lines = validate(capsys, path)
        assert code == 2
        assert any(":2: max_steps" in line for line in lines) and any(
            ":5: unknown action 'launch_rockets'" in line for line in lines
        ), lines

    def test_a_wrong_required_value_reports_the_schema_problems_alone(self, tmp_path: Path, capsys) -> None:
        """With `initial` unusable every later check would guess: only what is certain is reported."""
        path = tmp_path / "w.yaml"
        path.write_text("name: w\ninitial: [a]\ncolour: red\nstates:\n  a: {final: true}\n")
        code, lines = validate(capsys, path)
        assert code == 2 and len(lines) == 2 and ":2: initial" in lines[0] and ":3: unknown key 'colour'" in lines[1], (
            lines
        )

    def test_guard_arguments_are_checked_like_action_arguments(self, tmp_path: Path, capsys) -> None:
        """`context_gt: {key: n}` without `value` fails validation on its line,
        as an action's missing argument would."""
        path = tmp_path / "w.yaml"
        path.write_text("""name: guards
initial: a
states:
  a: {}
  b: {final: true}
transitions:
  - trigger: go
    source: a
    dest: b
    conditions:
      - context_gt: {key: n}
""")
        code, lines = validate(capsys, path)
        assert code == 2
        assert any(
            line.startswith(f"{path.resolve()}:11:") and "context_gt" in line and "value" in line for line in lines
        ), lines

    def test_guard_arguments_the_guard_does_not_take_are_refused(self, tmp_path: Path, capsys) -> None:
        path = tmp_path / "w.yaml"
        path.write_text(
            "name: g\ninitial: a\nstates:\n  a: {}\n  b: {final: true}\ntransitions:\n"
            "  - {trigger: go, source: a, dest: b, conditions: {context_true: {key: ok, colour: red}}}\n"
        )
        code, lines = validate(capsys, path)
        assert code == 2 and any(":7:" in line and "colour" in line for line in lines), lines

    def test_rule_guards_are_checked_the_same_way(self, tmp_path: Path, capsys) -> None:
        path = tmp_path / "w.yaml"
        path.write_text(
            "name: g\ninitial: a\npolicy:\n  type: rule\n  rules:\n    - {when: {context_lt: {key: n}}, trigger: go}\n"
            "    - {when: {context_true: {key: ok, colour: red}}, trigger: go}\n"
            "states:\n  a: {}\n  b: {final: true}\ntransitions:\n  - {trigger: go, source: a, dest: b}\n"
        )
        code, lines = validate(capsys, path)
        assert code == 2
        assert any(":6:" in line and "context_lt" in line and "value" in line for line in lines), lines
        assert any(":7:" in line and "no argument 'colour'" in line for line in lines), lines


TRANSITIONS_STYLE = """
name: lights
initial: off
states:
  - off
  - name: on
    children: [dim, bright]
    initial: dim
  - {name: broken, final: true}
transitions:
  - [switch_on, off, on]
  - {trigger: brighten, source: on_dim, dest: on_bright}
  - trigger: switch_off
    source: on
    dest: off
  - [smash, '*', broken]
"""


class TestTransitionsLibraryStyle:
    def test_states_as_a_list_and_transitions_as_lists_and_dicts_are_accepted(self, tmp_path: Path) -> None:
        """What users of `transitions` write first: `states: [a, {name: b, children:
        [...]}]`, `[trigger, source, dest]`."""
        path = tmp_path / "lights.yaml"
        path.write_text(TRANSITIONS_STYLE)
        machine = load_workflow(path).machine
        assert sorted(machine.leaves) == ["broken", "off", "on/bright", "on/dim"]
        triggers = {e.trigger: e.dest for edges in machine.edges for e in edges}
        assert triggers == {"switch_on": "on", "brighten": "on/bright", "switch_off": "off", "smash": "broken"}

    def test_on_off_yes_no_are_names(self, tmp_path: Path) -> None:
        """A trigger or state named `on`, `off`, `yes` or `no` is a string, not a YAML 1.1 boolean."""
        path = tmp_path / "w.yaml"
        path.write_text(
            "name: w\ninitial: no\nstates:\n  no: {}\n  yes: {}\n  off: {final: true}\ntransitions:\n"
            "  - {trigger: on, source: no, dest: yes}\n  - {trigger: off, source: yes, dest: off}\n"
        )
        machine = load_workflow(path).machine
        assert sorted(e.trigger for edges in machine.edges for e in edges) == ["off", "on"]

    @pytest.mark.parametrize(
        "bad, words",
        [
            ("  - [go, a]\n", "[trigger, source, dest]"),
            ("  - [go, a, b, [], [], [], [], []]\n", "[trigger, source, dest]"),
            ("  - go\n", "a transition is a mapping"),
        ],
    )
    def test_a_malformed_list_transition_shows_the_expected_form(
        self, tmp_path: Path, capsys, bad: str, words: str
    ) -> None:
        path = tmp_path / "w.yaml"
        path.write_text(
            "name: w\ninitial: a\nstates: [a, {name: b, final: true}]\ntransitions:\n  - [ok, a, b]\n" + bad
        )
        code, lines = validate(capsys, path)
        assert code == 2 and any(":6:" in line and words in line for line in lines), lines

    def test_a_state_list_entry_without_a_name_is_refused(self, tmp_path: Path, capsys) -> None:
        path = tmp_path / "w.yaml"
        path.write_text("name: w\ninitial: a\nstates:\n  - a\n  - {final: true}\n")
        code, lines = validate(capsys, path)
        assert code == 2 and any(":5:" in line and "name" in line for line in lines), lines
