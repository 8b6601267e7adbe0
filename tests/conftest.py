"""Shared test setup: offline settings before anything imports litellm, and a tripwire for network use."""

import os

# Set before any test imports litellm: it would fetch a cost map, or a tokenizer, from the internet.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import asyncio  # noqa: E402
import ipaddress  # noqa: E402
import sys  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def _is_local(host: Any) -> bool:
    """True for loopback addresses and names, and for passive (None/empty) lookups."""
    if host is None:
        return True
    if isinstance(host, (bytes, bytearray)):
        host = bytes(host).decode(errors="replace")
    if not isinstance(host, str):
        return False
    host = host.strip("[]").split("%", 1)[0]
    if host == "" or host.lower() in _LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _network_tripwire(event: str, args: tuple) -> None:
    """Fail loudly on any connection or lookup beyond this machine: tests never reach the internet."""
    if event == "socket.getaddrinfo":
        host = args[0]
    elif event == "socket.connect":
        address = args[1]
        if isinstance(address, (str, bytes, bytearray)):  # a unix socket path
            return
        host = address[0] if isinstance(address, tuple) and address else address
    else:
        return
    if not _is_local(host):
        raise RuntimeError(f"network access in tests is forbidden: {event} to {host!r}")


sys.addaudithook(_network_tripwire)


# ---------------------------------------------------------------- shared fixtures (added after the tripwire)

import pytest  # noqa: E402


class _CurrentStderr:
    """Writes to whatever sys.stderr is now, so logs never go to a capture stream a finished test closed."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@pytest.fixture(autouse=True)
def _logs_to_current_stderr():
    """The CLI reconfigures structlog per run (JSON file, console stream); give every test a clean set-up."""
    from sherpa_skills.logs import configure

    configure(level="warning", stream=_CurrentStderr())  # type: ignore[arg-type]
    yield
    configure(level="warning", stream=_CurrentStderr())  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _per_home_stores_closed():
    """The stores a test's `SkillStore(home)` and machines share per home and thread stay open by design (a
    `SkillStore.close()` leaves them to the others sharing them); each test's own are closed after it, or a run of
    the suite holds a few files for every home it ever made (over 1,100 after tests/skills)."""
    from sherpa_skills.home import per_home_scope

    with per_home_scope():
        yield


@pytest.fixture
def fresh_scripts():
    """Scripted-model `times` counters and parsed scripts start empty in each test that asks for it."""
    from sherpa_skills.testing import reset_scripts

    reset_scripts()
    yield
    reset_scripts()


@pytest.fixture
def write_file(tmp_path):
    """Write a text file (a workflow, a script) under tmp_path and return its path."""

    def write(name: str, text: str):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def chroma_executable() -> str:
    """chromadb's `chroma` script (a required dependency):
    on PATH, else beside this interpreter, as in a venv not activated."""
    import shutil
    import sysconfig
    from pathlib import Path

    found = shutil.which("chroma")
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        found = found or shutil.which("chroma", path=str(folder))
    if found is None:  # not a skip: chromadb is installed with the project, so its script missing is a broken install
        pytest.fail(f"the `chroma` script of chromadb is neither on PATH nor in {Path(sys.executable).parent}")
    return found


# ---------------------------------------------------------------- a home and its stores

from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:  # the library is imported inside the fixtures, as above, so collecting a test imports no more of it
    from sherpa_skills.engine.agent import Agent, RunResult


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh home folder (tmp_path / "home"), also the SHERPA_SKILLS_HOME of the code under test."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("SHERPA_SKILLS_HOME", str(folder))
    return folder


@pytest.fixture
def run_store(home: Path):
    """The runs of `home` (its store.db), closed at teardown."""
    from sherpa_skills.engine.runstore import RunStore

    store = RunStore(home=home)
    yield store
    store.close()


@pytest.fixture
def procedure_db(home: Path):
    """The procedure database of `home` (the class the library's parts share), closed at teardown."""
    from sherpa_skills.skills.store.database import ProcedureDatabase

    store = ProcedureDatabase(home=home)
    yield store
    store.close()


@pytest.fixture
def skill_store(home: Path):
    """The public `sherpa_skills.SkillStore` of `home`, closed at teardown."""
    from sherpa_skills.skills.api import SkillStore

    store = SkillStore(home)
    yield store
    store.close()


# ---------------------------------------------------------------- one engine suite under run and arun


class Runner:
    """Brings an agent to rest through `run` or through `arun`, so one test checks both entry points agree."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(self, agent: "Agent", inputs: dict[str, Any] | None = None, **how: Any) -> "RunResult":
        if self.mode == "arun":
            return asyncio.run(agent.arun(inputs, **how))
        return agent.run(inputs, **how)


@pytest.fixture(params=["run", "arun"])
def runner(request: pytest.FixtureRequest) -> Runner:
    """`runner(agent, inputs, trigger=..., args=...)`: the test runs once with `agent.run`, once with `agent.arun`."""
    return Runner(request.param)


# ---------------------------------------------------------------- a real PostgreSQL server (tests/_postgres.py)


@pytest.fixture(scope="session")
def postgres_cluster():
    """One cluster for the session, started on first use and stopped at the end; skipped, saying why, where none can
    be started (no server binaries, no psycopg)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[postgres]'); the PostgreSQL tests need it")
    from _postgres import NoServer, start_cluster

    try:
        cluster = start_cluster()
    except NoServer as exc:
        pytest.skip(f"no PostgreSQL server can be started here: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster) -> Iterator[str]:
    """A URL (with its password) to a new empty database of the session's cluster, dropped after the test."""
    name = postgres_cluster.create_database()
    yield postgres_cluster.url(name)
    from sherpa_skills.db.postgres import close_pools

    close_pools()  # the library's pooled connections to it go first, or the drop waits on them
    postgres_cluster.drop_database(name)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """A store contract test runs twice: None (SQLite in the home, no SHERPA_SKILLS_DATABASE from the environment),
    then the URL of a fresh PostgreSQL database."""
    monkeypatch.delenv("SHERPA_SKILLS_DATABASE", raising=False)
    return request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
