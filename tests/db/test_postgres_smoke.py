"""The tests' own PostgreSQL cluster answers, and a run store opens on it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.postgres


def test_the_test_cluster_answers_over_tcp_on_loopback_with_its_password(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT inet_server_addr()::text").fetchone()[0].startswith("127.0.0.1")


def test_a_run_store_on_postgresql_migrates_and_keeps_the_home_for_logs(postgres_url: str, tmp_path: Path) -> None:
    from sherpa_skills.engine.run_schema import MIGRATIONS
    from sherpa_skills.engine.runstore import RunStore

    store = RunStore(home=tmp_path, database=postgres_url)
    try:
        assert store.dialect == "postgresql" and store.path.parent == tmp_path
        assert not (tmp_path / "store.db").exists()  # the truth is in the server
        names = [r[0] for r in store.conn.execute("SELECT name FROM _migrations WHERE component = 'runs' ORDER BY 1")]
        assert names[0] == "m001_runs" and len(names) == len(MIGRATIONS)
    finally:
        store.close()
