"""`learn export --skills DIR` / `learn import --skills DIR`: procedures as Agent Skills folders, and back.

Each healthy shell procedure becomes `DIR/NAME/SKILL.md` (what it does and when to use it, its steps, parameters and
environment variables, how to replay it, a dry run first), `scripts/replay.sh` (which calls `sherpa-skills learn
replay --procedure ID`, never the raw commands, so quoting, checks and the dry run still apply) and
`assets/procedure.json` (the procedure itself, so importing it back loses nothing). Trajectory procedures belong to
their workflow and are not exported.

An import brings steps this store never saw run, so every imported skill arrives as a candidate for review (`learn
candidates`; `learn promote ID` makes it replayable): ours with the counts their procedure.json carries kept as claims
(shown, never counted), hand-written ones with their fenced shell blocks as steps. An imported skill is what
its SKILL.md shows: our procedure.json is taken only when its steps (and conditions) are the ones SKILL.md's blocks
show, compared step by step after the redaction the export applies; a procedure.json that differs is refused, naming
the file, the line and the step.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..redact import redact
from .skill_format import DESCRIPTION_MAX, block_under, bullets_under, read_skill, shell_blocks, skill_name

if TYPE_CHECKING:
    from ..skills.api import CapturedProcedure, ProcedureStep, SkillStore

PROCEDURE_KEY = "sherpa-skills-procedure"
EXPORTABLE_HEALTH = frozenset({"new", "healthy"})


@dataclass
class SkillsExport:
    directory: str
    exported: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "exported": self.exported, "skipped": self.skipped}


@dataclass
class SkillsImport:
    directory: str
    candidates: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    index_warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "candidates": self.candidates,
            "known": self.known,
            "problems": self.problems,
            "index_warning": self.index_warning,
        }


def _examples(proc: CapturedProcedure, name: str) -> list[str]:
    mined = proc.context.get("mined") if isinstance(proc.context, dict) else None
    params = mined.get("parameters") if isinstance(mined, dict) else None
    found = params.get(name) if isinstance(params, dict) else None
    values = found.get("examples") if isinstance(found, dict) else found
    return [str(v) for v in values][:3] if isinstance(values, list) else []


def describe(proc: CapturedProcedure) -> str:
    """What it does and when to use it, within the format's 1,024 characters."""
    what = (proc.description or proc.task_type).strip().rstrip(".")
    when = (
        f" Use when asked to {what[0].lower() + what[1:]} ({proc.task_type}); replay it through sherpa-skills, "
        "a dry run first."
    )
    text = redact(what + "." + when)
    return text if len(text) <= DESCRIPTION_MAX else text[: DESCRIPTION_MAX - 1].rstrip() + "…"


def _fence(commands: list[str]) -> str:
    longest = max((len(run) for c in commands for run in re.findall(r"`+", c)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}bash\n" + "\n".join(commands) + f"\n{ticks}"


def render_skill(proc: CapturedProcedure, name: str) -> str:
    """SKILL.md for one shell procedure."""
    import yaml

    from ..skills.api import SkillStore

    params = SkillStore.parameters(proc)
    frontmatter = {
        "name": name,
        "description": describe(proc),
        "compatibility": "Needs the sherpa-skills command and the home that holds this procedure "
        "(SHERPA_SKILLS_HOME, else ~/.sherpa-skills).",
        "metadata": {
            PROCEDURE_KEY: proc.id,
            "sherpa-skills-version": str(proc.version),
            "sherpa-skills-task-type": proc.task_type,
        },
    }
    task = proc.description or proc.task_type
    flags = " ".join(f"--param {p}=VALUE" for p in params)
    lines = [
        "---",
        yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True, width=1000).rstrip(),
        "---",
        "",
        f"# {task}",
        "",
        f"A procedure sherpa-skills learned (`{proc.id}`, version {proc.version}, confidence {proc.confidence:.2f}).",
        "Replay it through sherpa-skills rather than running the commands yourself: parameters are shell-quoted, "
        "each step's exit code and output are checked, and the replay stops where the world differs.",
        "",
        "## Replay",
        "",
        "1. Dry run (shows the rendered steps, runs nothing):",
        "",
        _fence([f"scripts/replay.sh {flags}".rstrip()]),
        "",
        "2. If the steps are what the task needs, execute them:",
        "",
        _fence([f"scripts/replay.sh {flags} --execute --yes".replace("  ", " ")]),
        "",
        "If it reports `diverged`, the step, what was expected and what was observed are in its answer: "
        "continue by hand from there.",
        "",
        "## Steps",
        "",
        _fence([s.command for s in proc.steps]),
    ]
    if params:
        lines += ["", "## Parameters", ""]
        for p in params:
            examples = _examples(proc, p)
            lines.append(f"- `{p}`" + (f" (seen: {', '.join(f'`{e}`' for e in examples)})" if examples else ""))
    env = sorted({v for s in proc.steps for v in s.env_vars})
    if env:
        lines += ["", "## Environment variables", ""]
        lines += [f"- `{v}` must be set when it runs (only its name is stored)" for v in env]
    for title, checks in (("Preconditions", proc.preconditions), ("Postconditions", proc.postconditions)):
        if checks:
            lines += ["", f"## {title}", "", "Shell checks that must exit 0; the replay runs them itself.", ""]
            lines += [f"- `{c}`" for c in checks]
    return redact("\n".join(lines) + "\n")


def render_replay_script(proc: CapturedProcedure, home: str | Path | None = None, python: str | None = None) -> str:
    """scripts/replay.sh: `sherpa-skills learn replay` against `home` (SHERPA_SKILLS_HOME still wins when set), through
    sherpa-skills on PATH, else `python -m sherpa_skills` with the Python that exported it (default: this one)."""
    task = proc.description or proc.task_type
    python = sys.executable if python is None else python
    replay = f'learn replay {shlex.quote(task)} --procedure {shlex.quote(proc.id)} "$@"'
    lines = [
        "#!/bin/sh",
        # One line: a newline in a task type would end the comment and run what follows it.
        f"# Replays sherpa-skills procedure {' '.join(f'{proc.id} ({proc.task_type})'.split())}: a dry run unless "
        "--execute is given.",
        "# sherpa-skills renders, quotes and checks every step; this script never runs the commands itself.",
    ]
    if home is not None:
        lines += [
            "# The home this skill was exported from holds the procedure; SHERPA_SKILLS_HOME, when set, names another.",
            'if [ -z "${SHERPA_SKILLS_HOME:-}" ]; then',
            f"  SHERPA_SKILLS_HOME={shlex.quote(str(Path(home).expanduser().resolve()))}",
            "fi",
            "export SHERPA_SKILLS_HOME",
        ]
    lines += [
        "if command -v sherpa-skills >/dev/null 2>&1; then",
        f"  exec sherpa-skills {replay}",
        "fi",
    ]
    missing = "sherpa-skills is not on PATH"
    if python:
        lines += [
            f"if [ -x {shlex.quote(python)} ]; then",
            f"  exec {shlex.quote(python)} -m sherpa_skills {replay}",
            "fi",
        ]
        missing += f", and {python} (the Python that exported this skill) is gone"
    fix = f"replay.sh: {missing}: install sherpa-skills (pip install sherpa-skills) or put it on PATH"
    # 127 is what sh itself answers for a command it cannot find.
    lines += [f"echo {shlex.quote(fix)} >&2", "exit 127"]
    return "\n".join(lines) + "\n"


def export_skills(skills: SkillStore, directory: str | Path) -> SkillsExport:
    """Write every healthy, replayable shell procedure as a skill folder under `directory`."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    result = SkillsExport(str(root))
    taken: set[str] = set()
    for proc in skills.procedures():
        if proc.kind != "shell":
            result.skipped.append({"procedure_id": proc.id, "reason": "a trajectory belongs to its workflow"})
            continue
        health = skills.health_of(proc.id)
        refusal = skills.replay_refusal(proc, health)
        if health.status not in EXPORTABLE_HEALTH or refusal:
            result.skipped.append({"procedure_id": proc.id, "reason": refusal or f"health {health.status}"})
            continue
        name = skill_name(proc.task_type)
        if name in taken:
            name = skill_name(proc.task_type, suffix=proc.id.rsplit("-", 1)[-1])
        taken.add(name)
        folder = root / name
        linked = _linked(folder)
        if linked is not None:
            result.skipped.append(
                {
                    "procedure_id": proc.id,
                    "reason": f"{linked} is a symbolic link: an export writes only into its own folder, never "
                    "through a link (remove the link, or export elsewhere)",
                }
            )
            continue
        (folder / "scripts").mkdir(parents=True, exist_ok=True)
        (folder / "assets").mkdir(exist_ok=True)
        (folder / "SKILL.md").write_text(render_skill(proc, name), encoding="utf-8")
        script = folder / "scripts" / "replay.sh"
        script.write_text(render_replay_script(proc, skills.home), encoding="utf-8")
        script.chmod(0o755)
        data = proc.model_dump(mode="json", exclude={"decisions"})
        (folder / "assets" / "procedure.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        result.exported.append({"procedure_id": proc.id, "skill": name, "folder": str(folder)})
    return result


def _linked(folder: Path) -> Path | None:
    """The first path an export would write through that is a symbolic link (anyone who may write in the skills folder,
    an agent in its project, could point one at a file of the person's: ~/.bashrc made replay.sh), or None."""
    written = ("", "scripts", "assets", "SKILL.md", "scripts/replay.sh", "assets/procedure.json")
    return next((folder / part for part in written if (folder / part).is_symlink()), None)


def _skill_folders(root: Path) -> list[Path]:
    if (root / "SKILL.md").is_file():
        return [root]
    return sorted(p.parent for p in root.glob("*/SKILL.md"))


def _short(text: str, limit: int = 80) -> str:
    one = " ⏎ ".join(text.splitlines()) or "nothing"
    return one if len(one) <= limit else one[: limit - 1] + "…"


def shown_differently(proc: CapturedProcedure, skill_md: Path, asset: Path) -> str | None:
    """Why `asset`'s procedure is not the one its SKILL.md shows (a step, a condition), or None when it is: each step
    against the `## Steps` block's lines, and the conditions against their bullets, after the export's redaction."""
    text = skill_md.read_text(encoding="utf-8")
    shown = block_under(text, "Steps")
    if shown is None:
        return f"{skill_md}:1: no `## Steps` block: only the steps a SKILL.md shows are imported"
    lines, first = shown
    at = 0
    for number, step in enumerate(proc.steps, 1):
        want = [redact(line) for line in step.command.split("\n")]
        got = lines[at : at + len(want)]
        if [redact(line) for line in got] != want:
            return (
                f"{skill_md}:{first + at}: step {number} of {asset} is `{_short(step.command)}` but SKILL.md shows "
                f"`{_short(chr(10).join(got))}`: refused, a procedure.json must hold the steps its SKILL.md shows"
            )
        at += len(want)
    if at < len(lines):
        return (
            f"{skill_md}:{first + at}: SKILL.md shows `{_short(lines[at])}` after the {len(proc.steps)} step(s) of "
            f"{asset}: refused, a procedure.json must hold the steps its SKILL.md shows"
        )
    for title, checks in (("Preconditions", proc.preconditions), ("Postconditions", proc.postconditions)):
        if [redact(c) for c in bullets_under(text, title)] != [redact(c) for c in checks]:
            return (
                f"{skill_md}:1: the {title.lower()} of {asset} ({_short('; '.join(checks))}) are not the ones "
                f"SKILL.md shows: refused, they run as shell checks"
            )
    return None


def _steps(commands: list[str]) -> list[ProcedureStep] | str:
    """A skill's shell blocks as steps, redacted; or what is wrong with the first that cannot be one."""
    from ..errors import UsageError
    from ..skills.api import SkillStore

    steps = []
    for number, command in enumerate(commands, 1):
        try:
            steps.append(SkillStore.step(redact(command), number))
        except UsageError as exc:
            return str(exc)
    return steps


def import_skills(skills: SkillStore, directory: str | Path) -> SkillsImport:
    """Read skill folders (`directory` itself, or its sub-folders), every one as a candidate for review: ours with
    their counts kept as claims, once their procedure.json is what SKILL.md shows; others from their shell blocks."""
    from pydantic import ValidationError

    from ..errors import UsageError
    from ..skills.api import CapturedProcedure
    from ..skills.face.transfer import as_imported

    root = Path(directory)
    if not root.is_dir():
        raise UsageError(f"--skills {directory}: not a folder")
    result = SkillsImport(str(root))
    folders = _skill_folders(root)
    if not folders:
        raise UsageError(f"--skills {directory}: no SKILL.md in it or in its sub-folders")
    fresh: list[CapturedProcedure] = []
    for folder in folders:
        skill = read_skill(folder)
        if skill.problems:
            result.problems += skill.problems
            continue
        asset = folder / "assets" / "procedure.json"
        claimed = (0, 0)
        if PROCEDURE_KEY in skill.metadata and asset.is_file():
            try:
                proc = CapturedProcedure.model_validate(json.loads(asset.read_text(encoding="utf-8")))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                result.problems.append(
                    f"{asset}:1: not a procedure: {where}: {first['msg'].removeprefix('Value error, ')}"
                )
                continue
            except ValueError as exc:
                result.problems.append(f"{asset}:1: not a procedure: {str(exc).splitlines()[0]}")
                continue
            forged = shown_differently(proc, folder / "SKILL.md", asset)
            if forged:
                result.problems.append(forged)
                continue
            claimed = (
                proc.success_count + proc.claimed_successes,
                proc.failure_count + proc.claimed_failures,
            )
        else:
            commands = shell_blocks(skill.body)
            if not commands:
                result.problems.append(f"{folder / 'SKILL.md'}:1: no fenced shell block (```bash) to take steps from")
                continue
            steps = _steps(commands)
            if isinstance(steps, str):  # a block over the limit a step's command may hold
                result.problems.append(f"{folder / 'SKILL.md'}:1: {steps}")
                continue
            proc = CapturedProcedure(
                id="",
                task_type=skill.name,
                description=skill.description,
                steps=steps,
                source="manual",
                status="candidate",
                tags=["agent-skill"],
                context={"agent_skill": str(folder)},
            )
        proc = as_imported(proc)  # SKILL.md and procedure.json compare redacted: the secret is not stored either
        known = skills.known(proc)
        if known is not None:
            result.known.append(known.id)
            continue
        stored = skills.add_candidate(
            proc,
            "import",
            f"import:{folder}",
            successes=claimed[0],
            failures=claimed[1],
            note=f"imported from {folder}",
        )
        fresh.append(stored)
        result.candidates.append(stored.id)
    if fresh:
        result.index_warning = skills.index(fresh)
    return result
