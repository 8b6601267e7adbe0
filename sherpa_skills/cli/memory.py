"""`sherpa-skills memory …`: shared memory from the command line (search, stats, reindex, write)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any, Callable

from .console import EXIT_OK, console as _console, print_json as _print_json, parse_assignments, positive_int


def _memory(args: argparse.Namespace) -> Any:
    from ..home import resolve_home
    from ..logs import configure
    from ..memory import SharedMemory

    home = resolve_home(args.home)
    (home / "logs").mkdir(exist_ok=True)
    configure(level="error", json_file=home / "logs" / "memory.jsonl")  # degradation is reported in the output itself
    return SharedMemory(home)


def _short(text: str, width: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def cmd_search(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        result = memory.search(args.query, agent=args.agent, scope=args.scope, author=args.author, kind=args.kind,
                               metadata=parse_assignments(args.meta, "--meta"), limit=args.limit,
                               mode="lexical" if args.lexical else "hybrid")
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
        console.print(f"[bold]{hit.score:.3f}[/] [dim](lexical {hit.lexical:.2f}{sem})[/]  {a.id}  "
                      f"[cyan]{a.agent}[/] {a.scope}{' ' + a.kind if a.kind else ''}  "
                      f"[dim]{datetime.fromtimestamp(a.created):%Y-%m-%d %H:%M}[/]")
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
    console.print(f"[bold]{data['artifacts']}[/] artifacts: {data['per_scope']['shared']} shared, "
                  f"{data['per_scope']['private']} private  [dim]({data['store']})[/]")
    if data["per_agent"]:
        table = Table("agent", "private", "shared")
        for agent, counts in data["per_agent"].items():
            table.add_row(agent, str(counts["private"]), str(counts["shared"]))
        console.print(table)
    c = data["companion"]
    state = "[green]ok[/]" if c["ok"] and not c["reason"] else ("[yellow]check[/]" if c["ok"] else "[red]unavailable[/]")
    console.print(f"companion {state}: {c.get('where', '?')}, collection {c['collection']}, "
                  f"{c['items'] if c['items'] is not None else '?'} items, embedder {c.get('embedder', '?')}")
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
    console.print(f"companion rebuilt from the store: {result['artifacts']} artifacts in {result['collection']} at "
                  f"{result['companion']} ({result['embedder']}, {result['seconds']} s)", markup=False)
    if result["moved_aside"]:
        console.print(f"[yellow]the old companion folder could not be rebuilt in place; it is kept at {result['moved_aside']}. "
                      f"Rebuild the procedure index too: sherpa-skills learn reindex[/]")
    return EXIT_OK


def cmd_write(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    with _memory(args) as memory:
        artifact = memory.write(text, agent=args.agent, scope="shared" if args.shared else "private", kind=args.kind,
                                tags=args.tag, metadata=parse_assignments(args.meta, "--meta"))
        problem = memory.companion_problem
    if args.json:
        _print_json({**artifact.model_dump(mode="json"), "indexed": problem is None, "companion_problem": problem})
        return EXIT_OK
    console = _console()
    console.print(f"{artifact.id}  {artifact.agent} {artifact.scope}")
    if problem:
        console.print(f"[yellow]stored, but not yet searchable by meaning:[/] {problem}")
    return EXIT_OK


def add_memory_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    memory = sub.add_parser("memory", parents=[common], help="shared memory: artifacts agents write, searched by words and meaning",
                            description="Artifacts written by agents: private notes and shared results, in the home's store.db, "
                                        "with a chromadb companion for search by meaning (HOME/config.yaml `memory: {chroma: HOST:PORT}` "
                                        "points it at a `chroma run` server).")
    msub = memory.add_subparsers(dest="memory_command", metavar="COMMAND", required=True)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = msub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(fn=fn)
        return p

    def filters(p: argparse.ArgumentParser) -> None:
        p.add_argument("--meta", action="append", metavar="KEY=VALUE", help="metadata (JSON values are parsed); repeatable")
        p.add_argument("--kind")

    p = add("search", cmd_search, "hybrid search (words + meaning) over what AGENT may see: shared artifacts and its own notes")
    p.add_argument("query")
    p.add_argument("--agent", help="the reading agent (default: none, so shared artifacts only)")
    p.add_argument("--limit", type=positive_int, default=10)
    p.add_argument("--scope", choices=("all", "private", "shared"), default="all")
    p.add_argument("--author", help="only artifacts this agent wrote")
    p.add_argument("--lexical", action="store_true", help="words only (SQLite FTS5), without the companion")
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
    p.add_argument("--json", action="store_true")
    filters(p)
