"""Shared memory, domains and imported sessions hold the same contract on both engines: every test runs on SQLite (the
home's store.db) and on PostgreSQL (a fresh database of the tests' own cluster). Lexical relevance numbers differ
between the engines (BM25 against ts_rank), so tests compare orders and sets, never scores."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from _engines import Engine

from sherpa_skills.errors import StoreError, UsageError
from sherpa_skills.sessions._records import CommandRecord
from sherpa_skills.sessions._store import FileRow

NGINX = "Restart the nginx web server after changing its configuration file"
DEPLOY = "Run the database migrations before deploying the release"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    monkeypatch.delenv("SHERPA_SKILLS_DATABASE", raising=False)
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    found = Engine(request.param, tmp_path, url)
    yield found
    found.close()


@pytest.fixture
def pg(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """PostgreSQL only: what several homes sharing one database see."""
    monkeypatch.delenv("SHERPA_SKILLS_DATABASE", raising=False)
    found = Engine("postgresql", tmp_path, request.getfixturevalue("postgres_url"))
    yield found
    found.close()


# ---------------------------------------------------------------- shared memory's truth


def test_what_one_connection_wrote_another_reads_and_finds_by_its_words(engine: Engine) -> None:
    writer, reader = engine.memory_store(), engine.memory_store()
    written = writer.add([writer.prepare(NGINX, agent="ops", scope="shared", tags=["web"], metadata={"svc": "web"})])
    got = reader.get(written[0].id, agent="someone")
    assert got.text == NGINX and got.tags == ["web"] and got.metadata == {"svc": "web"}
    writer.write(DEPLOY, agent="ops", scope="shared")
    found = reader.lexical("restart nginx", agent="x")
    assert [aid for aid, _, _ in found] == [written[0].id] and found[0][2] > 0
    assert reader.lexical("zebra", agent="x") == [] and reader.lexical("???", agent="x") == []


def test_text_outranks_tags_and_more_matching_words_rank_higher(engine: Engine) -> None:
    store = engine.memory_store()
    in_text = store.write("the cache of the proxy", agent="ops", scope="shared")
    in_tags = store.write("something unrelated entirely", agent="ops", scope="shared", tags=["cache"])
    both = store.write("cache proxy nginx cache", agent="ops", scope="shared")
    order = [aid for aid, _, _ in store.lexical("nginx proxy cache", agent="x")]
    assert order[0] == both.id and order.index(in_text.id) < order.index(in_tags.id)


def test_another_agents_private_notes_are_never_visible(engine: Engine) -> None:
    store = engine.memory_store()
    mine = store.write("alice private nginx secret plan", agent="alice")
    shared = store.write("shared nginx runbook", agent="alice", scope="shared")
    assert {a for a, _, _ in store.lexical("nginx", agent="alice")} == {mine.id, shared.id}
    assert {a for a, _, _ in store.lexical("nginx", agent="bob")} == {shared.id}
    assert {a for a, _, _ in store.lexical("nginx", agent=None)} == {shared.id}
    assert [a for a, _, _ in store.lexical("nginx", agent="bob", author="alice")] == [shared.id]
    with pytest.raises(StoreError, match="no artifact"):
        store.get(mine.id, agent="bob")
    assert set(store.visible([mine.id, shared.id], agent="bob")) == {shared.id}
    assert [a.id for a in store.export(agent="bob")] == [shared.id]
    with pytest.raises(UsageError, match="author only"):
        store.lexical("nginx", agent=None, scope="private")


def test_metadata_and_kind_filters(engine: Engine) -> None:
    store = engine.memory_store()
    web = store.write("deploy web tier", agent="ops", scope="shared", kind="runbook", metadata={"svc": "web", "n": 3})
    db = store.write("deploy db tier", agent="ops", scope="shared", kind="note", metadata={"svc": "db"})
    assert [a for a, _, _ in store.lexical("deploy", agent="x", metadata={"svc": "web"})] == [web.id]
    assert [a for a, _, _ in store.lexical("deploy", agent="x", metadata={"n": 3})] == [web.id]
    assert [a for a, _, _ in store.lexical("deploy", agent="x", metadata={"n": None})] == [db.id]
    assert [a for a, _, _ in store.lexical("deploy", agent="x", kind="note")] == [db.id]
    assert set(store.visible_ids([web.id, db.id], agent="x", metadata={"svc": "db"})) == {db.id}


def test_links_and_tensions_and_their_visibility(engine: Engine) -> None:
    store = engine.memory_store()
    [old] = store.add(
        [store.prepare("The deploy timeout is 30 seconds", agent="ops", scope="shared", abstraction="principle")]
    )
    new_art = store.prepare("The deploy timeout is 60 seconds", agent="ops", scope="shared", abstraction="principle")
    [(new, _)] = store.add_checked([new_art])
    found = store.find_tensions(new)
    assert [(t["a"], t["b"]) for t in found] == [(old.id, new.id)]
    assert store.find_tensions(new) == found  # recorded once
    assert [t["id"] for t in store.tensions(agent="anyone")] == [found[0]["id"]]
    store.link(new.id, old.id, "near_duplicate", 0.9)
    store.link(new.id, old.id, "near_duplicate", 0.9)
    assert store.links(old.id) == [{"src": new.id, "dst": old.id, "relation": "near_duplicate", "score": 0.9}]
    resolved = store.resolve(found[0]["id"], new.id, agent="ops")
    assert resolved["superseded"] == old.id and store.open_tensions() == 0
    assert [a for a, _, _ in store.lexical("deploy timeout", agent="x")] == [new.id]
    [private_a] = store.add([store.prepare("My editor font size is 12", agent="alice", abstraction="principle")])
    private_b = store.prepare("My editor font size is 14", agent="alice", abstraction="principle")
    [(b, _)] = store.add_checked([private_b])
    assert store.find_tensions(b) and store.tensions(agent="bob") == []
    assert [t["a"]["id"] for t in store.tensions(agent="alice")] == [private_a.id]


def test_a_repeated_write_is_stored_once_and_counted(engine: Engine) -> None:
    store = engine.memory_store()
    first = store.write(NGINX, agent="ops", scope="shared", id="fixed-id")
    again = engine.memory_store().write(NGINX, agent="ops", scope="shared", id="fixed-id")
    assert again.id == first.id and store.count() == 1
    [(dup, is_dup)] = store.add_checked([store.prepare(NGINX, agent="ops", scope="shared")])
    assert is_dup and dup.id == first.id and store.count() == 1
    with pytest.raises(StoreError, match="already taken"):
        store.write("other text", agent="ops", scope="shared", id="fixed-id")
    assert store.stats()["duplicates_merged"] == 1


# ---------------------------------------------------------------- domains


def test_a_domain_claimed_from_one_home_is_claimed_from_the_other(engine: Engine) -> None:
    engine.domains("a").claim("billing", "alice")
    other = engine.domains("b" if engine.url else "a")
    with pytest.raises(UsageError, match="belongs to agent 'alice'"):
        other.claim("billing", "bob")
    other.claim("billing", "alice")
    other.decide("billing", "limit", 100, by="lead")
    engine.domains("a").run_ended("billing", "alice", "r1", "final", {"did": "x"})
    engine.domains("a").run_ended("billing", "alice", "r1", "final", {"did": "x"})  # a resumed run: once
    assert other.decisions("billing") == {"limit": 100} and other.get("billing")["runs"] == 1
    assert [c["kind"] for c in other.changelog("billing")] == ["run", "decision"]
    pid = other.propose("billing", "alice", "limit", 200, reason="growth")
    assert [p["id"] for p in engine.domains("a").proposals(status="all")] == [pid]


def test_concurrent_claims_from_separate_processes_leave_exactly_one_owner(engine: Engine) -> None:
    script = textwrap.dedent(
        """
        import sys
        from sherpa_skills.errors import UsageError
        from sherpa_skills.memory.domains import Domains
        with Domains(home=sys.argv[1]) as d:
            try:
                d.claim("contested", sys.argv[2])
                print("won")
            except UsageError:
                print("lost")
        """
    )
    homes = [engine.home(f"h{n}" if engine.url else "a") for n in range(4)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(home), f"agent{n}"], stdout=subprocess.PIPE, text=True, env=engine.env()
        )
        for n, home in enumerate(homes)
    ]
    outcomes = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert sorted(outcomes) == ["lost", "lost", "lost", "won"]
    owner = engine.domains().get("contested")["agent"]
    assert owner == f"agent{outcomes.index('won')}"


# ---------------------------------------------------------------- imported sessions


def _records(n: int, session: str = "s1") -> list[CommandRecord]:
    return [
        CommandRecord(key=f"{session}:{i}", session_id=session, command=f"echo {i}", outcome="success", line=i)
        for i in range(n)
    ]


def test_imported_commands_are_stored_once_whoever_reads_the_file(engine: Engine) -> None:
    first, second = engine.sessions("a"), engine.sessions("b" if engine.url else "a")
    added = first.commit(FileRow(id=None, path="/logs/one.jsonl", format="codex"), _records(3), source="codex")
    assert added.commands == 3
    copy = FileRow(id=None, path="/elsewhere/copy.jsonl", format="codex")
    assert second.commit(copy, _records(4), source="codex").commands == 1  # only the fourth is new
    assert second.count_commands() == 4 and second.count_sessions() == 1
    assert [c.command for c in second.commands_since(0)] == [f"echo {i}" for i in range(4)]
    assert [c.seq for c in first.session_commands("s1")] == [1, 2, 3, 4]
    files = {f.path: f for f in first.files()}
    assert files["/logs/one.jsonl"].commands == 3 and files["/elsewhere/copy.jsonl"].commands == 1


def test_a_file_row_changed_by_another_import_is_a_conflict(engine: Engine) -> None:
    from sherpa_skills.sessions._store import Conflict

    first, second = engine.sessions("a"), engine.sessions("b" if engine.url else "a")
    first.commit(FileRow(id=None, path="/logs/x.jsonl", format="codex"), _records(1), source="codex")
    stale = second.file_row("/logs/x.jsonl")
    assert stale is not None
    first.commit(first.file_row("/logs/x.jsonl"), _records(2), source="codex")  # type: ignore[arg-type]
    with pytest.raises(Conflict):
        second.commit(stale, _records(3), source="codex")
    with pytest.raises(Conflict):  # a new file another import created meanwhile
        second.commit(FileRow(id=None, path="/logs/x.jsonl", format="codex"), [], source="codex")


# ---------------------------------------------------------------- several homes on one PostgreSQL database


@pytest.mark.postgres
def test_home_b_finds_by_meaning_what_home_a_wrote_and_refills_a_deleted_companion(pg: Engine) -> None:
    a, b = pg.memory("a"), pg.memory("b")
    first = a.write(NGINX, agent="ops", scope="shared")
    assert a.flush() is None
    hits = b.search("reload the web server after editing its config", agent="x").hits  # caught up, not rebuilt
    assert [h.artifact.id for h in hits][:1] == [first.id] and hits[0].semantic is not None
    assert b.store.pending() == 0 and b.companion().count(b.collection) == 1
    a.write(DEPLOY, agent="ops", scope="shared")
    assert a.flush() is None
    assert b.store.pending() == 1  # home B's companion lacks it, whatever home A's holds
    b.search("apply schema changes before shipping", agent="x")
    assert b.store.pending() == 0 and b.companion().count(b.collection) == 2
    b.close()
    pg.opened.remove(b)
    import shutil

    shutil.rmtree(pg.home("b") / "companion")
    again = pg.memory("b")
    assert again.store.pending() == 2  # its folder (and watermark) gone: everything is behind
    assert again.search("apply schema changes before shipping", agent="x").degraded is None
    assert again.store.pending() == 0 and again.companion().count(again.collection) == 2


@pytest.mark.postgres
def test_a_seq_committed_late_is_not_skipped_by_the_catch_up(pg: Engine) -> None:
    """Writers serialise on a transaction lock before drawing a seq: a second writer waits for the first, so no seq
    is visible before a smaller one and a catch-up by `seq > watermark` never passes over a row still to commit."""
    import threading

    from sherpa_skills.db.locks import serialise_writes
    from sherpa_skills.memory._position import CompanionPosition
    from sherpa_skills.memory._store import WRITE_LOCK

    slow, fast, watcher = pg.memory_store(), pg.memory_store(), pg.memory_store()
    position = CompanionPosition(pg.root / "watermark.seq", inside_companion=False)
    slow.conn.execute("BEGIN")
    serialise_writes(slow.conn, WRITE_LOCK)
    slow.conn.execute(
        "INSERT INTO memory_artifacts (id, agent, scope, tags, metadata, text, created) "
        "VALUES ('late', 'ops', 'shared', '[]', '{}', 'written first, committed last', 0)"
    )
    done = threading.Event()
    threading.Thread(target=lambda: (fast.write(NGINX, agent="ops", scope="shared"), done.set()), daemon=True).start()
    while not watcher.conn.execute(
        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    ).fetchone():  # the second writer waits for the lock, its seq not drawn yet
        assert not done.is_set()
    seen = [aid for _, aid in position.pending(watcher.conn, 10)]
    position.mark(watcher.conn, seen)
    assert seen == [] and position.upto() == 0
    slow.conn.execute("COMMIT")
    assert done.wait(30)
    seen = [aid for _, aid in position.pending(watcher.conn, 10)]
    assert seen[0] == "late" and len(seen) == 2  # in commit order, both
    position.mark(watcher.conn, seen)
    assert position.upto() == watcher.last_seq() and position.count_pending(watcher.conn) == 0


@pytest.mark.postgres
def test_two_writer_processes_and_a_catch_up_running_meanwhile_miss_nothing(pg: Engine) -> None:
    from sherpa_skills.memory._position import CompanionPosition

    script = textwrap.dedent(
        """
        import sys
        from sherpa_skills.memory import MemoryStore
        with MemoryStore(home=sys.argv[1]) as store:
            for n in range(40):
                store.write(f"note {sys.argv[2]} number {n}", agent="ops", scope="shared")
        """
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(pg.home(name)), name], env=pg.env()) for name in "xy"
    ]
    watcher = pg.memory_store()
    position = CompanionPosition(pg.root / "watermark.seq", inside_companion=False)
    caught: list[str] = []
    while True:
        running = any(w.poll() is None for w in writers)
        batch = [aid for _, aid in position.pending(watcher.conn, 7)]
        caught += batch
        position.mark(watcher.conn, batch)
        if not running and not batch:
            break
    assert all(w.returncode == 0 for w in writers)
    assert len(caught) == len(set(caught)) == 80 == watcher.count()


@pytest.mark.postgres
def test_two_homes_share_memory_and_domains_through_the_cli(pg: Engine) -> None:
    def cli(home: str, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sherpa_skills", *argv, "--home", str(pg.home(home))],
            capture_output=True, text=True, env=pg.env(), timeout=300,
        )  # fmt: skip

    import json

    wrote = cli("a", "memory", "write", NGINX, "--agent", "ops", "--shared", "--json")
    assert wrote.returncode == 0, wrote.stderr
    secret = cli("a", "memory", "write", "alice private nginx note", "--agent", "alice", "--json")
    assert secret.returncode == 0, secret.stderr
    found = cli("b", "memory", "search", "nginx", "--agent", "bob", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert [h["id"] for h in hits] == [json.loads(wrote.stdout)["id"]]
    own = cli("b", "memory", "search", "nginx", "--agent", "alice", "--json", "--lexical")
    assert len(json.loads(own.stdout)["hits"]) == 2
