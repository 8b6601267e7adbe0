"""The built-in planner machine as the README runs it: `sherpa-skills run planner ... --model scripted/...`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.workflow import load_workflow_text

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = "examples/skills_loop/planner.script.yaml"

pytestmark = pytest.mark.usefixtures("fresh_scripts")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder laid out like the repository root (the example script at its relative path),
    as the current directory."""
    work = tmp_path / "project"
    (work / SCRIPT).parent.mkdir(parents=True)
    shutil.copy(ROOT / SCRIPT, work / SCRIPT)
    monkeypatch.chdir(work)
    return work


def _run_planner(capsys: pytest.CaptureFixture[str], home: Path, *extra: str) -> tuple[int, dict, str]:
    code = main(
        [
            "run",
            "planner",
            "-i",
            "task=Package the notes folder",
            "-i",
            "task_type=package-notes",
            "--model",
            f"scripted/{SCRIPT}",
            "--home",
            str(home),
            "--json",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, json.loads(out), err


class TestReadmeCommand:
    def test_runs_from_the_current_directory_without_the_optional_cwd(self, project, tmp_path, capsys):
        """No `-i cwd`: the prompt still renders (cwd is None, 'the current directory'), the relative script path
        is found beside the user, not inside the package, and the commands run here."""
        (project / "notes").mkdir()
        (project / "notes" / "monday.md").write_text("notes\n", encoding="utf-8")
        code, result, err = _run_planner(capsys, tmp_path / "home")
        assert "Traceback" not in err
        assert (code, result["status"], result["state"]) == (0, "final", "done"), result["error"]
        assert result["llm_calls"] == 4
        assert (project / "build" / "notes.tar.gz").is_file()

    def test_with_cwd_the_script_still_resolves_against_the_current_directory(self, project, tmp_path, capsys):
        """`-i cwd=DIR` moves the commands, not the model script: it is still read from where the user stands."""
        work = tmp_path / "elsewhere"
        (work / "notes").mkdir(parents=True)
        (work / "notes" / "a.md").write_text("a\n", encoding="utf-8")
        code, result, _ = _run_planner(capsys, tmp_path / "home", "-i", f"cwd={work}")
        assert (code, result["state"]) == (0, "done"), result["error"]
        assert (work / "build" / "notes.tar.gz").is_file() and not (project / "build").exists()

    def test_nothing_to_pack_ends_in_failed_not_a_traceback(self, project, tmp_path, capsys):
        """Without notes/ the scripted planner gives up: a final state, and no traceback."""
        code, result, err = _run_planner(capsys, tmp_path / "home")
        assert (code, result["status"], result["state"]) == (0, "final", "failed")
        assert "Traceback" not in err


PROMPTED = """
name: prompted
initial: a
llm: {model: scripted/script.yaml}
policy: {type: llm, prompt: broken}
inputs:
  note: {description: "optional, never given"}
states:
  a:
    transitions:
      - {trigger: x, dest: b}
      - {trigger: y, dest: b}
  b: {final: true}
"""


class TestPromptRendering:
    def test_an_optional_input_not_given_is_none_for_templates(self, write_file):
        """A declared input without a value is defined (None), so `{{ vars.note or ... }}` renders."""
        write_file("broken.system.j2", "Choose.")
        write_file("broken.user.j2", "Note: {{ vars.note or 'none' }}\nAvailable: {{ triggers | join(', ') }}")
        write_file("script.yaml", 'answers:\n  - {match: \'Note: none\', respond: \'{"trigger": "y", "args": {}}\'}\n')
        result = load_workflow_text(PROMPTED, name="prompted.yaml", base_dir=write_file("x", "").parent).agent().run()
        assert (result.status, result.state) == ("final", "b"), result.error
        assert result.context["note"] is None

    def test_a_prompt_that_cannot_render_is_a_policy_error_naming_it(self, write_file, tmp_path, capsys):
        """An undefined name in the prompt ends the run with an error naming the template and line;
        no LLM call, no traceback."""
        write_file("broken.system.j2", "Choose.")
        write_file("broken.user.j2", "State: {{ state }}\nTask: {{ vars.no_such_input }}\n")
        write_file("script.yaml", "answers: []\n")
        flow = write_file("prompted.yaml", PROMPTED)
        code = main(["run", str(flow), "--home", str(tmp_path / "home"), "--json"])
        out, err = capsys.readouterr()
        result = json.loads(out)
        assert code == 1 and result["status"] == "error" and result["llm_calls"] == 0
        assert (
            "prompt 'broken.user.j2' line 2 cannot be rendered" in result["error"]
            and "no_such_input" in result["error"]
        )
        assert "Traceback" not in err


class TestPlanningBudget:
    """A model that never finishes (a small local one repeating itself) cannot run commands forever: the planner
    stops offering `run_command` once the same command failed three times in a row, or the budget is spent; and it
    cannot `finish` right after a failed command."""

    @staticmethod
    def _script(tmp_path: Path, command: str) -> Path:
        script = tmp_path / "looping.yaml"
        script.write_text(
            "answers:\n"
            "  - match: 'No more commands'\n"
            '    respond: \'{"trigger": "give_up", "args": {}, "reason": "out of commands"}\'\n'
            "  - match: '.'\n"
            f'    respond: \'{{"trigger": "run_command", "args": {{"command": "{command}"}}, "reason": "again"}}\'\n',
            encoding="utf-8",
        )
        return script

    def _run(self, capsys, tmp_path: Path, script: Path, *extra: str) -> dict:
        code = main(
            [
                "run",
                "planner",
                "-i",
                "task=Loop forever",
                "-i",
                "task_type=loop",
                "-i",
                f"cwd={tmp_path}",
                "--model",
                f"scripted/{script}",
                "--home",
                str(tmp_path / "home"),
                "--json",
                *extra,
            ]
        )
        out, _ = capsys.readouterr()
        result = json.loads(out)
        assert code == 0 and (result["status"], result["state"]) == ("final", "failed"), (
            result
        )  # a final state, as any give_up
        return result

    def test_the_same_failing_command_three_times_stops_the_commands(self, tmp_path, capsys):
        result = self._run(capsys, tmp_path, self._script(tmp_path, "false"))
        assert [c["command"] for c in result["context"]["commands_run"]] == ["false"] * 3
        assert "failed 3 times in a row" in result["context"]["stop_reason"]
        # Three commands; then give_up is the only way left (no command, and no finish after a failure):
        # no one is asked.
        assert result["llm_calls"] == 3 and result["fast_forwards"] >= 1

    def test_the_command_budget_holds(self, tmp_path, capsys):
        result = self._run(capsys, tmp_path, self._script(tmp_path, "true"), "-i", "max_commands=5")
        assert len(result["context"]["commands_run"]) == 5 and "5 commands" in result["context"]["stop_reason"]

    def test_a_budget_that_is_not_a_positive_number_is_refused(self, tmp_path, capsys):
        code = main(
            [
                "run",
                "planner",
                "-i",
                "task=x",
                "-i",
                "task_type=x",
                "-i",
                "max_commands=0",
                "--model",
                f"scripted/{self._script(tmp_path, 'true')}",
                "--home",
                str(tmp_path / "home"),
            ]
        )
        assert code == 2 and "max_commands" in capsys.readouterr().err

    def test_finish_is_not_offered_right_after_a_failed_command(self, tmp_path, capsys):
        script = tmp_path / "liar.yaml"
        script.write_text(
            "answers:\n"
            "  - match: 'No command run yet'\n"
            '    respond: \'{"trigger": "run_command", "args": {"command": "false"}, "reason": "try"}\'\n'
            "  - match: 'Available: run_command, give_up'\n"
            '    respond: \'{"trigger": "give_up", "args": {}, "reason": "it failed"}\'\n',
            encoding="utf-8",
        )
        result = self._run(capsys, tmp_path, script)
        assert [c["command"] for c in result["context"]["commands_run"]] == ["false"] and result["llm_calls"] == 2
