"""What a logged shell command is, read with a real shell tokenizer:
look-around, interactive, noise, long-running, or work.

Mining keeps only *work*: commands that change something and can run unattended. Commands are split by a shell
tokenizer (quotes and escapes respected, operators as their own tokens; one regex scan, cached, as `shlex` is ten
times slower on a 10k-command history), so `rg "a|b" | sed -n 1,5p` is two read-only stages, not four words
around a pipe; a redirect into a file (not /dev/null), `tee` or `sed -i` makes a stage write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Kind = Literal["work", "look", "interactive", "noise", "job", "long_running", "cd", "env"]

_REDIRECT = re.compile(r"^(\d*>>?|&>>?|\d*>\|)$")

# Programs that only look: a sequence of them changes nothing worth replaying.
READ_ONLY = frozenset(
    """ls ll la l lsd exa eza pwd cat bat less more head tail grep egrep fgrep rg ag ack find fd wc sort uniq cut stat
    du df ps pgrep top tree file which whereis type whoami echo printf true false date cal env printenv man help history
    clear diff cmp comm jq yq nl column realpath dirname basename readlink id uname hostname strings hexdump xxd od tldr
    apropos locate lsof netstat ss ip ifconfig ping dig nslookup host curl-head awk tr fold fmt paste expand sleep wait
    test [ [[ md5sum sha1sum sha256sum shasum cksum free uptime w who last groups tput stty tty lscpu lsblk mount-l
    dmesg journalctl""".split()
)
# A sub-command that only looks, per tool.
READ_ONLY_SUB: dict[str, frozenset[str]] = {
    k: frozenset(v.split())
    for k, v in {
        "git": "status log diff show branch remote rev-parse ls-files blame describe shortlog reflog grep "
        "config-l tag-l whatchanged",
        "docker": "ps images logs inspect version info stats top port history",
        "podman": "ps images logs inspect version info",
        "kubectl": "get describe logs top explain version api-resources config-view",
        "npm": "ls list view info outdated search help doctor",
        "pnpm": "ls list why outdated",
        "yarn": "list info why outdated",
        "pip": "list show freeze search check",
        "pip3": "list show freeze search check",
        "brew": "list info search outdated doctor deps leaves config --version",
        "gh": "status",
        "cargo": "tree search metadata",
        "go": "version env list doc vet",
        "systemctl": "status list-units is-active",
        "conda": "list info env-list",
        "apt": "list search show policy",
        "apt-cache": "search show policy depends",
        "helm": "list status get history",
        "terraform": "show output state-list validate version",
        "python": "--version -V",
        "python3": "--version -V",
        "node": "--version -v",
        "uv": "tree",
        "poetry": "show check",
    }.items()
}
# `sed -n` prints, `sed -i` edits; `awk` without a redirect only prints.
_SED_PRINTS = re.compile(r"^-[a-zA-Z]*n")

# Programs a person works *inside* (editors, pagers, REPLs, multiplexers): what they did is not in the log.
INTERACTIVE = frozenset(
    """vim vi nvim vime emacs nano pico micro code subl less more man top htop btop glances tig lazygit fg bg jobs tmux
    screen ta ts watch ipython bpython irb pry mongo mongosh mosh telnet ftp sftp lldb gdb meld vimdiff kdiff3 gitk open
    xdg-open exit logout reset history source . exec ranger nnn mc vifm fzf claude codex aider""".split()
)
# Bare, these start a REPL or a shell; with arguments they run something.
_REPL_WHEN_BARE = frozenset(
    "python python3 node bash sh zsh fish ssh psql mysql sqlite3 redis-cli ruby php lua R julia deno bun".split()
)
_JOB = frozenset("kill killall pkill disown nohup-l".split())

# Commands that serve or watch until stopped: marked, never replayed blindly.
_LONG_RUNNING = re.compile(
    r"(^|\s)(npm|pnpm|yarn|bun)\s+(run\s+)?(dev|start|serve|watch)\b|\b(next|vite|nuxt|astro)\s+dev\b|\brails\s+(s|server)\b"
    r"|\bmanage\.py\s+runserver\b|\bhttp\.server\b|\bhttp-server\b|\bflask\s+run\b|\buvicorn\b|\bgunicorn\b|\bmix\s+phx\.server\b"
    r"|\bdocker(-|\s+)compose\s+up\b(?!.*\s-d\b)|\btail\s+-f\b|\bjekyll\s+serve\b|\bhugo\s+server\b|\bwatch\b|\bnodemon\b"
    r"|\bcargo\s+watch\b|\bjupyter\s+(notebook|lab)\b|\bkubectl\s+port-forward\b"
)
# Terminal noise typed into history: escape leftovers (`[A`), stray punctuation, a lone word that is a key name.
_NOISE = re.compile(r"^(\[[A-D]|\^\[|\x1b|[:;,.÷'\"`~!@#%^*()\[\]{}<>?/\\|+=\-\s]+$)")


@dataclass(frozen=True)
class Stage:
    """One program in a pipeline or list: its name, and its words after it."""

    program: str
    words: tuple[str, ...]


# One scan of a command line: blanks, operators (with their file-descriptor digits: `2>`, `&>>`), or words made of
# unquoted runs, '...', "..." and backslash escapes. An unterminated quote matches nothing: the line does not parse.
_TOKEN = re.compile(
    r"""
    (?P<blank>[ \t\r\n]+)
  | (?P<op>\|\||&&|;;|\|&|\d*>>|\d*>&\d*-?|&>>?|\d*>\|?|\d*<<<|\d*<<-?|\d*<&\d*-?|\d*<>?|[;&|])
  | (?P<word>(?:[^\s'"\\;&|<>]+|'[^']*'|"(?:\\.|[^"\\])*"|\\.)+)
""",
    re.X | re.S,
)
_UNQUOTE = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""", re.S)
_DQ_ESCAPE = re.compile(r"""\\([\\"$`\n])""")
OPERATORS = frozenset({"|", "||", "&&", ";", "&", "|&", ";;"})


def _unquote(word: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return m.group(1)
        if m.group(2) is not None:
            return _DQ_ESCAPE.sub(r"\1", m.group(2))
        return m.group(3)

    return _UNQUOTE.sub(one, word)


@lru_cache(maxsize=65536)
def words(command: str) -> tuple[str, ...] | None:
    """The words and operators of a command line, quotes removed (None when a quote is never closed)."""
    out: list[str] = []
    position, end = 0, len(command)
    while position < end:
        m = _TOKEN.match(command, position)
        if m is None:
            return None
        if m.lastgroup == "op":
            out.append(m.group())
        elif m.lastgroup == "word":
            out.append(_unquote(m.group()))
        position = m.end()
    return tuple(out)


@lru_cache(maxsize=32768)
def stages(command: str) -> tuple[Stage, ...] | None:
    """The programs a command runs, in order (None when it does not tokenize: an unterminated quote, a heredoc)."""
    if "<<" in command:
        return None
    tokens = words(command)
    if tokens is None:
        return None
    found: list[Stage] = []
    current: list[str] = []
    for token in tokens:
        if token in OPERATORS:
            if current:
                found.append(_stage(current))
            current = []
        else:
            current.append(token)
    if current:
        found.append(_stage(current))
    return tuple(found)


def _stage(words: list[str]) -> Stage:
    # `sudo`, `env X=1`, `time`, `nohup`, `command` run the next word as the program.
    i = 0
    while i < len(words) and (
        words[i] in ("sudo", "time", "nohup", "command", "builtin", "exec-l", "noglob", "env")
        or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[i])
        or (i and words[i - 1] == "sudo" and words[i].startswith("-"))
    ):
        i += 1
    rest = words[i:] or words[-1:]
    return Stage(program=rest[0].rsplit("/", 1)[-1] if not rest[0].startswith("./") else rest[0], words=tuple(rest[1:]))


def _stage_writes(stage: Stage) -> bool:
    for i, word in enumerate(stage.words):
        if _REDIRECT.match(word) and (i + 1 >= len(stage.words) or stage.words[i + 1] != "/dev/null"):
            return True
    return stage.program in ("tee", "dd", "truncate", "touch", "sponge")


def _stage_only_looks(stage: Stage) -> bool:
    prog, words = stage.program, stage.words
    if _stage_writes(stage):
        return False
    if prog == "sed":
        return bool(words) and bool(_SED_PRINTS.match(words[0])) and not any(w.startswith("-i") for w in words)
    if prog in READ_ONLY:
        return not (prog == "find" and any(w in ("-delete", "-exec", "-execdir", "-ok") for w in words))
    subs = READ_ONLY_SUB.get(prog)
    if subs and words:
        first = next((w for w in words if not w.startswith("-") or w in subs), words[0])
        if first in subs or (first == "config" and "-l" in words) or (first == "tag" and len(words) == 1):
            return True
        if prog == "git" and first in ("branch", "tag", "remote", "stash") and len(words) == 1:
            return True
    return False


@lru_cache(maxsize=32768)
def classify(command: str) -> Kind:
    """What kind of command this is, for mining: only `work` (and the `cd`/`env` it depends on) is kept."""
    text = command.strip()
    if not text or text.startswith("#") or _NOISE.match(text) or "\ufffd" in text:
        return "noise"
    if text.lstrip("\\").split()[0] in ("fg", "bg", "jobs", "%", "%1", "%2"):
        return "job"
    if _LONG_RUNNING.search(text) or re.search(r"&\s*$", text.replace("&&", "")):
        return "long_running"
    found = stages(text)
    if found is None:
        return "work" if "<<" in text else "noise"  # an unterminated quote is a typo; a heredoc writes a file
    if not found:
        return "noise"
    if len(found) == 1:
        stage = found[0]
        if stage.program in ("cd", "pushd", "popd"):
            return "cd"
        if stage.program == "export" or (stage.program in ("set", "unset") and stage.words):
            return "env"
        if stage.program in _JOB:
            return "job"
    if any(s.program in INTERACTIVE or (s.program in _REPL_WHEN_BARE and not s.words) for s in found):
        return "interactive"
    if all(_stage_only_looks(s) for s in found):
        return "look"
    return "work"


def program_words(command: str) -> tuple[str, ...]:
    """The program and its sub-command (when it has one): what a command *does*, for names and similarity."""
    found = stages(command.strip())
    if not found:
        return tuple(command.split()[:1])
    first = found[0]
    sub = next((w for w in first.words[:2] if re.fullmatch(r"[a-z][a-z0-9-]{1,20}", w)), None)
    return (first.program, sub) if sub and first.program in _SUBCOMMAND_TOOLS else (first.program,)


_SUBCOMMAND_TOOLS = frozenset(
    """git npm npx yarn pnpm pip pip3 uv poetry cargo go docker podman kubectl helm terraform gh make systemctl apt
    apt-get brew mix bundle rails dotnet mvn gradle conda bun deno rustup nix""".split()
)
