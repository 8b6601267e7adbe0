"""The steps a person rewrites at `Execute? [y/n/edit]`: the file their editor opens, read back, and what changed.

One step per line; a step that spans lines (a heredoc) has its later lines indented by four spaces; `#` lines and
blank lines are ignored. A line that differs from the step shown only where the step has a `{{ parameter }}` is a new
value for that parameter (the procedure stays as it is); any other change rewrites the steps, which become the
procedure's next version once they have run and passed.
"""

from __future__ import annotations

import re
from typing import Any

from ..store.params import PARAMETER
from .runtime import as_template

INDENT = "    "
HEADER = """\
# The steps that will run, one per line: change, add or remove lines, save and quit.
# A step on several lines has its later lines indented by four spaces. Lines starting with # are ignored;
# an empty file runs nothing. Changing only a parameter's value keeps the procedure as it is; any other change
# is run, checked like any replay, and kept as the procedure's next version if every step passes.
"""


def editor_text(rendered: list[str]) -> str:
    body = "".join(step.replace("\n", "\n" + INDENT) + "\n" for step in rendered)
    return HEADER + body


def read_steps(text: str) -> list[str]:
    """The steps in the edited file, in order."""
    steps: list[list[str]] = []
    for line in text.splitlines():
        if line[:1].isspace() and steps and line.strip():
            steps[-1].append(line[min(len(INDENT), len(line) - len(line.lstrip())) :])
        elif line.strip() and not line.lstrip().startswith("#"):
            steps.append([line.rstrip()])
    return ["\n".join(lines) for lines in steps]


def _pattern(template: str) -> tuple[re.Pattern[str], list[str]] | None:
    """A regex that a rendering of `template` matches, a group per parameter; None when it has none."""
    names = PARAMETER.findall(template)
    if not names:
        return None
    parts = PARAMETER.split(template)  # literal, name, literal, name, ...
    literal = [re.escape(_unraw(p)) for p in parts[0::2]]
    return re.compile("(.+?)".join(literal) + r"\Z", re.S), names


def _unraw(text: str) -> str:
    return text.replace("{% raw %}", "").replace("{% endraw %}", "")


def _unquote(value: str) -> str:
    """A parameter's value as rendered: quoted for the shell when it held a space or a quote."""
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("'\"'\"'", "'")
    return value


def classify(edited: list[str], rendered: list[str], templates: list[str]) -> tuple[str, Any]:
    """("same", None), ("params", {name: value}) when only parameter values changed, or ("steps", edited)."""
    if edited == rendered:
        return "same", None
    if len(edited) != len(rendered):
        return "steps", edited
    params: dict[str, str] = {}
    for new, old, template in zip(edited, rendered, templates, strict=True):
        if new == old:
            continue
        found = _pattern(as_template(template))
        match = found[0].match(new) if found else None
        if found is None or match is None:
            return "steps", edited
        for name, value in zip(found[1], match.groups(), strict=True):
            if params.setdefault(name, _unquote(value)) != _unquote(value):
                return "steps", edited
    return "params", params
