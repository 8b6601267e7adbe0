"""One definition of a `{{ name }}` parameter, used by capture, matching, mining and both kinds of replay."""

from __future__ import annotations

import re
from pathlib import Path

from sherpa_skills.skills.replay.policy import fill
from sherpa_skills.skills.replay.runtime import parameter_names
from sherpa_skills.skills.store.models import ProcedureStep
from sherpa_skills.skills.store.params import PARAMETER
from sherpa_skills.skills.store.signatures import step_signature

PACKAGE = Path(__file__).resolve().parents[3] / "sherpa_skills"


def test_brace_text_that_is_not_a_parameter_keeps_procedures_apart() -> None:
    """`{{ .Name }}` is docker's format, not a parameter: two procedures differing there are not duplicates."""
    names = step_signature([ProcedureStep(command="docker ps --format '{{ .Names }}'")])
    ids = step_signature([ProcedureStep(command="docker ps --format '{{ .ID }}'")])
    assert names != ids
    # Parameter names still do not matter.
    assert step_signature([ProcedureStep(command="make {{ a }}")]) == step_signature(
        [ProcedureStep(command="make {{ target }}")]
    )


def test_shell_and_trajectory_replay_agree_on_what_a_parameter_is() -> None:
    """A name must start with a letter or underscore, in a recorded argument as in a shell step."""
    assert parameter_names([ProcedureStep(command="echo {{ 1x }} {{ name }}")]) == ["name"]
    assert fill("{{ 1x }} {{ name }}", {"1x": "no", "name": "yes"}) == "{{ 1x }} yes"


def test_one_definition_of_the_parameter_regex() -> None:
    """No module but skills/store/params.py spells the `{{ name }}` regex again."""
    copies = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "params.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\\\{\\\{", line) and not line.lstrip().startswith("#")
    ]
    assert copies == [] or all(c.startswith(("engine/",)) for c in copies), copies
    assert PARAMETER.findall("a {{ x }} {{y}} {{ .Name }}") == ["x", "y"]
