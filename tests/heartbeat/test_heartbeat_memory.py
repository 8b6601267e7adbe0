"""The heartbeat's memory phase: decay applied, tensions and new observations over Engram's thresholds alerted,
domains' proposals and stale domains surfaced; isolated like every phase."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.memory import SharedMemory
from sherpa_skills.memory.domains import Domains

DAY = 86400.0


def heartbeat(home: Path, capsys: pytest.CaptureFixture[str], code: int = 0) -> dict[str, Any]:
    assert main(["heartbeat", "--once", "--json", "--home", str(home)]) == code
    return json.loads(capsys.readouterr().out)


def test_memory_phase_applies_decay_and_raises_engram_alerts(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with SharedMemory(home) as m:
        m.write_many(
            [m.store.prepare("the old cache note", agent="ops", scope="shared", created=time.time() - 40 * DAY)],
            index=False,
        )
        names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
        for n, name in enumerate(names):  # seven facts, each contradicted by a changed value: seven open tensions
            m.store.add(
                [
                    m.store.prepare(
                        f"{name} listens on port {8000 + n}", agent="ops", scope="shared", abstraction="pattern"
                    )
                ]
            )
            m.store.find_tensions(
                m.store.add(
                    [
                        m.store.prepare(
                            f"{name} listens on port {9000 + n}", agent="ops", scope="shared", abstraction="pattern"
                        )
                    ]
                )[0]
            )
        for n in range(22):
            m.store.write(f"observation {n}: queue depth was {n * 3}", agent="ops")
    with Domains(home=home) as d:
        d.claim("triage", "ops")
        d.propose("triage", "ops", "threshold", 75, "pages too often")
        d.claim("nightly", "batch")
        d.conn.execute(
            "UPDATE domains SET created = ?, last_run = ? WHERE name = 'nightly'",
            (time.time() - 30 * DAY, time.time() - 9 * DAY),
        )

    report = heartbeat(home, capsys)
    phase = report["phases"]["memory"]
    assert phase["status"] == "ok"
    s = phase["stats"]
    assert s["tiers"]["cold"] == 1 and s["moved"] == {"hot→cold": 1}
    assert s["open_tensions"] == 7 and s["new_observations"] == 23 and s["open_proposals"] == 1
    assert s["stale_domains"] == ["nightly"]
    alerts = report["alerts"]
    assert any("7 open memory tensions" in a for a in alerts)
    assert any("new observations since the last heartbeat" in a for a in alerts)
    assert any("proposal" in a and "threshold = 75" in a for a in alerts)
    assert any("domain nightly" in a and "not run" in a for a in alerts)

    again = heartbeat(home, capsys)["phases"]["memory"]["stats"]
    assert again["new_observations"] == 0 and again["moved"] == {}


def test_a_broken_companion_does_not_stop_the_memory_phase(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with SharedMemory(home) as m:
        m.store.write("a note written before the companion broke", agent="ops", scope="shared")
    (home / "companion").write_text("not a folder")
    report = heartbeat(home, capsys)
    assert report["phases"]["memory"]["status"] == "ok" and report["phases"]["memory"]["stats"]["tiers"]["hot"] == 1


def test_a_failing_memory_phase_is_reported_and_the_others_still_run(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A foreign `domains` table in store.db breaks the memory phase only; the report says why."""
    import sqlite3

    conn = sqlite3.connect(home / "store.db")
    conn.execute("CREATE TABLE domains (something_else TEXT)")
    conn.commit()
    conn.close()
    report = heartbeat(home, capsys, code=1)
    assert report["status"] == "partial" and report["phases"]["memory"]["status"] == "failed"
    assert "domains" in report["phases"]["memory"]["summary"]
    assert all(report["phases"][p]["status"] == "ok" for p in ("health", "maintenance"))
    assert any("phase memory failed" in a for a in report["alerts"])
