"""A matcher reads only the aliases written since it last read them (m017: each row carries the answers' version at
its last write, removals are counted; the store's side: tests/skills/test_store_contract.py). What it keeps must
still follow every change another store makes: a new alias, an agent's alias a person adopts (an update, not an
insert), a removal."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import sherpa_skills as sk
from sherpa_skills.skills.match.alias_table import AliasTable, AliasViews

MALLORY = "agent:mallory"
BACKUP_ASK = "take a backup of the db"


def _id(skills: sk.SkillStore, task_type: str) -> str:
    [proc] = skills.procedures(task_type)
    return proc.id


def test_a_matcher_follows_what_another_store_writes(skills: sk.SkillStore, home: Path) -> None:
    """Two stores of one home (two processes, as the CLI and an agent's MCP server are): the first matcher, having
    read the aliases, sees the second's adoption of an agent's alias and its removal at its next match."""
    flush, backup = _id(skills, "clean-cache"), _id(skills, "db-backup")
    skills.confirm(BACKUP_ASK, backup, by=MALLORY)
    assert skills.match(BACKUP_ASK, by=MALLORY).procedure_id == backup  # read: the agent's own alias
    assert skills.match(BACKUP_ASK).decision != "match"  # not a person's
    other = sk.SkillStore(home)
    try:
        alias = other.confirm(BACKUP_ASK, backup, by="alice")  # a person adopts the agent's alias: an update
        person = skills.match(BACKUP_ASK)
        assert (person.decision, person.procedure_id) == ("match", backup), person.reason
        other.forget(alias.id)
        assert skills.match(BACKUP_ASK).decision != "match"
        assert skills.match(BACKUP_ASK, by=MALLORY).decision != "match"  # the agent's went with the adoption
        other.confirm(BACKUP_ASK, flush, by=MALLORY)  # a new alias after a removal: read whole again
        assert skills.match(BACKUP_ASK, by=MALLORY).procedure_id == flush
    finally:
        other.close()


def test_a_long_run_of_changes_keeps_what_the_store_holds(skills: sk.SkillStore, home: Path) -> None:
    """After adds, updates and removals in turn, by this store and another, the aliases a matcher keeps are the
    store's, row for row (who answered, whose they are), and their table, grown by each new alias, is the one made
    from them all at once."""
    backup, proxy = _id(skills, "db-backup"), _id(skills, "deploy-proxy")
    matcher = skills.matcher

    def kept() -> list[tuple[str, str, bool, str]]:
        matcher.match("a backup of the database")  # scores the aliases: their table is made, then grown by new ones
        views = matcher._alias_views(None)
        grown, fresh = views.table(), AliasTable.empty().extended(views.views)
        assert [row_of(grown, i) for i in range(len(grown.rows))] == [row_of(fresh, i) for i in range(len(fresh.rows))]
        assert np.array_equal(grown.matrix, fresh.matrix) and np.array_equal(grown.lengths, fresh.lengths)
        # The lookups by key words and by procedure, grown by each new alias too, are the ones made at once.
        once = AliasViews(views.version, views.removals, views.by_id, views.views)
        for words in {w for _, w, _ in views.views} | {frozenset({"nothing", "said"})}:
            assert [v[0].id for v in views.saying(words)] == [v[0].id for v in once.saying(words)]
        for pid in (backup, proxy, "no-such-procedure"):
            assert [v[0].id for v in views.of(pid)] == [v[0].id for v in once.of(pid)]
        return [(r.id, r.procedure_id, r.exact_only, r.owner) for r, _, _ in views.views]

    def row_of(table: AliasTable, i: int) -> tuple[str, str, str, bool]:
        names, owners = list(table.procedures), list(table.owners)
        return table.rows[i].id, names[table.procedure[i]], owners[table.owner[i]], bool(table.exact_only[i])

    def held() -> list[tuple[str, str, bool, str]]:
        return [(r.id, r.procedure_id, r.exact_only, r.owner) for r in matcher.answers.alias_rows(None)]

    other = sk.SkillStore(home)
    try:
        wordings = ["copy the database somewhere safe", "stash a copy of the db", "save the db elsewhere", "spare db"]
        made = []
        answerers = [(skills, "run:r1"), (other, MALLORY), (other, "alice"), (skills, None)]
        for wording, (writer, by) in zip(wordings, answerers, strict=True):
            made.append(writer.confirm(wording, backup, by=by))
            assert kept() == held()
        other.confirm(wordings[0], backup, by="bob")  # the run's becomes a person's
        other.confirm(wordings[1], backup, by="carol")  # the agent's is adopted
        assert kept() == held() and not any(exact or owner for _, _, exact, owner in kept()[:2])
        other.forget(made[2].id)
        assert kept() == held() and len(held()) == 3
        skills.confirm("put the proxy settings live", proxy, by="alice")
        assert kept() == held() and len(held()) == 4
    finally:
        other.close()


def test_each_procedures_closest_alias_is_the_one_the_asker_may_use() -> None:
    """Scored in one pass over the kept aliases (`AliasTable.best`): per procedure the closest alias the asker sees,
    the first by id on a tie; a run's alias counts for how close a procedure stands, never for what may vouch;
    another agent's alias not at all."""
    import numpy as np

    from sherpa_skills.skills.store.answers import AliasRow

    def view(n: int, pid: str, vector: list[float], exact_only: bool = False, owner: str = "") -> tuple:
        row = AliasRow(
            id=f"a{n}", procedure_id=pid, task_type="t", key="k", text="w", exact_only=exact_only, owner=owner
        )
        return row, frozenset(), np.asarray(vector, dtype=np.float32)

    table = AliasViews(
        0,
        0,
        {},
        [
            view(1, "p2", [0.0, 1.0]),  # cosine 0: p2 comes first, its best is a4
            view(2, "p1", [1.0, 1.0]),
            view(3, "p1", [1.0, 1.0]),  # a tie with a2: a2 stays
            view(4, "p2", [1.0, 0.2], exact_only=True),  # a run's: the closest of all, never vouching
            view(5, "p3", [1.0, 0.0], owner=MALLORY),  # another agent's
        ],
    ).table()
    sims = np.clip(table.matrix @ np.asarray([1.0, 0.0]) / table.lengths, 0.0, 1.0)
    seen = table.owner == 0
    judged, near = table.best(sims, seen & ~table.exact_only), table.best(sims, seen)
    assert [(pid, alias) for pid, (_, alias) in near.items()] == [("p2", "a4"), ("p1", "a2")]
    assert [(pid, alias) for pid, (_, alias) in judged.items()] == [("p2", "a1"), ("p1", "a2")]
    assert judged["p2"][0] == 0.0 and abs(near["p1"][0] - 2**-0.5) < 1e-6
    mallory = seen | (table.owner == table.owners[MALLORY])
    assert table.best(sims, mallory)["p3"] == (1.0, "a5")


def test_a_table_grows_in_place_yet_an_older_one_keeps_its_rows() -> None:
    """The vectors grow in a buffer with room (a run's alias costs its own row, not a copy of every vector); only the
    newest table writes after its rows, so a table grown again from an older one (another thread's, say) copies, and
    neither overwrites the other's rows."""
    from sherpa_skills.skills.store.answers import AliasRow

    rng = np.random.default_rng(36)

    def view(n: int) -> tuple:
        row = AliasRow(id=f"a{n:04d}", procedure_id=f"p{n % 7}", task_type="t", key="k", text="w")
        return row, frozenset(), rng.random(8).astype(np.float32)

    views = [view(n) for n in range(200)]
    table, tables = AliasTable.empty(), []
    for v in views:
        table = table.extended([v])
        tables.append(table)
    assert np.shares_memory(tables[-1].matrix, tables[-2].matrix), "grown in place, not copied"
    whole = AliasTable.empty().extended(views)
    older = tables[99]
    branch = older.extended(views[150:160])
    assert np.array_equal(table.matrix, whole.matrix), "the newest table's rows are untouched"
    assert np.array_equal(older.matrix, whole.matrix[:100])
    assert np.array_equal(branch.matrix, np.concatenate([whole.matrix[:100], whole.matrix[150:160]]))
    assert [r.id for r in branch.rows] == [v[0].id for v in views[:100] + views[150:160]]
    made = AliasTable(
        **{k: getattr(whole, k) for k in ("rows", "matrix", "lengths", "procedure", "procedures")},
        owner=whole.owner,
        owners=whole.owners,
        exact_only=whole.exact_only,
    )  # made whole: no room yet
    assert np.array_equal(made.extended([view(999)]).matrix[:200], whole.matrix)
