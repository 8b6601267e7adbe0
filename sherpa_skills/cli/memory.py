"""`sherpa-skills memory …`: shared memory from the command line (search, stats, reindex, write, history, tensions,
resolve, export, delete)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..engine.inputs import parse_assignments
from .console import EXIT_OK, hint_words, open_home, person, positive_int, print_commands
from .console import console as _console
from .console import print_json as _print_json

if TYPE_CHECKING:
    from ..memory import SharedMemory


@contextmanager
def _memory(args: argparse.Namespace) -> Iterator[SharedMemory]:
    from ..logs import configure
    from ..memory import SharedMemory

    with open_home(args) as house:
        (house.home / "logs").mkdir(exist_ok=True)
        # degradation is reported in the output itself
        configure(level="error", json_file=house.home / "logs" / "memory.jsonl")
        with SharedMemory(store=house.memory) as memory:
            yield memory


def _short(text: str, width: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def cmd_search(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        result = memory.search(
            args.query,
            agent=args.agent,
            scope=args.scope,
            author=args.author,
            kind=args.kind,
            metadata=parse_assignments(args.meta, "--meta"),
            limit=args.limit,
            mode="lexical" if args.lexical else "hybrid",
            history=args.history,
            touch=False,
        )
    if args.json:
        _print_json(result.to_dict())
        return EXIT_OK
    console = _console()
    if result.degraded:
        console.print(f"[yellow]degraded:[/] {result.degraded}")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    for hit in result.hits:
        a = hit.artifact
        sem = "" if hit.semantic is None else f" semantic {hit.semantic:.2f}"
        old = f"  [yellow]superseded by {a.superseded_by}[/]" if a.superseded_by else ""
        console.print(
            f"[bold]{hit.score:.3f}[/] [dim](lexical {hit.lexical:.2f}{sem})[/]  {a.id}  "
            f"[cyan]{a.agent}[/] {a.scope}{' ' + a.kind if a.kind else ''} {a.tier()}  "
            f"[dim]{datetime.fromtimestamp(a.created):%Y-%m-%d %H:%M}[/]{old}"
        )
        console.print(f"    {_short(a.text)}", markup=False)
    if not result.hits:
        console.print("nothing found" + ("" if args.agent else " (without --agent only shared artifacts are searched)"))
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        data = memory.stats()
    if args.json:
        _print_json(data)
        return EXIT_OK
    from rich.table import Table

    console = _console()
    console.print(
        f"[bold]{data['artifacts']}[/] artifacts: {data['per_scope']['shared']} shared, "
        f"{data['per_scope']['private']} private  [dim]({data['store']})[/]"
    )
    tiers = data["per_tier"]
    console.print(
        f"current: {tiers['hot']} hot, {tiers['warm']} warm, {tiers['cold']} cold; {data['superseded']} superseded; "
        f"{data['duplicates_merged']} duplicate write(s) merged; {data['open_tensions']} open tension(s)"
    )
    if data["per_agent"]:
        table = Table("agent", "private", "shared")
        for agent, counts in data["per_agent"].items():
            table.add_row(agent, str(counts["private"]), str(counts["shared"]))
        console.print(table)
    c = data["companion"]
    state = (
        "[green]ok[/]" if c["ok"] and not c["reason"] else ("[yellow]check[/]" if c["ok"] else "[red]unavailable[/]")
    )
    console.print(
        f"companion {state}: {c.get('where', '?')}, collection {c['collection']}, "
        f"{c['items'] if c['items'] is not None else '?'} items, embedder {c.get('embedder', '?')}"
    )
    if c["reason"]:
        console.print(f"  {c['reason']}", markup=False)
    if data["pending"]:
        console.print(f"{data['pending']} artifact(s) wait to be indexed; `sherpa-skills memory reindex` indexes them")
    return EXIT_OK


def cmd_reindex(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        result = memory.reindex()
    if args.json:
        _print_json(result)
        return EXIT_OK
    console = _console()
    console.print(
        f"companion rebuilt from the store: {result['artifacts']} artifacts in {result['collection']} at "
        f"{result['companion']} ({result['embedder']}, {result['seconds']} s)",
        markup=False,
    )
    if result["moved_aside"]:
        console.print(
            f"[yellow]the old companion folder could not be rebuilt in place; it is kept at {result['moved_aside']}. "
            f"Rebuild the procedure index too: sherpa-skills learn reindex[/]"
        )
    return EXIT_OK


def cmd_write(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    with _memory(args) as memory:
        written = memory.remember(
            text,
            agent=args.agent,
            scope="shared" if args.shared else "private",
            kind=args.kind,
            tags=args.tag,
            metadata=parse_assignments(args.meta, "--meta"),
            confidence=args.confidence,
            abstraction=args.abstraction,
            category=args.category,
            supersedes=args.supersedes,
            on_near=args.on_near,
            tension_model=args.tension_model,
        )
        problem = memory.companion_problem
    if args.json:
        _print_json({**written.to_dict(), "indexed": problem is None, "companion_problem": problem})
        return EXIT_OK
    from rich.markup import escape  # the reasons quote the facts, whose brackets are text, not markup

    console = _console()
    a = written.artifact
    if written.merged_into:
        console.print(f"{a.id}  merged into this near-duplicate (seen {a.seen} times)")
    elif written.duplicate:
        console.print(f"{a.id}  already stored (seen {a.seen} times)")
    else:
        console.print(
            f"{a.id}  {a.agent} {a.scope} {a.abstraction}" + (f"  supersedes {a.supersedes}" if a.supersedes else "")
        )
    for other, similarity in written.near:
        console.print(
            f"[yellow]near-duplicate[/] of {other} (similarity {similarity:.2f})"
            + (" — linked" if other in written.linked else "")
        )
    for t in written.tensions:
        console.print(f"[yellow]tension {t['id']}[/] with {t['a']}: {escape(t['reason'])}")
    for skipped in written.skipped:
        console.print(f"[yellow]not checked:[/] {escape(skipped)}")
    if problem:
        console.print(f"[yellow]stored, but not yet searchable by meaning:[/] {escape(problem)}")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        chain = memory.store.chain(args.id, agent=args.agent)
    if args.json:
        _print_json([{**a.model_dump(mode="json"), "tier": a.tier()} for a in chain])
        return EXIT_OK
    console = _console()
    for a in chain:
        mark = "current " if a.superseded_by is None else "replaced"
        console.print(
            f"{mark}  {a.id}  [dim]{datetime.fromtimestamp(a.created):%Y-%m-%d %H:%M}[/]  {_short(a.text, 120)}"
        )
    return EXIT_OK


def cmd_tensions(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        found = memory.store.tensions(agent=args.agent, status="all" if args.all else "open", limit=args.limit)
    if args.json:
        _print_json(found)
        return EXIT_OK
    from rich.markup import escape

    console = _console()
    for t in found:
        console.print(f"[bold]{t['id']}[/] {t['status']} {t['scope']}: {escape(t['reason'])}")
        console.print(f"    {t['a']['id']}  {_short(t['a']['text'], 120)}", markup=False)
        console.print(f"    {t['b']['id']}  {_short(t['b']['text'], 120)}", markup=False)
    if not found:
        console.print(
            "no open tensions" + ("" if args.agent else " (without --agent only shared artifacts are checked)")
        )
    else:
        first = found[0]  # a command that runs as pasted: the first tension, keeping its first artifact
        console.print("resolve one with:")
        print_commands(
            console,
            hint_words(
                args, "memory", "resolve", first["id"], "--keep", first["a"]["id"], "--agent", args.agent or person()
            ),
        )
    return EXIT_OK


def cmd_resolve(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        done = memory.store.resolve(args.tension, args.keep, agent=args.agent)
    if args.json:
        _print_json(done)
        return EXIT_OK
    _console().print(f"tension {done['id']} resolved: kept {done['kept']}, {done['superseded']} is superseded by it")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    import json

    with _memory(args) as memory:
        for a in memory.store.export(agent=args.agent, scope=args.scope, history=args.history):
            sys.stdout.write(json.dumps({**a.model_dump(mode="json"), "tier": a.tier()}, ensure_ascii=False) + "\n")
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    from ..errors import UsageError

    with _memory(args) as memory:
        if not memory.delete(args.id, operator=args.operator, reason=args.reason):
            raise UsageError(f"memory delete: no artifact {args.id!r}")
    _console().print(f"deleted {args.id} (logged as {args.operator}'s act)")
    return EXIT_OK


def add_memory_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    memory = sub.add_parser(
        "memory",
        parents=[common],
        help="shared memory: artifacts agents write, searched by words and meaning",
        description="Artifacts written by agents: private notes and shared results, in the home's store.db, "
        "with a chromadb companion for search by meaning (HOME/config.yaml `memory: {chroma: HOST:PORT}` "
        "points it at a `chroma run` server).",
    )
    msub = memory.add_subparsers(dest="memory_command", metavar="COMMAND", required=True)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = msub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(fn=fn)
        return p

    def filters(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--meta", action="append", metavar="KEY=VALUE", help="metadata (JSON values are parsed); repeatable"
        )
        p.add_argument("--kind")

    p = add(
        "search",
        cmd_search,
        "hybrid search (words + meaning) over what AGENT may see: shared artifacts and its own notes",
    )
    p.add_argument("query")
    p.add_argument("--agent", help="the reading agent (default: none, so shared artifacts only)")
    p.add_argument("--limit", type=positive_int, default=10)
    p.add_argument("--scope", choices=("all", "private", "shared"), default="all")
    p.add_argument("--author", help="only artifacts this agent wrote")
    p.add_argument(
        "--lexical", action="store_true", help="words only (the store's full-text search), without the companion"
    )
    p.add_argument("--history", action="store_true", help="also superseded artifacts (each names its successor)")
    p.add_argument("--json", action="store_true")
    filters(p)

    p = add("stats", cmd_stats, "artifacts per scope and agent, and the companion's status")
    p.add_argument("--json", action="store_true")

    p = add("reindex", cmd_reindex, "rebuild the companion (semantic) index of shared memory from the store")
    p.add_argument("--json", action="store_true")

    p = add("write", cmd_write, "write TEXT (or - for stdin) as AGENT: a private note, or --shared")
    p.add_argument("text")
    p.add_argument("--agent", required=True)
    p.add_argument("--shared", action="store_true", help="every agent can read it (default: only AGENT)")
    p.add_argument("--tag", action="append")
    p.add_argument("--confidence", type=float, help="0 to 1 (default 0.8); low confidence decays faster")
    p.add_argument(
        "--abstraction",
        choices=("episode", "pattern", "principle"),
        default="episode",
        help="episode: what happened; pattern: what tends to hold; principle: a rule that never decays",
    )
    p.add_argument("--category")
    p.add_argument("--supersedes", metavar="ID", help="this write corrects artifact ID, which stays as history")
    p.add_argument(
        "--on-near",
        choices=("flag", "link", "merge"),
        default="flag",
        help="a near-duplicate write is flagged (default), stored with a link, or merged into the stored one",
    )
    p.add_argument(
        "--tension-model",
        metavar="MODEL",
        help="also ask this litellm model whether related facts no rule "
        "flagged contradict the new one (off by default)",
    )
    p.add_argument("--json", action="store_true")
    filters(p)

    p = add("history", cmd_history, "the supersede chain through artifact ID, newest first")
    p.add_argument("id")
    p.add_argument("--agent", help="the reading agent (default: none, so shared artifacts only)")
    p.add_argument("--json", action="store_true")

    p = add("tensions", cmd_tensions, "open tensions: facts that look contradictory, as AGENT may see them")
    p.add_argument("--agent", help="the reading agent (default: none, so tensions between shared artifacts only)")
    p.add_argument("--all", action="store_true", help="resolved ones too")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")

    p = add("resolve", cmd_resolve, "settle a tension: KEEP stays current, the other side is superseded by it")
    p.add_argument("tension")
    p.add_argument("--keep", required=True, metavar="ID")
    p.add_argument("--agent", required=True)
    p.add_argument("--json", action="store_true")

    p = add("export", cmd_export, "every artifact AGENT may see, as JSON lines")
    p.add_argument("--agent", help="the reading agent (default: none, so shared artifacts only)")
    p.add_argument("--scope", choices=("all", "private", "shared"), default="all")
    p.add_argument("--history", action="store_true", help="superseded artifacts too")

    p = add(
        "delete", cmd_delete, "remove artifact ID for good (agents supersede instead); logged with the operator's name"
    )
    p.add_argument("id")
    p.add_argument("--operator", required=True, help="who deletes it (recorded in the store's operator log)")
    p.add_argument("--reason")
