"""`Home`: one Database per home, opened by the first store asked for; a command opens only the stores it uses."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.errors import StoreError, StoreFileError
from sherpa_skills.stores import Home


def _checkpointers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("sherpa-checkpoint:") and t.is_alive()]


def _components(home: Path) -> set[str]:
    conn = sqlite3.connect(home / "store.db")
    try:
        return {row[0] for row in conn.execute("SELECT DISTINCT component FROM _migrations")}
    finally:
        conn.close()


class TestLazy:
    def test_nothing_is_opened_until_a_store_is_asked_for(self, tmp_path: Path) -> None:
        house = Home(tmp_path)
        assert house.opened == () and not (tmp_path / "store.db").exists()
        house.close()
        assert not (tmp_path / "store.db").exists()

    def test_every_store_is_given_the_one_database(self, tmp_path: Path) -> None:
        with Home(tmp_path) as house:
            db = house.database
            assert house.skills.store.db is db and house.memory.db is db
            assert house.domains.db is db and house.sessions.db is db
            assert house.opened == ("skills", "memory", "domains", "sessions")  # no run store: nobody asked
            assert house.runs.db is db and house.runs is house.runs
            assert _checkpointers()  # the run store's, and only once it was asked for
        assert not _checkpointers()

    def test_close_closes_what_was_opened_then_the_database(self, tmp_path: Path) -> None:
        house = Home(tmp_path)
        conn = house.skills.store.db.conn
        house.close()
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
        house.close()  # twice: nothing closed twice, nothing raised


class TestRefusals:
    def test_a_store_asked_of_a_closed_home_is_refused(self, tmp_path: Path) -> None:
        """The attack: a store asked for after close would open a Database nobody closes."""
        house = Home(tmp_path)
        house.close()
        with pytest.raises(StoreError, match=r"home '.*' were closed; open a new Home"):
            _ = house.skills
        assert not (tmp_path / "store.db").exists()

    def test_a_home_that_is_a_file_is_refused_naming_it(self, tmp_path: Path) -> None:
        (tmp_path / "home").write_text("")
        with pytest.raises(StoreFileError, match=r"home '.*home' is a file, not a folder"):
            Home(tmp_path / "home")


class TestCommandsOpenWhatTheyUse:
    @pytest.mark.parametrize(
        "command", [["learn", "procedures", "--json"], ["learn", "health", "--json"], ["learn", "stats", "--json"]]
    )
    def test_a_learn_command_that_never_touches_runs_opens_no_run_store(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
    ) -> None:
        """No run store: no checkpointer thread, and no run tables made in a fresh home."""
        before = _checkpointers()
        assert main(["--home", str(tmp_path), *command]) == 0
        json.loads(capsys.readouterr().out)  # under --json, stdout is JSON only
        assert _checkpointers() == before
        assert "runs" not in _components(tmp_path) and "skills" in _components(tmp_path)

    def test_a_runs_command_opens_the_run_store_and_closes_it(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        before = _checkpointers()
        assert main(["--home", str(tmp_path), "runs", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == []
        assert "runs" in _components(tmp_path) and _checkpointers() == before

    def test_a_command_refused_still_closes_what_it_opened(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The attack: an unknown run is exit 2 with a line naming it, and the run store it opened is closed too."""
        before = _checkpointers()
        assert main(["--home", str(tmp_path), "show", "no-such-run", "--json"]) == 2
        assert "no-such-run" in capsys.readouterr().err
        assert _checkpointers() == before


class TestTheView:
    def test_the_views_stores_share_the_homes_one_database(self, tmp_path: Path) -> None:
        from sherpa_skills.ui.views import Stores

        stores = Stores.open(tmp_path)
        try:
            db = stores.runs.db
            assert stores.skills.store.db is db and stores.heartbeat.db is db and len(stores.homes) == 1
        finally:
            stores.close()
        with pytest.raises(sqlite3.ProgrammingError):
            db.conn.execute("SELECT 1")

    def test_a_part_read_elsewhere_gets_that_folders_database_and_creates_nothing_here(self, tmp_path: Path) -> None:
        """The read-only view reads a part the home lacks from a scratch folder: that folder's Database, not the
        home's, and the home itself is not opened for it."""
        from sherpa_skills.ui.views import Stores

        home, scratch = tmp_path / "home", tmp_path / "scratch"
        parts = ("runs", "skills", "heartbeat", "memory", "domains")
        stores = Stores.open(home, dict.fromkeys(parts, scratch))
        try:
            assert stores.runs.db.path == scratch / "store.db" and len(stores.homes) == 1
            assert not home.exists()
        finally:
            stores.close()


@pytest.mark.parametrize("store", ["MemoryStore", "Domains", "SessionStore", "HeartbeatState", "TaskStore"])
def test_a_store_given_a_file_where_its_database_goes_says_what_to_write(store: str, tmp_path: Path) -> None:
    # The earlier positional form (a path or home first): a UsageError naming the fix, not an AttributeError later.
    from sherpa_skills.agents.task_store import TaskStore
    from sherpa_skills.errors import UsageError
    from sherpa_skills.heartbeat.state import HeartbeatState
    from sherpa_skills.memory import MemoryStore
    from sherpa_skills.memory.domains import Domains
    from sherpa_skills.sessions import SessionStore

    cls = {c.__name__: c for c in (MemoryStore, Domains, SessionStore, HeartbeatState, TaskStore)}[store]
    with pytest.raises(UsageError, match="home=.*path="):
        cls(tmp_path / "store.db")
    assert not (tmp_path / "store.db").exists()
