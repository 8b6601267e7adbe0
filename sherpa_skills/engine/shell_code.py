"""Which values of a shell command land in code that a second program parses, and what such a value may be.

The outer shell's quoting hands a value to `sh -c "…"`, `eval`, `ssh host …`, `su -c`, `python3 -c`, `awk '…'`, a pipe
or a here-document into a shell as text that program then reads as code: escaping for the outer shell cannot keep it
data there. So `shell_template` lets only a plain word land in such a place (`plain_word`), and the refusal says how to
pass the value as data instead (an argument after the code, read as "$1"). `code_values` finds the places: it reads the
command as /bin/sh splits it into simple commands, their words and their stdin, and knows the programs (behind
wrappers like `sudo`, `env`, `timeout`, `xargs`, `find -exec`, `docker exec`) that run an argument or their stdin.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["code_values", "plain_word", "refusal", "stdin_code"]

#: Value k stands in the scanned text as the one character chr(_MARK + k) (the Unicode private use area).
_MARK = 0xE000
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: `$name` and `${name…}` in an unquoted here-document's body, expanded by the outer shell.
_EXPANDED = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")
_DECLARERS = frozenset({"export", "local", "readonly", "declare", "typeset"})
_PLAIN = re.compile(r"[A-Za-z0-9_.,:/@%+=-]+")
#: A sed script's delimiter may be any character: only letters, digits and '_' cannot end a command there.
_PLAIN_IN = {
    "sed": re.compile(r"[A-Za-z0-9_]+"),
    "gsed": re.compile(r"[A-Za-z0-9_]+"),
    "perl": re.compile(r"[A-Za-z0-9_.,:/%+=-]+"),  # '@name' would be an array perl interpolates
}

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "rbash", "busybox"})
_SKIPPED = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done", "time"})
#: Programs that run the rest of their words as a command: their options that take an argument, operands before it.
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (
        frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group", "--chdir"}),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "-C", "--unset", "--chdir"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "command": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "xargs": (
        frozenset({"-I", "-n", "-L", "-P", "-d", "-E", "-s", "-a", "--max-args", "--max-procs", "--arg-file"}),
        0,
    ),
    "nsenter": (frozenset({"-t", "--target", "-S", "-G", "-w", "-r"}), 0),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), 0),
    "ltrace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), 0),
}
_CONTAINER_OPTIONS = frozenset(
    {"-e", "--env", "-u", "--user", "-w", "--workdir", "-v", "--volume", "-p", "--publish", "--name", "--entrypoint",
     "--network", "-l", "--label", "--env-file", "--mount", "-h", "--hostname", "--platform", "--add-host", "-m",
     "--memory", "--cpus"}
)  # fmt: skip
_SSH_ARGUMENT_LETTERS = frozenset("bBcDEeFIiJLlmOopQRSWw")
#: What a program reads as code: its words' indices (→ the program) and whether its stdin is code (the program).
_Found = tuple[dict[int, str], str | None]
_Rule = Callable[[list[str], int, str], _Found]


def plain_word(program: str) -> re.Pattern[str]:
    """What a value may be where `program` reads it as code: a word no parser of it splits or reads as syntax."""
    return _PLAIN_IN.get(program, _PLAIN)


def refusal(program: str) -> str:
    """The one-line reason a value is refused in code `program` runs, and the way to pass it as data."""
    allowed = "letters, digits and _" if program in ("sed", "gsed") else "letters, digits and . _ - / : @ % + = ,"
    return (
        f"a template value lands in code that {program} runs, where quoting cannot keep it data: only a plain word "
        f"({allowed}) can go there; pass it as an argument instead (sh -c '… \"$1\"' _ {{{{ value }}}})"
    )


@dataclass
class _Command:
    """One simple command: its words as the program receives them, which pipeline it is in, what its stdin holds."""

    pipeline: int
    words: list[str] = field(default_factory=list)
    stdin: list[str] = field(default_factory=list)  # here-document bodies and here-strings
    redirected: bool = False  # its stdin is a file (`< f`): not the command's own


def code_values(parts: list[str]) -> dict[int, str]:
    """Of a rendered command split at its values (`parts[1::2]` are the values), the values (by position) that land
    in code a second program parses, each with that program's name."""
    count = len(parts) // 2
    commands = _Scanner(_marked(parts)).run()
    found: dict[int, str] = {}

    def mark(word: str, program: str) -> None:
        for char in word:
            k = ord(char) - _MARK
            if 0 <= k < count:
                found.setdefault(k, program)

    for at, command in enumerate(commands):
        positional, stdin = _reads_code(command.words, 0)
        for index, program in positional.items():
            mark(command.words[index], program)
        if stdin is None:
            continue
        for text_in in command.stdin:
            mark(text_in, stdin)
        for earlier in commands[:at]:  # what a pipe feeds the program's stdin
            if earlier.pipeline == command.pipeline:
                for word in earlier.words + earlier.stdin:
                    mark(word, stdin)
    return found


def _marked(parts: list[str]) -> str:
    """The command's text with value k as the one character chr(_MARK + k)."""
    return "".join(part if k % 2 == 0 else chr(_MARK + k // 2) for k, part in enumerate(parts))


def _values_in(text: str) -> str:
    return "".join(c for c in text if ord(c) >= _MARK)


def stdin_code(parts: list[str]) -> str | None:
    """The program that may read the command's own stdin as code (`sh`, `python3 -`, `ssh host`, or behind `cat |`),
    if one does: the stdin an action feeds the command is then code too."""
    pipelines: dict[int, list[_Command]] = {}
    for command in _Scanner(_marked(parts)).run():
        pipelines.setdefault(command.pipeline, []).append(command)
    for commands in pipelines.values():
        if commands[0].stdin or commands[0].redirected:
            continue  # the first command reads a here-document or a file, not the command's stdin
        for command in commands:
            program = _reads_code(command.words, 0)[1]
            if program is not None and not command.stdin and not command.redirected:
                return program
    return None


class _Scanner:
    """Splits a command the way /bin/sh does into simple commands and their words (quotes removed; an expansion
    stands as '_'), with here-documents and here-strings given to the command whose stdin they are. A variable given
    a value (`v={{ x }}`, `export v=…`, `for v in … {{ x }}`) carries it: where this shell expands `$v`, the value
    stands in the word, as it will when the command runs."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.commands: list[_Command] = []
        self.pipeline = 0
        self.pending: list[tuple[str, bool, bool, _Command]] = []  # here-documents: delimiter, strip, quoted, whose
        self.variables: dict[str, str] = {}  # a variable's name → the values it holds (their marks)

    def run(self) -> list[_Command]:
        self.level(nested=False)
        self.looped(self.commands[-1])
        return self.commands

    def assigned(self, command: _Command, word: str) -> None:
        """`name=…` where the shell reads it as an assignment (before the program, or after `export` and the like)."""
        found = _ASSIGNMENT.match(word)
        if found is None:
            return
        if all(_ASSIGNMENT.match(w) for w in command.words) or (command.words and command.words[0] in _DECLARERS):
            self.variables[word[: found.end() - 1]] = _values_in(word[found.end() :])

    def looped(self, command: _Command) -> None:
        """`for name in words`: the loop's variable holds each of the words in turn."""
        words = command.words
        if len(words) >= 3 and words[0] == "for" and words[2] == "in" and _NAME.fullmatch(words[1]):
            self.variables[words[1]] = _values_in("".join(words[3:]))

    def new(self, same_pipeline: bool) -> _Command:
        if self.commands:
            self.looped(self.commands[-1])
        if not same_pipeline:
            self.pipeline += 1
        command = _Command(self.pipeline)
        self.commands.append(command)
        return command

    def level(self, nested: bool) -> None:
        """Top-level text, or the inside of $(…) (returns after its ')')."""
        text, n = self.text, len(self.text)
        command = self.new(False)
        word: list[str] | None = None
        quoted = False  # the word holds quotes or a backslash (a here-document's delimiter so written is not expanded)
        target: str | None = None  # what the word being read is: a redirection's file, a here-document, a here-string

        def end() -> None:
            nonlocal word, target, quoted
            if word is None:
                return
            done, word = "".join(word), None
            if target is None:
                self.assigned(command, done)
                command.words.append(done)
            elif target == "<<<":
                command.stdin.append(done)
            elif target.startswith("<<"):
                self.pending.append((done, target == "<<-", quoted, command))
            target, quoted = None, False

        while self.i < n:
            c = text[self.i]
            if c in " \t":
                end()
                self.i += 1
            elif c == "\n":
                end()
                self.i += 1
                self.bodies()
                command = self.new(False)
            elif c == "\\":
                if text.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                word = (word or []) + [text[self.i + 1 : self.i + 2]]
                quoted = True
                self.i += 2
            elif c == "'":
                close = text.find("'", self.i + 1)
                close = n if close < 0 else close
                word = (word or []) + [text[self.i + 1 : close]]
                quoted = True
                self.i = close + 1
            elif c == '"':
                word, quoted = word or [], True
                self.double(word)
            elif c == "$" or c == "`":
                word = (word or []) + [self.expansion()]
            elif c == "#" and word is None:
                close = text.find("\n", self.i)
                self.i = n if close < 0 else close
            elif c in "<>":
                if word is not None and "".join(word).isdigit():
                    word = None  # a file descriptor's number, not a word
                end()
                for op in ("<<<", "<<-", "<<", ">>", ">&", "<&", ">|", "<>", "<", ">"):
                    if text.startswith(op, self.i):
                        target = op if op.startswith("<<") else ">"
                        command.redirected |= op in ("<", "<&", "<>")
                        self.i += len(op)
                        break
            elif c in ";&|()":
                end()
                if c == "&" and text.startswith("&>", self.i):
                    target = ">"
                    self.i += 3 if text.startswith("&>>", self.i) else 2
                    continue
                if c == ")" and nested:
                    self.i += 1
                    return
                doubled = text.startswith(c * 2, self.i) and c in ";&|"
                self.i += 2 if doubled else 1
                command = self.new(c == "|" and not doubled)
            else:
                word = (word or []) + [c]
                self.i += 1
        end()

    def double(self, word: list[str]) -> None:
        """A "…" word part: backslash escapes only $ ` " \\ and newline; an expansion stands as '_'."""
        text, n = self.text, len(self.text)
        self.i += 1
        while self.i < n:
            c = text[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n and text[self.i + 1] in '$`"\\\n':
                word.append("" if text[self.i + 1] == "\n" else text[self.i + 1])
                self.i += 2
            elif c == "$" or c == "`":
                word.append(self.expansion())
            else:
                word.append(c)
                self.i += 1

    def expansion(self) -> str:
        """$(…), $((…)), ${…}, `…` read past (a command substitution's commands are scanned too), or a bare '$'."""
        text = self.text
        if text.startswith("$((", self.i):
            self.i = self.closing(self.i + 3, "(", ")") + 1
            if self.i < len(text) and text[self.i] == ")":
                self.i += 1
            return "_"
        if text.startswith("$(", self.i):
            self.i += 2
            pipeline = self.pipeline
            self.level(nested=True)
            self.looped(self.commands[-1])
            self.pipeline = max(self.pipeline, pipeline) + 1
            return "_"
        if text.startswith("${", self.i):
            name, start = _NAME.match(text, self.i + 2), self.i
            self.i = self.closing(self.i + 2, "{", "}") + 1
            # As written (a program named so is recognised as one), with the values the variable holds.
            return (self.variables.get(name.group(0), "") if name else "") + text[start : self.i]
        if text[self.i] == "`":
            close = self.i + 1
            while close < len(text) and text[close] != "`":
                close += 2 if text[close] == "\\" else 1
            self.i = close + 1
            return "_"
        name = _NAME.match(text, self.i + 1)
        if name is not None:
            self.i = name.end()
            return self.variables.get(name.group(0), "") + "$" + name.group(0)
        self.i += 1
        return "$"

    def closing(self, i: int, opening: str, closing: str) -> int:
        depth = 0
        while i < len(self.text):
            c = self.text[i]
            if c == opening:
                depth += 1
            elif c == closing:
                if depth == 0:
                    return i
                depth -= 1
            i += 1
        return i

    def bodies(self) -> None:
        """The here-documents begun on the line just ended: their lines go to their commands' stdin."""
        text = self.text
        for delimiter, strip, quoted, command in self.pending:
            while self.i < len(text):
                close = text.find("\n", self.i)
                close = len(text) if close < 0 else close
                line = text[self.i : close]
                self.i = close + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                if not quoted:  # this shell expands the body's variables before the program reads it
                    line += "".join(self.variables.get(m.group(1) or m.group(2), "") for m in _EXPANDED.finditer(line))
                command.stdin.append(line)
        self.pending = []


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _options(words: list[str], i: int, with_argument: frozenset[str]) -> int:
    """The index after the options starting at `i` (an option in `with_argument` takes the next word)."""
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return i + 1
        i += 2 if words[i] in with_argument else 1
    return i


def _reads_code(words: list[str], i: int) -> _Found:
    """The simple command `words[i:]`: which of its words a program parses as code (index → program), and the
    program that reads its stdin as code, if any."""
    while i < len(words) and (words[i] in _SKIPPED or _ASSIGNMENT.match(words[i])):
        i += 1
    if i >= len(words) or any(ord(c) >= _MARK for c in words[i]):
        return {}, None  # nothing to run, or a value names the program: not a place we can reason about
    if words[i].startswith("$"):
        return _expanded(words, i)
    name = _program(words[i])
    if name == "busybox" and i + 1 < len(words):
        i, name = i + 1, _program(words[i + 1])
    if name in _WRAPPERS:
        if name == "env" and any(w in ("-S", "--split-string") for w in words[i + 1 :]):
            at = next(k for k in range(i + 1, len(words)) if words[k] in ("-S", "--split-string"))
            return ({at + 1: "env"} if at + 1 < len(words) else {}), None
        with_argument, operands = _WRAPPERS[name]
        j = _options(words, i + 1, with_argument)
        while j < len(words) and _ASSIGNMENT.match(words[j]):
            j += 1
        return _reads_code(words, j + operands)
    rule = _RULES.get(name)
    if rule is not None:
        return rule(words, i, name)
    if name in _SHELLS:
        return _shell(words, i, name)
    if re.fullmatch(r"(?:python|pypy)[0-9.]*", name):
        return _flagged(words, i, name, {"-c"}, frozenset({"-W", "-X", "-Q"}), stop={"-m"}, attached="-c")
    if name in ("perl", "ruby"):
        return _perl(words, i, name)
    return {}, None


def _expanded(words: list[str], i: int) -> _Found:
    """A program named by a variable (`$SHELL`, `${PYTHON:-python3}`): whatever it is, the word after its `-c` or
    `-e` is taken for code."""
    for k in range(i + 1, len(words) - 1):
        if words[k] in ("-c", "-e"):
            return {k + 1: words[i]}, None
        if not words[k].startswith("-"):
            break
    return {}, None


def _shell(words: list[str], i: int, name: str) -> _Found:
    j, command, stdin = i + 1, False, False
    while j < len(words) and words[j][:1] in "-+" and words[j] not in ("-", "--", "+"):
        w = words[j]
        if w in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            j += 2
            continue
        if not w.startswith("--"):
            command |= "c" in w[1:]
            stdin |= "s" in w[1:]
        j += 1
    if j < len(words) and words[j] == "--":
        j += 1
    if command:
        return ({j: name} if j < len(words) else {}), None
    return {}, (name if j >= len(words) or stdin else None)


def _flagged(
    words: list[str],
    i: int,
    name: str,
    flags: set[str],
    with_argument: frozenset[str],
    stop: set[str] | None = None,
    attached: str | None = None,
) -> _Found:
    """A program whose code follows one of `flags` (`-c CODE`, `--eval CODE`; `attached` for `-cCODE`); with none,
    its stdin is code when it has no operand, or '-'."""
    code: dict[int, str] = {}
    j = i + 1
    while j < len(words) and words[j].startswith("-") and words[j] != "-":
        w = words[j]
        if w in flags:
            if j + 1 < len(words):
                code[j + 1] = name
            j += 2
            continue
        if any(w.startswith(f + "=") for f in flags if f.startswith("--")) or (
            attached and w.startswith(attached) and len(w) > len(attached) and not w.startswith("--")
        ):
            code[j] = name
        elif stop and w in stop:
            return code, None
        elif w in with_argument:
            j += 1
        j += 1
    if code:
        return code, None
    operand = j < len(words) and words[j] != "-"
    return {}, (None if operand else name)


def _perl(words: list[str], i: int, name: str) -> _Found:
    code: dict[int, str] = {}
    j = i + 1
    while j < len(words) and words[j].startswith("-") and words[j] not in ("-", "--"):
        if re.fullmatch(r"-[A-Za-z0-9]*[eE]", words[j]) and j + 1 < len(words):
            code[j + 1] = name
            j += 1
        j += 1
    if code:
        return code, None
    return {}, (name if j >= len(words) or words[j] == "-" else None)


def _eval(words: list[str], i: int, name: str) -> _Found:
    """Every later word, joined, is shell code."""
    return {k: name for k in range(i + 1, len(words))}, None


def _ssh(words: list[str], i: int, name: str) -> _Found:
    j = i + 1
    while j < len(words) and words[j].startswith("-") and words[j] != "-":
        if words[j] == "--":
            j += 1
            break
        letters = words[j][1:]
        takes = next((k for k, letter in enumerate(letters) if letter in _SSH_ARGUMENT_LETTERS), None)
        j += 2 if takes is not None and takes == len(letters) - 1 else 1
    host = j
    if host + 1 < len(words):
        return {k: name for k in range(host + 1, len(words))}, None
    return {}, name


def _after_flag(flags: tuple[str, ...], stdin: bool) -> _Rule:
    """`su -c CODE`, `script -c CODE`: the word after one of `flags` (or `--flag=CODE`) is shell code."""

    def rule(words: list[str], i: int, name: str) -> _Found:
        code: dict[int, str] = {}
        for k in range(i + 1, len(words)):
            if words[k] in flags and k + 1 < len(words):
                code[k + 1] = name
            elif any(words[k].startswith(f + "=") for f in flags if f.startswith("--")):
                code[k] = name
        return code, (name if stdin and not code else None)

    return rule


def _flock(words: list[str], i: int, name: str) -> _Found:
    code, _ = _after_flag(("-c", "--command"), False)(words, i, name)
    if code:
        return code, None
    j = _options(words, i + 1, frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}))
    return _reads_code(words, j + 1)


def _watch(words: list[str], i: int, name: str) -> _Found:
    if any(w in ("-x", "--exec") for w in words[i + 1 :]):
        return _reads_code(words, _options(words, i + 1, frozenset({"-n", "--interval"})))
    j = _options(words, i + 1, frozenset({"-n", "--interval"}))
    return {k: name for k in range(j, len(words))}, None


def _find(words: list[str], i: int, _: str) -> _Found:
    code: dict[int, str] = {}
    k = i + 1
    while k < len(words):
        if words[k] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((e for e in range(k + 1, len(words)) if words[e] in (";", "+")), len(words))
            code.update(_reads_code(words[:end], k + 1)[0])
            k = end
        k += 1
    return code, None


def _container(words: list[str], i: int, _: str) -> _Found:
    j = _options(words, i + 1, frozenset())
    if j >= len(words) or words[j] not in ("exec", "run"):
        return {}, None
    j = _options(words, j + 1, _CONTAINER_OPTIONS)
    return _reads_code(words, j + 1)


def _kubectl(words: list[str], i: int, _: str) -> _Found:
    if "exec" in words[i + 1 :] and "--" in words[i + 1 :]:
        return _reads_code(words, words.index("--", i + 1) + 1)
    return {}, None


def _script(code_flags: tuple[str, ...], file_flags: tuple[str, ...], with_argument: frozenset[str]) -> _Rule:
    """`awk`, `sed`: the program follows one of `code_flags` (or `--flag=…`), is read from a file, or is the first
    operand."""
    attached = tuple(f + "=" for f in (*code_flags, *file_flags) if f.startswith("--"))

    def rule(words: list[str], i: int, name: str) -> _Found:
        j, given = i + 1, False
        code: dict[int, str] = {}
        while j < len(words) and words[j].startswith("-") and words[j] != "-":
            w = words[j]
            if w == "--":
                j += 1
                break
            if w in code_flags and j + 1 < len(words):
                code[j + 1] = name
            elif w.startswith(attached) and w.split("=", 1)[0] in code_flags:
                code[j] = name
            given |= w in code_flags or w in file_flags or w.startswith(attached)
            j += 2 if w in with_argument else 1
        if not given and j < len(words):
            code[j] = name
        return code, None

    return rule


def _sqlite(words: list[str], i: int, name: str) -> _Found:
    code: dict[int, str] = {}
    j = i + 1
    takes = {"-cmd", "-init", "-separator", "-newline", "-nullvalue", "-mmap", "-vfs", "-lookaside", "-pagecache"}
    while j < len(words) and words[j].startswith("-") and words[j] != "-":
        if words[j] == "-cmd" and j + 1 < len(words):
            code[j + 1] = name
        j += 2 if words[j] in takes else 1
    rest = list(range(j + 1, len(words)))  # the first operand is the database file
    code.update({k: name for k in rest})
    return code, (name if not rest else None)


_AWK = _script(
    ("-e", "--source"),
    ("-f", "--file"),
    frozenset({"-F", "-v", "-f", "-e", "--field-separator", "--assign", "--file", "--source"}),
)
_SED = _script(
    ("-e", "--expression"), ("-f", "--file"), frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})
)
_RULES: dict[str, _Rule] = {
    "eval": _eval,
    "ssh": _ssh,
    "su": _after_flag(("-c", "--command"), True),
    "runuser": _after_flag(("-c", "--command"), False),
    "script": _after_flag(("-c", "--command"), False),
    "psql": _after_flag(("-c", "--command"), True),
    "mysql": _after_flag(("-e", "--execute"), True),
    "mariadb": _after_flag(("-e", "--execute"), True),
    "flock": _flock,
    "watch": _watch,
    "find": _find,
    "docker": _container,
    "podman": _container,
    "nerdctl": _container,
    "kubectl": _kubectl,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _AWK),
    **dict.fromkeys(("sed", "gsed"), _SED),
    "sqlite3": _sqlite,
    "node": lambda w, i, n: _flagged(w, i, n, {"-e", "--eval", "-p", "--print"}, frozenset({"-r", "--require"})),
    "bun": lambda w, i, n: _flagged(w, i, n, {"-e", "--eval", "-p", "--print"}, frozenset()),
    "php": lambda w, i, n: _flagged(w, i, n, {"-r"}, frozenset({"-c", "-d", "-f", "-z"})),
}
