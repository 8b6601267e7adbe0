"""The outbox relayed from several machines at once (PostgreSQL): each relay claims its batch with FOR UPDATE SKIP
LOCKED, so every event is published exactly once; a relay killed mid-batch leaves its claim to the next."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from sherpa_skills.engine.runstore import RunStore, TickRecord

pytestmark = pytest.mark.postgres

RUNS, EVENTS_PER_RUN = 20, 15

# A relay process: waits for the start signal, then relays; its "bus" is a file it appends each published id to.
_RELAY = """
import os, sys, time
from pathlib import Path
from sherpa_skills.engine.runstore import RunStore
go, sink, die_after = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = RunStore(home=Path(sys.argv[4]))
Path(sys.argv[4] + ".ready").touch()  # imported and connected: the start waits for every relay to be here
while not go.exists(): time.sleep(0.002)
fd = os.open(sink, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
sent = 0
def publish(body):
    global sent
    if sent == die_after:
        os.kill(os.getpid(), 9)  # dies holding its batch's row locks, its batch not marked
    os.write(fd, (body["id"] + "\\n").encode())
    sent += 1
    time.sleep(0.001)  # a bus round trip: the relays overlap
print(store.relay(publish, "run-"), flush=True)
"""


def _fill(url: str, home: Path) -> list[str]:
    store = RunStore(home=home, database=url)
    ids = []
    try:
        for r in range(RUNS):
            events = [("out", "emitted", {"id": f"e{r}-{i}", "name": "done"}) for i in range(EVENTS_PER_RUN)]
            store.create_run(f"run-{r}", "w", None, None, {}, "s0", {}, TickRecord(events=events))
            ids += [e["id"] for _, _, e in events]
    finally:
        store.close()
    return ids


def _relay(tmp_path: Path, url: str, name: str, die_after: int = -1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            _RELAY,
            str(tmp_path / "go"),
            str(tmp_path / f"{name}.sink"),
            str(die_after),
            str(tmp_path / name),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SHERPA_SKILLS_DATABASE": url},
    )


def _all_ready(tmp_path: Path, relays: list[subprocess.Popen[str]]) -> None:
    import time

    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("*.ready"))) < len(relays):
        assert time.monotonic() < deadline, "the relays did not start"
        assert all(p.poll() is None for p in relays), "a relay died before the start"
        time.sleep(0.01)


def _received(tmp_path: Path) -> Counter[str]:
    return Counter(line for sink in tmp_path.glob("*.sink") for line in sink.read_text().split())


@pytest.mark.slow
def test_relays_in_several_processes_publish_every_event_exactly_once(postgres_url: str, tmp_path: Path) -> None:
    ids = _fill(postgres_url, tmp_path / "home")
    relays = [_relay(tmp_path, postgres_url, f"machine{i}") for i in range(4)]
    _all_ready(tmp_path, relays)  # a relay that started first could otherwise publish the whole outbox alone
    (tmp_path / "go").touch()
    counts = []
    for proc in relays:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        counts.append(int(out))
    received = _received(tmp_path)
    assert sorted(received) == sorted(ids) and set(received.values()) == {1}, "each event published exactly once"
    assert sum(counts) == len(ids) and sum(1 for c in counts if c) >= 2, "the relays shared the outbox"
    store = RunStore(home=tmp_path / "home", database=postgres_url)
    try:
        assert store.unpublished() == []
    finally:
        store.close()


def test_a_relay_killed_mid_batch_leaves_its_batch_to_the_next(postgres_url: str, tmp_path: Path) -> None:
    ids = _fill(postgres_url, tmp_path / "home")
    dying = _relay(tmp_path, postgres_url, "dying", die_after=7)
    (tmp_path / "go").touch()
    dying.communicate(timeout=60)
    assert dying.returncode == -signal.SIGKILL
    handed = (tmp_path / "dying.sink").read_text().split()
    assert len(handed) == 7
    store = RunStore(home=tmp_path / "home", database=postgres_url)
    try:
        assert len(store.unpublished()) == len(ids), "nothing of the dead relay's batch was marked published"
        again: list[str] = []
        assert store.relay(lambda body: again.append(body["id"])) == len(ids)  # its row locks died with it
        assert sorted(again) == sorted(ids) and store.unpublished() == []
        assert store.relay(again.append) == 0, "published once: a second pass finds nothing"
    finally:
        store.close()


def test_a_relay_marks_what_it_handed_over_before_a_publish_failed(postgres_url: str, tmp_path: Path) -> None:
    ids = _fill(postgres_url, tmp_path / "home")
    store = RunStore(home=tmp_path / "home", database=postgres_url)
    sent: list[str] = []

    def flaky(body: dict[str, object]) -> None:
        if len(sent) == 3:
            raise ConnectionError("the bus went away")
        sent.append(str(body["id"]))

    try:
        with pytest.raises(ConnectionError):
            store.relay(flaky)
        assert len(store.unpublished()) == len(ids) - 3, "the three handed over stay published; the rest wait"
        assert store.relay(lambda body: sent.append(str(body["id"])), run_id="run-0") == EVENTS_PER_RUN - 3
        assert Counter(sent)["e0-0"] == 1 and len(store.unpublished()) == len(ids) - EVENTS_PER_RUN
    finally:
        store.close()
