"""The tool index ranks the tools a task names or describes, and the LLM policy can show only those."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.workflow import load_workflow_text
from sherpa_skills.semantic.tool_index import ToolIndex, ToolSpec, load_tools
from sherpa_skills.testing import reset_scripts, scripted_model

TOOLS = [
    ToolSpec(
        name="deploy_service",
        description="Roll a service out to the kubernetes cluster",
        keywords=["deploy", "rollout"],
    ),
    ToolSpec(
        name="backup_database",
        description="Dump the postgres database to object storage",
        keywords=["backup", "pg_dump"],
    ),
    ToolSpec(name="send_email", description="Send an email to a list of people", keywords=["mail", "notify"]),
    ToolSpec(name="resize_image", description="Resize or crop an image file", keywords=["thumbnail"]),
]


class TestToolIndex:
    def test_ranks_by_what_the_task_names(self) -> None:
        """Names and keywords count most; unrelated tools are not returned at all."""
        ranked = ToolIndex(TOOLS).relevant("back up the database, then notify the team by mail", limit=5)
        assert [r.tool.name for r in ranked] == ["backup_database", "send_email"]
        assert "database" in ranked[0].matched

    def test_word_forms_meet(self) -> None:
        """'deploying' finds the deploy tool."""
        assert ToolIndex(TOOLS).relevant("we are deploying the new service")[0].tool.name == "deploy_service"

    def test_nothing_relevant_is_an_empty_list(self) -> None:
        """A task that names no tool gets none."""
        assert ToolIndex(TOOLS).relevant("bake a cake") == []
        assert ToolIndex([]).relevant("anything") == []

    def test_ten_thousand_tools_still_find_the_one_named(self) -> None:
        """The right tool surfaces among 10,000."""
        many = [
            ToolSpec(name=f"tool_{i}", description=f"does thing number {i} with widget{i % 97}") for i in range(10_000)
        ]
        ranked = ToolIndex([*many, *TOOLS]).relevant("resize this image into a thumbnail")
        assert ranked[0].tool.name == "resize_image"


def test_cli_reads_a_tools_file_and_prints_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tools relevant TASK --tools FILE --json` lists ranked tools."""
    path = tmp_path / "tools.yaml"
    path.write_text("tools:\n" + "".join(f"  - {json.dumps(t.model_dump())}\n" for t in TOOLS))
    assert len(load_tools(path)) == 4
    assert main(["tools", "relevant", "email the report", "--tools", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["name"] == "send_email"


def test_a_bad_tools_file_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tool without a name is reported as FILE:LINE."""
    path = tmp_path / "tools.yaml"
    path.write_text("- name: ok\n- description: no name here\n")
    assert main(["tools", "relevant", "x", "--tools", str(path)]) == 2
    assert f"{path}:2:" in capsys.readouterr().err


def test_llm_policy_shows_only_the_relevant_transitions(tmp_path: Path) -> None:
    """With relevant_options: 2, the prompt and the schema carry two of the five transitions."""
    reset_scripts()
    script = tmp_path / "s.yaml"
    script.write_text(
        "answers:\n  - match: 'Available transitions:(?![\\s\\S]*resize_image)[\\s\\S]*backup_database'\n"
        '    respond: \'{"trigger": "backup_database", "args": {}}\'\n'
    )
    transitions = "\n".join(
        f'  - {{trigger: {t.name}, source: start, dest: done, description: "{t.description}"}}' for t in TOOLS
    )
    workflow = load_workflow_text(f"""
name: pick
inputs: {{task: {{required: true}}}}
llm: {{model: "{scripted_model(script)}"}}
policy: {{type: llm, relevant_options: 2}}
initial: start
states:
  start: {{}}
  done: {{final: true}}
transitions:
{transitions}
  - {{trigger: noop, source: start, dest: done}}
""")
    result = workflow.agent().run({"task": "nightly backup of the postgres database"})
    assert result.status == "final", result.error
    assert result.llm_calls == 1
