"""One schema, versioned for both engines: a schema newer than the code is refused; machines starting at once on an
empty PostgreSQL database migrate it once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.engine.run_schema import MIGRATIONS
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.errors import StoreFileError


def _add_future_migration(store: RunStore) -> None:
    store.conn.execute("INSERT INTO _migrations (component, name) VALUES ('runs', 'm999_from_the_future')")


def test_a_sqlite_store_migrated_by_a_newer_version_is_refused(tmp_path: Path) -> None:
    store = RunStore(home=tmp_path)
    _add_future_migration(store)
    store.close()
    with pytest.raises(StoreFileError, match=r"store\.db.*newer sherpa-skills \(m999_from_the_future"):
        RunStore(home=tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "sherpa_skills", "runs", "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "SHERPA_SKILLS_DATABASE"},
    )
    assert done.returncode == 2 and "upgrade sherpa-skills" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.postgres
def test_a_postgresql_store_migrated_by_a_newer_version_is_refused(postgres_url: str, tmp_path: Path) -> None:
    store = RunStore(home=tmp_path, database=postgres_url)
    _add_future_migration(store)
    store.close()
    with pytest.raises(StoreFileError, match=r"PostgreSQL database 't.*' on 127\.0\.0\.1.*m999_from_the_future"):
        RunStore(home=tmp_path, database=postgres_url)


@pytest.mark.postgres
def test_four_machines_starting_at_once_migrate_an_empty_database_once(postgres_url: str, tmp_path: Path) -> None:
    """Each process waits on a barrier file, then opens the store: the advisory lock lets one migrate, the others find
    it done; every migration is recorded once and every process opens the store."""
    barrier = tmp_path / "go"
    script = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "while not Path(sys.argv[1]).exists(): time.sleep(0.005)\n"
        "from sherpa_skills.engine.runstore import RunStore\n"
        "RunStore(home=sys.argv[2], database=os.environ['URL']).close()\n"
        "print('opened')\n"
    )
    env = {**os.environ, "URL": postgres_url}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(barrier), str(tmp_path / f"home{i}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(4)
    ]
    barrier.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 and out.strip() == "opened" for p, (out, _) in zip(procs, outputs, strict=True)), (
        outputs
    )
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT name, count(*) FROM _migrations WHERE component = 'runs' GROUP BY name").fetchall()
    assert sorted(rows) == sorted((m.__name__, 1) for m in MIGRATIONS)
