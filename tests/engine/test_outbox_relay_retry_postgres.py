"""A relay's batch cut short by a dropped connection is written again on a fresh one: the events it already handed to
the bus are marked, not published a second time (publishing is the one thing a retried write cannot take back)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.engine.runstore import RunStore, TickRecord

pytestmark = pytest.mark.postgres


def test_a_batch_whose_marking_the_server_cut_short_is_not_published_twice(postgres_url: str, tmp_path: Path) -> None:
    import psycopg

    store = RunStore(home=tmp_path / "home", database=postgres_url)
    events = [("out", "emitted", {"id": f"e{i}", "name": "done"}) for i in range(3)]
    store.create_run("run-1", "w", None, None, {}, "s0", {}, TickRecord(events=events))
    admin = psycopg.connect(postgres_url, autocommit=True)
    # The server ends the relay's connection once, as it marks the batch it has just published.
    admin.execute("CREATE SEQUENCE fault_once")
    admin.execute(
        "CREATE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF nextval('fault_once') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); "
        "PERFORM pg_sleep(5); END IF; RETURN NEW; END $$"
    )
    admin.execute("CREATE TRIGGER fault BEFORE UPDATE ON run_events FOR EACH ROW EXECUTE FUNCTION fault()")
    sent: Counter[str] = Counter()

    def publish(body: dict[str, Any]) -> None:
        sent[body["id"]] += 1

    try:
        assert store.relay(publish, "run-") == 3
        assert admin.execute("SELECT last_value FROM fault_once").fetchone()[0] >= 1, "the fault did fire"
        assert sent == Counter({"e0": 1, "e1": 1, "e2": 1})  # each once, though its batch was written twice
        assert store.unpublished("run-") == []  # and each marked
    finally:
        admin.close()
        store.close()
