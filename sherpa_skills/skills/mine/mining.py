"""Mining session logs: routines people repeat become candidate procedures, known procedures seen again gain claimed
successes (shown, not counted), failures become learnings.

Candidates come from `recurring.find`: command sequences that recur in separate sessions or days, with what varies
between the occurrences turned into `{{ parameters }}` (their observed values kept as examples). A candidate waits
in the review queue (`learn candidates`) until a person promotes or rejects it (a rejected one is never proposed
again): what logs show is a claim, never this store's evidence, so no number of sightings makes it replayable.
Known procedures are found in new commands with one Aho-Corasick pass over their step shapes, then checked step by
step against their templates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...redact import redact
from ..store.database import ProcedureDatabase
from ..store.models import CapturedLearning, CapturedProcedure, ProcedureStep
from ..store.params import PARAMETER
from ..store.signatures import step_signature
from .recurring import RecurringOptions, Routine, clean, find, shape
from .recurring import suggest_task_type as suggest_task_type  # re-exported: planners and capture name tasks with it
from .shell_words import classify, stages

_SPACE = re.compile(r"\s+")
#: Longest procedure key put in the automaton: pyahocorasick frees its trie recursively, and a huge key can
#: overflow the C stack. Procedures longer than this are still found by their signature.
KEY_LIMIT = 64 * 1024
#: Occurrence ids kept per candidate (enough to show where it was seen).
_OCCURRENCES_KEPT = 20
# Exit codes that mean "looked, found nothing" rather than "failed".
_NOTHING_FOUND = {
    "grep": {1},
    "egrep": {1},
    "fgrep": {1},
    "rg": {1},
    "ag": {1},
    "ack": {1},
    "diff": {1},
    "cmp": {1},
    "test": {1},
    "[": {1},
    "[[": {1},
    "pgrep": {1},
    "which": {1},
    "command": {1},
    "git": set(),
}


@dataclass
class MiningOptions:
    gap_secs: float = 900.0
    min_steps: int = 2
    max_steps: int = 8
    min_support: int = 2


@dataclass
class MiningResult:
    commands: int = 0
    known: int = 0
    new_candidates: int = 0
    updated_candidates: int = 0
    rejected_again: int = 0
    learnings: int = 0
    not_failures: int = 0
    procedure_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "procedure_ids"}


def normalise(command: str) -> str:
    return _SPACE.sub(" ", command.strip())


def found_nothing(command: str, exit_code: int | None) -> bool:
    """`grep`/`rg` 1, `diff` 1, `test` 1: the command worked and the answer was no (for a pipeline, its last stage)."""
    if exit_code is None:
        return False
    parts = stages(command.strip())
    if not parts:
        return False
    return exit_code in _NOTHING_FOUND.get(parts[-1].program, set())


def _recurring_options(options: MiningOptions) -> RecurringOptions:
    return RecurringOptions(
        min_support=options.min_support,
        min_steps=options.min_steps,
        max_steps=options.max_steps,
        gap_secs=options.gap_secs,
    )


class KnownProcedures:
    """Every stored procedure's step shapes in one automaton; a hit is then checked against the step templates."""

    def __init__(self, store: ProcedureDatabase):
        import ahocorasick

        self.automaton = ahocorasick.Automaton()
        self.templates: dict[str, list[re.Pattern[str]]] = {}
        self.skipped = 0  # too long to index; find_by_signature still finds them
        for p in store.iter_procedures():
            if p.status != "active":
                continue  # candidates are recounted by the recurring pass; rejected ones are never credited
            shapes = [shape(_unwrap(s.command).replace("{{", "").replace("}}", "")) for s in p.steps]
            if any(s is None for s in shapes):
                continue
            key = "\n" + "\n".join("\x1f".join(s) for s in shapes) + "\n"  # type: ignore[arg-type]
            if len(key) > KEY_LIMIT:
                self.skipped += 1
                continue
            self.automaton.add_word(key, (p.id, len(p.steps)))
            self.templates[p.id] = [_template_regex(_unwrap(s.command)) for s in p.steps]
        self.empty = not self.templates
        if not self.empty:
            self.automaton.make_automaton()

    def found_in(self, commands: Sequence[str]) -> set[str]:
        """Procedures whose every step matches consecutive commands here."""
        if self.empty or not commands:
            return set()
        shapes = [shape(c) for c in commands]
        text = "\n" + "\n".join("\x1f".join(s) if s else "\x00" for s in shapes) + "\n"
        found: set[str] = set()
        for end, (pid, length) in self.automaton.iter(text):
            first = text.count("\n", 0, end + 1) - length - 1  # the hit ends with the newline after its last step
            window = commands[first : first + length]
            if len(window) == length and all(
                rx.fullmatch(normalise(c)) for rx, c in zip(self.templates[pid], window, strict=True)
            ):
                found.add(pid)
        return found


def _template_regex(template: str) -> re.Pattern[str]:
    parts = PARAMETER.sub("\0", normalise(template)).split("\0")  # the names are not parts
    return re.compile("(.+?)".join(re.escape(p) for p in parts))


def mine(
    commands: Sequence[Any],
    store: ProcedureDatabase,
    options: MiningOptions | None = None,
    known: KnownProcedures | None = None,
    history: Sequence[Any] | None = None,
) -> MiningResult:
    """`commands` are new since the last mining: their failures become learnings and the known procedures in them gain
    claimed successes (the logs' word, not this store's evidence). Routines are looked for in `history` (the recent
    commands, these included; default: these alone)."""
    options = options or MiningOptions()
    result = MiningResult(commands=len(commands))
    _learn_failures(commands, store, result)
    known = known or KnownProcedures(store)
    for run in clean(commands, _recurring_options(options)):
        for pid in sorted(known.found_in([normalise(redact(c.command)) for c in run])):
            store.add_claim(pid, "session", f"session:{run[0].source}", successes=1)
            result.known += 1
    for candidate in find(history if history is not None else commands, _recurring_options(options)):
        _keep(candidate, store, options, result)
    return result


def _learn_failures(commands: Sequence[Any], store: ProcedureDatabase, result: MiningResult) -> None:
    for c in commands:
        if c.outcome != "failure":
            continue
        if found_nothing(c.command, c.exit_code):
            result.not_failures += 1
            continue
        store.add_learning(
            CapturedLearning(
                task_type=suggest_task_type([c.command]),
                command=redact(c.command),
                about=redact(_about(c)),
                error=redact((c.output or "")[-500:]),
                exit_code=c.exit_code,
                source=f"session:{c.source}",
            )
        )
        result.learnings += 1


def _about(c: Any) -> str:
    """What a failed command was for, as the log tells it: the agent's own description, and the folder it ran in (its
    last two parts: `shop/frontend` says more about `npm run build` than the command does)."""
    parts = [str(getattr(c, "description", None) or "").strip()[:300]]
    cwd = str(getattr(c, "cwd", None) or "").rstrip("/")
    if cwd:
        parts.append("in " + "/".join(cwd.split("/")[-2:]))
    return " ".join(p for p in parts if p)


def _keep(candidate: Routine, store: ProcedureDatabase, options: MiningOptions, result: MiningResult) -> None:
    steps = [ProcedureStep(command=template) for template in candidate.steps]
    successes = candidate.successes
    context = {
        "mined": {
            "support": candidate.support,
            "parameters": candidate.parameters,
            "units": candidate.units[:_OCCURRENCES_KEPT],
            "sessions": candidate.sessions[:_OCCURRENCES_KEPT],
            "occurrences": candidate.occurrences[:_OCCURRENCES_KEPT],
            "long_running_steps": candidate.long_running,
            "project_dir": candidate.cwd,
        }
    }
    same = store.find_by_signature(step_signature(steps))
    if same is not None:
        if same.status == "rejected":
            result.rejected_again += 1
            return
        if same.status == "candidate":
            store.update_mined(same.id, context, max(same.claimed_successes, successes))
            result.updated_candidates += 1
        return
    proc, _ = store.add_candidate(
        CapturedProcedure(
            id="",
            task_type=candidate.task_type,
            steps=steps,
            source="session",
            description=candidate.description,
            context=context,
        ),
        "session",
        "mining",
        successes=successes,
        note=f"a routine seen in {candidate.support} sessions or days",
    )
    result.new_candidates += 1
    result.procedure_ids.append(proc.id)


def _unwrap(command: str) -> str:
    if command.startswith("{% raw %}") and command.endswith("{% endraw %}"):
        return command[len("{% raw %}") : -len("{% endraw %}")]
    return command


def is_read_only(command: str) -> bool:
    """Every stage only reads (`find … | sort | wc -l`, `git status`); a redirect into a file writes."""
    return classify(command) == "look"


def is_interactive(command: str) -> bool:
    """An editor, pager, REPL or job-control command:
    bare (`vim x`, `python3`, `fg`), not a script run (`python3 x.py`)."""
    return classify(command) in ("interactive", "job")
