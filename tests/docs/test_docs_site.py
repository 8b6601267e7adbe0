"""The docs as a whole: the README opens with the two commands CI runs and points into the site; every page is in
mkdocs.yml's nav; every relative link lands on a file (so the pages read on GitHub too); every data block parses."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from _snippets import DOCS, ROOT, all_blocks, page_blocks, pages

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency before 3.11
    import tomli as tomllib

README = ROOT / "README.md"
# The pages a newcomer's path goes through, and the generated reference (written by docs/reference/generate.py).
REQUIRED = [
    "index.md",
    "tutorial.md",
    "how-to/embed-in-python.md",
    "how-to/durable-runs.md",
    "how-to/skill-store.md",
    "how-to/coding-agents.md",
    "how-to/postgres.md",
    "how-to/redis.md",
    "how-to/tracing.md",
    "concepts/machine-policy-belief.md",
    "concepts/learning.md",
    "concepts/design.md",
    "troubleshooting.md",
    "contributing.md",
]
REFERENCE = ["reference/index.md", "reference/workflow-yaml.md", "reference/cli.md", "reference/python-api.md"]
GENERATED = {(DOCS / page).resolve() for page in REFERENCE}


def test_the_readme_opens_with_the_demo_then_the_tests():
    """What a new user runs first: two commands, each making a virtual environment (Debian's and Ubuntu's Python
    refuse pip outside one) and installing into it: the demo, then the tests. .ci/run runs these very lines."""
    text = README.read_text(encoding="utf-8")
    first = next(b for b in page_blocks(README))
    assert first.lang == "bash" and text.splitlines()[first.line - 2] == "```bash"
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert [line for line in first.code.splitlines() if line.startswith("python3")] == [
        venv + "pip install -c constraints.txt . && sherpa-skills demo",
        venv + 'pip install -c constraints.txt -e ".[dev]" && python -m pytest -q',
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme_command 1" in ci and "readme_command 2" in ci


def test_the_readme_is_short_and_points_into_the_docs():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", text))
    assert {f"docs/{page}" for page in ("index.md", "tutorial.md", "troubleshooting.md", "contributing.md")} <= linked
    assert "examples/support_triage/workflow.yaml" in text


def test_the_pages_exist_and_the_nav_lists_every_page():
    for page in REQUIRED:
        assert (DOCS / page).is_file(), page
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"([\w/-]+\.md)\b", config))
    written = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert set(REQUIRED) | set(REFERENCE) <= listed
    assert written <= listed, f"pages missing from mkdocs.yml's nav: {sorted(written - listed)}"


def test_the_site_config_builds_offline_and_strict():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    assert config["theme"]["name"] == "material" and config["theme"]["font"] == "false"  # no Google fonts
    assert config.get("strict") == "true" and config.get("use_directory_urls", "true") == "true"


def _links(page: Path) -> list[tuple[int, str]]:
    text = page.read_text(encoding="utf-8")
    no_code = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    found = []
    for number, line in enumerate(no_code.splitlines(), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^(https?:|mailto:|#)", target):
                found.append((number, target))
    return found


@pytest.mark.parametrize("page", pages(), ids=[p.relative_to(ROOT).as_posix() for p in pages()])
def test_every_relative_link_lands_on_a_file(page: Path):
    for number, target in _links(page):
        path = target.split("#", 1)[0]
        if not (DOCS / "reference").is_dir() and (page.parent / path).resolve() in GENERATED:
            continue  # the generated reference lands from its own branch (docs/reference/generate.py)
        assert (page.parent / path).exists(), f"{page.relative_to(ROOT)}:{number}: no such file: {target}"
        if page.is_relative_to(DOCS):  # inside the site a link must stay inside it, or mkdocs --strict refuses it
            assert (page.parent / path).resolve().is_relative_to(DOCS), f"{page.relative_to(ROOT)}:{number}: {target}"


def test_every_data_block_parses():
    """YAML, JSON and TOML shown in the docs are what their parsers read (workflow files also run, as files)."""
    for block in all_blocks():
        if block.lang == "yaml":
            yaml.safe_load(block.code)
        elif block.lang == "json":
            json.loads(block.code)
        elif block.lang == "toml":
            tomllib.loads(block.code)
