"""The wheel carries the data folders, and the library finds them there as it does in a checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import sherpa_skills
from sherpa_skills.data import data_dir

ROOT = Path(__file__).resolve().parent.parent


def test_checkout_finds_its_data_folders() -> None:
    """From a checkout, statemachines/, policies/ and examples/ are the repository's own folders."""
    for name in ("statemachines", "policies", "examples"):
        assert data_dir(name) == ROOT / name


def test_public_surface_is_importable() -> None:
    """Every name in __all__ resolves, so the documented surface cannot silently break."""
    for name in sherpa_skills.__all__:
        assert getattr(sherpa_skills, name) is not None, name


def test_import_does_not_pull_heavy_dependencies() -> None:
    """`import sherpa_skills` and loading a workflow stay free of litellm and chromadb."""
    code = ("import sys, sherpa_skills; sherpa_skills.load_workflow_text('name: x\\ninitial: a\\nstates: {a: {final: true}}');"
            "print(sorted(m for m in ('litellm', 'chromadb') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_wheel_ships_data_and_runs_the_demo_from_it(tmp_path: Path) -> None:
    """Built as a wheel and unpacked elsewhere, the package loads its prompts and examples from inside itself."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist")],
                   check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("sherpa_skills-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "sherpa_skills/_data/policies/prompts/choose_transition.user.j2" in names
    assert "sherpa_skills/_data/examples/support_triage/workflow.yaml" in names
    assert any(n.startswith("sherpa_skills/_data/statemachines/") for n in names)

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import sherpa_skills.data as d; print(d.data_dir('policies'))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where) == site / "sherpa_skills" / "_data" / "policies"
    demo = subprocess.run([sys.executable, "-m", "sherpa_skills.cli", "demo", "--json", "--home", str(tmp_path / "home")],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert demo.returncode == 0, demo.stderr
    statuses = [r["status"] for r in json.loads(demo.stdout)]
    assert statuses == ["final", "waiting", "final"]
