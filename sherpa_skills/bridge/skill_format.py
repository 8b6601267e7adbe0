"""The Agent Skills format (agentskills.io): a `NAME/SKILL.md` folder, YAML frontmatter then Markdown.

Frontmatter keys are the specification's six: `name` (1-64 lower-case letters, digits and single hyphens, neither
first nor last, equal to the folder's name), `description` (1-1,024 characters: what it does and when to use it),
`license`, `compatibility` (at most 500 characters), `metadata` (string keys to string values), `allowed-tools`.
`validate_skill` checks those rules; `read_skill` reads a folder back, with the fenced shell blocks of its body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
ALLOWED_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
NAME_RULE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FENCE = re.compile(r"^(```+|~~~+)[ \t]*([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "zsh", "console", "shell-session"})


@dataclass
class Skill:
    """A SKILL.md folder as read: its frontmatter, its body, and the problems that make it invalid."""

    folder: Path
    frontmatter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.frontmatter.get("name") or self.folder.name)

    @property
    def description(self) -> str:
        value = self.frontmatter.get("description")
        return value if isinstance(value, str) else ""

    @property
    def metadata(self) -> dict[str, str]:
        value = self.frontmatter.get("metadata")
        return value if isinstance(value, dict) else {}


def skill_name(text: str, *, suffix: str = "") -> str:
    """A valid skill name from any text: lower-case, runs of other characters as one hyphen, at most 64 characters
    (with `suffix`, e.g. an id's tail, kept whole at the end)."""
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "procedure"
    tail = re.sub(r"[^a-z0-9]+", "-", suffix.lower()).strip("-")
    room = NAME_MAX - (len(tail) + 1 if tail else 0)
    base = base[:room].rstrip("-")
    return f"{base}-{tail}" if tail else base


def _split(text: str, where: str) -> tuple[str, str, list[str]]:
    """(frontmatter text, body, problems): the frontmatter sits between a first line `---` and the next `---`."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return "", text, [f"{where}:1: SKILL.md must start with a `---` line opening the YAML frontmatter"]
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), []
    return "", text, [f"{where}:1: the frontmatter is never closed by a `---` line"]


def _check(frontmatter: dict[str, Any], folder: Path, where: str, lines: dict[str, int]) -> list[str]:
    problems = []

    def at(key: str) -> str:
        return f"{where}:{lines.get(key, 2)}"

    for key in frontmatter:
        if key not in ALLOWED_KEYS:
            problems.append(f"{at(key)}: '{key}' is not a frontmatter field ({', '.join(sorted(ALLOWED_KEYS))})")
    name = frontmatter.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{at('name')}: 'name' is required, a non-empty string")
    else:
        if len(name) > NAME_MAX:
            problems.append(f"{at('name')}: 'name' has {len(name)} characters; at most {NAME_MAX}")
        if not NAME_RULE.match(name):
            problems.append(
                f"{at('name')}: 'name' {name!r} must be lower-case letters, digits and single hyphens, "
                "not starting or ending with one"
            )
        if name != folder.name:
            problems.append(f"{at('name')}: 'name' {name!r} must equal the folder's name {folder.name!r}")
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{at('description')}: 'description' is required, a non-empty string")
    elif len(description) > DESCRIPTION_MAX:
        problems.append(
            f"{at('description')}: 'description' has {len(description)} characters; at most {DESCRIPTION_MAX}"
        )
    compatibility = frontmatter.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or len(compatibility) > COMPATIBILITY_MAX):
        problems.append(f"{at('compatibility')}: 'compatibility' must be a string of at most {COMPATIBILITY_MAX}")
    metadata = frontmatter.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        problems.append(f"{at('metadata')}: 'metadata' must map string keys to string values")
    for key in ("license", "allowed-tools"):
        if key in frontmatter and not isinstance(frontmatter[key], str):
            problems.append(f"{at(key)}: '{key}' must be a string")
    return problems


def read_skill(folder: str | Path) -> Skill:
    """Read `folder/SKILL.md`; every rule it breaks is in `problems` as `FILE:LINE: message`."""
    from ..errors import WorkflowError
    from ..yaml_source import load_yaml_text

    path = Path(folder)
    skill = Skill(folder=path)
    where = str(path / "SKILL.md")
    try:
        text = (path / "SKILL.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        skill.problems.append(f"{where}:1: no SKILL.md in this folder")
        return skill
    except (OSError, UnicodeDecodeError) as exc:
        skill.problems.append(f"{where}:1: cannot read: {exc}")
        return skill
    head, skill.body, skill.problems = _split(text, where)
    if skill.problems:
        return skill
    try:
        located = load_yaml_text(head, where) if head.strip() else None
    except WorkflowError as exc:
        skill.problems += [f"{p.file}:{p.line + 1}: {p.message}" for p in exc.problems]  # +1: the opening `---`
        return skill
    data = located.data if located is not None else {}
    if not isinstance(data, dict):
        skill.problems.append(f"{where}:2: the frontmatter must be a YAML mapping")
        return skill
    skill.frontmatter = data
    lines = {str(loc[0]): line + 1 for loc, line in located.lines.items() if len(loc) == 1} if located else {}
    skill.problems += _check(data, path, where, lines)
    return skill


def validate_skill(folder: str | Path) -> list[str]:
    """Every rule of the format the folder breaks; empty when it is a valid skill."""
    return read_skill(folder).problems


def _section(text: str, heading: str) -> tuple[int, int] | None:
    """Where the body of `## heading` starts and ends (at the next `##` heading), or None when it is missing."""
    section = re.search(rf"^##[ \t]+{re.escape(heading)}[ \t]*$", text, re.M)
    if section is None:
        return None
    nxt = re.search(r"^##[ \t]", text[section.end() :], re.M)
    return section.end(), section.end() + nxt.start() if nxt else len(text)


def block_under(text: str, heading: str) -> tuple[list[str], int] | None:
    """The lines of the first fenced block under `## heading` in a SKILL.md's text, and the file line its first line
    is on; None when the section or its block is missing."""
    found = _section(text, heading)
    if found is None:
        return None
    fence = _FENCE.search(text, *found)
    if fence is None:
        return None
    return fence.group(3).splitlines(), text.count("\n", 0, fence.start(3)) + 1


def bullets_under(text: str, heading: str) -> list[str]:
    """The inline-code bullets (`` - `check` ``) of the section `## heading`: how a skill shows its conditions."""
    found = _section(text, heading)
    if found is None:
        return []
    body = text[found[0] : found[1]]
    return [m.group(1) for m in re.finditer(r"^- `(.*)`[ \t]*$", body, re.M)]


def shell_blocks(body: str) -> list[str]:
    """The commands of the body's fenced shell blocks: one per line, `\\` continuations joined, a `$ ` prompt dropped,
    blank and comment lines skipped."""
    commands = []
    for fence in _FENCE.finditer(body):
        if fence.group(2).lower() not in SHELL_LANGUAGES:
            continue
        pending = ""
        for raw in fence.group(3).splitlines():
            line = raw.rstrip()
            if not pending:
                line = line.strip()
                if line.startswith("$ "):
                    line = line[2:]
                if not line or line.startswith("#"):
                    continue
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            commands.append((pending + line.strip()).strip())
            pending = ""
        if pending.strip():
            commands.append(pending.strip())
    return commands
