"""Templates in shell commands: every `{{ value }}` is escaped for the quoting it lands in,
so no value can add a command.

A template is rendered with each value fenced by NUL bytes (no command can hold one); the result is then read the way
/bin/sh reads it (bare words, '…', "…", $(…), here-documents) and each value is escaped for where it landed:
shell-quoted when bare, backslash-escaped inside "…" and unquoted here-documents, '\\'' inside '…', kept as it is in a
quoted here-document. Where no escaping is safe (`…`, $((…)), ${…}, a comment, right after a \\ or a $) the template
is refused, at load time when the workflow is validated and at render time for anything only a render reveals.
Where a second program parses the value as code (`sh -c "…"`, `eval`, `ssh host …`, `python3 -c`: `shell_code`), no
escaping for this shell keeps it data: there only a plain word goes through.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .shell_code import code_values, plain_word, refusal, stdin_code

if TYPE_CHECKING:
    from jinja2 import Environment

__all__ = ["ShellTemplate", "check_shell_template", "render_shell", "stdin_reader"]

_FENCE = "\x00"
_TOP, _CMD, _SQ, _DQ, _BT, _PARAM, _ARITH, _COMMENT = range(8)
_WHERE = {
    _BT: "inside `…` (write $(…) instead)",
    _PARAM: "inside ${…}",
    _ARITH: "inside $((…)) or ((…))",
    _COMMENT: "inside a # comment",
}
_WORD_BREAK = frozenset(" \t\n;&|()<>")
_IN_DOUBLE_QUOTES = re.compile(r'[\\$`"]')
_IN_HEREDOC = re.compile(r"[\\$`]")
_DELIMITER = re.compile(r"""(-?)[ \t]*((?:[^\s;&|<>()'"\\]|'[^']*'|"[^"]*"|\\.)+)""")
_UNQUOTE = re.compile(r"""\\(.)|'([^']*)'|"([^"]*)\"""")
_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)


class _Reader:
    """Follows /bin/sh quoting through the literal text, and escapes each value for the place it lands in."""

    def __init__(self) -> None:
        self.stack = [_TOP]
        self.depth = [0]
        self.escaped = False  # the previous character was an escaping backslash
        self.dollar = False  # the previous character was a bare '$'
        self.word_start = True
        self.pending: list[tuple[str, bool, bool]] = []  # here-documents whose bodies start at the next newline
        self.heredoc: tuple[str, bool, bool] | None = None  # (delimiter, quoted, strip tabs)
        self.line: list[str] = []
        self.line_has_value = False
        self.body_expands = False
        self.refusal: str | None = None  # once the text goes beyond what this reader follows, later values are refused

    def refuse(self, why: str) -> None:
        self.refusal = self.refusal or why

    def push(self, kind: int) -> None:
        self.stack.append(kind)
        self.depth.append(0)

    def pop(self) -> None:
        if len(self.stack) > 1:
            self.stack.pop()
            self.depth.pop()

    def feed(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n:
            if self.heredoc is not None:
                i = self.heredoc_char(text, i)
                continue
            c = text[i]
            kind = self.stack[-1]
            if self.escaped:
                self.escaped = self.dollar = self.word_start = False
                i += 1
                continue
            if kind == _SQ:
                if c == "'":
                    self.pop()
                i += 1
                continue
            if kind == _COMMENT:
                if c == "\n":
                    self.pop()  # the newline itself belongs to the command line (here-documents start after it)
                    continue
                i += 1
                continue
            if kind == _BT:
                if c == "\\":
                    self.escaped = True
                elif c == "`":
                    self.pop()
                i += 1
                continue
            if kind == _ARITH:
                if c == "(":
                    self.depth[-1] += 1
                elif c == ")":
                    if self.depth[-1] == 0:
                        self.pop()
                        i += 2 if text.startswith("))", i) else 1
                        continue
                    self.depth[-1] -= 1
                i += 1
                continue
            self.dollar = False
            if c == "\\":
                self.escaped = True
                i += 1
                continue
            if c == "$":
                if text.startswith("$((", i):
                    self.push(_ARITH)
                    i += 3
                elif text.startswith("$(", i):
                    self.push(_CMD)
                    self.word_start = True
                    i += 2
                elif text.startswith("${", i):
                    self.push(_PARAM)
                    i += 2
                else:
                    if text.startswith("$'", i):
                        self.refuse("after $'…' quoting")
                    self.dollar = True
                    self.word_start = False
                    i += 1
                continue
            if c == "`":
                self.push(_BT)
                i += 1
                continue
            if kind == _DQ:
                if c == '"':
                    self.pop()
                i += 1
                continue
            if kind == _PARAM:
                if c == "}":
                    self.pop()
                elif c in "'\"":
                    self.refuse("after quotes inside ${…}")
                i += 1
                continue
            i = self.bare_char(text, i, kind)

    def bare_char(self, text: str, i: int, kind: int) -> int:
        """One character of unquoted command text (top level or inside $(…)); returns where to go on."""
        c = text[i]
        if c == "'":
            self.push(_SQ)
        elif c == '"':
            self.push(_DQ)
        elif c == "#" and self.word_start:
            self.push(_COMMENT)
        elif c == "\n" and self.pending:
            self.heredoc = self.pending.pop(0)
            self.line, self.line_has_value, self.body_expands = [], False, False
        elif text.startswith("<<<", i):
            self.word_start = True
            return i + 3
        elif text.startswith("<<", i):
            return self.delimiter(text, i + 2)
        elif c == "(" and self.word_start and text.startswith("((", i):
            self.push(_ARITH)
            return i + 2
        elif kind == _CMD and c == "(":
            self.depth[-1] += 1
        elif kind == _CMD and c == ")":
            if self.depth[-1] == 0:
                self.pop()
            else:
                self.depth[-1] -= 1
        elif kind == _CMD and self.word_start and re.match(r"case[ \t\n]", text[i : i + 5]):
            self.refuse("after a case statement inside $(…)")  # its `pattern)` lines unbalance the parentheses
        self.word_start = c in _WORD_BREAK
        return i + 1

    def delimiter(self, text: str, i: int) -> int:
        """Read a here-document's delimiter word; its body starts after the end of the line."""
        found = _DELIMITER.match(text, i)
        if found is None or found.end() == len(text):
            self.refuse("in or after a here-document delimiter")
            return len(text) if found is None else found.end()
        word = found.group(2)
        quoted = any(q in word for q in "'\"\\")
        plain = _UNQUOTE.sub(lambda m: m.group(1) or m.group(2) or m.group(3) or "", word)
        self.pending.append((plain, quoted, found.group(1) == "-"))
        self.word_start = False
        return found.end()

    def heredoc_char(self, text: str, i: int) -> int:
        assert self.heredoc is not None
        delimiter, quoted, strip = self.heredoc
        c = text[i]
        if c == "\n":
            line = "".join(self.line)
            if (line.lstrip("\t") if strip else line) == delimiter:
                if self.line_has_value:
                    raise UsageError(f"a value completes the here-document delimiter '{delimiter}' on its own line")
                self.heredoc = self.pending.pop(0) if self.pending else None
                self.body_expands = False
            self.line, self.line_has_value = [], False
            self.escaped = self.dollar = False
            return i + 1
        self.line.append(c)
        if not quoted:
            if self.escaped:
                self.escaped = False
            elif c == "\\":
                self.escaped = True
            elif c == "`" or (c in "({" and self.dollar):
                self.body_expands = True
            self.dollar = c == "$" and not self.dollar
        return i + 1

    def value(self, value: str) -> str:
        """`value` escaped for where the text read so far leaves it; UsageError where nothing is safe."""
        if self.refusal is not None:
            raise UsageError(
                f'a template value {self.refusal} cannot be escaped safely; move it to a plain word or "…"'
            )
        if self.escaped or self.dollar:
            raise UsageError(
                f"a template value right after a {'backslash' if self.escaped else '$'} cannot be escaped safely"
            )
        if self.heredoc is not None:
            delimiter, quoted, _ = self.heredoc
            if "\n" in value:
                raise UsageError(f"a value with a newline cannot go into the here-document ending at '{delimiter}'")
            if not quoted and self.body_expands:
                raise UsageError("a template value after $(…), ${…} or `…` in a here-document cannot be escaped safely")
            out = value if quoted else _IN_HEREDOC.sub(r"\\\g<0>", value)
            self.line.append(out)
            self.line_has_value = True
            return out
        kind = self.stack[-1]
        if kind in (_TOP, _CMD):
            self.word_start = False
            return shlex.quote(value)
        if kind == _SQ:
            return value.replace("'", "'\\''")
        if kind == _DQ:
            return _IN_DOUBLE_QUOTES.sub(r"\\\g<0>", value)
        raise UsageError(f'a template value {_WHERE[kind]} cannot be escaped safely; move it to a plain word or "…"')


#: A command's literal text between its values, and which values land in code a second program parses.
_Shape = tuple[list[str], dict[int, str]]


def _shape(parts: list[str]) -> _Shape:
    return parts[0::2], (code_values(parts) if len(parts) > 1 else {})


def _escape(rendered: str, shape: _Shape | None = None) -> str:
    parts = rendered.split(_FENCE)
    # Where a second program (sh -c, eval, ssh, python3 -c, a pipe into sh…) parses a value, only a plain word is data:
    # the template's shape says where, read once, unless this render's text between the values is another.
    in_code = shape[1] if shape is not None and shape[0] == parts[0::2] else _shape(parts)[1]
    reader = _Reader()
    out: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            program = in_code.get(index // 2)
            if program is not None and not plain_word(program).fullmatch(part):
                raise UsageError(refusal(program))
            out.append(reader.value(part))
        else:
            reader.feed(part)
            out.append(part)
    return "".join(out)


def _fence(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if _FENCE in text:
        raise UsageError("a value holds a NUL byte, which no command can receive")
    return f"{_FENCE}{text}{_FENCE}"


@lru_cache(maxsize=1)
def _environment() -> Environment:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, finalize=_fence)


def _stand_ins(source: str) -> list[str]:
    """A template's text split at its expressions, each standing in as the value "x" (the parts `_escape` reads)."""
    pieces: list[str] = []
    for index, literal in enumerate(_EXPRESSION.split(_JINJA_COMMENT.sub("", source))):
        pieces += [literal] if index == 0 else ["x", literal]
    return pieces


def _checked(source: str) -> _Shape | None:
    """`check_shell_template`, giving the template's shape where its text alone fixes it."""
    if _FENCE in source:
        raise UsageError("a shell command cannot hold a NUL byte")
    if "{%" in source:
        return None  # which text surrounds a value depends on the blocks taken: checked when rendered
    parts = _stand_ins(source)
    shape = _shape(parts)
    _escape(_FENCE.join(parts), shape)
    return shape


def check_shell_template(source: str) -> None:
    """Refuse, before any run, a command whose `{{ }}` sit where no value could be escaped (UsageError says where)."""
    _checked(source)


def stdin_reader(source: str) -> str | None:
    """The program of the command (a template or not) that may read the command's own stdin as code, if any."""
    return stdin_code(_stand_ins(source))


class ShellTemplate:
    """A compiled shell command template: `render(variables)` gives a command no value can change the shape of."""

    __slots__ = ("source", "_template", "_shape")

    def __init__(self, source: str):
        self._shape = _checked(source)
        self.source = source
        self._template = _environment().from_string(source)

    def render(self, variables: dict[str, Any]) -> str:
        return _escape(self._template.render(variables), self._shape)


@lru_cache(maxsize=1024)
def _compiled(source: str) -> ShellTemplate:
    return ShellTemplate(source)


def render_shell(source: str, variables: dict[str, Any]) -> str:
    """Render one shell command template (compiled once per distinct source)."""
    return _compiled(source).render(variables)
