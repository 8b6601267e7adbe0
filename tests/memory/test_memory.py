"""Shared memory through its public API, on real SQLite and real chromadb (MiniLM) in temporary homes:
scopes, search by words and by meaning, the hybrid score, fallback when the companion breaks, redaction, bad input."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import sherpa_skills.memory as memory_api
from sherpa_skills.errors import StoreError, UsageError
from sherpa_skills.memory import MAX_TEXT_BYTES, SEMANTIC_FLOOR, SEMANTIC_WEIGHT, SharedMemory, hybrid

NOTES = {
    "nginx": "Restart the nginx web server after changing its configuration file",
    "migrate": "Run the database migrations before deploying the new release",
    "cert": "Renew the TLS certificate for the public website before it expires",
    "cake": "Bake a chocolate cake for the team party on Friday",
}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[SharedMemory]:
    with SharedMemory(tmp_path / "home") as m:
        yield m


def fill(m: SharedMemory, agent: str = "ops", scope: str = "shared") -> dict[str, str]:
    return {
        key: m.write(text, agent=agent, scope=scope, kind="note", metadata={"topic": key}).id
        for key, text in NOTES.items()
    }


def ids(result) -> list[str]:
    return [h.artifact.id for h in result.hits]


def test_the_public_surface_resolves() -> None:
    for name in memory_api.__all__:
        assert getattr(memory_api, name) is not None, name


class TestRoundTrip:
    def test_write_get_search(self, memory: SharedMemory) -> None:
        a = memory.write(
            "Deploy checklist: run the smoke tests first",
            agent="alice",
            scope="shared",
            kind="checklist",
            tags=["deploy"],
            metadata={"service": "api", "priority": 2},
            run_id="r1",
        )
        got = memory.get(a.id, agent="bob")
        assert (got.text, got.agent, got.scope, got.kind, got.tags, got.metadata, got.run_id) == (
            a.text,
            "alice",
            "shared",
            "checklist",
            ["deploy"],
            {"service": "api", "priority": 2},
            "r1",
        )
        result = memory.search("smoke tests", agent="bob")
        assert result.mode == "hybrid" and result.degraded is None and ids(result) == [a.id]
        hit = result.hits[0]
        assert hit.lexical == 1.0 and hit.semantic is not None and 0 < hit.score <= 1

    def test_filters_by_kind_author_and_metadata(self, memory: SharedMemory) -> None:
        written = fill(memory)
        other = memory.write(
            "Restart the nginx web server when it hangs",
            agent="web",
            scope="shared",
            kind="runbook",
            metadata={"topic": "nginx"},
        )
        everything = ids(memory.search("restart nginx web server", agent="x"))
        assert written["nginx"] in everything and other.id in everything
        assert ids(memory.search("restart nginx web server", agent="x", kind="runbook")) == [other.id]
        assert other.id not in ids(memory.search("restart nginx web server", agent="x", author="ops"))
        only = memory.search("restart the web server", agent="x", metadata={"topic": "nginx"}, author="ops")
        assert ids(only) == [written["nginx"]]
        assert memory.search("restart nginx", agent="x", metadata={"topic": "nothing"}).hits == []

    def test_limit_and_order(self, memory: SharedMemory) -> None:
        for i in range(12):
            memory.write(f"deployment note number {i} about the release", agent="a", scope="shared")
        result = memory.search("deployment release", agent="a", limit=5)
        assert len(result.hits) == 5
        assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)

    def test_a_repeated_id_is_idempotent_and_a_conflicting_one_refused(self, memory: SharedMemory) -> None:
        first = memory.write("the build is green", agent="ci", scope="shared", id="run1-step3")
        again = memory.write("the build is green", agent="ci", scope="shared", id="run1-step3")
        assert again.id == first.id and again.created == first.created and memory.store.count() == 1
        with pytest.raises(StoreError, match="already taken"):
            memory.write("the build is red", agent="ci", scope="shared", id="run1-step3")

    def test_delete_is_a_logged_operator_action(self, memory: SharedMemory) -> None:
        """Deleting names the operator (and a reason), lands in the operator log, and an unknown id deletes nothing."""
        a = memory.write("temporary note about the cache", agent="alice", scope="shared")
        assert memory.delete("no-such-id", operator="ops") is False
        with pytest.raises(UsageError, match="operator"):
            memory.delete(a.id, operator=" ")
        assert memory.delete(a.id, operator="ops", reason="wrong cluster") is True
        with pytest.raises(StoreError):
            memory.get(a.id, agent="alice")
        assert memory.search("temporary note cache", agent="alice").hits == []
        [entry] = memory.store.operator_log()
        assert (entry["action"], entry["artifact"], entry["operator"], entry["reason"]) == (
            "delete",
            a.id,
            "ops",
            "wrong cluster",
        )
        assert entry["detail"]["author"] == "alice"


class TestScopes:
    def test_an_agent_never_sees_another_agents_private_notes(self, memory: SharedMemory) -> None:
        secret = memory.write(
            "Alice's private plan: migrate the billing database on Sunday", agent="alice", scope="private"
        )
        shared = memory.write(
            "Team announcement: the billing database migrates on Sunday", agent="alice", scope="shared"
        )
        own = memory.write("Bob's private reminder about the billing database", agent="bob", scope="private")
        query = "private plan migrate the billing database on Sunday"
        for mode in ("hybrid", "lexical"):
            bob = memory.search(query, agent="bob", mode=mode)
            assert secret.id not in ids(bob) and shared.id in ids(bob) and own.id in ids(bob)
            assert secret.id not in ids(memory.search(query, agent="bob", scope="private", mode=mode))
            anonymous = memory.search(query, agent=None, mode=mode)
            assert ids(anonymous) == [shared.id]
            alice = memory.search(query, agent="alice", mode=mode)
            assert secret.id in ids(alice) and own.id not in ids(alice)
        assert ids(memory.search(query, agent="alice", scope="private")) == [secret.id]
        assert ids(memory.search(query, agent="alice", scope="shared")) == [shared.id]
        # Asking for another agent's note by id is answered exactly like asking for one that does not exist.
        with pytest.raises(StoreError) as hidden:
            memory.get(secret.id, agent="bob")
        with pytest.raises(StoreError) as missing:
            memory.get("no-such-id", agent="bob")
        assert str(hidden.value).replace(secret.id, "ID") == str(missing.value).replace("no-such-id", "ID")
        assert memory.get(secret.id, agent="alice").text == secret.text
        with pytest.raises(UsageError, match="private notes are read by their author"):
            memory.search(query, agent=None, scope="private")

    def test_naming_the_author_does_not_open_private_notes(self, memory: SharedMemory) -> None:
        secret = memory.write("alice keeps the rollback steps here", agent="alice", scope="private")
        assert memory.search("rollback steps", agent="bob", author="alice").hits == []
        assert ids(memory.search("rollback steps", agent="alice", author="alice")) == [secret.id]

    def test_visible_items_are_found_behind_hundreds_of_closer_invisible_ones(self, home: Path) -> None:
        """Both searches first rank without the visibility filter; when too few visible items survive they ask
        again with the filter inside FTS5 / chromadb, so a reader still gets its exact best matches."""
        from sherpa_skills.semantic.companion import Companion
        from sherpa_skills.semantic.embeddings import HashingEmbedder

        with SharedMemory(home, companion=Companion(home / "companion", embedder=HashingEmbedder())) as m:
            # Varied texts: chromadb (1.5.9) HNSW can lose an item among hundreds of near-identical vectors.
            words = (
                "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega cache queue disk node pod host "
                "port proxy worker daemon socket thread"
            ).split()
            m.write_many(
                [
                    m.store.prepare(
                        f"restart web server now {' '.join(random.Random(i).sample(words, 6))}",
                        agent="alice",
                        scope="private",
                    )
                    for i in range(260)
                ]
            )
            mine = m.write("please restart the web server gently", agent="bob", scope="shared")
            # Indexed in one pass: chromadb 1.5.9 sometimes hides a write made after a read from that client's HNSW
            # queries (until reopened); not what this test is about.
            m.reindex()
            result = m.search("restart web server now", agent="bob", limit=3)
            assert ids(result) == [mine.id]
            assert result.hits[0].lexical == 1.0 and result.hits[0].semantic > SEMANTIC_FLOOR
            assert len(m.search("restart web server now", agent="alice", limit=3).hits) == 3


class TestMeaning:
    def test_a_paraphrase_without_shared_words_finds_its_artifact(self, memory: SharedMemory) -> None:
        written = fill(memory)
        result = memory.search("reboot the http daemon once you edit its settings", agent="x")
        assert result.mode == "hybrid" and result.hits[0].artifact.id == written["nginx"]
        assert result.hits[0].lexical == 0.0 and result.hits[0].semantic >= SEMANTIC_FLOOR
        lexical = memory.search("reboot the http daemon once you edit its settings", agent="x", mode="lexical")
        assert lexical.mode == "lexical" and lexical.degraded is None and written["nginx"] not in ids(lexical)

    def test_unrelated_neighbours_are_not_hits(self, memory: SharedMemory) -> None:
        fill(memory)
        assert memory.search("quantum chromodynamics lattice gauge theory", agent="x").hits == []

    def test_words_and_meaning_together_rank_first(self, memory: SharedMemory) -> None:
        both = memory.write("Rotate the database password every ninety days", agent="a", scope="shared")
        words_only = memory.write(
            "The word database appears in this sentence about gardening tomatoes", agent="a", scope="shared"
        )
        meaning_only = memory.write(
            "Change the credentials of the SQL server on a regular schedule", agent="a", scope="shared"
        )
        memory.write("Water the tomatoes in the garden every morning", agent="a", scope="shared")
        result = memory.search("rotate database credentials regularly", agent="a")
        order = ids(result)
        assert order[0] == both.id
        assert order.index(meaning_only.id) < order.index(words_only.id)
        by_id = {h.artifact.id: h for h in result.hits}
        assert by_id[meaning_only.id].semantic > by_id[words_only.id].semantic

    def test_the_hybrid_formula(self) -> None:
        """bm25 scaled by this query's best; cosine kept absolute, ignored under the floor; 0.6/0.4 weights."""
        scored = hybrid({"a": 8.0, "b": 2.0}, {"a": 0.5, "c": 0.9, "d": 0.1})
        assert scored["a"] == pytest.approx((SEMANTIC_WEIGHT * 0.5 + (1 - SEMANTIC_WEIGHT) * 1.0, 1.0, 0.5))
        assert scored["b"] == pytest.approx(((1 - SEMANTIC_WEIGHT) * 0.25, 0.25, 0.0))
        assert scored["c"] == pytest.approx((SEMANTIC_WEIGHT * 0.9, 0.0, 0.9))
        assert "d" not in scored  # under the floor and no word in common: not a hit
        assert hybrid({"a": 3.0, "b": 1.5}, None) == {"a": (1.0, 1.0, None), "b": (0.5, 0.5, None)}
        assert hybrid({}, {}) == {}


def test_searches_from_threads_at_once_rank_as_one_at_a_time(home: Path) -> None:
    """The companion lookup runs in a worker while SQLite ranks the words: concurrent searches (each thread with its
    own SharedMemory, as `shared_memory` gives) return what a lone search does, and close() ends the worker."""
    import threading

    with SharedMemory(home) as m:
        fill(m)
    queries = ["reboot the http daemon once you edit its settings", "renew certificate website", "cake party"]
    with SharedMemory(home) as lone:
        expected = {
            q: [(h.artifact.id, round(h.score, 9)) for h in lone.search(q, agent="x", touch=False).hits]
            for q in queries
        }
    found: dict[tuple[int, str], list[tuple[str, float]]] = {}

    def run(worker: int) -> None:
        with SharedMemory(home) as m:
            for q in queries * 3:
                found[worker, q] = [
                    (h.artifact.id, round(h.score, 9)) for h in m.search(q, agent="x", touch=False).hits
                ]

    threads = [threading.Thread(target=run, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(found[w, q] == expected[q] for w in range(3) for q in queries) and expected[queries[0]]
    assert not [t for t in threading.enumerate() if t.name.startswith("memory-lookup")]


def corrupt(home: Path) -> None:
    (home / "companion" / "chroma.sqlite3").write_bytes(b"this is not a database " * 4096)


class TestFallback:
    @pytest.mark.parametrize("damage", ["corrupt", "delete"])
    def test_a_broken_companion_degrades_to_lexical_and_reindex_restores_meaning(
        self, tmp_path: Path, home: Path, damage: str
    ) -> None:
        with SharedMemory(home) as m:
            written = fill(m)
        if damage == "corrupt":
            corrupt(home)
        else:
            shutil.rmtree(home / "companion")
        paraphrase = "reboot the http daemon once you edit its settings"
        with SharedMemory(home) as m:
            result = m.search(paraphrase + " nginx", agent="x")
            assert result.mode == "lexical" and result.degraded and "lexical only" in result.degraded
            assert ("not a database" if damage == "corrupt" else "does not exist") in result.degraded
            assert ids(result) == [written["nginx"]] and result.hits[0].semantic is None
            assert m.search(paraphrase, agent="x").hits == []  # meaning is what is missing
            late = m.write("Flush the CDN cache after publishing new images", agent="ops", scope="shared")
            assert m.companion_problem and m.store.pending() == 1  # stored in the truth, indexing waits
            assert m.stats()["companion"]["ok"] is False
            report = m.reindex()
            assert report["artifacts"] == 5 and report["pending"] == 0
            assert (report["moved_aside"] is not None) == (damage == "corrupt")
            restored = m.search(paraphrase, agent="x")
            assert (
                restored.mode == "hybrid"
                and restored.degraded is None
                and restored.hits[0].artifact.id == written["nginx"]
            )
            assert m.search("purge the content delivery network", agent="x").hits[0].artifact.id == late.id
            stats = m.stats()
            assert (
                stats["companion"]["ok"] and stats["companion"]["items"] == 5 and stats["companion"]["reason"] is None
            )
        if damage == "corrupt":
            kept = list(tmp_path.glob("home/companion.broken-*"))
            assert len(kept) == 1 and (kept[0] / "chroma.sqlite3").read_bytes().startswith(b"this is not a database")

    def test_an_unconfigured_home_with_nothing_stored_is_not_degraded(self, memory: SharedMemory) -> None:
        result = memory.search("anything at all", agent="a")
        assert (result.mode, result.degraded, result.hits) == ("hybrid", None, [])


PLANTED = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


class TestSafety:
    def test_secrets_never_reach_any_file(self, home: Path) -> None:
        with SharedMemory(home) as m:
            a = m.write(
                f"deploy with: export GITHUB_TOKEN={PLANTED} then push",
                agent="ops",
                scope="shared",
                kind="runbook",
                tags=["deploy"],
                metadata={"api_key": PLANTED, "note": f"token {PLANTED}"},
            )
            assert PLANTED not in a.text and "[REDACTED]" in a.text
            assert a.metadata["api_key"] == "[REDACTED]" and PLANTED not in a.metadata["note"]
            assert m.search("deploy push", agent="ops").hits[0].artifact.id == a.id
            m.reindex()
        files = [p for p in home.rglob("*") if p.is_file()]
        assert any(p.name == "store.db" for p in files) and any("companion" in p.parts for p in files)
        for path in files:
            assert PLANTED.encode() not in path.read_bytes(), path

    def test_bad_input_is_refused_clearly_and_stores_nothing(self, memory: SharedMemory) -> None:
        cases = [
            (dict(text=""), "text is empty"),
            (dict(text="   \n"), "text is empty"),
            (dict(text="x" * (MAX_TEXT_BYTES + 1)), "over the 1,048,576-byte limit"),
            (dict(text="é" * (MAX_TEXT_BYTES // 2 + 1)), "over the 1,048,576-byte limit"),
            (dict(text="ok", scope="public"), "scope 'public' is not one of: private, shared"),
            (dict(text="ok", agent=""), "writing agent's name must be a non-empty string"),
            (dict(text="ok", metadata={"when": object()}), "metadata must be plain JSON"),
            (dict(text="ok", metadata=["a"]), "metadata must be a mapping"),
            (dict(text=123), "text must be a string"),
        ]
        for kwargs, message in cases:
            args = {"agent": "a", "scope": "shared", **kwargs}
            with pytest.raises(UsageError, match=message):
                memory.write(**args)
        assert memory.store.count() == 0
        memory.write("x" * (MAX_TEXT_BYTES - 10), agent="a")  # just under the limit is fine
        for kwargs, message in [
            (dict(query=""), "query is empty"),
            (dict(query="x", limit=0), "limit must be"),
            (dict(query="x", scope="public"), "scope 'public'"),
            (dict(query="x", metadata={"a-b": 1}), "filter key"),
            (dict(query="x", metadata={"a": [1]}), "must compare with"),
            (dict(query="x", mode="vector"), "mode 'vector'"),
        ]:
            with pytest.raises(UsageError, match=message):
                memory.search(**{"agent": "a", **kwargs})

    def test_fts_syntax_in_a_query_is_just_words(self, memory: SharedMemory) -> None:
        a = memory.write("NEAR the AND gate, OR not", agent="a", scope="shared")
        for query in ['"unbalanced', "NEAR(a b", "a* OR -b", "column:text", "AND OR NOT"]:
            memory.search(query, agent="a")  # never an FTS5 syntax error
        assert ids(memory.search('gate"', agent="a", mode="lexical")) == [a.id]

    def test_the_truth_is_one_set_of_tables_in_store_db(self, memory: SharedMemory) -> None:
        memory.write("a note", agent="a")
        conn = sqlite3.connect(memory.store.path)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"memory_artifacts", "memory_fts", "memory_meta"} <= tables
        assert conn.execute("SELECT name FROM _migrations WHERE component = 'memory'").fetchall() == [
            ("m001_memory",),
            ("m002_hygiene",),
        ]
        conn.close()
