"""Memory that stays clean: exact and near duplicates, supersede chains, decay tiers, tensions, the operator's
delete, stats and export; through the API, the actions and the CLI, on a real store and a real companion."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow
from sherpa_skills.errors import UsageError
from sherpa_skills.memory import SharedMemory
from sherpa_skills.memory._hygiene import contradiction, normalise, tier

DAY = 86400.0


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[SharedMemory]:
    with SharedMemory(tmp_path / "home") as m:
        yield m


def aged(m: SharedMemory, text: str, days: float, **kw) -> str:
    """An artifact written `days` ago (and not touched since)."""
    kw.setdefault("agent", "ops")
    kw.setdefault("scope", "shared")
    [a] = m.write_many([m.store.prepare(text, created=time.time() - days * DAY, **kw)])
    return a.id


class TestExactDuplicates:
    def test_a_second_identical_write_returns_the_first_and_counts_it(self, memory: SharedMemory) -> None:
        first = memory.remember("Deploys go to ci-9.", agent="ops", scope="shared")
        again = memory.remember("  deploys   go to CI-9 ", agent="ops", scope="shared")
        assert again.duplicate and again.artifact.id == first.artifact.id and again.artifact.seen == 2
        assert again.artifact.last_seen >= first.artifact.created
        assert memory.store.count() == 1
        assert memory.get(first.artifact.id, agent="ops").seen == 2

    def test_dedup_stays_within_scope_owner_and_kind(self, memory: SharedMemory) -> None:
        """Two agents' identical private notes are two notes; shared duplicates merge whoever writes them."""
        a = memory.write("check the disk before deploying", agent="alice")
        b = memory.write("check the disk before deploying", agent="bob")
        s1 = memory.write("check the disk before deploying", agent="alice", scope="shared")
        s2 = memory.write("check the disk before deploying", agent="bob", scope="shared")
        k = memory.write("check the disk before deploying", agent="bob", scope="shared", kind="runbook")
        assert len({a.id, b.id, s1.id, k.id}) == 4 and s2.id == s1.id
        assert memory.store.count() == 4
        # bob's duplicate of a shared note never reveals alice's private one
        assert [
            h.artifact.id for h in memory.search("check the disk", agent="bob", scope="private", mode="lexical").hits
        ] == [b.id]

    def test_through_the_action_and_the_cli(
        self, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        wf = tmp_path / "w.yaml"
        wf.write_text(
            """
name: w
initial: s
states:
  s:
    on_enter:
      - memory_write: {text: "the runner needs 8 GB", scope: shared}
        save_as: one
      - memory_write: {text: "The runner needs 8 GB.", scope: shared}
        save_as: two
    final: true
""",
            encoding="utf-8",
        )
        store = RunStore(home=home)
        try:
            ctx = load_workflow(wf).agent(store=store, name="ops").run().context
        finally:
            store.close()
        assert ctx["two"]["duplicate"] and ctx["two"]["id"] == ctx["one"]["id"] and ctx["two"]["seen"] == 2
        assert (
            main(
                [
                    "memory",
                    "write",
                    "the runner needs 8 gb",
                    "--agent",
                    "ops",
                    "--shared",
                    "--json",
                    "--home",
                    str(home),
                ]
            )
            == 0
        )
        out = json.loads(capsys.readouterr().out)
        assert out["duplicate"] and out["seen"] == 3 and out["id"] == ctx["one"]["id"]
        assert main(["memory", "stats", "--json", "--home", str(home)]) == 0
        assert json.loads(capsys.readouterr().out)["duplicates_merged"] == 2


class TestNearDuplicates:
    FIRST = "Run the database migrations before deploying the release"
    SECOND = "Before deploying the release, run the database migrations"

    def test_flagged_by_default(self, memory: SharedMemory) -> None:
        first = memory.write(self.FIRST, agent="ops", scope="shared")
        second = memory.remember(self.SECOND, agent="ops", scope="shared")
        assert not second.duplicate and second.artifact.id != first.id
        assert [i for i, _ in second.near] == [first.id] and second.near[0][1] >= 0.9 and second.linked == []

    def test_linked_or_merged_as_the_caller_chooses(self, memory: SharedMemory) -> None:
        first = memory.write(self.FIRST, agent="ops", scope="shared")
        linked = memory.remember(self.SECOND, agent="ops", scope="shared", on_near="link")
        assert linked.linked == [first.id]
        assert {(link["src"], link["dst"], link["relation"]) for link in memory.store.links(first.id)} == {
            (linked.artifact.id, first.id, "near_duplicate")
        }
        merged = memory.remember(
            "Run database migrations before you deploy the release", agent="ops", scope="shared", on_near="merge"
        )
        assert merged.merged_into in {first.id, linked.artifact.id} and memory.store.count() == 2
        assert merged.artifact.seen == 2

    def test_not_across_scopes_owners_or_kinds_and_never_a_contradiction(self, memory: SharedMemory) -> None:
        memory.write(self.FIRST, agent="alice")  # alice's private note: not bob's near-duplicate
        memory.write(self.FIRST, agent="ops", scope="shared", kind="runbook")
        assert memory.remember(self.SECOND, agent="bob", scope="shared").near == []
        memory.write("the cache is thread safe", agent="ops", scope="shared", abstraction="pattern")
        negated = memory.remember(
            "the cache is not thread safe", agent="ops", scope="shared", abstraction="pattern", on_near="merge"
        )
        assert negated.merged_into is None and negated.near == [] and len(negated.tensions) == 1

    def test_bad_choice_is_refused(self, memory: SharedMemory) -> None:
        with pytest.raises(UsageError, match="on_near 'drop' is not one of: flag, link, merge"):
            memory.remember("x y", agent="ops", on_near="drop")
        assert memory.store.count() == 0


class TestSupersede:
    def test_search_returns_the_newest_and_history_the_chain(
        self, memory: SharedMemory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        old = memory.write("deploys go to ci-7", agent="ops", scope="shared")
        new = memory.remember(
            "deploys go to ci-9, not ci-7 any more", agent="ops", scope="shared", supersedes=old.id
        ).artifact
        assert new.supersedes == old.id and memory.get(old.id, agent="ops").superseded_by == new.id
        assert [h.artifact.id for h in memory.search("where do deploys go", agent="ops").hits] == [new.id]
        with_history = memory.search("where do deploys go", agent="ops", history=True).hits
        assert {h.artifact.id for h in with_history} == {old.id, new.id}
        assert [a.id for a in memory.store.chain(old.id, agent="ops")] == [new.id, old.id]
        home = str(tmp_path / "home")
        assert main(["memory", "history", old.id, "--json", "--home", home]) == 0
        assert [a["id"] for a in json.loads(capsys.readouterr().out)] == [new.id, old.id]
        assert main(["memory", "search", "deploys ci", "--history", "--lexical", "--home", home]) == 0
        assert f"superseded by {new.id}" in capsys.readouterr().out

    def test_from_the_cli(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        home = str(tmp_path / "home")
        assert (
            main(
                [
                    "memory",
                    "write",
                    "the API rate limit is 100 per minute",
                    "--agent",
                    "ops",
                    "--shared",
                    "--json",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        old = json.loads(capsys.readouterr().out)["id"]
        assert (
            main(
                [
                    "memory",
                    "write",
                    "the API rate limit is 300 per minute",
                    "--agent",
                    "ops",
                    "--shared",
                    "--supersedes",
                    old,
                    "--json",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        new = json.loads(capsys.readouterr().out)
        assert new["supersedes"] == old and new["tensions"] == []  # the correction settles it: no tension left open
        assert main(["memory", "search", "API rate limit", "--json", "--home", home]) == 0
        assert [h["id"] for h in json.loads(capsys.readouterr().out)["hits"]] == [new["id"]]

    def test_refusals(self, memory: SharedMemory, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Another agent's private note, an unknown id, an already replaced one, and hiding a shared fact privately."""
        secret = memory.write("alice's private rule: deploy at 9", agent="alice")
        shared = memory.write("deploy window opens at 9", agent="ops", scope="shared")
        with pytest.raises(UsageError, match="no artifact"):
            memory.remember("deploy at 10", agent="bob", supersedes=secret.id)
        with pytest.raises(UsageError, match="no artifact"):
            memory.remember("deploy at 10", agent="bob", supersedes="nope")
        with pytest.raises(UsageError, match="a private note cannot supersede it"):
            memory.remember("deploy window opens at 10", agent="bob", supersedes=shared.id)
        memory.remember("deploy window opens at 10", agent="bob", scope="shared", supersedes=shared.id)
        with pytest.raises(UsageError, match="already superseded by"):
            memory.remember("deploy window opens at 11", agent="bob", scope="shared", supersedes=shared.id)
        assert memory.get(secret.id, agent="alice").superseded_by is None
        assert (
            main(
                ["memory", "write", "x", "--agent", "bob", "--supersedes", secret.id, "--home", str(tmp_path / "home")]
            )
            == 2
        )
        assert "no artifact" in capsys.readouterr().err


class TestDecay:
    def test_tiers_and_their_modifiers(self) -> None:
        now = time.time()
        assert tier(now - 3 * DAY, now=now) == "hot"
        assert tier(now - 10 * DAY, now=now) == "warm"
        assert tier(now - 31 * DAY, now=now) == "cold"
        assert tier(now - 5 * DAY, confidence=0.3, now=now) == "warm"  # doubt decays twice as fast
        assert tier(now - 50 * DAY, reads=5, now=now) == "warm"  # use resists decay
        assert tier(now - 900 * DAY, abstraction="principle", now=now) == "hot"

    def test_a_stale_note_ranks_below_a_fresh_one_and_cold_is_still_found(self, memory: SharedMemory) -> None:
        stale = aged(memory, "deploys go to ci-7 for the web service", 40)
        fresh = aged(memory, "deploys go to ci-9 for the web service", 1)
        hits = memory.search("deploys web service", agent="ops", mode="lexical").hits
        assert [h.artifact.id for h in hits] == [fresh, stale]
        assert hits[1].to_dict()["tier"] == "cold" and hits[0].score > hits[1].score
        principle = aged(memory, "never deploy the web service on Fridays", 400, abstraction="principle")
        assert memory.get(principle, agent="ops").tier() == "hot"

    def test_being_found_warms_a_note_again(self, memory: SharedMemory) -> None:
        stale = aged(memory, "the backup job runs at 02:00", 40)
        assert memory.get(stale, agent="ops").tier() == "cold"
        memory.search("backup job", agent="ops", mode="lexical")
        again = memory.get(stale, agent="ops")
        assert again.tier() == "hot" and again.reads == 1

    def test_apply_decay_stores_tiers_and_counts_moves(self, memory: SharedMemory) -> None:
        aged(memory, "an old episode about the cache", 40)
        aged(memory, "a recent episode about the queue", 2)
        report = memory.store.apply_decay()
        assert report["tiers"] == {"hot": 1, "warm": 0, "cold": 1} and report["moved"] == {"hot→cold": 1}
        assert memory.store.apply_decay()["moved"] == {}


class TestTensions:
    def test_rules(self) -> None:
        assert "ci-7 → ci-9" in contradiction("deploys go to ci-9", "deploys go to ci-7")
        assert contradiction("deploys go to ci-9, not ci-7 any more", "deploys go to ci-7")
        assert "negates" in contradiction("the cache is not thread safe", "the cache is thread safe")
        assert contradiction("nginx restarts on Monday", "postgres backups run nightly") is None
        assert contradiction("deploys go to ci-7", "Deploys go to ci-7") is None
        assert normalise("  Deploys  GO to ci-7. ") == "deploys go to ci-7"

    def test_recorded_listed_and_resolved_through_the_cli(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        home = str(tmp_path / "home")
        assert (
            main(
                [
                    "memory",
                    "write",
                    "deploys go to ci-7",
                    "--agent",
                    "ops",
                    "--shared",
                    "--abstraction",
                    "pattern",
                    "--json",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        old = json.loads(capsys.readouterr().out)["id"]
        assert (
            main(
                [
                    "memory",
                    "write",
                    "deploys go to ci-9",
                    "--agent",
                    "dev",
                    "--shared",
                    "--abstraction",
                    "pattern",
                    "--json",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        new = json.loads(capsys.readouterr().out)
        [t] = new["tensions"]
        assert (t["a"], t["b"]) == (old, new["id"]) and "ci-7 → ci-9" in t["reason"]
        assert main(["memory", "tensions", "--json", "--home", home]) == 0
        [listed] = json.loads(capsys.readouterr().out)
        assert listed["id"] == t["id"] and listed["a"]["text"] == "deploys go to ci-7"
        assert main(["memory", "stats", "--json", "--home", home]) == 0
        assert json.loads(capsys.readouterr().out)["open_tensions"] == 1
        assert main(["memory", "resolve", t["id"], "--keep", "nope", "--agent", "ops", "--home", home]) == 2
        assert "keep one of them" in capsys.readouterr().err
        assert (
            main(["memory", "resolve", t["id"], "--keep", new["id"], "--agent", "ops", "--json", "--home", home]) == 0
        )
        assert json.loads(capsys.readouterr().out)["superseded"] == old
        assert main(["memory", "tensions", "--json", "--home", home]) == 0
        assert json.loads(capsys.readouterr().out) == []
        assert main(["memory", "search", "where do deploys go", "--json", "--home", home]) == 0
        assert [h["id"] for h in json.loads(capsys.readouterr().out)["hits"]] == [new["id"]]
        assert main(["memory", "resolve", t["id"], "--keep", new["id"], "--agent", "ops", "--home", home]) == 2
        assert "already resolved" in capsys.readouterr().err

    def test_write_and_tensions_print_plain_text_without_markup(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Off a terminal the lines are plain words:
        no `[yellow]…[/]` tags, and brackets in the facts themselves survive."""
        home = str(tmp_path / "home")
        assert (
            main(
                [
                    "memory",
                    "write",
                    "deploys go to ci-7 [prod]",
                    "--agent",
                    "ops",
                    "--shared",
                    "--abstraction",
                    "pattern",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        capsys.readouterr()
        assert (
            main(
                [
                    "memory",
                    "write",
                    "deploys go to ci-9 [prod]",
                    "--agent",
                    "dev",
                    "--shared",
                    "--abstraction",
                    "pattern",
                    "--home",
                    home,
                ]
            )
            == 0
        )
        written = capsys.readouterr().out
        assert re.search(r"^tension [0-9a-f]{12} with [0-9a-f]{16}: changed value", written, re.M), written
        assert main(["memory", "tensions", "--home", home]) == 0
        listed = capsys.readouterr().out
        assert re.search(r"^[0-9a-f]{12} open shared: changed value", listed, re.M), listed
        assert "deploys go to ci-7 [prod]" in listed and "deploys go to ci-9 [prod]" in listed
        for out in (written, listed):
            assert not re.search(r"\[/?(yellow|bold|dim|red|green|cyan)?\]", out.replace("[prod]", "")), out

    def test_private_tensions_stay_private_and_episodes_are_not_checked(self, memory: SharedMemory) -> None:
        memory.write("my build uses python 3.10", agent="alice", abstraction="pattern")
        mine = memory.remember("my build uses python 3.12", agent="alice", abstraction="pattern")
        assert len(mine.tensions) == 1
        assert memory.store.tensions(agent="bob") == [] and memory.store.tensions(agent=None) == []
        assert len(memory.store.tensions(agent="alice")) == 1
        with pytest.raises(UsageError, match="no tension"):
            memory.store.resolve(mine.tensions[0]["id"], mine.artifact.id, agent="bob")
        assert (
            memory.remember("my build uses python 3.11", agent="bob", abstraction="pattern").tensions == []
        )  # not alice's
        memory.write("build 41 passed", agent="ci", scope="shared")
        assert memory.remember("build 42 passed", agent="ci", scope="shared").tensions == []


class TestStatsExportAndUpgrade:
    def test_export_is_scoped_and_stats_count_tiers(
        self, memory: SharedMemory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        aged(memory, "shared and cold", 45)
        memory.write("alice's own note", agent="alice")
        memory.write("bob's own note", agent="bob")
        home = str(tmp_path / "home")
        assert main(["memory", "export", "--agent", "alice", "--home", home]) == 0
        texts = [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()]
        assert texts == ["shared and cold", "alice's own note"]
        assert main(["memory", "export", "--home", home]) == 0
        assert [json.loads(line)["tier"] for line in capsys.readouterr().out.splitlines()] == ["cold"]
        assert main(["memory", "stats", "--json", "--home", home]) == 0
        assert json.loads(capsys.readouterr().out)["per_tier"] == {"hot": 2, "warm": 0, "cold": 1}
        assert main(["memory", "stats", "--home", home]) == 0
        assert "2 hot, 0 warm, 1 cold" in capsys.readouterr().out

    def test_delete_from_the_cli_names_the_operator(
        self, memory: SharedMemory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        a = memory.write("wrong: the key is in the wiki", agent="ops", scope="shared")
        home = str(tmp_path / "home")
        with pytest.raises(SystemExit) as usage:
            main(["memory", "delete", a.id, "--home", home])
        assert usage.value.code == 2 and "--operator" in capsys.readouterr().err
        assert main(["memory", "delete", a.id, "--operator", "sam", "--reason", "leaked location", "--home", home]) == 0
        assert main(["memory", "delete", a.id, "--operator", "sam", "--home", home]) == 2
        assert "no artifact" in capsys.readouterr().err

    def test_a_home_written_by_the_previous_schema_upgrades_in_place(self, home: Path) -> None:
        """The first version's tables and rows (with a duplicate pair) gain the new columns; nothing is lost."""
        conn = sqlite3.connect(home / "store.db")
        from sherpa_skills.memory._schema import m001_memory

        conn.execute(
            "CREATE TABLE _migrations (component TEXT, name TEXT, applied REAL DEFAULT (strftime('%s','now')),"
            " PRIMARY KEY (component, name))"
        )
        m001_memory(conn)
        conn.execute("INSERT INTO _migrations (component, name) VALUES ('memory', 'm001_memory')")
        old = time.time() - 60 * DAY
        for n, text in enumerate(["Deploys go to ci-7", "deploys go to ci-7", "the queue is on redis"]):
            conn.execute(
                "INSERT INTO memory_artifacts (id, agent, scope, kind, tags, metadata, text, created)"
                " VALUES (?, 'ops', 'shared', NULL, '[]', '{}', ?, ?)",
                (f"old{n}", text, old),
            )
        conn.commit()
        conn.close()
        with SharedMemory(home) as m:
            assert m.store.count() == 3
            hits = m.search("queue redis", agent="ops", mode="lexical").hits
            assert [h.artifact.id for h in hits] == ["old2"]
            assert m.get("old0", agent="ops").tier() == "cold"
            again = m.remember("deploys go to ci-7", agent="ops", scope="shared")
            assert again.duplicate and again.artifact.id in {"old0", "old1"}


class TestLlmTensionCheck:
    SCRIPT = """
answers:
  - match: "Older note: the sessions live in redis.*Newer note: the sessions are kept in postgres"
    respond: {contradicts: true, reason: "one store or the other"}
  - match: "Newer note: the sessions table is garbage"
    respond: "not json at all"
default: '{"contradicts": false, "reason": "compatible"}'
"""

    def test_related_facts_no_rule_flags_are_asked_and_a_bad_answer_is_skipped(
        self, memory: SharedMemory, tmp_path: Path
    ) -> None:
        script = tmp_path / "judge.yaml"
        script.write_text(self.SCRIPT, encoding="utf-8")
        model = f"scripted/{script}"
        old = memory.write("the sessions live in redis", agent="ops", scope="shared", abstraction="pattern")
        assert (
            memory.remember(
                "sessions are kept in postgres", agent="ops", scope="shared", abstraction="pattern"
            ).tensions
            == []
        )
        judged = memory.remember(
            "the sessions are kept in postgres", agent="ops", scope="shared", abstraction="pattern", tension_model=model
        )
        assert [t["a"] for t in judged.tensions] == [old.id] and "one store or the other" in judged.tensions[0][
            "reason"
        ]
        bad = memory.remember(
            "the sessions table is garbage collected nightly",
            agent="ops",
            scope="shared",
            abstraction="pattern",
            tension_model=model,
        )
        assert bad.tensions == [] and any("not {contradicts, reason} JSON" in s for s in bad.skipped)
        unrelated = memory.remember(
            "bake a cake for Friday", agent="ops", scope="shared", abstraction="pattern", tension_model=model
        )
        assert unrelated.tensions == [] and unrelated.skipped == []


class TestThroughTheActions:
    def test_supersede_history_and_tensions_from_a_workflow(self, tmp_path: Path) -> None:
        """memory_write's supersedes/abstraction and memory_search's history, as an agent runs them."""
        wf = tmp_path / "w.yaml"
        wf.write_text(
            """
name: w
initial: s
states:
  s:
    on_enter:
      - memory_write: {text: "backups run at 02:00", scope: shared, abstraction: pattern, confidence: 0.9,
                       category: ops}
        save_as: old
      - memory_write: {text: "backups run at 04:00", scope: shared, abstraction: pattern}
        save_as: clash
      - memory_write: {text: "backups run at 03:00", scope: shared, abstraction: pattern, supersedes: "{{ old.id }}"}
        save_as: fix
      - memory_search: {query: "when do backups run", mode: lexical}
        save_as: now
      - memory_search: {query: "when do backups run", mode: lexical, history: true}
        save_as: all
    final: true
""",
            encoding="utf-8",
        )
        store = RunStore(home=tmp_path / "home")
        try:
            result = load_workflow(wf).agent(store=store, name="ops").run()
        finally:
            store.close()
        assert result.status == "final", result.error
        ctx = result.context
        assert ctx["clash"]["tensions"][0]["a"] == ctx["old"]["id"]
        assert ctx["fix"]["supersedes"] == ctx["old"]["id"]
        now = {h["id"] for h in ctx["now"]["hits"]}
        assert ctx["old"]["id"] not in now and ctx["fix"]["id"] in now
        old_hit = next(h for h in ctx["all"]["hits"] if h["id"] == ctx["old"]["id"])
        assert (
            old_hit["superseded_by"] == ctx["fix"]["id"]
            and old_hit["confidence"] == 0.9
            and old_hit["category"] == "ops"
        )
        with SharedMemory(tmp_path / "home") as m:  # the replaced fact's tension is settled; the correction has its own
            assert [(t["a"]["id"], t["b"]["id"]) for t in m.store.tensions(agent="ops")] == [
                (ctx["clash"]["id"], ctx["fix"]["id"])
            ]
            [settled] = m.store.tensions(agent="ops", status="resolved")
            assert (settled["a"]["id"], settled["resolved_by"]) == (ctx["old"]["id"], "supersede")
