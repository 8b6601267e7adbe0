"""Mining session logs: successful command sequences become candidate procedures, failures become learnings.

A session is cut into segments of consecutive commands that did not fail, in one working directory,
without a long pause. Look-around commands are dropped; what is left and has at least two steps is
either a procedure the store already knows (found with one Aho-Corasick pass over normalised step
signatures: that procedure gains a success) or a new *candidate*, which replay ignores until it has
been seen succeeding `promote_after` times or someone runs `learn promote`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..redact import redact
from .capture_actions import is_no_op, program
from .models import CapturedLearning, CapturedProcedure, ProcedureStep
from .store import SkillStore, step_signature

_SPACE = re.compile(r"\s+")


@dataclass
class MiningOptions:
    gap_secs: float = 900.0
    min_steps: int = 2
    max_steps: int = 12
    promote_after: int = 3


@dataclass
class MiningResult:
    commands: int = 0
    segments: int = 0
    trivial: int = 0
    known: int = 0
    new_candidates: int = 0
    repeated_candidates: int = 0
    promoted: int = 0
    learnings: int = 0
    procedure_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "procedure_ids"}


def normalise(command: str) -> str:
    return _SPACE.sub(" ", command.strip())


def segments(commands: Sequence[Any], options: MiningOptions) -> Iterable[list[Any]]:
    """Runs of commands that did not fail, per session, in one cwd, without a pause longer than the gap."""
    by_session: dict[tuple[str, str, str | None], list[Any]] = {}
    for c in commands:
        # Sub-agents interleave in one session: each thread is its own sequence of work.
        by_session.setdefault((c.source, c.session_id, getattr(c, "agent", None)), []).append(c)
    for session in by_session.values():
        session.sort(key=lambda c: (c.timestamp is None, c.timestamp or 0.0, c.seq))
        current: list[Any] = []
        for c in session:
            breaks = (
                c.outcome in ("failure", "rejected")
                or (current and c.cwd != current[-1].cwd)
                or (current and c.timestamp and current[-1].timestamp and c.timestamp - current[-1].timestamp > options.gap_secs)
            )
            if breaks and current:
                yield current
                current = []
            if c.outcome not in ("failure", "rejected"):
                current.append(c)
        if current:
            yield current


# Tools whose first argument is a verb worth naming the task after.
_SUBCOMMAND_TOOLS = frozenset("""git npm npx yarn pnpm pip uv poetry cargo go docker podman kubectl helm terraform gh make
    systemctl apt apt-get brew mix bundle rails dotnet mvn gradle conda""".split())
# Programs that only look: a run of them changes nothing worth replaying.
_READ_ONLY = frozenset("""ls ll la pwd cd cat less more head tail grep egrep rg ag find fd wc sort uniq cut stat du df ps top tree file
    which type whoami echo printf true date env printenv man help history clear exit diff cmp jq yq bat nl column realpath
    dirname basename readlink id uname hostname""".split())
_READ_ONLY_SUB = {"git": {"status", "log", "diff", "show", "branch", "remote", "rev-parse", "ls-files", "blame", "describe"},
                  "docker": {"ps", "images", "logs", "inspect"}, "kubectl": {"get", "describe", "logs"},
                  "npm": {"ls", "view", "outdated"}, "pip": {"list", "show", "freeze"}, "gh": {"pr view", "issue view"}}
# Interactive programs: what they did is not in the log, so they cannot be replayed.
_INTERACTIVE = frozenset("""vim vi nvim emacs nano pico code subl less more man top htop btop tig fg bg jobs tmux screen watch
    python python3 ipython node irb psql mysql sqlite3 redis-cli mongo ssh telnet ftp sftp bash zsh sh fish su sudo -i
    lldb gdb meld vimdiff kdiff3 gitk open xdg-open exit logout reset clear history source""".split())
_SPLIT = re.compile(r"\|\||&&|[|;]")


def is_read_only(command: str) -> bool:
    """Every part of the command only reads (`find … | sort | wc -l`, `git status`); a redirect into a file writes."""
    if re.search(r"(?<![0-9&])>(?!&)|\btee\b|\bsed\s+-i", command):
        return False
    for part in _SPLIT.split(command):
        words = part.strip().split()
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        if prog in _READ_ONLY:
            continue
        subs = _READ_ONLY_SUB.get(prog)
        if subs and len(words) > 1 and (words[1] in subs or " ".join(words[1:3]) in subs):
            continue
        return False
    return True


def is_interactive(command: str) -> bool:
    """An editor, pager, REPL or job-control command: bare (`vim x`, `python3`, `fg`), not a script run (`python3 x.py`)."""
    words = command.strip().split()
    if not words:
        return False
    prog = words[0].rsplit("/", 1)[-1]
    if prog in ("python", "python3", "node", "bash", "sh", "zsh", "ssh", "psql", "mysql", "sqlite3", "redis-cli"):
        return len(words) == 1  # with arguments it runs something (a script, a remote command, a query)
    return prog in _INTERACTIVE


def suggest_task_type(commands: Sequence[str]) -> str:
    """From the programs and their sub-commands: `git add`, `git commit`, `git push` → git-add-commit-push."""
    parts: list[str] = []
    for command in commands:
        words = command.split()
        prog = program(command)
        if prog in ("sudo", "env", "time", "nohup") and len(words) > 1:
            prog = words[1].rsplit("/", 1)[-1]
            words = words[1:]
        sub = ""
        if prog in _SUBCOMMAND_TOOLS:
            sub = next((w for w in words[1:3] if re.fullmatch(r"[a-z][a-z0-9-]{1,20}", w)), "")
        for token in (prog, sub):
            token = re.sub(r"[^a-z0-9]+", "-", token.lower()).strip("-")
            if token and token not in parts:
                parts.append(token)
        if len(parts) >= 4:
            break
    return "-".join(parts[:4]) or "session-task"


class KnownProcedures:
    """Every stored procedure's normalised steps, in one automaton: a segment is scanned once for all of them."""

    def __init__(self, store: SkillStore):
        import ahocorasick

        self.automaton = ahocorasick.Automaton()
        count = 0
        for p in store.iter_procedures():
            key = "\n" + "\n".join(normalise(_unwrap(s.command)) for s in p.steps) + "\n"
            self.automaton.add_word(key, p.id)
            count += 1
        if count:
            self.automaton.make_automaton()
        self.empty = count == 0

    def found_in(self, commands: Sequence[str]) -> set[str]:
        if self.empty:
            return set()
        text = "\n" + "\n".join(commands) + "\n"
        return {pid for _, pid in self.automaton.iter(text)}


def mine(commands: Sequence[Any], store: SkillStore, options: MiningOptions | None = None, known: KnownProcedures | None = None) -> MiningResult:
    """Turn imported session commands into candidates, successes of known procedures, and learnings."""
    options = options or MiningOptions()
    result = MiningResult(commands=len(commands))
    known = known or KnownProcedures(store)
    for c in commands:
        if c.outcome == "failure":
            store.add_learning(CapturedLearning(
                task_type=suggest_task_type([c.command]), command=redact(c.command),
                error=redact((c.output or "")[-500:]), exit_code=c.exit_code, source=f"session:{c.source}"))
            result.learnings += 1
    for segment in segments(commands, options):
        kept = [c for c in segment if not is_no_op(c.command) and not is_read_only(c.command) and not is_interactive(c.command)]
        result.segments += 1
        if len(kept) < options.min_steps:
            result.trivial += 1
            continue
        for start in range(0, len(kept), options.max_steps):
            chunk = kept[start:start + options.max_steps]
            if len(chunk) < options.min_steps:
                continue
            _crystallise(chunk, store, options, known, result)
    return result


def _crystallise(chunk: list[Any], store: SkillStore, options: MiningOptions, known: KnownProcedures, result: MiningResult) -> None:
    commands = [normalise(redact(c.command)) for c in chunk]
    found = known.found_in(commands)
    if found:
        for pid in sorted(found):
            _credit(store, pid, options, result, known=True)
        return
    steps = [ProcedureStep(command=_literal(cmd), expected_exit_code=c.exit_code if isinstance(c.exit_code, int) else 0,
                           cwd=None) for cmd, c in zip(commands, chunk)]
    same = store.find_by_signature(step_signature(steps))
    if same is not None:
        _credit(store, same.id, options, result, known=False)
        return
    first = chunk[0]
    proc = store.add_procedure(CapturedProcedure(
        id="", task_type=suggest_task_type(commands), steps=steps, source="session", status="candidate", success_count=1,
        description=f"Mined from a {first.source} session" + (f" in {first.cwd}" if first.cwd else ""),
        context={"session_id": first.session_id, "source_file": first.source_file, "cwd": first.cwd, "first_command_id": first.id}))
    result.new_candidates += 1
    result.procedure_ids.append(proc.id)


def _credit(store: SkillStore, pid: str, options: MiningOptions, result: MiningResult, known: bool) -> None:
    proc = store.record_success(pid)
    if known and proc.status != "candidate":
        result.known += 1
    else:
        result.repeated_candidates += 1
    if proc.status == "candidate" and proc.success_count >= options.promote_after:
        store.set_status(pid, "active")
        result.promoted += 1


def _unwrap(command: str) -> str:
    if command.startswith("{% raw %}") and command.endswith("{% endraw %}"):
        return command[len("{% raw %}"):-len("{% endraw %}")]
    return command


def _literal(command: str) -> str:
    """Commands from logs are literal: braces in them are not parameters."""
    return "{% raw %}" + command + "{% endraw %}" if ("{{" in command or "{%" in command or "{#" in command) else command
