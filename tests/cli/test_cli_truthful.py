"""The CLI never says something false: validate checks every argument, a finished run resumes to its result, and
every command exits with a code from one table, the one `--help` and the troubleshooting page show."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.cli.console import EXIT_CODES

pytestmark = pytest.mark.usefixtures("fresh_scripts")

TROUBLESHOOTING = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"

SHORT = """
name: short
initial: a
states:
  a:
    transitions: [{trigger: go, dest: b}]
  b: {final: true}
"""

TEMPLATE_BESIDE_A_BAD_LITERAL = """name: t
initial: a
inputs:
  dir: {default: /tmp}
states:
  a:
    on_enter:
      - shell:
          command: "ls {{ dir }}"
          timeout_secs: "abc"
    transitions: [{trigger: go, dest: b}]
  b: {final: true}
"""


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


class TestValidateChecksEveryArgument:
    def test_a_bad_literal_beside_a_template_is_a_problem_with_file_and_line(self, write_file, capsys):
        """`timeout_secs: "abc"` was ok to validate when `command` was a template; the run then failed with exit 1."""
        path = write_file("t.yaml", TEMPLATE_BESIDE_A_BAD_LITERAL)
        code, out, _ = cli(capsys, "validate", str(path))
        assert code == 2
        assert re.fullmatch(rf"{re.escape(str(path))}:\d+: action 'shell': argument 'timeout_secs': .*number.*\n", out)

    def test_running_it_is_refused_before_a_run_exists(self, write_file, tmp_path, capsys):
        path = write_file("t.yaml", TEMPLATE_BESIDE_A_BAD_LITERAL)
        code, out, err = cli(capsys, "run", str(path), "--json", "--home", str(tmp_path / "home"))
        assert code == 2 and out == "" and f"{path}:" in err and "timeout_secs" in err

    def test_good_literals_beside_templates_and_missing_arguments_stay_ok(self, write_file, capsys):
        path = write_file("ok.yaml", TEMPLATE_BESIDE_A_BAD_LITERAL.replace('"abc"', "5"))
        assert cli(capsys, "validate", str(path))[0] == 0


class TestResumeOfAFinishedRun:
    def _finished(self, write_file, tmp_path, capsys) -> tuple[str, str]:
        home = str(tmp_path / "home")
        path = write_file("short.yaml", SHORT)
        code, out, _ = cli(capsys, "run", str(path), "--json", "--home", home)
        assert code == 0 and json.loads(out)["status"] == "final"
        return json.loads(out)["run_id"], home

    def test_it_prints_the_stored_result_and_exits_0(self, write_file, tmp_path, capsys):
        """It said "error in <state>" with exit 1 while the stored run stayed final."""
        run_id, home = self._finished(write_file, tmp_path, capsys)
        code, out, _ = cli(capsys, "resume", run_id, "--json", "--home", home)
        result = json.loads(out)
        assert code == 0 and result["status"] == "final" and result["state"] == "b" and result["error"] is None
        assert result["run_id"] == run_id and result["steps"] == 1
        code, _, err = cli(capsys, "resume", run_id, "--home", home)
        assert code == 0 and "final" in err and "error" not in err
        code, out, _ = cli(capsys, "show", run_id, "--json", "--home", home)
        assert json.loads(out)["status"] == "final"

    def test_a_trigger_for_it_is_refused(self, write_file, tmp_path, capsys):
        run_id, home = self._finished(write_file, tmp_path, capsys)
        code, out, err = cli(capsys, "resume", run_id, "--trigger", "go", "--json", "--home", home)
        assert code == 2 and out == "" and "has finished" in err


class TestOneTableOfExitCodes:
    def test_help_ends_with_the_table(self, capsys):
        with pytest.raises(SystemExit):
            main(["--help"])
        out = capsys.readouterr().out
        for code, meaning in EXIT_CODES:
            assert re.search(rf"^  {code}\s+{re.escape(meaning)}$", out, re.M)

    def test_the_docs_show_the_same_table(self):
        text = TROUBLESHOOTING.read_text(encoding="utf-8")
        section = text[text.index("## Exit codes") : text.index("\n## ", text.index("## Exit codes") + 1)]
        rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", section, re.M))
        assert rows == {str(code): meaning for code, meaning in EXIT_CODES}

    def test_no_such_run_is_usage_for_every_command(self, tmp_path, capsys):
        home = str(tmp_path / "home")
        for argv in (
            ["resume", "nope"],
            ["show", "nope"],
            ["runs", "delete", "nope", "--yes"],
            ["fork", "nope", "--at", "1"],
        ):
            code, out, err = cli(capsys, *argv, "--home", home)
            assert code == 2, argv
            assert "no run 'nope'" in err, argv

    def test_a_mistyped_trigger_is_usage(self, write_file, tmp_path, capsys):
        home = str(tmp_path / "home")
        path = write_file(
            "wait.yaml",
            "name: w\ninitial: a\nstates:\n  a:\n    waiting: true\n"
            "    transitions: [{trigger: go, dest: b}]\n  b: {final: true}\n",
        )
        code, out, _ = cli(capsys, "run", str(path), "--json", "--home", home)
        run_id = json.loads(out)["run_id"]
        code, _, err = cli(capsys, "resume", run_id, "--trigger", "gogo", "--home", home)
        assert code == 2 and "available: go" in err


class TestStepsFiles:
    def _capture(self, capsys, tmp_path, text: str) -> tuple[int, str, str]:
        path = tmp_path / "steps.yaml"
        path.write_text(text)
        return cli(
            capsys, "learn", "capture-success", "build", "--steps-file", str(path), "--home", str(tmp_path / "h")
        )

    def test_plain_command_strings_are_steps(self, capsys, tmp_path):
        """They were refused with "Input should be a valid dictionary or instance of ProcedureStep"."""
        code, out, _ = self._capture(capsys, tmp_path, "- make build\n- {command: make test, timeout_secs: 600}\n")
        assert code == 0 and "2 steps" in out
        code, out, _ = self._capture(capsys, tmp_path, "description: ship it\nsteps: [make dist]\n")
        assert code == 0 and "captured" in out

    def test_one_step_is_enough(self, capsys, tmp_path):
        code, out, _ = self._capture(capsys, tmp_path, "- make dist\n")
        assert code == 0 and "captured" in out

    @pytest.mark.parametrize(
        "text, said",
        [
            (
                "[]\n",
                "steps.yaml:1: no steps: write a list of commands, one per line, like `- make test`; one step is "
                "enough",
            ),
            ("", "steps.yaml:1: the file is empty: write a list of commands"),
            ("steps:\n", "steps.yaml:1: no steps: write a list of commands"),
            ("steps: []\n", "steps.yaml:1: no steps: write a list of commands"),
        ],
    )
    def test_an_empty_file_says_so(self, capsys, tmp_path, text, said):
        """It said "a procedure needs at least 2" though one step is accepted."""
        code, out, err = self._capture(capsys, tmp_path, text)
        assert code == 2 and out == "" and said in err and "at least 2" not in err

    @pytest.mark.parametrize(
        "text, said",
        [
            ("- make\n- {comand: make test}\n", "steps.yaml:2: step 2: unknown key `comand` (did you mean `command`?)"),
            ("- make\n- {timeout_secs: 3}\n", "steps.yaml:2: step 2: give its `command:`"),
            ("- 42\n", "steps.yaml:1: step 1: write the command as text (`- make test`) or a mapping with `command:`"),
            ("- {command: make, timeout_secs: abc}\n", "step 1: `timeout_secs` should be a number"),
            ("- {command: make, expected_exit_code: x}\n", "step 1: `expected_exit_code` should be a whole number"),
            ("- {command: ''}\n", "step 1: `command` should not be empty"),
            ("descripton: x\nsteps: [make]\n", "steps.yaml:1: unknown key `descripton` (did you mean `description`?)"),
            ("42\n", "steps.yaml:1: write a list of commands, one per line, like `- make test`, or a mapping"),
        ],
    )
    def test_mistakes_say_what_to_write_without_library_words(self, capsys, tmp_path, text, said):
        code, out, err = self._capture(capsys, tmp_path, text)
        assert code == 2 and out == "" and said in err, err
        for jargon in (
            "Input should be",
            "instance of",
            "ProcedureStep",
            "Field required",
            "Extra inputs",
            "dictionary",
        ):
            assert jargon not in err

    def test_the_command_length_limit_stays(self, capsys, tmp_path):
        code, _, err = self._capture(capsys, tmp_path, "- " + "x" * 100_001 + "\n")
        assert code == 2 and "step 1: `command`: 100,001 characters, over the 100,000" in err
