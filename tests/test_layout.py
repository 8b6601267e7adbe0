"""The package is grouped by job, and imports only ever point down the layers: no cycles, no shortcuts."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sherpa_skills"

#: Each folder (or shared top-level module) and the layer it sits in; an import may point to its own layer or lower.
LAYERS: dict[str, int] = {
    "errors": 0,
    "home": 0,
    "data": 0,
    "logs": 0,
    "redact": 0,
    "db": 0,
    "yaml_source": 0,
    "llm": 1,
    "semantic": 1,
    "engine": 2,
    "policy": 2,
    "actions": 3,
    "memory": 3,
    "tracing": 3,
    "sessions": 3,
    "skills": 4,
    "agents": 4,
    "runtime": 4,
    "stores": 4,  # Home: the stores of one home over one Database (skills, memory, sessions, the run store)
    "heartbeat": 5,
    "bridge": 6,
    "cli": 6,
    "ui": 6,
    "testing": 6,
    "__main__": 7,
    "__init__": 7,
}


#: Within skills/, the same rule: the store at the bottom, matching and mining on it, replay on matching, capture (which
#: replays and learns) on replay, the public SkillStore on top.
SKILL_LAYERS: dict[str, int] = {
    "store": 0,
    "match": 1,
    "mine": 1,
    "run_removal": 1,
    "replay": 2,
    "decide": 3,  # the decision memory: beside capture, which feeds it (capture.learning imports it)
    "capture": 3,
    "face": 4,  # the types, constants and helpers beside SkillStore: what callers of the store may import with it
    "api": 4,
    "__init__": 5,
}

#: The skill store's one face: what modules outside skills/ may import from it (the sub-packages are its own).
FACE = ("sherpa_skills.skills.api", "sherpa_skills.skills.face")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node`, leaving out the bodies of `if TYPE_CHECKING:` blocks (they never run)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if _type_checking(child):
            assert isinstance(child, ast.If)
            for other in child.orelse:
                yield other
                yield from _runtime_nodes(other)
        else:
            yield from _runtime_nodes(child)


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every sherpa_skills module this one imports, at module level or in a function; not those for type checkers."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                targets.add(candidate if candidate in modules else module)
        elif isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
    return {t for t in targets if t in modules and t != name}


def _every_import(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Like `_imports`, counting imports for type checkers too: a type named from an internal is a reach past the
    face as well."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)] if node.level else []
            module = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
            targets.update(f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names)
        elif isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
    return {t for t in targets if t in modules}


def _past_the_face(folder: str) -> list[str]:
    """Every import, in modules under `folder`, of the skill store's insides rather than its face."""
    modules = _modules()
    reaches = []
    for name, path in sorted(modules.items()):
        if not name.startswith(f"sherpa_skills.{folder}"):
            continue
        for target in sorted(_every_import(name, path, modules)):
            inside = target.startswith("sherpa_skills.skills.") and not target.startswith(FACE)
            if inside or target == "sherpa_skills.skills":
                reaches.append(f"{name} imports {target}")
    return reaches


def _layer(module: str, layers: dict[str, int] = LAYERS, depth: int = 1) -> tuple[str, int]:
    """The part of the package `module` is in (its name at `depth`) and that part's layer."""
    parts = module.split(".")
    key = parts[depth] if len(parts) > depth else "__init__"
    if key not in layers:
        raise AssertionError(f"{module}: '{key}' has no layer in tests/test_layout.py; place it")
    return key, layers[key]


def _upward(graph: dict[str, set[str]], prefix: str, layers: dict[str, int], depth: int) -> list[str]:
    """Every import among the modules under `prefix` that points to a higher layer."""
    upward = []
    for module, targets in graph.items():
        if not module.startswith(prefix):
            continue
        here, level = _layer(module, layers, depth)
        for target in (t for t in targets if t.startswith(prefix)):
            there, target_level = _layer(target, layers, depth)
            if target_level > level:
                upward.append(f"{module} ({here}, layer {level}) imports {target} ({there}, layer {target_level})")
    return sorted(upward)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


class TestLayers:
    def test_imports_point_down(self, graph: dict[str, set[str]]) -> None:
        """A module imports only its own layer or lower ones: the engine never reaches for the skill store or the
        CLI."""
        upward = _upward(graph, "sherpa_skills", LAYERS, 1)
        assert not upward, "\n".join(upward)

    def test_imports_point_down_within_skills(self, graph: dict[str, set[str]]) -> None:
        """Inside skills/ too: the store never reaches for replay, replay never for capture, nothing for the public
        API."""
        upward = _upward(graph, "sherpa_skills.skills", SKILL_LAYERS, 2)
        assert not upward, "\n".join(upward)

    def test_every_skills_part_has_a_layer(self) -> None:
        parts = {p.stem if p.is_file() else p.name for p in (PACKAGE / "skills").iterdir() if p.suffix in (".py", "")}
        assert parts - {"__pycache__"} == set(SKILL_LAYERS)

    def test_no_import_cycles(self, graph: dict[str, set[str]]) -> None:
        """No module imports itself through others, counting imports inside functions too."""
        state: dict[str, int] = {}
        cycles: list[list[str]] = []

        def visit(node: str, path: list[str]) -> None:
            state[node] = 1
            for nxt in sorted(graph[node]):
                if state.get(nxt) == 1:
                    cycles.append(path[path.index(nxt) :] + [nxt])
                elif nxt not in state:
                    visit(nxt, [*path, nxt])
            state[node] = 2

        sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
        for start in sorted(graph):
            if start not in state:
                visit(start, [start])
        assert not cycles, "\n".join(" -> ".join(c) for c in cycles)

    def test_imports_for_type_checkers_only_are_not_edges(self, tmp_path: Path) -> None:
        """`if TYPE_CHECKING:` blocks never run, so a return type may name a class from a higher layer;
        their `else:` and every other block still count."""
        path = tmp_path / "sample.py"
        path.write_text(
            "from typing import TYPE_CHECKING\n"
            "import typing\n"
            "if TYPE_CHECKING:\n    from ..skills.api import SkillStore\n"
            "if typing.TYPE_CHECKING:\n    import sherpa_skills.cli\n"
            "else:\n    from ..agents import team\n"
            "def f():\n    from ..errors import UsageError\n"
        )
        modules = _modules()
        assert _imports("sherpa_skills.engine.sample", path, modules) == {
            "sherpa_skills.agents.team",
            "sherpa_skills.errors",
        }

    def test_every_module_imports_alone(self, graph: dict[str, set[str]]) -> None:
        """Each module imports in a fresh interpreter on its own,
        in reverse order of names (a cycle would break one)."""
        names = sorted((n for n in graph if not n.endswith("__main__")), reverse=True)
        code = (
            "import importlib, sys\nfailed = []\n"
            f"for name in {names!r}:\n"
            "    for m in [m for m in sys.modules if m.startswith('sherpa_skills')]:\n"
            "        del sys.modules[m]\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except Exception as exc:\n        failed.append(f'{name}: {type(exc).__name__}: {exc}')\n"
            "print('\\n'.join(failed))\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip() == ""


class TestOneFaceForTheSkillStore:
    def test_the_command_line_uses_only_the_face(self) -> None:
        """cli/ asks `SkillStore` (skills/api.py) and imports types from skills/face/: a change to matching or capture
        is found in the face, not in every command."""
        reaches = _past_the_face("cli")
        assert not reaches, "\n".join(reaches)

    @pytest.mark.parametrize("folder", ["ui", "bridge", "heartbeat"])
    def test_the_view_bridge_and_heartbeat_use_only_the_face(self, folder: str) -> None:
        reaches = _past_the_face(folder)
        assert not reaches, "\n".join(reaches)

    @pytest.mark.parametrize("folder", ["ui", "bridge", "heartbeat"])
    def test_the_view_bridge_and_heartbeat_do_not_import_the_command_line(self, folder: str) -> None:
        """cli/ sits beside them, not under them: what they share with it (input parsing, the review's summary, the
        run's JSON) lives in the library."""
        modules = _modules()
        found = [
            f"{name} imports {target}"
            for name, path in sorted(modules.items())
            if name.startswith(f"sherpa_skills.{folder}")
            for target in sorted(_every_import(name, path, modules))
            if target == "sherpa_skills.cli" or target.startswith("sherpa_skills.cli.")
        ]
        assert not found, "\n".join(found)

    def test_a_reach_past_the_face_is_found(self, tmp_path: Path) -> None:
        """The rule sees function-level and type-checking imports of an internal, and lets the face through."""
        path = tmp_path / "sample.py"
        path.write_text(
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from ..skills.store.models import ProcedureStep\n"
            "def f():\n    from ..skills.match.matcher import Matcher\n    from ..skills.api import SkillStore\n"
        )
        found = _every_import("sherpa_skills.cli.sample", path, _modules())
        assert {t for t in found if t.startswith("sherpa_skills.skills")} == {
            "sherpa_skills.skills.store.models",
            "sherpa_skills.skills.match.matcher",
            "sherpa_skills.skills.api",
        }


class TestModulesAPersonCanRead:
    #: A module past this many lines holds more than one job: split it by job (issue 41), not by line count.
    MAX_LINES = 800

    def test_no_module_is_over_the_limit(self) -> None:
        over = [
            f"{path.relative_to(PACKAGE.parent)}: {n} lines"
            for path in sorted(PACKAGE.rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > self.MAX_LINES
        ]
        assert not over, "\n".join(over)

    def test_learn_is_typed(self) -> None:
        """`learn=` says what it takes (bool, a SkillStore, a Learner), never `Any`."""
        found = []
        for path in (PACKAGE / "engine").rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.arg) and node.arg == "learn" and node.annotation is not None:
                    if "Any" in ast.unparse(node.annotation):
                        found.append(f"{path.name}:{node.lineno}")
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "learn":
                    if "Any" in ast.unparse(node.annotation):
                        found.append(f"{path.name}:{node.lineno}")
        assert not found, found


class TestNoCompatibilityShims:
    def test_old_module_paths_are_gone(self) -> None:
        """Nothing was released under the flat layout: its module paths do not import, and no finder answers for
        them."""
        for old in (
            "sherpa_skills.agent",
            "sherpa_skills.cli_learn",
            "sherpa_skills.embeddings",
            "sherpa_skills._moved",
        ):
            sys.modules.pop(old, None)
            with pytest.raises(ModuleNotFoundError):
                __import__(old)

    def test_llm_package_offers_no_call_names(self) -> None:
        """The model call lives in `sherpa_skills.llm.call`; the package itself keeps no second name for it."""
        import sherpa_skills.llm as llm

        for name in ("complete", "acomplete", "resolve_model", "Completion", "MODEL_ENV", "SCRIPTED_PREFIX"):
            assert not hasattr(llm, name), name


class TestOneCopyOfEachSeam:
    def test_one_per_home_cache(self) -> None:
        """Objects kept per home and thread (stores, matchers, memories, domains) all come from `home.per_home`."""
        keyed_by_thread = sorted(
            str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "threading.get_ident()" in p.read_text()
        )
        assert keyed_by_thread == ["home.py"]

    def test_per_home_gives_one_object_per_home_and_thread(self, tmp_path: Path) -> None:
        import threading

        from sherpa_skills.home import per_home
        from sherpa_skills.skills.replay.runtime import failure_finder, skill_matcher, skill_store

        made: list[Path] = []

        def factory(home: Path) -> object:
            made.append(home)
            return object()

        assert per_home(factory, tmp_path / "a") is per_home(factory, str(tmp_path / "a"))
        assert per_home(factory, tmp_path / "a") is not per_home(factory, tmp_path / "b")
        other: list[object] = []
        thread = threading.Thread(target=lambda: other.append(per_home(factory, tmp_path / "a")))
        thread.start()
        thread.join()
        assert other[0] is not per_home(factory, tmp_path / "a")
        assert made == [tmp_path / "a", tmp_path / "b", tmp_path / "a"]
        store = skill_store(tmp_path)
        assert skill_matcher(tmp_path).store is store and failure_finder(tmp_path).store is store


class TestTheAgentByJob:
    """Issue 43: the Agent is the loop; the journal, inbox, hooks and result live apart in engine/run/."""

    def test_the_agent_and_its_in_package_bases_have_at_most_30_methods(self) -> None:
        import inspect

        import sherpa_skills

        count = 0
        for cls in sherpa_skills.Agent.__mro__:
            if not cls.__module__.startswith("sherpa_skills"):
                continue
            tree = ast.parse(inspect.getsource(cls))
            # Every def in the class, nested ones too: splitting it into mixins or helpers inside it is no way out.
            count += sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree.body[0]))
        assert count <= 30, f"Agent and its sherpa_skills bases define {count} methods"

    def test_no_run_hook_method_takes_the_agent(self) -> None:
        import inspect

        from sherpa_skills.engine.hooks import RunHook

        for name, fn in inspect.getmembers(RunHook, inspect.isfunction):
            params = list(inspect.signature(fn).parameters.values())[1:]
            assert all(p.name != "agent" and "Agent" not in str(p.annotation) for p in params), name
            if name.startswith("on_"):  # keyword arguments only: a hook names what it reads
                assert all(p.kind is p.KEYWORD_ONLY for p in params), name

    def test_the_agent_has_no_observe(self) -> None:
        from sherpa_skills.engine.agent import Agent

        assert not hasattr(Agent, "observe") and not hasattr(Agent, "observers")

    def test_the_engine_never_names_learning(self) -> None:
        named = sorted(
            str(p.relative_to(PACKAGE))
            for p in (PACKAGE / "engine").rglob("*.py")
            if "learning" in p.read_text(encoding="utf-8").lower()
        )
        assert named == []


#: A line that names the SQL engine (issue 42): outside db/, none may.
DIALECT = re.compile(
    r"\bdialect\b|[\"'](?:postgresql|sqlite)[\"']|PgConnection|\bFOR UPDATE\b|json_extract|::jsonb|\bGREATEST\b"
    r"|\bILIKE\b|\bpg_[a-z_]+\(|PRAGMA|\bdb\.postgres\b|lock_postgres"
)


def _outside_db() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] != "db":
            yield path


def _lines_matching(pattern: re.Pattern[str], paths: Iterator[Path]) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path in paths
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]


class TestOneDatabase:
    """Every store opens through db.Database and writes through its one transaction helper; only db/ knows engines."""

    def test_one_transaction_helper(self) -> None:
        """No second helper (a `Transaction` class, a store's `_transact`), and no BEGIN sent outside db/."""
        helpers = _lines_matching(
            re.compile(r"^\s*(class Transaction\b|def _transact\b)"), iter(sorted(PACKAGE.rglob("*.py")))
        )
        begins = _lines_matching(re.compile(r"[\"']BEGIN"), _outside_db())
        assert not helpers + begins, "\n".join(helpers + begins)

    def test_no_line_outside_db_names_the_engine(self) -> None:
        found = _lines_matching(DIALECT, _outside_db())
        assert not found, f"{len(found)} lines name the SQL engine outside db/:\n" + "\n".join(found)

    def test_the_dialect_check_finds_what_it_looks_for(self, tmp_path: Path) -> None:
        """The attack: each spelling of an engine the check must catch is caught, and plain SQL is not."""
        caught = [
            'if self.dialect == "postgresql":',
            "rows = conn.execute('SELECT 1 FOR UPDATE')",
            "f\"{json_text(dialect, 'outputs', 'run_id')}\"",
            "conn.execute('PRAGMA wal_autocheckpoint=0')",
            "SELECT pg_advisory_xact_lock(?)",
            "SELECT GREATEST(a, b)",
            "from .lock_postgres import lock",
            "engine = 'sqlite'",
        ]
        assert [line for line in caught if not DIALECT.search(line)] == []
        assert not DIALECT.search("SELECT run_id FROM run_log WHERE action = 'run_machine'")

    def test_sqlite_setup_lives_in_db(self) -> None:
        stray = [str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("sqlite_db.py")]
        assert stray == [] and (PACKAGE / "db" / "sqlite.py").is_file()
