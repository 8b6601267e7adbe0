"""Literal agreement: the numbers, paths, quoted names, `*.ext` patterns and flags a task states must agree with
a procedure's own text, or fill one of its `{{ parameters }}`; a disagreement is a reason not to replay it.

Near misses (`find -mmin +60` for "older than 7 days", `-size 100k` for "larger than 100k") look alike by
meaning and differ only here, so these checks decide them. Pure functions over strings.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..store.params import PARAMETER

_QUOTED = re.compile(r'"([^"\n]{1,120})"|(?<![A-Za-z])\'([^\'\n]{1,120})\'|`([^`\'\n]{1,120})[`\']')
_GLOB = re.compile(r"\*\.([A-Za-z0-9_]{1,12})\b")
_DOT_EXT = re.compile(r"(?<![\w.*/~$-])\.([A-Za-z][A-Za-z0-9]{0,5})\b(?![\w/.-])")  # ".pl files"
# Starts only where a word starts: unanchored, a long word is rescanned from each of its letters (quadratic).
_PROC_GLOB = re.compile(r"(?<![\w.-])[\w.-]*(?:\*|\[[\w-]+\])[\w.*\[\]-]*")
_PRODUCT = re.compile(r"(?<![\w.])(\d{1,6})\s*[*×]\s*(\d{1,6})(?![\w.])")
_PLACEHOLDER = re.compile(r"^(.+?)(?:N{2,}|X{1,3})$")  # "tempNNN": a prefix and a numbered suffix
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[\w.~*+@:-]+(?:/[\w.~*+@:-]*)*|(?<![\w/])[\w.-]+/[\w.-]+(?:/[\w.-]*)*")
_FILE = re.compile(r"(?<![\w./-])[\w-]+\.(?:[A-Za-z][A-Za-z0-9]{0,5})\b(?![/\w])")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
_NUMBER = re.compile(r"(?<![\w.])([<>+-]?)(\d+(?:\.\d+)?)\s*([A-Za-z]{1,10})?\b")  # "megabytes" is 9 letters
_COMMAND_NUMBER = re.compile(r"(?<![\w.])([+-]?)(\d+(?:\.\d+)?)([A-Za-z]{0,2})\b")
# A number glued to a cluster of short flags (`split -dl1`, `head -n5`): the command states it all the same.
_GLUED = re.compile(r"(?<![\w-])-[A-Za-z]{1,3}(\d+)([A-Za-z]{0,2})\b")
# `head`/`tail` with no count of their own show 10 lines.
_HEAD_TAIL = re.compile(r"(?:^|[|;&(`])\s*(?:\S*/)?(?:head|tail)\b([^|;&)`]*)")
_COUNTED = re.compile(r"(?<![\w-])(?:-[nc]|--lines|--bytes|[+-]\d)")
_EMPTY = re.compile(r"(?<![\w-])(!\s*|-not\s+)?-empty\b")
_THOUSANDS = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+)(?![\d,])")  # "2,000"; "1,2" stays a list
_BLOCKS = re.compile(r"\b512[\s-]?bytes?\s+(blocks?)\b", re.IGNORECASE)  # "5 512-byte blocks" counts 5
# "24 to 48 hours": the unit said once is both ends'. Only "to" or a dash: "between five and ten" stays two.
_RANGE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:to|-|–)\s*(\d+(?:\.\d+)?)\s*([A-Za-z]{1,10})\b")
# A compressor names the extension it writes: "to .bz2 archives" is `bzip2`.
_COMPRESSORS = {"gz": "gzip", "bz2": "bzip2"}

# Slashed phrases that are prose, not paths ("files/directories", "normal/regular"): two bare words.
_PROSE_SLASH = re.compile(r"[A-Za-z]+/[A-Za-z]+")
# Spelled amounts; "one" is a number only before a unit (`_ONE`) or a scale ("one hundred").
_NUMBER_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000}
# A spelled amount, read as one number: "five hundred", "twenty-five", "a hundred and fifty", "2 thousand". "and"
# joins only after a scale: "between five and ten" is two numbers.
_WORD = "|".join(_NUMBER_WORDS)
_SCALE = "|".join(_SCALES)
_SPELLED = re.compile(
    rf"\b(?:(?:a|one|\d+)\s+(?=(?:{_SCALE})\b))?(?:{_WORD}|{_SCALE})"
    rf"(?:(?:\s+|-)(?:{_WORD}|{_SCALE}|one)\b|(?:(?<=hundred)|(?<=thousand))\s+and\s+(?:{_WORD}|one)\b)*\b",
    re.IGNORECASE,
)


def _spelled_value(words: str) -> str:
    """The number a run of number words says ("five hundred" 500, "twenty-five" 25, "a hundred and fifty" 150)."""
    total = current = 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word in ("a", "and"):
            continue
        if word in _SCALES:
            current = max(current, 1) * _SCALES[word]
            if _SCALES[word] == 1000:
                total, current = total + current, 0
        else:
            current += int(word) if word.isdigit() else 1 if word == "one" else _NUMBER_WORDS[word]
    return str(total + current)


_UNITS = {
    "minute": {"m", "min", "mins", "minute", "minutes", "mmin", "amin", "cmin"},
    "day": {"d", "day", "days", "mtime", "atime", "ctime"},
    "hour": {"h", "hr", "hrs", "hour", "hours"},
    "second": {"s", "sec", "secs", "second", "seconds"},
    "week": {"w", "week", "weeks"},
    "kilobyte": {"k", "kb", "kib", "kilobyte", "kilobytes"},
    "megabyte": {"m", "mb", "mib", "megabyte", "megabytes", "meg", "megs"},
    "gigabyte": {"g", "gb", "gib", "gigabyte", "gigabytes"},
    "byte": {"c", "b", "byte", "bytes"},
    "line": {"line", "lines"},
    "char": {"char", "chars", "character", "characters"},
}
_TIME_UNITS = frozenset({"minute", "day", "hour", "second", "week"})
_SIZE_UNITS = frozenset({"kilobyte", "megabyte", "gigabyte", "byte"})
# "one" is a number only before a unit ("one day"); "each one", "the one where" are prose.
_ONE = re.compile(
    r"\b(one|a single)(?=\s+("
    + "|".join(sorted({n for names in _UNITS.values() for n in names if len(n) > 2}))
    + r")\b)",
    re.IGNORECASE,
)
# The same amount in another unit agrees ("24 hours" is `-mtime -1`); sizes by either base (k = 1000 or 1024).
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_BYTES = {"byte": 1, "kilobyte": 1000, "megabyte": 1000**2, "gigabyte": 1000**3}
_SIZE_SLACK = 0.03  # 1024 against 1000 per step is 2.4 %
_MORE = frozenset("more over above greater larger bigger older exceeding least longer".split())
_LESS = frozenset("less under below smaller fewer within newer last past younger lower shorter".split())
_EXACT = frozenset("exactly".split())

# Parameter names that say which kind of literal they take.
_NUMERIC_NAMES = re.compile(
    r"(^|_)(n|num|number|count|days?|hours?|minutes?|mins?|secs?|seconds?|size|age|limit|port|max|min|depth|lines?|timeout|percent|version)($|_)"
)
_PATHISH_NAMES = re.compile(
    r"(^|_)(path|dir|directory|folder|file|filename|src|source|dest|destination|target|root|home|out|output|input)($|_)"
)


@dataclass(frozen=True)
class Literal:
    """One thing a text states exactly: its kind, its value, and for numbers the unit and the direction."""

    kind: str  # number | path | quoted | ext | name | flag
    value: str
    unit: str | None = None
    comparator: str | None = None  # more | less | exact

    def __str__(self) -> str:
        if self.kind == "ext":
            return f"*.{self.value}"
        if self.kind == "number":
            return " ".join(
                x
                for x in (
                    self.comparator and {"more": ">", "less": "<", "exact": "="}[self.comparator],
                    self.value,
                    self.unit,
                )
                if x
            )
        return self.value


@dataclass
class Agreement:
    """How a procedure's text answers the task's literals."""

    agreed: list[str] = field(default_factory=list)
    disagreed: list[str] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.disagreed


def _unit_family(word: str | None) -> set[str]:
    if not word:
        return set()
    word = word.lower()
    return {family for family, names in _UNITS.items() if word in names}


def _comparator(before: str, sign: str) -> str | None:
    if sign in ("+", ">"):
        return "more"
    if sign in ("-", "<"):
        return "less"
    words = re.findall(r"[a-z']+", before.lower())[-9:]
    for i in range(len(words) - 1, max(-1, len(words) - 4), -1):
        w = words[i]
        found = "more" if w in _MORE else "less" if w in _LESS else "exact" if w in _EXACT else None
        if found is None:
            continue
        # "not changed in the last 4 days" is older than 4 days: a negation just before flips the direction.
        # "not accessed in over 30 days" is still over 30 days: the negation is of the access, not of the span.
        spans = found == "more" and i > 0 and words[i - 1] in ("in", "for")
        if (
            found != "exact"
            and not spans
            and any(x in ("not", "n't") or x.endswith("n't") for x in words[max(0, i - 6) : i])
        ):
            found = "less" if found == "more" else "more"
        return found
    return None


def extract(text: str) -> list[Literal]:
    """The literals a task (or a procedure's description) states, in order, without duplicates."""
    found: list[Literal] = []
    seen: set[tuple[str, str]] = set()

    def put(lit: Literal) -> None:
        key = (lit.kind, lit.value.lower())
        if key not in seen and lit.value:
            seen.add(key)
            found.append(lit)

    for m in _QUOTED.finditer(text):
        value = next(g for g in m.groups() if g is not None).strip()
        if re.fullmatch(r"\*?\.[A-Za-z0-9]{1,6}", value):
            put(Literal("ext", value.lstrip("*.").lower()))  # '.pl' in quotes is an extension
        elif value and len(value.split()) <= 6:
            put(Literal("quoted", value))
    rest = _QUOTED.sub(" ", text)
    for m in _GLOB.finditer(rest):
        put(Literal("ext", m.group(1).lower()))
    rest = _GLOB.sub(" ", rest)
    for m in _DOT_EXT.finditer(rest):
        put(Literal("ext", m.group(1).lower()))
    rest = _DOT_EXT.sub(" ", rest)
    for m in _PATH.finditer(rest):
        value = m.group(0).rstrip(".,;:")
        if not _PROSE_SLASH.fullmatch(value) and not re.fullmatch(r"[\d/.-]+", value):
            put(Literal("path", value))
    rest = _PATH.sub(" ", rest)
    for m in _FILE.finditer(rest):
        if not re.fullmatch(r"[\d.]+", m.group(0)) and not m.group(0).lower().startswith(("e.g", "i.e")):
            put(Literal("name", m.group(0)))
    rest = _FILE.sub(" ", rest)
    for m in _FLAG.finditer(rest):
        put(Literal("flag", m.group(1)))
    rest = _FLAG.sub(" ", rest)
    rest = _SPELLED.sub(lambda w: _spelled_value(w.group(0)), rest)  # before "one day": "twenty one days" is 21
    rest = _ONE.sub("1", rest)
    rest = _THOUSANDS.sub(lambda m: m.group(1).replace(",", ""), rest)
    rest = _BLOCKS.sub(lambda m: m.group(1), rest)
    rest = _RANGE.sub(_range, rest)
    spelled = _PRODUCT.sub(lambda m: str(int(m.group(1)) * int(m.group(2))), rest)  # "5*24 hours"
    for m in _NUMBER.finditer(spelled):
        sign, number, unit = m.groups()
        family = _unit_family(unit)
        put(
            Literal(
                "number",
                _canonical(number),
                unit=_one(family) if family else None,
                comparator=_comparator(spelled[max(0, m.start() - 60) : m.start()], sign),
            )
        )
    return found


def _range(m: re.Match[str]) -> str:
    low, high, unit = m.groups()
    return f"{low} {unit} to {high} {unit}" if _unit_family(unit) else m.group(0)


def _canonical(number: str) -> str:
    return number.lstrip("0") or "0" if "." not in number else str(float(number))


def _one(families: set[str]) -> str:
    return sorted(families)[0] if len(families) == 1 else "|".join(sorted(families))


@dataclass
class ProcedureText:
    """What a procedure says, prepared once per procedure for checking literals against."""

    text: str
    numbers: dict[str, list[tuple[str, set[str]]]]  # number → [(sign or comparator, unit families)]
    params: list[str]
    globs: list[str] = field(default_factory=list)  # patterns in the text (`*.p[lm]`) an extension may fall under
    described: list[Literal] = field(default_factory=list)  # what the description itself states


def procedure_text(description: str, task_type: str, tags: Iterable[str], commands: Iterable[str]) -> ProcedureText:
    commands = list(commands)
    body = "\n".join([task_type, description, " ".join(tags), *commands])
    numbers: dict[str, list[tuple[str, set[str]]]] = {}
    described = extract(description)
    for lit in described:
        if lit.kind == "number":
            numbers.setdefault(lit.value, []).append(
                (lit.comparator or "", set(lit.unit.split("|")) if lit.unit else set())
            )
    for command in commands:
        plain = PARAMETER.sub(" ", command)  # the flag is looked for in the text the number was found in
        for m in _COMMAND_NUMBER.finditer(plain):
            sign, number, suffix = m.groups()
            flag = re.search(r"-(\w+)\s*$", plain[: m.start()])
            units = _unit_family(suffix) | (_unit_family(flag.group(1)) if flag else set())
            comparator = {"+": "more", "-": "less"}.get(
                sign, "exact" if flag and units & (_TIME_UNITS | _SIZE_UNITS) else ""
            )
            if re.search(r"-perm\s*/?$", plain[: m.start()]):
                # `-perm -644` is every one of those bits (at least), `/644` or `+644` any of them, `644` exactly.
                comparator = {"-": "more", "+": ""}.get(sign, "" if plain[: m.start()].endswith("/") else "exact")
            numbers.setdefault(_canonical(number), []).append((comparator, units))
        for m in _GLUED.finditer(plain):
            if m.group(1) == "0":
                continue  # `xargs -r0`, `sort -z0`: a null separator, not an amount
            numbers.setdefault(_canonical(m.group(1)), []).append(("", _unit_family(m.group(2))))
        for m in _HEAD_TAIL.finditer(command):
            if not _COUNTED.search(m.group(1)):
                numbers.setdefault("10", []).append(("", {"line"}))
        if any(not m.group(1) for m in _EMPTY.finditer(command)):
            numbers.setdefault("0", []).append(("exact", {"byte"}))
    params = list(dict.fromkeys(n for c in commands for n in PARAMETER.findall(c)))
    globs = [g for g in dict.fromkeys(_PROC_GLOB.findall(body.lower())) if len(re.sub(r"[*?\[\]]", "", g)) >= 2]
    return ProcedureText(body.lower(), numbers, params, globs, described)


#: Literals that say where the work happens or on what: a path, a file name, a quoted name, a pattern.
PLACES = frozenset({"path", "name", "quoted", "ext"})


def unstated(literals: list[Literal], proc: ProcedureText, task: str, kinds: frozenset[str] | None = None) -> int:
    """How many literals the procedure's description states that the task does not (of `kinds` only, when given): a
    near twin of a description ("under /tmp" for "under /var", "*.log" dropped) keeps the meaning close and changes or
    leaves out one of these."""
    said = {(x.kind, x.value.lower()) for x in literals if x.kind != "number"}
    text = task.lower()
    return sum(
        not _said_number(x, literals)
        if x.kind == "number"
        else (x.kind, x.value.lower()) not in said and x.value.lower() not in text
        for x in proc.described
        if kinds is None or x.kind in kinds
    )


def _said_number(described: Literal, literals: list[Literal]) -> bool:
    """The task states this amount: the same number in a compatible unit ("60 megabytes" is not "60 minutes")."""
    units = set(described.unit.split("|")) if described.unit else set()
    return any(
        x.kind == "number"
        and x.value == described.value
        and (not units or not x.unit or units & set(x.unit.split("|")))
        for x in literals
    )


def _number_agrees(lit: Literal, proc: ProcedureText) -> bool:
    wanted = set(lit.unit.split("|")) if lit.unit else set()
    for comparator, units in proc.numbers.get(lit.value, ()):
        if wanted and units and not (wanted & units):
            continue  # 30 minutes is not 30 days
        if lit.comparator and comparator and lit.comparator != comparator:
            continue  # more than 10 bytes is not less than 10 bytes
        return True
    return _converted_agrees(lit, wanted, proc)


def _amounts(value: float, units: set[str]) -> list[tuple[str, float]]:
    return [
        ("time", value * _SECONDS[u]) if u in _SECONDS else ("size", value * _BYTES[u])
        for u in units
        if u in _SECONDS or u in _BYTES
    ]


def _converted_agrees(lit: Literal, wanted: set[str], proc: ProcedureText) -> bool:
    """The same amount stated in another unit: 24 hours and one day, 20 MB and 20000k."""
    stated = _amounts(float(lit.value), wanted)
    if not stated:
        return False
    for number, seen in proc.numbers.items():
        for comparator, units in seen:
            if lit.comparator and comparator and lit.comparator != comparator:
                continue
            for kind, amount in _amounts(float(number), units):
                for want_kind, want in stated:
                    if kind != want_kind or amount <= 0:
                        continue
                    if kind == "time" and amount == want:
                        return True
                    if kind == "size" and any(
                        abs(want * f - amount) <= _SIZE_SLACK * amount
                        for f in (1.0, 1.024, 1.024**2, 1 / 1.024, 1 / 1.024**2)
                    ):
                        return True
    return False


def _text_agrees(lit: Literal, proc: ProcedureText) -> bool:
    value = lit.value.lower()
    if lit.kind == "ext":
        if re.search(rf"\.{re.escape(value)}\b", proc.text) or re.search(rf"\b{re.escape(value)}\b", proc.text):
            return True
        if value in _COMPRESSORS and re.search(rf"\b{_COMPRESSORS[value]}\b", proc.text):
            return True
        return any(fnmatch.fnmatchcase(f"x.{value}", g) for g in proc.globs)  # ".pl" under `*.p[lm]`
    placeholder = _PLACEHOLDER.match(lit.value)
    if placeholder and lit.kind in ("name", "path", "quoted") and len(placeholder.group(1)) >= 1:
        value = placeholder.group(1).lower()  # "t.NN" names the prefix "t."
    if lit.kind == "path":
        return value in proc.text or value.rstrip("/") in proc.text
    if lit.kind == "flag":
        return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", proc.text) is not None
    return value in proc.text or _loosely_in(lit, value, proc.text) or _plural_of_described(lit, value, proc)


def _plural_of_described(lit: Literal, value: str, proc: ProcedureText) -> bool:
    """A quoted word that the description quotes in the singular or plural ('others' for 'other'). Only a quoted
    word of the description: `myfiles` is not the file `myfile` a command names."""
    if lit.kind != "quoted" or not re.fullmatch(r"[a-z]{5,}", value):  # "ips" is an identifier, not ip's plural
        return False
    return any(x.kind == "quoted" and value in (x.value.lower() + "s", x.value.lower()[:-1]) for x in proc.described)


def _loose(text: str) -> str:
    """Text with the shell's spelling taken off: backslashes (a regex escaped once or twice is one regex), and
    one-letter brackets (`[p]ython` is grep's way of writing python without matching itself)."""
    return re.sub(r"\[(\w)\]", r"\1", re.sub(r"\\+", r"\\", text))  # "\r" stays an escape, not an r


def _loosely_in(lit: Literal, value: str, text: str) -> bool:
    """The same value spelled otherwise: escaped, or a quoted message around a `$variable`."""
    if ("\\" in value or "[" in text or "\\" in text) and _loose(value) in _loose(text):
        return True
    if lit.kind == "quoted" and "$" in value:
        parts = [p.strip() for p in re.split(r"(\$\{?\w+\}?)", value)]
        return all(p in text for p in parts if p)  # "$dir is empty": `echo {} is empty` for $dir
    return False


def _param_for(lit: Literal, free: list[str]) -> str | None:
    """The parameter a literal can fill: one whose name says it takes this kind, else the only one left."""
    for name in free:
        if lit.kind == "number" and _NUMERIC_NAMES.search(name.lower()):
            return name
        if lit.kind in ("path", "name", "quoted") and _PATHISH_NAMES.search(name.lower()):
            return name
    if (
        lit.kind != "flag"
        and len(free) == 1
        and not (_NUMERIC_NAMES.search(free[0].lower()) or _PATHISH_NAMES.search(free[0].lower()))
    ):
        return free[0]  # the only parameter left, and its name does not ask for another kind
    return None


def agree(literals: list[Literal], proc: ProcedureText, given: dict[str, object] | None = None) -> Agreement:
    """Check every stated literal against the procedure; a literal it lacks may fill a free parameter."""
    result = Agreement()
    free = [p for p in proc.params if p not in (given or {})]
    values = {str(v).strip().lower() for v in (given or {}).values()}
    for lit in literals:
        ok = _number_agrees(lit, proc) if lit.kind == "number" else _text_agrees(lit, proc)
        ok = ok or lit.value.lower() in values  # the caller gave this very value for a parameter
        if ok:
            result.agreed.append(str(lit))
            continue
        name = _param_for(lit, free)
        if name is not None:
            free.remove(name)
            result.params[name] = lit.value if lit.kind != "ext" else f"*.{lit.value}"
            result.agreed.append(f"{lit} → {{{{ {name} }}}}")
            continue
        result.disagreed.append(_disagreement(lit, proc))
    return result


def _disagreement(lit: Literal, proc: ProcedureText) -> str:
    if lit.kind == "number":
        others = sorted(proc.numbers)
        if lit.value in proc.numbers:
            return f"{lit} is stated, the procedure has {lit.value} with another unit or direction"
        return f"{lit} vs {', '.join(others[:3])}" if others else f"{lit} is not in the procedure"
    return f"{lit} is not in the procedure"
