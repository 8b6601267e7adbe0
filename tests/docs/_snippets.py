"""The code blocks of README.md and every page under docs/, read the way the docs tests run them.

The conventions a page writer uses, each an HTML comment on the line right before a fence (invisible on the site,
visible in the Markdown):

- `<!-- not run: REASON -->`: the block needs something outside this machine (a hosted model); the reason is
  printed and such blocks stay few.
- `<!-- needs: SERVER -->` before a shell block: the block talks to a server the suite starts itself (`postgres`,
  `redis` or `otlp`, see test_docs_commands.SERVERS); the address the block shows is replaced by the test server's,
  and the replacement printed.
- `<!-- file: PATH -->`: the block is a file the reader saves as PATH (relative to where they run the commands);
  the tests write it there before the page's commands run.
- `<!-- output -->` before a ```text block: what the block before it prints (its last command, for shell blocks);
  run ids, milliseconds and temporary paths may differ, and line breaks are where the terminal wrapped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SHELL = ("bash", "sh")
MARKER = re.compile(r"^<!--\s*(not run|file|output|needs)\s*(?::\s*(.+?))?\s*-->$")


@dataclass
class Block:
    page: str  # the page's path from the repository root
    line: int  # the page's line of the block's first code line
    lang: str
    code: str
    not_run: str | None = None
    file: str | None = None
    output: bool = False
    needs: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md, then every Markdown page of the docs site in path order."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(text: str, page: str) -> list[Block]:
    """Every fenced block (``` or ~~~, any language) with its marker, in page order."""
    found: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(```+|~~~+)\s*([\w+-]*)", lines[i])
        if fence:
            indent, ticks, lang = fence.groups()
            end = next(
                (j for j in range(i + 1, len(lines)) if lines[j].strip() == ticks and lines[j].startswith(indent)),
                len(lines),
            )
            code = "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines[i + 1 : end])
            block = Block(page, i + 2, lang.lower(), code + "\n")
            marker = MARKER.match(lines[i - 1].strip()) if i else None
            if marker:
                kind, value = marker.groups()
                if kind == "not run":
                    block.not_run = value or "no reason given"
                elif kind == "file":
                    block.file = value
                elif kind == "needs":
                    block.needs = value or ""
                else:
                    block.output = True
            found.append(block)
            i = end
        i += 1
    return found


def page_blocks(path: Path) -> list[Block]:
    return blocks(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in page_blocks(path)]


def normalised(text: str) -> str:
    """Output as compared: run and procedure ids, durations and folders folded, whitespace collapsed."""
    text = re.sub(r"\b[0-9a-f]{12}\b", "RUN_ID", text)
    text = re.sub(r"(?<=[a-z])-[0-9a-f]{8}\b", "-ID", text)  # a procedure id's random tail
    text = re.sub(r"\b\d+(\.\d+)? ms\b", "N ms", text)
    text = re.sub(r"(?:[^\s/'\"`(]*/)+", "", text)  # folders differ between machines: a path keeps its last part
    return " ".join(text.split())
