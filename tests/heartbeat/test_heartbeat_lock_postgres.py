"""The heartbeat lock on PostgreSQL: machines starting a heartbeat at once, exactly one runs; the holder (machine,
pid, since when) is recorded; a holder that dies loses the lock through the server itself, not a clock."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sherpa_skills.heartbeat.state import HeartbeatState

pytestmark = pytest.mark.postgres

_TRY = """
import json, os, sys, time
from pathlib import Path
from sherpa_skills.heartbeat.state import HeartbeatState
while not Path(sys.argv[1]).exists(): time.sleep(0.002)
state = HeartbeatState(home=Path(sys.argv[2]))
outcome = state.acquire(sys.argv[3], 600)
print(json.dumps({"pid": os.getpid(), **outcome.to_dict()}), flush=True)
time.sleep(float(sys.argv[4]))  # a heartbeat's phases run while it holds the lock
if outcome.acquired:
    state.release(sys.argv[3])
"""


def _start(tmp_path: Path, url: str, name: str, hold: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _TRY, str(tmp_path / "go"), str(tmp_path / name), name, str(hold)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SHERPA_SKILLS_DATABASE": url},
    )


def test_heartbeats_started_on_two_machines_at_once_exactly_one_runs(postgres_url: str, tmp_path: Path) -> None:
    import json

    procs = [_start(tmp_path, postgres_url, f"machine{i}-hb{j}", 1.0) for i in (1, 2) for j in (1, 2)]
    (tmp_path / "go").touch()
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outcomes.append(json.loads(out))
    winners = [o for o in outcomes if o["acquired"]]
    assert len(winners) == 1, outcomes
    for loser in (o for o in outcomes if not o["acquired"]):
        assert loser["how"] == "held" and loser["holder"]["pid"] == winners[0]["pid"]
        assert loser["holder"]["host"] and loser["holder"]["acquired"] > 0


def test_a_killed_holder_s_lock_is_released_by_the_server_and_reset(postgres_url: str, tmp_path: Path) -> None:
    import json

    holder = _start(tmp_path, postgres_url, "machine1", 60)
    (tmp_path / "go").touch()
    assert holder.stdout is not None
    first = json.loads(holder.stdout.readline())
    assert first["acquired"] and first["how"] == "taken"
    state = HeartbeatState(home=tmp_path / "machine2", database=postgres_url)
    try:
        held = state.acquire("second", stale_secs=0)  # older than "stale" but alive: a clock decides nothing
        assert not held.acquired and held.holder is not None and held.holder["pid"] == holder.pid
        holder.kill()
        holder.wait(timeout=30)
        import time

        deadline = time.monotonic() + 10
        outcome = state.acquire("second", 600)
        while not outcome.acquired and time.monotonic() < deadline:  # the server notices the dropped connection
            time.sleep(0.05)
            outcome = state.acquire("second", 600)
        assert outcome.acquired and outcome.how == "reset" and outcome.holder["pid"] == holder.pid  # type: ignore[index]
        assert state.release("second")
        assert state.acquire("third", 600).how == "taken"
        state.release("third")
    finally:
        state.close()


def test_heartbeat_run_names_the_holder_machine_and_pid(postgres_url: str, tmp_path: Path) -> None:
    import json
    import socket

    holder = _start(tmp_path, postgres_url, "machine1", 60)
    (tmp_path / "go").touch()
    try:
        assert holder.stdout is not None and json.loads(holder.stdout.readline())["acquired"]
        env = {**os.environ, "SHERPA_SKILLS_DATABASE": postgres_url}
        command = [sys.executable, "-m", "sherpa_skills.cli", "heartbeat", "run", "--home", str(tmp_path / "machine2")]
        as_json = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=120, env=env)
        report = json.loads(as_json.stdout)
        assert report["status"] == "skipped", as_json.stderr
        assert report["lock"]["holder"]["pid"] == holder.pid
        assert report["lock"]["holder"]["host"] == socket.gethostname()
        text = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        said = " ".join((text.stdout + text.stderr).split())
        assert f"on {socket.gethostname()}, pid {holder.pid}" in said, said
    finally:
        holder.kill()
        holder.wait(timeout=30)


def _drop_lock_connection(url: str) -> None:
    """What a network cut does to the holder: the server ends the session that holds the heartbeat lock."""
    import psycopg

    from sherpa_skills.db.advisory import HEARTBEAT_LOCK

    with psycopg.connect(url, autocommit=True) as conn:
        pids = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND ((classid::bigint << 32) | objid::bigint) = %s",
            (HEARTBEAT_LOCK,),
        ).fetchall()
        assert pids
        for (pid,) in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # pg_terminate_backend only signals: wait until the sessions are gone and their locks with them.
        deadline = time.monotonic() + 10
        while (
            conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", ([pid for (pid,) in pids],)
            ).fetchone()[0]
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)


def test_a_heartbeat_whose_lock_connection_dropped_stops_when_another_took_the_lock(
    postgres_url: str, tmp_path: Path
) -> None:
    first = HeartbeatState(home=tmp_path / "machine1", database=postgres_url)
    second = HeartbeatState(home=tmp_path / "machine2", database=postgres_url)
    try:
        assert first.acquire("first", 600).acquired and first.still_holds("first")
        _drop_lock_connection(postgres_url)
        # Nobody took it meanwhile: the holder takes it again on a fresh session and goes on.
        assert first.still_holds("first") and not second.acquire("second", 600).acquired
        _drop_lock_connection(postgres_url)
        deadline = time.monotonic() + 10
        taken = second.acquire("second", 600)
        while not taken.acquired and time.monotonic() < deadline:
            time.sleep(0.05)
            taken = second.acquire("second", 600)
        assert taken.acquired
        assert not first.still_holds("first")  # another heartbeat runs now: the first must touch nothing more
        assert second.still_holds("second")
    finally:
        second.release("second")
        first.release("first")
        first.close()
        second.close()


@pytest.mark.parametrize("cut_at", [b"DELETE FROM heartbeat_lock", b"COMMIT\x00"], ids=["statement", "commit"])
def test_a_release_whose_answer_was_lost_still_says_it_released(
    postgres_url: str, tmp_path: Path, cut_at: bytes
) -> None:
    # release's True rests on the DELETE's row count: a first sending that landed with its answer lost must not be
    # counted by a second sending that found nothing left (0 rows: "not released").
    from _lossy import relayed

    with relayed(postgres_url) as (url, relay):
        state = HeartbeatState(home=tmp_path, database=url)
        try:
            assert state.acquire("r1", 600).acquired
            assert state.db.let_go_alone("r1")  # its lock connection gone: the row alone says who held it
            relay.statement = cut_at
            relay.armed.set()
            assert state.release("r1"), "the holder's row went: released"
            assert relay.cut.is_set(), "the fault did fire"
            assert state.conn.execute("SELECT COUNT(*) FROM heartbeat_lock").fetchone()[0] == 0
            assert not state.release("r1"), "nothing left to release"
        finally:
            state.close()


def test_a_loser_who_asks_between_the_winner_s_lock_and_its_row_still_names_the_holder(
    postgres_url: str, tmp_path: Path
) -> None:
    """The winner takes the server's lock, then writes who it is: a loser asking in between waits for that row
    instead of answering "held" by nobody (4 heartbeats at once once saw a holder of None)."""
    import socket
    import threading

    winner = HeartbeatState(home=tmp_path / "machine1", database=postgres_url)
    loser = HeartbeatState(home=tmp_path / "machine2", database=postgres_url)
    try:
        assert winner.db.hold_alone("first")  # the lock taken, its row not written yet
        now = time.time()
        later = threading.Timer(
            0.3,
            lambda: winner.db.once_more(
                lambda conn: winner._record_holder(conn, "first", os.getpid(), socket.gethostname(), now)
            ),
        )
        later.start()
        outcome = loser.acquire("second", 600)
        later.join()
        assert not outcome.acquired and outcome.how == "held"
        assert outcome.holder is not None and outcome.holder["run_id"] == "first"
        assert outcome.holder["pid"] == os.getpid() and outcome.holder["acquired"] == now
    finally:
        assert winner.release("first")
        winner.close()
        loser.close()
