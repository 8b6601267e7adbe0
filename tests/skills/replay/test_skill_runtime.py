"""Rendering replayed steps: only `{{ name }}` is a parameter; every other brace in bash stays as written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sherpa_skills.errors import UsageError
from sherpa_skills.skills.replay.runtime import parameter_names, render_command
from sherpa_skills.skills.store.models import ProcedureStep

DATA = os.environ.get("SHERPA_SKILLS_MATCHING_DATA")


@pytest.mark.parametrize(
    "command",
    [
        'echo "${#arr[@]}"',
        "echo {# not a comment",
        "awk '{{print $1}}' file",
        "docker ps --format '{{ .Names }}'",
        "echo '{{'",
        "find . -exec rm {} \\;",
        'echo "{% endraw %}"',
        "printf '%s\\n' {a,b}{1,2}",
        "x={%y%}",
    ],
)
def test_bash_braces_are_literal(command: str) -> None:
    """`${#arr[@]}`, `{#`, `{{` inside quotes, Go templates: none of it is template syntax."""
    assert render_command(command, {}) == command
    assert parameter_names([ProcedureStep(command=command)]) == []


def test_parameters_beside_bash_braces_are_rendered_and_quoted() -> None:
    command = 'for f in "${files[@]}"; do echo {{ name }} "${#f}"; done'
    assert render_command(command, {"name": "a b"}) == 'for f in "${files[@]}"; do echo \'a b\' "${#f}"; done'
    assert parameter_names([ProcedureStep(command=command)]) == ["name"]


def test_a_missing_parameter_is_named() -> None:
    with pytest.raises(UsageError, match="name"):
        render_command("echo {{ name }} ${#x}", {})


@pytest.mark.skipif(not DATA, reason="SHERPA_SKILLS_MATCHING_DATA is not set (the NL2Bash dev split for matching)")
def test_real_one_liners_with_braces_render_unchanged() -> None:
    """Every real bash one-liner of the dev split that holds a brace renders to itself."""
    rows = [json.loads(line) for line in (Path(DATA) / "nl2bash-dev.jsonl").read_text().splitlines() if line.strip()]
    braced = [
        r["command"]
        for r in rows
        if "{" in r["command"]
        and not any(m for m in __import__("re").findall(r"\{\{\s*[A-Za-z_]\w*\s*\}\}", r["command"]))
    ]
    assert len(braced) > 100
    changed = [c for c in braced if render_command(c, {}) != c]
    assert changed == []
