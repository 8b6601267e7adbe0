"""Procedures as Agent Skills: `learn export --skills DIR` writes valid SKILL.md folders; `learn import --skills` reads
them back (ours as procedures, hand-written ones as candidates)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills import SkillStore
from sherpa_skills.bridge.skill_format import read_skill, shell_blocks, skill_name, validate_skill
from sherpa_skills.cli.main import main
from sherpa_skills.skills.store.models import CapturedProcedure

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def learned_home(home: Path) -> dict[str, str]:
    """A home with a promoted procedure (a parameter, a secret made an env var), an unproven one and a trajectory."""
    skills = SkillStore(home)
    rotate = skills.capture(
        "rotate-logs",
        [
            "mkdir -p archive",
            "touch app.log",
            "mv app.log archive/app-{{ label }}.log",
            f"curl -s -H 'Authorization: token {SECRET}' https://example.invalid/notify",
        ],
        description="Move the app log into the archive folder",
    )
    assert rotate.procedure is not None
    skills.promote(rotate.procedure.id)
    unproven = skills.capture("count-lines", ["wc -l notes.txt"], description="Count the lines of the notes")
    assert unproven.procedure is not None
    trajectory = skills.store.add_procedure(
        CapturedProcedure(id="", task_type="support-triage", kind="trajectory", steps=[], success_count=5)
    )
    return {"rotate": rotate.procedure.id, "unproven": unproven.procedure.id, "trajectory": trajectory.id}


def export(home: Path, target: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["learn", "export", "--skills", str(target), "--home", str(home), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_healthy_shell_procedures_export_as_valid_skills(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = learned_home(tmp_path / "home")
    out = export(tmp_path / "home", tmp_path / "skills", capsys)
    assert [e["procedure_id"] for e in out["exported"]] == [ids["rotate"]]
    reasons = {s["procedure_id"]: s["reason"] for s in out["skipped"]}
    assert "belongs to its workflow" in reasons[ids["trajectory"]]
    assert "not yet proven" in reasons[ids["unproven"]]
    folder = tmp_path / "skills" / "rotate-logs"
    assert validate_skill(folder) == []
    skill = read_skill(folder)
    assert skill.name == "rotate-logs" and "Use when" in skill.description
    assert skill.metadata["sherpa-skills-procedure"] == ids["rotate"]
    assert "`label`" in skill.body and "## Environment variables" in skill.body
    everything = "".join(p.read_text() for p in folder.rglob("*") if p.is_file())
    assert SECRET not in everything
    script = (folder / "scripts" / "replay.sh").read_text()
    assert f"learn replay 'Move the app log into the archive folder' --procedure {ids['rotate']}" in script
    assert "mkdir" not in script and os.access(folder / "scripts" / "replay.sh", os.X_OK)


def test_replay_sh_is_a_dry_run_through_sherpa_skills(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    learned_home(tmp_path / "home")
    export(tmp_path / "home", tmp_path / "skills", capsys)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SHERPA_SKILLS_HOME": str(tmp_path / "home"),
        "AUTHORIZATION": "set-by-the-user",  # the secret became this variable; preflight wants it set
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    done = subprocess.run(
        [str(tmp_path / "skills" / "rotate-logs" / "scripts" / "replay.sh"), "--param", "label=monday", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["status"] == "dry-run"
    assert "mv app.log archive/app-monday.log" in [s["command"] for s in answer["steps"]]
    assert not (tmp_path / "archive").exists()


def test_export_then_import_round_trips_a_procedure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = learned_home(tmp_path / "home")
    export(tmp_path / "home", tmp_path / "skills", capsys)
    other = tmp_path / "other"
    assert main(["learn", "import", "--skills", str(tmp_path / "skills"), "--home", str(other), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["candidates"] == [ids["rotate"]] and out["problems"] == []
    original, copy = SkillStore(tmp_path / "home").get(ids["rotate"]), SkillStore(other).get(ids["rotate"])
    assert copy.steps == original.steps and copy.description == original.description and copy.status == "candidate"
    assert (copy.success_count, copy.claimed_successes) == (0, original.success_count)  # the file's word: a claim
    SkillStore(other).promote(ids["rotate"], by="bob")  # a person read it
    decision = SkillStore(other).match('Move the app log into the archive folder, labelled "monday"')
    assert decision.procedure_id == ids["rotate"]
    assert main(["learn", "import", "--skills", str(tmp_path / "skills"), "--home", str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["known"] == [ids["rotate"]]


def test_a_hand_written_skill_arrives_as_a_candidate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "skills" / "deploy-docs"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: deploy-docs\ndescription: Build the docs and publish them. Use when the docs changed.\n---\n\n"
        "# Deploy the docs\n\n```bash\n$ make -C docs html\n# publish\nrsync -a docs/_build/html/ \\\n"
        "  web:/srv/docs/\n```\n\n```python\nprint('not a step')\n```\n"
    )
    assert main(["learn", "import", "--skills", str(tmp_path / "skills"), "--home", str(tmp_path / "h"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (candidate,) = out["candidates"]
    proc = SkillStore(tmp_path / "h").get(candidate)
    assert proc.status == "candidate" and proc.task_type == "deploy-docs"
    assert [s.command for s in proc.steps] == ["make -C docs html", "rsync -a docs/_build/html/ web:/srv/docs/"]


@pytest.mark.parametrize(
    ("folder", "text", "expected"),
    [
        ("good", "# no frontmatter\n", "must start with a `---` line"),
        ("good", "---\nname: good\n", "never closed"),
        ("good", "---\nname: other\ndescription: d\n---\n", "must equal the folder's name 'good'"),
        ("Bad--Name", "---\nname: Bad--Name\ndescription: d\n---\n", "lower-case letters, digits and single hyphens"),
        ("good", "---\nname: good\ndescription: ''\n---\n", "'description' is required"),
        ("good", f"---\nname: good\ndescription: {'x' * 1025}\n---\n", "has 1025 characters; at most 1024"),
        ("good", "---\nname: good\ndescription: d\nauthor: me\n---\n", "'author' is not a frontmatter field"),
        ("good", "---\nname: good\ndescription: d\nmetadata: {a: 1}\n---\n", "string keys to string values"),
        ("good", "---\nname: good\ndescription: [unclosed\n---\n", "SKILL.md:4: invalid YAML"),
    ],
)
def test_the_format_rules_are_enforced(tmp_path: Path, folder: str, text: str, expected: str) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "SKILL.md").write_text(text)
    problems = validate_skill(tmp_path / folder)
    assert any(expected in p for p in problems), problems


def test_import_reports_invalid_skills_and_refuses_a_folder_without_any(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "skills" / "broken"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n```sh\nmake\n```\n")
    home = str(tmp_path / "h")
    assert main(["learn", "import", "--skills", str(tmp_path / "skills"), "--home", home, "--json"]) == 1
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert f"{bad / 'SKILL.md'}:2: 'name' 'other' must equal" in problem
    (tmp_path / "empty").mkdir()
    assert main(["learn", "import", "--skills", str(tmp_path / "empty"), "--home", home]) == 2
    assert "no SKILL.md" in capsys.readouterr().err


def test_skill_names_are_always_valid() -> None:
    assert skill_name("Rotate Logs!!") == "rotate-logs"
    assert skill_name("x" * 100, suffix="1a2b3c4d") == "x" * 55 + "-1a2b3c4d"
    assert skill_name("---") == "procedure"
    assert shell_blocks("```console\n$ ls\n```") == ["ls"]


def bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment with no sherpa-skills on PATH, no SHERPA_SKILLS_HOME and an empty ~: a shell an agent opens."""
    env = {k: v for k, v in os.environ.items() if k not in ("SHERPA_SKILLS_HOME", "VIRTUAL_ENV")}
    env.update(PATH="/usr/bin:/bin", HOME=str(tmp_path / "empty-user"), PYTHONPATH=os.pathsep.join(sys.path))
    env.update(AUTHORIZATION="set-by-the-user", **extra)
    return env


def test_replay_sh_finds_the_home_and_the_python_it_was_exported_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "my home" / "it's $(touch pwned) `touch pwned`"
    learned_home(home)
    export(home, tmp_path / "skills dir", capsys)
    script = tmp_path / "skills dir" / "rotate-logs" / "scripts" / "replay.sh"
    env = bare_env(tmp_path)
    assert subprocess.run(["sh", "-c", "command -v sherpa-skills"], env=env).returncode != 0
    done = subprocess.run(
        ["sh", str(script), "--param", "label=monday", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["status"] == "dry-run"
    assert "mv app.log archive/app-monday.log" in [s["command"] for s in answer["steps"]]
    assert not list(tmp_path.rglob("pwned")) and not (tmp_path / "archive").exists()

    # SHERPA_SKILLS_HOME, when set, still decides: this other home does not hold the procedure.
    other = subprocess.run(
        ["sh", str(script), "--json"],
        capture_output=True,
        text=True,
        env=bare_env(tmp_path, SHERPA_SKILLS_HOME=str(tmp_path / "other")),
        cwd=tmp_path,
        timeout=120,
    )
    assert other.returncode != 0 and (tmp_path / "other").is_dir()


def test_replay_sh_says_what_to_do_when_it_finds_no_sherpa_skills(tmp_path: Path) -> None:
    from sherpa_skills.bridge.skill_export import render_replay_script

    proc = CapturedProcedure(id="proc-1", task_type="rotate-logs", steps=[])
    script = tmp_path / "replay.sh"
    script.write_text(render_replay_script(proc, tmp_path / "h", python=str(tmp_path / "gone" / "python3")))
    done = subprocess.run(["sh", str(script)], capture_output=True, text=True, env=bare_env(tmp_path), timeout=60)
    assert done.returncode == 127 and done.stdout == ""
    assert "sherpa-skills is not on PATH" in done.stderr and str(tmp_path / "gone" / "python3") in done.stderr


def test_a_hostile_task_type_stays_inside_replay_sh_comments_and_quotes(tmp_path: Path) -> None:
    from sherpa_skills.bridge.skill_export import render_replay_script

    hostile = "x\ntouch pwned-1\n$(touch pwned-2) `touch pwned-3`'"
    proc = CapturedProcedure(id="proc-1", task_type=hostile, description=hostile, steps=[])
    script = tmp_path / "replay.sh"
    script.write_text(render_replay_script(proc, tmp_path / "h", python=str(tmp_path / "gone" / "python3")))
    done = subprocess.run(["sh", str(script)], capture_output=True, text=True, env=bare_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 127, done.stderr
    assert not list(tmp_path.glob("pwned*"))


@pytest.mark.parametrize("planted", ["scripts/replay.sh", "SKILL.md", "assets/procedure.json", "scripts", "."])
def test_export_never_writes_through_a_link_planted_in_the_skills_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: str
) -> None:
    """The attack: an agent that may write only in its project plants a symbolic link where the next export writes
    (a skill's replay.sh pointing at the person's ~/.bashrc); the export followed it, overwrote the file outside the
    folder and made it executable. The skill is skipped, saying why; the file outside is untouched."""
    ids = learned_home(tmp_path / "home")
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "bashrc"
    victim.write_text("keep me\n")
    victim.chmod(0o600)
    folder = tmp_path / "skills" / "rotate-logs"
    link = folder / planted if planted != "." else folder
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim if "." in link.name and planted != "." else outside)
    out = export(tmp_path / "home", tmp_path / "skills", capsys)
    assert out["exported"] == []
    reasons = {s["procedure_id"]: s["reason"] for s in out["skipped"]}
    assert "symbolic link" in reasons[ids["rotate"]] and str(link) in reasons[ids["rotate"]]
    assert victim.read_text() == "keep me\n" and not os.access(victim, os.X_OK)
    assert sorted(p.name for p in outside.iterdir()) == ["bashrc"]
