"""A step's command is bounded (`MAX_COMMAND_CHARS`): a 5 MB command is refused at capture and import, naming the
step, in well under a second of work; one stored before the limit still replays (dry) in seconds, not minutes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills import SkillStore
from sherpa_skills.cli import main
from sherpa_skills.errors import UsageError
from sherpa_skills.skills.store.models import MAX_COMMAND_CHARS, CapturedProcedure, ProcedureStep

HUGE = "echo " + "a" * 5_000_000


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


def test_a_5mb_step_in_a_steps_file_is_refused_naming_the_step(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps({"description": "print a lot", "steps": [{"command": "true"}, {"command": HUGE}]}))
    started = time.monotonic()
    code, out, err = cli(capsys, "learn", "capture-success", "x", "--steps-file", str(steps), "--home", str(tmp_path))
    assert time.monotonic() - started < 20
    assert code == 2, (out, err)
    said = json.dumps(out) + err
    assert "step 2: `command`" in said and "5,000,005 characters" in said and f"{MAX_COMMAND_CHARS:,}" in said
    assert "Traceback" not in said
    assert SkillStore(tmp_path).procedures(include_candidates=True) == []


def test_capture_and_import_share_the_limit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"step 2 command: 5,000,005 characters, over the 100,000"):
        SkillStore(tmp_path / "a").capture("x", ["true", HUGE])
    assert SkillStore(tmp_path / "a").capture("x", ["echo " + "a" * (MAX_COMMAND_CHARS - 5)]).outcome == "captured"

    exported = {
        "format": "sherpa-skills/procedures",
        "procedures": [{"id": "big", "task_type": "x", "steps": [{"command": "true"}, {"command": HUGE}]}],
    }
    path = tmp_path / "procs.json"
    path.write_text(json.dumps(exported))
    code, summary, _ = cli(capsys, "learn", "import", str(path), "--home", str(tmp_path / "b"))
    assert code != 0 and summary["added"] == 0
    assert summary["problems"][0].startswith("procedures[0].steps[1].command: 5,000,005 characters")


def test_a_step_stored_before_the_limit_still_reads_and_dry_runs_in_seconds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    skills = SkillStore(tmp_path)
    legacy = CapturedProcedure(
        id="legacy", task_type="x", description="print a lot", steps=[ProcedureStep.model_construct(command=HUGE)]
    )
    skills.store.add_procedure(legacy)
    skills.promote("legacy")
    assert skills.get("legacy").steps[0].command == HUGE
    started = time.monotonic()
    code, out, err = cli(capsys, "learn", "replay", "x", "--procedure", "legacy", "--home", str(tmp_path))
    elapsed = time.monotonic() - started
    assert code == 0 and out["status"] == "dry-run", (out, err)
    assert elapsed < 30, elapsed  # was past 120 s: a glob pattern rescanned the long word from each letter


def test_a_skill_whose_shell_block_is_5mb_is_a_problem_naming_the_step(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "skills" / "huge"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: huge\ndescription: Print a lot.\n---\n\n```bash\ntrue\n```\n\n```bash\n{HUGE}\n```\n"
    )
    code, out, _ = cli(capsys, "learn", "import", "--skills", str(tmp_path / "skills"), "--home", str(tmp_path / "h"))
    assert code != 0 and out["candidates"] == []
    assert out["problems"] == [
        f"{folder / 'SKILL.md'}:1: step 2 command: 5,000,005 characters, over the 100,000"
        " a step's command may hold: put the data in a file and have the step read it"
    ]
