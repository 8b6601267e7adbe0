"""What judges answered when a match needed confirmation: aliases (confirmed wordings) and rejections (refused pairs).

An alias is a procedure's other description: the task's wording, redacted, its literals turned into the procedure's
parameters, keyed by its folded key words (`match.wording.wording_key`, given by the caller) for the exact lookup
and embedded for the close one. A rejection
says a wording is not about a procedure, so it is never asked about (or replayed for) it again. Both hold only in the
scope they were given in: the task type the match was limited to, or '' for an unscoped match (the CLI, Python).
Ids are `a<N>` for aliases and `r<N>` for rejections, so `learn forget ID` takes either.

An alias's `source` is the run its wording came from (`run:<run_id>`): a learning run that took a procedure's path in
other words (then `by` is that run too: its success is the confirmation), or one whose judge confirmed it; None for a
wording answered through the CLI, Python or MCP.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ...db.connection import Connection
from ...errors import StoreError
from ...redact import redact
from .database import ProcedureDatabase, current_user

#: How an alias names a run: its `source` (where the wording came from), and its `by` when the run's own success on
#: the procedure's path is the confirmation.
RUN_PREFIX = "run:"
#: Who answered, when it was not a person: an MCP client (`agent:NAME`) or a workflow's model judge (`model:NAME`).
CLAIMANT_PREFIXES = ("agent:", "model:", RUN_PREFIX)

#: How much an answer's word weighs, in SQL: a run's success 0, an agent's or a model's 1, a person's 2. A wording
#: answered again keeps the weightier confirmer.
_WEIGHT = "CASE WHEN {0} LIKE 'run:%' THEN 0 WHEN {0} LIKE 'agent:%' OR {0} LIKE 'model:%' THEN 1 ELSE 2 END"


#: An MCP client's answers: claims that shape what that agent is offered, never what anyone else is.
AGENT_PREFIX = "agent:"

#: Which answer of a pair a newer opposite one withdraws, in SQL ({0}: the older's answerer; then the newer's, and
#: whether it is a person's): a person's withdraws any; anyone else's only its own (an agent cannot undo a person's
#: or another agent's word).
_WITHDRAWS = "({0} = ? OR ?)"


def by_person(by: str) -> bool:
    """Whether an answer is a person's (the CLI, Python): not an agent's, a model's or a run's."""
    return not str(by).startswith(CLAIMANT_PREFIXES)


def owner_of(by: str) -> str:
    """Whose matches an answer shapes (its `owner`): '' for every asker's (a person's, a run's, a model judge's); the
    agent's own (`agent:NAME`) for an MCP client's, since nothing here saw why it answered so."""
    return by if str(by).startswith(AGENT_PREFIX) else ""


def seen_by(owner: str, asker: str | None) -> bool:
    """Whether an answer of this `owner` shapes what `asker` (None: a person) is offered."""
    return not owner or owner == asker


#: One pair's answers: a wording (its key) of a procedure, in a scope.
_PAIR = "procedure_id = ? AND scope = ? AND key = ?"


def _shared(conn: Connection, table: str, pair: tuple[str, str, str]) -> bool:
    """Whether the pair has an answer every asker sees."""
    return conn.execute(f"SELECT 1 FROM {table} WHERE {_PAIR} AND owner = ''", pair).fetchone() is not None


def _adopt(conn: Connection, table: str, who: str, pair: tuple[str, str, str], person: str, asked: Any) -> bool:
    """A person answering a pair only agents answered takes the oldest of their answers over (it then holds for every
    asker; `asked` with it, else theirs); the agents' others are subsumed. False when no agent answered it."""
    rows = conn.execute(f"SELECT id FROM {table} WHERE {_PAIR} AND owner <> '' ORDER BY id", pair).fetchall()
    if not rows:
        return False
    conn.execute(
        f"UPDATE {table} SET owner = '', {who} = ?, asked_score = COALESCE(?, asked_score),"
        " asked_top = COALESCE(?, asked_top) WHERE id = ?",
        (person, *_asked_columns(asked), rows[0][0]),
    )
    conn.execute(f"DELETE FROM {table} WHERE {_PAIR} AND owner <> ''", pair)
    return True


def _held_for(conn: Connection, table: str, pair: tuple[str, str, str], owner: str) -> int:
    """The id of the pair's answer that holds for `owner`: its own, else the one every asker sees."""
    row = conn.execute(
        f"SELECT id FROM {table} WHERE {_PAIR} AND owner IN (?, '') ORDER BY CASE WHEN owner = ? THEN 0 ELSE 1 END, id",
        (*pair, owner, owner),
    ).fetchone()
    return int(row[0])


#: Each kind of answer's table and answerer column, and the opposite kind's, which a newer answer may withdraw.
_TABLES = {
    "alias": ("aliases", "confirmed_by", "rejections", "rejected_by"),
    "rejection": ("rejections", "rejected_by", "aliases", "confirmed_by"),
}


def _answer_pair(
    conn: Connection,
    kind: Literal["alias", "rejection"],
    pair: tuple[str, str, str],
    answerer: str,
    asked: Any,
    insert: Callable[[str], None],
) -> int:
    """One answer of a pair, the same way for an alias and a rejection: an agent's adds nothing where an answer every
    asker sees holds already; a person's takes agents' answers of the pair over (`_adopt`), else it is written
    (`insert(owner)`) and subsumes theirs; then the opposite answers it may withdraw go (`_WITHDRAWS`). Returns the id
    of the answer that holds for the answerer."""
    table, who, opposite, opposite_who = _TABLES[kind]
    owner, person = owner_of(answerer), by_person(answerer)
    if owner and _shared(conn, table, pair):
        pass  # a person's, a run's or a judge's answer of the pair already holds for this agent
    elif not (person and not _shared(conn, table, pair) and _adopt(conn, table, who, pair, answerer, asked)):
        insert(owner)
        if person:  # agents' answers of the pair are subsumed: the person's holds for them too
            conn.execute(f"DELETE FROM {table} WHERE {_PAIR} AND owner <> ''", pair)
    conn.execute(
        f"DELETE FROM {opposite} WHERE {_PAIR} AND {_WITHDRAWS.format(opposite_who)}", (*pair, answerer, person)
    )
    return _held_for(conn, table, pair, owner)


class WordingAnswer(BaseModel):
    """One remembered answer: an alias of a procedure, or a rejection of it for a wording."""

    id: str
    kind: Literal["alias", "rejection"]
    procedure_id: str
    scope: str = ""
    text: str
    by: str
    created: float
    task_type: str | None = None
    #: The run the wording came from (`run:<run_id>`), for an alias; None where it was answered outside a run.
    source: str | None = None


class AskedPoint(BaseModel):
    """One answered question as the match floor reads it: the best candidate's relevance when it was asked, whether
    the answer said that candidate was wrong (a rejection of it, or an alias confirming another), and who answered."""

    score: float
    wrong: bool
    by: str
    #: Not an answer: a replay chosen by relevance that a person executed and that held. It says the floor held where
    #: it replayed, never that a lower one would (a lower floor's replays would vouch for themselves).
    held: bool = False


class Asked(BaseModel):
    """What a judge was asked about, kept with the answer: the best candidate's relevance then, and whether the answer
    is about that candidate (False: an alias confirming another of the offered, so the best one was wrong)."""

    score: float
    top: bool


@dataclass(slots=True)
class AliasRow:
    """An alias as matching reads it (read at every match after an answer changed, and a run that learns adds one: a
    plain row, not a validated model; what it holds was validated when written)."""

    id: str
    procedure_id: str
    task_type: str
    key: str
    text: str
    vector: bytes | None = None
    embedder: str | None = None
    #: No judge said what it means: a run took the procedure's path in these words (`by` is the run). It matches its
    #: own wording only, never a wording close to it: a run's success says what was done for these words, not what
    #: words near them mean (one vouched "Do you sell refurbished phones?" into a refund, bench/ticket_wordings_bench).
    #: An MCP agent's answer (`agent:NAME`) is a claim: it too replays its own wording and vouches for no other, and
    #: only for that agent (`seen_by`).
    exact_only: bool = False
    #: Whose matches it shapes (`owner_of`): '' for every asker's, else the agent's own.
    owner: str = ""


class Answers:
    """Aliases and rejections of one store; `version()` changes whenever either does, for caches to compare."""

    def __init__(self, store: ProcedureDatabase):
        self.store = store
        self.conn = store.conn

    def version(self) -> int:
        row = self.conn.execute("SELECT value FROM skill_meta WHERE key = 'answers'").fetchone()
        return int(row[0]) if row else 0

    def _bump(self) -> None:
        self.conn.execute("UPDATE skill_meta SET value = value + 1 WHERE key = 'answers'")

    def add_alias(
        self,
        procedure_id: str,
        text: str,
        key: str,
        *,
        scope: str | None = None,
        by: str | None = None,
        vector: bytes | None = None,
        embedder: str | None = None,
        asked: Asked | None = None,
    ) -> WordingAnswer:
        """Remember `text` (already parametrised by the caller) as a wording of the procedure; the same wording twice
        is one alias, whose first confirmer stays unless a weightier one answers it again (a run's becomes a judge's
        or a person's, an agent's or a model's becomes a person's; `asked` with it). A rejection of the same pair is
        withdrawn: the newer answer wins."""
        text = redact(text.strip())
        confirmer, now = by or current_user(), time.time()

        def write(conn: Connection) -> int:
            proc = self.store._locked(procedure_id)  # an alias and a rejection of one pair at once: one wins

            def insert(owner: str) -> None:
                conn.execute(
                    "INSERT INTO aliases (procedure_id, task_type, scope, text, key, confirmed_by, created,"
                    " vector, embedder, asked_score, asked_top, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (procedure_id, scope, key, owner)"
                    # A run's success says what was done for these words; a judge's answer what they mean; a person's
                    # answer is evidence, an agent's or a model's a claim (`match.floor`).
                    " DO UPDATE SET confirmed_by = excluded.confirmed_by,"
                    " asked_score = COALESCE(excluded.asked_score, aliases.asked_score),"
                    " asked_top = COALESCE(excluded.asked_top, aliases.asked_top)"
                    f" WHERE {_WEIGHT.format('excluded.confirmed_by')} > {_WEIGHT.format('aliases.confirmed_by')}",
                    (
                        proc.id,
                        proc.task_type,
                        scope or "",
                        text,
                        key,
                        confirmer,
                        now,
                        vector,
                        embedder,
                        *_asked_columns(asked),
                        owner,
                    ),
                )

            found = _answer_pair(conn, "alias", (proc.id, scope or "", key), confirmer, asked, insert)
            self._bump()
            return found

        found = self.store.db.transaction(write, what=f"an alias of procedure '{procedure_id}'")
        return self.get(f"a{found}")

    def add_rejection(
        self,
        procedure_id: str,
        text: str,
        key: str,
        *,
        scope: str | None = None,
        by: str | None = None,
        asked: Asked | None = None,
    ) -> WordingAnswer:
        """Remember that `text` is not about the procedure; an alias of the same pair is withdrawn. `asked`: given
        for the best candidate of the question only (one point per question)."""
        text = redact(text.strip())
        rejecter, now = by or current_user(), time.time()

        def write(conn: Connection) -> int:
            proc = self.store._locked(procedure_id)

            def insert(owner: str) -> None:
                conn.execute(
                    "INSERT INTO rejections (procedure_id, scope, text, key, rejected_by, created, asked_score,"
                    " asked_top, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (key, scope, procedure_id, owner)"
                    " DO UPDATE SET rejected_by = excluded.rejected_by,"
                    " asked_score = COALESCE(excluded.asked_score, rejections.asked_score),"
                    " asked_top = COALESCE(excluded.asked_top, rejections.asked_top)"
                    f" WHERE {_WEIGHT.format('excluded.rejected_by')} > {_WEIGHT.format('rejections.rejected_by')}",
                    (proc.id, scope or "", text, key, rejecter, now, *_asked_columns(asked), owner),
                )

            found = _answer_pair(conn, "rejection", (proc.id, scope or "", key), rejecter, asked, insert)
            self._bump()
            return found

        found = self.store.db.transaction(write, what=f"a rejection of procedure '{procedure_id}'")
        return self.get(f"r{found}")

    def set_source(self, alias_id: str, source: str) -> WordingAnswer:
        """Name the run an alias's wording came from; an alias that already names one keeps it (its first run)."""
        self.store.db.transaction(
            lambda conn: conn.execute(
                "UPDATE aliases SET source = ? WHERE id = ? AND source IS NULL", (source, int(alias_id[1:]))
            ),
            what=f"the source of alias '{alias_id}'",
        )
        return self.get(alias_id)

    def set_vector(self, alias_id: str, vector: bytes, embedder: str) -> None:
        """Keep an alias's vector (derived: embedded again whenever missing or from another embedder)."""
        self.store.db.transaction(
            lambda conn: conn.execute(
                "UPDATE aliases SET vector = ?, embedder = ? WHERE id = ?", (vector, embedder, int(alias_id[1:]))
            ),
            what=f"the vector of alias '{alias_id}'",
        )

    def get(self, answer_id: str) -> WordingAnswer:
        kind, number = _parse_id(answer_id)
        if kind == "alias":
            row = self.conn.execute(
                "SELECT id, procedure_id, scope, text, confirmed_by, created, task_type, source FROM aliases"
                " WHERE id = ?",
                (number,),
            ).fetchone()
        else:
            row = self.conn.execute(
                "SELECT id, procedure_id, scope, text, rejected_by, created, NULL, NULL FROM rejections WHERE id = ?",
                (number,),
            ).fetchone()
        if row is None:
            raise StoreError(f"no {kind} '{answer_id}'; `sherpa-skills learn aliases` lists them")
        return _answer(kind, row)

    def entries(self, procedure_id: str | None = None) -> list[WordingAnswer]:
        """Every alias, then every rejection (of one procedure, when given), oldest first."""
        where, params = ("WHERE procedure_id = ?", (procedure_id,)) if procedure_id else ("", ())
        aliases = self.conn.execute(
            f"SELECT id, procedure_id, scope, text, confirmed_by, created, task_type, source FROM aliases {where}"
            " ORDER BY id",
            params,
        )
        found = [_answer("alias", r) for r in aliases]
        rejections = self.conn.execute(
            f"SELECT id, procedure_id, scope, text, rejected_by, created, NULL, NULL FROM rejections {where}"
            " ORDER BY id",
            params,
        )
        return found + [_answer("rejection", r) for r in rejections]

    def forget(self, answer_id: str) -> WordingAnswer:
        """Remove one alias or rejection; the matcher stops using it at its next match."""
        answer = self.get(answer_id)
        table = "aliases" if answer.kind == "alias" else "rejections"

        def write(conn: Connection) -> None:
            conn.execute(f"DELETE FROM {table} WHERE id = ?", (int(answer.id[1:]),))
            self._bump()

        self.store.db.transaction(write, what=f"forgetting {answer.kind} '{answer_id}'")
        return answer

    def rejected(self, key: str, scope: str | None, asker: str | None = None) -> set[str]:
        """The procedures the wording with this key was refused for, in this scope, as `asker` sees it (`seen_by`)."""
        rows = self.conn.execute(
            "SELECT procedure_id FROM rejections WHERE key = ? AND scope = ? AND owner IN ('', ?)",
            (key, scope or "", asker or ""),
        )
        return {r[0] for r in rows}

    def asked_points(self, scope: str | None) -> list[AskedPoint]:
        """The answered questions of this scope that carry what was asked (`Asked`), aliases then rejections: a
        rejection of the best candidate, or an alias confirming another, says the best one was wrong."""
        aliases = self.conn.execute(
            "SELECT asked_score, asked_top, confirmed_by FROM aliases WHERE scope = ? AND asked_score IS NOT NULL"
            " ORDER BY id",
            (scope or "",),
        ).fetchall()
        rejections = self.conn.execute(
            "SELECT asked_score, rejected_by FROM rejections WHERE scope = ? AND asked_score IS NOT NULL"
            " AND asked_top = 1 ORDER BY id",
            (scope or "",),
        ).fetchall()
        held = self.conn.execute(
            "SELECT score, held_by FROM held_replays WHERE scope = ? ORDER BY execution_id", (scope or "",)
        ).fetchall()
        return (
            [AskedPoint(score=r[0], wrong=not r[1], by=r[2]) for r in aliases]
            + [AskedPoint(score=r[0], wrong=True, by=r[1]) for r in rejections]
            + [AskedPoint(score=r[0], wrong=False, by=r[1], held=True) for r in held]
        )

    def add_held_replay(self, execution_id: int, procedure_id: str, scope: str | None, score: float, by: str) -> None:
        """An executed replay that a match chose by relevance alone (`score`) held: a point for the match floor."""

        def write(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO held_replays (execution_id, procedure_id, scope, score, held_by, created)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (execution_id, procedure_id, scope or "", score, by, time.time()),
            )
            self._bump()

        self.store.db.transaction(write, what=f"the held replay of procedure '{procedure_id}'")

    def asked_scopes(self) -> list[str]:
        """The scopes some answered question carries what was asked in ('' for unscoped matches), sorted."""
        rows = self.conn.execute(
            "SELECT scope FROM aliases WHERE asked_score IS NOT NULL"
            " UNION SELECT scope FROM rejections WHERE asked_score IS NOT NULL"
            " UNION SELECT scope FROM held_replays"
        ).fetchall()
        return sorted({r[0] for r in rows})

    def alias_changes(self) -> tuple[int, int]:
        """The answers' version and how many aliases were ever removed: while the count holds, the aliases written
        since a version are `alias_rows(scope, since=version)` (m017)."""
        found = dict(self.conn.execute("SELECT key, value FROM skill_meta WHERE key IN ('answers', 'alias_removals')"))
        return int(found.get("answers", 0)), int(found.get("alias_removals", 0))

    def alias_rows(self, scope: str | None, since: int | None = None) -> list[AliasRow]:
        """The aliases a match in this scope may use, by id; with `since`, only those written at or after that
        version of the answers."""
        rows = self.conn.execute(
            "SELECT id, procedure_id, task_type, key, text, vector, embedder, confirmed_by, owner FROM aliases"
            " WHERE scope = ? AND changed >= ? ORDER BY id",
            (scope or "", -1 if since is None else since),
        )
        return [
            AliasRow(
                id=f"a{r[0]}",
                procedure_id=r[1],
                task_type=r[2],
                key=r[3],
                text=r[4],
                vector=r[5],
                embedder=r[6],
                owner=str(r[8]),
                exact_only=str(r[7]).startswith((RUN_PREFIX, AGENT_PREFIX)),
            )
            for r in rows
        ]


def _asked_columns(asked: Asked | None) -> tuple[float | None, int | None]:
    """`asked_score` and `asked_top` as stored; NULL for an answer that was no question's."""
    return (None, None) if asked is None else (asked.score, int(asked.top))


def _parse_id(answer_id: str) -> tuple[Literal["alias", "rejection"], int]:
    text = str(answer_id).strip().lower()
    if len(text) > 1 and text[0] in "ar" and text[1:].isdigit():
        return ("alias" if text[0] == "a" else "rejection"), int(text[1:])
    raise StoreError(
        f"'{answer_id}' is not an alias or rejection id (a<N> or r<N>); `sherpa-skills learn aliases` lists them"
    )


def _answer(kind: Literal["alias", "rejection"], row: tuple[Any, ...]) -> WordingAnswer:
    prefix = "a" if kind == "alias" else "r"
    return WordingAnswer(
        id=f"{prefix}{row[0]}",
        kind=kind,
        procedure_id=row[1],
        scope=row[2],
        text=row[3],
        by=row[4],
        created=row[5],
        task_type=row[6],
        source=row[7],
    )
