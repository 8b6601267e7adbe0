"""The reference under docs/reference/ is written from the code (docs/reference/generate.py) and committed: it fails
here when it no longer says what the code does, and it names every command, option, YAML key and public name."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
GENERATOR = REFERENCE / "generate.py"
COMMAND = "python docs/reference/generate.py"
PAGES = ("index.md", "workflow-yaml.md", "cli.md", "python-api.md")


@functools.cache
def _generator() -> ModuleType:
    """The script as a module, loaded only by the tests that use it (it is not part of the package)."""
    spec = importlib.util.spec_from_file_location("_reference_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    before, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ among the site's pages
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = before
    return module


def _differences(made: Path, committed: Path) -> list[str]:
    """Each committed page that differs from the one just made, is missing, or was not made."""
    made_names = {p.name for p in made.glob("*.md")}
    committed_names = {p.name for p in committed.glob("*.md")}
    problems = [f"docs/reference/{n}: missing (not committed)" for n in sorted(made_names - committed_names)]
    problems += [f"docs/reference/{n}: not written by the generator" for n in sorted(committed_names - made_names)]
    for name in sorted(made_names & committed_names):
        new, old = (made / name).read_text(encoding="utf-8"), (committed / name).read_text(encoding="utf-8")
        if new != old:
            line = next(
                (i + 1 for i, (a, b) in enumerate(zip(new.splitlines(), old.splitlines(), strict=False)) if a != b),
                min(len(new.splitlines()), len(old.splitlines())) + 1,
            )
            problems.append(f"docs/reference/{name}:{line}: out of date")
    return problems


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages as the generator writes them now, in a fresh interpreter (as `python docs/…` runs it)."""
    out = tmp_path_factory.mktemp("reference")
    proc = subprocess.run(
        [sys.executable, str(GENERATOR), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


class TestUpToDate:
    def test_the_committed_reference_is_what_the_code_writes(self, made: Path) -> None:
        problems = _differences(made, REFERENCE)
        assert not problems, "\n".join(problems) + f"\nregenerate it: {COMMAND}"

    def test_a_stale_missing_or_stray_page_is_named(self, made: Path, tmp_path: Path) -> None:
        """The attack: a page edited by hand, one not committed, one no longer written. Each is named with a line."""
        for name in PAGES[1:]:
            (tmp_path / name).write_text((made / name).read_text())
        (tmp_path / "cli.md").write_text((made / "cli.md").read_text().replace("sherpa-skills run", "sherpa run", 1))
        (tmp_path / "old.md").write_text("# gone\n")
        problems = _differences(made, tmp_path)
        cli_line = 1 + (made / "cli.md").read_text().splitlines().index(
            next(line for line in (made / "cli.md").read_text().splitlines() if "sherpa-skills run" in line)
        )
        assert problems == [
            "docs/reference/index.md: missing (not committed)",
            "docs/reference/old.md: not written by the generator",
            f"docs/reference/cli.md:{cli_line}: out of date",
        ]

    def test_the_pages_carry_nothing_of_this_machine(self, made: Path) -> None:
        """No checkout path, home, temporary folder or object address: the page is the same on every machine."""
        for name in PAGES:
            text = (made / name).read_text()
            for leak in (str(ROOT), str(Path.home()), "/tmp/", " at 0x"):
                assert leak not in text, f"docs/reference/{name}: contains {leak!r}"

    def test_a_run_with_another_hash_seed_writes_the_same_pages(self, made: Path, tmp_path: Path) -> None:
        """Sets and dicts iterate in another order under another seed: nothing on the pages may follow that order."""
        env = {"PYTHONHASHSEED": "4242", "PATH": "/usr/bin:/bin"}
        subprocess.run(
            [sys.executable, str(GENERATOR), "--out", str(tmp_path)], cwd=ROOT, env=env, check=True, timeout=120
        )
        assert _differences(made, tmp_path) == []

    def test_the_reference_has_no_fenced_block(self) -> None:
        """The docs tests run every fenced block; a signature or a usage line is not a program."""
        for name in PAGES:
            assert "```" not in (REFERENCE / name).read_text(), f"docs/reference/{name}: a fenced block"


def _commands(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((f"{path} {name}", sub))
                found += _commands(sub, f"{path} {name}")
    return found


class TestEverythingIsThere:
    def test_every_command_has_its_section(self) -> None:
        from sherpa_skills.cli.main import build_parser

        headings = set(re.findall(r"^#+ (.+)$", (REFERENCE / "cli.md").read_text(), re.M))
        commands = _commands(build_parser(), "sherpa-skills")
        assert len(commands) > 20
        missing = [path for path, _ in commands if path not in headings]
        assert not missing, f"docs/reference/cli.md has no section for {missing}; regenerate it: {COMMAND}"

    def test_every_option_of_every_command_is_shown(self) -> None:
        from sherpa_skills.cli.main import build_parser

        text = (REFERENCE / "cli.md").read_text()
        sections = dict(re.findall(r"^#+ (sherpa-skills[^\n]*)\n(.*?)(?=^#+ sherpa-skills|\Z)", text, re.M | re.S))
        missing = []
        for path, parser in _commands(build_parser(), "sherpa-skills"):
            for action in parser._actions:
                for option in action.option_strings:
                    if option not in ("-h", "--help", "--home", "--database", "--verbose", "-v"):
                        if f"`{option}" not in sections.get(path, ""):
                            missing.append(f"{path} {option}")
        assert not missing, f"docs/reference/cli.md lacks {missing}; regenerate it: {COMMAND}"

    def test_json_and_limit_say_what_they_do_in_every_command(self) -> None:
        """`--json` and `--limit` mean the same everywhere: a command that gives them no help gets the shared one."""
        from sherpa_skills.cli.main import build_parser

        silent = [
            f"{path} {option}"
            for path, parser in _commands(build_parser(), "sherpa-skills")
            for action in parser._actions
            for option in action.option_strings
            if option in ("--json", "--limit") and not action.help
        ]
        assert not silent, silent

    def test_every_exit_code_is_in_the_table(self) -> None:
        from sherpa_skills.cli.console import EXIT_CODES

        text = (REFERENCE / "cli.md").read_text()
        for code, meaning in EXIT_CODES:
            assert f"| `{code}` | {meaning} |" in text

    def test_every_top_level_key_of_each_yaml_file_is_in_its_table(self) -> None:
        from sherpa_skills.agents.team import TeamSpec
        from sherpa_skills.engine.spec import RuleSpec, WorkflowSpec
        from sherpa_skills.heartbeat.config import HomeConfig

        text = (REFERENCE / "workflow-yaml.md").read_text()
        for heading, model in (
            ("Workflow file", WorkflowSpec),
            ("Rules file", RuleSpec),
            ("Team file", TeamSpec),
            ("Home config.yaml", HomeConfig),
        ):
            section = text.split(f"\n## {heading}\n", 1)[1].split("\n#", 1)[0]
            missing = [key for key in model.model_fields if f"| `{key}` |" not in section]
            assert not missing, f"docs/reference/workflow-yaml.md '{heading}' lacks {missing}; regenerate: {COMMAND}"
        for key in ("domain", "relevant_options", "task_key", "state", "when", "unless", "trigger", "args"):
            assert f"| `{key}` |" in text, key

    def test_every_public_name_has_its_section(self) -> None:
        import sherpa_skills

        headings = set(re.findall(r"^### (.+)$", (REFERENCE / "python-api.md").read_text(), re.M))
        missing = sorted(set(sherpa_skills.__all__) - headings)
        assert not missing, f"docs/reference/python-api.md lacks {missing}; regenerate it: {COMMAND}"
        assert {"sherpa_skills.engine.hooks.RunHook", "sherpa_skills.skills.capture.learning.Learner"} <= headings

    def test_every_built_in_guard_and_action_is_described(self) -> None:
        # Read in a fresh interpreter: other tests register guards and actions of their own in the default registry.
        listing = (
            "import json; from sherpa_skills.engine.registry import default_registry, load_builtins; load_builtins(); "
            "print(json.dumps([*default_registry.guard_names(), *default_registry.action_names()]))"
        )
        out = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, check=True).stdout
        headings = set(re.findall(r"^### (.+)$", (REFERENCE / "workflow-yaml.md").read_text(), re.M))
        names = set(json.loads(out))
        assert not names - headings, sorted(names - headings)


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    for info in model.model_fields.values():
        for inner, _ in _generator().nested_models(info.annotation):
            _models(inner, seen)


class TestTheModelsDescribeThemselves:
    def test_every_key_of_each_yaml_file_has_a_description(self) -> None:
        """The text on the page is the model's own `Field(description=...)`: written once, beside the key."""
        from sherpa_skills.agents.team import TeamSpec
        from sherpa_skills.engine.spec import RuleSpec, WorkflowSpec
        from sherpa_skills.heartbeat.config import HomeConfig

        seen: set[type[BaseModel]] = set()
        for model in (WorkflowSpec, RuleSpec, TeamSpec, HomeConfig):
            _models(model, seen)
        undescribed = sorted(
            f"{m.__module__}.{m.__name__}.{name}"
            for m in seen
            for name, info in m.model_fields.items()
            if not info.description
        )
        assert not undescribed, f"give these a Field(description=...): {undescribed}"


class TestMarkdown:
    def test_a_cell_escapes_pipes_and_tags_outside_code_only(self) -> None:
        """Python-Markdown splits a row on a bare `|` (not one inside a code span) and reads `<x>` as HTML."""
        cell = _generator().cell
        assert cell("a | b <c>") == "a \\| b &lt;c>"
        assert cell("`str | None` or <x>") == "`str | None` or &lt;x>"
        assert cell("two\nlines") == "two lines"
        assert cell("") == "—"

    def test_anchors_follow_the_toc_extension(self) -> None:
        slug = _generator().slug
        assert slug("states.NAME.transitions[]") == "statesnametransitions"
        assert slug("Home config.yaml") == "home-configyaml"
        assert slug("sherpa-skills runs delete") == "sherpa-skills-runs-delete"

    def test_two_models_under_one_anchor_are_refused(self) -> None:
        """A second section with the same anchor would make links land on the first: the generator stops."""
        module = _generator()
        from sherpa_skills.engine.spec import GuardCall, RuleSpec

        page = module.ModelPage()
        page.name(RuleSpec, "Rules file")
        with pytest.raises(ValueError, match="anchor #rules-file"):
            page.name(GuardCall, "rules file")
