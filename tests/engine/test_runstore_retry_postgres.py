"""A run store write the server cut short is written again whole: what the first try remembered in memory (a machine
record kept) must not make the second try skip a row that was rolled back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.engine.runstore import RunStore, TickRecord

pytestmark = pytest.mark.postgres


def test_a_run_start_cut_short_keeps_its_machine_record_when_written_again(postgres_url: str, tmp_path: Path) -> None:
    import psycopg

    store = RunStore(home=tmp_path / "home", database=postgres_url)
    admin = psycopg.connect(postgres_url, autocommit=True)
    # The server ends the connection once, after the machine's record was inserted in the same transaction.
    admin.execute("CREATE SEQUENCE fault_once")
    admin.execute(
        "CREATE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF nextval('fault_once') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); "
        "PERFORM pg_sleep(5); END IF; RETURN NEW; END $$"
    )
    admin.execute("CREATE TRIGGER fault BEFORE INSERT ON run_machines FOR EACH ROW EXECUTE FUNCTION fault()")

    def record() -> dict[str, Any]:
        return {"name": "w", "text": "states: {}"}

    try:
        store.create_run("r1", "w", None, "h1", {}, "s0", {}, TickRecord(), machine=record)
        assert admin.execute("SELECT last_value FROM fault_once").fetchone()[0] >= 1, "the fault did fire"
        assert store.machines("r1") == [(0, "h1")]
        assert store.machine_record("h1") == record()
    finally:
        admin.close()
        store.close()
