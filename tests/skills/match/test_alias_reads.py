"""A matcher reads only the aliases written since it last read them (m017: each row carries the answers' version at
its last write, removals are counted; the store's side: tests/skills/test_store_contract.py). What it keeps must
still follow every change another store makes: a new alias, an agent's alias a person adopts (an update, not an
insert), a removal."""

from __future__ import annotations

from pathlib import Path

import sherpa_skills as sk

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
    store's, row for row (who answered, whose they are)."""
    backup, proxy = _id(skills, "db-backup"), _id(skills, "deploy-proxy")
    matcher = skills.matcher

    def kept() -> list[tuple[str, str, bool, str]]:
        return [(r.id, r.procedure_id, r.exact_only, r.owner) for r, _, _ in matcher._alias_views(None).views]

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
